package objectstore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"
)

// Shared blocks. Clone (and StashForRollback) gives the new object the
// source's extents instead of copying its data: both onodes then name the
// same device blocks, and copy-on-write keeps them correct — a write to
// either object goes to new blocks and only drops its reference to the
// old ones. A block named by more than one extent has an entry in the
// reference table, the count of its extra references (owners − 1); a
// block without an entry has one owner. Freeing a block (punch) lowers
// its count while it has one and returns the block to the allocator only
// when its last owner lets go. This is the role of BlueStore's shared
// blobs and their ref_map, in the simplest form that copy-on-write
// allows: a shared block is never written in place, so nothing needs to
// know which objects share it.
//
// The table is kept in memory (it holds only blocks that are shared, as
// runs: a snapshot's clone of a 4 MiB object written in one piece adds
// one run of 1,024 blocks, which overwrites of either owner split and
// shrink) and persisted per region of regionBlocks blocks, like the
// allocation bitmap:
//
//	'R' u64be(region) → runs of uvarint(offset in region), uvarint(length), uvarint(extra)
//
// written in the same Pebble batch as the onodes that change the counts.

// refRegion holds the extra reference counts of one region's shared
// blocks: runs of consecutive blocks with equal counts, sorted by offset,
// disjoint, neighbours of equal counts merged. A clone of a contiguous
// object adds one run; writes to either owner split it.
type refRegion []refRun

// refRun is blocks [off, off+n) of a region with extra references each.
type refRun struct {
	off, n uint32
	extra  uint32
}

func refKey(region uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{pRefs}, region)
}

func (r refRegion) encode() []byte {
	var b []byte
	for _, x := range r {
		b = binary.AppendUvarint(b, uint64(x.off))
		b = binary.AppendUvarint(b, uint64(x.n))
		b = binary.AppendUvarint(b, uint64(x.extra))
	}
	return b
}

func decodeRefRegion(b []byte) (refRegion, error) {
	var r refRegion
	for len(b) > 0 {
		var v [3]uint64
		for i := range v {
			x, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, fmt.Errorf("objectstore: %w: reference table run", ErrCorrupt)
			}
			v[i], b = x, b[n:]
		}
		off, n, extra := v[0], v[1], v[2]
		if n == 0 || off+n > regionBlocks || extra == 0 || extra > 1<<31 || (len(r) > 0 && uint64(r[len(r)-1].off+r[len(r)-1].n) > off) {
			return nil, fmt.Errorf("objectstore: %w: reference table run %d+%d ×%d", ErrCorrupt, off, n, extra)
		}
		r = append(r, refRun{uint32(off), uint32(n), uint32(extra)})
	}
	return r, nil
}

// get is block off's extra references.
func (r refRegion) get(off uint32) uint32 {
	i := sort.Search(len(r), func(i int) bool { return r[i].off+r[i].n > off })
	if i < len(r) && r[i].off <= off {
		return r[i].extra
	}
	return 0
}

// apply sets the count of every block of [lo, hi) to f(its count) and
// returns the region so changed, a new slice (r is not changed): run by
// run, so a clone's range costs O(runs), not O(blocks).
func (r refRegion) apply(lo, hi uint32, f func(uint32) uint32) refRegion {
	i := sort.Search(len(r), func(i int) bool { return r[i].off+r[i].n > lo })
	out := make(refRegion, i, len(r)+2)
	copy(out, r[:i])
	emit := func(s, e, c uint32) {
		if v := f(c); v != 0 && e > s {
			out = out.push(refRun{s, e - s, v})
		}
	}
	at, j := lo, i
	for ; j < len(r) && r[j].off < hi; j++ {
		x := r[j]
		if x.off < lo { // its part before lo stays as it is
			out = append(out, refRun{x.off, lo - x.off, x.extra})
		}
		emit(at, max(x.off, at), 0) // the gap before it
		s, e := max(x.off, lo), min(x.off+x.n, hi)
		emit(s, e, x.extra)
		at = e
	}
	emit(at, hi, 0)
	if j > i { // the last overlapped run's part after hi
		if x := r[j-1]; x.off+x.n > hi {
			out = out.push(refRun{hi, x.off + x.n - hi, x.extra})
		}
	}
	for _, x := range r[j:] {
		out = out.push(x)
	}
	return out
}

// push appends x, merging it into the last run if it continues it with
// the same count.
func (r refRegion) push(x refRun) refRegion {
	if k := len(r) - 1; k >= 0 && r[k].off+r[k].n == x.off && r[k].extra == x.extra {
		r[k].n += x.n
		return r
	}
	return append(r, x)
}

// blocks counts the region's shared blocks and their extra references.
func (r refRegion) blocks() (n, extra uint64) {
	for _, x := range r {
		n += uint64(x.n)
		extra += uint64(x.n) * uint64(x.extra)
	}
	return n, extra
}

// refRegion returns the group's copy of a region's counts to change (made
// from the committed table on first use).
func (g *group) refRegion(reg uint64) refRegion {
	if r, ok := g.refs[reg]; ok {
		return r
	}
	if g.refs == nil {
		g.refs = map[uint64]refRegion{}
	}
	r := slices.Clone(g.s.refs[reg])
	g.refs[reg] = r
	return r
}

// share adds a reference to blocks [start, start+n): a second extent now
// names them.
func (g *group) share(start, n uint64) {
	for b := start; b < start+n; {
		reg := b / regionBlocks
		end := min(start+n, (reg+1)*regionBlocks)
		g.refs[reg] = g.refRegion(reg).apply(uint32(b%regionBlocks), uint32(end-reg*regionBlocks), func(c uint32) uint32 { return c + 1 })
		b = end
	}
}

// free drops one reference to blocks [start, start+n): blocks with extra
// references lose one, the others are freed when the group commits.
func (g *group) free(start, n uint64) {
	if n == 0 {
		return
	}
	for b := start; b < start+n; {
		reg := b / regionBlocks
		end := min(start+n, (reg+1)*regionBlocks)
		r, changed := g.refs[reg]
		if !changed {
			r = g.s.refs[reg]
		}
		if len(r) == 0 { // nothing shared in this region
			g.freeRun(b, end-b)
			b = end
			continue
		}
		for blk := b; blk < end; blk++ {
			if r.get(uint32(blk%regionBlocks)) == 0 {
				g.freeRun(blk, 1)
			}
		}
		g.refs[reg] = g.refRegion(reg).apply(uint32(b%regionBlocks), uint32(end-reg*regionBlocks), func(c uint32) uint32 { return max(c, 1) - 1 })
		b = end
	}
}

// freeRun frees blocks [start, start+n), merging with the run freed last.
func (g *group) freeRun(start, n uint64) {
	if k := len(g.freed) - 1; k >= 0 && g.freed[k].start+g.freed[k].n == start {
		g.freed[k].n += n
		return
	}
	g.freed = append(g.freed, run{start, n})
}

// persistRefs writes the regions whose counts the group changed.
func (g *group) persistRefs() error {
	for reg, r := range g.refs {
		var err error
		if len(r) == 0 {
			err = g.b.Delete(refKey(reg), nil)
		} else {
			err = g.b.Set(refKey(reg), r.encode(), nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// installRefs makes the group's counts the committed table, once its
// batch has committed.
func (g *group) installRefs() {
	for reg, r := range g.refs {
		if len(r) == 0 {
			delete(g.s.refs, reg)
		} else {
			g.s.refs[reg] = r
		}
	}
}

// SharedBlocks counts the device blocks more than one object names and
// the extra references to them: what clones save over copies.
func (s *BlockStore) SharedBlocks() (blocks, extra uint64) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	for _, r := range s.refs {
		n, e := r.blocks()
		blocks, extra = blocks+n, extra+e
	}
	return blocks, extra
}

// loadRefs reads the reference table from r (the DB or a snapshot).
func loadRefs(r pebble.Reader) (map[uint64]refRegion, error) {
	refs := map[uint64]refRegion{}
	err := scanNumbered(r, pRefs, "reference table", func(region uint64, v []byte) error {
		reg, err := decodeRefRegion(v)
		refs[region] = reg
		return err
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}
