// Package periodic runs a background worker's passes: every period, and
// at once when kicked, until its context ends.
package periodic

import (
	"context"
	"time"
)

// Every calls pass every period and each time kick receives (a nil kick
// never does) until ctx ends; it is the calling goroutine's loop.
func Every(ctx context.Context, period time.Duration, kick <-chan struct{}, pass func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		pass()
	}
}
