package objectstore

import (
	"bytes"
	"testing"
)

func blocks(n int, fill byte) []byte { return bytes.Repeat([]byte{fill}, n*BlockSize) }

// put stores device blocks as a second read of them does (fill twice:
// the first read only notes them unless their unit is cached).
func (c *dataCache) put(phys uint64, data []byte) {
	c.fill(phys, data)
	c.fill(phys, data)
}

// TestDataCacheUnits: runs that cross unit boundaries are stored and
// returned whole; a run is a hit only if every block is held; dropped
// blocks miss while their unit's other blocks still hit; the budget
// evicts the least recently used unit of a shard.
func TestDataCacheUnits(t *testing.T) {
	c := newDataCache(2 * cacheShards * unitBytes) // two units per shard
	run := append(blocks(10, 'a'), blocks(10, 'b')...)
	c.put(unitBlocks-4, run) // blocks 12..31: units 0 and 1
	dst := make([]byte, len(run))
	if !c.get(unitBlocks-4, 20, dst) || !bytes.Equal(dst, run) {
		t.Fatal("a run across two units: no hit, or other bytes")
	}
	one := make([]byte, BlockSize)
	if !c.get(unitBlocks+6, 1, one) || one[0] != 'b' { // block 22: the first of b
		t.Fatal("one block inside the run")
	}
	if c.get(unitBlocks-5, 2, make([]byte, 2*BlockSize)) {
		t.Fatal("a run starting before the cached blocks hit")
	}
	c.drop(unitBlocks, 1) // block 16
	if c.get(unitBlocks-4, 20, dst) {
		t.Fatal("a run over a dropped block hit")
	}
	if !c.get(unitBlocks+1, 3, make([]byte, 3*BlockSize)) {
		t.Fatal("blocks beside a dropped one missed")
	}
	c.drop(0, 2*unitBlocks)
	if c.bytes() != 0 {
		t.Fatalf("%d bytes held after dropping everything", c.bytes())
	}
	// units 0, 16 and 32 share shard 0 (cacheShards = 16); it holds two
	for i, u := range []uint64{0, cacheShards, 2 * cacheShards} {
		c.put(u*unitBlocks, blocks(1, byte('0'+i)))
		if i == 1 {
			c.get(0, 1, one) // unit 0 is now the more recent
		}
	}
	if !c.get(0, 1, one) || one[0] != '0' {
		t.Fatal("the recently read unit was evicted")
	}
	if c.get(cacheShards*unitBlocks, 1, one) {
		t.Fatal("the least recent unit was kept over budget")
	}
	if !c.get(2*cacheShards*unitBlocks, 1, one) || one[0] != '2' {
		t.Fatal("the newest unit is missing")
	}
	if c.bytes() != 2*unitBytes {
		t.Fatalf("%d bytes held, want two units", c.bytes())
	}
	if newDataCache(unitBytes) != nil {
		t.Fatal("a budget below one unit per shard made a cache")
	}
	var none *dataCache
	none.put(0, blocks(1, 'x'))
	if none.get(0, 1, one) {
		t.Fatal("the nil cache hit")
	}
}

// TestDataCachePins: blocks a zero-copy reader holds (getRef) keep their
// bytes while the cache refills their unit with other data (it writes a
// copy) and after it evicts the unit (it takes a new buffer); a run that
// misses part way pins nothing.
func TestDataCachePins(t *testing.T) {
	c := newDataCache(cacheShards * unitBytes) // one unit per shard
	c.put(0, blocks(2, 'a'))
	parts, pins, ok := c.getRef(0, 2, nil, nil)
	if !ok || len(parts) != 1 || !bytes.Equal(parts[0], blocks(2, 'a')) || len(pins) != 1 || pins[0].pins.Load() != 1 {
		t.Fatalf("getRef of two cached blocks: ok %v, %d parts, %d pins", ok, len(parts), len(pins))
	}
	c.drop(0, 1) // block 0 freed and reused for other data, read and cached
	c.put(0, blocks(1, 'b'))
	if !bytes.Equal(parts[0], blocks(2, 'a')) {
		t.Fatal("a pinned unit's buffer was written")
	}
	one := make([]byte, BlockSize)
	if !c.get(0, 1, one) || one[0] != 'b' {
		t.Fatal("the refilled block does not read back")
	}
	c.put(cacheShards*unitBlocks, blocks(1, 'c')) // shard 0's only unit is evicted
	if c.get(0, 1, one) {
		t.Fatal("the evicted unit still hits")
	}
	if !bytes.Equal(parts[0], blocks(2, 'a')) {
		t.Fatal("an evicted pinned unit's buffer was reused")
	}
	unpin(pins)
	c.put(unitBlocks, blocks(1, 'x')) // unit 1; unit 2 is not cached
	before := len(parts)
	parts, pins, ok = c.getRef(unitBlocks, unitBlocks+1, parts, nil)
	if ok || len(parts) != before || len(pins) != 0 {
		t.Fatalf("a run over a missing unit: ok %v, %d parts (had %d), %d pins", ok, len(parts), before, len(pins))
	}
	e := c.shard(1).units[1]
	if n := e.Value.(*cacheUnit).pins.Load(); n != 0 {
		t.Fatalf("the cached unit of a missed run stays pinned (%d)", n)
	}
}

// TestDataCacheAdmission: a read fills the cache only with blocks read
// before while their unit is in the ghost queue (as many units as the
// shard holds): blocks read once are not stored, nor are a unit's other
// blocks read once each (neighbouring objects in one unit); blocks read
// again are; freed blocks count as never read; a scan of more units than
// the queue holds, each read once, stores nothing and evicts nothing,
// and pushes the oldest noted units out of the queue.
func TestDataCacheAdmission(t *testing.T) {
	c := newDataCache(2 * cacheShards * unitBytes) // two units per shard
	one := make([]byte, BlockSize)
	c.fill(0, blocks(2, 'a')) // blocks 0 and 1 of unit 0
	c.fill(2, blocks(1, 'b')) // its neighbour, read once too
	if c.get(0, 1, one) || c.get(2, 1, one) || c.bytes() != 0 {
		t.Fatal("blocks read once were stored")
	}
	c.fill(1, blocks(1, 'a')) // read again
	if !c.get(1, 1, one) || one[0] != 'a' {
		t.Fatal("a block read twice was not stored")
	}
	if c.get(0, 1, one) {
		t.Fatal("a block not offered again hit")
	}
	c.fill(3, blocks(1, 'c')) // unit 0 is cached: stored at once
	if !c.get(3, 1, one) || one[0] != 'c' {
		t.Fatal("a block of a cached unit was not stored")
	}
	// freed and reused blocks: their next read is a first read
	u := uint64(cacheShards * unitBlocks) // unit 16, shard 0
	c.fill(u, blocks(1, 'x'))
	c.drop(u, 1)
	c.fill(u, blocks(1, 'y'))
	if c.get(u, 1, one) {
		t.Fatal("the first read of a freed and reused block was stored")
	}
	c.drop(u, 1)
	// shard 0 holds units 0, 16, 32...: a scan of three of them, each read
	// once, leaves unit 0 cached and notes only the last two
	for i := uint64(1); i <= 3; i++ {
		c.fill(i*cacheShards*unitBlocks+5, blocks(1, 'x'))
	}
	if c.bytes() != unitBytes || !c.get(1, 1, one) {
		t.Fatalf("after a scan: %d bytes held; want only unit 0", c.bytes())
	}
	c.fill(u+5, blocks(1, 'y')) // the oldest of the scan: forgotten, noted again
	if c.get(u+5, 1, one) {
		t.Fatal("a unit pushed out of the ghost queue was stored on its next read")
	}
	c.fill(3*u+5, blocks(1, 'z')) // still queued: stored
	if !c.get(3*u+5, 1, one) || one[0] != 'z' {
		t.Fatal("a unit still in the ghost queue was not stored on its second read")
	}
}
