#!/usr/bin/env bash
# sse-cost.sh -- the cost of SSE-S3 through the gateway: on one
# `shoal up --osds 3` cluster, 64 KiB PUT/GET at 16 clients and 32 MiB
# PUT/GET at 4, each in the clear (A) and with x-amz-server-side-encryption:
# AES256 (B), A B B A, printing ops/s, MB/s, latency and the daemons' CPU
# per request (lib.sh's s3run).
#
#   docs/bench/sse-cost.sh [SECS]
set -euo pipefail
SECS=${1:-15}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
DIR=/var/tmp/shoal-bench-sse
. "$(dirname "$0")/lib.sh"
rm -rf "$DIR"
"$SHOAL" up --detach --data "$DIR" --osds 3 --osd-size 16G > /tmp/shoal-bench-sse-up.log
trap '"$SHOAL" down --data "$DIR" > /dev/null; rm -rf "$DIR"' EXIT
set -a; . "$DIR/s3.env"; set +a
echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, shoal $("$SHOAL" version 2>/dev/null | head -1)"
for w in "put64k --op put --size 64K --concurrency 16 --objects 2000" "get64k --op get --size 64K --concurrency 16 --objects 2000" \
         "put32m --op put --size 32M --concurrency 4 --objects 40" "get32m --op get --size 32M --concurrency 4 --objects 40"; do
  set -- $w
  name=$1; shift
  for s in A B B A; do
    label="$s $name"
    sse=(); bucket=plain-$name
    if [ "$s" = B ]; then sse=(--sse AES256); bucket=sse-$name; fi
    s3run "$label" "$DIR/run" "$DIR/run/client.rgw.gateway.pid" "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "${sse[@]}" "$@" --bucket "$bucket"
  done
done
