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

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run"
if [ -z "${SKIP_CEPH:-}" ]; then
  "$REF"/up.sh "$CEPH_DIR" > /tmp/ceph-ref-s3-up.log 2>&1
  set -a; . "$CEPH_DIR/s3.env"; set +a
  s3_table "radosgw" "$CEPH_DIR/run" "$CEPH_DIR/run/client.rgw.a.pid" "${S3_ENDPOINT:-http://127.0.0.1:7480}" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
  "$REF"/down.sh "$CEPH_DIR" > /dev/null 2>&1
fi
rm -rf "$SHOAL_DIR"
"$SHOAL" up --detach --data "$SHOAL_DIR" --osds 3 --osd-size 16G > /tmp/shoal-bench-s3-up.log
set -a; . "$SHOAL_DIR/s3.env"; set +a
s3_table "shoal" "$SHOAL_DIR/run" "$SHOAL_DIR/run/client.rgw.gateway.pid" "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
"$SHOAL" down --data "$SHOAL_DIR" > /dev/null
rm -rf "$SHOAL_DIR"
