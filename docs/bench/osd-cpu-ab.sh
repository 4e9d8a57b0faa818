#!/usr/bin/env bash
# osd-cpu-ab.sh -- the OSDs' CPU time per op of two shoal binaries'
# clusters, A B B A: `perf stat -e task-clock` on the three OSDs of a
# fresh `shoal up --osds 3` around SECS of 4 KiB writes, then SECS of
# 4 KiB random reads, with one load generator for both (NEW_BINARY's).
# Where the machine's PMU counts instructions, add them to EVENTS.
#
#   docs/bench/osd-cpu-ab.sh OLD_BINARY NEW_BINARY [SECS]
set -euo pipefail
OLD=$1 NEW=$2 SECS=${3:-8}
EVENTS=${EVENTS:-task-clock}
DIR=/var/tmp/shoal-bench-osd-cpu
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, A B B A: A=$OLD B=$NEW"
for side in A B B A; do
  bin=$OLD; [ "$side" = B ] && bin=$NEW
  rm -rf "$DIR"
  "$bin" up --detach --data "$DIR" --osds 3 --osd-size 8G --no-gateway > /dev/null
  export SHOAL_CONF=$DIR/shoal.conf
  pids=$(cat "$DIR"/run/osd.*.pid | paste -sd,)
  for w in "write -b 4K --no-cleanup" "rand"; do
    perf stat -x, -e "$EVENTS" -p "$pids" -o "$OUT" -- "$NEW" bench rados -p data $w -t 16 --seconds "$SECS" > "$OUT.bench" 2>&1
    ops=$(awk -F: '/^Total (writes|reads) made/{gsub(/ /,"",$2); print $2}' "$OUT.bench")
    iops=$(awk -F: '/^Average IOPS/{gsub(/ /,"",$2); print $2}' "$OUT.bench")
    ms=$(awk -F, '/task-clock/{print $1}' "$OUT")
    printf '%s %-6s %8s IOPS  %8s ops  OSD CPU %6.1f us/op\n' "$side" "${w%% *}" "$iops" "$ops" "$(echo "$ms * 1000 / $ops" | bc -l)"
  done
  rm -f "$OUT.bench"
  "$bin" down --data "$DIR" > /dev/null
done
rm -rf "$DIR"
