package sem

import "sync"

// Parallel runs fn(0), …, fn(n-1), at most limit at a time (at least
// one), and returns when all have returned. fn writes its result to its
// own index of a slice the caller owns.
func Parallel(n, limit int, fn func(i int)) {
	slots := make(chan struct{}, max(1, limit))
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			fn(i)
		})
	}
	wg.Wait()
}
