package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestEveryOnFakeClock: a pass runs each time the fake clock passes the
// period, and at each kick; once the loop waits again the pass is done.
func TestEveryOnFakeClock(t *testing.T) {
	fc := clockwork.NewFakeClock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kick := make(chan struct{})
	var passes atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, fc, time.Minute, kick, func() { passes.Add(1) })
	}()
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fc.Advance(59 * time.Second)
	if n := passes.Load(); n != 0 {
		t.Fatalf("%d passes before the period", n)
	}
	fc.Advance(time.Second)
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	waitPasses(ctx, t, &passes, 1)
	kick <- struct{}{}
	waitPasses(ctx, t, &passes, 2)
	cancel()
	<-done
}

// waitPasses waits for n passes: a pass ends before the loop arms its
// timer again, but the counter may be read just before.
func waitPasses(ctx context.Context, t *testing.T, passes *atomic.Int32, n int32) {
	t.Helper()
	for passes.Load() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%d passes, want %d", passes.Load(), n)
		case <-time.After(time.Millisecond):
		}
	}
}
