// Package bufpool is a pool of byte buffers in size classes (powers of two
// from 4 KiB to 128 MiB), so that a stream of large messages or reads
// reuses the same buffers instead of allocating — and zeroing — one each.
// Buffers of 8 KiB and more start on a page boundary (the Go allocator
// places large objects on pages), so they can be read into or written
// from with O_DIRECT.
package bufpool

import (
	"math/bits"
	"sync"
)

var pools [16]sync.Pool

func class(n int) int {
	if n <= 4096 {
		return 0
	}
	return bits.Len(uint(n-1)) - 12
}

// Get returns a buffer of length n (its contents unspecified), from a
// pool when n is at most 128 MiB.
func Get(n int) []byte {
	c := class(n)
	if c >= len(pools) {
		return make([]byte, n)
	}
	if p, ok := pools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 4096<<c)
}

// Put returns a buffer from Get to its pool; it must not be used after.
// Other buffers are left to the garbage collector.
func Put(b []byte) {
	c := class(cap(b))
	if c >= len(pools) || cap(b) != 4096<<c {
		return
	}
	b = b[:cap(b)]
	pools[c].Put(&b)
}
