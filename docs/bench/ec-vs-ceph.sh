#!/usr/bin/env bash
# ec-vs-ceph.sh -- the issue-4 benchmark table: 4 MiB `rados bench` write
# and seq on erasure-coded pools of the reference Ceph cluster
# (../shared/reference-ceph) and `shoal bench rados` on Shoal, one after the
# other on this machine: EC 2+1 over 3 OSDs, then EC 4+2 over 6 OSDs (the
# reference script is run with NOSD=6 from a copy), both with failure
# domain osd and Ceph's default stripe_unit (4 KiB), -t 16; with the CPU
# seconds all daemons used per GB written or read.
#
#   docs/bench/ec-vs-ceph.sh [SECONDS]        (default 30)
#   SHAPES="2 1 3" SKIP_CEPH=1 SHOAL=/path/to/shoal docs/bench/ec-vs-ceph.sh 20
#                                  (one shape, Shoal only: for A/B builds)
#
# Needs: the ceph, ceph-mon, ceph-osd, ceph-mgr, radosgw packages; a built
# ./shoal (go build -o shoal ./cmd/shoal). Prints one line per run.
set -euo pipefail
SECS=${1:-30}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
REF=${REF:-$HERE/../shared/reference-ceph}
CEPH_DIR=/var/tmp/ceph-reference-ec
SHOAL_DIR=/var/tmp/shoal-bench-ec
. "$(dirname "$0")/lib.sh"
export OBJ_BYTES=4194304

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, -t 16, 4 MiB objects"
IFS=';' read -ra shapes <<< "${SHAPES:-2 1 3;4 2 6}"
for shape in "${shapes[@]}"; do
  set -- $shape
  K=$1 M=$2 N=$3
  if [ -z "${SKIP_CEPH:-}" ]; then
    # the reference script with N OSDs (its NOSD is fixed at 3)
    mkdir -p /tmp/ref-ec && cp "$REF"/*.sh /tmp/ref-ec/
    sed -i "s/^NOSD=3$/NOSD=$N/" /tmp/ref-ec/up.sh
    /tmp/ref-ec/up.sh "$CEPH_DIR" > /tmp/ceph-ref-ec-up.log 2>&1
    export CEPH_CONF=$CEPH_DIR/ceph.conf
    ceph -c "$CEPH_CONF" osd erasure-code-profile set ec$K$M k=$K m=$M crush-failure-domain=osd --force > /dev/null 2>&1
    ceph -c "$CEPH_CONF" osd pool create ec$K$M 32 32 erasure ec$K$M > /dev/null 2>&1
    ceph -c "$CEPH_CONF" osd pool application enable ec$K$M rados > /dev/null 2>&1
    for _ in $(seq 120); do ceph -c "$CEPH_CONF" pg stat 2>/dev/null | grep -q "32 active+clean\|[0-9]* pgs: [0-9]* active+clean;" && break; sleep 1; done
    R="rados -c $CEPH_CONF -p ec$K$M"
    run "ceph   EC $K+$M 4M write" "$CEPH_DIR/run" $R bench "$SECS" write -b 4194304 -t 16 --no-cleanup
    run "ceph   EC $K+$M 4M seq"   "$CEPH_DIR/run" $R bench "$SECS" seq -t 16
    /tmp/ref-ec/down.sh "$CEPH_DIR" > /dev/null 2>&1
  fi
  rm -rf "$SHOAL_DIR"
  "$SHOAL" up --detach --data "$SHOAL_DIR" --osds "$N" --osd-size 16G > /tmp/shoal-bench-ec-up.log
  export SHOAL_CONF=$SHOAL_DIR/shoal.conf
  shoal_ec_pool "$SHOAL" "$K" "$M"
  S="$SHOAL bench rados -p ec$K$M"
  run "shoal  EC $K+$M 4M write" "$SHOAL_DIR/run" $S write -b 4M -t 16 --seconds "$SECS" --no-cleanup
  run "shoal  EC $K+$M 4M seq"   "$SHOAL_DIR/run" $S seq -t 16 --seconds "$SECS"
  "$SHOAL" down --data "$SHOAL_DIR" > /dev/null
  rm -rf "$SHOAL_DIR"
done
