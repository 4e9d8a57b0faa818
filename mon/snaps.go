package mon

import (
	"fmt"
	"strconv"

	"github.com/shoal-project/shoal/osdmap"
)

// Pool snapshot commands: Ceph's `osd pool mksnap|rmsnap` (pool
// snapshots) and the pool ops librados sends to allocate and remove
// self-managed snap ids (POOL_OP_CREATE_UNMANAGED_SNAP,
// POOL_OP_DELETE_UNMANAGED_SNAP). A pool uses one kind or the other,
// never both, as Ceph refuses.

// PoolSnapCreate takes pool snapshot Snap of pool Pool at Stamp (Unix
// nanoseconds, set by the MON that received the command).
type PoolSnapCreate struct {
	Pool, Snap string
	Stamp      int64
}

// Apply implements Command.
func (c PoolSnapCreate) Apply(s *State) (*osdmap.Incremental, string, error) {
	p, err := s.Map.PoolByName(c.Pool)
	if err != nil {
		return nil, "", fmt.Errorf("pool %q: %w", c.Pool, ErrNotFound)
	}
	switch {
	case c.Snap == "":
		return nil, "", fmt.Errorf("pool %q: %w: empty snapshot name", c.Pool, ErrInvalid)
	case p.SelfManagedSnapsMode():
		return nil, "", fmt.Errorf("pool %q: %w: the pool has self-managed snapshots (pool snapshots and self-managed ones cannot be mixed)", c.Pool, ErrInvalid)
	}
	if _, ok := p.SnapByName(c.Snap); ok {
		return nil, "", fmt.Errorf("pool %q snapshot %q: %w", c.Pool, c.Snap, ErrExists)
	}
	np := p.CloneSnaps()
	np.SnapSeq++
	np.Flags |= osdmap.FlagPoolSnaps
	np.Snaps[np.SnapSeq] = osdmap.PoolSnap{ID: np.SnapSeq, Name: c.Snap, Stamp: c.Stamp}
	inc := s.next()
	inc.NewPools = []*osdmap.Pool{np}
	return inc, fmt.Sprintf("created pool %s snap %s", c.Pool, c.Snap), nil
}

// PoolSnapRemove removes pool snapshot Snap of pool Pool: its id joins
// the pool's removed snaps, and the OSDs trim its clones.
type PoolSnapRemove struct{ Pool, Snap string }

// Apply implements Command.
func (c PoolSnapRemove) Apply(s *State) (*osdmap.Incremental, string, error) {
	p, err := s.Map.PoolByName(c.Pool)
	if err != nil {
		return nil, "", fmt.Errorf("pool %q: %w", c.Pool, ErrNotFound)
	}
	snap, ok := p.SnapByName(c.Snap)
	if !ok {
		return nil, "", fmt.Errorf("pool %q snapshot %q: %w", c.Pool, c.Snap, ErrNotFound)
	}
	np := p.CloneSnaps()
	delete(np.Snaps, snap.ID)
	np.RemovedSnaps = np.WithRemovedSnap(snap.ID)
	inc := s.next()
	inc.NewPools = []*osdmap.Pool{np}
	return inc, fmt.Sprintf("removed pool %s snap %s", c.Pool, c.Snap), nil
}

// SelfManagedSnapCreate allocates a self-managed snap id in pool Pool;
// the command's message is the id in decimal.
type SelfManagedSnapCreate struct{ Pool string }

// Apply implements Command.
func (c SelfManagedSnapCreate) Apply(s *State) (*osdmap.Incremental, string, error) {
	p, err := s.Map.PoolByName(c.Pool)
	if err != nil {
		return nil, "", fmt.Errorf("pool %q: %w", c.Pool, ErrNotFound)
	}
	switch {
	case p.PoolSnapsMode():
		return nil, "", fmt.Errorf("pool %q: %w: the pool has pool snapshots (pool snapshots and self-managed ones cannot be mixed)", c.Pool, ErrInvalid)
	}
	np := p.CloneSnaps()
	np.SnapSeq++
	np.Flags |= osdmap.FlagSelfManagedSnaps
	inc := s.next()
	inc.NewPools = []*osdmap.Pool{np}
	return inc, strconv.FormatUint(np.SnapSeq, 10), nil
}

// SelfManagedSnapRemove removes self-managed snap id ID of pool Pool.
type SelfManagedSnapRemove struct {
	Pool string
	ID   uint64
}

// Apply implements Command.
func (c SelfManagedSnapRemove) Apply(s *State) (*osdmap.Incremental, string, error) {
	p, err := s.Map.PoolByName(c.Pool)
	if err != nil {
		return nil, "", fmt.Errorf("pool %q: %w", c.Pool, ErrNotFound)
	}
	switch {
	case !p.SelfManagedSnapsMode():
		return nil, "", fmt.Errorf("pool %q: %w: the pool has no self-managed snapshots", c.Pool, ErrInvalid)
	case c.ID == 0 || c.ID > p.SnapSeq:
		return nil, "", fmt.Errorf("pool %q snap %d: %w (ids given out: 1 to %d)", c.Pool, c.ID, ErrNotFound, p.SnapSeq)
	case p.IsRemovedSnap(c.ID):
		return nil, "", fmt.Errorf("pool %q snap %d: %w: already removed", c.Pool, c.ID, ErrNotFound)
	}
	np := p.CloneSnaps()
	np.RemovedSnaps = np.WithRemovedSnap(c.ID)
	inc := s.next()
	inc.NewPools = []*osdmap.Pool{np}
	return inc, fmt.Sprintf("removed pool %s self-managed snap %d", c.Pool, c.ID), nil
}
