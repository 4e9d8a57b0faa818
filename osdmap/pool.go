package osdmap

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// PoolType is a pool's protection scheme, numbered as Ceph's
// pg_pool_t::TYPE_*.
type PoolType uint8

// Pool types.
const (
	PoolReplicated PoolType = 1
	PoolErasure    PoolType = 3
)

func (t PoolType) String() string {
	switch t {
	case PoolReplicated:
		return "replicated"
	case PoolErasure:
		return "erasure"
	}
	return fmt.Sprintf("type%d", uint8(t))
}

// Pool flags (Ceph's pg_pool_t::FLAG_*).
const (
	// FlagHashPSPool mixes the pool id into the CRUSH input so that pools'
	// PGs land on different OSDs; on by default.
	FlagHashPSPool uint64 = 1 << 0
	// FlagECOverwrites allows partial overwrites on an erasure pool.
	FlagECOverwrites uint64 = 1 << 17
)

// Object hash functions (Ceph's CEPH_STR_HASH_*).
const (
	HashLinux    = 1
	HashRjenkins = 2
)

// Pool is one pool's placement parameters.
type Pool struct {
	ID      int64
	Name    string
	Type    PoolType
	Size    int // replicas, or k+m shards
	MinSize int // fewest acting OSDs that still accept writes
	PGNum   uint32
	PGPNum  uint32 // PGs used for placement (≤ PGNum while splitting)
	// PGPNumTarget is pgp_num_target: the pgp_num the MONs move PGPNum
	// to in steps, each bounded by target_max_misplaced_ratio (Ceph's
	// mgr does this in DaemonServer::adjust_pgs); 0 means PGPNum.
	PGPNumTarget uint32
	// PGNumTarget is pg_num_target: the pg_num a merge moves PGNum down
	// to, one PG at a time (0: PGNum; a split sets PGNum at once).
	// PGNumPending is pg_num_pending: while it is PGNum-1, PG PGNum-1
	// (the merge source) and its MergeTarget wait, writes held, for the
	// source's primary to report both clean (ready to merge); the MONs
	// then lower PGNum to it (0: PGNum, no merge pending). As Ceph's
	// pg_pool_t fields of the same names.
	PGNumTarget, PGNumPending uint32
	// PendingSince is the epoch that set PGNumPending (a report of the
	// merge made at an earlier map is stale).
	PendingSince Epoch
	// Merges records the latest merges, oldest first, at most
	// MaxMergeRecords: each source PG and the versions source and target
	// were at when reported ready. An OSD whose copies were not at
	// exactly those versions makes its merged copy a backfill target
	// (Ceph's last_pg_merge_meta, which keeps the last only: Ceph's OSDs
	// go through every map, Shoal's may skip to the newest).
	Merges     []MergeMeta
	CrushRule  int
	ECProfile  string // erasure-code profile name for erasure pools
	Flags      uint64
	ObjectHash uint8
	// SnapSeq is the newest snap id given out in the pool (pool or
	// self-managed snapshots; 0: none yet). Snaps are its pool snapshots
	// by id; RemovedSnaps the ids removed, sorted disjoint intervals
	// (snaps.go).
	SnapSeq      uint64
	Snaps        map[uint64]PoolSnap
	RemovedSnaps []SnapRange
	// Autoscale are the PG autoscaler's options for the pool (package
	// autoscaler).
	Autoscale AutoscaleOptions
}

// AutoscaleOptions are a pool's PG autoscaler settings, Ceph's pool
// options of the same names (`shoal pool set`).
type AutoscaleOptions struct {
	// Mode is pg_autoscale_mode: "" or "off" (no advice in health),
	// "warn" (a health warning while pg_num is not the recommendation,
	// as Ceph's warn mode) or "on" (the manager sets pg_num to the
	// recommendation once it is 3× above or below: PGs split, or merge
	// one at a time). New pools take osd_pool_default_pg_autoscale_mode.
	Mode string
	// TargetRatio (target_size_ratio) is the share of the root's capacity
	// the pool is expected to take; TargetBytes (target_size_bytes) its
	// expected size before replication, used when TargetRatio is 0.
	TargetRatio float64
	TargetBytes uint64
	// Bias (pg_autoscale_bias) multiplies the recommendation; 0 means 1.
	Bias float64
	// PGNumMin and PGNumMax (pg_num_min, pg_num_max) bound it; 0: Ceph's
	// floor of 32, and no ceiling.
	PGNumMin, PGNumMax uint32
	// Bulk (the bulk flag) gives the pool its full share of PGs from the
	// start rather than as it fills.
	Bulk bool
}

// MergeMeta is what the MONs record of a PG merge (Ceph's
// pg_merge_meta_t): Source merged into its target at Epoch, when the two
// were at SourceVersion and TargetVersion (an OSD's PG log versions:
// epoch, then write count).
type MergeMeta struct {
	Source                       uint32
	Epoch                        Epoch
	SourceVersion, TargetVersion [2]uint64 // epoch, seq
}

// MaxMergeRecords bounds Pool.Merges: an OSD that comes back after more
// merges than this of its pool backfills the copies it merges.
const MaxMergeRecords = 256

// MergeRecord returns the record of the merge of PG source, if kept.
func (p *Pool) MergeRecord(source uint32) (MergeMeta, bool) {
	for i := len(p.Merges) - 1; i >= 0; i-- {
		if p.Merges[i].Source == source {
			return p.Merges[i], true
		}
	}
	return MergeMeta{}, false
}

// PGNumTargetOr is the pg_num the pool moves to: PGNumTarget, or PGNum
// when none is set.
func (p *Pool) PGNumTargetOr() uint32 {
	if p.PGNumTarget == 0 {
		return p.PGNum
	}
	return p.PGNumTarget
}

// PGNumPendingOr is pg_num_pending as Ceph shows it: PGNumPending, or
// PGNum when no merge is pending.
func (p *Pool) PGNumPendingOr() uint32 {
	if p.PGNumPending == 0 {
		return p.PGNum
	}
	return p.PGNumPending
}

// MergePending reports whether a merge is pending (pg_num_pending below
// pg_num) and, if so, its source and target seeds.
func (p *Pool) MergePending() (source, target uint32, ok bool) {
	if p.PGNumPending == 0 || p.PGNumPending >= p.PGNum {
		return 0, 0, false
	}
	s := p.PGNum - 1
	return s, MergeTarget(s, p.PGNumPending), true
}

// MergeTarget returns the PG that PG source merges into when the pool
// shrinks to newPGNum PGs (Ceph's pg_t::get_parent of the last PG): the
// PG it split off from, SplitParent(source, newPGNum).
func MergeTarget(source, newPGNum uint32) uint32 { return SplitParent(source, newPGNum) }

// PGPTarget is the pgp_num the pool's pgp_num moves to: PGPNumTarget,
// or PGPNum when none is set.
func (p *Pool) PGPTarget() uint32 {
	if p.PGPNumTarget == 0 {
		return p.PGPNum
	}
	return p.PGPNumTarget
}

// PGPMoving reports whether pgp_num is still on its way to its target
// (children of a split moving to their own OSDs).
func (p *Pool) PGPMoving() bool { return p.PGPTarget() != p.PGPNum }

// CanShiftOSDs reports whether OSDs may move positions in the acting set:
// true for replicated pools; erasure pools keep shard positions fixed.
func (p *Pool) CanShiftOSDs() bool { return p.Type == PoolReplicated }

// cbitsMask returns (1 << bits(n-1)) - 1, Ceph's pg_num_mask.
func cbitsMask(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	return 1<<bits.Len32(n-1) - 1
}

// StableMod is Ceph's ceph_stable_mod: x mod b such that growing b moves
// only the inputs that must move (PG splitting keeps children near their
// parents). bmask is (next power of two ≥ b) - 1.
func StableMod(x, b, bmask uint32) uint32 {
	if x&bmask < b {
		return x & bmask
	}
	return x & (bmask >> 1)
}

// RawPGToPG folds a raw placement seed into one of the pool's pg_num PGs.
func (p *Pool) RawPGToPG(pg PGID) PGID {
	return PGID{Pool: pg.Pool, Seed: StableMod(pg.Seed, p.PGNum, cbitsMask(p.PGNum))}
}

// SplitParent returns the PG whose objects seed's PG took when the pool
// grew from oldPGNum PGs (Ceph's pg_t::get_ancestor): seed itself if it
// is below oldPGNum.
func SplitParent(seed, oldPGNum uint32) uint32 {
	return StableMod(seed, oldPGNum, cbitsMask(oldPGNum))
}

// SplitBits is how many low bits of an object's raw seed decide whether
// it belongs to PG seed when the pool has pgNum PGs (Ceph's
// pg_t::get_split_bits): it changes exactly when the PG splits.
func SplitBits(seed, pgNum uint32) uint32 {
	if pgNum <= 1 {
		return 0
	}
	p := uint32(bits.Len32(pgNum)) // pgNum in [2^(p-1), 2^p)
	half := uint32(1) << (p - 1)
	if seed%half < pgNum%half {
		return p
	}
	return p - 1
}

// SplitChildren returns, ascending, the PGs that growing a pool from
// oldPGNum to newPGNum PGs splits off PG seed (Ceph's pg_t::is_split): the
// seeds in [oldPGNum, newPGNum) whose SplitParent is seed. Because of
// StableMod, an object of PG seed maps after the split to seed or to one
// of these, and to no other PG.
func SplitChildren(seed, oldPGNum, newPGNum uint32) []uint32 {
	var kids []uint32
	if seed >= oldPGNum {
		return nil
	}
	for s := oldPGNum; s < newPGNum; s++ {
		if SplitParent(s, oldPGNum) == seed {
			kids = append(kids, s)
		}
	}
	return kids
}

// PlacementSeed is the CRUSH input for a PG (pg_pool_t::raw_pg_to_pps).
func (p *Pool) PlacementSeed(pg PGID) uint32 {
	ps := StableMod(pg.Seed, p.PGPNum, cbitsMask(p.PGPNum))
	if p.Flags&FlagHashPSPool != 0 {
		return crushHash2(ps, uint32(p.ID))
	}
	return ps + uint32(p.ID)
}

// HashKey hashes an object name (in a namespace) to its raw placement seed.
func (p *Pool) HashKey(name, namespace string) uint32 {
	key := name
	if namespace != "" {
		key = namespace + "\x1f" + name
	}
	if p.ObjectHash == HashLinux {
		return StrHashLinux(key)
	}
	return StrHashRjenkins(key)
}

// PGID names a placement group: pool and seed, printed "pool.seedhex".
type PGID struct {
	Pool int64
	Seed uint32
}

func (pg PGID) String() string { return fmt.Sprintf("%d.%x", pg.Pool, pg.Seed) }

// ParsePGID parses "1.2f".
func ParsePGID(s string) (PGID, error) {
	pool, seed, ok := strings.Cut(s, ".")
	if !ok {
		return PGID{}, fmt.Errorf("pgid %q: want POOL.SEED (seed in hex)", s)
	}
	p, err := strconv.ParseInt(pool, 10, 64)
	if err != nil || p < 0 {
		return PGID{}, fmt.Errorf("pgid %q: bad pool id", s)
	}
	sd, err := strconv.ParseUint(seed, 16, 32)
	if err != nil {
		return PGID{}, fmt.Errorf("pgid %q: bad seed (hex)", s)
	}
	return PGID{Pool: p, Seed: uint32(sd)}, nil
}

// MergeShardConflict reports, for an erasure-coded pool, an OSD of the
// acting set of PG source (the PG the merge to pg_num source removes)
// that holds another position (shard) of its target's (MergeTarget):
// merging needs each OSD to hold the same shard of both PGs,
// and a Shoal OSD holds one shard of a PG at a time (Ceph keeps a
// collection per shard), so such a merge cannot go on as it is: the
// MONs first move the source into the target's order (mon's merge
// steps, balancer.ShardOrderStep). A source typically keeps its OSDs at
// their old positions under a positional pg_upmap once pgp_num came
// down. Nil for replicated pools.
func (m *Map) MergeShardConflict(p *Pool, source uint32) error {
	if p.Type != PoolErasure {
		return nil
	}
	src, dst := PGID{Pool: p.ID, Seed: source}, PGID{Pool: p.ID, Seed: MergeTarget(source, source)}
	sm, err1 := m.MapPG(src)
	dm, err2 := m.MapPG(dst)
	if err1 != nil || err2 != nil {
		return errors.Join(err1, err2)
	}
	for i, o := range sm.Acting {
		if j := slices.Index(dm.Acting, o); o != NoOSD && j >= 0 && j != i {
			return fmt.Errorf("osd.%d holds shard %d of pg %s and shard %d of pg %s; an OSD holds one shard of a PG, so an erasure-coded merge needs the source's shards at the target's positions", o, i, src, j, dst)
		}
	}
	return nil
}
