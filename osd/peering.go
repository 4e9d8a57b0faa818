package osd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// The PG's peering shell: the decisions are the pure core's
// (osd/peering: Machine for intervals and states, Attempt for one
// primary's peering), and this file carries them out — queries, listings,
// log adoption, rollbacks, lease waits, pg_temp requests and activation —
// over the network and the object store.

// memberInfo is one copy's answer to the primary's query.
type memberInfo = peering.Member

// peer brings the acting set of interval iv to one history and activates
// the PG; it retries until it succeeds or the interval ends (ctx).
func (pg *PG) peer(ctx context.Context, iv uint64) {
	d := pg.osd
	for attempt := 0; ; attempt++ {
		// the intervals recorded at the MONs join those this OSD knows
		// (their members are asked too), then the PG peers
		err := pg.loadHistory(ctx)
		if err == nil {
			err = pg.peerOnce(ctx, iv)
		}
		if err == nil {
			pg.recoverAll(ctx)
			return
		}
		if ctx.Err() != nil {
			return
		}
		wait := 500 * time.Millisecond
		if errors.Is(err, errWaitActingChange) {
			wait = pgTempWait // the map that carries it ends this interval
		} else if attempt%10 == 0 {
			d.log.Warn("peering", "pg", pg.id, "attempt", attempt+1, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// peerOnce runs one peering attempt of interval iv: it starts a
// peering.Attempt from the PG's state and carries out its actions until
// the attempt ends.
func (pg *PG) peerOnce(ctx context.Context, iv uint64) error {
	d := pg.osd
	pg.mu.Lock()
	pool, isEC := pg.pool, pg.isEC
	pg.mu.Unlock()
	k := 0
	if isEC {
		cd, err := d.codec(ctx, pool)
		if err != nil {
			return err
		}
		k = cd.Profile().K
	}
	m, _ := d.curMap() // the members answer with this map or newer
	pg.mu.Lock()
	if pg.ps.Interval.ID != iv {
		pg.mu.Unlock()
		return context.Canceled
	}
	c := peering.Config{Whoami: d.id, Interval: pg.ps.Interval, Past: slices.Clone(pg.ps.Past), Strays: slices.Clone(pg.ps.Strays),
		TempAsked: pg.ps.TempAsked == iv, Map: peering.MapViewOf(m), K: k, Self: pg.localMember()}
	pg.mu.Unlock()
	run := &peerRun{pg: pg, iv: iv, m: m, leases: map[int32]map[int32]time.Time{}}
	a := peering.NewAttempt(c)
	acts := a.Start()
	for {
		ev, err := run.do(ctx, acts)
		if ev == nil || err != nil { // the attempt ended
			return err
		}
		acts = a.Step(ev)
	}
}

// localMember is this OSD's own copy as peering sees it (pg.mu held).
func (pg *PG) localMember() memberInfo {
	return memberInfo{ID: pg.osd.id, Info: pg.log.info, Entries: slices.Clone(pg.log.entries), Missing: nameSet(pg.log.missingNames())}
}

// peerRun is one attempt's shell: what it learnt that the pure core does
// not keep (the read leases the members promised, which need clocks).
type peerRun struct {
	pg     *PG
	iv     uint64
	m      *osdmap.Map
	leases map[int32]map[int32]time.Time // by member: until when it promised OSDs read leases
}

// do carries out a list of the attempt's actions and returns the answer
// to the last; or no answer when they end the attempt, with the error it
// ended with (nil: activated).
func (r *peerRun) do(ctx context.Context, acts []peering.Action) (peering.Event, error) {
	pg, d := r.pg, r.pg.osd
	for _, act := range acts {
		switch a := act.(type) {
		case peering.Progress:
			pg.mu.Lock()
			pg.ps.Progress(r.iv, a.State, a.Why)
			pg.notify()
			pg.mu.Unlock()
		case peering.MergePast:
			pg.mu.Lock()
			if pg.ps.Interval.ID == r.iv {
				pg.ps.AddPast(a.Sets)
			}
			pg.mu.Unlock()
		case peering.Query:
			var ms []memberInfo
			for _, t := range a.Targets {
				mi, err := r.query(ctx, t)
				switch {
				case err != nil && a.Optional:
					d.log.Debug("former member not asked for its shard", "pg", pg.id, "osd", t.OSD, "err", err)
				case err != nil && a.Former:
					return nil, fmt.Errorf("former member: %w", err)
				case err != nil:
					return nil, err
				default:
					ms = append(ms, mi)
				}
			}
			return peering.Infos{Members: ms}, nil
		case peering.List:
			names := map[int32][]string{}
			for _, t := range a.Targets {
				n, err := pg.list(ctx, t)
				if err != nil {
					return nil, err
				}
				names[t.OSD] = n
			}
			d.log.Info("backfill: logs do not overlap", "pg", pg.id, "listed", a.Targets)
			return peering.Listed{Names: names}, nil
		case peering.WaitLeases:
			// strays that told this OSD of their copies since the attempt
			// began are waited for too
			pg.mu.Lock()
			prior := append(slices.Clone(a.Prior), pg.ps.Strays...)
			pg.mu.Unlock()
			slices.Sort(prior)
			if err := pg.waitPriorLeases(ctx, r.iv, r.m, slices.Compact(prior), a.Reached, r.leases); err != nil {
				return nil, err
			}
			return peering.Done{}, nil
		case peering.RollBack:
			for _, t := range a.Targets {
				var err error
				if t.OSD == d.id {
					err = pg.rollback(r.iv, a.To)
				} else {
					_, err = d.call(ctx, t.OSD, t.Addr, msgECRollback, (&peerMsg{PG: pg.id, Interval: r.iv, Prev: a.To}).encode())
				}
				if err != nil {
					return nil, fmt.Errorf("roll back osd.%d to %s: %w", t.OSD, a.To, err)
				}
			}
			return peering.Done{}, nil
		case peering.SendLogs:
			for _, l := range a.Logs {
				var err error
				if l.To.OSD == d.id {
					err = pg.adoptLog(r.iv, l.Info, l.Entries, l.Missing)
				} else {
					_, err = d.call(ctx, l.To.OSD, l.To.Addr, msgPGLog, (&peerMsg{PG: pg.id, Interval: r.iv, Info: l.Info, Entries: l.Entries, Missing: l.Missing}).encode())
				}
				if err != nil {
					return nil, fmt.Errorf("log to osd.%d: %w", l.To.OSD, err)
				}
			}
			return peering.Done{}, nil
		case peering.Fail:
			return nil, fmt.Errorf("pg %s: %w", pg.id, a.Err)
		case peering.RequestPGTemp:
			pg.mu.Lock()
			acting, up := slices.Clone(pg.ps.Interval.Acting), slices.Clone(pg.ps.Interval.Up)
			pg.mu.Unlock()
			if a.Warning != "" {
				d.log.Warn(a.Warning, "pg", pg.id, "up", up, "acting", a.Want)
			}
			d.log.Info("asking for pg_temp: "+a.Why, "pg", pg.id, "acting", acting, "want", a.Want)
			return nil, d.pgTemp.request(pg, r.iv, a.Want)
		case peering.Activate:
			var rec *recovery
			if a.Plan != nil {
				rec = &recovery{Plan: a.Plan}
				d.log.Info("peered; recovering", "pg", pg.id, "from", a.Auth.ID, "object_copies", rec.Count(), "backfill", rec.Backfill, "last_update", a.Auth.Info.LastUpdate)
			}
			return nil, pg.activate(ctx, r.iv, rec)
		default:
			return nil, fmt.Errorf("pg %s: peering asked for %T", pg.id, act)
		}
	}
	return nil, fmt.Errorf("pg %s: peering's actions end without one to answer", pg.id)
}

// query asks member t for its info and log of the PG (this OSD answers
// from its own copy), and keeps the read leases it promised.
func (r *peerRun) query(ctx context.Context, t peering.Target) (memberInfo, error) {
	pg := r.pg
	if t.OSD == pg.osd.id {
		pg.mu.Lock()
		defer pg.mu.Unlock()
		return pg.localMember(), nil
	}
	b, err := pg.osd.call(ctx, t.OSD, t.Addr, msgPGQuery, (&peerMsg{PG: pg.id, Interval: r.iv}).encode())
	if err != nil {
		return memberInfo{}, fmt.Errorf("query osd.%d: %w", t.OSD, err)
	}
	pm, err := decodePeerMsg(b)
	if err != nil {
		return memberInfo{}, fmt.Errorf("query osd.%d: %w", t.OSD, err)
	}
	// an OSD asked twice (a backfill target in the past, or a requeried
	// authority) keeps the later of its promises
	ls := leaseDeadlines(pm.Leases, pg.osd.clock.Now())
	if ls == nil {
		ls = map[int32]time.Time{}
	}
	for o, u := range r.leases[t.OSD] {
		if u.After(ls[o]) {
			ls[o] = u
		}
	}
	r.leases[t.OSD] = ls
	return memberInfo{ID: t.OSD, Addr: t.Addr, Info: pm.Info, Entries: pm.Entries, Intervals: pm.Intervals, Missing: nameSet(pm.Missing)}, nil
}

// activate makes the PG serve I/O after peering in interval iv.
//
// rec is the recovery still to do: the PG serves I/O
// while the primary recovers in the background, and the earlier
// intervals and members are remembered until it is done (they may hold
// the only copies of objects the acting set lacks). Without it, the
// other members are told at once that the earlier intervals are settled.
func (pg *PG) activate(ctx context.Context, iv uint64, rec *recovery) error {
	if err := pg.recordInterval(ctx, iv); err != nil {
		return err
	}
	if err := pg.setActive(ctx, iv, rec); err != nil {
		return err
	}
	if rec == nil {
		pg.settled(iv)
	}
	return nil
}

// settled forgets the earlier intervals, here and on the other members
// (every acting copy now holds every write they took), and has the
// former members delete their copies if the PG is clean.
func (pg *PG) settled(iv uint64) {
	pg.mu.Lock()
	if pg.ps.Interval.ID != iv {
		pg.mu.Unlock()
		return
	}
	// every backfill target is complete (or the pg_temp only reorders the
	// up set): the up set takes over, unless the pg_temp still serves
	remapped, _ := pg.ps.Settled(iv)
	acting, addrs := pg.ps.Interval.Writers()
	pg.mu.Unlock()
	// the members forget the earlier intervals before the map that clears
	// a pg_temp ends this one (they would not take the message then, and
	// a backfill target that becomes primary would wait for them)
	// (all at once: a member that does not answer holds the others back
	// by no more than its own timeout)
	msg := (&peerMsg{PG: pg.id, Interval: iv}).encode()
	ctx, cancel := context.WithTimeout(pg.osd.ctx, 5*time.Second)
	var wg sync.WaitGroup
	for i, o := range acting {
		if o != pg.osd.id && o != osdmap.NoOSD {
			wg.Go(func() {
				if _, err := pg.osd.call(ctx, o, addrs[i], msgActivated, msg); err != nil {
					pg.osd.log.Warn("telling a member the pg is settled", "pg", pg.id, "osd", o, "err", err)
				}
			})
		}
	}
	wg.Wait()
	cancel()
	if remapped {
		pg.osd.log.Info("backfilled; clearing pg_temp", "pg", pg.id)
		pg.osd.pgTemp.request(pg, iv, nil)
	}
	pg.purgeStrays(iv)
}

// handleActivated: the primary's copy and every member's hold the writes
// of every earlier interval.
func (pg *PG) handleActivated(pm *peerMsg) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.ps.Settled(pm.Interval)
	return nil
}

// setActive activates the PG unless ctx, its peering's, was cancelled:
// peering began again (repeer, in the same interval, cancels it under
// pg.mu), and only the newest peering's plan may become the PG's.
func (pg *PG) setActive(ctx context.Context, iv uint64, rec *recovery) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if ctx.Err() != nil || !pg.ps.Activate(iv, rec != nil, rec != nil && rec.Backfill) {
		return context.Canceled
	}
	pg.rec = rec
	clear(pg.pending)
	pg.notify()
	return nil
}

// recoveryReservation is a PG's hold on one of its primary's
// osd_max_backfills recovery slots, taken when it first has objects to
// copy and kept until its peering attempt ends: PGs recover a few at a
// time, each as fast as it can, so they return to service one after
// another instead of all at the end (Ceph's recovery reservations).
type recoveryReservation struct {
	r      *reserver
	res    *reservation // nil: not held
	limit  int
	remote *remoteReservation // the members' grants (recoveryres.go); nil: none
}

// release gives back the members' grants, then the local slot.
func (r *recoveryReservation) release() {
	r.remote.release()
	r.remote = nil
	if r.res != nil {
		r.r.release(r.res, r.limit)
		r.res = nil
	}
}

// preempted reports whether a PG of higher priority wants the slot back.
func (r *recoveryReservation) preempted() bool {
	if r.res == nil {
		return false
	}
	select {
	case <-r.res.preempted:
		return true
	default:
		return false
	}
}

// copyObjects copies the objects with copy — up to
// osd_recovery_max_active at once on this OSD, across its PGs, so that
// recovery holds at most that many objects in memory (each at most
// osd_max_object_size) — pausing osd_recovery_sleep after each, once the
// PG holds a recovery reservation.
//
// The reservation is asked for with priority prio (prioDegraded,
// prioBackfill), first this OSD's, then a remote one on each of targets
// (the members the copies go to, in interval iv; errRemoteBusy, holding
// nothing, if one has none free); reserved, if set, is called once they
// are held. When a PG of higher priority preempts it here or on a target,
// no further copy starts and, those in flight done, copyObjects returns
// errPreempted.
func (pg *PG) copyObjects(ctx context.Context, res *recoveryReservation, iv uint64, prio int, targets []memberInfo, oids []string, copy func(oid string) error, reserved func()) error {
	if len(oids) == 0 {
		return nil
	}
	d := pg.osd
	if res.res == nil {
		limit := int(d.conf().Int("osd_max_backfills"))
		rv, err := d.reserver.acquire(ctx, prio, limit)
		if err != nil {
			return err
		}
		res.r, res.res, res.limit = &d.reserver, rv, limit
	}
	if res.remote == nil {
		rr, err := pg.reserveRemote(ctx, iv, prio, targets)
		if err != nil {
			res.release()
			return err
		}
		res.remote = rr
	}
	if reserved != nil {
		reserved()
	}
	cctx, cancel := context.WithCancel(ctx)
	var renewing sync.WaitGroup
	defer func() { cancel(); renewing.Wait() }() // the caller may release rr once this returns
	preempted := res.res.preempted
	go func() { // owned by this call: ends with cctx
		select {
		case <-preempted:
			cancel()
		case <-cctx.Done():
		}
	}()
	var remoteRevoked atomic.Bool
	if rr := res.remote; len(rr.grants) > 0 {
		renewing.Add(1)
		go func() { // owned by this call: ends with cctx, waited for
			defer renewing.Done()
			renew := time.NewTicker(remoteGrantRenew)
			defer renew.Stop()
			for {
				select {
				case <-renew.C:
				case <-cctx.Done():
					return
				}
				if err := rr.renew(cctx); errors.Is(err, errPreempted) {
					d.log.Info("remote recovery reservation revoked", "pg", pg.id, "err", err)
					remoteRevoked.Store(true)
					cancel()
					return
				}
			}
		}()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, oid := range oids {
		cfg := d.conf()
		limit := cfg.Int("osd_recovery_max_active")
		if err := d.recovering.Acquire(cctx, 1, limit); err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := copy(oid)
			if s := cfg.Seconds("osd_recovery_sleep"); s > 0 && err == nil {
				select {
				case <-cctx.Done():
				case <-time.After(time.Duration(s * float64(time.Second))):
				}
			}
			d.recovering.Release(1, limit)
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if ctx.Err() == nil && (res.preempted() || remoteRevoked.Load()) {
		return errPreempted
	}
	return ctx.Err()
}

// pull reads an object whole (data, attributes, omap; Exists false if
// absent) from member m, this OSD included.
func (pg *PG) pull(ctx context.Context, iv uint64, m memberInfo, oid string) (*objState, error) {
	obj, _, err := pg.pullUpTo(ctx, iv, m, oid, 0)
	return obj, err
}

// pullUpTo pulls an object whose data is at most max bytes (0: any size);
// a larger one is not sent: obj is nil and size says how large it is.
func (pg *PG) pullUpTo(ctx context.Context, iv uint64, m memberInfo, oid string, max uint64) (obj *objState, size uint64, err error) {
	if m.ID == pg.osd.id {
		obj, err := pg.readWhole(oid)
		return obj, 0, err
	}
	b, err := pg.osd.call(ctx, m.ID, m.Addr, msgPull, (&peerMsg{PG: pg.id, Interval: iv, OID: oid, Len: max}).encode())
	if err != nil {
		return nil, 0, fmt.Errorf("pull %s from osd.%d: %w", oid, m.ID, err)
	}
	pm, err := decodePeerMsg(b)
	if err != nil {
		return nil, 0, fmt.Errorf("pull %s from osd.%d: %w", oid, m.ID, err)
	}
	if pm.Obj == nil && max > 0 && pm.Len > max {
		return nil, pm.Len, nil
	}
	if pm.Obj == nil {
		return nil, 0, fmt.Errorf("%w: pull %s from osd.%d: no object in the reply", osdop.ErrInvalid, oid, m.ID)
	}
	return pm.Obj, 0, nil
}

// push installs obj (or its absence) as oid on member m, this OSD
// included. The caller read obj under the object's lock and holds it
// still: obj is the object as of our log's head, which the push carries
// so that a member never takes a push older than a write it logged.
func (pg *PG) push(ctx context.Context, iv uint64, m memberInfo, oid string, obj *objState) error {
	pg.mu.Lock()
	at := pg.log.info.LastUpdate
	pg.mu.Unlock()
	if m.ID == pg.osd.id {
		return pg.install(oid, obj, at)
	}
	if _, err := pg.osd.call(ctx, m.ID, m.Addr, msgPush, (&peerMsg{PG: pg.id, Interval: iv, OID: oid, Obj: obj, Prev: at}).encode()); err != nil {
		return fmt.Errorf("push %s to osd.%d: %w", oid, m.ID, err)
	}
	return nil
}

// list lists the objects of member m's copy (this OSD's included).
func (pg *PG) list(ctx context.Context, m peering.Target) ([]string, error) {
	if m.OSD == pg.osd.id {
		return pg.listLocal()
	}
	b, err := pg.osd.call(ctx, m.OSD, m.Addr, msgPGList, (&peerMsg{PG: pg.id, Interval: pg.intervalNow()}).encode())
	if err != nil {
		return nil, err
	}
	pm, err := decodePeerMsg(b)
	if err != nil {
		return nil, err
	}
	return pm.Names, nil
}

func (pg *PG) intervalNow() uint64 {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.ps.Interval.ID
}

func (pg *PG) listLocal() ([]string, error) {
	var out []string
	after := ""
	for {
		names, err := pg.osd.store.List(pg.coll, after, 1024)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !isInternal(n) {
				out = append(out, n)
			}
		}
		if len(names) < 1024 {
			return out, nil
		}
		after = names[len(names)-1]
	}
}

// readWhole reads an object with its attributes and omap.
func (pg *PG) readWhole(oid string) (*objState, error) {
	s := pg.osd.store
	data, err := s.Read(pg.coll, oid, 0, 0)
	if errors.Is(err, objectstore.ErrNotFound) {
		return &objState{}, nil
	}
	if err != nil {
		return nil, storeErr(err)
	}
	obj := &objState{Exists: true, Data: data}
	attrs, err := s.Attrs(pg.coll, oid)
	if err != nil {
		return nil, storeErr(err)
	}
	for k, v := range attrs {
		obj.Attrs = append(obj.Attrs, omap.KV{Key: k, Value: v})
	}
	after := ""
	for {
		kvs, more, err := s.OmapList(pg.coll, oid, after, "", 4096)
		if err != nil {
			return nil, storeErr(err)
		}
		obj.Omap = append(obj.Omap, kvs...)
		if !more || len(kvs) == 0 {
			return obj, nil
		}
		after = kvs[len(kvs)-1].Key
	}
}

// install replaces a local object with obj (or removes it): obj is the
// object as of version at of the PG's history. A copy this OSD lacks is
// replaced only by one at least as new as it needs (a push that was
// overtaken by a write this OSD logged is refused) and is then no longer
// missing.
func (pg *PG) install(oid string, obj *objState, at Version) error {
	if obj == nil {
		return fmt.Errorf("%w: push of %s without an object", osdop.ErrInvalid, oid)
	}
	t := &objectstore.Transaction{}
	if _, err := pg.osd.store.Stat(pg.coll, oid); err == nil {
		t.Remove(pg.coll, oid)
	}
	if obj.Exists {
		t.Touch(pg.coll, oid)
		t.Write(pg.coll, oid, 0, obj.Data)
		for _, a := range obj.Attrs {
			t.SetAttr(pg.coll, oid, a.Key, a.Value)
		}
		if len(obj.Omap) > 0 {
			t.OmapSet(pg.coll, oid, obj.Omap)
		}
	}
	pg.mu.Lock()
	need, lacked := pg.log.missing[oid]
	if lacked {
		if at.Less(need) {
			pg.mu.Unlock()
			return fmt.Errorf("%w: pg %s: %s as of %s is older than the %s osd.%d needs", osdop.ErrRetry, pg.id, oid, at, need, pg.osd.id)
		}
		t.OmapRm(metaColl, metaOID(pg.coll), []string{missingKey(oid)})
		delete(pg.log.missing, oid)
	}
	if t.Len() == 0 {
		pg.mu.Unlock()
		return nil
	}
	done := pg.osd.store.Submit(t) // in order with the PG's other transactions
	pg.mu.Unlock()
	if err := <-done; err != nil {
		if lacked {
			pg.mu.Lock()
			if !pg.log.lacks(oid) {
				pg.log.missing[oid] = need
			}
			pg.mu.Unlock()
		}
		return fmt.Errorf("install %s: %w", oid, storeErr(err))
	}
	pg.osd.perf.recoveryOps.Add(1)
	pg.osd.perf.recoveryBytes.Add(uint64(len(obj.Data)))
	return nil
}

// adoptLog makes the authoritative log ours, with the objects our copy
// lacks in it (missing).
func (pg *PG) adoptLog(iv uint64, info Info, entries []LogEntry, missing []string) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.Interval.ID != iv {
		return fmt.Errorf("%w: interval changed", osdop.ErrRetry)
	}
	// this copy's shard and rollback state stay its own
	info.Shard, info.RolledForward = pg.log.info.Shard, pg.log.info.RolledForward
	stashed := map[Version]bool{}
	if pg.isEC && pg.log.info.Shard != int32(pg.shard) {
		// a copy of another shard: none of its history or stashes apply
		pg.osd.log.Warn("holding another shard of the pg now: its copy will be rebuilt", "pg", pg.id, "was", pg.log.info.Shard, "now", pg.shard)
		info.Shard, info.RolledForward = int32(pg.shard), 0
	} else {
		for _, e := range pg.log.entries {
			stashed[e.Ver] = e.Stash
		}
	}
	entries = slices.Clone(entries)
	kept := map[uint64]bool{} // the stashes the adopted log still names
	for i := range entries {
		entries[i].Stash = stashed[entries[i].Ver]
		kept[entries[i].Ver.Seq] = entries[i].Stash
	}
	var t objectstore.Transaction
	// The stashes of writes the adopted log does not carry (divergent
	// ones, or all of another shard's copy) can never be rolled back to
	// again: remove them, or they stay for the PG's life on this OSD.
	for _, e := range pg.log.entries {
		// (a Stash entry past RolledForward has its stash, as rollForward
		// and the log's trimming rely on)
		if e.Stash && e.Ver.Seq > pg.log.info.RolledForward && !kept[e.Ver.Seq] {
			t.Remove(pg.coll, stashName(e.Ver.Seq))
		}
	}
	pg.log.replace(&t, pg.coll, info, entries, missing)
	if err := pg.osd.store.Apply(&t); err != nil {
		return fmt.Errorf("pg %s: adopt log: %w", pg.id, storeErr(err))
	}
	pg.applied = info.LastUpdate
	pg.notify()
	return nil
}

// checkInterval refuses peering messages from another interval. A stray
// (a former member) answers reads — queries, pulls and listings — for the
// new primary.
func (pg *PG) checkInterval(pm *peerMsg) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.State == peering.Stray {
		return nil
	}
	if pg.ps.Interval.ID != pm.Interval {
		return fmt.Errorf("%w: pg %s on osd.%d is in another interval", osdop.ErrRetry, pg.id, pg.osd.id)
	}
	return nil
}

func (pg *PG) handleQuery(ctx context.Context, pm *peerMsg) ([]byte, error) {
	if err := pg.checkInterval(pm); err != nil {
		return nil, err
	}
	pg.mu.Lock()
	// writes already submitted must be durable before we describe them
	reply := &peerMsg{PG: pg.id, Info: pg.log.info, Entries: append([]LogEntry(nil), pg.log.entries...), Intervals: slices.Clone(pg.ps.Past),
		Missing: pg.log.missingNames()}
	pg.mu.Unlock()
	reply.Leases = pg.osd.promises() // after the asker's map (dispatch): every promise to an OSD down in it is here
	var t objectstore.Transaction
	t.Touch(metaColl, metaOID(pg.coll))
	if err := pg.osd.store.Apply(&t); err != nil {
		return nil, storeErr(err)
	}
	return reply.encode(), nil
}

func (pg *PG) handlePull(pm *peerMsg) ([]byte, error) {
	if err := pg.checkInterval(pm); err != nil {
		return nil, err
	}
	if pm.Len > 0 { // the puller holds memory for Len bytes: larger, say how large
		if st, err := pg.osd.store.Stat(pg.coll, pm.OID); err == nil && st.Size > pm.Len {
			return (&peerMsg{PG: pg.id, OID: pm.OID, Len: st.Size}).encode(), nil
		}
	}
	obj, err := pg.readWhole(pm.OID)
	if err != nil {
		return nil, err
	}
	pg.osd.charge(mclock.Recovery, 1, uint64(len(obj.Data)))
	return (&peerMsg{PG: pg.id, OID: pm.OID, Obj: obj}).encode(), nil
}

func (pg *PG) handlePush(pm *peerMsg) error {
	if err := pg.checkWrite(pm); err != nil {
		return err
	}
	if pm.Obj != nil {
		pg.osd.charge(mclock.Recovery, 1, uint64(len(pm.Obj.Data)))
	}
	return pg.install(pm.OID, pm.Obj, pm.Prev)
}

func (pg *PG) handleLog(pm *peerMsg) error {
	if err := pg.checkWrite(pm); err != nil {
		return err
	}
	return pg.adoptLog(pm.Interval, pm.Info, pm.Entries, pm.Missing)
}

// checkWrite admits a push only from the current interval's primary.
func (pg *PG) checkWrite(pm *peerMsg) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.Interval.ID != pm.Interval || pg.ps.State != peering.ReplicaActive {
		return fmt.Errorf("%w: pg %s on osd.%d is not a replica of this interval", osdop.ErrRetry, pg.id, pg.osd.id)
	}
	return nil
}

func (pg *PG) handleList(pm *peerMsg) ([]byte, error) {
	if err := pg.checkInterval(pm); err != nil {
		return nil, err
	}
	names, err := pg.listLocal()
	if err != nil {
		return nil, storeErr(err)
	}
	return (&peerMsg{PG: pg.id, Names: names}).encode(), nil
}

func nameSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}
