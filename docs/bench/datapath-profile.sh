#!/usr/bin/env bash
# datapath-profile.sh -- where the OSDs' time goes on 4 MiB object writes
# and sequential reads, per pool shape (issue 43's first step). For each
# shape a fresh `shoal up` creates the pool; then the daemons are
# restarted twice, once for SECS of 4 MiB writes and once for the
# sequential read of what they wrote (`shoal bench rados`, 16 in flight),
# each time with SHOAL_CPUPROFILE and SHOAL_TRACE set, so every daemon
# writes a Go CPU profile and a Go execution trace of that phase alone.
# Per phase it prints the OSDs' CPU seconds per GB (/proc/PID/stat) and
# their system calls and context switches per MiB (perf stat on the
# OSDs), and under OUT/SHAPE/ it leaves:
#   PHASE-PID.prof, PHASE-PID.trace   every daemon's profile and trace
#   PHASE-cpu.txt                     `go tool pprof -top` of the OSDs'
#   PHASE-{sync,syscall,net,sched}.txt  the OSDs' off-CPU profiles from
#                                     their traces (`go tool trace -pprof`)
#
#   docs/bench/datapath-profile.sh [SECS] [OUT]
#
# SHAPES (";"-separated): "rep N" a 3-replica pool on N OSDs, "ec K M N"
# an EC K+M pool on N OSDs; default "rep 3;ec 2 1 3;ec 4 2 6".
set -euo pipefail
SECS=${1:-10}
OUT=${2:-/tmp/shoal-datapath}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
DIR=/var/tmp/shoal-bench-datapath
. "$(dirname "$0")/lib.sh"
MIB=1048576

osd_pids() { cat "$DIR"/run/osd.*.pid | paste -sd,; }

phase() { # phase SHAPE POOL MODE: one profiled run of MODE on POOL
  local shape=$1 pool=$2 mode=$3 stat out c0 c1 pids ops
  SHOAL_CPUPROFILE="$OUT/$shape/$mode-%p.prof" SHOAL_TRACE="$OUT/$shape/$mode-%p.trace" \
    "$SHOAL" up --detach --data "$DIR" --no-gateway > /dev/null
  pids=$(osd_pids)
  stat=$(mktemp)
  c0=$(cpu_of "$pids")
  local extra=""
  [ "$mode" = write ] && extra="-b 4M --no-cleanup"
  out=$(perf stat -x, -e raw_syscalls:sys_enter,context-switches -p "$pids" -o "$stat" -- \
    "$SHOAL" bench rados -p "$pool" "$mode" $extra -t 16 --seconds "$SECS" 2>&1)
  c1=$(cpu_of "$pids")
  ops=$(echo "$out" | awk -F: '/^Total (writes|reads) made/{gsub(/ /,"",$2); print $2}')
  local bw sc cs mib
  bw=$(echo "$out" | awk -F: '/^Bandwidth \(MB\/sec\)/{gsub(/ /,"",$2); print $2}')
  sc=$(awk -F, '/raw_syscalls:sys_enter/{print $1}' "$stat")
  cs=$(awk -F, '/context-switches/{print $1}' "$stat")
  mib=$((ops * 4))
  printf '%-10s %-5s %8s MB/s  OSD CPU %5.2f s/GB  syscalls %6.1f/MiB  context switches %6.1f/MiB\n' \
    "$shape" "$mode" "$bw" "$(echo "($c1 - $c0) / $TCK / ($mib * $MIB / 1000000000)" | bc -l)" \
    "$(echo "$sc / $mib" | bc -l)" "$(echo "$cs / $mib" | bc -l)"
  rm -f "$stat"
  "$SHOAL" down --data "$DIR" > /dev/null
  local profs=() traces=() p
  for p in ${pids//,/ }; do
    profs+=("$OUT/$shape/$mode-$p.prof")
    traces+=("$OUT/$shape/$mode-$p.trace")
  done
  go tool pprof -top -nodecount=40 "$SHOAL" "${profs[@]}" > "$OUT/$shape/$mode-cpu.txt" 2>/dev/null
  local kind t
  for kind in sync syscall net sched; do
    for t in "${traces[@]}"; do
      go tool trace -pprof="$kind" "$t" > "$t.$kind.pprof" 2>/dev/null || true
    done
    go tool pprof -top -nodecount=30 "${traces[@]/%/.$kind.pprof}" > "$OUT/$shape/$mode-$kind.txt" 2>/dev/null || true
  done
}

cpu_of() { # cpu_of PID,PID... -> their CPU ticks
  local total=0 pid
  for pid in ${1//,/ }; do
    total=$((total + $(awk '{print $14+$15}' "/proc/$pid/stat")))
  done
  echo "$total"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per phase, -t 16, 4 MiB objects, $SHOAL"
IFS=';' read -ra shapes <<< "${SHAPES:-rep 3;ec 2 1 3;ec 4 2 6}"
for s in "${shapes[@]}"; do
  set -- $s
  rm -rf "$DIR"
  if [ "$1" = rep ]; then name=rep3 pool=data n=$2; else name=ec$2$3 pool=ec$2$3 n=$4; fi
  "$SHOAL" up --detach --data "$DIR" --osds "$n" --osd-size 16G --no-gateway > /dev/null
  export SHOAL_CONF=$DIR/shoal.conf
  if [ "$1" = ec ]; then shoal_ec_pool "$SHOAL" "$2" "$3"; fi
  "$SHOAL" down --data "$DIR" > /dev/null
  mkdir -p "$OUT/$name"
  phase "$name" "$pool" write
  phase "$name" "$pool" seq
  rm -rf "$DIR"
done
