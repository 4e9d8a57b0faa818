package objectstore

import (
	"math/bits"
)

// regionBlocks is how many blocks one persisted bitmap region covers
// (4096 blocks = 16 MiB of device in a 512-byte value).
const regionBlocks = 4096

// allocator is a bitmap of used blocks with a next-fit cursor. It is owned
// by the committer goroutine; StatFS reads the counters under the store's
// lock.
type allocator struct {
	words  []uint64 // bit set = block in use
	blocks uint64
	used   uint64
	cursor uint64
}

func newAllocator(blocks uint64) *allocator {
	return &allocator{words: make([]uint64, (blocks+63)/64), blocks: blocks}
}

func (a *allocator) isUsed(b uint64) bool { return a.words[b/64]&(1<<(b%64)) != 0 }

func (a *allocator) set(start, n uint64, used bool) {
	for b := start; b < start+n; b++ {
		w, m := b/64, uint64(1)<<(b%64)
		if used {
			a.words[w] |= m
		} else {
			a.words[w] &^= m
		}
	}
	if used {
		a.used += n
	} else {
		a.used -= n
	}
}

func (a *allocator) free() uint64 { return a.blocks - a.used }

// run is a physical block range.
type run struct{ start, n uint64 }

// alloc takes n blocks, preferring one contiguous run from the cursor on,
// else several runs; it returns nil, taking nothing, if fewer than n blocks
// are free.
func (a *allocator) alloc(n uint64) []run {
	if n == 0 {
		return nil
	}
	if n > a.free() {
		return nil
	}
	var out []run
	need := n
	b := a.cursor
	scanned := uint64(0)
	for need > 0 && scanned < a.blocks {
		if b >= a.blocks {
			b = 0
		}
		w := a.words[b/64] >> (b % 64)
		if w == ^uint64(0)>>(b%64) && b%64 == 0 { // whole word used
			scanned += 64
			b += 64
			continue
		}
		if w&1 != 0 { // used: skip the run of ones
			skip := uint64(bits.TrailingZeros64(^w))
			scanned += skip
			b += skip
			continue
		}
		// free run starting at b
		start := b
		for b < a.blocks && !a.isUsed(b) && b-start < need {
			b++
		}
		out = append(out, run{start, b - start})
		need -= b - start
		scanned += b - start
	}
	if need > 0 { // cannot happen while free() ≥ n; be safe
		return nil
	}
	for _, r := range out {
		a.set(r.start, r.n, true)
	}
	a.cursor = b
	return out
}

// region returns the persisted form of one bitmap region.
func (a *allocator) region(r uint64) []byte {
	out := make([]byte, regionBlocks/8)
	first := r * regionBlocks / 64
	for i := 0; i < regionBlocks/64 && first+uint64(i) < uint64(len(a.words)); i++ {
		w := a.words[first+uint64(i)]
		for j := 0; j < 8; j++ {
			out[i*8+j] = byte(w >> (8 * j))
		}
	}
	return out
}

// loadRegion restores one region from its persisted form.
func (a *allocator) loadRegion(r uint64, b []byte) {
	first := r * regionBlocks / 64
	for i := 0; i*8+7 < len(b) && first+uint64(i) < uint64(len(a.words)); i++ {
		var w uint64
		for j := 0; j < 8; j++ {
			w |= uint64(b[i*8+j]) << (8 * j)
		}
		a.used -= uint64(bits.OnesCount64(a.words[first+uint64(i)]))
		a.words[first+uint64(i)] = w
		a.used += uint64(bits.OnesCount64(w))
	}
}
