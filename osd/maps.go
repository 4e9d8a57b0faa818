package osd

// The OSD map: installing a new map re-maps every PG this OSD holds or
// gains (pg.go setMapping, over osd/peering's Machine), and a map that
// marks this OSD down while it runs has it boot again.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdmap"
)

func (d *OSD) epoch() uint32 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.m == nil {
		return 0
	}
	return uint32(d.m.Epoch)
}

func (d *OSD) curMap() (*osdmap.Map, chan struct{}) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.m, d.mapCh
}

// waitEpoch waits (up to 5 s) until the OSD has a map of epoch e; if it
// has not, it asks for it (learnEpoch: from the MONs, or else a peer).
func (d *OSD) waitEpoch(ctx context.Context, e uint32) {
	d.awaitEpoch(ctx, e, 5*time.Second, true)
}

// awaitEpoch waits up to timeout (or until ctx ends) for a map of epoch e
// and reports whether this OSD has one; with learn, a missing epoch is
// asked for (learnEpoch). Having it already costs one read lock: every
// message asks.
func (d *OSD) awaitEpoch(ctx context.Context, e uint32, timeout time.Duration, learn bool) bool {
	m, ch := d.curMap()
	if uint32(m.Epoch) >= e {
		return true
	}
	if learn {
		d.learnEpoch(e, -1, "")
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		}
		if m, ch = d.curMap(); uint32(m.Epoch) >= e {
			return true
		}
	}
}

// handleMap installs a new map: PGs whose acting set changed start a new
// interval (the primary peers), PGs this OSD left become strays.
func (d *OSD) handleMap(m *osdmap.Map) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m != nil && m.Epoch <= d.m.Epoch {
		return
	}
	defer d.installed.Store(m) // before mu is released
	old := d.m
	d.m = m
	close(d.mapCh)
	d.mapCh = make(chan struct{})
	d.snapTrimKick.kick() // removed snaps may have grown, PGs become clean
	if d.id >= 0 && d.id < m.MaxOSD() && (!m.OSDs[d.id].Up || m.OSDs[d.id].Addr != d.addr) {
		wasUp := old != nil && d.id < old.MaxOSD() && old.OSDs[d.id].Up && old.OSDs[d.id].Addr == d.addr
		wait := d.markedDown(d.clock.Now(), wasUp)
		if wait > 0 {
			d.log.Error("marked down in the map while alive too often: staying down (osd_max_markdown_count, osd_max_markdown_period); check this OSD's network to its peers",
				"epoch", m.Epoch, "times", len(d.markdowns), "boot_in", wait.Round(time.Second))
		} else {
			d.log.Warn("marked down in the map while alive; booting again", "epoch", m.Epoch)
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			select {
			case <-d.ctx.Done():
				return
			case <-d.clock.After(wait):
			}
			ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
			defer cancel()
			d.mc.Command(ctx, "osd boot", map[string]string{"id": strconv.Itoa(int(d.id)), "host": d.o.Host, "addr": d.addr, "cluster_addr": d.clusterAddr})
		}()
	}
	d.mapPGs(m, old)
}

// mapPGs maps every PG this OSD holds or gains under map m, old the map
// before it (the map lock is held): merges and splits its copies as m's
// pg_num asks, sets each PG's mapping (a new interval begins where it
// changed), and has the PGs it left go stray. Mapping again under the
// same map changes nothing but what a failed merge or split left to do.
func (d *OSD) mapPGs(m, old *osdmap.Map) {
	seen := map[osdmap.PGID]bool{}
	for _, pid := range m.PoolIDs() {
		pool, _ := m.Pool(pid)
		maps, err := m.PGMappings(pid)
		if err != nil {
			d.log.Error("pg mappings", "pool", pid, "err", err)
			continue
		}
		var oldMaps []osdmap.Mapping // by the old map's pg_num
		if old != nil {
			if _, err := old.Pool(pid); err == nil {
				oldMaps, _ = old.PGMappings(pid)
			}
		}
		// copies of PGs merged away: at the merge, at this OSD's first map
		// (merged while it was down), or after a merge that failed
		failedMerge := d.mergePGs(m, pool)
		failed := map[uint32]uint32{} // parents whose split failed: their pg_num
		unsplit := func(seed uint32) bool {
			for p, n := range failed {
				if seed >= n && osdmap.SplitParent(seed, n) == p {
					return true
				}
			}
			return false
		}
		for seed, mp := range maps {
			pgid := osdmap.PGID{Pool: pid, Seed: uint32(seed)}
			// a member of the acting set, or a backfill target (in its
			// up set, outside a pg_temp)
			in := slices.Contains(mp.Acting, d.id) || slices.Contains(mp.Up, d.id)
			pg := d.pgs[pgid]
			if !in && pg == nil {
				continue
			}
			if failedMerge[uint32(seed)] {
				seen[pgid] = pg != nil // it stays in its interval, out of service
				continue
			}
			if pg == nil && unsplit(uint32(seed)) {
				continue // its objects are in a parent here that has not split
			}
			if pg == nil {
				d.abortRemoval(pgid)
				var err error
				if pg, err = d.loadPG(pgid, pool.PGNum); err != nil {
					d.log.Error("load pg", "pg", pgid, "err", err)
					continue
				}
				d.pgs[pgid] = pg
			}
			seen[pgid] = true
			var prev []int32
			if n := len(oldMaps); n > 0 {
				// a PG split off since: its parent's (split.go)
				prev = oldMaps[osdmap.SplitParent(uint32(seed), uint32(n))].Acting
			}
			if pg.pgNum == 0 {
				if err := pg.recordPGNum(pool.PGNum); err != nil {
					d.log.Error("record pg_num", "pg", pgid, "err", err)
				}
			}
			if pg.pgNum != 0 && pg.pgNum < pool.PGNum {
				// split, and begin the parent's new interval, under its
				// lock: no write of the old interval follows the split
				pg.mu.Lock()
				kids, err := pg.split(pool)
				if err != nil {
					// the parent stays in its interval, the children
					// unmade here; the next map tries again
					pg.mu.Unlock()
					d.log.Error("split pg: it stays unsplit until a later map", "pg", pgid, "err", err)
					failed[uint32(seed)] = pg.pgNum
					continue
				}
				for _, k := range kids {
					d.pgs[k.id] = k
				}
				pg.setMappingLocked(m, pool, mp, in, prev)
				pg.mu.Unlock()
			} else {
				pg.setMapping(m, pool, mp, in, prev)
			}
			if p := mp.ActingPrimary; !in && p >= 0 && p < m.MaxOSD() && m.OSDs[p].Up {
				pg.mu.Lock()
				iv, told := pg.ps.Interval.ID, pg.notified == pg.ps.Interval.ID
				pg.mu.Unlock()
				if !told {
					d.wg.Add(1)
					go func() {
						defer d.wg.Done()
						pg.notifyPrimary(iv, p, m.OSDs[p].BackAddr())
					}()
				}
			}
		}
	}
	d.startMergeReports(m)
	for id, pg := range d.pgs {
		if seen[id] {
			continue
		}
		pg.setMapping(m, nil, osdmap.Mapping{ActingPrimary: -1}, false, nil)
		if _, err := m.Pool(id.Pool); err != nil { // the pool was deleted
			delete(d.pgs, id)
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				if err := d.removePG(pg, &pgRemoval{}); err != nil {
					d.log.Error("remove pg of deleted pool", "pg", id, "err", err)
				} else {
					d.log.Info("removed pg of deleted pool", "pg", id)
				}
			}()
		}
	}
}

// markedDown records that the map marked this OSD down while it ran (the
// OSD's map lock is held; wasUp: the previous map had it up, so this is a
// new markdown, not another map that still has it down) and says how
// long to wait before booting again: at once, unless it was marked down
// more than osd_max_markdown_count times in the last
// osd_max_markdown_period — then until the oldest of them leaves the
// period (Ceph's flap damping, which shuts such an OSD down instead).
func (d *OSD) markedDown(now time.Time, wasUp bool) time.Duration {
	if wasUp {
		cfg := d.conf()
		period := time.Duration(cfg.Seconds("osd_max_markdown_period") * float64(time.Second))
		d.markdowns = append(slices.DeleteFunc(d.markdowns, func(t time.Time) bool { return now.Sub(t) >= period }), now)
		d.bootAt = now
		if n := int(cfg.Int("osd_max_markdown_count")); len(d.markdowns) > n {
			d.bootAt = d.markdowns[len(d.markdowns)-n-1].Add(period)
		}
	}
	return max(d.bootAt.Sub(now), 0)
}

// loadPG makes the PG's collection if it is new — for the pool's pgNum
// PGs (split.go) — and reads its log.
func (d *OSD) loadPG(id osdmap.PGID, pgNum uint32) (*PG, error) {
	c := objectstore.Coll(id.String())
	if _, err := d.store.List(c, "", 1); errors.Is(err, objectstore.ErrNotFound) {
		var t objectstore.Transaction
		t.CreateCollection(c)
		t.Touch(metaColl, metaOID(c))
		t.SetAttr(metaColl, metaOID(c), attrPGNum, pgNumBytes(pgNum))
		if err := d.store.Apply(&t); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	l, err := loadPGLog(d.store, c)
	if err != nil {
		return nil, err
	}
	pg := newPG(d, id, c, l)
	pg.pgNum = loadPGNum(d.store, c)
	pg.loadScrubStamps()
	return pg, nil
}

func (d *OSD) getPG(id osdmap.PGID) *PG {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.pgs[id]
}
