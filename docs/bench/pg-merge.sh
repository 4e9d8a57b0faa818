#!/usr/bin/env bash
# PG merge timing: a local 3-OSD cluster, a 3-replica pool of FROM PGs
# filled for FILL seconds with 4 KiB objects, then `pool set pg_num TO`:
# the time until pg_num reaches TO and the cluster is HEALTH_OK, with a
# 4 KiB writer running through it, whose rate before and during is
# printed (shoal bench rados).
#
#   docs/bench/pg-merge.sh [FROM] [TO] [FILL]     (defaults 64 32 20)
set -euo pipefail
FROM=${1:-64} TO=${2:-32} FILL=${3:-20}
SHOAL=${SHOAL:-shoal}
dir=$(mktemp -d /tmp/pg-merge.XXXXXX)
trap '$SHOAL down --data "$dir/d" >/dev/null 2>&1; rm -rf "$dir"' EXIT
$SHOAL up --data "$dir/d" --detach --osds 3 --no-gateway --set target_max_misplaced_ratio=0.5 >/dev/null
export SHOAL_CONF=$dir/d/shoal.conf
$SHOAL pool create merge --pg-num "$FROM" >/dev/null
$SHOAL bench rados write -p merge -b 4K -t 16 --seconds "$FILL" --no-cleanup --run-name fill | tail -4
$SHOAL df | grep '^merge'
$SHOAL bench rados write -p merge -b 4K -t 16 --seconds 10 --run-name before | grep -i 'iops\|Bandwidth' | head -2
$SHOAL bench rados write -p merge -b 4K -t 16 --seconds 600 --run-name during > "$dir/during.txt" 2>&1 &
bench=$!
sleep 2
start=$(date +%s.%N)
$SHOAL pool set merge pg_num "$TO" >/dev/null
until $SHOAL pool ls --format detail | grep -q "'merge'.* pg_num $TO pgp_num $TO\$"; do sleep 0.5; done
merged=$(date +%s.%N)
kill -INT $bench 2>/dev/null || true
wait $bench 2>/dev/null || true
until $SHOAL health | grep -q HEALTH_OK; do sleep 0.5; done
done_=$(date +%s.%N)
echo "pg_num $FROM -> $TO: merged in $(echo "$merged - $start" | bc) s, HEALTH_OK after $(echo "$done_ - $start" | bc) s"
grep -i 'iops\|Bandwidth' "$dir/during.txt" | head -2 || tail -5 "$dir/during.txt"
$SHOAL df | grep '^merge'
