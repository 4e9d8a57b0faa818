package osd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// memberInfo is one acting member's answer to the primary's query.
type memberInfo struct {
	id        int32
	addr      string
	info      Info
	entries   []LogEntry
	intervals [][]int32 // its earlier acting sets that may have taken writes
	missing   map[string]bool
	leases    map[int32]time.Time // until when it promised OSDs read leases (lease.go)
	// reset: an erasure-coded member whose copy is of another shard than
	// its position's; peering treats it as holding nothing (its history
	// says nothing of this shard), and it must adopt the log
	reset bool
}

// peer brings the acting set of interval iv to one history and activates
// the PG; it retries until it succeeds or the interval ends (ctx).
func (pg *PG) peer(ctx context.Context, iv uint64) {
	d := pg.osd
	pg.mu.Lock()
	once := pg.peerOnce
	if pg.isEC {
		once = pg.peerOnceEC
	}
	pg.mu.Unlock()
	for attempt := 0; ; attempt++ {
		// the intervals recorded at the MONs join those this OSD knows
		// (their members are asked too), then the PG peers
		err := pg.loadHistory(ctx)
		if err == nil {
			err = once(ctx, iv)
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

func (pg *PG) peerOnce(ctx context.Context, iv uint64) error {
	d := pg.osd
	pg.mu.Lock()
	if pg.interval != iv {
		pg.mu.Unlock()
		return context.Canceled
	}
	acting, targets, strays := pg.acting, pg.backfill.osds, slices.Clone(pg.strays)
	writers, addrs := pg.writers()
	self := memberInfo{id: d.id, info: pg.log.info, entries: slices.Clone(pg.log.entries), missing: nameSet(pg.log.missingNames())}
	pg.mu.Unlock()
	m, _ := d.curMap()

	// 1. every member's info, log and missing set: the acting set's, then
	// the backfill targets'
	members := []memberInfo{self}
	for i, o := range writers {
		if o == d.id || o == osdmap.NoOSD {
			continue
		}
		mi, err := pg.query(ctx, iv, o, addrs[i])
		if err != nil {
			return err
		}
		members = append(members, mi)
	}
	// earlier members that are up may hold newer writes (the PG moved),
	// or the only copies of objects the acting set lacks
	var others []memberInfo
	for _, o := range pg.formerMembers(m, members, strays, acting) {
		mi, err := pg.query(ctx, iv, o, m.OSDs[o].BackAddr())
		if err != nil {
			return fmt.Errorf("former member: %w", err)
		}
		others = append(others, mi)
	}
	// 2. the authoritative history: the newest last_update (ties: ours),
	// once every earlier interval that may have taken writes is heard from
	all := append(slices.Clone(members), others...)
	if err := pg.checkPrior(iv, all, 1); err != nil {
		return err
	}
	if err := pg.waitPriorLeases(ctx, iv, m, all); err != nil {
		return err
	}
	auth := 0
	for i, m := range all {
		if all[auth].info.LastUpdate.Less(m.info.LastUpdate) {
			auth = i
		}
	}
	// 3. what each copy lacks in that history; 4. every member adopts it
	rec, err := pg.plan(ctx, all[auth], members, all)
	if err != nil {
		return err
	}
	// 5. copies to backfill in the acting set: keep complete ones serving
	if want := pg.wantActing(rec, acting, targets); want != nil {
		d.log.Info("asking for pg_temp: complete copies serve while the up set backfills", "pg", pg.id, "acting", acting, "want", want)
		return d.pgTemp.request(pg, iv, want)
	}
	return pg.activatePlan(ctx, iv, all[auth], rec)
}

// formerMembers lists the OSDs outside acting that are up in map m and
// may hold a copy of the PG: strays, and the members of the earlier
// intervals this OSD and the reached members know of.
func (pg *PG) formerMembers(m *osdmap.Map, members []memberInfo, strays, acting []int32) []int32 {
	past := slices.Clone(strays)
	for _, mi := range members {
		for _, a := range mi.intervals {
			past = append(past, a...)
		}
	}
	pg.mu.Lock()
	for _, a := range pg.intervals {
		past = append(past, a...)
	}
	pg.mu.Unlock()
	slices.Sort(past)
	return slices.DeleteFunc(slices.Compact(past), func(o int32) bool {
		return o < 0 || o >= m.MaxOSD() || !m.OSDs[o].Up || slices.Contains(acting, o)
	})
}

// plan works out what each copy in peers — the acting members (this OSD
// first), then former members — lacks in the authoritative history a
// (Ceph's peer_missing). Internal objects (erasure-coded rollback stashes)
// are each copy's own and never recovered.
func (pg *PG) plan(ctx context.Context, a memberInfo, members, peers []memberInfo) (*recovery, error) {
	rec := &recovery{members: members, peers: peers, lacks: map[int32]map[string]bool{}, whole: map[int32]bool{}}
	for _, mi := range peers {
		set, backfill, err := pg.lacks(ctx, a, mi)
		if err != nil {
			return nil, err
		}
		maps.DeleteFunc(set, func(oid string, _ bool) bool { return isInternal(oid) })
		rec.lacks[mi.id] = set
		rec.whole[mi.id] = backfill
		rec.backfill = rec.backfill || (backfill && slices.ContainsFunc(members, func(x memberInfo) bool { return x.id == mi.id }))
	}
	return rec, nil
}

// activatePlan has every acting member adopt the authoritative log a with
// the missing set rec gives it (those that hold both already are
// skipped), then activates the PG with rec as its recovery (none if
// every copy is complete).
func (pg *PG) activatePlan(ctx context.Context, iv uint64, a memberInfo, rec *recovery) error {
	d := pg.osd
	for _, m := range rec.members {
		lacks := rec.lacks[m.id]
		if !m.reset && m.info.LastUpdate == a.info.LastUpdate && len(m.entries) == len(a.entries) && m.info.Objects == a.info.Objects && maps.Equal(m.missing, lacks) {
			continue
		}
		missing := slices.Sorted(maps.Keys(lacks))
		var err error
		if m.id == d.id {
			err = pg.adoptLog(iv, a.info, a.entries, missing)
		} else {
			_, err = d.call(ctx, m.id, m.addr, msgPGLog, (&peerMsg{PG: pg.id, Interval: iv, Info: a.info, Entries: a.entries, Missing: missing}).encode())
		}
		if err != nil {
			return fmt.Errorf("log to osd.%d: %w", m.id, err)
		}
	}
	if n := rec.count(); n > 0 {
		d.log.Info("peered; recovering", "pg", pg.id, "from", a.id, "object_copies", n, "backfill", rec.backfill, "last_update", a.info.LastUpdate)
	} else {
		rec = nil
	}
	return pg.activate(ctx, iv, rec)
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
	if pg.interval != iv {
		pg.mu.Unlock()
		return
	}
	pg.intervals = nil
	acting, addrs := pg.writers()
	// every backfill target is complete (or the pg_temp only reorders the
	// up set): the up set takes over, unless the pg_temp still serves
	remapped := len(pg.backfill.osds) > 0 || (!slices.Equal(pg.acting, pg.upSet) && !pg.tempServes())
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

// tempServes reports whether a pg_temp without backfill targets still
// serves (pg.mu held): the acting set holds every OSD of the up set and
// more (the up set lacks OSDs that are down: the pg_temp keeps their
// complete copies), or, on an erasure-coded PG, holds them at other
// positions (swapped: the pg_temp keeps shards where their OSDs hold
// them, see shardsFromFormers). A replicated pg_temp that only reorders
// the up set does not.
func (pg *PG) tempServes() bool {
	for _, o := range pg.upSet {
		if o != osdmap.NoOSD && !slices.Contains(pg.acting, o) {
			return false
		}
	}
	return pg.isEC || osdmap.Members(pg.acting) > osdmap.Members(pg.upSet)
}

// handleActivated: the primary's copy and every member's hold the writes
// of every earlier interval.
func (pg *PG) handleActivated(pm *peerMsg) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.interval == pm.Interval {
		pg.intervals = nil
	}
	return nil
}

// setActive activates the PG unless ctx, its peering's, was cancelled:
// peering began again (repeer, in the same interval, cancels it under
// pg.mu), and only the newest peering's plan may become the PG's.
func (pg *PG) setActive(ctx context.Context, iv uint64, rec *recovery) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.interval != iv || ctx.Err() != nil {
		return context.Canceled
	}
	pg.state = stateActive
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

// errPGDown means peering waits for OSDs of an earlier interval.
var errPGDown = errors.New("pg down")

// checkPrior refuses to choose a history while an earlier interval that
// may have accepted writes has fewer than need OSDs among the reached
// members (replicated: 1, every member of an interval holds its
// acknowledged writes; erasure-coded: k, to rebuild them): the PG is
// down until they return, rather than serve or roll back to an older
// history (Ceph's PriorSet "down"); an erasure-coded interval's need
// counts shards (a backfill target and the acting member of its shard
// are one). OSDs declared lost (`shoal osd lost`)
// are not waited for.
func (pg *PG) checkPrior(iv uint64, reached []memberInfo, need int) error {
	om, _ := pg.osd.curMap() // before pg.mu: the OSD's lock comes first
	pg.mu.Lock()
	defer pg.mu.Unlock()
	// every member's history: a primary that was down then knows none of it
	for _, m := range reached {
		for _, acting := range m.intervals {
			if !slices.ContainsFunc(pg.intervals, func(a []int32) bool { return slices.Equal(a, acting) }) {
				pg.intervals = append(pg.intervals, acting)
			}
		}
	}
	// an erasure-coded PG's prior sets are by position (priorSet): it
	// counts the shards reached, not the OSDs
	position := func(j int) int { return j }
	if pg.isEC && pg.pool != nil {
		position = func(j int) int { return j % pg.pool.Size }
	}
	for _, acting := range pg.intervals {
		reachedAt := map[int]bool{} // positions (replicated: entries) reached
		var missing []string
		for j, o := range acting {
			if o == osdmap.NoOSD {
				continue
			}
			if slices.ContainsFunc(reached, func(m memberInfo) bool { return m.id == o }) {
				reachedAt[position(j)] = true
			} else if o < om.MaxOSD() && om.OSDs[o].Exists && !om.OSDs[o].Lost { // a removed OSD is lost
				missing = append(missing, fmt.Sprintf("osd.%d", o))
			}
		}
		if n := len(reachedAt); n < need && len(missing) > 0 { // every OSD not reached is lost: go on without it
			why := fmt.Sprintf("acting set %v of an earlier interval may have accepted writes and %d of its OSDs are reachable (%d needed): waiting for %s",
				acting, n, need, strings.Join(missing, ", "))
			if pg.interval == iv && (pg.state == statePeering || pg.state == stateDown) {
				pg.state, pg.downReason = stateDown, why
				pg.notify()
			}
			return fmt.Errorf("%w: %s (or shoal osd lost)", errPGDown, why)
		}
	}
	return nil
}

// query asks member o (at addr) for its info and log of the PG.
func (pg *PG) query(ctx context.Context, iv uint64, o int32, addr string) (memberInfo, error) {
	b, err := pg.osd.call(ctx, o, addr, msgPGQuery, (&peerMsg{PG: pg.id, Interval: iv}).encode())
	if err != nil {
		return memberInfo{}, fmt.Errorf("query osd.%d: %w", o, err)
	}
	pm, err := decodePeerMsg(b)
	if err != nil {
		return memberInfo{}, fmt.Errorf("query osd.%d: %w", o, err)
	}
	return memberInfo{id: o, addr: addr, info: pm.Info, entries: pm.Entries, intervals: pm.Intervals, missing: nameSet(pm.Missing), leases: leaseDeadlines(pm.Leases, time.Now())}, nil
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
	if m.id == pg.osd.id {
		obj, err := pg.readWhole(oid)
		return obj, 0, err
	}
	b, err := pg.osd.call(ctx, m.id, m.addr, msgPull, (&peerMsg{PG: pg.id, Interval: iv, OID: oid, Len: max}).encode())
	if err != nil {
		return nil, 0, fmt.Errorf("pull %s from osd.%d: %w", oid, m.id, err)
	}
	pm, err := decodePeerMsg(b)
	if err != nil {
		return nil, 0, fmt.Errorf("pull %s from osd.%d: %w", oid, m.id, err)
	}
	if pm.Obj == nil && max > 0 && pm.Len > max {
		return nil, pm.Len, nil
	}
	if pm.Obj == nil {
		return nil, 0, fmt.Errorf("%w: pull %s from osd.%d: no object in the reply", osdop.ErrInvalid, oid, m.id)
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
	if m.id == pg.osd.id {
		return pg.install(oid, obj, at)
	}
	if _, err := pg.osd.call(ctx, m.id, m.addr, msgPush, (&peerMsg{PG: pg.id, Interval: iv, OID: oid, Obj: obj, Prev: at}).encode()); err != nil {
		return fmt.Errorf("push %s to osd.%d: %w", oid, m.id, err)
	}
	return nil
}

// missing lists the objects member m must receive to match the
// authoritative a: those a's log names after the last entry they share,
// plus those m wrote after it (divergent writes a never saw). When the
// logs share nothing, every object either holds (a backfill: backfill is
// true).
func (pg *PG) missing(ctx context.Context, a, m memberInfo) (oids []string, backfill bool, err error) {
	al := &pgLog{info: a.info, entries: a.entries}
	if objs, ok := al.since(m.info.LastUpdate); ok {
		return slices.Sorted(maps.Keys(objs)), false, nil
	}
	inA := map[Version]bool{a.info.LogTail: true}
	for _, e := range a.entries {
		inA[e.Ver] = true
	}
	for i := len(m.entries) - 1; i >= 0; i-- {
		if !inA[m.entries[i].Ver] {
			continue
		}
		objs, _ := al.since(m.entries[i].Ver)
		for _, e := range m.entries[i+1:] {
			objs[e.OID] = true
		}
		return slices.Sorted(maps.Keys(objs)), false, nil
	}
	// no common entry: compare full listings
	all := map[string]bool{}
	for _, mem := range []memberInfo{a, m} {
		names, err := pg.list(ctx, mem)
		if err != nil {
			return nil, false, err
		}
		for _, n := range names {
			all[n] = true
		}
	}
	pg.osd.log.Info("backfill: logs do not overlap", "pg", pg.id, "from", a.id, "to", m.id, "objects", len(all))
	return slices.Sorted(maps.Keys(all)), true, nil
}

func (pg *PG) list(ctx context.Context, m memberInfo) ([]string, error) {
	if m.id == pg.osd.id {
		return pg.listLocal()
	}
	b, err := pg.osd.call(ctx, m.id, m.addr, msgPGList, (&peerMsg{PG: pg.id, Interval: pg.intervalNow()}).encode())
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
	return pg.interval
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
	if pg.interval != iv {
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
	if pg.state == stateStray {
		return nil
	}
	if pg.interval != pm.Interval {
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
	reply := &peerMsg{PG: pg.id, Info: pg.log.info, Entries: append([]LogEntry(nil), pg.log.entries...), Intervals: slices.Clone(pg.intervals),
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
	if pg.interval != pm.Interval || pg.state != stateReplica {
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
