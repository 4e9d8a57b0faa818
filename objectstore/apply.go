package objectstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	crc "github.com/shoal-project/shoal/internal/crc32c"
)

// apply performs a checked transaction into the group's batch. An error
// here is an I/O or internal error and fails the whole group.
func (g *group) apply(t *Transaction) error {
	g.onodes = map[string]*onode{}
	g.order = g.order[:0]
	for i := range t.ops {
		if err := g.applyOp(&t.ops[i]); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	for _, k := range g.order {
		o := g.onodes[k]
		g.committed[k] = o
		var err error
		if o == nil {
			err = g.b.Delete([]byte(k), nil)
		} else {
			err = g.b.Set([]byte(k), o.encode(), nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// onode returns the object's onode as this transaction sees it; create
// makes an empty one if it does not exist.
func (g *group) onode(c Coll, oid string, create bool) (*onode, error) {
	k := objKey(c, oid)
	if o, ok := g.onodes[k]; ok && (o != nil || !create) {
		return o, nil
	}
	if _, ok := g.onodes[k]; !ok {
		// An earlier transaction of this group may have changed it: start
		// from that state (nil: it removed the object). Otherwise the onode
		// cache holds the committed state (the committer refreshes it only
		// after the group commits); a copy saves the metadata read.
		o, err := (*onode)(nil), error(nil)
		if mine, ok := g.committed[k]; ok {
			if mine != nil {
				o = mine.clone()
			}
		} else if cached, ok := g.s.onodes.get(k); ok {
			o = cached.clone()
		} else if o, err = g.s.readOnode(g.b, c, oid); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if o != nil {
			g.onodes[k] = o
			g.order = append(g.order, k)
			return o, nil
		}
	}
	if !create {
		return nil, nil
	}
	o := &onode{Attrs: map[string][]byte{}, Omap: omapNone}
	if _, seen := g.onodes[k]; !seen {
		g.order = append(g.order, k)
	}
	g.onodes[k] = o
	return o, nil
}

func (g *group) drop(c Coll, oid string) {
	k := objKey(c, oid)
	if _, seen := g.onodes[k]; !seen {
		g.order = append(g.order, k)
	}
	g.onodes[k] = nil
}

func (g *group) applyOp(op *op) error {
	b := g.b
	switch op.code {
	case opCreateColl:
		g.colls[op.coll] = true
		return b.Set(collKey(op.coll), nil, nil)
	case opRemoveColl:
		g.colls[op.coll] = false
		g.fences[op.coll] = nil
		return b.Delete(collKey(op.coll), nil)
	case opSplit:
		return g.split(op.coll, op.split)
	case opRemove:
		o, err := g.onode(op.coll, op.oid, false)
		if err != nil || o == nil {
			return err
		}
		g.punch(o, 0, ^uint64(0))
		g.drop(op.coll, op.oid)
		return g.clearOmap(op.coll, op.oid, o)
	case opOmapRm:
		for _, k := range op.keys {
			if err := b.Delete(omapKey(op.coll, op.oid, k), nil); err != nil {
				return err
			}
		}
		return nil
	case opOmapClear:
		o, err := g.onode(op.coll, op.oid, false)
		if err != nil || o == nil { // no onode, no omap keys
			return err
		}
		err = g.clearOmap(op.coll, op.oid, o)
		o.Omap = omapNone
		return err
	case opClone:
		return g.clone(op.coll, op.oid, op.oid2)
	case opStash:
		return g.stash(op.coll, op.oid, op.oid2, op.off)
	}
	o, err := g.onode(op.coll, op.oid, true)
	if err != nil {
		return err
	}
	switch op.code {
	case opTouch:
	case opWrite:
		return g.write(o, op.off, op.data, op.sums)
	case opZero:
		return g.zero(o, op.off, op.n)
	case opTruncate:
		return g.truncate(o, op.off)
	case opSetAttr:
		o.Attrs[op.name] = append([]byte(nil), op.data...)
	case opRmAttr:
		delete(o.Attrs, op.name)
	case opOmapSet:
		o.Omap = omapSome
		for _, kv := range op.kvs {
			if err := b.Set(omapKey(op.coll, op.oid, kv.Key), kv.Value, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// clearOmap removes the omap keys of object oid, whose onode as the group
// sees it so far (its earlier ops included) is o: one range deletion, or
// none when o knows there is no key. Only an object with an onode has
// omap keys (its removal clears them), so a missing onode needs none.
func (g *group) clearOmap(c Coll, oid string, o *onode) error {
	if o == nil || o.Omap == omapNone {
		return nil
	}
	p := omapPrefix(c, oid)
	return g.b.DeleteRange(p, prefixEnd(p), nil)
}

// toExtents moves an inline object's bytes to the data device.
func (g *group) toExtents(o *onode) error {
	if !o.isInline() {
		return nil
	}
	data := o.Inline
	o.Inline, o.InlineCRC, o.OnDevice = nil, 0, true
	if len(data) == 0 {
		return nil
	}
	buf := make([]byte, (uint64(len(data))+BlockSize-1)/BlockSize*BlockSize)
	copy(buf, data)
	return g.place(o, 0, buf)
}

func (g *group) fitsInline(o *onode, end uint64) bool {
	return o.isInline() && end <= uint64(g.s.sb.InlineMax)
}

func (g *group) write(o *onode, off uint64, data []byte, sums []uint32) error {
	end := off + uint64(len(data))
	newSize := max(o.Size, end)
	if g.fitsInline(o, newSize) {
		if uint64(len(o.Inline)) < newSize {
			o.Inline = append(o.Inline, make([]byte, newSize-uint64(len(o.Inline)))...)
		}
		copy(o.Inline[off:], data)
		o.Size, o.InlineCRC = newSize, crc.Checksum(o.Inline)
		return nil
	}
	if err := g.toExtents(o); err != nil {
		return err
	}
	o.Size = newSize
	if len(data) == 0 {
		return nil
	}
	b0, b1 := off/BlockSize, (end+BlockSize-1)/BlockSize
	if off%BlockSize == 0 && len(data) >= BlockSize {
		// Whole blocks go to the device straight from the caller's
		// buffer (referenced until Apply returns); only a partial last
		// block is copied, onto what the object holds after it.
		full := len(data) / BlockSize * BlockSize
		if err := g.placeSummed(o, b0, data[:full], sums); err != nil {
			return err
		}
		if full == len(data) {
			return nil
		}
		tail := make([]byte, BlockSize)
		if err := g.readBlock(o, b1-1, tail); err != nil {
			return err
		}
		copy(tail, data[full:])
		return g.place(o, b1-1, tail)
	}
	buf := make([]byte, (b1-b0)*BlockSize)
	if off%BlockSize != 0 {
		if err := g.readBlock(o, b0, buf[:BlockSize]); err != nil {
			return err
		}
	}
	if end%BlockSize != 0 && (b1-1 != b0 || off%BlockSize == 0) {
		if err := g.readBlock(o, b1-1, buf[len(buf)-BlockSize:]); err != nil {
			return err
		}
	}
	copy(buf[off-b0*BlockSize:], data)
	return g.place(o, b0, buf)
}

// zeroBlockRange rewrites part of one block with zeros (copy-on-write),
// unless the block is a hole already.
func (g *group) zeroInBlock(o *onode, lb, from, to uint64) error {
	if _, ok := o.find(lb); !ok {
		return nil
	}
	buf := make([]byte, BlockSize)
	if err := g.readBlock(o, lb, buf); err != nil {
		return err
	}
	clear(buf[from:to])
	return g.place(o, lb, buf)
}

func (g *group) zero(o *onode, off, n uint64) error {
	end := off + n
	newSize := max(o.Size, end)
	if g.fitsInline(o, newSize) {
		if uint64(len(o.Inline)) < newSize {
			o.Inline = append(o.Inline, make([]byte, newSize-uint64(len(o.Inline)))...)
		}
		clear(o.Inline[off:end])
		o.Size, o.InlineCRC = newSize, crc.Checksum(o.Inline)
		return nil
	}
	if err := g.toExtents(o); err != nil {
		return err
	}
	o.Size = newSize
	if n == 0 {
		return nil
	}
	first, last := off/BlockSize, (end-1)/BlockSize
	if first == last {
		if off%BlockSize == 0 && end%BlockSize == 0 {
			g.punch(o, first, 1)
			return nil
		}
		return g.zeroInBlock(o, first, off%BlockSize, end-first*BlockSize)
	}
	full0, full1 := first, last+1
	if off%BlockSize != 0 {
		if err := g.zeroInBlock(o, first, off%BlockSize, BlockSize); err != nil {
			return err
		}
		full0++
	}
	if end%BlockSize != 0 {
		if err := g.zeroInBlock(o, last, 0, end%BlockSize); err != nil {
			return err
		}
		full1--
	}
	if full1 > full0 {
		g.punch(o, full0, full1-full0)
	}
	return nil
}

func (g *group) truncate(o *onode, size uint64) error {
	if g.fitsInline(o, size) {
		if uint64(len(o.Inline)) < size {
			o.Inline = append(o.Inline, make([]byte, size-uint64(len(o.Inline)))...)
		}
		o.Inline = o.Inline[:size]
		o.Size, o.InlineCRC = size, crc.Checksum(o.Inline)
		return nil
	}
	if err := g.toExtents(o); err != nil {
		return err
	}
	if size < o.Size {
		keep := (size + BlockSize - 1) / BlockSize
		g.punch(o, keep, ^uint64(0)-keep)
		if size%BlockSize != 0 { // the bytes after the new end must read as zeros later
			if err := g.zeroInBlock(o, size/BlockSize, size%BlockSize, BlockSize); err != nil {
				return err
			}
		}
	}
	o.Size = size
	return nil
}

// stash is StashForRollback: a metadata-only copy when the writes that
// follow only append, else a clone.
func (g *group) stash(c Coll, src, dst string, appendFrom uint64) error {
	so, err := g.onode(c, src, false)
	if err != nil {
		return err
	}
	if so == nil {
		return fmt.Errorf("stash source %s/%s: %w", c, src, ErrNotFound)
	}
	if so.Size > appendFrom || src == dst {
		return g.clone(c, src, dst)
	}
	do, err := g.onode(c, dst, false)
	if err != nil {
		return err
	} else if do != nil {
		g.punch(do, 0, ^uint64(0))
	}
	no := &onode{Attrs: map[string][]byte{}, Omap: omapNone}
	for k, v := range so.Attrs {
		no.Attrs[k] = append([]byte(nil), v...)
	}
	no.Attrs[StashMetaAttr] = binary.LittleEndian.AppendUint64(nil, so.Size)
	k := objKey(c, dst)
	if _, seen := g.onodes[k]; !seen {
		g.order = append(g.order, k)
	}
	g.onodes[k] = no
	return g.clearOmap(c, dst, do)
}

func (g *group) clone(c Coll, src, dst string) error {
	so, err := g.onode(c, src, false)
	if err != nil {
		return err
	}
	if so == nil {
		return fmt.Errorf("clone source %s/%s: %w", c, src, ErrNotFound)
	}
	if src == dst {
		return nil
	}
	do, err := g.onode(c, dst, false)
	if err != nil {
		return err
	} else if do != nil {
		g.punch(do, 0, ^uint64(0))
	}
	no := &onode{Size: so.Size, OnDevice: so.OnDevice, Attrs: map[string][]byte{}, Inline: append([]byte(nil), so.Inline...), InlineCRC: so.InlineCRC, Omap: omapNone}
	for k, v := range so.Attrs {
		no.Attrs[k] = append([]byte(nil), v...)
	}
	// the clone names the source's blocks (refs.go): no data is copied
	no.Extents = make([]extent, len(so.Extents))
	for i, x := range so.Extents {
		g.share(x.Phys, x.blocks())
		x.CRCs = append([]uint32(nil), x.CRCs...)
		no.Extents[i] = x
	}
	k := objKey(c, dst)
	if _, seen := g.onodes[k]; !seen {
		g.order = append(g.order, k)
	}
	g.onodes[k] = no
	// omap: replace dst's with a copy of src's
	if err := g.clearOmap(c, dst, do); err != nil {
		return err
	}
	if so.Omap == omapNone {
		return nil
	}
	dp, sp := omapPrefix(c, dst), omapPrefix(c, src)
	it, err := g.b.NewIter(&pebble.IterOptions{LowerBound: sp, UpperBound: prefixEnd(sp)})
	if err != nil {
		return err
	}
	var kvs [][2][]byte
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		kvs = append(kvs, [2][]byte{append(append([]byte(nil), dp...), it.Key()[len(sp):]...), append([]byte(nil), v...)})
	}
	if err := it.Close(); err != nil {
		return err
	}
	if len(kvs) > 0 {
		no.Omap = omapSome
	}
	for _, kv := range kvs {
		if err := g.b.Set(kv[0], kv[1], nil); err != nil {
			return err
		}
	}
	return nil
}

// find returns the index of the extent holding logical block lb.
func (o *onode) find(lb uint64) (int, bool) {
	i := sort.Search(len(o.Extents), func(i int) bool { return o.Extents[i].end() > lb })
	if i < len(o.Extents) && o.Extents[i].Logical <= lb {
		return i, true
	}
	return i, false
}

// readBlock fills buf (one block) with logical block lb as this group sees
// it: zeros for a hole, this group's pending data, or the device's bytes
// after checking their crc32c.
func (g *group) readBlock(o *onode, lb uint64, buf []byte) error {
	i, ok := o.find(lb)
	if !ok {
		clear(buf)
		return nil
	}
	x := o.Extents[i]
	phys := x.Phys + (lb - x.Logical)
	if p := g.pendingBlock(phys); p != nil {
		copy(buf, p)
		return nil
	}
	if _, err := g.s.dev.ReadAt(buf, int64(phys*BlockSize)); err != nil {
		return fmt.Errorf("read block %d: %w", phys, err)
	}
	if got, want := crc.Checksum(buf), x.CRCs[lb-x.Logical]; got != want {
		return fmt.Errorf("%w: block %d (logical %d): crc32c %08x, stored %08x", ErrCorrupt, phys, lb, got, want)
	}
	return nil
}

// place stores buf (whole blocks) as logical blocks lb… of o on newly
// allocated blocks, freeing what they replace.
func (g *group) place(o *onode, lb uint64, buf []byte) error {
	return g.placeSummed(o, lb, buf, nil)
}

// placeSummed is place with sums, buf's block checksums if the caller
// has them (nil: computed here).
func (g *group) placeSummed(o *onode, lb uint64, buf []byte, sums []uint32) error {
	n := uint64(len(buf)) / BlockSize
	runs := g.s.alloc.alloc(n)
	if runs == nil {
		return fmt.Errorf("allocate %d blocks: %w", n, ErrNoSpace)
	}
	g.alloced = append(g.alloced, runs...)
	g.punch(o, lb, n)
	if sums != nil {
		g.s.sumsGiven.Add(n)
	} else {
		g.s.sumsComputed.Add(n)
	}
	at := lb
	for _, r := range runs {
		x := extent{Logical: at, Phys: r.start, CRCs: make([]uint32, r.n)}
		for i := uint64(0); i < r.n; i++ {
			blk := buf[(at-lb+i)*BlockSize : (at-lb+i+1)*BlockSize]
			if sums != nil {
				x.CRCs[i] = sums[at-lb+i]
			} else {
				x.CRCs[i] = crc.Checksum(blk)
			}
		}
		g.writes = append(g.writes, pendingWrite{r.start, buf[(at-lb)*BlockSize : (at-lb+r.n)*BlockSize]})
		idx, _ := o.find(at)
		o.Extents = append(o.Extents, extent{})
		copy(o.Extents[idx+1:], o.Extents[idx:])
		o.Extents[idx] = x
		at += r.n
	}
	return nil
}

// punch removes logical blocks [lb, lb+n) from o's extents, splitting
// extents at the edges, and frees their physical blocks.
func (g *group) punch(o *onode, lb, n uint64) {
	end := lb + n
	if end < lb { // overflow: to the end
		end = ^uint64(0)
	}
	var out []extent
	for _, x := range o.Extents {
		if x.end() <= lb || x.Logical >= end {
			out = append(out, x)
			continue
		}
		if x.Logical < lb { // left part stays
			k := lb - x.Logical
			out = append(out, extent{Logical: x.Logical, Phys: x.Phys, CRCs: x.CRCs[:k:k]})
		}
		cut0, cut1 := max(x.Logical, lb), min(x.end(), end)
		g.free(x.Phys+(cut0-x.Logical), cut1-cut0)
		if x.end() > end { // right part stays
			k := end - x.Logical
			out = append(out, extent{Logical: end, Phys: x.Phys + k, CRCs: x.CRCs[k:]})
		}
	}
	o.Extents = out
}

// pendingBlock returns physical block phys's new bytes if this group
// wrote it (nil otherwise). Callers ask for blocks a live extent names,
// which this group has not freed (a block is allocated at most once per
// group: freed blocks return to the allocator only after the commit).
// O(writes): groups hold tens of runs, and only partial-block writes and
// clones read.
func (g *group) pendingBlock(phys uint64) []byte {
	for i := len(g.writes) - 1; i >= 0; i-- {
		w := g.writes[i]
		if phys < w.phys || phys >= w.phys+uint64(len(w.data))/BlockSize {
			continue
		}
		k := phys - w.phys
		return w.data[k*BlockSize : (k+1)*BlockSize]
	}
	return nil
}

// split applies SplitCollection: each object of c that sp names a child
// for gets its onode (inline data and extents as they are) and omap
// entries under the child's keys and loses them under c's; then the
// indexes' omap entries are divided. The group's later transactions
// are fenced off the moved objects (group.fenced).
func (g *group) split(c Coll, sp *Split) error {
	prefix := collPrefix(pOnode, c)
	it, err := g.b.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	type move struct {
		oid string
		dst Coll
		o   *onode
	}
	var moves []move
	for it.First(); it.Valid(); it.Next() {
		oid := string(it.Key()[len(prefix):])
		dst := sp.Target(oid)
		if dst == "" {
			continue
		}
		if !slices.Contains(sp.Children, dst) {
			it.Close()
			return fmt.Errorf("split %s: %s goes to %s, not a child", c, oid, dst)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("split %s: %s: %w", c, oid, err)
		}
		o, err := decodeOnode(v)
		if err != nil {
			it.Close()
			return fmt.Errorf("split %s: %s: %w", c, oid, err)
		}
		moves = append(moves, move{oid, dst, o})
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, m := range moves {
		if err := g.b.Set(onodeKey(m.dst, m.oid), m.o.encode(), nil); err != nil {
			return err
		}
		if err := g.b.Delete(onodeKey(c, m.oid), nil); err != nil {
			return err
		}
		g.committed[objKey(c, m.oid)], g.committed[objKey(m.dst, m.oid)] = nil, m.o
		if sp.Moved != nil {
			sp.Moved(m.oid, m.dst, m.o.Size, m.o.Attrs)
		}
		if m.o.Omap != omapNone {
			if err := g.moveOmap(c, m.oid, m.dst, nil, nil); err != nil {
				return err
			}
		}
	}
	for _, oid := range sp.Indexes {
		o, err := g.onode(c, oid, false)
		if err != nil {
			return err
		}
		if o == nil || o.Omap == omapNone {
			continue
		}
		if err := g.moveOmap(c, oid, "", sp.KeyTarget, sp.Children); err != nil {
			return err
		}
	}
	g.fences[c] = append(slices.Clone(g.fenceList(c)), sp)
	return nil
}

// fenceList is the splits of c so far, the group's included.
func (g *group) fenceList(c Coll) []*Split {
	if fs, ok := g.fences[c]; ok {
		return fs
	}
	return g.s.fences[c]
}

// moveOmap moves object oid's omap entries from c to the same object in
// dst, or with keyTarget, each entry to the collection it names ("":
// stays), which must be one of kids; a destination object is made if
// need be.
func (g *group) moveOmap(c Coll, oid string, dst Coll, keyTarget func(string) Coll, kids []Coll) error {
	p := omapPrefix(c, oid)
	it, err := g.b.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	type kv struct {
		key, val []byte
		dst      Coll
	}
	var kvs []kv
	for it.First(); it.Valid(); it.Next() {
		to := dst
		if keyTarget != nil {
			if to = keyTarget(string(it.Key()[len(p):])); to != "" && !slices.Contains(kids, to) {
				it.Close()
				return fmt.Errorf("split %s: %s entry %q goes to %s, not a child", c, oid, it.Key()[len(p):], to)
			}
		}
		if to != "" {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return fmt.Errorf("split %s: %s: %w", c, oid, err)
			}
			kvs = append(kvs, kv{slices.Clone(it.Key()), slices.Clone(v), to})
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, e := range kvs {
		if keyTarget != nil {
			o, err := g.onode(e.dst, oid, true)
			if err != nil {
				return err
			}
			o.Omap = omapSome
		}
		if err := g.b.Set(omapKey(e.dst, oid, string(e.key[len(p):])), e.val, nil); err != nil {
			return err
		}
		if err := g.b.Delete(e.key, nil); err != nil {
			return err
		}
	}
	return nil
}
