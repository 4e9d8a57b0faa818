package objectstore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	crc "github.com/shoal-project/shoal/internal/crc32c"
)

// Fsck checks the store's consistency: every onode decodes, extents are
// sorted and in range, every referenced block is marked used in the
// allocation bitmap, no block is marked used that nothing references (a
// leak), and a block named by more than one extent has exactly that many
// owners in the reference table (refs.go), which names no other block. With deep set it also reads every block and
// checks its crc32c. Reads continue meanwhile; transactions wait.
func (s *BlockStore) Fsck(deep bool) error {
	s.commitMu.Lock() // no commit group in flight: the bitmap is settled
	defer s.commitMu.Unlock()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	owners := map[uint64]uint32{}
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: []byte{pOnode}, UpperBound: []byte{pOnode + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	buf := make([]byte, BlockSize)
	for it.First(); it.Valid(); it.Next() {
		name := fmt.Sprintf("%q", it.Key()[1:])
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("fsck: onode %s: %w", name, err)
		}
		o, err := decodeOnode(v)
		if err != nil {
			return fmt.Errorf("fsck: onode %s: %w", name, err)
		}
		if o.isInline() && uint64(len(o.Inline)) != o.Size {
			return fmt.Errorf("fsck: onode %s: inline %d bytes, size %d", name, len(o.Inline), o.Size)
		}
		var prevEnd uint64
		for i, x := range o.Extents {
			if i > 0 && x.Logical < prevEnd {
				return fmt.Errorf("fsck: onode %s: extents overlap or unsorted at %d", name, x.Logical)
			}
			prevEnd = x.end()
			if x.Logical*BlockSize >= o.Size+BlockSize-1 && o.Size > 0 || x.Phys+x.blocks() > s.sb.Blocks {
				return fmt.Errorf("fsck: onode %s: extent %d+%d at %d out of range", name, x.Logical, x.blocks(), x.Phys)
			}
			for b := x.Phys; b < x.Phys+x.blocks(); b++ {
				owners[b]++
				if owners[b] > 1 {
					continue // checked with the reference table below
				}
				if !s.alloc.isUsed(b) {
					return fmt.Errorf("fsck: block %d of %s is free in the bitmap", b, name)
				}
				if deep {
					if _, err := s.dev.ReadAt(buf, int64(b*BlockSize)); err != nil {
						return fmt.Errorf("fsck: read block %d: %w", b, err)
					}
					if crc.Checksum(buf) != x.CRCs[b-x.Phys] {
						return fmt.Errorf("fsck: block %d of %s: %w", b, name, ErrCorrupt)
					}
				}
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if used := s.used.Load(); used != uint64(len(owners)) {
		return fmt.Errorf("fsck: bitmap marks %d blocks used, onodes reference %d (leak)", used, len(owners))
	}
	persisted, err := loadRefs(snap)
	if err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	for _, refs := range []map[uint64]refRegion{s.refs, persisted} {
		for reg, r := range refs {
			for _, x := range r {
				for b := reg*regionBlocks + uint64(x.off); b < reg*regionBlocks+uint64(x.off+x.n); b++ {
					if owners[b] != x.extra+1 {
						return fmt.Errorf("fsck: block %d: %d owners, reference table says %d", b, owners[b], x.extra+1)
					}
				}
			}
		}
		for b, n := range owners {
			if n > 1 && refs[b/regionBlocks].get(uint32(b%regionBlocks)) == 0 {
				return fmt.Errorf("fsck: block %d has %d owners and no reference table entry", b, n)
			}
		}
	}
	return fsckOmap(snap)
}

// fsckOmap checks that every omap key belongs to an object whose onode
// exists and does not say it has no omap keys (its removal would leave
// them behind).
func fsckOmap(snap *pebble.Snapshot) error {
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: []byte{pOmap}, UpperBound: []byte{pOmap + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for valid := it.First(); valid; {
		k := it.Key()
		c, oid, ok := omapKeyObject(k)
		if !ok {
			return fmt.Errorf("fsck: omap key %q: %w", k, ErrCorrupt)
		}
		v, closer, err := snap.Get(onodeKey(c, oid))
		if errors.Is(err, pebble.ErrNotFound) {
			return fmt.Errorf("fsck: omap key %q of %s/%q, which has no onode", k, c, oid)
		}
		if err != nil {
			return err
		}
		o, err := decodeOnode(v)
		closer.Close()
		if err != nil {
			return fmt.Errorf("fsck: onode %s/%q: %w", c, oid, err)
		}
		if o.Omap == omapNone {
			return fmt.Errorf("fsck: omap key %q of %s/%q, whose onode says it has none", k, c, oid)
		}
		valid = it.SeekGE(prefixEnd(omapPrefix(c, oid))) // the next object's keys
	}
	return it.Error()
}
