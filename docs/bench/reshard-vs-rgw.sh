#!/usr/bin/env bash
# reshard-vs-rgw.sh -- resharding a growing bucket under write load, on
# radosgw (reference Ceph cluster: `radosgw-admin bucket reshard`) and on
# Shoal (`shoal bucket reshard`, an online range split): 16 writers PUT new
# 4 KiB objects into one bucket; after FILL seconds of filling, a WIN-second
# window without resharding, then a WIN-second window with a reshard
# started 5 s in. Prints each window's PUT p50/p99/max latency and its
# slowest second (ops/s), and how long the reshard command took.
#
#   docs/bench/reshard-vs-rgw.sh [FILL] [WIN]      (defaults 60 and 30)
#   SKIP_CEPH=1 docs/bench/reshard-vs-rgw.sh
#
# Needs what s3-vs-ceph.sh needs.
set -euo pipefail
FILL=${1:-60}
WIN=${2:-30}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
REF=${REF:-$HERE/../shared/reference-ceph}
CEPH_DIR=/var/tmp/ceph-reference-reshard
SHOAL_DIR=/var/tmp/shoal-bench-reshard
B=reshardtest

# window NAME SECONDS ENDPOINT AK SK: one PUT run, summarised
window() {
  local name=$1 secs=$2 ep=$3 ak=$4 sk=$5 out
  out=$("$SHOAL" bench s3 --endpoint "$ep" --access-key "$ak" --secret-key "$sk" --op put --size 4K --objects 0 \
    --concurrency 16 --duration "${secs}s" --bucket "$B" --prefix "${name// /-}/" 2>&1)
  echo "$out" | awk -v n="$name" '
    / ops\/s / && $1 ~ /s$/ { v = $2 + 0; if (min == "" || v < min) min = v }
    $1 == "PUT" { p50 = $5; p99 = $7; mx = $8; ops = $3 }
    END { printf "%-34s %8s ops/s  p50 %7s ms  p99 %7s ms  max %8s ms  slowest second %6.1f ops/s\n", n, ops, p50, p99, mx, min }'
}

# measure LABEL ENDPOINT AK SK RESHARD-COMMAND...
measure() {
  local l=$1 ep=$2 ak=$3 sk=$4; shift 4
  window "$l fill" "$FILL" "$ep" "$ak" "$sk" > /dev/null
  window "$l steady" "$WIN" "$ep" "$ak" "$sk"
  window "$l during reshard" "$WIN" "$ep" "$ak" "$sk" &
  local w=$!
  sleep 5
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /tmp/reshard-cmd.log 2>&1
  t1=$(date +%s.%N)
  wait "$w"
  printf "%-34s %.2f s\n" "$l reshard command" "$(echo "$t1 - $t0" | bc -l)"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, fill ${FILL}s, windows ${WIN}s, 16 writers, 4 KiB PUTs"
if [ -z "${SKIP_CEPH:-}" ]; then
  "$REF"/up.sh "$CEPH_DIR" > /tmp/ceph-ref-reshard-up.log 2>&1
  set -a; . "$CEPH_DIR/s3.env"; set +a
  measure radosgw "${S3_ENDPOINT:-http://127.0.0.1:7480}" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" \
    radosgw-admin -c "$CEPH_DIR/ceph.conf" bucket reshard --bucket="$B" --num-shards=64
  "$REF"/down.sh "$CEPH_DIR" > /dev/null 2>&1
fi
rm -rf "$SHOAL_DIR"
"$SHOAL" up --detach --data "$SHOAL_DIR" --osds 3 > /tmp/shoal-bench-reshard-up.log
set -a; . "$SHOAL_DIR/s3.env"; set +a
measure shoal "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" \
  "$SHOAL" -c "$SHOAL_DIR/shoal.conf" bucket reshard "$B"
"$SHOAL" down --data "$SHOAL_DIR" > /dev/null
rm -rf "$SHOAL_DIR"
