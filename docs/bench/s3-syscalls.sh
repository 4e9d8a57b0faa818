#!/usr/bin/env bash
# s3-syscalls.sh -- system calls and context switches per S3 request, the
# whole machine's (perf stat -a), for two shoal binaries, A and B
# alternating: counts that do not move with the machine's speed, for
# changes whose effect on throughput is lost in a noisy host's drift.
#
#   docs/bench/s3-syscalls.sh A_BINARY B_BINARY [ROUNDS] [SECS]
#
# Each round starts a fresh `shoal up --osds 3` from each binary in turn
# and runs 64 KiB PUTs, then GETs, 16 at a time, for SECS seconds each,
# with B_BINARY's load generator for both (its own calls are counted
# too, alike on both sides). Needs perf (linux-perf) and root. CONF_A and
# CONF_B, when set, are lines added under a [global] header to that side's shoal.conf before
# its daemons start (see s3-ab.sh).
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-3} SECS=${4:-10}
DIR=/var/tmp/shoal-bench-syscalls
STAT=$(mktemp)
trap 'rm -f "$STAT"' EXIT
echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, $ROUNDS rounds: A=$A B=$B"
for r in $(seq "$ROUNDS"); do
  for side in A B; do
    bin=$A
    [ "$side" = B ] && bin=$B
    rm -rf "$DIR"
    "$bin" up --detach --data "$DIR" --osds 3 --osd-size 16G > /dev/null
    conf=${CONF_A:-}; [ "$side" = B ] && conf=${CONF_B:-}
    if [ -n "$conf" ]; then # one binary under two settings, as s3-ab.sh
      "$bin" down --data "$DIR" > /dev/null
      printf '[global]\n%s\n' "$conf" >> "$DIR/shoal.conf" # a section of its own: the file ends in the gateway's
      "$bin" up --detach --data "$DIR" > /dev/null
    fi
    for op in put get; do
      out=$(perf stat -a -x, -e raw_syscalls:sys_enter,context-switches -o "$STAT" -- \
        "$B" bench s3 -c "$DIR/shoal.conf" --op "$op" --size 64K --concurrency 16 \
        --objects 2000 --bucket bench64k --duration "${SECS}s" 2>&1 | grep -E '^(PUT|GET) ')
      ops=$(awk '{print $2}' <<< "$out")
      rate=$(awk '{print $3}' <<< "$out")
      calls=$(awk -F, '/sys_enter/ {print $1}' "$STAT")
      switches=$(awk -F, '/context-switches/ {print $1}' "$STAT")
      awk -v r="$r" -v s="$side" -v op="${op^^}" -v rate="$rate" -v ops="$ops" -v c="$calls" -v cs="$switches" \
        'BEGIN { printf "round %d %s %s 64K c16 %9.1f ops/s  syscalls %6.1f/req  context switches %5.1f/req\n", r, s, op, rate, c / ops, cs / ops }'
    done
    "$bin" down --data "$DIR" > /dev/null
  done
done
rm -rf "$DIR"
