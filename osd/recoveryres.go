package osd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Remote recovery reservations (Ceph's remote_reserver and
// MBackfillReserve / MRecoveryReserve): osd_max_backfills bounds the
// recoveries and backfills an OSD takes part in as the one being filled,
// as well as those it runs as primary (the local reservation, reserver.go).
// Before it copies, a primary asks every member its PG's copies go to for
// one of that member's osd_max_backfills remote slots, with the PG's
// priority; a member with none free refuses (ErrBusy) unless a holder has
// a lower priority, whose grant it revokes (Ceph's remote preemption) —
// and the primary gives back what it got and asks again later. While it
// copies, the primary renews its grants every remoteGrantRenew; a renewal
// that finds its grant revoked stops the copying (errPreempted) as a
// local preemption does. A member forgets a grant when the primary
// releases it, when the PG starts a new interval, or once it has not been
// renewed for remoteGrantTTL (the primary died). Client ops never wait
// for one: the object a client needs is recovered on demand.

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
// with priority prio: the one it holds (renewed), a free one, or the one
// of the lowest-priority holder below prio, whose grant is revoked. It
// reports whether id holds a slot.
func (s *remoteSlots) reserve(id osdmap.PGID, iv uint64, prio int, now time.Time, max int) bool {
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
	pg      *PG
	iv      uint64
	members []memberInfo
}

// reserveRemote asks every member in members (not this OSD) for a remote
// slot with priority prio, for interval iv. On errRemoteBusy (or any
// error) it has released what it got.
func (pg *PG) reserveRemote(ctx context.Context, iv uint64, prio int, members []memberInfo) (*remoteReservation, error) {
	rr := &remoteReservation{pg: pg, iv: iv}
	for _, m := range members {
		if m.id == pg.osd.id {
			continue
		}
		if err := pg.remoteCall(ctx, m, msgRecoveryReserve, iv, prio); err != nil {
			rr.release()
			if errors.Is(err, osdop.ErrBusy) {
				return nil, fmt.Errorf("%w: osd.%d", errRemoteBusy, m.id)
			}
			return nil, fmt.Errorf("pg %s: recovery reservation on osd.%d: %w", pg.id, m.id, err)
		}
		rr.members = append(rr.members, m)
	}
	return rr, nil
}

// renew renews every grant; errPreempted if a member revoked one.
func (rr *remoteReservation) renew(ctx context.Context) error {
	for _, m := range rr.members {
		err := rr.pg.remoteCall(ctx, m, msgRecoveryRenew, rr.iv, 0)
		if errors.Is(err, osdop.ErrBusy) {
			return fmt.Errorf("%w (osd.%d revoked its grant)", errPreempted, m.id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// release gives every grant back (best effort: a grant not released
// expires).
func (rr *remoteReservation) release() {
	if rr == nil {
		return
	}
	d := rr.pg.osd
	for _, m := range rr.members {
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		if err := rr.pg.remoteCall(ctx, m, msgRecoveryRelease, rr.iv, 0); err != nil {
			d.log.Debug("recovery reservation release", "pg", rr.pg.id, "osd", m.id, "err", err)
		}
		cancel()
	}
	rr.members = nil
}

func (pg *PG) remoteCall(ctx context.Context, m memberInfo, typ uint16, iv uint64, prio int) error {
	_, err := pg.osd.call(ctx, m.id, m.addr, typ, (&peerMsg{PG: pg.id, Interval: iv, Prio: prio}).encode())
	return err
}

// handleRecoveryReserve grants this interval's primary a remote recovery
// slot (renewing the one it holds), or refuses with ErrBusy.
func (pg *PG) handleRecoveryReserve(pm *peerMsg) error {
	if err := pg.checkMember(pm); err != nil {
		return err
	}
	d := pg.osd
	if !d.remoteSlots.reserve(pg.id, pm.Interval, pm.Prio, time.Now(), int(d.conf().Int("osd_max_backfills"))) {
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
	if !pg.osd.remoteSlots.renew(pg.id, pm.Interval, time.Now()) {
		return fmt.Errorf("%w: osd.%d revoked the recovery reservation of pg %s", osdop.ErrBusy, pg.osd.id, pg.id)
	}
	return nil
}
