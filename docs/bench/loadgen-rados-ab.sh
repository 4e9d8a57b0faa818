#!/usr/bin/env bash
# loadgen-rados-ab.sh -- two `shoal bench rados` load generators on one
# cluster (NEW_BINARY's `shoal up --osds 3`): SECS of 4 MiB writes, then
# sequential reads of the same objects by A and B alternating (A B B A,
# ROUNDS times), each with its bandwidth, reads and the load generator's
# own user and system CPU seconds (/usr/bin/time).
#
#   docs/bench/loadgen-rados-ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECS]
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-2} SECS=${4:-10}
DIR=/var/tmp/shoal-bench-loadgen-rados
T=$(mktemp)
trap 'rm -f "$T"' EXIT
rm -rf "$DIR"
"$NEW" up --detach --data "$DIR" --osds 3 --osd-size 20G --no-gateway > /dev/null
export SHOAL_CONF=$DIR/shoal.conf
echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s, -t 16: A=$OLD B=$NEW"
"$NEW" bench rados -p data write -b 4M -t 16 --seconds "$SECS" --no-cleanup | grep '^Bandwidth'
for _ in $(seq "$ROUNDS"); do
  for side in A B B A; do
    bin=$OLD; [ "$side" = B ] && bin=$NEW
    /usr/bin/time -f '%U %S' -o "$T" "$bin" bench rados -p data seq -t 16 --seconds "$SECS" > "$T.out"
    awk -v s="$side" -v cpu="$(cat "$T")" '/^Bandwidth/{bw=$3} /^Total reads made/{ops=$4}
      END{split(cpu, c, " "); printf "%s seq %8.1f MB/s  %6d reads  load generator CPU %5.2f s\n", s, bw, ops, c[1]+c[2]}' "$T.out"
  done
done
rm -f "$T.out"
"$NEW" down --data "$DIR" > /dev/null
rm -rf "$DIR"
