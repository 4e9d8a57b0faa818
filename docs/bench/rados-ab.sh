#!/usr/bin/env bash
# rados-ab.sh -- compare two shoal binaries' clusters under `shoal bench
# rados`, A and B alternating so that the machine's drifting speed hits
# both alike (the structure issue's before/after check).
#
#   docs/bench/rados-ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECS]
#
# Each round starts a fresh `shoal up --osds 3` (3-replica pool data)
# from each binary in turn (A first in odd rounds, B first in even ones:
# a first run here showed the machine slowing through each round) and runs 4 MiB writes, 4 MiB sequential reads,
# 4 KiB writes and 4 KiB random reads at 16 threads, with one load
# generator for both sides (NEW_BINARY's `shoal bench rados`), printing
# MB/s, IOPS, latency and the daemons' CPU (lib.sh).
#
# OWN_LOADGEN=1 runs each side's own `shoal bench rados` instead (needed
# when the two binaries' messengers do not speak the same frame version).
#
# CONF_A and CONF_B, when set, are lines added, under a [global] header, to side A's or B's
# shoal.conf before its daemons start (one binary under two settings):
#   CONF_A='daemon_sysmon_poll = true' CONF_B='daemon_sysmon_poll = false' \
#     docs/bench/rados-ab.sh ./shoal ./shoal 2 10
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-3} SECS=${4:-10}
DIR=/var/tmp/shoal-bench-rados-ab
. "$(dirname "$0")/lib.sh"

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, $ROUNDS rounds, -t 16: A=$OLD B=$NEW"
for round in $(seq "$ROUNDS"); do
  order="A B"; [ $((round % 2)) = 0 ] && order="B A" # ABBA: a drift hits both sides alike
  for side in $order; do
    bin=$OLD
    [ "$side" = B ] && bin=$NEW
    rm -rf "$DIR"
    "$bin" up --detach --data "$DIR" --osds 3 --osd-size "${OSD_SIZE:-20G}" --no-gateway > /dev/null
    conf=${CONF_A:-}; [ "$side" = B ] && conf=${CONF_B:-}
    if [ -n "$conf" ]; then
      "$bin" down --data "$DIR" > /dev/null
      printf '[global]\n%s\n' "$conf" >> "$DIR/shoal.conf" # a section of its own: the file ends in the gateway's
      "$bin" up --detach --data "$DIR" --no-gateway > /dev/null
    fi
    export SHOAL_CONF=$DIR/shoal.conf
    lg=$NEW; [ -n "${OWN_LOADGEN:-}" ] && lg=$bin
    shoal_rados "$side r$round" "$DIR/run" "$lg"
    "$bin" down --data "$DIR" > /dev/null
    rm -rf "$DIR"
  done
done
