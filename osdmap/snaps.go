package osdmap

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// A pool's snapshots, as Ceph's pg_pool_t keeps them: snap ids come from
// the pool's snap_seq, which only grows; a pool uses either pool
// snapshots (named, taken by `osd pool mksnap`, applied to every write by
// the OSDs) or self-managed ones (ids a client allocates and passes with
// its writes as a SnapContext, as RBD does), never both
// (pg_pool_t::is_pool_snaps_mode, is_unmanaged_snaps_mode). Removed snap
// ids are kept as intervals so that a write's SnapContext and a read at a
// snap can be checked against them.

// Pool flags for snapshots (Ceph's pg_pool_t::FLAG_SELFMANAGED_SNAPS and
// FLAG_POOL_SNAPS).
const (
	FlagSelfManagedSnaps uint64 = 1 << 13
	FlagPoolSnaps        uint64 = 1 << 14
)

// PoolSnap is a pool snapshot (Ceph's pool_snap_info_t).
type PoolSnap struct {
	ID    uint64
	Name  string
	Stamp int64 // when it was taken: Unix nanoseconds, from the MON's command
}

// SnapRange is the snap ids [First, Last].
type SnapRange struct{ First, Last uint64 }

// PoolSnapsMode reports whether the pool has or had pool snapshots.
func (p *Pool) PoolSnapsMode() bool { return p.Flags&FlagPoolSnaps != 0 || len(p.Snaps) > 0 }

// SelfManagedSnapsMode reports whether the pool has or had self-managed
// snapshots.
func (p *Pool) SelfManagedSnapsMode() bool { return p.Flags&FlagSelfManagedSnaps != 0 }

// SnapByName returns the pool snapshot called name.
func (p *Pool) SnapByName(name string) (PoolSnap, bool) {
	for _, s := range p.Snaps {
		if s.Name == name {
			return s, true
		}
	}
	return PoolSnap{}, false
}

// SortedSnaps returns the pool snapshots, oldest first.
func (p *Pool) SortedSnaps() []PoolSnap {
	out := make([]PoolSnap, 0, len(p.Snaps))
	for _, s := range p.Snaps {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b PoolSnap) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// PoolSnapContext is the SnapContext the OSDs apply to every write in a
// pool with pool snapshots: the pool's snap_seq and its snapshots' ids,
// newest first (pg_pool_t::get_snap_context).
func (p *Pool) PoolSnapContext() (seq uint64, snaps []uint64) {
	for _, s := range p.Snaps {
		snaps = append(snaps, s.ID)
	}
	slices.SortFunc(snaps, func(a, b uint64) int { return cmp.Compare(b, a) })
	return p.SnapSeq, snaps
}

// IsRemovedSnap reports whether snap id was removed.
func (p *Pool) IsRemovedSnap(id uint64) bool {
	i := sort.Search(len(p.RemovedSnaps), func(i int) bool { return p.RemovedSnaps[i].Last >= id })
	return i < len(p.RemovedSnaps) && p.RemovedSnaps[i].First <= id
}

// WithRemovedSnap returns the removed intervals with id added, merged
// with its neighbours; the pool is not changed.
func (p *Pool) WithRemovedSnap(id uint64) []SnapRange {
	rs := slices.Clone(p.RemovedSnaps)
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Last >= id })
	if i < len(rs) && rs[i].First <= id {
		return rs
	}
	rs = slices.Insert(rs, i, SnapRange{id, id})
	if i+1 < len(rs) && rs[i+1].First == id+1 {
		rs[i].Last = rs[i+1].Last
		rs = slices.Delete(rs, i+1, i+2)
	}
	if i > 0 && rs[i-1].Last+1 == id {
		rs[i-1].Last = rs[i].Last
		rs = slices.Delete(rs, i, i+1)
	}
	return rs
}

// CloneSnaps returns a copy of the pool whose snapshot fields the caller
// may change without changing p's.
func (p *Pool) CloneSnaps() *Pool {
	np := *p
	np.Snaps = make(map[uint64]PoolSnap, len(p.Snaps))
	for id, s := range p.Snaps {
		np.Snaps[id] = s
	}
	np.RemovedSnaps = slices.Clone(p.RemovedSnaps)
	return &np
}

func (p *Pool) validateSnaps() error {
	for id, s := range p.Snaps {
		if id != s.ID || id == 0 || id > p.SnapSeq || s.Name == "" {
			return fmt.Errorf("pool %q: snapshot %d %q: id 0, above snap_seq %d, or without a name", p.Name, id, s.Name, p.SnapSeq)
		}
	}
	for i, r := range p.RemovedSnaps {
		if r.First == 0 || r.First > r.Last || r.Last > p.SnapSeq || (i > 0 && r.First <= p.RemovedSnaps[i-1].Last+1) {
			return fmt.Errorf("pool %q: removed snaps %v: not sorted, disjoint intervals within [1, snap_seq %d]", p.Name, p.RemovedSnaps, p.SnapSeq)
		}
	}
	return nil
}
