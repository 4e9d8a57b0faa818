package osd

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// Recovery priorities (Ceph's OSD_RECOVERY_PRIORITY_BASE and
// OSD_BACKFILL_PRIORITY_BASE, src/osd/osd_types.h): a PG with degraded
// objects — fewer than the pool's size of current copies anywhere — takes
// a recovery reservation before one whose data is merely misplaced.
const (
	prioBackfill = 100
	prioDegraded = 180
)

// errPreempted: a PG's recovery reservation was taken back for a PG of
// higher priority; its recovery waits for a slot again.
var errPreempted = errors.New("recovery reservation preempted by a higher-priority pg")

// reserver hands out an OSD's osd_max_backfills recovery slots by
// priority, first come first served within one, and preempts a holder of
// lower priority when a waiter of higher priority finds them all taken
// (Ceph's AsyncReserver with preemption), so that repairing degraded data
// never waits for a long backfill of misplaced data to finish.
type reserver struct {
	mu      sync.Mutex
	held    []*reservation
	waiting []*reservation // by priority, highest first, then arrival
}

// reservation is one PG's hold, or wait, on a slot.
type reservation struct {
	prio      int
	granted   chan struct{} // closed when the slot is this reservation's
	preempted chan struct{} // closed when it must give the slot back
	isPreempt bool
}

// acquire waits for a slot (at most limit held) for a PG of priority
// prio, or returns ctx's error.
func (r *reserver) acquire(ctx context.Context, prio int, limit int) (*reservation, error) {
	res := &reservation{prio: prio, granted: make(chan struct{}), preempted: make(chan struct{})}
	r.mu.Lock()
	i, _ := slices.BinarySearchFunc(r.waiting, prio, func(w *reservation, p int) int {
		if w.prio >= p {
			return -1 // ahead: higher priority, or the same and earlier
		}
		return 1
	})
	r.waiting = slices.Insert(r.waiting, i, res)
	r.dispatch(limit)
	r.mu.Unlock()
	select {
	case <-res.granted:
		return res, nil
	case <-ctx.Done():
		r.mu.Lock()
		defer r.mu.Unlock()
		select {
		case <-res.granted: // granted meanwhile: give it back
			r.drop(res, limit)
		default:
			r.waiting = slices.DeleteFunc(r.waiting, func(w *reservation) bool { return w == res })
		}
		return nil, ctx.Err()
	}
}

// release gives a granted slot back.
func (r *reserver) release(res *reservation, limit int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop(res, limit)
}

// drop removes a held reservation and hands out the slots (r.mu held).
func (r *reserver) drop(res *reservation, limit int) {
	r.held = slices.DeleteFunc(r.held, func(h *reservation) bool { return h == res })
	r.dispatch(limit)
}

// dispatch grants free slots to the first waiters, then, if a waiter
// still outranks a holder and no holder is already giving its slot back,
// preempts the holder of lowest priority (r.mu held).
func (r *reserver) dispatch(limit int) {
	for len(r.held) < limit && len(r.waiting) > 0 {
		w := r.waiting[0]
		r.waiting = r.waiting[1:]
		r.held = append(r.held, w)
		close(w.granted)
	}
	if len(r.waiting) == 0 || slices.ContainsFunc(r.held, func(h *reservation) bool { return h.isPreempt }) {
		return
	}
	var low *reservation
	for _, h := range r.held {
		if low == nil || h.prio < low.prio {
			low = h
		}
	}
	if low != nil && low.prio < r.waiting[0].prio {
		low.isPreempt = true
		close(low.preempted)
	}
}
