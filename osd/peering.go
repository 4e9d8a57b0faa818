package osd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shoal-project/shoal/objectstore"
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
	pool, isEC := pg.pool, pg.ps.Interval.EC
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
			if pg.ps.Progress(r.iv, a.State, a.Why) {
				pg.notify()
			}
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
					d.log.Debug("former member did not answer", "pg", pg.id, "osd", t.OSD, "err", err)
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
				rec = &recovery{Plan: a.Plan, start: d.clock.Now()}
				rec.total = rec.Count()
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
	if err := pg.recordInterval(ctx, iv, rec != nil); err != nil {
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
// (every acting copy now holds every write they took), has the former
// members delete their copies if the PG is clean, and records at the MONs
// that an interval recorded recovering has recovered.
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
	pg.recordRecovered(iv)
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
			if !peering.IsInternal(n) {
				out = append(out, n)
			}
		}
		if len(names) < 1024 {
			return out, nil
		}
		after = names[len(names)-1]
	}
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
	local := map[Version]LogEntry{} // this copy's entries: their stashes are its own
	if pg.ps.Interval.EC && pg.log.info.Shard != int32(pg.shard) {
		// a copy of another shard: none of its history or stashes apply
		pg.osd.log.Warn("holding another shard of the pg now: its copy will be rebuilt", "pg", pg.id, "was", pg.log.info.Shard, "now", pg.shard)
		info.Shard, info.RolledForward = int32(pg.shard), 0
	} else {
		for _, e := range pg.log.entries {
			local[e.Ver] = e
		}
	}
	entries = slices.Clone(entries)
	kept := map[uint64]bool{} // the writes whose stashes the adopted log still names
	for i := range entries {
		l, ok := local[entries[i].Ver]
		entries[i].Stash, entries[i].Stashed, entries[i].Created = l.Stash, l.Stashed, l.Created
		kept[entries[i].Ver.Seq] = ok
	}
	var t objectstore.Transaction
	// The stashes of writes the adopted log does not carry (divergent
	// ones, or all of another shard's copy) can never be rolled back to
	// again: remove them, or they stay for the PG's life on this OSD.
	for _, e := range pg.log.entries {
		// (an entry past RolledForward has its stashes, as rollForward
		// and the log's trimming rely on)
		if e.Ver.Seq > pg.log.info.RolledForward && !kept[e.Ver.Seq] {
			dropStashes(&t, pg.coll, e)
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
	if pg.unmerged { // its copy lacks the objects of PGs merged into it
		return fmt.Errorf("%w: pg %s on osd.%d waits to merge with the PGs merged into it", osdop.ErrRetry, pg.id, pg.osd.id)
	}
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
