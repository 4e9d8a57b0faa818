package peering

import (
	"testing"

	"github.com/shoal-project/shoal/osdmap"
)

// TestIntervalUpFrom: a member that was marked down and booted again at
// the same address — seen only as a new up_from by a peer whose map
// skipped the epochs between — makes a new interval; the same map gives
// the same one.
func TestIntervalUpFrom(t *testing.T) {
	pool := &osdmap.Pool{Size: 3, MinSize: 2}
	acting, addrs := []int32{0, 1, 2}, []string{"127.0.0.1:6800/1", "127.0.0.1:6801/1", "127.0.0.1:6802/1"}
	upFrom := map[int32]osdmap.Epoch{0: 5, 1: 5, 2: 7}
	get := func(o int32) osdmap.Epoch { return upFrom[o] }
	before := IntervalID(acting, addrs, Backfill{}, acting, get, pool)
	if again := IntervalID(acting, addrs, Backfill{}, acting, get, pool); again != before {
		t.Fatal("the same mapping gave another interval")
	}
	upFrom[1] = 12 // osd.1 down at 10, up again at 12, same instance
	if IntervalID(acting, addrs, Backfill{}, acting, get, pool) == before {
		t.Fatal("a member's new up_from did not end the interval")
	}
	upFrom[1] = 5
	if IntervalID(acting, addrs, Backfill{OSDs: []int32{3}, Addrs: []string{"127.0.0.1:6803/1"}}, acting, get, pool) == before {
		t.Fatal("a backfill target did not make another interval")
	}
	if IntervalID(acting, addrs, Backfill{}, []int32{0, 1}, get, pool) == before {
		t.Fatal("another up set did not make another interval")
	}
}
