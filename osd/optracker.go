package osd

import (
	"sync"
	"time"
)

// opTracker holds the start time of every client op in flight on the
// OSD, so that ops blocked longer than osd_op_complaint_time are reported
// (Ceph's OpTracker and its SLOW_OPS health check: a PG stalled by a
// network cut no failure report can settle, a slow device, a PG that
// cannot peer).
type opTracker struct {
	mu   sync.Mutex
	next uint64
	ops  map[uint64]time.Time
}

// begin records an op started at start; end(id) with the id returned
// forgets it.
func (t *opTracker) begin(start time.Time) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ops == nil {
		t.ops = map[uint64]time.Time{}
	}
	t.next++
	t.ops[t.next] = start
	return t.next
}

func (t *opTracker) end(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.ops, id)
}

// slow returns how many ops in flight started before cutoff, and when
// the oldest of them started (zero if none).
func (t *opTracker) slow(cutoff time.Time) (n int, oldest time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.ops {
		if s.Before(cutoff) {
			n++
			if oldest.IsZero() || s.Before(oldest) {
				oldest = s
			}
		}
	}
	return n, oldest
}
