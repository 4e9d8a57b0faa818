#!/usr/bin/env bash
# memory-target.sh -- does an OSD stay within osd_memory_target through the
# work that fills its memory: its caches (reads), and a recovery while
# clients write? On `shoal up --osds 3` with osd_memory_target = TARGET:
#
#   1. write SECS seconds of 4 MiB objects (16 in flight), then read them
#      back twice (seq), so each OSD's data and metadata caches fill;
#   2. kill -9 osd.2 (noout set), write SECS seconds more, restart it
#      under a SECS-second write load and wait for active+clean: osd.0
#      and osd.1 recover it, holding object data for the pushes;
#   3. print each OSD's peak resident memory (VmHWM, which covers its
#      whole life: osd.2's since its restart) beside the target.
#
#   docs/bench/memory-target.sh [TARGET] [SECS]      (default 1G, 6)
#
# Each write phase of SECS seconds stores about SECS x 500 MB on every OSD
# (the OSDs are 16 GiB sparse files under /var/tmp).
#
# Needs a built ./shoal (go build -o shoal ./cmd/shoal). EXTRA_CONF, when
# set, is appended to the cluster's [global] section (e.g.
# "bluestore_data_cache_size = 1G" to size a cache by hand). RUNTIME=1
# sets the target in the MONs' configuration database once the cluster
# runs (`shoal config set osd osd_memory_target TARGET`, as an operator
# would) instead of in the configuration file the OSDs start with.
set -euo pipefail
TARGET=${1:-1G}
SECS=${2:-6}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
D=/var/tmp/shoal-memory-target

S() { "$SHOAL" -c "$D/shoal.conf" "$@"; }
B() { S bench rados -p data "$@"; }
sup() { S status --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])'; }
sclean() {
  while ! S status --format json | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s["pgs_by_state"].get("active+clean",0)==s["num_pgs"] else 1)'; do sleep 0.2; done
}
hwm() { awk '/^VmHWM/{printf "%.0f", $2/1024}' "/proc/$1/status"; }
rss() { awk '/^VmRSS/{printf "%.0f", $2/1024}' "/proc/$1/status"; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, osd_memory_target = $TARGET${RUNTIME:+ (set at runtime)}, ${SECS}s per phase, $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null)"
cleanup() { "$SHOAL" down --data "$D" > /dev/null 2>&1 || true; rm -rf "$D"; }
cleanup
trap cleanup EXIT
"$SHOAL" up --detach --no-gateway --data "$D" --osds 3 --osd-size 16G > /dev/null
"$SHOAL" down --data "$D" > /dev/null
# into [global], which comes first: insert after its last line
FILE_TARGET="osd_memory_target = $TARGET"
[ -n "${RUNTIME:-}" ] && FILE_TARGET=""
python3 - "$D/shoal.conf" "$FILE_TARGET" "${EXTRA_CONF:-}" <<'EOF'
import sys
path, lines = sys.argv[1], [l for l in sys.argv[2:] if l]
text = open(path).read()
head, sep, rest = text.partition("\n[mon.")
open(path, "w").write(head.rstrip("\n") + "\n" + "\n".join(lines) + "\n\n" + sep.lstrip("\n") + rest)
EOF
"$SHOAL" up --detach --no-gateway --data "$D" > /dev/null
if [ -n "${RUNTIME:-}" ]; then
  S config set osd osd_memory_target "$TARGET" > /dev/null
  sleep 3 # the OSDs fetch the configuration database every second
fi
S osd set noout > /dev/null
B write -b 4M -t 16 --seconds "$SECS" --no-cleanup --run-name fill | awk '/^Bandwidth/{print "fill:     " $0}'
for i in 1 2; do B seq -t 16 --seconds "$SECS" --run-name fill | awk -v i=$i '/^Bandwidth/{print "read " i ":   " $0}'; done
for i in 0 1 2; do p=$(cat "$D/run/osd.$i.pid"); echo "osd.$i after reads:    RSS $(rss "$p") MiB, peak $(hwm "$p") MiB"; done
kill -9 "$(cat "$D/run/osd.2.pid")"
while [ "$(sup)" != 2 ]; do sleep 0.1; done
B write -b 4M -t 16 --seconds "$SECS" --no-cleanup --run-name deg | awk '/^Total writes/{print "degraded: " $0}'
B write -b 4M -t 16 --seconds "$SECS" --no-cleanup --run-name load > /tmp/shoal-memory-load.out 2>&1 &
load=$!
setsid "$SHOAL" osd --conf "$D/shoal.conf" --data "$D/osd.2" >> "$D/log/osd.2.log" 2>&1 < /dev/null &
while [ "$(sup)" != 3 ]; do sleep 0.1; done
sclean
wait "$load"
awk '/^Bandwidth/{print "load:     " $0}' /tmp/shoal-memory-load.out
for i in 0 1 2; do p=$(cat "$D/run/osd.$i.pid"); echo "osd.$i after recovery: RSS $(rss "$p") MiB, peak $(hwm "$p") MiB (target $TARGET)"; done
