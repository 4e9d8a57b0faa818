package osd

import (
	"slices"
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

// TestRemoteSlotsQueue: a request that finds no free slot waits in the
// member's queue and gets the slot the moment it frees, queued requests
// by priority then arrival; a request that could preempt a lower holder
// is refused at once instead (its primary preempts), and so are a
// preempting ask and one that may not queue; a waiter leaves the queue
// when it settles unserved, and a new interval of its PG or its
// primary's release drops it.
func TestRemoteSlotsQueue(t *testing.T) {
	pg := func(seed uint32) osdmap.PGID { return osdmap.PGID{Pool: 1, Seed: seed} }
	t0 := time.Unix(1000, 0)
	var s remoteSlots
	if ok, _ := s.reserveOrQueue(pg(1), 7, prioDegraded, false, t0, 1, true); !ok {
		t.Fatal("a free slot refused")
	}
	ok, w2 := s.reserveOrQueue(pg(2), 7, prioBackfill, false, t0, 1, true)
	if ok || w2 == nil {
		t.Fatalf("a busy member did not queue a request: %v %v", ok, w2)
	}
	_, w3 := s.reserveOrQueue(pg(3), 7, prioDegraded, false, t0, 1, true)
	_, w4 := s.reserveOrQueue(pg(4), 7, prioBackfill, false, t0, 1, true)
	if w3 == nil || w4 == nil {
		t.Fatal("requests not queued")
	}
	if ok, w := s.reserveOrQueue(pg(5), 7, prioBackfill, false, t0, 1, false); ok || w != nil {
		t.Fatal("a request that may not queue was queued or granted")
	}
	select {
	case <-w2.done:
		t.Fatal("a waiter granted while the slot is held")
	default:
	}
	s.release(pg(1), 7)
	<-w3.done // the degraded PG first, though it came second
	if !s.settle(w3) || !s.renew(pg(3), 7, t0) {
		t.Fatal("the degraded PG's waiter was not granted the freed slot")
	}
	s.release(pg(3), 7)
	<-w2.done // then the backfills in order of arrival
	if !s.settle(w2) || s.settle(w4) {
		t.Fatal("the first backfill waiter was not served first")
	}
	if slices.Contains(s.waiting, w4) {
		t.Fatal("a settled waiter stayed queued")
	}
	// a holder of lower priority: a degraded PG is refused at once, to
	// preempt it instead of waiting
	if ok, w := s.reserveOrQueue(pg(6), 7, prioDegraded, false, t0, 1, true); ok || w != nil {
		t.Fatalf("a degraded PG queued behind a backfill: %v %v", ok, w)
	}
	// a preempting ask never waits: with no holder below it, refused
	if ok, w := s.reserveOrQueue(pg(6), 7, prioBackfill, true, t0, 1, true); ok || w != nil {
		t.Fatalf("a preempting ask with no lower holder: %v %v", ok, w)
	}
	// a new interval of a queued request's PG drops it, and so does its
	// primary's release (it gave up waiting)
	_, w7 := s.reserveOrQueue(pg(7), 7, prioBackfill, false, t0, 1, true)
	_, w8 := s.reserveOrQueue(pg(8), 7, prioBackfill, false, t0, 1, true)
	s.endInterval(pg(7), 8)
	s.release(pg(8), 7)
	<-w7.done
	<-w8.done
	if s.settle(w7) || s.settle(w8) || len(s.waiting) != 0 {
		t.Fatalf("dropped waiters granted or kept: %v", s.waiting)
	}
	if !s.renew(pg(2), 7, t0) {
		t.Fatal("dropping waiters ended the holder's grant")
	}
}
