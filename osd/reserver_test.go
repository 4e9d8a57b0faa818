package osd

import (
	"context"
	"errors"
	"testing"
	"time"
)

func granted(r *reservation) bool {
	select {
	case <-r.granted:
		return true
	default:
		return false
	}
}

func isPreempted(r *reservation) bool {
	select {
	case <-r.preempted:
		return true
	default:
		return false
	}
}

// TestReserverPriorities: with one slot held by a backfill, a degraded
// PG's request preempts it (one holder at a time) and is served before a
// backfill that asked earlier; a waiter that gives up leaves the queue.
func TestReserverPriorities(t *testing.T) {
	var r reserver
	ctx := context.Background()
	back, err := r.acquire(ctx, prioBackfill, 1)
	if err != nil || isPreempted(back) {
		t.Fatalf("first backfill: %v, preempted %v", err, isPreempted(back))
	}
	type result struct {
		res *reservation
		err error
	}
	wait := func(prio int) chan result {
		ch := make(chan result, 1)
		go func() {
			res, err := r.acquire(ctx, prio, 1)
			ch <- result{res, err}
		}()
		return ch
	}
	waiters := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.waiting)
	}
	until := func(cond func() bool, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	back2 := wait(prioBackfill)
	until(func() bool { return waiters() == 1 }, "the second backfill to queue")
	if isPreempted(back) {
		t.Fatal("an equal priority preempted the holder")
	}
	deg := wait(prioDegraded)
	until(func() bool { return waiters() == 2 }, "the degraded pg to queue")
	until(func() bool { return isPreempted(back) }, "the backfill to be preempted")
	r.release(back, 1)
	got := <-deg
	if got.err != nil || !granted(got.res) {
		t.Fatalf("degraded pg after the preemption: %v", got.err)
	}
	if waiters() != 1 {
		t.Fatalf("%d waiting, want the second backfill", waiters())
	}
	// a third request gives up while queued
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	if _, err := r.acquire(short, prioBackfill, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued past its deadline: %v", err)
	}
	cancel()
	if waiters() != 1 {
		t.Fatalf("%d waiting after a waiter gave up, want 1", waiters())
	}
	r.release(got.res, 1)
	got = <-back2
	if got.err != nil || isPreempted(got.res) {
		t.Fatalf("second backfill: %v", got.err)
	}
	// a raised limit serves a degraded pg at once, preempting nobody
	deg2, err := r.acquire(ctx, prioDegraded, 2)
	if err != nil || isPreempted(got.res) {
		t.Fatalf("with two slots: %v, preempted %v", err, isPreempted(got.res))
	}
	r.release(deg2, 2)
	r.release(got.res, 2)
	if len(r.held) != 0 || len(r.waiting) != 0 {
		t.Fatalf("held %d, waiting %d at the end", len(r.held), len(r.waiting))
	}
}
