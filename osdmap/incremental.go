package osdmap

import (
	"fmt"
	"maps"
	"slices"

	"github.com/shoal-project/shoal/crush"
)

// Incremental is the change from epoch Epoch-1 to Epoch. Fields left at
// their zero value change nothing. Apply is deterministic: the same map and
// incremental always give the same next map.
type Incremental struct {
	Epoch Epoch
	// NewCrush replaces the CRUSH map when non-nil.
	NewCrush *crush.Map
	// NewPools creates or replaces pools; OldPools deletes them (with their
	// pg_temp and primary_temp entries).
	NewPools []*Pool
	OldPools []int64
	// NewMaxOSD resizes the OSD id space when > 0; OSDs beyond it vanish.
	NewMaxOSD int32
	// NewOSDs replaces whole OSD entries (Exists=false removes an OSD).
	NewOSDs map[int32]OSD
	// NewPGTemp sets a PG's temporary acting set; an empty list removes it.
	NewPGTemp map[PGID][]int32
	// NewPrimaryTemp sets a PG's temporary primary; -1 removes it.
	NewPrimaryTemp map[PGID]int32
	// NewPGUpmap sets a PG's pg_upmap (Map.PGUpmap); an empty list
	// removes it.
	NewPGUpmap map[PGID][]int32
	// NewPGUpmapItems sets a PG's pg_upmap_items (Map.PGUpmapItems); an
	// empty list removes them.
	NewPGUpmapItems map[PGID][]UpmapItem
	// NewFlags replaces the cluster flags when non-nil.
	NewFlags *Flags
	// NewBlocklist adds (or extends) blocklist entries; OldBlocklist
	// removes them.
	NewBlocklist map[string]int64
	OldBlocklist []string
}

// Clone returns a deep copy of the map that shares only the immutable CRUSH
// map.
func (m *Map) Clone() *Map {
	n := *m
	n.Pools = make(map[int64]*Pool, len(m.Pools))
	for id, p := range m.Pools {
		cp := *p
		n.Pools[id] = &cp
	}
	n.OSDs = slices.Clone(m.OSDs)
	n.PGTemp = cloneLists(m.PGTemp)
	n.PGUpmap = cloneLists(m.PGUpmap)
	n.PGUpmapItems = cloneLists(m.PGUpmapItems)
	n.PrimaryTemp = maps.Clone(m.PrimaryTemp)
	if n.PrimaryTemp == nil {
		n.PrimaryTemp = map[PGID]int32{}
	}
	n.Blocklist = maps.Clone(m.Blocklist)
	n.crushWeights = nil
	return &n
}

// Apply returns the map of inc.Epoch. It fails with ErrEpoch unless
// inc.Epoch is m.Epoch+1, and with a descriptive error for a change that
// would leave the map inconsistent (a pool with zero PGs, an OSD id beyond
// max_osd); m is never modified.
func (m *Map) Apply(inc *Incremental) (*Map, error) {
	if inc.Epoch != m.Epoch+1 {
		return nil, fmt.Errorf("osdmap: apply epoch %d to epoch %d: %w", inc.Epoch, m.Epoch, ErrEpoch)
	}
	n := m.Clone()
	n.Epoch = inc.Epoch
	if inc.NewCrush != nil {
		n.Crush = inc.NewCrush
	}
	if inc.NewMaxOSD > MaxOSDs {
		return nil, fmt.Errorf("osdmap: epoch %d: max_osd %d above %d", inc.Epoch, inc.NewMaxOSD, MaxOSDs)
	}
	if inc.NewMaxOSD > 0 {
		if int(inc.NewMaxOSD) < len(n.OSDs) {
			n.OSDs = n.OSDs[:inc.NewMaxOSD]
		}
		for len(n.OSDs) < int(inc.NewMaxOSD) {
			n.OSDs = append(n.OSDs, OSD{})
		}
	}
	for _, id := range sortedIDs(inc.NewOSDs) {
		if id < 0 || int(id) >= len(n.OSDs) {
			return nil, fmt.Errorf("osdmap: epoch %d: osd.%d beyond max_osd %d", inc.Epoch, id, len(n.OSDs))
		}
		n.OSDs[id] = inc.NewOSDs[id]
	}
	// New pools first, then deletions (Ceph's order): a pool in both is gone.
	for _, p := range inc.NewPools {
		if p == nil {
			return nil, fmt.Errorf("osdmap: epoch %d: nil pool", inc.Epoch)
		}
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("osdmap: epoch %d: %w", inc.Epoch, err)
		}
		if other, err := n.PoolByName(p.Name); err == nil && other.ID != p.ID {
			return nil, fmt.Errorf("osdmap: epoch %d: pool name %q already names pool %d", inc.Epoch, p.Name, other.ID)
		}
		if old := n.Pools[p.ID]; old != nil && p.PGNum != old.PGNum {
			_, _, pending := old.MergePending()
			switch {
			case p.PGNum < old.PGNum && (!pending || p.PGNum != old.PGNumPending):
				return nil, fmt.Errorf("osdmap: epoch %d: pool %q: pg_num %d -> %d: a merge lowers pg_num by one, to the pg_num_pending set before (%d)",
					inc.Epoch, p.Name, old.PGNum, p.PGNum, old.PGNumPending)
			case p.PGNum < old.PGNum:
				n.mergeTemps(p.ID, p.PGNum)
			case pending:
				return nil, fmt.Errorf("osdmap: epoch %d: pool %q: pg_num %d -> %d while a merge is pending", inc.Epoch, p.Name, old.PGNum, p.PGNum)
			default:
				n.splitTemps(p.ID, old.PGNum, p.PGNum)
			}
		}
		cp := *p
		n.Pools[p.ID] = &cp
		if p.ID > n.PoolMax {
			n.PoolMax = p.ID
		}
	}
	for _, id := range inc.OldPools {
		delete(n.Pools, id)
		for pg := range n.PGTemp {
			if pg.Pool == id {
				delete(n.PGTemp, pg)
			}
		}
		for pg := range n.PGUpmap {
			if pg.Pool == id {
				delete(n.PGUpmap, pg)
			}
		}
		for pg := range n.PGUpmapItems {
			if pg.Pool == id {
				delete(n.PGUpmapItems, pg)
			}
		}
		for pg := range n.PrimaryTemp {
			if pg.Pool == id {
				delete(n.PrimaryTemp, pg)
			}
		}
	}
	setLists(n.PGTemp, inc.NewPGTemp)
	setLists(n.PGUpmap, inc.NewPGUpmap)
	setLists(n.PGUpmapItems, inc.NewPGUpmapItems)
	for pg, o := range inc.NewPrimaryTemp {
		if o < 0 {
			delete(n.PrimaryTemp, pg)
		} else {
			n.PrimaryTemp[pg] = o
		}
	}
	if inc.NewFlags != nil {
		n.Flags = *inc.NewFlags
	}
	if len(inc.NewBlocklist)+len(inc.OldBlocklist) > 0 && n.Blocklist == nil {
		n.Blocklist = map[string]int64{}
	}
	for _, k := range inc.OldBlocklist {
		delete(n.Blocklist, k)
	}
	for k, until := range inc.NewBlocklist {
		if err := ParseBlocklistEntry(k); err != nil {
			return nil, fmt.Errorf("osdmap: epoch %d: %w", inc.Epoch, err)
		}
		n.Blocklist[k] = until
	}
	n.crushWeights = n.computeWeights()
	return n, nil
}

// splitTemps gives the PGs that growing pool from oldPGNum to newPGNum PGs
// splits off the pg_temp, primary_temp, pg_upmap and pg_upmap_items of
// their parent, so that each child starts where its parent's copies are
// (with pgp_num unchanged, CRUSH maps a child as its parent) and a
// parent's backfill goes on as its children's.
func (m *Map) splitTemps(pool int64, oldPGNum, newPGNum uint32) {
	for seed := oldPGNum; seed < newPGNum; seed++ {
		kid := PGID{Pool: pool, Seed: seed}
		parent := PGID{Pool: pool, Seed: SplitParent(seed, oldPGNum)}
		if l, ok := m.PGTemp[parent]; ok {
			m.PGTemp[kid] = slices.Clone(l)
		}
		if l, ok := m.PGUpmap[parent]; ok {
			m.PGUpmap[kid] = slices.Clone(l)
		}
		if l, ok := m.PGUpmapItems[parent]; ok {
			m.PGUpmapItems[kid] = slices.Clone(l)
		}
		if o, ok := m.PrimaryTemp[parent]; ok {
			m.PrimaryTemp[kid] = o
		}
	}
}

// mergeTemps drops the pg_temp, primary_temp, pg_upmap and
// pg_upmap_items of the PG that shrinking pool to newPGNum PGs merges
// away (PG newPGNum): its objects now map to its target's.
func (m *Map) mergeTemps(pool int64, newPGNum uint32) {
	src := PGID{Pool: pool, Seed: newPGNum}
	delete(m.PGTemp, src)
	delete(m.PGUpmap, src)
	delete(m.PGUpmapItems, src)
	delete(m.PrimaryTemp, src)
}

func sortedIDs[V any](m map[int32]V) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// MaxOSDs bounds max_osd: the id space of OSDs.
const MaxOSDs = 1 << 20

// MaxPGNum bounds a pool's pg_num (Ceph's mon_max_pool_pg_num defaults to
// 65536; this is a hard ceiling for maps of any origin).
const MaxPGNum = 1 << 20

// validate checks a pool's parameters.
func (p *Pool) validate() error {
	switch {
	case p.ID < 0:
		return fmt.Errorf("pool %q: negative id %d", p.Name, p.ID)
	case p.Name == "":
		return fmt.Errorf("pool %d: empty name", p.ID)
	case p.Type != PoolReplicated && p.Type != PoolErasure:
		return fmt.Errorf("pool %q: unknown type %d", p.Name, p.Type)
	case p.Size < 1 || p.Size > 32:
		return fmt.Errorf("pool %q: size %d outside [1, 32]", p.Name, p.Size)
	case p.MinSize < 1 || p.MinSize > p.Size:
		return fmt.Errorf("pool %q: min_size %d outside [1, size %d]", p.Name, p.MinSize, p.Size)
	case p.PGNum < 1 || p.PGPNum < 1 || p.PGPNum > p.PGNum || p.PGNum > MaxPGNum:
		return fmt.Errorf("pool %q: pg_num %d / pgp_num %d: want 1 ≤ pgp_num ≤ pg_num ≤ %d", p.Name, p.PGNum, p.PGPNum, MaxPGNum)
	case p.PGPNumTarget > p.PGNum:
		return fmt.Errorf("pool %q: pgp_num_target %d above pg_num %d", p.Name, p.PGPNumTarget, p.PGNum)
	case p.PGNumTarget > p.PGNum:
		return fmt.Errorf("pool %q: pg_num_target %d above pg_num %d", p.Name, p.PGNumTarget, p.PGNum)
	case len(p.Merges) > MaxMergeRecords:
		return fmt.Errorf("pool %q: %d merge records, at most %d", p.Name, len(p.Merges), MaxMergeRecords)
	case p.PGNumPending != 0 && p.PGNumPending != p.PGNum && (p.PGNumPending != p.PGNum-1 || p.PGPNum > p.PGNumPending):
		return fmt.Errorf("pool %q: pg_num_pending %d: want pg_num %d, or pg_num-1 with pgp_num (%d) at most that", p.Name, p.PGNumPending, p.PGNum, p.PGPNum)
	case p.ObjectHash != HashLinux && p.ObjectHash != HashRjenkins:
		return fmt.Errorf("pool %q: unknown object hash %d", p.Name, p.ObjectHash)
	}
	if err := p.Autoscale.validate(); err != nil {
		return fmt.Errorf("pool %q: %w", p.Name, err)
	}
	return p.validateSnaps()
}

func (a AutoscaleOptions) validate() error {
	switch {
	case a.Mode != "" && a.Mode != "off" && a.Mode != "warn" && a.Mode != "on":
		return fmt.Errorf("pg_autoscale_mode %q: off, warn or on", a.Mode)
	case !(a.TargetRatio >= 0 && a.TargetRatio <= 1e6):
		return fmt.Errorf("target_size_ratio %g outside [0, 1e6]", a.TargetRatio)
	case !(a.Bias >= 0 && a.Bias <= 1000):
		return fmt.Errorf("pg_autoscale_bias %g outside [0, 1000]", a.Bias)
	case a.PGNumMin > MaxPGNum || a.PGNumMax > MaxPGNum:
		return fmt.Errorf("pg_num_min %d / pg_num_max %d above %d", a.PGNumMin, a.PGNumMax, MaxPGNum)
	case a.PGNumMax > 0 && a.PGNumMin > a.PGNumMax:
		return fmt.Errorf("pg_num_min %d above pg_num_max %d", a.PGNumMin, a.PGNumMax)
	}
	return nil
}

// cloneLists deep-copies a map of PG → OSD list (never nil).
func cloneLists[T any](m map[PGID][]T) map[PGID][]T {
	n := make(map[PGID][]T, len(m))
	for pg, v := range m {
		n[pg] = slices.Clone(v)
	}
	return n
}

// setLists applies an incremental's PG → OSD list changes to m: an empty
// list removes the PG's entry.
func setLists[T any](m, changes map[PGID][]T) {
	for pg, osds := range changes {
		if len(osds) == 0 {
			delete(m, pg)
		} else {
			m[pg] = slices.Clone(osds)
		}
	}
}
