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
// Objects are found in the snap mapper (opexec.SnapMapperOID, Ceph's
// SnapMapper): an index of clones by snap that the writes making and
// trimming clones, and recovery installing them, keep in the PG's own
// collection. The first trim of a PG after the OSD starts walks every
// head instead and reads its SnapSet, so that a clone the index might
// lack is trimmed too. What was trimmed is kept in memory.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// pgSnapTrim is a PG's trimming state on its primary (guarded by pg.mu).
type pgSnapTrim struct {
	done    []osdmap.SnapRange // the pool's removed snaps as of the last finished trim
	scanned bool               // a trim walked every head since the OSD started
	running bool
}

// snapTrimPending reports whether the PG, on its primary, has removed
// snaps still to trim (pg.mu held).
func (pg *PG) snapTrimPending() bool {
	return pg.pool != nil && pg.ps.Interval.Primary == pg.osd.id &&
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
// many it rewrote. The first trim of the PG on this OSD walks every head
// (clones made before the index, or an index this OSD's copy lacks,
// cannot hide from it); after that, the snaps removed since the last
// trim are looked up in the snap mapper (opexec.SnapMapperOID), unless
// there are more than snapTrimIndexMax of them.
func (pg *PG) snapTrim(ctx context.Context, pool *osdmap.Pool) (int, error) {
	pg.mu.Lock()
	done, scanned := pg.snaptrim.done, pg.snaptrim.scanned
	pg.mu.Unlock()
	if scanned {
		if ids, ok := newlyRemoved(done, pool); ok {
			return pg.snapTrimIndexed(ctx, pool, ids)
		}
	}
	n, err := pg.snapTrimScan(ctx, pool)
	if err == nil {
		pg.mu.Lock()
		pg.snaptrim.scanned = true
		pg.mu.Unlock()
	}
	return n, err
}

// snapTrimIndexMax is the most newly removed snaps a trim looks up one by
// one in the snap mapper; more, and it walks every head instead.
const snapTrimIndexMax = 4096

// newlyRemoved lists the snap ids the pool removed that done does not
// hold; ok is false if there are more than snapTrimIndexMax.
func newlyRemoved(done []osdmap.SnapRange, pool *osdmap.Pool) (ids []uint64, ok bool) {
	was := &osdmap.Pool{RemovedSnaps: done}
	for _, r := range pool.RemovedSnaps {
		for id := r.First; id <= r.Last; id++ {
			if !was.IsRemovedSnap(id) {
				if ids = append(ids, id); len(ids) > snapTrimIndexMax {
					return nil, false
				}
			}
		}
	}
	return ids, true
}

// snapTrimIndexed trims the objects the snap mapper lists under ids.
func (pg *PG) snapTrimIndexed(ctx context.Context, pool *osdmap.Pool, ids []uint64) (int, error) {
	heads := map[string]bool{}
	for _, id := range ids {
		prefix, after := opexec.SnapMapperPrefix(id), ""
		for {
			kvs, more, err := pg.osd.store.OmapList(pg.coll, opexec.SnapMapperOID, after, prefix, 1024)
			if errors.Is(err, objectstore.ErrNotFound) {
				return 0, nil // no clone was ever made in this PG
			}
			if err != nil {
				return 0, storeErr(err)
			}
			for _, kv := range kvs {
				heads[strings.TrimPrefix(kv.Key, prefix)] = true
				after = kv.Key
			}
			if !more || len(kvs) == 0 {
				break
			}
		}
	}
	n := 0
	for _, oid := range slices.Sorted(maps.Keys(heads)) {
		o, err := pg.loadObject(oid)
		if err != nil {
			return n, err
		}
		if err := pg.trimObject(ctx, pool, oid, append(removedIn(o.SnapSet, pool), ids...)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// snapTrimScan trims every head of the PG whose clones serve a removed
// snap.
func (pg *PG) snapTrimScan(ctx context.Context, pool *osdmap.Pool) (int, error) {
	n, after := 0, ""
	for {
		names, err := pg.osd.store.List(pg.coll, after, 1024)
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
			if err := pg.trimObject(ctx, pool, oid, ids); err != nil {
				return n, err
			}
			n++
		}
		if len(names) < 1024 {
			return n, nil
		}
		after = names[len(names)-1]
	}
}

// trimObject takes snap ids out of oid's clones through the write path,
// as best-effort background work.
func (pg *PG) trimObject(ctx context.Context, pool *osdmap.Pool, oid string, ids []uint64) error {
	d := pg.osd
	be, err := pg.backend(ctx, pool)
	if err != nil {
		return err
	}
	if err := d.throttle(ctx, mclock.BestEffort, 1, 0); err != nil {
		return err
	}
	slices.Sort(ids)
	req := &osdop.Request{Pool: pool.ID, OID: oid, Ops: []osdop.Op{{Code: osdop.TrimSnaps, Data: opexec.EncodeSnapIDs(slices.Compact(ids))}}}
	if _, err := pg.write(ctx, req, be); err != nil {
		return err
	}
	d.perf.snapTrimmed.Add(1)
	return nil
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
