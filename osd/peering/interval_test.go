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
	before := IntervalID(acting, addrs, Backfill{}, acting, get, pool, 0)
	if again := IntervalID(acting, addrs, Backfill{}, acting, get, pool, 0); again != before {
		t.Fatal("the same mapping gave another interval")
	}
	upFrom[1] = 12 // osd.1 down at 10, up again at 12, same instance
	if IntervalID(acting, addrs, Backfill{}, acting, get, pool, 0) == before {
		t.Fatal("a member's new up_from did not end the interval")
	}
	upFrom[1] = 5
	if IntervalID(acting, addrs, Backfill{OSDs: []int32{3}, Addrs: []string{"127.0.0.1:6803/1"}}, acting, get, pool, 0) == before {
		t.Fatal("a backfill target did not make another interval")
	}
	if IntervalID(acting, addrs, Backfill{}, []int32{0, 1}, get, pool, 0) == before {
		t.Fatal("another up set did not make another interval")
	}
}

// TestIntervalSplit: growing pg_num from 8 to 12 ends the interval of PG
// 3, which splits (child 11), and not that of PG 5, which does not.
func TestIntervalSplit(t *testing.T) {
	acting, addrs := []int32{0, 1, 2}, []string{"a", "b", "c"}
	get := func(int32) osdmap.Epoch { return 1 }
	before, after := &osdmap.Pool{Size: 3, MinSize: 2, PGNum: 8}, &osdmap.Pool{Size: 3, MinSize: 2, PGNum: 12}
	if IntervalID(acting, addrs, Backfill{}, acting, get, before, 3) == IntervalID(acting, addrs, Backfill{}, acting, get, after, 3) {
		t.Fatal("pg 3 split and kept its interval")
	}
	if IntervalID(acting, addrs, Backfill{}, acting, get, before, 5) != IntervalID(acting, addrs, Backfill{}, acting, get, after, 5) {
		t.Fatal("pg 5 did not split and got a new interval")
	}
}
