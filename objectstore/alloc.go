package objectstore

import (
	"math/bits"
)

// regionBlocks is how many blocks one persisted bitmap region covers
// (4096 blocks = 16 MiB of device in a 512-byte value).
const regionBlocks = 4096

// allocator is a bitmap of used blocks with a next-fit cursor that runs
// inside a zone, the device's first blocks [0, zone): the zone grows
// (fitZone) only when less than 1/zoneSlack of it is free, so freed
// blocks are written again before blocks never written are. On a data
// device that is a sparse file this matters for CPU, not only for the
// file's size: a direct write into a hole makes the file system allocate
// blocks, and the fdatasync after it writes the new extents and the
// inode; a 64 KiB write and fdatasync cost 160–175 µs of the machine's
// CPU into a hole and 65–78 µs over written blocks (ext4 on this
// project's VM, docs/PERFORMANCE.md, 2026-11-26). The file then also
// stays as large as the most data it held, plus the slack, instead of
// growing to the device size as a cursor sweeping the whole device makes
// it. Every used block lies below the zone (blocks are allocated only in
// it, settle puts it past the highest used one, and it never shrinks), so
// used also counts the zone's used blocks. It is owned by the committer
// goroutine; StatFS reads the counters under the store's lock.
type allocator struct {
	words  []uint64 // bit set = block in use
	blocks uint64
	used   uint64 // all below zone
	cursor uint64 // next-fit position, below zone
	zone   uint64 // allocation stays below it; a multiple of 64 or blocks
}

const (
	// zoneSlack: the zone grows when less than 1/zoneSlack of it is free,
	// so the next-fit cursor keeps finding long free runs in it (freed
	// blocks come back scattered; a nearly full zone would cut writes
	// into many short runs).
	zoneSlack = 8
	// zoneStep is the least the zone grows by (blocks: 16 MiB); it grows
	// by a quarter of itself when that is more.
	zoneStep = regionBlocks
)

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

// fitZone grows the zone, if it must, so that it holds n free blocks and
// at least 1/zoneSlack of it is free; the cursor moves to the new part,
// which is free and contiguous.
func (a *allocator) fitZone(n uint64) {
	free := a.zone - a.used
	if a.zone == a.blocks || (free >= n && free*zoneSlack >= a.zone) {
		return
	}
	grow := max(n, a.zone/4, zoneStep)
	a.cursor, a.zone = a.zone, min(a.blocks, (a.zone+grow+63)/64*64)
}

// settle sets the zone after the bitmap is loaded: it ends after the
// highest used block.
func (a *allocator) settle() {
	top := uint64(0)
	for i := len(a.words) - 1; i >= 0; i-- {
		if a.words[i] != 0 {
			top = uint64(i)*64 + 64 - uint64(bits.LeadingZeros64(a.words[i]))
			break
		}
	}
	a.zone = min(a.blocks, (top+63)/64*64)
	a.cursor = 0
}

func (a *allocator) free() uint64 { return a.blocks - a.used }

// run is a physical block range.
type run struct{ start, n uint64 }

// alloc takes n blocks in the zone (grown first if it must be), from
// the cursor on, as one contiguous run where the next free one is long
// enough, else several runs; it returns nil, taking nothing, if fewer
// than n blocks are free.
func (a *allocator) alloc(n uint64) []run {
	if n == 0 {
		return nil
	}
	if n > a.free() {
		return nil
	}
	a.fitZone(n)
	var out []run
	need := n
	b := a.cursor
	scanned := uint64(0)
	for need > 0 && scanned < a.zone {
		if b >= a.zone {
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
		for b < a.zone && !a.isUsed(b) && b-start < need {
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
