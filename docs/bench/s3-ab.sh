#!/usr/bin/env bash
# s3-ab.sh -- compare two shoal binaries through the gateway, A and B
# alternating so that the machine's drifting speed hits both alike.
#
#   docs/bench/s3-ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECS]
#
# Each round starts a fresh `shoal up --osds 3` from each binary in turn
# (A first in odd rounds, B first in even ones)
# and runs the workloads of $WORKLOADS (default "put64k"; also get64k,
# put32m, get32m) with one load generator, NEW_BINARY's `shoal bench s3`,
# printing ops/s, MB/s, latency and the daemons' CPU per request (lib.sh).
#
# CONF_A and CONF_B, when set, are lines added, under a [global] header, to side A's or B's
# shoal.conf before its daemons start (so one binary can be compared with
# itself under two settings), e.g.
#   CONF_A='rgw_bucket_index_range_shards = 8' CONF_B='rgw_bucket_index_range_shards = 2' \
#     docs/bench/s3-ab.sh ./shoal ./shoal 3 15
# A line "metrics_addr = HOST:PORT" (it lands in the gateway's section)
# also prints the gateway's bucket index calls and updates per side.
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
  order="A B"; [ $((round % 2)) = 0 ] && order="B A" # ABBA: a drift hits both sides alike
  for side in $order; do
    bin=$OLD; [ $side = B ] && bin=$NEW
    rm -rf "$DIR"
    "$bin" up --detach --data "$DIR" --osds 3 --osd-size 16G > /tmp/shoal-bench-ab-up.log
    conf=${CONF_A:-}; [ $side = B ] && conf=${CONF_B:-}
    if [ -n "$conf" ]; then
      "$bin" down --data "$DIR" > /dev/null
      printf '[global]\n%s\n' "$conf" >> "$DIR/shoal.conf" # a section of its own: the file ends in the gateway's
      "$bin" up --detach --data "$DIR" > /tmp/shoal-bench-ab-up.log
    fi
    set -a; . "$DIR/s3.env"; set +a
    for w in $WORKLOADS; do
      workload "$w" "round $round $side" "$DIR/run" "$DIR/run/client.rgw.gateway.pid" "$S3_ENDPOINT" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
    done
    maddr=$(printf '%s\n' "$conf" | sed -n 's/^ *metrics_addr *= *//p')
    if [ -n "$maddr" ]; then
      curl -s "http://$maddr/metrics" | awk -v l="round $round $side" '
        /^shoal_rgw_index_calls_total /{c=$2} /^shoal_rgw_index_updates_total /{u=$2}
        END{printf "%-30s index calls %d, updates %d\n", l, c, u}'
    fi
    "$bin" down --data "$DIR" > /dev/null
  done
done
rm -rf "$DIR"
