package osd

// PG merging, the inverse of splitting (split.go), as Ceph's OSD does it
// (PG::merge_from, MOSDPGReadyToMerge). The MONs merge one PG at a time
// (mon/pgnum.go): once pgp_num has come down so that the pool's last PG
// (the source) maps where its target (osdmap.MergeTarget) does, they set
// pg_num_pending to pg_num-1.
//
//   - Premerge. While a map has the merge pending, both PGs hold new
//     writes (waitMerge; a write prepared earlier is refused at its
//     submit and retried by its client). The source's primary — the
//     target's too, as they share an acting set — waits until both are
//     clean with no write in flight and reports their log heads to the
//     MONs with the map's epoch (reportMergeReady); the MONs take the
//     report only at that epoch, so the versions are those of the writes
//     held since.
//   - Merge. The MONs lower pg_num and record the versions
//     (osdmap.Pool.Merges). Each OSD merges its copies locally in one
//     store transaction: the source's objects move into the target's
//     collection without copying data (objectstore.SplitCollection
//     toward the target), its snap mapper's entries with them; both
//     logs' erasure-coding rollback stashes go (nothing is rolled back in
//     a clean PG); the source's metadata is removed (its empty
//     collection right after, in a transaction of its own); and
//     the target's log restarts empty at the newer of the two heads, with
//     the summed object and byte counts. Like Ceph's, the merged log
//     keeps no entries but keeps both logs' requests as dups (pgLog.dups),
//     so a resend of a write logged before the merge is answered, not
//     applied again, until the log first trims.
//   - Copies that were not exactly at the recorded versions (a stray or
//     an OSD that was down, a copy of only one of the two, copies of
//     different shards, an OSD that missed several merges into one PG or
//     more than osdmap.MaxMergeRecords merges) are merged the same way but with an empty
//     history (version 0'0): peering backfills them from the listings,
//     as it does a copy new to an OSD, and never takes them as
//     authoritative over a copy that merged at the recorded versions.
//
// The merge is a new interval for the target (pg_num is in its interval
// id through osdmap.SplitBits); an op for the source still in flight gets
// a retry and the client's next map sends it to the target.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// premergeOf reports whether PG seed of pool holds its writes for a
// pending merge: it is the merge's source or target.
func premergeOf(pool *osdmap.Pool, seed uint32) bool {
	if pool == nil {
		return false
	}
	s, t, ok := pool.MergePending()
	return ok && (seed == s || seed == t)
}

// waitMerge waits while the PG holds writes for a pending merge (up to
// 5 s, then a retry error for the client to resend with a newer map) and
// fails with a retry if the PG merged away. A resend of a write the PG
// logged and finished is answered meanwhile (rep), not held: it changes
// nothing. Outside a merge it costs one lock, as the check it replaces.
func (pg *PG) waitMerge(ctx context.Context, req *osdop.Request) (rep *osdop.Reply, err error) {
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for {
		pg.mu.Lock()
		held, gone, ch := pg.premerge, pg.merged, pg.changed
		if held && req.Client != 0 {
			if v, dup := pg.log.logged(req.Client, req.Tid); dup && pg.writing[v] == nil && pg.ps.State.IsActive() {
				rep = &osdop.Reply{Ver: v.Seq, Results: make([]osdop.Result, len(req.Ops))}
			}
		}
		pg.mu.Unlock()
		switch {
		case gone:
			return nil, fmt.Errorf("%w: pg %s merged into another", osdop.ErrRetry, pg.id)
		case !held || rep != nil:
			return rep, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout.C:
			return nil, fmt.Errorf("%w: pg %s is merging (premerge): writes wait", osdop.ErrRetry, pg.id)
		}
	}
}

// startMergeReports starts, for every pool with a merge pending in m
// whose source this OSD is the acting primary of, the goroutine that
// reports the merge ready (the map lock is held).
func (d *OSD) startMergeReports(m *osdmap.Map) {
	for _, id := range m.PoolIDs() {
		pool, _ := m.Pool(id)
		src, dst, ok := pool.MergePending()
		if !ok {
			continue
		}
		sid := osdmap.PGID{Pool: id, Seed: src}
		if mp, err := m.MapPG(sid); err != nil || mp.ActingPrimary != d.id || d.mergeReporting[sid] {
			continue
		}
		if d.mergeReporting == nil {
			d.mergeReporting = map[osdmap.PGID]bool{}
		}
		d.mergeReporting[sid] = true
		d.wg.Add(1)
		go d.reportMergeReady(sid, osdmap.PGID{Pool: id, Seed: dst})
	}
}

// reportMergeReady, on the source's acting primary, waits until the
// source and target PGs are ready to merge (mergeReady) and reports
// their versions to the MONs with the map's epoch ("pg ready-to-merge"),
// again at each new map while the merge stays pending; it ends when the
// merge is no longer pending or this OSD no longer the source's primary.
func (d *OSD) reportMergeReady(src, dst osdmap.PGID) {
	defer d.wg.Done()
	var sent osdmap.Epoch
	stillOurs := func(m *osdmap.Map) bool { // d.mu held
		pool, err := m.Pool(src.Pool)
		mp, _ := m.MapPG(src)
		return err == nil && premergeOf(pool, src.Seed) && pool.PGNum-1 == src.Seed && mp.ActingPrimary == d.id
	}
	for {
		d.mu.RLock()
		m, ch := d.m, d.mapCh
		ours := stillOurs(m)
		sp, tp := d.pgs[src], d.pgs[dst]
		d.mu.RUnlock()
		if !ours {
			d.mu.Lock()
			if !stillOurs(d.m) { // else a newer map wants the report again
				delete(d.mergeReporting, src)
				d.mu.Unlock()
				return
			}
			d.mu.Unlock()
			continue
		}
		var wakeS, wakeT chan struct{} // nil: never ready
		if sent != m.Epoch && sp != nil && tp != nil {
			sv, tv, why := mergeReady(sp, tp)
			if why == "" {
				if d.sendMergeReady(m.Epoch, src, sv, tv) {
					sent = m.Epoch
				}
			} else {
				d.log.Debug("merge waits", "source", src, "target", dst, "why", why)
			}
			wakeS, wakeT = sp.changedCh(), tp.changedCh()
		}
		t := time.NewTimer(time.Second) // a failed report, or a PG not yet made
		select {
		case <-ch:
		case <-d.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-wakeS:
		case <-wakeT:
		}
		t.Stop()
	}
}

// changedCh returns the channel closed at the PG's next change.
func (pg *PG) changedCh() chan struct{} {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.changed
}

// mergeReady reports the log heads of a merge's source and target PGs
// on their primary, or why they are not ready: each must hold its writes
// (premerge), be active and clean on the same acting set with this OSD
// its primary, and have no write in flight and nothing to recover.
func mergeReady(src, dst *PG) (sv, tv peering.Version, why string) {
	dst.mu.Lock()
	defer dst.mu.Unlock()
	src.mu.Lock()
	defer src.mu.Unlock()
	for _, pg := range []*PG{src, dst} {
		switch {
		case !pg.premerge:
			return sv, tv, fmt.Sprintf("pg %s does not hold its writes yet", pg.id)
		case pg.ps.Interval.Primary != pg.osd.id:
			return sv, tv, fmt.Sprintf("pg %s: not its primary", pg.id)
		case !pg.isClean() || len(pg.log.missing) > 0:
			return sv, tv, fmt.Sprintf("pg %s is %s", pg.id, pg.stateName())
		case len(pg.writing) > 0 || len(pg.pending) > 0:
			return sv, tv, fmt.Sprintf("pg %s has writes in flight", pg.id)
		}
	}
	if !slices.Equal(src.ps.Interval.Acting, dst.ps.Interval.Acting) {
		return sv, tv, fmt.Sprintf("acting sets %v and %v differ", src.ps.Interval.Acting, dst.ps.Interval.Acting)
	}
	return src.log.info.LastUpdate, dst.log.info.LastUpdate, ""
}

// sendMergeReady reports a merge ready at map epoch e; false if the
// MONs could not be told.
func (d *OSD) sendMergeReady(e osdmap.Epoch, src osdmap.PGID, sv, tv peering.Version) bool {
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	defer cancel()
	r, err := d.mc.Command(ctx, "pg ready-to-merge", map[string]string{
		"pool": strconv.FormatInt(src.Pool, 10), "source": strconv.FormatUint(uint64(src.Seed), 10),
		"epoch":          strconv.FormatUint(uint64(e), 10),
		"source_version": monc.FormatVersion(versionPair(sv)), "target_version": monc.FormatVersion(versionPair(tv)),
		"ready": "true"})
	if err != nil {
		if d.ctx.Err() == nil {
			d.log.Warn("reporting a merge ready; retrying", "source", src, "err", err)
		}
		return false
	}
	d.log.Info("merge reported ready", "source", src, "epoch", e, "source_version", sv, "target_version", tv, "answer", r.Message)
	return true
}

func versionPair(v peering.Version) [2]uint64 { return [2]uint64{uint64(v.Epoch), v.Seq} }

// mergePGs merges, at each map, each copy this OSD holds of a PG of pool
// merged away into its target's copy (made if this OSD has none), and
// records the new pg_num on copies it does not change (the map lock is
// held). It returns the targets whose merge failed: both copies stay as
// they were, the target kept out of the new map's interval (it must not
// serve without the source's objects), and the merge is tried again at
// the next map.
func (d *OSD) mergePGs(m *osdmap.Map, pool *osdmap.Pool) (failed map[uint32]bool) {
	groups := map[uint32][]*PG{} // target seed → the sources held
	for id, pg := range d.pgs {
		if id.Pool != pool.ID || id.Seed < pool.PGNum {
			continue
		}
		if _, err := d.store.Stat(metaColl, metaOID(pg.coll)); errors.Is(err, objectstore.ErrNotFound) {
			// no metadata: merged already (a crash left its emptied
			// collection) or a stray copy whose deletion was cut short
			pg.mu.Lock()
			pg.merged = true
			pg.setMappingLocked(m, nil, osdmap.Mapping{ActingPrimary: -1}, false, nil)
			pg.mu.Unlock()
			d.startRemoval(pg, "a merged source's leftover collection")
			continue
		}
		t := osdmap.MergeTarget(id.Seed, pool.PGNum)
		groups[t] = append(groups[t], pg)
	}
	for id, pg := range d.pgs {
		if id.Pool != pool.ID || id.Seed >= pool.PGNum {
			continue
		}
		if pg.pgNum <= pool.PGNum {
			if _, merging := groups[id.Seed]; !merging {
				pg.clearUnmerged() // its merge became moot (pg_num raised again, its sources gone)
			}
			continue
		}
		if len(osdmap.SplitChildren(id.Seed, pool.PGNum, pg.pgNum)) > 0 {
			if _, ok := groups[id.Seed]; !ok {
				groups[id.Seed] = nil // a target whose sources this OSD lacks
			}
		} else if err := pg.recordPGNum(pool.PGNum); err != nil {
			d.log.Error("record pg_num", "pg", id, "err", err)
		}
	}
	for seed, srcs := range groups {
		tid := osdmap.PGID{Pool: pool.ID, Seed: seed}
		dst, fresh := d.pgs[tid], false
		if dst == nil {
			d.abortRemoval(tid)
			var err error
			if dst, err = d.loadPG(tid, pool.PGNum); err != nil {
				d.log.Error("merge: load target: the sources stay, as strays, and are merged at a later map", "pg", tid, "err", err)
				if failed == nil {
					failed = map[uint32]bool{}
				}
				failed[seed] = true // not loaded again (and served without them) at this map
				continue
			}
			d.pgs[tid], fresh = dst, true
		}
		slices.SortFunc(srcs, func(a, b *PG) int { return int(a.id.Seed) - int(b.id.Seed) })
		if err := dst.merge(m, pool, srcs, fresh); err != nil {
			d.log.Error("merge pg: the copies stay apart, the target out of service, until a later map or the retry in 5 s", "target", tid, "err", err)
			dst.mu.Lock()
			dst.unmerged = true
			dst.notify()
			dst.mu.Unlock()
			if failed == nil {
				failed = map[uint32]bool{}
			}
			failed[seed] = true
			d.retryMergesSoon()
			continue
		}
		for _, s := range srcs {
			delete(d.pgs, s.id)
		}
	}
	return failed
}

// merge merges the source copies srcs into the PG's copy (fresh: made
// just now, this OSD held none) for pool's pg_num (the map lock is held;
// see the file's comment).
func (pg *PG) merge(m *osdmap.Map, pool *osdmap.Pool, srcs []*PG, fresh bool) error {
	d := pg.osd
	pg.mu.Lock()
	defer pg.mu.Unlock()
	for _, s := range srcs {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	// exact: the one merge into this PG since its copy's pg_num, of the
	// source held here, both at the versions the MONs recorded (and, on
	// an erasure-coded PG, copies of the same shard)
	var lm osdmap.MergeMeta
	exact := !fresh && len(srcs) == 1 && slices.Equal(osdmap.SplitChildren(pg.id.Seed, pool.PGNum, pg.pgNum), []uint32{srcs[0].id.Seed}) &&
		srcs[0].pgNum == pg.pgNum && len(srcs[0].log.missing) == 0 && len(pg.log.missing) == 0 &&
		srcs[0].log.info.Shard == pg.log.info.Shard
	if exact {
		var kept bool
		lm, kept = pool.MergeRecord(srcs[0].id.Seed)
		exact = kept && versionPair(srcs[0].log.info.LastUpdate) == lm.SourceVersion && versionPair(pg.log.info.LastUpdate) == lm.TargetVersion
	}
	var t objectstore.Transaction
	objects, bytes := pg.log.info.Objects, pg.log.info.Bytes
	if fresh {
		objects, bytes = 0, 0
	}
	// the stashes of both logs: nothing is rolled back after a merge
	var leftovers [][2]string // collection, object
	for _, s := range srcs {
		stay := func(oid string) bool { return strings.HasPrefix(oid, stashPrefix) || oid == opexec.SnapMapperOID }
		t.SplitCollection(s.coll, &objectstore.Split{Children: []objectstore.Coll{pg.coll},
			Target: func(oid string) objectstore.Coll {
				if stay(oid) {
					return ""
				}
				return pg.coll
			},
			Indexes:   []string{opexec.SnapMapperOID},
			KeyTarget: func(string) objectstore.Coll { return pg.coll }})
		objects += s.log.info.Objects
		bytes += s.log.info.Bytes
	}
	for _, c := range append([]*PG{pg}, srcs...) {
		names, err := internalObjects(d.store, c.coll)
		if err != nil {
			return fmt.Errorf("pg %s: merge: list %s: %w", pg.id, c.coll, err)
		}
		for _, n := range names {
			if strings.HasPrefix(n, stashPrefix) || (c != pg && n == opexec.SnapMapperOID) {
				leftovers = append(leftovers, [2]string{string(c.coll), n})
			}
		}
	}
	for _, lo := range leftovers {
		t.Remove(objectstore.Coll(lo[0]), lo[1])
	}
	for _, s := range srcs {
		// the collection goes in a transaction of its own (the store checks
		// that it is empty before this one moves its objects): a crash in
		// between leaves it empty and without metadata (mergePGs)
		t.Remove(metaColl, metaOID(s.coll))
	}
	l := newPGLog()
	l.info = peering.Info{Objects: objects, Bytes: bytes, Shard: pg.log.info.Shard}
	// the requests of both logs stay known as duplicates
	l.dups = map[[2]uint64]Version{}
	for _, c := range append([]*PG{pg}, srcs...) {
		maps.Copy(l.dups, c.log.dups)
		maps.Copy(l.dups, c.log.reqs)
	}
	if exact {
		head := srcs[0].log.info.LastUpdate
		if head.Less(pg.log.info.LastUpdate) {
			head = pg.log.info.LastUpdate
		}
		l.info.LastUpdate, l.info.LogTail, l.info.RolledForward = head, head, head.Seq
	} else if fresh && len(srcs) > 0 {
		l.info.Shard = srcs[0].log.info.Shard
	}
	l.persistAll(&t, pg.coll)
	t.SetAttr(metaColl, metaOID(pg.coll), attrPGNum, pgNumBytes(pool.PGNum))
	if err := d.store.Apply(&t); err != nil {
		return fmt.Errorf("pg %s: merge of %d copies for pg_num %d: %w", pg.id, len(srcs), pool.PGNum, err)
	}
	var rm objectstore.Transaction
	for _, s := range srcs {
		rm.RemoveCollection(s.coll)
	}
	if err := d.store.Apply(&rm); err != nil {
		d.log.Warn("merge: remove the sources' empty collections; removed at the next start", "pg", pg.id, "err", err)
	}
	pg.log, pg.applied, pg.pgNum, pg.unmerged = l, l.info.LastUpdate, pool.PGNum, false
	pg.projected, pg.snaptrim = map[string]*projection{}, pgSnapTrim{}
	pg.peerings++ // projections from before are not trusted
	for _, s := range srcs {
		s.merged = true
		s.setMappingLocked(m, nil, osdmap.Mapping{ActingPrimary: -1}, false, nil)
		s.notify()
	}
	d.log.Info("merged pg", "pg", pg.id, "sources", len(srcs), "pg_num", pool.PGNum, "exact", exact, "head", l.info.LastUpdate)
	if !exact {
		d.log.Warn("merged copies were not at the recorded versions: the merged copy is backfilled", "pg", pg.id,
			"want_source", lm.SourceVersion, "want_target", lm.TargetVersion)
	}
	return nil
}

// internalObjects lists the objects of collection c whose names begin
// with "\x00" (snap mapper, clones, rollback stashes): they sort first.
func internalObjects(s objectstore.Store, c objectstore.Coll) ([]string, error) {
	var out []string
	for after := ""; ; {
		names, err := s.List(c, after, 1024)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !strings.HasPrefix(n, "\x00") {
				return out, nil
			}
			out = append(out, n)
		}
		if len(names) < 1024 {
			return out, nil
		}
		after = names[len(names)-1]
	}
}

// clearUnmerged puts back in service a PG whose merge failed and is no
// longer to be made.
func (pg *PG) clearUnmerged() {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.unmerged {
		pg.unmerged = false
		pg.notify()
	}
}

// retryMergesSoon has the OSD map its PGs again in 5 s, under the map it
// holds then, so that a merge that failed is retried without waiting for
// a new map (one retry pending at a time).
func (d *OSD) retryMergesSoon() {
	if !d.mergeRetry.CompareAndSwap(false, true) {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		select {
		case <-d.ctx.Done():
			return
		case <-d.clock.After(5 * time.Second):
		}
		d.mergeRetry.Store(false)
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.m != nil {
			d.mapPGs(d.m, d.m)
		}
	}()
}
