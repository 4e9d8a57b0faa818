package osd

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/osdmap"
)

// TestRemoteSlots: a member grants at most max remote recovery slots; a
// PG of higher priority takes the slot of the lowest below it (whose
// renewal then fails), one of equal priority waits; grants end with
// their release, their interval or their TTL.
func TestRemoteSlots(t *testing.T) {
	a, b, c := osdmap.PGID{Pool: 1, Seed: 1}, osdmap.PGID{Pool: 1, Seed: 2}, osdmap.PGID{Pool: 1, Seed: 3}
	t0 := time.Unix(1000, 0)
	var s remoteSlots
	if !s.reserve(a, 7, prioBackfill, true, t0, 1) {
		t.Fatal("a free slot refused")
	}
	if !s.reserve(a, 7, prioBackfill, true, t0, 1) {
		t.Fatal("the holder asking again (a retried request) refused")
	}
	if s.reserve(b, 7, prioBackfill, true, t0, 1) {
		t.Fatal("a second backfill got the only slot")
	}
	if s.reserve(c, 9, prioDegraded, false, t0, 1) {
		t.Fatal("a degraded PG asking without preemption took a backfill's slot")
	}
	if !s.renew(a, 7, t0) {
		t.Fatal("a request without preemption revoked a grant")
	}
	if !s.reserve(c, 9, prioDegraded, true, t0, 1) {
		t.Fatal("a degraded PG did not preempt a backfill")
	}
	if s.renew(a, 7, t0) {
		t.Fatal("the preempted backfill's grant renewed")
	}
	if s.reserve(b, 7, prioBackfill, true, t0, 1) || s.reserve(a, 7, prioBackfill, true, t0, 1) {
		t.Fatal("a backfill took the degraded PG's slot")
	}
	s.release(c, 8) // another interval's release: not c's grant
	if !s.renew(c, 9, t0) {
		t.Fatal("a release for another interval ended the grant")
	}
	s.release(c, 9)
	if !s.reserve(b, 7, prioBackfill, true, t0, 1) {
		t.Fatal("slot not free after its release")
	}
	// renewed, it outlives the TTL; not renewed, it expires
	t1 := t0.Add(remoteGrantTTL / 2)
	if !s.renew(b, 7, t1) {
		t.Fatal("renewal refused")
	}
	if s.reserve(a, 7, prioBackfill, true, t1.Add(remoteGrantTTL/2+time.Second), 1) {
		t.Fatal("a renewed grant expired")
	}
	t2 := t1.Add(remoteGrantTTL + time.Second)
	if s.renew(b, 7, t2) || !s.reserve(a, 7, prioBackfill, true, t2, 1) {
		t.Fatal("a grant not renewed for its TTL did not expire")
	}
	// a new interval of the PG here ends its earlier primary's grant
	s.endInterval(a, 7)
	if !s.renew(a, 7, t2) {
		t.Fatal("endInterval of the grant's own interval ended it")
	}
	s.endInterval(a, 8)
	if s.renew(a, 7, t2) {
		t.Fatal("a grant outlived its interval")
	}
	// a new primary of the PG (new interval) replaces the old grant
	if !s.reserve(b, 7, prioBackfill, true, t2, 2) || !s.reserve(b, 10, prioBackfill, true, t2, 2) || s.renew(b, 7, t2) || len(s.held) != 1 {
		t.Fatalf("a PG's grant of a new interval: held %v", s.held)
	}
}
