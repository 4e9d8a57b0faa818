// Package bufpool is a pool of byte buffers in size classes (powers of two
// from 4 KiB to 128 MiB), so that a stream of large messages or reads
// reuses the same buffers instead of allocating — and zeroing — one each.
// Buffers of 8 KiB and more start on a page boundary (the Go allocator
// places large objects on pages), so they can be read into or written
// from with O_DIRECT.
//
// A sync.Pool loses its buffers at every garbage collection, and the Go
// runtime then returns their pages to the kernel, which faults in and
// zeroes each page of the next buffer allocated (the kernel's
// clear_page: 5.6% of the machine's CPU in a gateway during 32 MiB PUTs,
// docs/PERFORMANCE.md). So up to KeepMax bytes of returned buffers are
// kept outside the sync.Pools, across collections; only the rest go to
// them.
package bufpool

import (
	"math/bits"
	"sync"
)

var pools [16]sync.Pool

// KeepMax is how many bytes of free buffers a process keeps across
// garbage collections (64 MiB: sixteen 4 MiB chunks, the swing in
// buffers in use of a few concurrent large transfers).
const KeepMax = 64 << 20

// keepMinClass is the smallest class kept (1 MiB): smaller buffers come
// from the allocator's spans, which it reuses without faults.
var keepMinClass = class(1 << 20)

// kept holds free buffers by class, up to KeepMax bytes in all.
var kept struct {
	sync.Mutex
	bufs  [len(pools)][][]byte
	bytes int
}

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
	if c >= keepMinClass {
		if b := take(c); b != nil {
			return b[:n]
		}
	}
	if p, ok := pools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 4096<<c)
}

// take pops a kept buffer of class c, or returns nil.
func take(c int) []byte {
	kept.Lock()
	defer kept.Unlock()
	k := len(kept.bufs[c])
	if k == 0 {
		return nil
	}
	b := kept.bufs[c][k-1]
	kept.bufs[c][k-1] = nil
	kept.bufs[c] = kept.bufs[c][:k-1]
	kept.bytes -= cap(b)
	return b
}

// keep holds b (of class c) if there is room, and reports whether it did.
func keep(c int, b []byte) bool {
	kept.Lock()
	defer kept.Unlock()
	if kept.bytes+cap(b) > KeepMax {
		return false
	}
	kept.bufs[c] = append(kept.bufs[c], b)
	kept.bytes += cap(b)
	return true
}

// Put returns a buffer from Get to its pool; it must not be used after.
// Other buffers are left to the garbage collector.
func Put(b []byte) {
	c := class(cap(b))
	if c >= len(pools) || cap(b) != 4096<<c {
		return
	}
	b = b[:cap(b)]
	if c >= keepMinClass && keep(c, b) {
		return
	}
	pools[c].Put(&b)
}
