package objectstore

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shoal-project/shoal/internal/wire"
)

// Pebble key layout. Names are length-prefixed so any bytes are allowed and
// an object's keys sort together, objects by name within a collection:
//
//	'S'                                  superblock
//	'C' coll                             collection marker
//	'O' u16(len coll) coll oid           onode
//	'M' u16(len coll) coll u32(len oid) oid key   omap entry
//	'F' u64be(region)                    allocation bitmap region
//	'R' u64be(region)                    shared blocks' reference counts (refs.go)
//	'W' u64be(seq)                       a deferred data write (deferred.go)
const (
	pSuper  = 'S'
	pColl   = 'C'
	pOnode  = 'O'
	pOmap   = 'M'
	pBitmap = 'F'
	pRefs   = 'R'
)

func collKey(c Coll) []byte { return append([]byte{pColl}, c...) }

func collPrefix(p byte, c Coll) []byte { return collPrefixCap(p, c, 0) }

// collPrefixCap is collPrefix with room for extra more bytes, so that a
// key built on it takes one allocation.
func collPrefixCap(p byte, c Coll, extra int) []byte {
	k := make([]byte, 3, 3+len(c)+extra)
	k[0] = p
	binary.BigEndian.PutUint16(k[1:], uint16(len(c)))
	return append(k, c...)
}

func onodeKey(c Coll, oid string) []byte {
	return append(collPrefixCap(pOnode, c, len(oid)), oid...)
}

func omapPrefix(c Coll, oid string) []byte { return omapPrefixCap(c, oid, 0) }

func omapPrefixCap(c Coll, oid string, extra int) []byte {
	k := collPrefixCap(pOmap, c, 4+len(oid)+extra)
	k = binary.BigEndian.AppendUint32(k, uint32(len(oid)))
	return append(k, oid...)
}

func omapKey(c Coll, oid, key string) []byte {
	return append(omapPrefixCap(c, oid, len(key)), key...)
}

// omapKeyObject is the collection and object an omap key (omapKey's
// output) belongs to; ok is false if k is too short to be one.
func omapKeyObject(k []byte) (c Coll, oid string, ok bool) {
	if len(k) < 3 {
		return "", "", false
	}
	rest := k[3:]
	n := int(binary.BigEndian.Uint16(k[1:]))
	if len(rest) < n+4 {
		return "", "", false
	}
	c, rest = Coll(rest[:n]), rest[n:]
	n = int(binary.BigEndian.Uint32(rest))
	if len(rest) < 4+n {
		return "", "", false
	}
	return c, string(rest[4 : 4+n]), true
}

// scanNumbered calls fn, in key order, with the number and value of
// every record of r under prefix p whose key is p u64be(n) (bitmap
// regions, reference counts, deferred writes); what names them in
// errors. A key of another length is ErrCorrupt; fn's error stops the
// scan and is returned, as is an iterator's.
func scanNumbered(r pebble.Reader, p byte, what string, fn func(n uint64, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) != 9 {
			return fmt.Errorf("objectstore: %w: %s key %x", ErrCorrupt, what, k)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("objectstore: read %s: %w", what, err)
		}
		if err := fn(beUint64(k[1:]), v); err != nil {
			return err
		}
	}
	return it.Error()
}

func bitmapKey(region uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{pBitmap}, region)
}

// prefixEnd is the smallest key greater than every key with the prefix.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// BlockSize is the allocation and checksum unit of the data device.
const BlockSize = 4096

// extent maps Blocks logical blocks starting at Logical to physical blocks
// starting at Phys; CRCs holds the crc32c of each 4 KiB block.
type extent struct {
	Logical uint64
	Phys    uint64
	CRCs    []uint32
}

func (e extent) blocks() uint64 { return uint64(len(e.CRCs)) }
func (e extent) end() uint64    { return e.Logical + e.blocks() }

// onode is an object's metadata. Small objects keep their bytes inline
// (in Pebble); larger ones have extents on the data device.
type onode struct {
	Size      uint64
	OnDevice  bool // data lives in Extents (holes read as zeros), not Inline
	Attrs     map[string][]byte
	Inline    []byte // when no extents: the object's bytes, len == Size
	InlineCRC uint32
	Extents   []extent // sorted by Logical, non-overlapping
	// Omap says whether the object may have omap keys, so that removing
	// an object that has none writes no range deletion (each one slows
	// every later read of the memtable that holds it: 17,876 removals
	// of 4 KiB objects took 34 s with one each, 6.6 s without).
	Omap omapState
}

// omapState is what an onode knows of its object's omap keys.
type omapState uint8

const (
	omapUnknown omapState = iota // an onode of encoding version 1: it may have keys
	omapNone                     // no omap key exists
	omapSome                     // keys may exist
)

func (o *onode) isInline() bool { return !o.OnDevice }

// clone is a deep copy that a commit group may change.
func (o *onode) clone() *onode {
	c := *o
	c.Attrs = make(map[string][]byte, len(o.Attrs))
	for k, v := range o.Attrs {
		c.Attrs[k] = v // values are replaced, never changed in place
	}
	c.Inline = append([]byte(nil), o.Inline...)
	c.Extents = make([]extent, len(o.Extents))
	for i, x := range o.Extents {
		x.CRCs = append([]uint32(nil), x.CRCs...)
		c.Extents[i] = x
	}
	return &c
}

// onodeVersion 2 added Omap after the extents; version 1 readers skip it.
const onodeVersion = 2

func (o *onode) encode() []byte {
	size := 64 + len(o.Inline) // sized up front: a 4 MiB object's block checksums alone are 4 KiB
	for n, v := range o.Attrs {
		size += 8 + len(n) + len(v)
	}
	for _, x := range o.Extents {
		size += 20 + 4*len(x.CRCs)
	}
	e := wire.NewEncoder(make([]byte, 0, size))
	m := e.Begin(onodeVersion, 1)
	e.U64(o.Size)
	e.Bool(o.OnDevice)
	names := make([]string, 0, len(o.Attrs))
	for n := range o.Attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	e.U32(uint32(len(names)))
	for _, n := range names {
		e.String(n)
		e.Blob(o.Attrs[n])
	}
	e.Blob(o.Inline)
	e.U32(o.InlineCRC)
	e.U32(uint32(len(o.Extents)))
	for _, x := range o.Extents {
		e.U64(x.Logical)
		e.U64(x.Phys)
		e.U32(uint32(len(x.CRCs)))
		for _, c := range x.CRCs {
			e.U32(c)
		}
	}
	e.U8(uint8(o.Omap))
	e.End(m)
	return e.Bytes()
}

func decodeOnode(b []byte) (*onode, error) {
	d := wire.NewDecoder(b)
	v, end := d.Begin("onode", onodeVersion)
	o := &onode{Size: d.U64(), OnDevice: d.Bool(), Attrs: map[string][]byte{}}
	for n := d.Count(8); n > 0; n-- {
		name := d.String()
		o.Attrs[name] = d.Blob()
	}
	o.Inline = d.Blob()
	o.InlineCRC = d.U32()
	o.Extents = make([]extent, d.Count(20))
	for i := range o.Extents {
		x := &o.Extents[i]
		x.Logical = d.U64()
		x.Phys = d.U64()
		x.CRCs = make([]uint32, d.Count(4))
		for j := range x.CRCs {
			x.CRCs[j] = d.U32()
		}
	}
	if v >= 2 {
		o.Omap = omapState(d.U8())
	}
	d.End("onode", end)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: onode: %v", ErrCorrupt, err)
	}
	return o, nil
}

// superblock records the data device's geometry at creation.
type superblock struct {
	Blocks    uint64 // data device size in blocks
	InlineMax uint32 // objects up to this size are stored inline
}

func (s superblock) encode() []byte {
	var e wire.Encoder
	m := e.Begin(1, 1)
	e.U64(s.Blocks)
	e.U32(s.InlineMax)
	e.End(m)
	return e.Bytes()
}

func decodeSuperblock(b []byte) (superblock, error) {
	d := wire.NewDecoder(b)
	_, end := d.Begin("superblock", 1)
	s := superblock{Blocks: d.U64(), InlineMax: d.U32()}
	d.End("superblock", end)
	if err := d.Err(); err != nil {
		return s, fmt.Errorf("%w: superblock: %v", ErrCorrupt, err)
	}
	return s, nil
}
