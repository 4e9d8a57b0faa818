package objectstore

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// dataCache keeps device blocks that reads fetched (BlueStore's buffer
// cache with bluestore_default_buffered_read), so that data read again —
// the hot objects of a GET workload — costs a copy instead of a direct
// device read, its system call and its checksum pass. It is keyed by
// physical block: writes are copy-on-write, so a block's contents never
// change while an onode refers to it, and a block can hold new contents
// only after it was freed. The store therefore keeps the cache exact with
// two rules:
//
//   - a block is put only by a reader, holding the store's lock shared,
//     that found it in a committed onode and verified its checksum;
//   - freed blocks are dropped by the committer holding the store's lock
//     exclusively, in the step that returns them to the allocator (after
//     every reader that could still see them has finished).
//
// Blocks are grouped in units of unitBlocks aligned on the device, each
// with a bitmap of the blocks it holds, spread over shards with a lock
// and an LRU list each; budget bounds the units' memory. Writes do not
// fill the cache (BlueStore's bluestore_default_buffered_write = false).
//
// A read fills the cache only with blocks read before (fill): the first
// read of a unit records its number and the blocks read, not their
// bytes, in a ghost queue, as 2Q's A1out (Johnson and Shasha, "2Q: A Low
// Overhead High Performance Buffer Management Replacement Algorithm",
// VLDB 1994), which holds as many units as the shard does; a read of any
// of those blocks while the unit is still queued stores the unit's blocks
// it read. Reads of other blocks of a queued unit (the neighbouring
// objects that share it) only add to its record. A stream read once —
// the sequential read of objects of any size — therefore costs no copy
// into the cache and evicts nothing, while data read again within the
// queue's reach is cached from its second read on.
//
// A zero-copy reader (getRef) gets slices of the units' buffers and
// pins the units until it has sent them; a pinned unit's buffer is never
// written again nor reused: put copies it first (copy-on-write), and an
// evicted pinned unit's buffer is left to its readers and the garbage
// collector. Pins are taken under the shard's lock, so put, holding it,
// sees every reader that may still use the buffer.
type dataCache struct {
	shards [cacheShards]cacheShard
}

const (
	unitBlocks  = 16 // 64 KiB units
	unitBytes   = unitBlocks * BlockSize
	cacheShards = 16
)

type cacheShard struct {
	mu     sync.Mutex
	units  map[uint64]*list.Element // unit number → *cacheUnit in lru
	lru    list.List                // front: most recent
	budget int                      // units this shard may hold
	ghost  ghostQueue               // units read once, not stored
}

// ghostQueue is a FIFO of at most len(ring) units, each with the mask
// of its blocks read, and a set for lookups; a unit taken out of the set
// early leaves its ring slot, which is recognized as stale by its
// sequence number when the ring wraps.
type ghostQueue struct {
	ring []ghostSlot
	next uint64               // sequence number of the next insertion
	set  map[uint64]ghostNote // unit number → its slot and blocks read
}

type ghostSlot struct{ unit, seq uint64 }

type ghostNote struct {
	seq  uint64 // of the unit's slot
	mask uint16 // blocks read
}

// reset empties the queue and sizes it to n units.
func (g *ghostQueue) reset(n int) {
	g.ring, g.next, g.set = make([]ghostSlot, n), 0, make(map[uint64]ghostNote, n)
}

// note records a read of blocks mask of unit. It reports whether any of
// them was read before while the unit is queued, taking the unit out of
// the queue if so; otherwise it adds them to the unit's record, queuing
// the unit (and forgetting the oldest if the queue is full) if it was
// not queued.
func (g *ghostQueue) note(unit uint64, mask uint16) bool {
	if n, ok := g.set[unit]; ok {
		if n.mask&mask != 0 {
			delete(g.set, unit)
			return true
		}
		n.mask |= mask
		g.set[unit] = n
		return false
	}
	slot := &g.ring[g.next%uint64(len(g.ring))]
	if n, ok := g.set[slot.unit]; ok && n.seq == slot.seq && g.next >= uint64(len(g.ring)) {
		delete(g.set, slot.unit)
	}
	*slot = ghostSlot{unit: unit, seq: g.next}
	g.set[unit] = ghostNote{seq: g.next, mask: mask}
	g.next++
	return false
}

// forget removes blocks mask from unit's record (they were freed: a
// read of what is written there next is a first read).
func (g *ghostQueue) forget(unit uint64, mask uint16) {
	if n, ok := g.set[unit]; ok {
		n.mask &^= mask
		g.set[unit] = n
	}
}

type cacheUnit struct {
	n    uint64       // unit number: device block n*unitBlocks is its first
	mask uint16       // blocks held
	buf  []byte       // unitBytes
	pins atomic.Int32 // zero-copy readers that may still use buf
}

// newDataCache returns a cache of at most budget bytes, or nil (no
// cache) if budget is below one unit per shard.
func newDataCache(budget int64) *dataCache {
	per := int(budget / unitBytes / cacheShards)
	if per < 1 {
		return nil
	}
	c := &dataCache{}
	for i := range c.shards {
		c.shards[i].units = map[uint64]*list.Element{}
		c.shards[i].budget = per
		c.shards[i].ghost.reset(per)
	}
	return c
}

func (c *dataCache) shard(unit uint64) *cacheShard { return &c.shards[unit%cacheShards] }

// span calls fn for each unit that blocks [phys, phys+n) touch, with the
// first block and the count of them in that unit; it stops if fn returns
// false.
func span(phys, n uint64, fn func(unit, first, count uint64) bool) bool {
	for b := phys; b < phys+n; {
		u := b / unitBlocks
		first := b - u*unitBlocks
		count := min(unitBlocks-first, phys+n-b)
		if !fn(u, first, count) {
			return false
		}
		b += count
	}
	return true
}

// unitMask is the mask of count blocks from first within a unit.
func unitMask(first, count uint64) uint16 { return uint16((uint32(1)<<count - 1) << first) }

// get copies device blocks [phys, phys+n) into dst (n blocks long) and
// reports whether the cache held all of them; on false, dst's contents
// are unspecified.
func (c *dataCache) get(phys, n uint64, dst []byte) bool {
	var parts [8][]byte
	var pins [8]*cacheUnit
	p, u, ok := c.getRef(phys, n, parts[:0], pins[:0])
	if !ok {
		return false
	}
	off := 0
	for _, b := range p {
		off += copy(dst[off:], b)
	}
	unpin(u)
	return true
}

// getRef appends to parts the cached device blocks [phys, phys+n) as
// slices of the cache's buffers, and to pins each unit it pinned (the
// caller unpins them with unpin once done with the slices, which it must
// not modify). It reports whether the cache held every block; on false
// it has appended and pinned nothing.
func (c *dataCache) getRef(phys, n uint64, parts [][]byte, pins []*cacheUnit) ([][]byte, []*cacheUnit, bool) {
	if c == nil {
		return parts, pins, false
	}
	np, nu := len(parts), len(pins)
	ok := span(phys, n, func(u, first, count uint64) bool {
		sh := c.shard(u)
		sh.mu.Lock()
		defer sh.mu.Unlock()
		e, ok := sh.units[u]
		if !ok {
			return false
		}
		cu := e.Value.(*cacheUnit)
		if want := unitMask(first, count); cu.mask&want != want {
			return false
		}
		cu.pins.Add(1)
		pins = append(pins, cu)
		parts = append(parts, cu.buf[first*BlockSize:(first+count)*BlockSize:(first+count)*BlockSize])
		sh.lru.MoveToFront(e)
		return true
	})
	if !ok {
		unpin(pins[nu:])
		return parts[:np], pins[:nu], false
	}
	return parts, pins, true
}

// unpin releases the units getRef pinned.
func unpin(pins []*cacheUnit) {
	for _, cu := range pins {
		cu.pins.Add(-1)
	}
}

// fill offers the cache device blocks [phys, phys+len(data)/BlockSize)
// that a reader holding the store's lock shared read and verified: it
// stores those in units already cached or read before (in the ghost
// queue) and notes the others in the queue (see dataCache).
func (c *dataCache) fill(phys uint64, data []byte) {
	if c == nil {
		return
	}
	span(phys, uint64(len(data))/BlockSize, func(u, first, count uint64) bool {
		sh := c.shard(u)
		sh.mu.Lock()
		defer sh.mu.Unlock()
		off := (u*unitBlocks + first - phys) * BlockSize // of these blocks in data
		var cu *cacheUnit
		if e, ok := sh.units[u]; ok {
			cu = e.Value.(*cacheUnit)
			sh.lru.MoveToFront(e)
			if cu.pins.Load() > 0 { // a reader may be sending from buf: write a copy
				cu.buf = append(make([]byte, 0, unitBytes), cu.buf...)
			}
		} else {
			if !sh.ghost.note(u, unitMask(first, count)) { // read once so far: remember which blocks, not their bytes
				return true
			}
			if sh.lru.Len() >= sh.budget { // evict the least recent unit, reusing its buffer if no reader holds it
				cu = sh.evictOldest()
				if cu.pins.Load() > 0 {
					cu = &cacheUnit{buf: make([]byte, unitBytes)}
				}
				cu.n, cu.mask = u, 0
			} else {
				cu = &cacheUnit{n: u, buf: make([]byte, unitBytes)}
			}
			sh.units[u] = sh.lru.PushFront(cu)
		}
		copy(cu.buf[first*BlockSize:(first+count)*BlockSize], data[off:off+count*BlockSize])
		cu.mask |= unitMask(first, count)
		return true
	})
}

// evictOldest removes the shard's least recently used unit (one must
// exist) and returns it; its buffer is the caller's, unless pinned
// (sh.mu held).
func (sh *cacheShard) evictOldest() *cacheUnit {
	old := sh.lru.Back()
	cu := old.Value.(*cacheUnit)
	delete(sh.units, cu.n)
	sh.lru.Remove(old)
	return cu
}

// drop forgets device blocks [phys, phys+n): they were freed (the caller
// holds the store's lock exclusively).
func (c *dataCache) drop(phys, n uint64) {
	if c == nil {
		return
	}
	span(phys, n, func(u, first, count uint64) bool {
		sh := c.shard(u)
		sh.mu.Lock()
		defer sh.mu.Unlock()
		sh.ghost.forget(u, unitMask(first, count))
		if e, ok := sh.units[u]; ok {
			cu := e.Value.(*cacheUnit)
			if cu.mask &^= unitMask(first, count); cu.mask == 0 {
				delete(sh.units, u)
				sh.lru.Remove(e)
			}
		}
		return true
	})
}

// resize sets the cache's budget to budget bytes (one unit per shard at
// least) and evicts the least recent units beyond it; a pinned unit's
// buffer is left to its readers. A store opened without a cache (nil)
// stays without.
func (c *dataCache) resize(budget int64) {
	if c == nil {
		return
	}
	per := max(int(budget/unitBytes/cacheShards), 1)
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		if per != sh.budget {
			sh.ghost.reset(per)
		}
		sh.budget = per
		for sh.lru.Len() > per {
			sh.evictOldest()
		}
		sh.mu.Unlock()
	}
}

// bytes is the memory the cache's units hold.
func (c *dataCache) bytes() int64 {
	if c == nil {
		return 0
	}
	var n int64
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += int64(sh.lru.Len()) * unitBytes
		sh.mu.Unlock()
	}
	return n
}
