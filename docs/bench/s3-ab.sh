#!/usr/bin/env bash
# s3-ab.sh -- compare two shoal binaries through the gateway, A and B
# alternating so that the machine's drifting speed hits both alike.
#
#   docs/bench/s3-ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECS]
#
# Each round starts a fresh `shoal up --osds 3` from each binary in turn
# and runs the workloads of $WORKLOADS (default "put64k"; also get64k,
# put32m, get32m) with one load generator, NEW_BINARY's `shoal bench s3`,
# printing ops/s, MB/s, latency and the daemons' CPU per request (lib.sh).
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-3} SECS=${4:-15}
WORKLOADS=${WORKLOADS:-put64k}
DIR=/var/tmp/shoal-bench-ab
SHOAL=$NEW # the load generator, for both
. "$(dirname "$0")/lib.sh"

workload() { # workload NAME LABEL RUNDIR GWPIDFILE ENDPOINT AK SK
  local w=$1; shift
  local l=$1; shift
  case $w in
  put64k) s3run "$l PUT 64K c16" "$@" --op put --size 64K --concurrency 16 --objects 2000 --bucket bench64k ;;
  get64k) s3run "$l GET 64K c16" "$@" --op get --size 64K --concurrency 16 --objects 2000 --bucket bench64k ;;
  put32m) s3run "$l PUT 32M c4" "$@" --op put --size 32M --concurrency 4 --objects 40 --bucket bench32m ;;
  get32m) s3run "$l GET 32M c4" "$@" --op get --size 32M --concurrency 4 --objects 40 --bucket bench32m ;;
  *) echo "unknown workload $w (want put64k, get64k, put32m or get32m)" >&2; exit 2 ;;
  esac
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, $ROUNDS rounds: A=$OLD B=$NEW"
for round in $(seq "$ROUNDS"); do
  for side in A B; do
    bin=$OLD; [ $side = B ] && bin=$NEW
    rm -rf "$DIR"
    "$bin" up --detach --data "$DIR" --osds 3 --osd-size 16G > /tmp/shoal-bench-ab-up.log
    set -a; . "$DIR/s3.env"; set +a
    for w in $WORKLOADS; do
      workload "$w" "round $round $side" "$DIR/run" "$DIR/run/client.rgw.gateway.pid" "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
    done
    "$bin" down --data "$DIR" > /dev/null
  done
done
rm -rf "$DIR"
