#!/usr/bin/env bash
# s3-vs-minio.sh -- Shoal's gateway against MinIO at equal redundancy, one
# after the other on this machine, with one load generator (`shoal bench
# s3`, an AWS-SDK client) for all: 64 KiB PUT and GET at concurrency 16,
# 32 MiB PUT and GET at concurrency 4 (the issue-5 table's workloads).
#
#   MINIO=/path/to/minio docs/bench/s3-vs-minio.sh [SECONDS]   (default 30)
#
# The systems, in this order:
#   minio      one MinIO server on 4 drives (directories on the root file
#              system: MINIO_ROOTDISK_THRESHOLD_SIZE lets it use them), EC:2 -- 2 data
#              and 2 parity shards per object, MinIO's default for 4 drives
#   shoal-ec22 shoal up --osds 4, the gateway's data pool EC 2+2 (failure
#              domain osd): the same redundancy as MinIO's
#   shoal-3x   shoal up --osds 3, a 3-replica data pool (Shoal's default)
# SKIP=minio,shoal-3x leaves systems out.
#
# Prints, per run, ops/s, MB/s, p50/p99 latency and CPU per request (all
# of the system's daemons, its S3 front end -- the gateway, or MinIO's one
# process -- and the whole machine; lib.sh's s3run).
#
# MinIO is not a dependency of Shoal and nothing of it is in this
# repository: build it from its source yourself (CGO_ENABLED=0 go build in
# a checkout of github.com/minio/minio) and point MINIO at the binary.
# Needs a built ./shoal (go build -o shoal ./cmd/shoal).
set -euo pipefail
SECS=${1:-30}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
MINIO=${MINIO:?set MINIO to a minio server binary}
SKIP=${SKIP:-}
MINIO_DIR=/var/tmp/minio-bench
SHOAL_DIR=/var/tmp/shoal-bench-minio
. "$(dirname "$0")/lib.sh"

skipped() { [[ ",$SKIP," == *",$1,"* ]]; }

minio_table() {
  rm -rf "$MINIO_DIR"; mkdir -p "$MINIO_DIR"/run "$MINIO_DIR"/d{1,2,3,4}
  MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=benchsecret1234 \
    MINIO_STORAGE_CLASS_STANDARD=EC:2 MINIO_BROWSER=off \
    MINIO_ROOTDISK_THRESHOLD_SIZE=1KiB \
    nohup "$MINIO" server --quiet --address 127.0.0.1:9000 \
    --console-address 127.0.0.1:9001 "$MINIO_DIR"/d{1...4} \
    > "$MINIO_DIR/minio.log" 2>&1 &
  echo $! > "$MINIO_DIR/run/minio.pid"
  for _ in $(seq 150); do # the cluster check answers 200 once writes can be taken
    curl -sf http://127.0.0.1:9000/minio/health/cluster > /dev/null && break
    sleep 0.2
  done
  s3_table minio "$MINIO_DIR/run" "$MINIO_DIR/run/minio.pid" http://127.0.0.1:9000 benchadmin benchsecret1234
  kill "$(cat "$MINIO_DIR/run/minio.pid")"
  wait "$(cat "$MINIO_DIR/run/minio.pid")" 2> /dev/null || true
  rm -rf "$MINIO_DIR"
}

shoal_table() { # shoal_table LABEL OSDS [K M]
  local l=$1 osds=$2
  rm -rf "$SHOAL_DIR"
  "$SHOAL" up --detach --no-gateway --data "$SHOAL_DIR" --osds "$osds" --osd-size 16G > /dev/null
  export SHOAL_CONF=$SHOAL_DIR/shoal.conf
  if [ $# -eq 4 ]; then
    "$SHOAL" osd erasure-code-profile set "ec$3$4" k="$3" m="$4" crush-failure-domain=osd > /dev/null
    "$SHOAL" pool create default.rgw.buckets.data erasure "ec$3$4" > /dev/null
    shoal_healthy "$SHOAL"
  fi
  "$SHOAL" up --detach --data "$SHOAL_DIR" > /dev/null # the gateway, its user and s3.env
  set -a; . "$SHOAL_DIR/s3.env"; set +a
  s3_table "$l" "$SHOAL_DIR/run" "$SHOAL_DIR/run/client.rgw.gateway.pid" "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
  "$SHOAL" down --data "$SHOAL_DIR" > /dev/null
  unset SHOAL_CONF
  rm -rf "$SHOAL_DIR"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, $("$MINIO" --version | head -1)"
skipped minio || minio_table
skipped shoal-ec22 || shoal_table shoal-ec22 4 2 2
skipped shoal-3x || shoal_table shoal-3x 3
