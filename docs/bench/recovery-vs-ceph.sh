#!/usr/bin/env bash
# recovery-vs-ceph.sh -- the issue-6 failure figures, the same experiment on
# the reference Ceph cluster (../shared/reference-ceph: 3 BlueStore OSDs,
# 3-replica pool rbench) and on `shoal up --osds 3` (3-replica pool data):
#
#   1. baseline: 64 KiB writes, 16 in flight, SECS seconds (objects kept);
#   2. detection: kill -9 osd.2 (noout set), time until the map marks it down;
#   3. recovery without client load: SECS seconds of writes while osd.2 is
#      down, then restart it and time until every PG is active+clean; the
#      objects written meanwhile are what it recovers (each write is a new
#      64 KiB object);
#   4. recovery under client load: the same, with a SECS-second write
#      benchmark started together with osd.2 — its latency beside step 1's;
#   5. rebalance: add a fourth OSD and count the objects moved (the OSDs'
#      recovery_ops perf counters, summed; Ceph's PGs' num_objects_recovered,
#      used before, counted fewer objects than the minimum) against the
#      minimum, one new copy of each object of the PGs that map to the new OSD;
#   6. out: mark that OSD out again and count the objects moved against the
#      minimum, one copy of each object of the PGs it was acting for.
#
#   docs/bench/recovery-vs-ceph.sh [SECS]        (default 20)
#
# Ceph runs with osd_recovery_sleep_hdd = 0: its OSD files count as
# rotational, and its HDD default (0.1 s between recovery ops) would make
# the recovery of a 20 s write phase take the better part of an hour.
#
# Ceph's client load in steps 1 and 4 is docs/bench/rados-lat.py (librados
# through Debian's python3-rados, 64 KiB objects, 16 in flight), which
# reports the p99 latency that `rados bench` does not; the writes whose
# objects are recovered use `rados bench`.
#
# Needs the ceph packages (ceph, ceph-mon, ceph-osd, ceph-mgr, radosgw), jq,
# python3 and a built ./shoal. SKIP_CEPH=1 runs only Shoal. SHOAL_OSD_CONF
# ("name=value ...") sets OSD options on Shoal's cluster first, e.g.
# "osd_op_queue=wpq" or "osd_mclock_max_sequential_bandwidth_ssd=100M".
set -euo pipefail
SECS=${1:-20}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
REF=${REF:-$HERE/../shared/reference-ceph}
CEPH_DIR=/var/tmp/ceph-reference-recovery
SHOAL_DIR=/var/tmp/shoal-recovery

now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l | xargs printf '%.2f'; }
# bench output fields: ops, MB/s, avg, p99 (Shoal only), max latency
summary() {
  awk -F: '/^Total writes made/{o=$2} /^Bandwidth/{b=$2} /^Average Latency/{a=$2} /^p99 latency/{p=$2} /^Max latency/{m=$2}
    END{gsub(/ /,"",o);gsub(/ /,"",b);gsub(/ /,"",a);gsub(/ /,"",p);gsub(/ /,"",m);
        printf "%s writes, %s MB/s, latency avg %s s, p99 %s s, max %s s", o, b, a, (p==""?"n/a":p), m}'
}
ops() { awk -F: '/^Total writes made/{gsub(/ /,"",$2); print $2}'; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per write phase, 64 KiB objects, -t 16"

if [ -z "${SKIP_CEPH:-}" ]; then
  "$REF/down.sh" "$CEPH_DIR" > /dev/null 2>&1 || true
  rm -rf "$CEPH_DIR"
  "$REF/up.sh" "$CEPH_DIR" > /tmp/ceph-ref-up.log 2>&1
  export CEPH_CONF=$CEPH_DIR/ceph.conf
  C() { ceph -c "$CEPH_CONF" --connect-timeout 20 "$@"; }
  R="rados -c $CEPH_CONF -p rbench"
  RL() { /usr/bin/python3 "$HERE/docs/bench/rados-lat.py" --conf "$CEPH_CONF" --pool rbench -b 65536 -t 16 "$@"; }
  # drained ID -> wait until no PG's acting set holds osd.ID and every PG is active+clean
  drained() {
    while [ "$(C pg dump pgs -f json 2>/dev/null | jq "[.pg_stats[] | select(.acting | index($1))] | length")" != 0 ]; do sleep 0.5; done
    clean
  }
  clean() { # clean -> wait until every PG is active+clean
    while :; do
      s=$(C -s -f json 2>/dev/null | jq -r '([.pgmap.pgs_by_state[] | select(.state_name=="active+clean") | .count] | add // 0), .pgmap.num_pgs')
      set -- $s; [ "$1" = "$2" ] && return; sleep 0.2
    done
  }
  osd_up() { C osd dump -f json | jq -r ".osds[] | select(.osd==$1) | .up"; }
  # crec -> the OSDs' recovery_ops summed (objects copied by recovery and backfill)
  crec() { local n=0 i; for i in $(C osd ls); do n=$((n + $(C tell "osd.$i" perf dump 2>/dev/null | jq '.osd.recovery_ops // 0'))); done; echo $n; }
  restart() { ceph-osd -c "$CEPH_CONF" -i "$1"; }
  C osd set noout > /dev/null 2>&1
  # the OSD files count as rotational, so Ceph would sleep 0.1 s between
  # recovery ops (osd_recovery_sleep_hdd): off, as for SSDs
  C config set osd osd_recovery_sleep_hdd 0 > /dev/null 2>&1
  echo "ceph  baseline:           $(RL --seconds "$SECS" --run-name base 2>&1 | summary)"
  pid=$(cat "$CEPH_DIR/run/osd.2.pid"); t0=$(now); kill -9 "$pid"
  while [ "$(osd_up 2)" != 0 ]; do sleep 0.05; done
  echo "ceph  detection:          osd.2 marked down $(since "$t0") s after kill -9"
  n=$($R bench "$SECS" write -b 65536 -t 16 --no-cleanup --run-name deg1 2>&1 | ops)
  t0=$(now); restart 2; clean
  echo "ceph  recovery, idle:     $n objects ($((n / 16)) MiB) in $(since "$t0") s"
  pid=$(cat "$CEPH_DIR/run/osd.2.pid"); kill -9 "$pid"
  while [ "$(osd_up 2)" != 0 ]; do sleep 0.05; done
  n=$($R bench "$SECS" write -b 65536 -t 16 --no-cleanup --run-name deg2 2>&1 | ops)
  t0=$(now); restart 2
  RL --seconds "$SECS" --run-name load > /tmp/ceph-load.out 2>&1 &
  load=$!; clean; rec=$(since "$t0"); wait "$load"
  echo "ceph  recovery, loaded:   $n objects ($((n / 16)) MiB) in $rec s; client: $(summary < /tmp/ceph-load.out)"
  C osd unset noout > /dev/null 2>&1
  # a fourth OSD, as up.sh makes them
  before=$(crec)
  uuid=$(uuidgen); secret=$(ceph-authtool --gen-print-key)
  printf '{"cephx_secret": "%s"}' "$secret" > "$CEPH_DIR/osd-new.json"
  id=$(C osd new "$uuid" -i "$CEPH_DIR/osd-new.json"); rm -f "$CEPH_DIR/osd-new.json"
  mkdir -p "$CEPH_DIR/osd$id"
  ceph-authtool --create-keyring "$CEPH_DIR/osd$id/keyring" --name "osd.$id" --add-key "$secret" > /dev/null
  ceph-osd -c "$CEPH_CONF" -i "$id" --mkfs --key "$secret" --osd-uuid "$uuid" > "$CEPH_DIR/log/osd.$id.mkfs.log" 2>&1
  t0=$(now); ceph-osd -c "$CEPH_CONF" -i "$id"
  while [ "$(osd_up "$id")" != 1 ]; do sleep 0.2; done
  sleep 2; clean # the new OSD's PGs peer first, then backfill
  after=$(crec)
  min=$(C pg dump pgs -f json 2>/dev/null | jq "[.pg_stats[] | select(.pgid | startswith(\"$(C osd pool ls detail -f json | jq -r '.[] | select(.pool_name=="rbench") | .pool_id').\")) | select(.acting | index($id)) | .stat_sum.num_objects] | add")
  echo "ceph  add osd.$id:          moved $((after - before)) objects in $(since "$t0") s; minimum $min (rbench; other pools' objects moved too)"
  before=$(crec)
  t0=$(now); C osd out "$id" > /dev/null 2>&1
  drained "$id"
  after=$(crec)
  echo "ceph  out osd.$id:          moved $((after - before)) objects in $(since "$t0") s; minimum $min (the copies it held; other pools' objects moved too)"
  "$REF/down.sh" "$CEPH_DIR" > /dev/null 2>&1
fi

rm -rf "$SHOAL_DIR"
"$SHOAL" up --detach --no-gateway --data "$SHOAL_DIR" --osds 3 --osd-size 16G > /tmp/shoal-recovery-up.log
export SHOAL_CONF=$SHOAL_DIR/shoal.conf
S() { "$SHOAL" "$@"; }
B="$SHOAL bench rados -p data"
sclean() {
  while ! S status --format json | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s["pgs_by_state"].get("active+clean",0)==s["num_pgs"] else 1)'; do sleep 0.2; done
}
sup() { S status --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])'; }
# osd.2 alone (`shoal up` would wait for HEALTH_OK, which noout prevents)
restart2() { setsid "$SHOAL" osd --conf "$SHOAL_CONF" --data "$SHOAL_DIR/osd.2" >> "$SHOAL_DIR/log/osd.2.log" 2>&1 < /dev/null & }
recovered() { S osd perf --format json | python3 -c 'import json,sys; print(sum(o["perf"]["recovery_ops"] for o in json.load(sys.stdin)))'; }
for kv in ${SHOAL_OSD_CONF:-}; do S config set osd "${kv%%=*}" "${kv#*=}" > /dev/null; done
S osd set noout > /dev/null
echo "shoal baseline:           $($B write -b 64K -t 16 --seconds "$SECS" --no-cleanup --run-name base 2>&1 | summary)"
t0=$(now); kill -9 "$(cat "$SHOAL_DIR/run/osd.2.pid")"
while [ "$(sup)" != 2 ]; do sleep 0.05; done
echo "shoal detection:          osd.2 marked down $(since "$t0") s after kill -9"
n=$($B write -b 64K -t 16 --seconds "$SECS" --no-cleanup --run-name deg1 2>&1 | ops)
r0=$(recovered); t0=$(now); restart2
while [ "$(sup)" != 3 ]; do sleep 0.05; done; sclean
echo "shoal recovery, idle:     $n objects ($((n / 16)) MiB) in $(since "$t0") s (recovery_ops: $(( $(recovered) - r0 )))"
kill -9 "$(cat "$SHOAL_DIR/run/osd.2.pid")"
while [ "$(sup)" != 2 ]; do sleep 0.05; done
n=$($B write -b 64K -t 16 --seconds "$SECS" --no-cleanup --run-name deg2 2>&1 | ops)
t0=$(now)
$B write -b 64K -t 16 --seconds "$SECS" --no-cleanup --run-name load > /tmp/shoal-load.out 2>&1 &
load=$!
restart2
while [ "$(sup)" != 3 ]; do sleep 0.05; done; sclean; rec=$(since "$t0"); wait "$load"
echo "shoal recovery, loaded:   $n objects ($((n / 16)) MiB) in $rec s; client: $(summary < /tmp/shoal-load.out)"
S osd unset noout > /dev/null
r0=$(recovered); t0=$(now)
S up --data "$SHOAL_DIR" --add-osd 1 > /dev/null; sclean
min=$(S pg ls data --format json | python3 -c 'import json,sys; print(sum(p["num_objects"] for p in json.load(sys.stdin) if 3 in p["acting"]))')
echo "shoal add osd.3:          moved $(( $(recovered) - r0 )) objects in $(since "$t0") s; minimum $min"
r0=$(recovered); t0=$(now)
S osd out 3 > /dev/null
while [ "$(S pg ls data --format json | python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin) if 3 in p["acting"]))')" != 0 ]; do sleep 0.5; done
sclean
echo "shoal out osd.3:          moved $(( $(recovered) - r0 )) objects in $(since "$t0") s; minimum $min (the copies it held)"
S down --data "$SHOAL_DIR" > /dev/null
rm -rf "$SHOAL_DIR"
