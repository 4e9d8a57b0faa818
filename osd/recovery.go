package osd

// Recovery of a replicated PG after activation.
//
// Peering no longer copies objects: it agrees on the authoritative log,
// works out which objects each member's copy lacks (from the logs, or
// from full listings when they do not overlap: a backfill), makes every
// member persist that missing set together with the adopted log, and
// activates the PG at once. The primary then recovers the missing
// objects in the background, its own first, under the OSD's throttles
// (osd_max_backfills reservations, osd_recovery_max_active objects at
// once, osd_recovery_sleep) and the norecover / nobackfill flags. A client
// op that needs an object first recovers that one object: a read or write
// of an object the primary lacks pulls it from a member that holds it;
// a write to an object some replicas lack goes to them as a log entry
// only (they stay missing it, and recovery later pushes the new version),
// unless fewer than min_size copies would then hold the write, in which
// case the object is recovered first. This is Ceph's scheme
// (doc/dev/osd_internals/recovery_reservation.rst, PeeringState's
// missing sets and PrimaryLogPG::maybe_kick_recovery).
//
// Erasure-coded PGs recover the same way, except that a shard is rebuilt
// by decoding k others (recoverObjectEC) and a write first rebuilds every
// shard of its object that is missing (a partial stripe write needs whole
// shards to update).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/internal/keylock"
	"github.com/shoal-project/shoal/internal/sem"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// recovery is a PG's recovery plan on its primary, made at
// peering (guarded by pg.mu): which objects each member lacks, and the
// copies reached at peering (former members included) that can give
// them (Ceph's peer_missing and missing_loc).
type recovery struct {
	// the plan peering made: the members, the copies reached, what each
	// lacks (acting members' sets shrink as recovery fills them)
	*peering.Plan
	running bool // holds a recovery reservation and copies
	toofull bool // a member that lacks objects is too full to take them
	// the copies lacked when the plan was made, and when (the PG's
	// progress in its stats)
	total int64
	start time.Time
}

// filling is the members that lack objects, other than the primary (the
// first member): those recovery copies go to.
func (r *recovery) filling() []memberInfo {
	var out []memberInfo
	for i, m := range r.Members {
		if i > 0 && len(r.Lacks[m.ID]) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// remoteBusyRetry is how long, on average (jittered by ±50%), a PG waits
// before asking its members for remote recovery slots again after one
// had none free.
const remoteBusyRetry = 500 * time.Millisecond

// Count is the number of object copies the acting members still lack
// (none without a plan).
func (r *recovery) Count() int64 {
	if r == nil {
		return 0
	}
	return r.Plan.Count()
}

// holders counts the acting members whose copy of oid is current.
func (r *recovery) holders(oid string) int { return r.current(r.Members, oid) }

// copies counts the current copies of oid among the copies reached at
// peering, former members' included.
func (r *recovery) copies(oid string) int { return r.current(r.Peers, oid) }

func (r *recovery) current(among []memberInfo, oid string) int {
	n := 0
	for _, m := range among {
		if !r.Lacks[m.ID][oid] {
			n++
		}
	}
	return n
}

// lacking is every object some acting member lacks: those the primary
// lacks first, then those with fewer than size current copies anywhere
// (degraded), then those merely misplaced — each part in name order.
func (r *recovery) lacking(size int) []string {
	self := slices.Sorted(maps.Keys(r.Lacks[r.Members[0].ID]))
	degraded, misplaced := map[string]bool{}, map[string]bool{}
	for _, m := range r.Members[1:] {
		for oid := range r.Lacks[m.ID] {
			switch {
			case r.Lacks[r.Members[0].ID][oid]:
			case r.copies(oid) < size:
				degraded[oid] = true
			default:
				misplaced[oid] = true
			}
		}
	}
	return append(append(self, slices.Sorted(maps.Keys(degraded))...), slices.Sorted(maps.Keys(misplaced))...)
}

// misplaced counts the object copies acting members lack whose object
// still has at least size current copies elsewhere (on former members):
// the data is moving, not at risk (Ceph's misplaced objects). The rest
// of count() is degraded.
func (r *recovery) misplaced(size int) int64 {
	if r == nil {
		return 0
	}
	var n int64
	for _, m := range r.Members {
		for oid := range r.Lacks[m.ID] {
			if r.copies(oid) >= size {
				n++
			}
		}
	}
	return n
}

// written records that oid changed: former members' copies of it are
// stale now (pg.mu is held).
func (r *recovery) written(oid string) {
	if r == nil {
		return
	}
	for _, p := range r.Peers {
		if !slices.ContainsFunc(r.Members, func(m memberInfo) bool { return m.ID == p.ID }) {
			r.Lacks[p.ID][oid] = true
		}
	}
}

// needsRecovery reports whether oid must be recovered before a client op
// on it: the primary lacks it, or (for a write) fewer than min_size acting
// members hold it — any member, on an erasure-coded PG, where a read needs
// k acting members that hold it. pg.mu is held.
func (pg *PG) needsRecovery(oid string, write bool) bool {
	r := pg.rec
	if r == nil {
		return false
	}
	if r.Lacks[pg.osd.id][oid] {
		return true
	}
	if r.Shards != nil {
		if write {
			return r.holders(oid) < len(r.Members)
		}
		// a read decodes from k acting shards: fewer hold the object (a
		// backfill target may hold the rest), rebuild it first
		n := 0
		for _, m := range r.Shards {
			if m != nil && !r.Lacks[m.ID][oid] {
				n++
			}
		}
		return n < r.K
	}
	return write && pg.pool != nil && r.holders(oid) < pg.pool.MinSize && r.holders(oid) < len(r.Members)
}

// recoverFor recovers oid, if a client op on it needs that, before the op
// runs; the caller holds the object's lock exclusively.
func (pg *PG) recoverFor(ctx context.Context, oid string, write bool) error {
	pg.mu.Lock()
	need := pg.needsRecovery(oid, write)
	pg.mu.Unlock()
	if !need {
		return nil
	}
	err := pg.recoverObject(ctx, oid)
	if err != nil && !errors.Is(err, osdop.ErrRetry) && !errors.Is(err, osdop.ErrNoSpace) && ctx.Err() == nil {
		// a source or target failed (died, or left the interval): the
		// client resends once the map says so
		return fmt.Errorf("%w: pg %s: recovering %s first: %v", osdop.ErrRetry, pg.id, oid, err)
	}
	return err
}

// errUnfound: no copy reached at peering holds an object's current
// version.
var errUnfound = errors.New("unfound")

// recoverObject makes every acting member's copy of oid current: the
// primary pulls it from a copy that holds it if it lacks it, then pushes
// it to the members that lack it. The caller holds the object's lock
// exclusively.
func (pg *PG) recoverObject(ctx context.Context, oid string) error {
	pg.mu.Lock()
	r, iv, pool := pg.rec, pg.ps.Interval.ID, pg.pool
	pg.mu.Unlock()
	if r == nil || pool == nil {
		return nil
	}
	be, err := pg.backend(ctx, pool)
	if err != nil {
		return err
	}
	return be.recoverObject(ctx, r, iv, oid)
}

// recoverReplicated is recoverObject on a replicated PG: the primary
// pulls the object from a copy that holds it if it lacks it, then pushes
// it whole to every member that lacks it.
func (pg *PG) recoverReplicated(ctx context.Context, r *recovery, iv uint64, oid string) error {
	d := pg.osd
	pg.mu.Lock()
	self := r.Lacks[d.id][oid]
	var src *memberInfo
	var deleted bool
	if self {
		for i := range r.Peers {
			if p := &r.Peers[i]; p.ID != d.id && !r.Lacks[p.ID][oid] {
				src = p
				break
			}
		}
		// an object the log last deletes needs no copy
		for i := len(pg.log.entries) - 1; i >= 0 && src == nil; i-- {
			if e := pg.log.entries[i]; e.OID == oid {
				deleted = e.Op == logDelete
				break
			}
		}
	}
	var targets []memberInfo
	for _, m := range r.Members[1:] {
		if r.Lacks[m.ID][oid] {
			targets = append(targets, m)
		}
	}
	pg.mu.Unlock()
	var obj *objState
	var err error
	var mem recoveryMemory
	defer mem.release()
	switch {
	case self && src == nil && !deleted:
		return fmt.Errorf("%w: pg %s: object %s is %w: no copy reached at peering holds its current version (it waits for the OSDs that held it)", osdop.ErrRetry, pg.id, oid, errUnfound)
	case self:
		obj = &objState{}
		for size := uint64(pullHint); src != nil; {
			if err := mem.hold(ctx, d, size); err != nil {
				return err
			}
			if obj, size, err = pg.pullUpTo(ctx, iv, *src, oid, size); err != nil {
				return err
			}
			if obj != nil {
				break
			}
		}
		if err := pg.push(ctx, iv, r.Members[0], oid, obj); err != nil {
			return err
		}
		pg.filled(r, d.id, oid)
	case len(targets) > 0:
		size := uint64(0)
		if st, err := d.store.Stat(pg.coll, oid); err == nil {
			size = st.Size
		}
		if err := mem.hold(ctx, d, size); err != nil {
			return err
		}
		if obj, err = pg.readWhole(oid); err != nil {
			return err
		}
	}
	for _, m := range targets {
		if err := pg.push(ctx, iv, m, oid, obj); err != nil {
			return err
		}
		pg.filled(r, m.ID, oid)
	}
	return nil
}

// filled records that member o's copy of oid is current, if the plan r
// is still the PG's.
func (pg *PG) filled(r *recovery, o int32, oid string) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.rec == r {
		delete(r.Lacks[o], oid)
		if r.Count() == 0 {
			pg.notify()
		}
	}
}

// recoverAll recovers every object the acting members lack, in the
// background after activation, until none is left or ctx ends (a new
// interval, or peering again). It waits while norecover (or, for a
// backfill, nobackfill) is set, and holds one of the OSD's
// osd_max_backfills reservations while it copies. Unfound objects are
// skipped and retried after the others.
func (pg *PG) recoverAll(ctx context.Context) {
	d := pg.osd
	pg.mu.Lock()
	r := pg.rec
	pg.mu.Unlock()
	if r == nil {
		return
	}
	var res recoveryReservation
	defer res.release()
	defer pg.mark(r, &r.running, false)
	busy := 0 // refusals of remote reservations since the PG last copied
	for attempt := 0; ctx.Err() == nil; attempt++ {
		m, mapCh := d.curMap() // before pg.mu: handleMap holds the OSD's lock, then a PG's
		pg.mu.Lock()
		if pg.rec != r {
			pg.mu.Unlock()
			return
		}
		if r.Count() == 0 {
			pg.rec = nil // complete: no plan to keep
			iv := pg.ps.Interval.ID
			pg.ps.Recovered(iv)
			pg.notify()
			pg.mu.Unlock()
			d.log.Info("recovered", "pg", pg.id)
			res.release() // before telling the members: another PG's turn
			pg.settled(iv)
			return
		}
		oids, changed, iv := r.lacking(poolSize(pg.pool)), pg.changed, pg.ps.Interval.ID
		prio := prioBackfill // merely misplaced: moving, not at risk
		if pg.degraded(r.Count(), r.misplaced(poolSize(pg.pool))) {
			prio = prioDegraded
		}
		targets := r.filling()
		toofull := r.tooFull(m) // under pg.mu: r.lacks shrinks as client ops recover objects (filled)
		pg.markLocked(r, &r.toofull, toofull)
		pg.mu.Unlock()
		if toofull || m.Flags.Has(osdmap.FlagNoRecover) || (r.Backfill && m.Flags.Has(osdmap.FlagNoBackfill)) {
			res.release()
			pg.mark(r, &r.running, false)
			select { // client ops may recover what is left meanwhile
			case <-ctx.Done():
			case <-mapCh:
			case <-changed:
			}
			continue
		}
		var unfound atomic.Int64
		err := pg.copyObjects(ctx, &res, iv, prio, targets, oids, func(oid string) error {
			if err := d.throttle(ctx, mclock.Recovery, 1, pg.recoveryBytes(r, oid)); err != nil {
				return err
			}
			unlock, err := pg.writeLock(ctx, oid, keylock.Excl)
			if err != nil {
				return err
			}
			defer unlock()
			err = pg.recoverObject(ctx, oid)
			if errors.Is(err, errUnfound) {
				unfound.Add(1)
				return nil
			}
			return err
		}, func() { pg.mark(r, &r.running, true) })
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errRemoteBusy) { // a member fills osd_max_backfills PGs already: ask again soon
			pg.mark(r, &r.running, false)
			if busy++; busy%20 == 1 {
				d.log.Info("waiting for a remote recovery reservation", "pg", pg.id, "priority", prio, "err", err)
			}
			select { // not on changed: client writes close it all the time
			case <-ctx.Done():
			case <-mapCh:
			case <-time.After(remoteBusyRetry/2 + rand.N(remoteBusyRetry)):
			}
			continue
		}
		busy = 0
		if errors.Is(err, errPreempted) { // a degraded pg's turn: wait for a slot again
			d.log.Info("recovery preempted by a higher-priority pg", "pg", pg.id, "priority", prio)
			d.perf.recoveryPreempted.Add(1)
			res.release()
			pg.mark(r, &r.running, false)
			continue
		}
		if err != nil || unfound.Load() > 0 {
			if attempt%10 == 0 {
				d.log.Warn("recovery", "pg", pg.id, "attempt", attempt+1, "unfound", unfound.Load(), "err", err)
			}
			res.release() // others may recover meanwhile
			pg.mark(r, &r.running, false)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			case <-mapCh:
				if unfound.Load() > 0 {
					// an OSD holding what is unfound may be up now: peer
					// again, which asks every former member that is
					pg.repeer()
					return
				}
			}
		}
	}
}

// recoveryBytes estimates the bytes recovering oid moves on this OSD, for
// the I/O scheduler: its size here (times the shards, which an
// erasure-coded rebuild reads and writes), or nothing if it is not here.
func (pg *PG) recoveryBytes(r *recovery, oid string) uint64 {
	st, err := pg.osd.store.Stat(pg.coll, oid)
	if err != nil {
		return 0
	}
	if r.Shards != nil {
		return st.Size * uint64(len(r.Shards))
	}
	return st.Size
}

// tooFull reports whether a member that lacks objects is too full to
// take them: backfillfull for a backfill (mon_osd_backfillfull_ratio),
// full for log-based recovery (Ceph's backfill_toofull and
// recovery_toofull). The PG waits for a map where it is not. pg.mu is
// held.
func (r *recovery) tooFull(m *osdmap.Map) bool {
	limit := osdmap.Full
	if r.Backfill {
		limit = osdmap.BackfillFull
	}
	for _, mem := range r.Members {
		if o := mem.ID; len(r.Lacks[o]) > 0 && o < m.MaxOSD() && m.OSDs[o].Fullness >= limit {
			return true
		}
	}
	return false
}

// mark sets one of plan r's state flags (&r.running, &r.toofull) to v,
// if r is still the PG's plan.
func (pg *PG) mark(r *recovery, flag *bool, v bool) {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.markLocked(r, flag, v)
}

// markLocked is mark with pg.mu held.
func (pg *PG) markLocked(r *recovery, flag *bool, v bool) {
	if pg.rec == r && *flag != v {
		*flag = v
		pg.notify()
	}
}

// recoverSelf recovers every object the primary lacks (before a listing
// of the PG, which reads the primary's store).
func (pg *PG) recoverSelf(ctx context.Context) error {
	pg.mu.Lock()
	var oids []string
	if pg.rec != nil {
		oids = slices.Sorted(maps.Keys(pg.rec.Lacks[pg.osd.id]))
	}
	pg.mu.Unlock()
	for _, oid := range oids {
		if err := pg.recoverForRead(ctx, oid); err != nil {
			return err
		}
	}
	return nil
}

// recoverForRead recovers oid if the primary lacks it, taking the
// object's lock only then (a read of a complete object takes no
// exclusive lock).
func (pg *PG) recoverForRead(ctx context.Context, oid string) error {
	pg.mu.Lock()
	need := pg.needsRecovery(oid, false)
	pg.mu.Unlock()
	if !need {
		return nil
	}
	unlock, err := pg.writeLock(ctx, oid, keylock.Excl)
	if err != nil {
		return err
	}
	defer unlock()
	return pg.recoverFor(ctx, oid, false)
}

// checkNotMissing refuses an op on an object this OSD's copy lacks, with
// kind: ErrRetry for a client op (a new interval began between its
// recovery and the op: the client resends it), ErrUnreadable for a
// primary's read of an erasure-coded shard (it decodes around it).
func (pg *PG) checkNotMissing(oid string, kind error) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.log.lacks(oid) {
		return fmt.Errorf("%w: pg %s: osd.%d has not recovered %s yet", kind, pg.id, pg.osd.id, oid)
	}
	return nil
}

// checkComplete refuses a listing while this OSD's copy lacks objects.
func (pg *PG) checkComplete() error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if n := len(pg.log.missing); n > 0 {
		return fmt.Errorf("%w: pg %s: osd.%d has %d objects to recover before it can list them", osdop.ErrRetry, pg.id, pg.osd.id, n)
	}
	return nil
}

// pullHint is the data a pull first holds memory for: larger objects are
// pulled again once their size is held.
const pullHint = 4 << 20

// recoveryMemory is the object data one recovery holds in memory, out of
// the OSD's budget: an eighth of osd_memory_target across all its
// recoveries (osd_recovery_max_active bounds their number as well).
type recoveryMemory struct {
	s        *sem.Weighted
	n, limit int64
}

// hold makes the recovery hold n bytes (an object larger than the whole
// budget waits for all of it), giving back what it held before.
func (m *recoveryMemory) hold(ctx context.Context, d *OSD, n uint64) error {
	m.release()
	limit := recoveryShare(int64(d.conf().Size("osd_memory_target")))
	if err := d.recoveryMem.Acquire(ctx, int64(n), limit); err != nil {
		return err
	}
	m.s, m.n, m.limit = &d.recoveryMem, min(int64(n), limit), limit
	return nil
}

func (m *recoveryMemory) release() {
	if m.s != nil {
		m.s.Release(m.n, m.limit)
		m.s = nil
	}
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
