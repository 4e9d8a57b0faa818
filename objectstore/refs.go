package objectstore

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

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
// The table is kept in memory (it holds only blocks that are shared: a
// snapshot's clone of a 4 MiB object adds at most 1,024 entries, and
// they go as the clone or the head lets go of them) and persisted per
// region of regionBlocks blocks, like the allocation bitmap:
//
//	'R' u64be(region) → runs of uvarint(offset in region), uvarint(length), uvarint(extra)
//
// written in the same Pebble batch as the onodes that change the counts.

// refRegion holds the extra reference counts of one region's shared
// blocks, by offset in the region.
type refRegion map[uint16]uint32

func refKey(region uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{pRefs}, region)
}

// encode writes the region's counts as runs of consecutive blocks with
// equal counts.
func (r refRegion) encode() []byte {
	offs := slices.Sorted(maps.Keys(r))
	var b []byte
	for i := 0; i < len(offs); {
		j := i + 1
		for j < len(offs) && offs[j] == offs[j-1]+1 && r[offs[j]] == r[offs[i]] {
			j++
		}
		b = binary.AppendUvarint(b, uint64(offs[i]))
		b = binary.AppendUvarint(b, uint64(j-i))
		b = binary.AppendUvarint(b, uint64(r[offs[i]]))
		i = j
	}
	return b
}

func decodeRefRegion(b []byte) (refRegion, error) {
	r := refRegion{}
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
		if off+n > regionBlocks || extra == 0 || extra > 1<<31 {
			return nil, fmt.Errorf("objectstore: %w: reference table run %d+%d ×%d", ErrCorrupt, off, n, extra)
		}
		for b := off; b < off+n; b++ {
			r[uint16(b)] = uint32(extra)
		}
	}
	return r, nil
}

// region returns the group's copy of a region's counts to change (made
// from the committed table on first use).
func (g *group) refRegion(reg uint64) refRegion {
	if r, ok := g.refs[reg]; ok {
		return r
	}
	if g.refs == nil {
		g.refs = map[uint64]refRegion{}
	}
	r := maps.Clone(g.s.refs[reg])
	if r == nil {
		r = refRegion{}
	}
	g.refs[reg] = r
	return r
}

// extraRefs is the count of block b's extra references as the group sees
// it.
func (g *group) extraRefs(b uint64) uint32 {
	reg, off := b/regionBlocks, uint16(b%regionBlocks)
	if r, ok := g.refs[reg]; ok {
		return r[off]
	}
	return g.s.refs[reg][off]
}

// share adds a reference to blocks [start, start+n): a second extent now
// names them.
func (g *group) share(start, n uint64) {
	for b := start; b < start+n; {
		reg := b / regionBlocks
		r := g.refRegion(reg)
		end := min(start+n, (reg+1)*regionBlocks)
		for ; b < end; b++ {
			r[uint16(b%regionBlocks)]++
		}
	}
}

// free drops one reference to blocks [start, start+n): blocks with extra
// references lose one, the others are freed when the group commits.
func (g *group) free(start, n uint64) {
	if n == 0 {
		return
	}
	if len(g.s.refs) == 0 && len(g.refs) == 0 { // nothing is shared
		g.freed = append(g.freed, run{start, n})
		return
	}
	for b := start; b < start+n; b++ {
		if g.extraRefs(b) == 0 {
			if k := len(g.freed) - 1; k >= 0 && g.freed[k].start+g.freed[k].n == b {
				g.freed[k].n++
			} else {
				g.freed = append(g.freed, run{b, 1})
			}
			continue
		}
		r := g.refRegion(b / regionBlocks)
		off := uint16(b % regionBlocks)
		if r[off]--; r[off] == 0 {
			delete(r, off)
		}
	}
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
		for _, n := range r {
			blocks++
			extra += uint64(n)
		}
	}
	return blocks, extra
}

// loadRefs reads the reference table from r (the DB or a snapshot).
func loadRefs(r pebble.Reader) (map[uint64]refRegion, error) {
	refs := map[uint64]refRegion{}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{pRefs}, UpperBound: []byte{pRefs + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) != 9 {
			return nil, fmt.Errorf("objectstore: %w: reference table key %x", ErrCorrupt, k)
		}
		reg, err := decodeRefRegion(it.Value())
		if err != nil {
			return nil, err
		}
		refs[beUint64(k[1:])] = reg
	}
	return refs, it.Error()
}
