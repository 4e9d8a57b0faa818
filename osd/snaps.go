package osd

import (
	"errors"
	"fmt"

	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// snapContext checks a request's use of snapshots against its pool and
// sets the SnapContext its writes apply: the pool's in a pool with pool
// snapshots (the client's is ignored, as Ceph's OSD does), else the
// client's without removed snaps (Ceph's filter_snapc). A write to a
// snap is ErrReadOnly; a read or rollback at a snap the pool never gave
// out or removed is ErrNotFound; a malformed SnapContext is ErrInvalid.
func snapContext(pool *osdmap.Pool, req *osdop.Request) error {
	uses := req.SnapSeq != 0 || req.Snap != 0 || len(req.Snaps) > 0
	for _, op := range req.Ops {
		if op.Code == osdop.TrimSnaps || op.Code == osdop.WatchExpire {
			return fmt.Errorf("%w: %s is the OSD's own op", osdop.ErrInvalid, op.Code)
		}
		uses = uses || op.Code == osdop.Rollback || op.Code == osdop.ListSnaps
	}
	if !uses && !pool.PoolSnapsMode() {
		return nil
	}
	known := func(snap uint64) error {
		if snap == 0 || snap > pool.SnapSeq || pool.IsRemovedSnap(snap) {
			return fmt.Errorf("%w: snap %d of pool %q does not exist or was removed", osdop.ErrNotFound, snap, pool.Name)
		}
		return nil
	}
	if !req.IsWrite() {
		if req.Snap != 0 {
			return known(req.Snap)
		}
		return nil
	}
	if req.Snap != 0 {
		return fmt.Errorf("%w: write to %s at snap %d", osdop.ErrReadOnly, req.OID, req.Snap)
	}
	for _, op := range req.Ops {
		if op.Code == osdop.Rollback {
			if err := known(op.Ver); err != nil {
				return fmt.Errorf("rollback of %s: %w", req.OID, err)
			}
		}
	}
	if pool.PoolSnapsMode() {
		req.SnapSeq, req.Snaps = pool.PoolSnapContext()
		return nil
	}
	if req.SnapSeq > pool.SnapSeq {
		return fmt.Errorf("%w: snap context seq %d is newer than pool %q's snap_seq %d", osdop.ErrInvalid, req.SnapSeq, pool.Name, pool.SnapSeq)
	}
	live := req.Snaps[:0:0]
	for i, s := range req.Snaps {
		if s > req.SnapSeq || (i > 0 && s >= req.Snaps[i-1]) {
			return fmt.Errorf("%w: snap context seq %d snaps %v: want ids at most seq, newest first", osdop.ErrInvalid, req.SnapSeq, req.Snaps)
		}
		if !pool.IsRemovedSnap(s) {
			live = append(live, s)
		}
	}
	req.Snaps = live
	return nil
}

// listPage is a page of the PG's object names for a client (Ceph's
// PGLS): internal objects (clones among them) are left out, and in a
// pool with snapshots so are whiteouts, or with req.Snap the objects
// that did not exist at that snap.
func (pg *PG) listPage(req *osdop.ListRequest) (*osdop.ListReply, error) {
	n := int(min(max(req.Max, 1), 10000))
	names, err := pg.osd.store.List(pg.coll, req.After, n)
	if err != nil {
		return nil, storeErr(err)
	}
	rep := &osdop.ListReply{}
	if len(names) == n {
		rep.Next = names[n-1]
	}
	snaps := pg.snapsOn()
	if req.Snap != 0 {
		m, _ := pg.osd.curMap()
		if p := m.Pools[pg.id.Pool]; p == nil || req.Snap > p.SnapSeq || p.IsRemovedSnap(req.Snap) {
			return nil, fmt.Errorf("%w: snap %d of pool %d does not exist or was removed", osdop.ErrNotFound, req.Snap, req.Pool)
		}
	}
	for _, name := range names {
		if peering.IsInternal(name) {
			continue
		}
		if snaps {
			o, err := pg.loadObject(name)
			if err != nil {
				return nil, err
			}
			if req.Snap != 0 {
				if _, err := o.AtSnap(req.Snap); errors.Is(err, osdop.ErrNotFound) {
					continue
				} else if err != nil {
					return nil, err
				}
			} else if !o.Exists {
				continue
			}
		}
		rep.Names = append(rep.Names, name)
	}
	return rep, nil
}
