# lib.sh -- shared by the docs/bench scripts: CPU seconds of a cluster's
# daemons, and one benchmark run summarised on one line.
TCK=$(getconf CLK_TCK)

cpu() { # cpu RUNDIR -> total CPU ticks of the daemons whose pids are there
  local total=0 f pid t
  for f in "$1"/*.pid; do
    pid=$(cat "$f")
    [ -r "/proc/$pid/stat" ] || continue
    t=$(awk '{print $14+$15}' "/proc/$pid/stat")
    total=$((total + t))
  done
  echo "$total"
}

osdrss() { # osdrss RUNDIR -> the largest peak RSS (VmHWM, MiB) of the
  # OSDs whose pids are there (osd.N.pid, Shoal's and Ceph's name): the
  # most any one OSD held since it started
  local f pid m=0 k
  for f in "$1"/osd.*.pid; do
    pid=$(cat "$f")
    k=$(awk '/^VmHWM:/{print $2}' "/proc/$pid/status" 2>/dev/null) || continue
    [ -n "$k" ] && [ "$k" -gt "$m" ] && m=$k
  done
  echo $((m / 1024))
}

# run NAME RUNDIR CMD... -> the bench summary line (rados bench and shoal
# bench print the same fields), with the daemons' CPU seconds, for
# writes and reads of OBJ_BYTES-sized objects CPU seconds per GB moved,
# and the largest peak RSS of one OSD so far (osdrss)
run() {
  local name=$1 rundir=$2; shift 2
  local c0 c1 out
  c0=$(cpu "$rundir")
  out=$("$@" 2>&1)
  c1=$(cpu "$rundir")
  local bw iops lat ops secs
  bw=$(echo "$out" | awk -F: '/^Bandwidth \(MB\/sec\)/{gsub(/ /,"",$2); print $2}')
  iops=$(echo "$out" | awk -F: '/^Average IOPS/{gsub(/ /,"",$2); print $2}')
  lat=$(echo "$out" | awk -F: '/^Average Latency\(s\)/{gsub(/ /,"",$2); print $2}')
  ops=$(echo "$out" | awk -F: '/^Total (writes|reads) made/{gsub(/ /,"",$2); print $2}')
  secs=$(echo "($c1 - $c0) / $TCK" | bc -l)
  printf '%-34s %10s MB/s %8s IOPS  avg lat %8ss  ops %7s  daemon CPU %6.1f s' "$name" "$bw" "$iops" "$lat" "$ops" "$secs"
  if [ -n "${OBJ_BYTES:-}" ] && [ -n "$ops" ] && [ "$ops" != 0 ]; then
    printf '  %5.2f s/GB' "$(echo "$secs / ($ops * $OBJ_BYTES / 1000000000)" | bc -l)"
  elif [ -n "$ops" ] && [ "$ops" != 0 ]; then
    printf '  %5.2f s/1k ops' "$(echo "$secs * 1000 / $ops" | bc -l)"
  fi
  printf '  OSD peak RSS %5d MiB\n' "$(osdrss "$rundir")"
}

busy() { # busy -> CPU ticks the whole machine spent busy (all processes,
  # the kernel's threads and interrupts: /proc/stat's user, nice, system,
  # irq, softirq and steal)
  awk '/^cpu /{print $2+$3+$4+$7+$8+$9; exit}' /proc/stat
}

pidcpu() { # pidcpu PIDFILE -> CPU ticks of that process
  local pid; pid=$(cat "$1"); awk '{print $14+$15}' "/proc/$pid/stat"
}

# s3run NAME RUNDIR GWPIDFILE ENDPOINT AK SK ARGS... -> one line: the
# load's rates and latencies, then CPU per request: the daemons' ("all"),
# the gateway's, and the whole machine's (the daemons, the load
# generator, and the kernel's work outside any process: loopback
# networking, block I/O, the file system's metadata writes)
s3run() {
  local name=$1 rundir=$2 gwpid=$3 ep=$4 ak=$5 sk=$6; shift 6
  local c0 g0 m0 c1 g1 m1 out
  c0=$(cpu "$rundir"); g0=$(pidcpu "$gwpid"); m0=$(busy)
  out=$("$SHOAL" bench s3 --endpoint "$ep" --access-key "$ak" --secret-key "$sk" --duration "${SECS}s" --format json "$@")
  c1=$(cpu "$rundir"); g1=$(pidcpu "$gwpid"); m1=$(busy)
  echo "$out" | python3 -c '
import json, sys
name, all_s, gw_s, m_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
r = json.load(sys.stdin)
t = r["total"]
ops = max(t["ops"], 1)
print("%-30s %9.1f ops/s %8.1f MB/s  p50 %7.1f ms  p99 %7.1f ms  errors %d  CPU all %6.2f ms/req  gateway %6.2f ms/req  machine %6.2f ms/req" % (
    name, t["ops_per_s"], t["mb_per_s"], t["latency_p50_ms"], t["latency_p99_ms"], t["errors"], 1000*all_s/ops, 1000*gw_s/ops, 1000*m_s/ops))
' "$name" "$(echo "($c1 - $c0) / $TCK" | bc -l)" "$(echo "($g1 - $g0) / $TCK" | bc -l)" "$(echo "($m1 - $m0) / $TCK" | bc -l)"
}

# s3_table LABEL RUNDIR FRONTPIDFILE ENDPOINT AK SK -> the issue-5
# table's four s3run lines: 64 KiB PUT and GET at concurrency 16, 32 MiB
# PUT and GET at concurrency 4 (FRONTPIDFILE: the S3 front end's pid, a
# gateway's or a whole server's)
s3_table() {
  local l=$1; shift
  s3run "$l PUT 64K c16" "$@" --op put --size 64K --concurrency 16 --objects 2000 --bucket bench64k
  s3run "$l GET 64K c16" "$@" --op get --size 64K --concurrency 16 --objects 2000 --bucket bench64k
  s3run "$l PUT 32M c4"  "$@" --op put --size 32M --concurrency 4 --objects 40 --bucket bench32m
  s3run "$l GET 32M c4"  "$@" --op get --size 32M --concurrency 4 --objects 40 --bucket bench32m
}

# shoal_rados LABEL RUNDIR SHOAL -> the four `shoal bench rados` runs of
# the issue-3 table (4 MiB writes and sequential reads, 4 KiB writes and
# random reads, 16 threads, $SECS each) on pool data of the cluster
# $SHOAL_CONF names, SHOAL's load generator, one `run` line each; the
# objects are removed after each pair
shoal_rados() {
  local l=$1 rundir=$2 shoal=$3
  local S="$shoal bench rados -p data"
  OBJ_BYTES=4194304 run "$l 4M write" "$rundir" $S write -b 4M -t 16 --seconds "$SECS" --no-cleanup
  OBJ_BYTES=4194304 run "$l 4M seq" "$rundir" $S seq -t 16 --seconds "$SECS"
  "$shoal" rados -p data cleanup > /dev/null
  run "$l 4K write" "$rundir" $S write -b 4K -t 16 --seconds "$SECS" --no-cleanup
  run "$l 4K rand" "$rundir" $S rand -t 16 --seconds "$SECS"
  "$shoal" rados -p data cleanup > /dev/null
}

# shoal_ec_pool SHOAL K M -> creates, on the cluster $SHOAL_CONF names, the
# erasure-code profile and pool "ecKM" (K+M shards, failure domain osd),
# and waits up to 120 s for HEALTH_OK
shoal_ec_pool() {
  local shoal=$1 k=$2 m=$3
  "$shoal" osd erasure-code-profile set "ec$k$m" k="$k" m="$m" crush-failure-domain=osd > /dev/null
  "$shoal" pool create "ec$k$m" erasure "ec$k$m" > /dev/null
  shoal_healthy "$shoal"
}

# shoal_healthy SHOAL -> waits up to 120 s for the cluster $SHOAL_CONF
# names to report HEALTH_OK
shoal_healthy() {
  for _ in $(seq 120); do "$1" health | grep -q HEALTH_OK && return; sleep 1; done
}

