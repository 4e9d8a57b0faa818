package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Snapshots, as librados offers them: pool snapshots (named, taken by the
// MONs for the whole pool: SnapCreate) or self-managed ones (ids the
// client allocates, SelfManagedSnapCreate, and passes with its writes as
// a SnapContext, WithSnapContext — as RBD does per image); reads at a
// snap through AtSnap. A pool has one kind or the other, never both.

// AtSnap returns a handle on the same pool whose reads (and listings)
// see the objects as of snap id snap (0: as they are now; librados'
// snap_set_read). Writes through it fail with osdop.ErrReadOnly.
func (p *Pool) AtSnap(snap uint64) *Pool {
	np := *p
	np.snap = snap
	return &np
}

// WithSnapContext returns a handle on the same pool whose writes carry
// the SnapContext seq, snaps (the newest snap id allocated and the live
// snap ids, newest first; librados' selfmanaged_snap_set_write_ctx): the
// OSD clones an object before its first change after a newer snap.
func (p *Pool) WithSnapContext(seq uint64, snaps []uint64) *Pool {
	np := *p
	np.snapSeq, np.snaps = seq, slices.Clone(snaps)
	return &np
}

// SelfManagedSnapCreate allocates a self-managed snap id in the pool
// (librados' selfmanaged_snap_create); the handle's map holds it when
// this returns.
func (p *Pool) SelfManagedSnapCreate(ctx context.Context) (uint64, error) {
	r, err := p.c.MonCommand(ctx, "osd pool selfmanaged-snap create", map[string]string{"pool": p.name})
	if err != nil {
		return 0, fmt.Errorf("pool %q: create self-managed snap: %w", p.name, err)
	}
	id, err := strconv.ParseUint(r.Message, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("pool %q: create self-managed snap: reply %q is not a snap id", p.name, r.Message)
	}
	return id, nil
}

// SelfManagedSnapRemove removes self-managed snap id (librados'
// selfmanaged_snap_remove); the OSDs trim its clones.
func (p *Pool) SelfManagedSnapRemove(ctx context.Context, id uint64) error {
	_, err := p.c.MonCommand(ctx, "osd pool selfmanaged-snap rm", map[string]string{"pool": p.name, "snapid": strconv.FormatUint(id, 10)})
	if err != nil {
		return fmt.Errorf("pool %q: remove self-managed snap %d: %w", p.name, id, err)
	}
	return nil
}

// SnapCreate takes pool snapshot name (`ceph osd pool mksnap`).
func (p *Pool) SnapCreate(ctx context.Context, name string) error {
	if _, err := p.c.MonCommand(ctx, "osd pool mksnap", map[string]string{"pool": p.name, "snap": name}); err != nil {
		return fmt.Errorf("pool %q: create snap %q: %w", p.name, name, err)
	}
	return nil
}

// SnapRemove removes pool snapshot name (`ceph osd pool rmsnap`).
func (p *Pool) SnapRemove(ctx context.Context, name string) error {
	if _, err := p.c.MonCommand(ctx, "osd pool rmsnap", map[string]string{"pool": p.name, "snap": name}); err != nil {
		return fmt.Errorf("pool %q: remove snap %q: %w", p.name, name, err)
	}
	return nil
}

// Snaps returns the pool's snapshots as the handle's map has them,
// oldest first.
func (p *Pool) Snaps() ([]osdmap.PoolSnap, error) {
	pool, err := p.c.Map().Pool(p.id)
	if err != nil {
		return nil, fmt.Errorf("pool %q: %w", p.name, ErrPoolNotFound)
	}
	return pool.SortedSnaps(), nil
}

// SnapLookup returns the id of pool snapshot name (osdop.ErrNotFound if
// the pool has none of that name).
func (p *Pool) SnapLookup(name string) (uint64, error) {
	pool, err := p.c.Map().Pool(p.id)
	if err != nil {
		return 0, fmt.Errorf("pool %q: %w", p.name, ErrPoolNotFound)
	}
	s, ok := pool.SnapByName(name)
	if !ok {
		return 0, fmt.Errorf("pool %q snap %q: %w", p.name, name, osdop.ErrNotFound)
	}
	return s.ID, nil
}

// ListSnaps returns the object's SnapSet: its clones, the snaps each
// serves, their sizes and overlaps, and whether the head exists
// (librados' list_snaps).
func (p *Pool) ListSnaps(ctx context.Context, oid string) (*osdop.SnapSet, error) {
	r, err := p.AtSnap(0).do(ctx, oid, osdop.Op{Code: osdop.ListSnaps})
	if err != nil {
		return nil, err
	}
	return osdop.DecodeSnapSet(r.Data)
}

// Rollback makes the object what it was at snap id snap (librados'
// selfmanaged_snap_rollback and snap_rollback): that snap's data,
// attributes and omap, or absent if it did not exist then. It is a
// write, carrying the handle's SnapContext.
func (p *Pool) Rollback(ctx context.Context, oid string, snap uint64) error {
	_, err := p.AtSnap(0).do(ctx, oid, osdop.Op{Code: osdop.Rollback, Ver: snap})
	return err
}
