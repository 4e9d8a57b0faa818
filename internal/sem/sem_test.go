package sem_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/internal/sem"
)

// A full semaphore makes Acquire wait until a Release, or fail when its
// context ends; an oversized request waits for the whole limit.
func TestWeighted(t *testing.T) {
	var s sem.Weighted
	ctx := context.Background()
	if err := s.Acquire(ctx, 2, 3); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	err := s.Acquire(short, 2, 3)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire past the limit: %v, want the context's deadline", err)
	}
	got := make(chan error, 1)
	go func() { got <- s.Acquire(ctx, 10, 3) }() // capped at 3: needs all
	s.Release(2, 3)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	short, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
	err = s.Acquire(short, 1, 3)
	cancel()
	if err == nil {
		t.Fatal("acquired a unit while the whole limit was held")
	}
	s.Release(10, 3)
	if err := s.Acquire(ctx, 3, 3); err != nil {
		t.Fatal(err)
	}
}

// Parallel runs every index once, never more than limit at a time, and
// a limit below one still runs them, one at a time.
func TestParallel(t *testing.T) {
	for _, limit := range []int{0, 1, 3} {
		var mu sync.Mutex
		running, most := 0, 0
		ran := make([]int, 20)
		sem.Parallel(len(ran), limit, func(i int) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			ran[i]++
			mu.Lock()
			running--
			mu.Unlock()
		})
		for i, n := range ran {
			if n != 1 {
				t.Fatalf("limit %d: fn(%d) ran %d times", limit, i, n)
			}
		}
		if most > max(1, limit) {
			t.Fatalf("limit %d: %d ran at once", limit, most)
		}
	}
}
