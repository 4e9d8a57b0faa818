package msgr

import (
	"math/bits"
	"sync"
)

// Payload buffers come from size-classed pools (powers of two from 4 KiB
// to 128 MiB) so a stream of 4 MiB writes reuses the same buffers instead
// of allocating one per message.
var pools [16]sync.Pool

func class(n int) int {
	if n <= 4096 {
		return 0
	}
	return bits.Len(uint(n-1)) - 12
}

// getBuf returns a buffer of length n, from a pool when n is not huge.
func getBuf(n int) []byte {
	c := class(n)
	if c >= len(pools) {
		return make([]byte, n)
	}
	if p, ok := pools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 4096<<c)
}

// putBuf returns a buffer from getBuf to its pool.
func putBuf(b []byte) {
	c := class(cap(b))
	if c >= len(pools) || cap(b) != 4096<<c {
		return
	}
	b = b[:cap(b)]
	pools[c].Put(&b)
}
