package osd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shoal-project/shoal/internal/keylock"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// PG is one placement group on this OSD.
type PG struct {
	id   osdmap.PGID
	coll objectstore.Coll
	osd  *OSD
	// pgNum is the pool's pg_num this copy's collection holds objects
	// for (split.go); 0 until known. Changed under the map lock.
	pgNum uint32

	mu      sync.Mutex
	changed chan struct{} // closed on every change of state or applied version
	pool    *osdmap.Pool
	// ps is the PG's peering state (osd/peering): its interval — acting
	// set, up set, backfill targets (the up set's OSDs outside the acting
	// set while a pg_temp keeps the old acting set serving: they take
	// every write, on a replicated PG as a log entry only for an object
	// their copy still lacks, and are filled in the background) — its
	// past intervals, strays and state. The OSD carries out what it
	// decides.
	ps        peering.Machine
	recorded  monc.PGInterval // the last interval recorded at the MONs (pghistory.go); zero while a record's outcome is unknown
	recordSem chan struct{}   // capacity 1: one interval record of this PG at a time (recordInterval)
	epoch     osdmap.Epoch
	log       *pgLog
	applied   Version        // the newest write submitted to the store, in log order
	objLocks  *keylock.Table // by object name, guarded by mu
	// prepLocks order the writes that share an object's lock (mode
	// keylock.Write): each holds its object's here from its prepare to its
	// submit (its own mutex).
	prepLocks *keylock.Table
	// projected is, for an object with writes in flight that share its
	// lock, the state the last of them leaves (guarded by mu).
	projected map[string]*projection
	// writing holds the writes submitted and not finished, by version:
	// each channel is closed once its write committed everywhere or
	// failed.
	writing map[Version]chan struct{}
	// peerings counts the peerings started: a projection made before the
	// last one is not trusted.
	peerings uint64
	cancel   context.CancelFunc // of the running peering
	// erasure-coded PGs (ps.Interval.EC): this OSD's shard (its position
	// in acting), and on the primary the seqs of writes not yet on every
	// shard
	shard   int
	pending map[uint64]bool
	scrub   pgScrub
	// snaptrim is the snap trimmer's progress (snaptrim.go)
	snaptrim pgSnapTrim
	// watch is the primary's live watch/notify state (watch.go)
	watch pgWatch
	// notified is the interval in which this OSD, a stray, told the
	// primary it holds a copy (msgNotify)
	notified uint64
	// rec is the PG's recovery after activation, on its primary
	// (nil when every acting member's copy is complete).
	rec *recovery
	// premerge: the map has a merge of this PG pending (as its source or
	// target), and it holds new writes; merged: it was merged into its
	// target and is gone; unmerged: its merge with its sources failed
	// here, and it serves nothing until a later map merges them
	// (merge.go).
	premerge, merged, unmerged bool
}

func newPG(d *OSD, id osdmap.PGID, c objectstore.Coll, l *pgLog) *PG {
	pg := &PG{id: id, coll: c, osd: d, changed: make(chan struct{}), log: l, applied: l.info.LastUpdate,
		ps: peering.Machine{Whoami: d.id, Interval: peering.Interval{Primary: -1}, State: peering.Stray}, pending: map[uint64]bool{},
		recordSem: make(chan struct{}, 1)}
	pg.objLocks = keylock.New(&pg.mu) // blockChunk lists them with the scrub bounds it sets
	pg.prepLocks = keylock.New(nil)
	pg.projected, pg.writing = map[string]*projection{}, map[Version]chan struct{}{}
	return pg
}

// setShard records which shard of an erasure-coded PG this OSD holds
// now, its position in the acting set or as a backfill target (pg.mu is
// held). A copy of another shard is kept as it is until the PG's primary
// has this OSD adopt a log for the new shard (adoptLog drops the old
// log then, and every object of the new shard is rebuilt): until then
// the old shard may still serve, at its old position under a pg_temp.
func (pg *PG) setShard(pos int) {
	pg.shard = pos
	if pg.log.info.LastUpdate == (Version{}) {
		pg.log.info.Shard = int32(pos)
	}
}

func (pg *PG) notify() {
	close(pg.changed)
	pg.changed = make(chan struct{})
}

// setMapping applies a new map's mapping of the PG (the OSD's map lock is
// held). A new interval cancels running peering and, on the primary,
// starts it again.
//
// prev is the PG's acting set in the previous map, for a PG this OSD did
// not know before.
func (pg *PG) setMapping(m *osdmap.Map, pool *osdmap.Pool, mp osdmap.Mapping, in bool, prev []int32) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.setMappingLocked(m, pool, mp, in, prev)
}

// setMappingLocked is setMapping with pg.mu held.
func (pg *PG) setMappingLocked(m *osdmap.Map, pool *osdmap.Pool, mp osdmap.Mapping, in bool, prev []int32) {
	iv := peering.NewInterval(m, pool, pg.id.Seed, mp, m.Epoch)
	pg.pool = pool
	pg.epoch = m.Epoch
	if held := premergeOf(pool, pg.id.Seed); held != pg.premerge {
		pg.premerge = held
		pg.notify()
	}
	if pos := slices.Index(mp.Acting, pg.osd.id); iv.EC && pos >= 0 {
		pg.setShard(pos)
	} else if t := slices.Index(iv.Backfill.OSDs, pg.osd.id); iv.EC && t >= 0 {
		pg.setShard(iv.Backfill.Shards[t])
	}
	changed, peer := pg.ps.AdvMap(iv, in, prev)
	if !changed {
		return
	}
	if pg.cancel != nil {
		pg.cancel()
		pg.cancel = nil
	}
	pg.rec = nil
	pg.osd.remoteSlots.endInterval(pg.id, iv.ID) // a grant to an earlier interval's primary
	if peer {
		pg.startPeering()
	}
	pg.notify()
}

// startPeering runs a peering of the current interval in the background
// (pg.mu held); a new interval or a repeer cancels it.
func (pg *PG) startPeering() {
	ctx, cancel := context.WithCancel(pg.osd.ctx)
	pg.cancel = cancel
	pg.peerings++
	iv := pg.ps.Interval.ID
	pg.osd.wg.Add(1)
	go func() {
		defer pg.osd.wg.Done()
		pg.peer(ctx, iv)
	}()
}

// waitActive waits until the PG serves I/O on this OSD as its primary. It
// gives up with ErrRetry when this OSD is not the primary, or after a few
// seconds so that the client refreshes its map and resends.
func (pg *PG) waitActive(ctx context.Context) error {
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for {
		pg.mu.Lock()
		state, ch, unmerged := pg.ps.State, pg.changed, pg.unmerged
		pg.mu.Unlock()
		switch {
		case unmerged:
			return fmt.Errorf("%w: pg %s waits to merge with the PGs merged into it", osdop.ErrRetry, pg.id)
		case state.IsActive():
			return nil
		case state == peering.ReplicaActive || state == peering.Stray:
			return fmt.Errorf("%w: osd.%d is not the primary of pg %s", osdop.ErrRetry, pg.osd.id, pg.id)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("%w: %s", osdop.ErrRetry, pg.describe())
		}
	}
}

// waitReadable waits until the PG serves reads on this OSD: active, and
// holding a read lease from every other OSD that takes its writes
// (lease.go), and returns the interval; the read must pass stillReadable
// in it once it has read. Errors as waitActive's and checkReadLease's.
func (pg *PG) waitReadable(ctx context.Context) (uint64, error) {
	if err := pg.waitActive(ctx); err != nil {
		return 0, err
	}
	return pg.checkReadLease(ctx)
}

// ownsLocked reports whether object oid is this PG's under the pool as
// the PG last saw it (pg.mu held): an op routed by a map from before a
// split, that waited for the PG across it, names an object that moved
// to a child (Ceph answers such a misdirected op with a retry too).
func (pg *PG) ownsLocked(oid string) bool {
	p := pg.pool
	return p == nil || p.RawPGToPG(osdmap.PGID{Pool: p.ID, Seed: p.HashKey(oid, "")}) == pg.id
}

// errSplitAway is the retry error for an op on object oid, routed to pg
// before a split moved the object to a child.
func errSplitAway(oid string, pg osdmap.PGID) error {
	return fmt.Errorf("%w: %s is no longer in pg %s (split)", osdop.ErrRetry, oid, pg)
}

// describe says why the PG does not serve I/O, for the client's error.
func (pg *PG) describe() string {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.State == peering.Peered && pg.pool != nil {
		return fmt.Sprintf("pg %s is %s: %d of %d OSDs of its acting set up, below min_size %d; its I/O waits until enough return",
			pg.id, pg.ps.State.Name(), osdmap.Members(pg.ps.Interval.Acting), pg.pool.Size, pg.pool.MinSize)
	}
	return fmt.Sprintf("pg %s is %s", pg.id, pg.ps.State.Name())
}

// lockObject takes an object's lock exclusively: a write that is not
// blind (opexec.Blind), or on an erasure-coded PG, holds it from reading
// the object's state until every member has committed; recovery and
// scrub take it so that no write is in flight on the object.
func (pg *PG) lockObject(oid string) func() { return pg.objLocks.Lock(oid, keylock.Excl) }

// rlockObject takes an object's lock for a read: a read sees no write
// half applied (its size and its bytes from the same version), as it
// waits for the writes in flight.
func (pg *PG) rlockObject(oid string) func() { return pg.objLocks.Lock(oid, keylock.Read) }

// projection is the state of an object the writes in flight on it leave.
type projection struct {
	obj      object // as the last of them leaves it
	n        int    // writes in flight
	peerings uint64 // PG.peerings when the last was submitted
}

// errStaleProjection: the PG peered since the writes in flight on the
// object, or the write, read the object's state, or the object needs
// recovery; the write waits for the writes in flight to end
// (keylock.Excl) and reads the object's state from the store.
var errStaleProjection = errors.New("object state from before the last peering, or object to recover")

// write runs a client's write request: the backend builds the
// transaction (one per shard on an erasure-coded PG) from the object's
// current state; write orders it in the PG log, applies it here and on
// every other member, and returns once all have committed.
//
// On a replicated PG, blind writes (opexec.Blind: a block image's data
// writes) to one object are in flight together, as Ceph's are: each is
// prepared against the state the one before it leaves (projection) as
// soon as that one is submitted, and the members apply them in log
// order. Reads of the object wait for them all (keylock). Only on a
// device below its nearfull ratio, for an object that needs no recovery,
// within one peering.
func (pg *PG) write(ctx context.Context, req *osdop.Request, be backend) (*osdop.Reply, error) {
	if err := pg.waitActive(ctx); err != nil {
		return nil, err
	}
	if rep, err := pg.waitMerge(ctx, req); rep != nil || err != nil {
		return rep, err
	}
	if req.AddsData() {
		if err := pg.checkFull(); err != nil {
			return nil, err
		}
	}
	// Not on a device filling up: a write that fails locally for want of
	// room (the store checks each transaction's room alone) must not have
	// had the next built on it.
	mode := keylock.Excl
	if _, ok := be.(replicatedBackend); ok && opexec.Blind(req.Ops) {
		if lvl, _ := pg.osd.fullness(); lvl == osdmap.NotFull {
			mode = keylock.Write
		}
	}
	rep, err := pg.writeAs(ctx, req, be, mode)
	if errors.Is(err, errStaleProjection) {
		rep, err = pg.writeAs(ctx, req, be, keylock.Excl)
	}
	return rep, err
}

// writeAs is write holding the object's lock in mode m: keylock.Write
// (shared with other blind writes; the object's prepare lock orders them)
// or keylock.Excl.
func (pg *PG) writeAs(ctx context.Context, req *osdop.Request, be backend, m keylock.Mode) (*osdop.Reply, error) {
	unlock, err := pg.writeLock(ctx, req.OID, m)
	if err != nil {
		return nil, err
	}
	defer unlock()
	unprep := func() {}
	if m == keylock.Write {
		unprep = pg.prepLocks.Lock(req.OID, keylock.Excl)
	}
	defer func() { unprep() }() // on an early return; after the submit it is a no-op
	// A resend of a write already logged is answered with its outcome,
	// without the output of reads it carried (as Ceph answers
	// duplicates): once the first attempt has committed on every member
	// or failed, and only while the PG is active: a failure re-peers it,
	// and peering decides whether the write stays (Ceph likewise answers a
	// duplicate only once the original is on disk).
	for req.Client != 0 {
		pg.mu.Lock()
		v, dup := pg.log.logged(req.Client, req.Tid)
		active := pg.ps.State.IsActive()
		first := pg.writing[v]
		pg.mu.Unlock()
		if !dup {
			break
		}
		if first != nil { // in flight, beside this one (keylock.Write)
			unprep()
			select {
			case <-first:
			case <-ctx.Done():
				unprep = func() {}
				return nil, ctx.Err()
			}
			unprep = pg.prepLocks.Lock(req.OID, keylock.Excl)
			continue
		}
		if !active {
			return nil, fmt.Errorf("%w: pg %s is peering after a write failed", osdop.ErrRetry, pg.id)
		}
		return &osdop.Reply{Ver: v.Seq, Results: make([]osdop.Result, len(req.Ops))}, nil
	}
	var peerings uint64 // keylock.Write: the peering in which the object's state is read
	if m == keylock.Write {
		pg.mu.Lock()
		p := pg.projected[req.OID]
		peerings = pg.peerings
		// Recovery needs the object's lock exclusively, and writes in
		// flight from before the last peering may be ones the new
		// interval's members never get: both wait for the writes in
		// flight to end, and read the store.
		stale := pg.log.lacks(req.OID) || pg.needsRecovery(req.OID, true) || p != nil && p.peerings != peerings
		pg.mu.Unlock()
		if stale {
			return nil, fmt.Errorf("pg %s: %s: %w", pg.id, req.OID, errStaleProjection)
		}
	}
	if err := pg.recoverFor(ctx, req.OID, true); err != nil {
		return nil, err
	}
	d := pg.osd
	x, err := be.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	isEC := x.shards != nil // one transaction per shard
	pg.mu.Lock()
	if s := pg.ps.State; !s.IsActive() {
		pg.mu.Unlock()
		return nil, fmt.Errorf("%w: pg %s is %s", osdop.ErrRetry, pg.id, s.Name())
	}
	if !pg.ownsLocked(req.OID) {
		pg.mu.Unlock()
		return nil, errSplitAway(req.OID, pg.id)
	}
	if pg.premerge || pg.merged { // prepared before the merge was pending
		pg.mu.Unlock()
		return nil, fmt.Errorf("%w: pg %s is merging", osdop.ErrRetry, pg.id)
	}
	if pg.log.lacks(req.OID) || pg.needsRecovery(req.OID, true) { // peering began since recoverFor
		pg.mu.Unlock()
		return nil, fmt.Errorf("%w: pg %s: %s is not recovered yet", osdop.ErrRetry, pg.id, req.OID)
	}
	if m == keylock.Write && pg.peerings != peerings { // prepared against a state from before
		pg.mu.Unlock()
		return nil, fmt.Errorf("pg %s: %s: %w", pg.id, req.OID, errStaleProjection)
	}
	pg.rec.written(req.OID)
	if isEC && pg.shard >= len(x.shards) {
		pg.mu.Unlock()
		return nil, fmt.Errorf("%w: pg %s: shard %d of %d", osdop.ErrRetry, pg.id, pg.shard, len(x.shards))
	}
	prev := pg.log.info.LastUpdate
	v := Version{Epoch: uint32(pg.epoch), Seq: prev.Seq + 1}
	entry := LogEntry{Ver: v, Op: logModify, OID: req.OID, Client: req.Client, Tid: req.Tid}
	txns := []*objectstore.Transaction{x.T}
	if isEC {
		txns = x.shards
	}
	switch {
	case !x.ExistsAfter && !x.Whiteout:
		entry.Op = logDelete
	case x.ExistsAfter:
		now := time.Now()
		for _, t := range txns {
			opexec.Stamp(t, pg.coll, req.OID, v, now)
		}
	}
	type target struct {
		id   int32
		addr string
		txn  *objectstore.Transaction
	}
	var others []target
	for i, o := range pg.ps.Interval.Acting {
		switch {
		case o == d.id || o == osdmap.NoOSD:
		case isEC:
			others = append(others, target{o, pg.ps.Interval.Addrs[i], x.shards[i]})
		default:
			others = append(others, target{o, pg.ps.Interval.Addrs[i], x.T})
		}
	}
	for i, o := range pg.ps.Interval.Backfill.OSDs {
		if isEC {
			others = append(others, target{o, pg.ps.Interval.Backfill.Addrs[i], x.shards[pg.ps.Interval.Backfill.Shards[i]]})
		} else {
			others = append(others, target{o, pg.ps.Interval.Backfill.Addrs[i], x.T})
		}
	}
	pm := peerMsg{PG: pg.id, Interval: pg.ps.Interval.ID, Prev: prev, Entry: entry, DObjects: x.DObjects, DBytes: x.DBytes}
	// The log entry and PG info go into a transaction of their own, so that
	// what the others get stays as prepared and is encoded after the lock
	// is released, while the local commit runs.
	local := &objectstore.Transaction{}
	var meta objectstore.Transaction
	mine := x.T
	if isEC {
		mine = x.shards[pg.shard]
		// writes before the oldest still in flight are on every shard
		pm.RollForward = prev.Seq
		for s := range pg.pending {
			pm.RollForward = min(pm.RollForward, s-1)
		}
		pg.pending[v.Seq] = true
		pg.rollForward(&meta, pm.RollForward)
		pg.stash(local, &entry, x.stored, mine)
	}
	pg.log.info.Objects += x.DObjects
	pg.log.info.Bytes += x.DBytes
	pg.log.add(&meta, pg.coll, entry, int(d.conf().Int("osd_min_pg_log_entries")), int(d.conf().Int("osd_max_pg_log_entries")))
	local.Append(mine)
	local.Append(&meta)
	pg.applied = v
	done := d.store.Submit(local)
	finished := make(chan struct{})
	pg.writing[v] = finished
	var proj *projection
	if m == keylock.Write {
		if proj = pg.projected[req.OID]; proj == nil {
			proj = &projection{}
			pg.projected[req.OID] = proj
		}
		proj.obj, proj.peerings = x.After(v.Seq), pg.peerings
		proj.n++
	}
	pg.mu.Unlock()
	unprep() // the next write to the object may prepare against proj
	unprep = func() {}
	defer func() { // before the object's lock is released
		pg.mu.Lock()
		delete(pg.writing, v)
		close(finished)
		if pg.premerge { // the merge's report waits for the writes in flight
			pg.notify()
		}
		if proj != nil {
			if proj.n--; proj.n == 0 {
				delete(pg.projected, req.OID)
			}
		}
		pg.mu.Unlock()
	}()

	errs := make(chan error, len(others))
	// Replicas all get x.t: encode it once, its data referenced rather
	// than copied into the message, and checksum it once.
	var shared [][]byte
	var sum uint32
	if !isEC && len(others) > 0 {
		m := pm
		m.Txn = x.T
		shared = m.encodeVec(repOpVecMin)
		sum = msgr.Checksum(shared, x.T.DataSum)
	}
	for _, r := range others {
		go func() {
			msg, msum := shared, sum
			if msg == nil {
				m := pm
				m.Txn = r.txn
				msg = m.encodeVec(repOpVecMin)
				msum = msgr.Checksum(msg, r.txn.DataSum)
			}
			rctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
			defer cancel()
			_, err := d.callVec(rctx, r.id, r.addr, msgRepOp, msg, msum)
			if err != nil {
				err = fmt.Errorf("osd.%d: %w", r.id, err)
			}
			errs <- err
		}()
	}
	var failed error
	if err := <-done; err != nil {
		failed = fmt.Errorf("osd.%d: pg %s: commit %s: %w", d.id, pg.id, v, storeErr(err))
	} else {
		d.perf.shardW.Add(1)
		d.perf.shardWBytes.Add(mine.DataLen())
	}
	for range others {
		if err := <-errs; err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		// The members may now disagree on the log's head: peer again, which
		// brings them all to the newest history before new writes.
		d.log.Warn("write failed; re-peering", "pg", pg.id, "version", v, "err", failed)
		pg.repeer()
		if errors.Is(failed, osdop.ErrNoSpace) {
			return nil, failed
		}
		return nil, fmt.Errorf("%w: %v", osdop.ErrRetry, failed)
	}
	if isEC {
		pg.mu.Lock()
		delete(pg.pending, v.Seq)
		pg.mu.Unlock()
	}
	if x.release != nil { // every member committed: no one reads the shards' data any more
		x.release()
	}
	return &osdop.Reply{Ver: v.Seq, Results: x.Results}, nil
}

// repOpVecMin is the data size from which a replicated write's message
// references the data instead of copying it.
const repOpVecMin = 16 << 10

// checkFull refuses a write that adds data when a member of the acting
// set is full (as the map says, or this OSD's own device now).
func (pg *PG) checkFull() error {
	d := pg.osd
	if lvl, used := d.fullness(); lvl == osdmap.Full {
		return fmt.Errorf("%w: pg %s: osd.%d is full (%.1f%% used, mon_osd_full_ratio %.2f): delete data or add OSDs", osdop.ErrNoSpace, pg.id, d.id, used*100, d.conf().Float("mon_osd_full_ratio"))
	}
	m, _ := d.curMap()
	pg.mu.Lock()
	defer pg.mu.Unlock()
	for _, o := range pg.ps.Interval.Acting {
		if o >= 0 && o < m.MaxOSD() && m.OSDs[o].Fullness == osdmap.Full {
			return fmt.Errorf("%w: pg %s: osd.%d is full (mon_osd_full_ratio): delete data or add OSDs", osdop.ErrNoSpace, pg.id, o)
		}
	}
	return nil
}

// repeer restarts peering in the current interval.
func (pg *PG) repeer() {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if !pg.ps.Repeer() {
		return
	}
	if pg.cancel != nil {
		pg.cancel()
	}
	pg.rec = nil
	pg.startPeering()
	pg.notify()
}

func storeErr(err error) error { return opexec.StoreErr(err) }

// handleRepOp applies a write the primary ordered, after every earlier one.
func (pg *PG) handleRepOp(ctx context.Context, pm *peerMsg) error {
	d := pg.osd
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	pg.mu.Lock()
	isEC := pg.ps.Interval.EC
	pg.mu.Unlock()
	var exists bool // for an erasure-coded shard's rollback stash: looked up outside the PG lock
	if isEC {
		_, err := d.store.Stat(pg.coll, pm.Entry.OID)
		exists = err == nil
	}
	pg.mu.Lock()
	for {
		if pg.ps.Interval.ID != pm.Interval || pg.ps.State != peering.ReplicaActive {
			pg.mu.Unlock()
			return fmt.Errorf("%w: pg %s on osd.%d is in another interval", osdop.ErrRetry, pg.id, d.id)
		}
		if pg.applied == pm.Prev {
			break
		}
		if !pg.applied.Less(pm.Prev) {
			pg.mu.Unlock()
			return fmt.Errorf("%w: pg %s: write %s follows %s, osd.%d is at %s", osdop.ErrRetry, pg.id, pm.Entry.Ver, pm.Prev, d.id, pg.applied)
		}
		ch := pg.changed
		pg.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("%w: pg %s: write %s waited for %s", osdop.ErrRetry, pg.id, pm.Entry.Ver, pm.Prev)
		}
		pg.mu.Lock()
	}
	txn, entry := pm.Txn, pm.Entry
	if pg.ps.Interval.EC && pg.log.lacks(entry.OID) {
		// a primary rebuilds every shard of an object before it writes it:
		// this write comes from a plan that is not ours
		pg.mu.Unlock()
		return fmt.Errorf("%w: pg %s: osd.%d's shard of %s is not rebuilt yet", osdop.ErrRetry, pg.id, d.id, entry.OID)
	}
	if pg.log.lacks(entry.OID) {
		// our copy is stale: log the write only; recovery brings the
		// object whole, this version or a newer one
		txn = &objectstore.Transaction{}
		pg.log.need(txn, pg.coll, entry.OID, entry.Ver)
	}
	if pg.ps.Interval.EC {
		txn = &objectstore.Transaction{}
		pg.stash(txn, &entry, exists, pm.Txn)
		txn.Append(pm.Txn)
		pg.rollForward(txn, pm.RollForward)
	}
	pg.log.info.Objects += pm.DObjects
	pg.log.info.Bytes += pm.DBytes
	pg.log.add(txn, pg.coll, entry, int(d.conf().Int("osd_min_pg_log_entries")), int(d.conf().Int("osd_max_pg_log_entries")))
	pg.applied = pm.Entry.Ver
	done := d.store.Submit(txn)
	pg.notify()
	pg.mu.Unlock()
	if err := <-done; err != nil {
		return fmt.Errorf("osd.%d: pg %s: commit %s: %w", d.id, pg.id, pm.Entry.Ver, storeErr(err))
	}
	d.perf.shardW.Add(1)
	d.perf.shardWBytes.Add(pm.Txn.DataLen())
	return nil
}

// stats reports the PG if this OSD is its primary.
func (pg *PG) stats() (osdop.PGStats, bool) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.Interval.Primary != pg.osd.id || pg.ps.State == peering.Stray {
		return osdop.PGStats{}, false
	}
	n, misplaced := pg.rec.Count(), pg.rec.misplaced(poolSize(pg.pool))
	st := osdop.PGStats{PGID: pg.id.String(), State: pg.stateOf(n, misplaced) + pg.scrubState(), Acting: slices.Clone(pg.ps.Interval.Acting), Up: slices.Clone(pg.ps.Interval.Up),
		LastUpdate: pg.log.info.LastUpdate.String(), Objects: pg.log.info.Objects, Bytes: pg.log.info.Bytes,
		LastScrub: pg.scrub.last, LastDeepScrub: pg.scrub.lastDeep, ScrubErrors: pg.scrub.errors,
		ToRecover: n, Misplaced: misplaced, Size: poolSize(pg.pool), BlockedBy: pg.blockedBy()}
	if r := pg.rec; r != nil && n > 0 {
		st.RecoveryTotal, st.RecoveryStart = max(r.total, n), r.start
	}
	if pg.scrub.running != scrubNone {
		st.ScrubObjects, st.ScrubStart = pg.scrub.compared, pg.scrub.start
	}
	return st, true
}

// blockedBy is what the PG waits for while it is down or incomplete
// (pg.mu held).
func (pg *PG) blockedBy() string { return pg.ps.DownReason }

// stateName is the PG's state as Ceph names it (pg.mu is held): an active
// PG is clean when its acting set is full and every copy complete;
// otherwise undersized (a short acting set), degraded (copies missing
// with fewer than the pool's size left anywhere) and/or remapped (copies
// moving, as many as the pool's size still held, former members'
// included), recovering (backfilling for a copy rebuilt whole) or waiting
// for a recovery reservation (recovery_wait, backfill_wait) or for room
// (…_toofull), in the order of Ceph's pg_state_string.
func (pg *PG) stateName() string {
	return pg.stateOf(pg.rec.Count(), pg.rec.misplaced(poolSize(pg.pool)))
}

// stateOf is stateName given the plan's object copies to recover (n) and
// how many of them are misplaced (each is a walk of the plan).
func (pg *PG) stateOf(n, misplaced int64) string {
	if pg.unmerged { // out of service (merge.go): not active
		return "merge_failed"
	}
	if !pg.ps.State.IsActive() {
		return pg.ps.State.Name()
	}
	if !pg.ps.Interval.Undersized() && n == 0 && len(pg.ps.Interval.Backfill.OSDs) == 0 && slices.Equal(pg.ps.Interval.Acting, pg.ps.Interval.Up) {
		return "active+clean" + pg.snapTrimState()
	}
	s, backfill := "active", ""
	r := pg.rec
	if n > 0 {
		switch {
		case r.Backfill && r.toofull:
			backfill = "+backfill_toofull"
		case r.Backfill && r.running:
			backfill = "+backfilling"
		case r.Backfill:
			backfill = "+backfill_wait"
		case r.toofull:
			s += "+recovery_toofull"
		case r.running:
			s += "+recovering"
		default:
			s += "+recovery_wait"
		}
	}
	if pg.ps.Interval.Undersized() {
		s += "+undersized"
	}
	if pg.degraded(n, misplaced) {
		s += "+degraded"
	}
	if misplaced > 0 || len(pg.ps.Interval.Backfill.OSDs) > 0 || !slices.Equal(pg.ps.Interval.Acting, pg.ps.Interval.Up) {
		s += "+remapped"
	}
	return s + backfill
}

// isClean: active, a full acting set, every copy complete, no backfill
// target (pg.mu held) — scrubs run and strays go; a pg_temp kept while
// the up set lacks down OSDs (or holds swapped positions) is clean here,
// though shown remapped.
func (pg *PG) isClean() bool {
	return pg.ps.State.IsActive() && !pg.ps.Interval.Undersized() && pg.rec.Count() == 0 && len(pg.ps.Interval.Backfill.OSDs) == 0
}

// degraded: the acting set is short, or some of the n object copies to
// recover — those not misplaced — have fewer than the pool's size of
// current copies anywhere (pg.mu held).
func (pg *PG) degraded(n, misplaced int64) bool { return pg.ps.Interval.Undersized() || n > misplaced }

func poolSize(p *osdmap.Pool) int {
	if p == nil {
		return 0
	}
	return p.Size
}

func wireEncoder(size int) *wire.Encoder { return wire.NewEncoder(make([]byte, 0, size)) }
