#!/usr/bin/env bash
# rados-vs-ceph.sh -- the issue-3 benchmark table: `rados bench` on the
# reference Ceph cluster (../shared/reference-ceph, 1 MON, 3 BlueStore OSDs,
# 3-replica pool rbench) and `shoal bench rados` on `shoal up --osds 3`
# (3-replica pool data), one after the other on this machine, with the CPU
# seconds every daemon of each cluster used during each run (utime+stime
# from /proc/PID/stat of the pids in DIR/run/*.pid).
#
#   docs/bench/rados-vs-ceph.sh [SECONDS]        (default 30)
#
# Needs: the ceph, ceph-mon, ceph-osd, ceph-mgr, radosgw packages; a built
# ./shoal (go build -o shoal ./cmd/shoal). Prints one line per run.
set -euo pipefail
SECS=${1:-30}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
REF=${REF:-$HERE/../shared/reference-ceph}
CEPH_DIR=/var/tmp/ceph-reference-bench
SHOAL_DIR=/var/tmp/shoal-bench
TCK=$(getconf CLK_TCK)

cpu() { # cpu RUNDIR -> total CPU seconds of the daemons whose pids are there
  local total=0 f pid t
  for f in "$1"/*.pid; do
    pid=$(cat "$f")
    [ -r "/proc/$pid/stat" ] || continue
    t=$(awk '{print $14+$15}' "/proc/$pid/stat")
    total=$((total + t))
  done
  echo "$total"
}

run() { # run NAME RUNDIR CMD... -> prints the bench summary line with CPU
  local name=$1 rundir=$2; shift 2
  local c0 c1 out
  c0=$(cpu "$rundir")
  out=$("$@" 2>&1)
  c1=$(cpu "$rundir")
  local bw iops lat
  bw=$(echo "$out" | awk -F: '/^Bandwidth \(MB\/sec\)/{gsub(/ /,"",$2); print $2}')
  iops=$(echo "$out" | awk -F: '/^Average IOPS/{gsub(/ /,"",$2); print $2}')
  lat=$(echo "$out" | awk -F: '/^Average Latency\(s\)/{gsub(/ /,"",$2); print $2}')
  local ops
  ops=$(echo "$out" | awk -F: '/^Total (writes|reads) made/{gsub(/ /,"",$2); print $2}')
  printf '%-34s %10s MB/s %8s IOPS  avg lat %8ss  ops %7s  daemon CPU %6.1f s\n' "$name" "$bw" "$iops" "$lat" "$ops" \
    "$(echo "($c1 - $c0) / $TCK" | bc -l)"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, -t 16"
if [ -z "${SKIP_CEPH:-}" ]; then
  "$REF/up.sh" "$CEPH_DIR" > /tmp/ceph-ref-up.log 2>&1
  export CEPH_CONF=$CEPH_DIR/ceph.conf
  R="rados -c $CEPH_CONF -p rbench"
  run "ceph   4M write" "$CEPH_DIR/run" $R bench "$SECS" write -b 4194304 -t 16 --no-cleanup
  run "ceph   4M seq"   "$CEPH_DIR/run" $R bench "$SECS" seq -t 16
  $R cleanup > /dev/null 2>&1
  run "ceph   4K write" "$CEPH_DIR/run" $R bench "$SECS" write -b 4096 -t 16 --no-cleanup
  run "ceph   4K rand"  "$CEPH_DIR/run" $R bench "$SECS" rand -t 16
  $R cleanup > /dev/null 2>&1
  "$REF/down.sh" "$CEPH_DIR" > /dev/null 2>&1
fi
rm -rf "$SHOAL_DIR"
"$SHOAL" up --detach --data "$SHOAL_DIR" --osds 3 --osd-size 16G > /tmp/shoal-bench-up.log
export SHOAL_CONF=$SHOAL_DIR/shoal.conf
S="$SHOAL bench rados -p data"
run "shoal  4M write" "$SHOAL_DIR/run" $S write -b 4M -t 16 --seconds "$SECS" --no-cleanup
run "shoal  4M seq"   "$SHOAL_DIR/run" $S seq -t 16 --seconds "$SECS"
"$SHOAL" rados -p data cleanup > /dev/null
run "shoal  4K write" "$SHOAL_DIR/run" $S write -b 4K -t 16 --seconds "$SECS" --no-cleanup
run "shoal  4K rand"  "$SHOAL_DIR/run" $S rand -t 16 --seconds "$SECS"
"$SHOAL" rados -p data cleanup > /dev/null
"$SHOAL" down --data "$SHOAL_DIR" > /dev/null
rm -rf "$SHOAL_DIR"
