#!/usr/bin/env bash
# s3-guide-experiments.sh -- the Ceph guides' RGW tuning experiments on
# Shoal's gateway, each a row of docs/PERFORMANCE.md, on this machine:
#
#  1. rgw_max_chunk_size 512 KiB vs 4 MiB: 32 MiB PUTs (concurrency 4) into
#     an erasure-coded 4+2 data pool (6 OSDs, failure domain osd);
#  2. bucket index pool on fast devices vs on the data's devices: 64 KiB
#     PUTs (concurrency 16); 6 OSDs, osd.0-2 on the disk (class hdd),
#     osd.3-5 in RAM (/dev/shm, class ssd); data on the hdd ones, the index
#     on the ssd ones (rule "fast") or the hdd ones (rule "slow");
#  3. indexless vs indexed buckets: 64 KiB PUTs (concurrency 16), 3 OSDs.
#
#   docs/bench/s3-guide-experiments.sh [SECONDS]     (default 30)
#
# Needs a built ./shoal (go build -o shoal ./cmd/shoal) and ~1 GiB free in
# /dev/shm.
set -euo pipefail
SECS=${1:-30}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
D=/var/tmp/shoal-guide
SHM=/dev/shm/shoal-guide
. "$(dirname "$0")/lib.sh"

down() { "$SHOAL" down --data "$D" > /dev/null 2>&1 || true; rm -rf "$D" "$SHM"; }
sh() { "$SHOAL" -c "$D/shoal.conf" "$@"; }
healthy() { for _ in $(seq 180); do sh health 2>/dev/null | grep -q HEALTH_OK && return 0; sleep 1; done; echo "cluster not healthy" >&2; sh status >&2; return 1; }

# gateway ID PORT [OPTION=VALUE...]: start `shoal gateway --id ID` with its
# own conf section; waits for its port
gateway() {
  local id=$1 port=$2; shift 2
  { echo; echo "[client.rgw.$id]"; echo "rgw_frontends = beast endpoint=127.0.0.1:$port"
    for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}"; done; } >> "$D/shoal.conf"
  nohup "$SHOAL" -c "$D/shoal.conf" gateway --id "$id" > "$D/log/gw-$id.out" 2>&1 &
  for _ in $(seq 100); do [ -f "$D/run/client.rgw.$id.pid" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0; sleep 0.2; done
  echo "gateway $id did not start" >&2; cat "$D/log/gw-$id.out" >&2; return 1
}
creds() { set -a; . "$D/s3.env"; set +a; }
# row NAME GWID PORT ARGS...
row() { local n=$1 id=$2 port=$3; shift 3; s3run "$n" "$D/run" "$D/run/client.rgw.$id.pid" "http://127.0.0.1:$port" "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" "$@"; }

echo "# $(date -u +%FT%TZ) $(nproc) cores, ${SECS}s per run"
trap down EXIT

# 1. chunk size on EC 4+2
down
"$SHOAL" up --detach --no-gateway --data "$D" --osds 6 --osd-size 16G > /dev/null
sh osd erasure-code-profile set ec42 k=4 m=2 crush-failure-domain=osd > /dev/null
sh pool create default.rgw.buckets.data erasure ec42 > /dev/null
healthy
"$SHOAL" up --data "$D" --detach > /dev/null   # starts the default gateway: S3 user, s3.env
creds
gateway c512k 7491 rgw_max_chunk_size=524288
gateway c4m 7492 rgw_max_chunk_size=4194304
row "EC 4+2, chunk 512K: PUT 32M c4" c512k 7491 --op put --size 32M --concurrency 4 --objects 40 --bucket chunk512k
row "EC 4+2, chunk 4M:   PUT 32M c4" c4m 7492 --op put --size 32M --concurrency 4 --objects 40 --bucket chunk4m
down

# 2. index pool on fast devices vs the data's devices
mkdir -p "$D" "$SHM"
for i in 0 1 2; do mkdir -p "$D/osd.$i"; echo hdd > "$D/osd.$i/crush_device_class"; done
for i in 3 4 5; do mkdir -p "$SHM/osd.$i"; echo ssd > "$SHM/osd.$i/crush_device_class"; ln -s "$SHM/osd.$i" "$D/osd.$i"; done
"$SHOAL" up --detach --data "$D" --osds 6 --osd-size 2G > /dev/null
creds
sh osd crush rule create-replicated fast default osd ssd > /dev/null
sh osd crush rule create-replicated slow default osd hdd > /dev/null
for p in $(sh pool ls); do sh pool set "$p" crush_rule slow > /dev/null; done
healthy
row "index on data devices: PUT 64K c16" gateway 7480 --op put --size 64K --concurrency 16 --bucket idxslow
sh pool set default.rgw.buckets.index crush_rule fast > /dev/null
healthy
row "index on fast devices: PUT 64K c16" gateway 7480 --op put --size 64K --concurrency 16 --bucket idxfast
down

# 3. indexless vs indexed
"$SHOAL" up --detach --data "$D" --osds 3 > /dev/null
creds
row "indexed bucket:   PUT 64K c16" gateway 7480 --op put --size 64K --concurrency 16 --bucket indexed
row "indexless bucket: PUT 64K c16" gateway 7480 --op put --size 64K --concurrency 16 --bucket indexless --location default:indexless
