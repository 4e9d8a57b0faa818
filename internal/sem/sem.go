// Package sem is a weighted counting semaphore whose limit is given at
// each acquire, so that a limit read from live configuration applies to
// the next waiter at once.
package sem

import (
	"context"
	"sync"
)

// Weighted counts units held (bytes, objects, …). The zero value is ready.
type Weighted struct {
	mu   sync.Mutex
	used int64
	wake chan struct{} // closed at each Release
}

// Acquire takes n units once at most limit are held with them (n is
// capped at limit, so a request larger than the whole limit waits for all
// of it), or returns ctx's error when ctx ends first.
func (s *Weighted) Acquire(ctx context.Context, n, limit int64) error {
	n = min(n, limit)
	for {
		s.mu.Lock()
		if s.used+n <= limit {
			s.used += n
			s.mu.Unlock()
			return nil
		}
		if s.wake == nil {
			s.wake = make(chan struct{})
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release returns n units taken by Acquire with the same limit.
func (s *Weighted) Release(n, limit int64) {
	n = min(n, limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used -= n
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}
