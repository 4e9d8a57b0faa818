#!/usr/bin/env bash
# rbd-vs-ceph.sh -- block images on the reference Ceph cluster
# (../shared/reference-ceph, 1 MON, 3 BlueStore OSDs, image rbench/img)
# and on `shoal up --osds 3` (image rbd/img in a 3-replica pool), one
# cluster after the other on this machine, with the block guide's
# matrix — 4 KiB random writes and reads with 1, 16 and 32 I/Os in
# flight, a 70/30 random mix with 32, and 128 KiB sequential writes and
# reads with 32 — run two ways:
#   * `rbd bench` (with librbd's default writeback cache, and with
#     --rbd-cache=false) against `shoal rbd bench`, same options; lines
#     give IOPS, MB/s, the daemons' CPU seconds and, for Shoal, latency;
#   * fio, RT seconds per point: the rbd engine against Ceph, the nbd
#     engine against `shoal rbd nbd serve`; lines give IOPS, MB/s, mean,
#     p99 and p99.9 completion latency.
# Each image is SIZE (default 1G) and written whole first (4 MiB
# sequential writes), so reads find data, not holes.
#
#   docs/bench/rbd-vs-ceph.sh [SIZE] [RT]
#
# Needs: the ceph, ceph-mon, ceph-osd, ceph-mgr, radosgw packages; a built
# ./shoal (go build -o shoal ./cmd/shoal).
set -euo pipefail
SIZE=${1:-1G}
RT=${2:-10}
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

# fio ENGINE-ARGS...: the matrix with fio, one line per point
fio_all() {
  local name typ size thr total pat mix rw
  while read -r name typ size thr total pat mix; do
    case "$typ/$pat" in
      write/rand) rw=randwrite ;; read/rand) rw=randread ;; readwrite/rand) rw=randrw ;;
      write/seq) rw=write ;; read/seq) rw=read ;;
    esac
    fio --name=p --rw=$rw ${mix:+--rwmixread=$mix} --bs="$size" --iodepth="$thr" --numjobs=1 \
      --time_based --runtime="$RT" --size="$SIZE" --output-format=json "$@" 2>/dev/null |
      python3 -c '
import json, sys
raw = sys.stdin.read()  # fio nbd prints "connected to NBD server" first
j = json.loads(raw[raw.index("{"):])["jobs"][0]
iops = j["read"]["iops"] + j["write"]["iops"]
bw = (j["read"]["bw_bytes"] + j["write"]["bw_bytes"]) / 1e6
ios = [d for d in (j["read"], j["write"]) if d["total_ios"]]
n = sum(d["total_ios"] for d in ios)
mean = sum(d["clat_ns"]["mean"] * d["total_ios"] for d in ios) / n / 1e3
p = lambda k: max(d["clat_ns"]["percentile"][k] for d in ios) / 1e3
print("%-20s %10.0f IOPS  %8.1f MB/s  mean %8.0f us  p99 %8.0f us  p99.9 %8.0f us" % (sys.argv[1], iops, bw, mean, p("99.000000"), p("99.900000")))
' "$name"
  done <<< "$MATRIX"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, image $SIZE, fio ${RT}s per point"
if [ -z "${SKIP_CEPH:-}" ]; then
  "$REF/up.sh" "$CEPH_DIR" > /tmp/ceph-ref-up.log 2>&1
  export CEPH_CONF=$CEPH_DIR/ceph.conf
  ceph osd pool application enable rbench rbd --yes-i-really-mean-it > /dev/null 2>&1 || true
  rbd create rbench/img --size "$SIZE"
  rbd bench rbench/img --io-type write --io-size 4M --io-threads 16 --io-total "$SIZE" --io-pattern seq > /dev/null
  one "rbd" "$CEPH_DIR/run" rbench/img | sed 's/^/ceph  /'
  one "rbd --rbd-cache=false" "$CEPH_DIR/run" rbench/img | sed 's/^/ceph-nocache  /'
  fio_all --ioengine=rbd --clientname=admin --pool=rbench --rbdname=img | sed 's/^/ceph-fio-rbd  /'
  # and without librbd's cache, whose writeback acknowledges writes
  # before any OSD has them (Shoal's writes are acknowledged once every
  # acting OSD committed them)
  { cat "$CEPH_CONF"; printf '[client]\nrbd cache = false\n'; } > "$CEPH_DIR/nocache.conf"
  CEPH_CONF=$CEPH_DIR/nocache.conf fio_all --ioengine=rbd --clientname=admin --pool=rbench --rbdname=img | sed 's/^/ceph-fio-rbd-nocache  /'
  "$REF/down.sh" "$CEPH_DIR" > /dev/null 2>&1
fi
rm -rf "$SHOAL_DIR"
"$SHOAL" up --detach --data "$SHOAL_DIR" --osds 3 --no-gateway > /tmp/shoal-bench-up.log
export SHOAL_CONF=$SHOAL_DIR/shoal.conf
"$SHOAL" pool create rbd --size 3 --pg-num 32 > /dev/null
"$SHOAL" rbd create img --size "$SIZE"
"$SHOAL" rbd bench img --io-type write --io-size 4M --io-threads 16 --io-total "$SIZE" --io-pattern seq > /dev/null
one "$SHOAL rbd" "$SHOAL_DIR/run" rbd/img | sed 's/^/shoal /'
SOCK=$SHOAL_DIR/img.sock
"$SHOAL" rbd nbd serve img --socket "$SOCK" > /tmp/shoal-bench-nbd.log 2>&1 &
NBD=$!
until [ -S "$SOCK" ]; do sleep 0.1; done
fio_all --ioengine=nbd --uri="nbd+unix:///img?socket=$SOCK" | sed 's/^/shoal-fio-nbd  /'
kill $NBD; wait $NBD 2>/dev/null || true
"$SHOAL" down --data "$SHOAL_DIR" > /dev/null
rm -rf "$SHOAL_DIR"
