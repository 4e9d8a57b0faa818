package osd

// The snap trimmer (Ceph's SnapTrimmer): on each PG's primary, once the
// pool's removed snaps grow, every object whose clones serve a removed
// snap is rewritten through the PG's write path with a TrimSnaps op — the
// snap leaves its clones, clones left serving none are removed and their
// blocks freed — so that the change is logged and replicated like any
// write. Trimming runs only in a clean PG, one PG at a time, each object
// admitted by the I/O scheduler as best-effort background work, and the
// PG shows snaptrim_wait, then snaptrim.
//
// Objects are found by walking the PG's heads and reading their
// SnapSets: there is no snap → object index yet (Ceph's SnapMapper), so
// a trim costs a read of every head's metadata (from the onode cache
// when it is warm). What was trimmed is kept in memory: a primary that
// restarts, or a new one, walks its PGs once more, finding nothing left
// to do where the trim had finished.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// pgSnapTrim is a PG's trimming state on its primary (guarded by pg.mu).
type pgSnapTrim struct {
	done    []osdmap.SnapRange // the pool's removed snaps as of the last finished trim
	running bool
}

// snapTrimPending reports whether the PG, on its primary, has removed
// snaps still to trim (pg.mu held).
func (pg *PG) snapTrimPending() bool {
	return pg.pool != nil && pg.ps.Interval.Primary == pg.osd.id && pg.pool.Type == osdmap.PoolReplicated &&
		!slices.Equal(pg.snaptrim.done, pg.pool.RemovedSnaps)
}

// snapTrimState is the state suffix of a PG trimming (pg.mu held).
func (pg *PG) snapTrimState() string {
	switch {
	case pg.snaptrim.running:
		return "+snaptrim"
	case pg.snapTrimPending():
		return "+snaptrim_wait"
	}
	return ""
}

// snapTrimLoop trims, one PG at a time, until the OSD stops.
func (d *OSD) snapTrimLoop() {
	defer d.wg.Done()
	periodic.Every(d.ctx, d.clock, time.Second, d.snapTrimKick, func() {
		pgs := d.pgList()
		for _, pg := range pgs {
			if d.ctx.Err() != nil {
				return
			}
			pg.mu.Lock()
			ready := pg.snapTrimPending() && pg.isClean()
			pool := pg.pool
			if ready {
				pg.snaptrim.running = true
			}
			pg.mu.Unlock()
			if !ready {
				continue
			}
			n, err := pg.snapTrim(d.ctx, pool)
			pg.mu.Lock()
			pg.snaptrim.running = false
			if err == nil {
				pg.snaptrim.done = pool.RemovedSnaps
			}
			pg.mu.Unlock()
			switch {
			case err != nil && d.ctx.Err() == nil && !errors.Is(err, osdop.ErrRetry):
				d.log.Warn("snap trim", "pg", pg.id, "err", err)
			case err == nil && n > 0:
				d.log.Info("snap trim done", "pg", pg.id, "objects", n)
			}
		}
	})
}

// snapTrim trims the PG's objects for pool's removed snaps, returning how
// many it rewrote.
func (pg *PG) snapTrim(ctx context.Context, pool *osdmap.Pool) (int, error) {
	d := pg.osd
	be, err := pg.backend(ctx, pool)
	if err != nil {
		return 0, err
	}
	n, after := 0, ""
	for {
		names, err := d.store.List(pg.coll, after, 1024)
		if err != nil {
			return n, storeErr(err)
		}
		for _, oid := range names {
			if peering.IsInternal(oid) {
				continue
			}
			o, err := pg.loadObject(oid)
			if err != nil {
				return n, err
			}
			ids := removedIn(o.SnapSet, pool)
			if len(ids) == 0 {
				continue
			}
			if err := d.throttle(ctx, mclock.BestEffort, 1, 0); err != nil {
				return n, err
			}
			req := &osdop.Request{Pool: pool.ID, OID: oid, Ops: []osdop.Op{{Code: osdop.TrimSnaps, Data: opexec.EncodeSnapIDs(ids)}}}
			if _, err := pg.write(ctx, req, be); err != nil {
				return n, err
			}
			n++
			d.perf.snapTrimmed.Add(1)
		}
		if len(names) < 1024 {
			return n, nil
		}
		after = names[len(names)-1]
	}
}

// removedIn is the removed snaps of pool that ss's clones still serve.
func removedIn(ss *osdop.SnapSet, pool *osdmap.Pool) []uint64 {
	if ss == nil {
		return nil
	}
	var ids []uint64
	for _, c := range ss.Clones {
		for _, s := range c.Snaps {
			if pool.IsRemovedSnap(s) && !slices.Contains(ids, s) {
				ids = append(ids, s)
			}
		}
	}
	return ids
}
