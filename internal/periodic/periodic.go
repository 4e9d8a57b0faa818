// Package periodic runs a background worker's passes: every period, and
// at once when kicked, until its context ends.
package periodic

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
)

// Every calls pass each period after the last pass ended, and each time
// kick receives (a nil kick never does), until ctx ends; it is the
// calling goroutine's loop. Its timer is clock's (nil: the real clock),
// and is armed only between passes: on a fake clock, once the loop
// waits on it again the pass that Advance set off has ended
// (clockwork's BlockUntilContext counts it).
func Every(ctx context.Context, clock clockwork.Clock, period time.Duration, kick <-chan struct{}, pass func()) {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	for {
		t := clock.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.Chan():
		case <-kick:
			t.Stop()
		}
		pass()
	}
}
