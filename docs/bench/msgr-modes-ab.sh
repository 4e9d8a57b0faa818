#!/usr/bin/env bash
# msgr-modes-ab.sh -- what protected sessions cost: a binary from before
# them (frames with a crc32c only) against one with them in crc mode
# (every frame authenticated) and in secure mode (encrypted), in the same
# run, sides alternating A B C, C B A so that the machine's drift hits
# them alike; each side's own binary is its load generator.
#
#   docs/bench/msgr-modes-ab.sh OLD_BINARY NEW_BINARY [ROUNDS] [SECS]
#
# Each side starts a fresh `shoal up --osds 3` (3-replica pool data) and
# runs 4 MiB writes, 4 MiB sequential reads, 4 KiB writes and 4 KiB random
# reads at 16 threads, printing MB/s, IOPS, latency and the daemons' CPU
# (lib.sh). Side C appends "[global] ms_mode = secure" to its shoal.conf.
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-2} SECS=${4:-10}
DIR=/var/tmp/shoal-bench-msgr-modes
. "$(dirname "$0")/lib.sh"

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run, $ROUNDS rounds, -t 16: A=$OLD B=$NEW crc C=$NEW secure"
for round in $(seq "$ROUNDS"); do
  order="A B C"; [ $((round % 2)) = 0 ] && order="C B A"
  for side in $order; do
    bin=$NEW; [ "$side" = A ] && bin=$OLD
    rm -rf "$DIR"
    "$bin" up --detach --data "$DIR" --osds 3 --osd-size "${OSD_SIZE:-20G}" --no-gateway > /dev/null
    if [ "$side" = C ]; then
      "$bin" down --data "$DIR" > /dev/null
      printf '[global]\nms_mode = secure\n' >> "$DIR/shoal.conf"
      "$bin" up --detach --data "$DIR" --no-gateway > /dev/null
    fi
    export SHOAL_CONF=$DIR/shoal.conf
    shoal_rados "$side r$round" "$DIR/run" "$bin"
    "$bin" down --data "$DIR" > /dev/null
  done
done
rm -rf "$DIR"
