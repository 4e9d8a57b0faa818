// Package osdmap is the cluster's OSD map: pools, OSD states, the CRUSH map
// and temporary mappings, versioned by epoch and changed only by
// incrementals, plus the pure function from an object name to the OSDs that
// serve it.
//
// # Mapping
//
// An object reaches its OSDs exactly as in Ceph (src/osd/OSDMap.cc,
// src/osd/osd_types.cc):
//
//  1. ps = rjenkins string hash of the name (or of "namespace\x1fname"),
//     the raw placement seed; the PG is (pool, stable_mod(ps, pg_num)).
//  2. pps = rjenkins1(stable_mod(ps, pgp_num), pool) for pools with the
//     hashpspool flag (else stable_mod(ps, pgp_num) + pool): the CRUSH
//     input, so that pools do not overlap.
//  3. raw = CRUSH(rule, pps, size) with each OSD's in/out weight; OSDs that
//     do not exist are dropped (replicated) or become holes (erasure). A
//     PG's pg_upmap entry replaces raw unless it names an out or missing
//     OSD or has not the pool's size; then each pair of its
//     pg_upmap_items replaces one OSD, unless the new one is out or
//     already in the set (OSDMap::_apply_upmap).
//  4. up = raw without down OSDs (replicated: shifted left; erasure: holes
//     stay, positionally stable). The up primary is the first OSD, unless
//     primary affinity below 1.0 makes CRUSH skip it.
//  5. acting = pg_temp if set (used while backfilling to a new up set), else
//     up; the acting primary is primary_temp, else acting's first.
//
// # Epochs and encoding
//
// A Map is immutable once published. Incremental describes the change from
// epoch e to e+1; Apply returns the next map and is deterministic, so every
// daemon that applies the same incrementals holds the same map. Maps and
// incrementals encode to versioned binary sections (internal/wire): a newer
// Shoal may append fields an older one skips.
//
// pg_upmap entries are set by the MONs only, to keep an erasure-coded PG's
// shards at their positions when CRUSH reorders its OSDs (mon/upmap.go);
// pg_upmap_items are the balancer's (package balancer) or an operator's
// (`shoal osd pg-upmap-items`). Not yet modelled: CRUSH choose_args,
// cache tiers.
package osdmap
