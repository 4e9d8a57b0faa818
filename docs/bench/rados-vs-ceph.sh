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

. "$(dirname "$0")/lib.sh"

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, -t 16"
if [ -z "${SKIP_CEPH:-}" ]; then
  "$REF/up.sh" "$CEPH_DIR" > /tmp/ceph-ref-up.log 2>&1
  export CEPH_CONF=$CEPH_DIR/ceph.conf
  R="rados -c $CEPH_CONF -p rbench"
  OBJ_BYTES=4194304 run "ceph   4M write" "$CEPH_DIR/run" $R bench "$SECS" write -b 4194304 -t 16 --no-cleanup
  OBJ_BYTES=4194304 run "ceph   4M seq"   "$CEPH_DIR/run" $R bench "$SECS" seq -t 16
  $R cleanup > /dev/null 2>&1
  run "ceph   4K write" "$CEPH_DIR/run" $R bench "$SECS" write -b 4096 -t 16 --no-cleanup
  run "ceph   4K rand"  "$CEPH_DIR/run" $R bench "$SECS" rand -t 16
  $R cleanup > /dev/null 2>&1
  "$REF/down.sh" "$CEPH_DIR" > /dev/null 2>&1
fi
rm -rf "$SHOAL_DIR"
# 4 MiB writes fill up to ~0.65 GB per OSD per second here (every OSD
# holds a replica): OSD_SIZE must exceed that times SECONDS
"$SHOAL" up --detach --data "$SHOAL_DIR" --osds 3 --osd-size "${OSD_SIZE:-20G}" > /tmp/shoal-bench-up.log
export SHOAL_CONF=$SHOAL_DIR/shoal.conf
shoal_rados "shoal " "$SHOAL_DIR/run" "$SHOAL"
"$SHOAL" down --data "$SHOAL_DIR" > /dev/null
rm -rf "$SHOAL_DIR"
