package osd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Remote recovery reservations (Ceph's remote_reserver and
// MBackfillReserve / MRecoveryReserve): osd_max_backfills bounds the
// recoveries and backfills an OSD takes part in as the one being filled,
// as well as those it runs as primary (the local reservation, reserver.go).
// Before it copies, a primary asks every member its PG's copies go to, in
// order of OSD id, for one of that member's osd_max_backfills remote
// slots, with the PG's priority; a member with none free refuses
// (ErrBusy). Only once every other member has granted does the primary
// ask the refusing ones again allowing preemption: a member then revokes
// the grant of its lowest-priority holder below the PG's priority (Ceph's
// remote preemption), so a PG blocked elsewhere takes nobody's slot. A
// primary still refused gives back what it got and asks again after
// remoteBusyRetry (jittered). While it copies, the primary renews its
// grants every remoteGrantRenew, each member on its own; a renewal that
// finds its grant revoked, or a member that has not answered one for
// remoteGrantTTL, stops the copying (errPreempted) as a local preemption
// does. A member forgets a grant when the primary releases it, when the
// PG starts a new interval there, or once it has not been renewed for
// remoteGrantTTL (the primary died). Client ops never wait for one: the
// object a client needs is recovered on demand. A member that does not
// know these messages (an OSD from before them) counts as granting.

const (
	remoteGrantTTL   = 30 * time.Second
	remoteGrantRenew = time.Second
)

// errRemoteBusy: a member had no remote recovery slot for the PG.
var errRemoteBusy = errors.New("remote recovery slots busy")

// remoteSlots are the remote recovery reservations an OSD granted, by PG.
type remoteSlots struct {
	mu   sync.Mutex
	held map[osdmap.PGID]remoteGrant
}

type remoteGrant struct {
	iv   uint64 // the interval of the primary that holds it
	prio int
	at   time.Time // granted or last renewed
}

// reserve grants PG id (its primary's interval iv) a slot of max at now
// with priority prio: the one it holds (renewed), a free one, or, if
// preempt, the one of the lowest-priority holder below prio, whose grant
// is revoked. It reports whether id holds a slot.
func (s *remoteSlots) reserve(id osdmap.PGID, iv uint64, prio int, preempt bool, now time.Time, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[osdmap.PGID]remoteGrant{}
	}
	for pg, g := range s.held {
		if now.Sub(g.at) > remoteGrantTTL {
			delete(s.held, pg)
		}
	}
	if g, ok := s.held[id]; ok && g.iv == iv {
		s.held[id] = remoteGrant{iv, prio, now}
		return true
	}
	delete(s.held, id) // an earlier interval's
	if len(s.held) >= max {
		if !preempt {
			return false
		}
		var low osdmap.PGID
		lowPrio := prio
		for pg, g := range s.held {
			if g.prio < lowPrio {
				low, lowPrio = pg, g.prio
			}
		}
		if lowPrio == prio {
			return false
		}
		delete(s.held, low) // revoked: its primary learns at its next renewal
	}
	s.held[id] = remoteGrant{iv, prio, now}
	return true
}

// renew refreshes PG id's grant for interval iv at now; false if it holds
// none (revoked, expired or released).
func (s *remoteSlots) renew(id osdmap.PGID, iv uint64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.held[id]
	if !ok || g.iv != iv || now.Sub(g.at) > remoteGrantTTL {
		return false
	}
	g.at = now
	s.held[id] = g
	return true
}

// release forgets PG id's grant of interval iv, if it holds one.
func (s *remoteSlots) release(id osdmap.PGID, iv uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.held[id]; ok && g.iv == iv {
		delete(s.held, id)
	}
}

// endInterval forgets PG id's grant unless it is to interval iv's
// primary: the PG has started interval iv here.
func (s *remoteSlots) endInterval(id osdmap.PGID, iv uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.held[id]; ok && g.iv != iv {
		delete(s.held, id)
	}
}

// remoteReservation is a primary's set of grants on the members its PG's
// copies go to.
type remoteReservation struct {
	pg     *PG
	iv     uint64
	grants []remoteHeld
}

// remoteHeld is one member's grant, with when it last answered a
// reservation or renewal.
type remoteHeld struct {
	m      memberInfo
	lastOK time.Time
}

// reserveRemote asks every member in members (not this OSD), by OSD id,
// for a remote slot with priority prio for interval iv, allowing
// preemption only of the members that refused once all the others
// granted. On errRemoteBusy (or any error) it holds nothing.
func (pg *PG) reserveRemote(ctx context.Context, iv uint64, prio int, members []memberInfo) (*remoteReservation, error) {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b memberInfo) int { return cmp.Compare(a.ID, b.ID) })
	ms = slices.CompactFunc(ms, func(a, b memberInfo) bool { return a.ID == b.ID })
	rr := &remoteReservation{pg: pg, iv: iv}
	var refused []memberInfo
	ask := func(m memberInfo, preempt bool) (granted bool, err error) {
		err = pg.remoteCall(ctx, m, msgRecoveryReserve, iv, prio, preempt)
		switch {
		case err == nil, errors.Is(err, osdop.ErrInvalid): // ErrInvalid: an OSD that predates reservations
			rr.grants = append(rr.grants, remoteHeld{m, pg.osd.clock.Now()})
			return true, nil
		case errors.Is(err, osdop.ErrBusy):
			return false, nil
		}
		pg.releaseGrant(m, iv) // it may have granted before the reply was lost
		return false, fmt.Errorf("pg %s: recovery reservation on osd.%d: %w", pg.id, m.ID, err)
	}
	for _, m := range ms {
		if m.ID == pg.osd.id {
			continue
		}
		ok, err := ask(m, false)
		if err != nil {
			rr.release()
			return nil, err
		}
		if !ok {
			refused = append(refused, m)
		}
	}
	for i, m := range refused {
		ok, err := ask(m, true)
		if err != nil || !ok {
			rr.release()
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: osd.%d (and %d more)", errRemoteBusy, m.ID, len(refused)-i-1)
		}
	}
	return rr, nil
}

// renew renews every grant, each member on its own with a timeout:
// errPreempted if a member revoked its grant, or if one has not answered
// a renewal for remoteGrantTTL (its grant may have expired).
func (rr *remoteReservation) renew(ctx context.Context) error {
	errs := make([]error, len(rr.grants))
	var wg sync.WaitGroup
	for i, g := range rr.grants {
		wg.Add(1)
		go func() { // owned by this call: waited for below
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 2*remoteGrantRenew)
			defer cancel()
			errs[i] = rr.pg.remoteCall(cctx, g.m, msgRecoveryRenew, rr.iv, 0, false)
		}()
	}
	wg.Wait()
	now := rr.pg.osd.clock.Now()
	for i, err := range errs {
		g := &rr.grants[i]
		switch {
		case err == nil, errors.Is(err, osdop.ErrInvalid):
			g.lastOK = now
		case errors.Is(err, osdop.ErrBusy):
			return fmt.Errorf("%w (osd.%d revoked its grant)", errPreempted, g.m.ID)
		case now.Sub(g.lastOK) > remoteGrantTTL:
			return fmt.Errorf("%w (osd.%d has not renewed its grant for %v: %v)", errPreempted, g.m.ID, remoteGrantTTL, err)
		}
	}
	return nil
}

// release gives every grant back, from a goroutine the OSD waits for on
// Close (best effort: a grant not released expires), so that the caller's
// local slot goes back at once.
func (rr *remoteReservation) release() {
	if rr == nil || len(rr.grants) == 0 {
		return
	}
	pg, grants := rr.pg, rr.grants
	rr.grants = nil
	pg.osd.wg.Add(1)
	go func() { // owned by the OSD: its context bounds every call
		defer pg.osd.wg.Done()
		for _, g := range grants {
			pg.releaseGrant(g.m, rr.iv)
		}
	}()
}

// remoteCall sends member m one of the reservation messages for interval
// iv; ErrBusy is a refusal.
func (pg *PG) remoteCall(ctx context.Context, m memberInfo, typ uint16, iv uint64, prio int, preempt bool) error {
	_, err := pg.osd.call(ctx, m.ID, m.Addr, typ, (&peerMsg{PG: pg.id, Interval: iv, Prio: prio, Preempt: preempt}).encode())
	return err
}

// releaseGrant tells member m that interval iv's primary is done with its
// grant, giving up after 2 s (best effort: the grant expires anyway).
func (pg *PG) releaseGrant(m memberInfo, iv uint64) {
	d := pg.osd
	ctx, cancel := context.WithTimeout(d.ctx, 2*time.Second)
	defer cancel()
	if err := pg.remoteCall(ctx, m, msgRecoveryRelease, iv, 0, false); err != nil {
		d.log.Debug("recovery reservation release", "pg", pg.id, "osd", m.ID, "err", err)
	}
}

// handleRecoveryReserve grants this interval's primary a remote recovery
// slot (renewing the one it holds), or refuses with ErrBusy.
// The interval is checked and the slot taken under pg.mu, so that a new
// interval's endInterval (setMapping, under pg.mu) cannot come between.
func (pg *PG) handleRecoveryReserve(pm *peerMsg) error {
	d := pg.osd
	max := int(d.conf().Int("osd_max_backfills"))
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if err := pg.checkMemberLocked(pm); err != nil {
		return err
	}
	if !d.remoteSlots.reserve(pg.id, pm.Interval, pm.Prio, pm.Preempt, d.clock.Now(), max) {
		return fmt.Errorf("%w: osd.%d takes osd_max_backfills recoveries already", osdop.ErrBusy, d.id)
	}
	return nil
}

// handleRecoveryRenew renews the primary's grant, or answers ErrBusy if
// it was revoked (or expired).
func (pg *PG) handleRecoveryRenew(pm *peerMsg) error {
	if err := pg.checkMember(pm); err != nil {
		return err
	}
	if !pg.osd.remoteSlots.renew(pg.id, pm.Interval, pg.osd.clock.Now()) {
		return fmt.Errorf("%w: osd.%d revoked the recovery reservation of pg %s", osdop.ErrBusy, pg.osd.id, pg.id)
	}
	return nil
}
