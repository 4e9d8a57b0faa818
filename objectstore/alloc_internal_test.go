package objectstore

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// countUsed counts the used blocks in [from, to) from the bitmap; from is
// a multiple of 64.
func (a *allocator) countUsed(from, to uint64) uint64 {
	var c uint64
	for b := from; b < to; b += 64 {
		w := a.words[b/64]
		if to-b < 64 {
			w &= 1<<(to-b) - 1
		}
		c += uint64(bits.OnesCount64(w))
	}
	return c
}

// checkAlloc checks the allocator's counter against its bitmap, and that
// every used block lies below the zone (which lets used stand for the
// zone's used blocks).
func checkAlloc(t *testing.T, a *allocator) {
	t.Helper()
	if got := a.countUsed(0, a.blocks); got != a.used {
		t.Fatalf("used = %d, bitmap has %d", a.used, got)
	}
	if got := a.countUsed(0, a.zone); got != a.used {
		t.Fatalf("%d used blocks lie above the zone (%d)", a.used-got, a.zone)
	}
}

// TestAllocReusesFreedBlocks overwrites objects as a busy OSD does (each
// new run frees the oldest live one): the blocks in use stay within a
// zone a little larger than the live data, instead of sweeping the
// device, and the writes still get one contiguous run each.
func TestAllocReusesFreedBlocks(t *testing.T) {
	const blocks, runLen, live = 1 << 20, 16, 1024 // 4 GiB device, 64 KiB writes, 64 MiB live
	a := newAllocator(blocks)
	var fifo [][]run
	var top uint64
	split := 0
	for i := range 50 * live {
		rs := a.alloc(runLen)
		if rs == nil {
			t.Fatalf("alloc %d: nil with %d free", i, a.free())
		}
		if len(rs) > 1 && i > 2*live {
			split++
		}
		for _, r := range rs {
			top = max(top, r.start+r.n)
		}
		fifo = append(fifo, rs)
		if len(fifo) > live {
			for _, r := range fifo[0] {
				a.set(r.start, r.n, false)
			}
			fifo = fifo[1:]
		}
	}
	checkAlloc(t, a)
	if limit := uint64(2 * live * runLen); top > limit {
		t.Errorf("writes reached block %d for %d live blocks (limit %d): freed blocks are not reused", top, live*runLen, limit)
	}
	if split > 48*live/100 {
		t.Errorf("%d of %d allocations were split", split, 48*live)
	}
}

// TestAllocZoneGrows checks the zone's growth: a request larger than the
// zone's free blocks, and a zone less than 1/zoneSlack free, grow it; a
// full device still hands out its last scattered blocks; settle finds the
// zone of a loaded bitmap.
func TestAllocZoneGrows(t *testing.T) {
	const blocks = 100_000 // not a multiple of 64
	a := newAllocator(blocks)
	big := a.alloc(3 * zoneStep)
	if len(big) != 1 || big[0].start != 0 || a.zone < 3*zoneStep {
		t.Fatalf("first alloc: runs %v, zone %d", big, a.zone)
	}
	checkAlloc(t, a)
	// fill the device with single blocks, freeing every other one at the end
	var singles []uint64
	for a.free() > 0 {
		rs := a.alloc(1)
		if len(rs) != 1 || rs[0].n != 1 {
			t.Fatalf("alloc(1) with %d free: %v", a.free(), rs)
		}
		singles = append(singles, rs[0].start)
	}
	if a.zone != blocks {
		t.Fatalf("full device, zone %d of %d", a.zone, blocks)
	}
	if a.alloc(1) != nil {
		t.Fatal("alloc on a full device succeeded")
	}
	checkAlloc(t, a)
	for i, b := range singles {
		if i%2 == 0 {
			a.set(b, 1, false)
		}
	}
	n := uint64((len(singles) + 1) / 2)
	rs := a.alloc(n)
	var got uint64
	for _, r := range rs {
		got += r.n
	}
	if got != n || a.free() != 0 {
		t.Fatalf("alloc(%d) of the scattered free blocks gave %d blocks in %d runs, %d left free", n, got, len(rs), a.free())
	}
	checkAlloc(t, a)

	// a loaded bitmap: the zone ends after its highest used block
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		b := newAllocator(blocks)
		hi := r.Uint64N(blocks)
		b.set(hi, 1, true)
		b.set(r.Uint64N(hi+1), 1, true)
		b.settle()
		if b.zone <= hi || b.zone > min(blocks, hi+64) {
			t.Fatalf("highest used block %d: zone %d", hi, b.zone)
		}
		checkAlloc(t, b)
		rs := b.alloc(zoneStep)
		for _, x := range rs {
			if x.start+x.n > b.zone {
				t.Fatalf("run %v beyond zone %d", x, b.zone)
			}
		}
		checkAlloc(t, b)
	}
}
