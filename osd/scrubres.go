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

// Scrub reservations (Ceph's osd_max_scrubs and its scrub reservation
// protocol): a scrub runs only once every member of the PG's acting set
// has granted it one of its osd_max_scrubs slots, so that no OSD serves
// more scrubs at once, as primary or replica, however many primaries pick
// it. A primary that cannot reserve every member gives back what it got
// and tries again later. A member forgets a grant when the primary
// releases it, or once the scrub has sent nothing for scrubGrantTTL (the
// primary died).

// scrubGrantTTL is how long a grant lasts without a scrub map request.
const scrubGrantTTL = 60 * time.Second

// errScrubBusy: a member had no scrub slot free.
var errScrubBusy = errors.New("scrub slots busy")

// scrubSlots are the scrub reservations an OSD granted, by PG, with when
// each was last used.
type scrubSlots struct {
	mu   sync.Mutex
	held map[osdmap.PGID]time.Time
}

// reserve grants PG id a slot at now, out of max, if one is free (a PG
// that holds one keeps it and refreshes it).
func (s *scrubSlots) reserve(id osdmap.PGID, now time.Time, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[osdmap.PGID]time.Time{}
	}
	for pg, at := range s.held {
		if now.Sub(at) > scrubGrantTTL {
			delete(s.held, pg)
		}
	}
	if _, ok := s.held[id]; !ok && len(s.held) >= max {
		return false
	}
	s.held[id] = now
	return true
}

// touch refreshes PG id's grant, if it holds one.
func (s *scrubSlots) touch(id osdmap.PGID, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[id]; ok {
		s.held[id] = now
	}
}

func (s *scrubSlots) release(id osdmap.PGID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, id)
}

// reserveScrub reserves a scrub slot on every member of the PG's acting
// set (this OSD first) for interval iv; it returns the function that
// releases them, or errScrubBusy (having released what it got).
func (pg *PG) reserveScrub(ctx context.Context, iv uint64, acting []int32, addrs []string) (func(), error) {
	d := pg.osd
	max := int(d.conf().Int("osd_max_scrubs"))
	if !d.scrubSlots.reserve(pg.id, d.clock.Now(), max) {
		return nil, fmt.Errorf("%w: osd.%d", errScrubBusy, d.id)
	}
	var got []int
	msg := (&peerMsg{PG: pg.id, Interval: iv}).encode()
	release := func() {
		d.scrubSlots.release(pg.id)
		for _, i := range got {
			rctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
			if _, err := d.call(rctx, acting[i], addrs[i], msgScrubRelease, msg); err != nil {
				d.log.Debug("scrub release", "pg", pg.id, "osd", acting[i], "err", err) // the grant expires
			}
			cancel()
		}
	}
	for i, o := range acting {
		if o == d.id || o == osdmap.NoOSD {
			continue
		}
		if _, err := d.call(ctx, o, addrs[i], msgScrubReserve, msg); err != nil {
			release()
			if errors.Is(err, osdop.ErrBusy) {
				return nil, fmt.Errorf("%w: osd.%d", errScrubBusy, o)
			}
			return nil, fmt.Errorf("pg %s: scrub reservation on osd.%d: %w", pg.id, o, err)
		}
		got = append(got, i)
	}
	return release, nil
}

// handleScrubReserve grants the primary of this interval a scrub slot, or
// refuses with ErrBusy.
func (pg *PG) handleScrubReserve(pm *peerMsg) error {
	if err := pg.checkMember(pm); err != nil {
		return err
	}
	d := pg.osd
	if !d.scrubSlots.reserve(pg.id, d.clock.Now(), int(d.conf().Int("osd_max_scrubs"))) {
		return fmt.Errorf("%w: osd.%d scrubs osd_max_scrubs PGs already", osdop.ErrBusy, d.id)
	}
	return nil
}
