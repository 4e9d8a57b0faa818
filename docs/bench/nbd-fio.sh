#!/usr/bin/env bash
# nbd-fio.sh -- fio's nbd engine against `shoal rbd nbd serve` on a fresh
# `shoal up --osds 3 --no-gateway` (3-replica pool of 32 PGs, a 1 GiB
# image written whole first), one line per point: IOPS, MB/s, mean and
# p99 completion latency. For A/B runs of two builds (SHOAL=BINARY).
#
#   SPECS="randread:4k:16 read:128k:32" RT=10 docs/bench/nbd-fio.sh
#
# SPECS: RW:BS:IODEPTH points (fio's --rw, --bs, --iodepth; RW randrw is
# fio's 70/30 mix); RT: seconds per point (default 15); UP_ARGS: more
# `shoal up` arguments (say "--set bluestore_prefer_deferred_size=0");
# PERF=1 also records `perf record -g` of the
# OSDs and the server per point into /tmp/nbdprof-RW.perf. The server
# writes a Go CPU profile to /tmp/nbdprof-PID.prof (SHOAL_CPUPROFILE).
# Needs fio (Debian's, with the nbd engine) and a built ./shoal.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
D=/var/tmp/shoal-nbdprof
SOCK=/tmp/nbdprof.sock
rm -rf $D; $SHOAL up --detach --data $D --osds 3 --no-gateway ${UP_ARGS:-} > /tmp/nbdprof-up.log
export SHOAL_CONF=$D/shoal.conf
$SHOAL pool create rbd --size 3 --pg-num 32 > /dev/null
$SHOAL rbd create img --size 1G > /dev/null
$SHOAL rbd bench img --io-type write --io-size 4M --io-threads 8 --io-total 1G --io-pattern seq > /dev/null
rm -f $SOCK
SHOAL_CPUPROFILE=/tmp/nbdprof-%p.prof $SHOAL rbd nbd serve img --socket $SOCK > /tmp/nbdprof-serve.log 2>&1 &
NBD=$!
for i in $(seq 50); do [ -S $SOCK ] && break; sleep 0.2; done
for spec in ${SPECS:-randread:4k:16 read:128k:32}; do
  IFS=: read rw bs qd <<< "$spec"
  if [ -n "${PERF:-}" ]; then perf record -F 999 -g -o /tmp/nbdprof-$rw.perf -p $(cat $D/run/osd.*.pid | paste -sd,),$NBD -- sleep $((RT-2)) > /dev/null 2>&1 & PP=$!; fi
  fio --name=p --rw=$rw --bs=$bs --iodepth=$qd --rwmixread=70 --numjobs=1 --runtime=${RT:-15} --time_based --ioengine=nbd --uri="nbd+unix:///img?socket=$SOCK" --output-format=json 2>/dev/null | python3 -c '
import sys,json
raw=sys.stdin.read(); j=json.loads(raw[raw.index("{"):])
rs=[j["jobs"][0][d] for d in ("read","write") if j["jobs"][0][d]["io_bytes"] > 0]
n=sum(r["total_ios"] for r in rs)
p99=max(r["clat_ns"]["percentile"]["99.000000"] for r in rs)
print("'$spec'", "IOPS %.0f MB/s %.1f mean %.2f ms p99 %.2f ms" % (sum(r["iops"] for r in rs), sum(r["bw_bytes"] for r in rs)/1e6, sum(r["clat_ns"]["mean"]*r["total_ios"] for r in rs)/n/1e6, p99/1e6))'
  [ -n "${PERF:-}" ] && wait $PP
done
kill -INT $NBD; wait $NBD
$SHOAL down --data $D > /dev/null
