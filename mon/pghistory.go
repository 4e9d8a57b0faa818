package mon

import (
	"fmt"
	"slices"

	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// PG history: for each PG, the acting set that last activated — recorded
// by its primary through the MONs' consensus after every member adopted
// the PG's authoritative log and before the set first serves. Every write
// acknowledged before then is in the logs of all its members, and every
// write acknowledged since was committed by all of them, so a new primary
// that reaches one of them (k, erasure-coded) can rebuild the whole
// history. It reads the record before it chooses a history, so it waits
// for those OSDs even when no OSD it can reach saw that interval (every
// one that did is down or restarted). This plays the part of Ceph's past
// intervals since last_epoch_started, which Ceph derives from the OSD map
// history and each OSD's up_thru; the record costs one batched commit per
// primary per wave of peering and no map history.

// PGHistoryUpdate records, in order, PGs' acting sets about to serve. Each
// entry carries the epoch its interval began in: it replaces the PG's
// entries of earlier intervals, and is itself ignored if one of a later
// interval is there (a record that lost the race with the next interval's
// never served: its primary sees the newer map before it would).
type PGHistoryUpdate struct {
	Entries []monc.PGInterval
}

// Apply implements Command; the update changes no map.
func (c PGHistoryUpdate) Apply(s *State) (*osdmap.Incremental, string, error) {
	for _, e := range c.Entries {
		if len(e.Acting) == 0 {
			return nil, "", fmt.Errorf("pg history: %w: pg %s: empty acting set", ErrInvalid, e.PG)
		}
	}
	return nil, fmt.Sprintf("%d pg interval(s) recorded", len(c.Entries)), nil
}

func (c PGHistoryUpdate) install(s *State) {
	if s.PGHistory == nil {
		s.PGHistory = map[osdmap.PGID][]monc.PGInterval{}
	}
	for _, e := range c.Entries {
		if _, err := s.Map.Pool(e.PG.Pool); err != nil {
			continue // the pool is gone
		}
		h := s.PGHistory[e.PG]
		if i := slices.IndexFunc(h, func(x monc.PGInterval) bool {
			return x.Epoch == e.Epoch && slices.Equal(x.Acting, e.Acting)
		}); i >= 0 {
			h[i].Recovering = e.Recovering // its primary's later word: recovered (or, peered again, recovering)
			continue
		}
		if slices.ContainsFunc(h, func(x monc.PGInterval) bool { return x.Epoch > e.Epoch }) {
			continue
		}
		h = slices.DeleteFunc(h, func(x monc.PGInterval) bool { return x.Epoch < e.Epoch })
		s.PGHistory[e.PG] = append(h, e)
	}
}

// unsettled says why pg's data may still be moving on acting, its acting
// set now ("" when it is not): it has a pg_temp (a backfill runs), its
// recorded history does not end with acting (it has not activated there
// since it last changed), or it activated there recovering and its
// primary has not recorded the end of the recovery.
func (s *State) unsettled(pg osdmap.PGID, acting []int32) string {
	if _, temp := s.Map.PGTemp[pg]; temp {
		return fmt.Sprintf("pg %s has a pg_temp (backfilling)", pg)
	}
	h := s.PGHistory[pg]
	switch {
	case len(h) == 0 || !slices.Equal(h[len(h)-1].Acting, acting):
		return fmt.Sprintf("pg %s has not activated on %v", pg, acting)
	case h[len(h)-1].Recovering:
		return fmt.Sprintf("pg %s is recovering on %v", pg, acting)
	}
	return ""
}

// History returns PG pg's recorded intervals, oldest first.
func (s *State) History(pg osdmap.PGID) []monc.PGInterval {
	return slices.Clone(s.PGHistory[pg])
}

// dropPoolHistory forgets the history of PGs whose pool is gone.
func (s *State) dropPoolHistory() {
	for pg := range s.PGHistory {
		if _, err := s.Map.Pool(pg.Pool); err != nil {
			delete(s.PGHistory, pg)
		}
	}
}

// splitHistory forgets the history of PGs that next merges away, and
// gives the PGs it splits off (pools whose pg_num grows from s.Map's)
// their parent's history: until a child first
// activates, the OSDs that hold its objects are those that held its
// parent's (each splits its copy locally, osd/split.go).
func (s *State) splitHistory(next *osdmap.Map) {
	for _, id := range next.PoolIDs() {
		np, _ := next.Pool(id)
		op, err := s.Map.Pool(id)
		if err != nil || np.PGNum == op.PGNum {
			continue
		}
		for seed := np.PGNum; seed < op.PGNum; seed++ { // merged away
			delete(s.PGHistory, osdmap.PGID{Pool: id, Seed: seed})
		}
		for seed := op.PGNum; seed < np.PGNum; seed++ {
			kid := osdmap.PGID{Pool: id, Seed: seed}
			h := s.PGHistory[osdmap.PGID{Pool: id, Seed: osdmap.SplitParent(seed, op.PGNum)}]
			if len(h) == 0 {
				continue
			}
			kh := make([]monc.PGInterval, len(h))
			for i, e := range h {
				e.PG, e.Acting = kid, slices.Clone(e.Acting)
				kh[i] = e
			}
			if s.PGHistory == nil {
				s.PGHistory = map[osdmap.PGID][]monc.PGInterval{}
			}
			s.PGHistory[kid] = kh
		}
	}
}
