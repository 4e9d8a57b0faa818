#!/usr/bin/env bash
# loadgen-ab.sh -- compare two `shoal bench s3` load generators on one
# cluster: the same `shoal up --osds 3` (from CLUSTER_BINARY, default
# ./shoal) driven by OLD_BINARY's and NEW_BINARY's generators in turn,
# each on objects it wrote itself (bucket lg-old / lg-new), printing MB/s
# and the generator's own CPU (user + system) per request.
#
#   docs/bench/loadgen-ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECS] [OP]
#
# OP is get (default) or put, 32 MiB objects at concurrency 4. Garbage of
# overwritten objects is collected at once (rgw_gc_obj_min_wait = 0) so
# that PUT rounds do not fill the OSDs.
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-3} SECS=${4:-12} OP=${5:-get}
CLUSTER=${CLUSTER_BINARY:-./shoal}
D=/var/tmp/shoal-bench-loadgen
rm -rf "$D"
"$CLUSTER" up --detach --data "$D" --osds 3 --osd-size 16G > /dev/null
"$CLUSTER" down --data "$D" > /dev/null
printf 'rgw_gc_obj_min_wait = 0\nrgw_gc_processor_period = 2\n' >> "$D/shoal.conf"
"$CLUSTER" up --detach --data "$D" > /dev/null
trap '"$CLUSTER" down --data "$D" > /dev/null; rm -rf "$D"' EXIT
set -a; . "$D/s3.env"; set +a
load=(--size 32M --concurrency 4 --objects 40)
if [ "$OP" = get ]; then # each generator writes the objects it will read
  "$OLD" bench s3 --op put "${load[@]}" --duration 5s --bucket lg-old > /dev/null
  "$NEW" bench s3 --op put "${load[@]}" --duration 5s --bucket lg-new > /dev/null
fi
echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, $ROUNDS rounds, $OP 32M c4: old=$OLD new=$NEW"
for r in $(seq "$ROUNDS"); do
  for side in old new; do
    bin=$OLD; [ $side = new ] && bin=$NEW
    out=$( { /usr/bin/time -f "cpu %U %S" "$bin" bench s3 --op "$OP" "${load[@]}" --duration "${SECS}s" --bucket "lg-$side"; } 2>&1 )
    line=$(printf '%s\n' "$out" | grep -E '^(GET|PUT) ')
    printf '%s\n%s\n' "$line" "$(printf '%s\n' "$out" | grep '^cpu ')" | awk -v l="round $r $side" '
      NR == 1 { ops = $2; mbs = $4; errs = $9 }
      NR == 2 { printf "%-14s %9.1f MB/s  errors %s  generator CPU %6.2f ms/req\n", l, mbs, errs, ($2 + $3) * 1000 / ops }'
  done
done
