package osd

import (
	"context"
	"time"
)

// wake is a coalescing wake-up for a loop that serves queued work: kick
// never blocks, and kicks made while the loop is busy wake it once.
type wake chan struct{}

func newWake() wake { return make(wake, 1) }

// kick wakes the loop.
func (w wake) kick() {
	select {
	case w <- struct{}{}:
	default:
	}
}

// gather waits for a kick and then for window, during which more requests
// join the batch (the PGs of one map change peer together); false once
// ctx ends.
func (w wake) gather(ctx context.Context, window time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-w:
	}
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
