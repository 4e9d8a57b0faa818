#!/usr/bin/env bash
# nbd-syscalls-ab.sh -- system calls, context switches and CPU per request
# of two `shoal rbd nbd serve` builds, A and B, in the order A B B A, on
# one `shoal up --osds 3` cluster (run by A's binary; 3-replica pool,
# 256 MiB image written whole first). Each point: the server under
# `perf stat -e syscalls:sys_enter_write,syscalls:sys_enter_writev,
# syscalls:sys_enter_read,context-switches,task-clock -p PID` while fio's
# nbd engine runs SECS seconds (4 KiB random reads at qd16, 128 KiB
# sequential reads at qd32, 4 KiB random writes at qd16); counts are
# divided by fio's completed I/Os. Counts do not swing with the host's
# speed as IOPS do.
#
#   docs/bench/nbd-syscalls-ab.sh A-BINARY B-BINARY [SECS]
#
# Needs: fio, perf (with syscall tracepoints).
set -euo pipefail
declare -A BIN=([A]=$1 [B]=$2)
SECS=${3:-8}
D=$(mktemp -d /tmp/nbd-syscalls.XXXXXX)
trap '"${BIN[A]}" down --data "$D" > /dev/null 2>&1 || true; rm -rf "$D"' EXIT
"${BIN[A]}" up --detach --data "$D" --osds 3 --no-gateway > /dev/null
export SHOAL_CONF=$D/shoal.conf
"${BIN[A]}" pool create rbd --size 3 --pg-num 32 > /dev/null
"${BIN[A]}" rbd create img --size 256M
"${BIN[A]}" rbd bench img --io-type write --io-size 4M --io-threads 16 --io-total 256M --io-pattern seq > /dev/null

# point SIDE RW BS QD: one line of per-request counts
point() {
  local side=$1 rw=$2 bs=$3 qd=$4 sock=$D/img.sock pid ps ios
  rm -f "$sock"
  "${BIN[$side]}" rbd nbd serve img --socket "$sock" > /dev/null 2>&1 &
  pid=$!
  until [ -S "$sock" ]; do sleep 0.1; done
  perf stat -e 'syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_read,context-switches,task-clock' \
    -p "$pid" -o "$D/perf.txt" &
  ps=$!
  ios=$(fio --name=p --ioengine=nbd --uri="nbd+unix:///img?socket=$sock" --rw="$rw" --bs="$bs" --iodepth="$qd" \
      --numjobs=1 --time_based --runtime="$SECS" --size=256M --output-format=json 2>/dev/null | python3 -c '
import json, sys
raw = sys.stdin.read()  # fio nbd prints "connected to NBD server" first
j = json.loads(raw[raw.index("{"):])["jobs"][0]
print(j["read"]["total_ios"] + j["write"]["total_ios"])')
  kill -INT "$ps"; wait "$ps" 2>/dev/null || true
  python3 - "$side" "$rw-$bs-qd$qd" "$ios" "$D/perf.txt" <<'PY'
import re, sys
side, point, ios, path = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
v = {}
for line in open(path):
    m = re.match(r'\s*([\d,.]+)\s+(?:msec\s+)?(\S+)', line)
    if m:
        v[m.group(2).split(':')[-1]] = float(m.group(1).replace(',', ''))
print("%s %-18s ios %6d  per request: write %.2f writev %.2f read %.2f ctxsw %.2f cpu %.1f us" % (
    side, point, ios, v.get('sys_enter_write', 0) / ios, v.get('sys_enter_writev', 0) / ios,
    v.get('sys_enter_read', 0) / ios, v.get('context-switches', 0) / ios, v.get('task-clock', 0) * 1000 / ios))
PY
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

for side in A B B A; do
  point "$side" randread 4k 16
  point "$side" read 128k 32
  point "$side" randwrite 4k 16
done
