#!/usr/bin/env bash
# ec-stripe-unit.sh -- an EC 2+2 pool per stripe unit (Ceph's profile key
# stripe_unit) on one `shoal up --osds 4` cluster: `shoal bench rados
# write -b 4M` for WSECS (default 5) then `rand` for RSECS (default 10),
# the stripe units in turn, ROUNDS rounds (default 2), each pool removed
# after its round; prints MB/s and the OSDs' CPU ticks (1/100 s, from
# /proc) per run.
#
#   SUS="4K 64K 1M" docs/bench/ec-stripe-unit.sh
#
# Needs a built ./shoal.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SHOAL=${SHOAL:-$HERE/shoal}
D=/var/tmp/shoal-su
rm -rf $D; $SHOAL up --detach --data $D --osds 4 > /tmp/su-up.log
export SHOAL_CONF=$D/shoal.conf
for su in $SUS; do $SHOAL osd erasure-code-profile set ec-$su k=2 m=2 stripe_unit=$su crush-failure-domain=osd > /dev/null; done
osdcpu() { local t=0; for f in $D/run/osd.*.pid; do p=$(cat $f); read -r a b c d e f g h i j k l m n o < <(cut -d' ' -f1-15 /proc/$p/stat); t=$((t+n+o)); done; echo $t; }
for round in $(seq ${ROUNDS:-2}); do
 for su in $SUS; do
  $SHOAL osd pool create p-$su-$round erasure ec-$su > /dev/null
  for i in $(seq 120); do $SHOAL health 2>/dev/null | grep -q HEALTH_OK && break; sleep 1; done
  c0=$(osdcpu); out=$($SHOAL bench rados write -p p-$su-$round -b 4M --seconds ${WSECS:-5} --no-cleanup 2>&1 | grep -i "bandwidth (MB" | head -1); c1=$(osdcpu)
  echo "round $round su=$su write: $out osd_ticks=$((c1-c0))"
  c0=$(osdcpu); out=$($SHOAL bench rados rand -p p-$su-$round --seconds ${RSECS:-10} 2>&1 | grep -i "bandwidth (MB" | head -1); c1=$(osdcpu)
  echo "round $round su=$su rand:  $out osd_ticks=$((c1-c0))"
  $SHOAL osd pool rm p-$su-$round > /dev/null
 done
done
$SHOAL down --data $D > /dev/null
