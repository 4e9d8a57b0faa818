package osd

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
)

// Strays: once a PG is active+clean, its primary tells the OSDs that left
// its acting set and may still hold a copy to delete it (Ceph's
// purge_strays), so a rebalance frees the space it moved data from. A
// stray deletes its copy only if its own map, at least as new as the
// primary's, still leaves it out of the acting set; the PG's log goes
// first, so a copy whose deletion is interrupted (by a crash, or by a map
// that makes the OSD a member again, which aborts it) has no history
// and is backfilled like a new one.
//
// A primary learns of strays from its map history, and from the strays
// themselves: an OSD that holds a copy of a PG whose acting set leaves it
// out tells the primary once per interval (msgNotify, Ceph's pg_notify).
// That covers copies the primary never knew of or forgot — an OSD that
// was down while its PGs moved and went clean, or that was killed while
// it deleted its copies (each left one is deleted when it restarts).

// pgRemoval is a stray copy being deleted. mu is held while a
// transaction of the deletion runs; abort stops it before the next.
type pgRemoval struct {
	mu    sync.Mutex
	abort atomic.Bool
}

// purgeStrays tells the PG's former members to delete their copies, if
// the PG is clean; those not told are kept for the next time.
func (pg *PG) purgeStrays(iv uint64) {
	d := pg.osd
	m, _ := d.curMap()
	pg.mu.Lock()
	if pg.ps.Interval.ID != iv || !pg.isClean() || len(pg.ps.Strays) == 0 {
		pg.mu.Unlock()
		return
	}
	strays := pg.ps.Strays
	pg.ps.Strays = nil
	pg.mu.Unlock()
	msg := (&peerMsg{PG: pg.id, Interval: iv}).encode()
	var kept []int32
	for _, o := range strays {
		if o < 0 || o >= m.MaxOSD() || !m.OSDs[o].Exists {
			continue
		}
		if !m.OSDs[o].Up {
			kept = append(kept, o)
			continue
		}
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		_, err := d.call(ctx, o, m.OSDs[o].BackAddr(), msgPurge, msg)
		cancel()
		if err != nil {
			d.log.Warn("telling a stray to delete its copy", "pg", pg.id, "osd", o, "err", err)
			kept = append(kept, o)
		}
	}
	if len(kept) > 0 {
		pg.mu.Lock()
		for _, o := range kept {
			if !slices.Contains(pg.ps.Strays, o) && !slices.Contains(pg.ps.Interval.Acting, o) {
				pg.ps.Strays = append(pg.ps.Strays, o)
			}
		}
		pg.mu.Unlock()
	}
}

// purgeStray deletes this OSD's copy of PG id in the background, if this
// OSD is not in its acting set.
func (d *OSD) purgeStray(id osdmap.PGID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pg := d.pgs[id]
	if pg == nil || d.removing[id] != nil {
		return
	}
	if mp, err := d.m.MapPG(id); err == nil && slices.Contains(mp.Acting, d.id) {
		return
	}
	pg.mu.Lock()
	stray := pg.ps.State == peering.Stray
	pg.mu.Unlock()
	if !stray {
		return
	}
	d.startRemoval(pg, "stray copy")
}

// startRemoval deletes this OSD's copy of pg in the background (the map
// lock is held): it leaves d.pgs and is registered in d.removing, so
// that abortRemoval stops the deletion if the PG maps here again. what
// names the copy in the log.
func (d *OSD) startRemoval(pg *PG, what string) {
	id := pg.id
	delete(d.pgs, id)
	rm := &pgRemoval{}
	d.removing[id] = rm
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.removePG(pg, rm); err != nil && d.ctx.Err() == nil {
			d.log.Error("delete "+what, "pg", id, "err", err)
		} else if !rm.abort.Load() {
			d.log.Info("deleted "+what, "pg", id)
		}
		d.mu.Lock()
		if d.removing[id] == rm {
			delete(d.removing, id)
		}
		d.mu.Unlock()
	}()
}

// abortRemoval stops the deletion of this OSD's copy of PG id, if one
// runs, and waits for its transaction in flight (the OSD's map lock is
// held: the PG maps here again).
func (d *OSD) abortRemoval(id osdmap.PGID) {
	rm := d.removing[id]
	if rm == nil {
		return
	}
	rm.abort.Store(true)
	rm.mu.Lock()
	//lint:ignore SA2001 waits for the transaction in flight
	rm.mu.Unlock()
	delete(d.removing, id)
	d.log.Info("stray copy maps here again: deletion stopped", "pg", id)
}

// removePG deletes a PG's metadata (its log first), then its objects, a
// batch per transaction, then its collection, unless rm is aborted.
func (d *OSD) removePG(pg *PG, rm *pgRemoval) error {
	step := func() (done bool, err error) {
		rm.mu.Lock()
		defer rm.mu.Unlock()
		if rm.abort.Load() {
			return true, nil
		}
		var t objectstore.Transaction
		if _, err := d.store.Stat(metaColl, metaOID(pg.coll)); err == nil {
			t.Remove(metaColl, metaOID(pg.coll))
			return false, d.store.Apply(&t)
		}
		names, err := d.store.List(pg.coll, "", 256)
		if err != nil {
			return false, err
		}
		for _, n := range names {
			t.Remove(pg.coll, n)
		}
		if len(names) == 0 {
			t.RemoveCollection(pg.coll)
		}
		return len(names) == 0, d.store.Apply(&t)
	}
	for d.ctx.Err() == nil {
		if err := d.throttle(d.ctx, mclock.BestEffort, 256, 0); err != nil {
			return err
		}
		done, err := step()
		if err != nil || done {
			return err
		}
	}
	return d.ctx.Err()
}

// notifyPrimary tells the primary of the PG's interval iv that this OSD,
// out of the acting set, holds a copy; on success the PG remembers it did
// for iv.
func (pg *PG) notifyPrimary(iv uint64, primary int32, addr string) {
	d := pg.osd
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
	defer cancel()
	if _, err := d.call(ctx, primary, addr, msgNotify, (&peerMsg{PG: pg.id, Interval: iv, From: d.id}).encode()); err != nil {
		d.log.Debug("telling the primary of a stray copy", "pg", pg.id, "osd", primary, "err", err)
		return
	}
	pg.mu.Lock()
	if pg.ps.Interval.ID == iv {
		pg.notified = iv
	}
	pg.mu.Unlock()
}

// handleNotify: OSD o holds a copy of this PG outside its acting set. It
// joins the strays (peering asks them for history; once the PG is clean
// they are told to delete their copies), at once if the PG is clean.
func (pg *PG) handleNotify(o int32) {
	pg.mu.Lock()
	if o < 0 || slices.Contains(pg.ps.Interval.Acting, o) {
		pg.mu.Unlock()
		return
	}
	if !slices.Contains(pg.ps.Strays, o) {
		pg.ps.Strays = append(pg.ps.Strays, o)
	}
	iv, clean := pg.ps.Interval.ID, pg.ps.Interval.Primary == pg.osd.id && pg.isClean()
	pg.mu.Unlock()
	if clean {
		d := pg.osd
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			pg.purgeStrays(iv)
		}()
	}
}
