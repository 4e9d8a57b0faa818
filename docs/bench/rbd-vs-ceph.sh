#!/usr/bin/env bash
# rbd-vs-ceph.sh -- `rbd bench` on the reference Ceph cluster
# (../shared/reference-ceph, 1 MON, 3 BlueStore OSDs, image rbench/img)
# and `shoal rbd bench` with the same options on `shoal up --osds 3`
# (image rbd/img in a 3-replica pool), one cluster after the other on
# this machine: the block guide's matrix — 4 KiB random writes and reads
# with 1, 16 and 32 I/Os in flight, a 70/30 random mix with 32, and
# 128 KiB sequential writes and reads with 32. Each image is SIZE (default
# 1G) and written whole first (4 MiB sequential writes), so reads find
# data, not holes. Prints one line per run: IOPS, MB/s, and, for Shoal,
# the latency rbd bench does not print; and the daemons' CPU seconds.
#
#   docs/bench/rbd-vs-ceph.sh [SIZE]
#
# Needs: the ceph, ceph-mon, ceph-osd, ceph-mgr, radosgw packages; a built
# ./shoal (go build -o shoal ./cmd/shoal).
set -euo pipefail
SIZE=${1:-1G}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
REF=${REF:-$HERE/../shared/reference-ceph}
CEPH_DIR=/var/tmp/ceph-reference-rbd
SHOAL_DIR=/var/tmp/shoal-bench-rbd
. "$(dirname "$0")/lib.sh"

# the matrix: NAME IO-TYPE IO-SIZE THREADS TOTAL PATTERN [MIX]
MATRIX='4K-randwrite-qd1 write 4K 1 16M rand
4K-randwrite-qd16 write 4K 16 64M rand
4K-randwrite-qd32 write 4K 32 64M rand
4K-randread-qd1 read 4K 1 32M rand
4K-randread-qd16 read 4K 16 256M rand
4K-randread-qd32 read 4K 32 256M rand
4K-70/30-qd32 readwrite 4K 32 128M rand 70
128K-seqwrite-qd32 write 128K 32 1G seq
128K-seqread-qd32 read 128K 32 1G seq'

# one TOOL RUNDIR IMAGE: every run of the matrix with TOOL (rbd or shoal rbd)
one() {
  local tool=$1 rundir=$2 img=$3 name typ size thr total pat mix c0 c1 out
  while read -r name typ size thr total pat mix; do
    c0=$(cpu "$rundir")
    out=$($tool bench "$img" --io-type "$typ" --io-size "$size" --io-threads "$thr" \
      --io-total "$total" --io-pattern "$pat" ${mix:+--rw-mix-read $mix} 2>&1)
    c1=$(cpu "$rundir")
    echo "$out" | awk -v n="$name" -v cpu="$(echo "($c1 - $c0) / $TCK" | bc -l)" '
      /^elapsed:/ { ops = $6; bw = $8 " " $9 }
      /^latency:/ { lat = $0 }
      END { printf "%-20s %10.0f IOPS  %12s  daemon CPU %6.1f s  %s\n", n, ops, bw, cpu, lat }'
  done <<< "$MATRIX"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, image $SIZE"
if [ -z "${SKIP_CEPH:-}" ]; then
  "$REF/up.sh" "$CEPH_DIR" > /tmp/ceph-ref-up.log 2>&1
  export CEPH_CONF=$CEPH_DIR/ceph.conf
  ceph osd pool application enable rbench rbd --yes-i-really-mean-it > /dev/null 2>&1 || true
  rbd create rbench/img --size "$SIZE"
  rbd bench rbench/img --io-type write --io-size 4M --io-threads 16 --io-total "$SIZE" --io-pattern seq > /dev/null
  one "rbd" "$CEPH_DIR/run" rbench/img | sed 's/^/ceph  /'
  "$REF/down.sh" "$CEPH_DIR" > /dev/null 2>&1
fi
rm -rf "$SHOAL_DIR"
"$SHOAL" up --detach --data "$SHOAL_DIR" --osds 3 --no-gateway > /tmp/shoal-bench-up.log
export SHOAL_CONF=$SHOAL_DIR/shoal.conf
"$SHOAL" pool create rbd --size 3 --pg-num 32 > /dev/null
"$SHOAL" rbd create img --size "$SIZE"
"$SHOAL" rbd bench img --io-type write --io-size 4M --io-threads 16 --io-total "$SIZE" --io-pattern seq > /dev/null
one "$SHOAL rbd" "$SHOAL_DIR/run" rbd/img | sed 's/^/shoal /'
"$SHOAL" down --data "$SHOAL_DIR" > /dev/null
rm -rf "$SHOAL_DIR"
