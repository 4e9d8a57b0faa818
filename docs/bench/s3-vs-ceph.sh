#!/usr/bin/env bash
# s3-vs-ceph.sh -- the issue-5 benchmark table: `shoal bench s3` (the same
# load generator for both) against Ceph's radosgw on the reference cluster
# (../shared/reference-ceph: 1 MON, 3 OSDs, radosgw) and against the
# gateway of `shoal up --osds 3`, one after the other on this machine:
# 64 KiB PUT and GET at concurrency 16, 32 MiB PUT and GET at concurrency 4.
# Prints ops/s, MB/s, p50/p99 latency, and CPU: all daemons' and the
# gateway's own, in milliseconds per request.
#
#   docs/bench/s3-vs-ceph.sh [SECONDS]         (default 30)
#   SKIP_CEPH=1 SHOAL=/path/to/shoal docs/bench/s3-vs-ceph.sh 20
#
# Needs: the ceph, ceph-mon, ceph-osd, ceph-mgr, radosgw packages; a built
# ./shoal (go build -o shoal ./cmd/shoal).
set -euo pipefail
SECS=${1:-30}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
REF=${REF:-$HERE/../shared/reference-ceph}
CEPH_DIR=/var/tmp/ceph-reference-s3
SHOAL_DIR=/var/tmp/shoal-bench-s3
. "$(dirname "$0")/lib.sh"

pidcpu() { # pidcpu PIDFILE -> CPU ticks of that process
  local pid; pid=$(cat "$1"); awk '{print $14+$15}' "/proc/$pid/stat"
}

# s3run NAME RUNDIR GWPIDFILE ENDPOINT AK SK ARGS...
s3run() {
  local name=$1 rundir=$2 gwpid=$3 ep=$4 ak=$5 sk=$6; shift 6
  local c0 g0 c1 g1 out
  c0=$(cpu "$rundir"); g0=$(pidcpu "$gwpid")
  out=$("$SHOAL" bench s3 --endpoint "$ep" --access-key "$ak" --secret-key "$sk" --duration "${SECS}s" --format json "$@")
  c1=$(cpu "$rundir"); g1=$(pidcpu "$gwpid")
  echo "$out" | python3 -c '
import json, sys
name, all_s, gw_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = json.load(sys.stdin)
t = r["total"]
ops = max(t["ops"], 1)
print("%-30s %9.1f ops/s %8.1f MB/s  p50 %7.1f ms  p99 %7.1f ms  errors %d  CPU all %6.2f ms/req  gateway %6.2f ms/req" % (
    name, t["ops_per_s"], t["mb_per_s"], t["latency_p50_ms"], t["latency_p99_ms"], t["errors"], 1000*all_s/ops, 1000*gw_s/ops))
' "$name" "$(echo "($c1 - $c0) / $TCK" | bc -l)" "$(echo "($g1 - $g0) / $TCK" | bc -l)"
}

table() { # table LABEL RUNDIR GWPIDFILE ENDPOINT AK SK
  local l=$1; shift
  s3run "$l PUT 64K c16" "$@" --op put --size 64K --concurrency 16 --objects 2000 --bucket bench64k
  s3run "$l GET 64K c16" "$@" --op get --size 64K --concurrency 16 --objects 2000 --bucket bench64k
  s3run "$l PUT 32M c4"  "$@" --op put --size 32M --concurrency 4 --objects 40 --bucket bench32m
  s3run "$l GET 32M c4"  "$@" --op get --size 32M --concurrency 4 --objects 40 --bucket bench32m
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run"
if [ -z "${SKIP_CEPH:-}" ]; then
  "$REF"/up.sh "$CEPH_DIR" > /tmp/ceph-ref-s3-up.log 2>&1
  set -a; . "$CEPH_DIR/s3.env"; set +a
  table "radosgw" "$CEPH_DIR/run" "$CEPH_DIR/run/client.rgw.a.pid" "${S3_ENDPOINT:-http://127.0.0.1:7480}" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
  "$REF"/down.sh "$CEPH_DIR" > /dev/null 2>&1
fi
rm -rf "$SHOAL_DIR"
"$SHOAL" up --detach --data "$SHOAL_DIR" --osds 3 --osd-size 16G > /tmp/shoal-bench-s3-up.log
set -a; . "$SHOAL_DIR/s3.env"; set +a
table "shoal" "$SHOAL_DIR/run" "$SHOAL_DIR/run/client.rgw.gateway.pid" "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
"$SHOAL" down --data "$SHOAL_DIR" > /dev/null
rm -rf "$SHOAL_DIR"
