package osdop

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/shoal-project/shoal/internal/wire"
)

// SnapSet is what an object's head keeps of its clones (Ceph's SnapSet,
// doc/dev/osd_internals/snaps.rst): the newest snap id any write to it
// knew of, and one entry per clone, oldest first. The ListSnaps op
// returns it, with HeadExists saying whether the head itself exists.
type SnapSet struct {
	Seq        uint64
	Clones     []CloneInfo
	HeadExists bool // in a ListSnaps reply only
}

// CloneInfo is one clone: the object as it was before the first write
// after snap ID.
type CloneInfo struct {
	ID    uint64   // the SnapContext seq of the write that made it
	Snaps []uint64 // the snaps it serves, newest first (clone_snaps)
	Size  uint64   // its size in bytes (clone_size)
	// Overlap is what the clone still shares with the next newer clone,
	// or the head for the newest (clone_overlap): byte ranges, sorted
	// and disjoint; writes to the head take their ranges out of the
	// newest clone's.
	Overlap []Extent
}

// Extent is the bytes [Off, Off+Len).
type Extent struct{ Off, Len uint64 }

// Resolve returns the clone that holds the object as of snap (as Ceph's
// PrimaryLogPG::find_object_context): head true if the head does (snap
// newer than every write's SnapContext), the clone's index otherwise;
// ok false if the object did not exist at snap.
func (ss *SnapSet) Resolve(snap uint64) (clone int, head, ok bool) {
	if snap > ss.Seq {
		return 0, true, true
	}
	i, _ := slices.BinarySearchFunc(ss.Clones, snap, func(c CloneInfo, s uint64) int { return cmp.Compare(c.ID, s) })
	if i == len(ss.Clones) || !slices.Contains(ss.Clones[i].Snaps, snap) {
		return 0, false, false
	}
	return i, false, true
}

// Written takes [off, off+n) out of the newest clone's overlap: the head
// no longer shares those bytes with it.
func (ss *SnapSet) Written(off, n uint64) {
	if len(ss.Clones) == 0 || n == 0 {
		return
	}
	c := &ss.Clones[len(ss.Clones)-1]
	end := off + n
	if end < off {
		end = ^uint64(0)
	}
	var out []Extent
	for _, x := range c.Overlap {
		xe := x.Off + x.Len
		if xe <= off || x.Off >= end {
			out = append(out, x)
			continue
		}
		if x.Off < off {
			out = append(out, Extent{x.Off, off - x.Off})
		}
		if xe > end {
			out = append(out, Extent{end, xe - end})
		}
	}
	c.Overlap = out
}

// Encode appends the SnapSet's wire form.
func (ss *SnapSet) Encode(e *wire.Encoder) {
	m := e.Begin(1, 1)
	e.U64(ss.Seq)
	e.Bool(ss.HeadExists)
	e.U32(uint32(len(ss.Clones)))
	for _, c := range ss.Clones {
		e.U64(c.ID)
		e.U32(uint32(len(c.Snaps)))
		for _, s := range c.Snaps {
			e.U64(s)
		}
		e.U64(c.Size)
		e.U32(uint32(len(c.Overlap)))
		for _, x := range c.Overlap {
			e.U64(x.Off)
			e.U64(x.Len)
		}
	}
	e.End(m)
}

// Bytes is the SnapSet's encoding.
func (ss *SnapSet) Bytes() []byte {
	e := wire.NewEncoder(nil)
	ss.Encode(e)
	return e.Bytes()
}

// DecodeSnapSet reads a SnapSet written by Encode; clones must be in
// increasing id order, at most seq, each with its snaps newest first and
// at most its id.
func DecodeSnapSet(b []byte) (*SnapSet, error) {
	d := wire.NewDecoder(b)
	_, end := d.Begin("snapset", 1)
	ss := &SnapSet{Seq: d.U64(), HeadExists: d.Bool()}
	for n := d.Count(24); n > 0 && d.Err() == nil; n-- {
		c := CloneInfo{ID: d.U64()}
		for k := d.Count(8); k > 0 && d.Err() == nil; k-- {
			c.Snaps = append(c.Snaps, d.U64())
		}
		c.Size = d.U64()
		for k := d.Count(16); k > 0 && d.Err() == nil; k-- {
			c.Overlap = append(c.Overlap, Extent{d.U64(), d.U64()})
		}
		if k := len(ss.Clones); k > 0 && ss.Clones[k-1].ID >= c.ID || c.ID > ss.Seq {
			d.Fail("clone %d out of order or above seq %d", c.ID, ss.Seq)
		}
		for i, snap := range c.Snaps {
			if snap == 0 || snap > c.ID || (i > 0 && snap >= c.Snaps[i-1]) {
				d.Fail("clone %d: snaps %v not newest first within (0, %d]", c.ID, c.Snaps, c.ID)
				break
			}
		}
		ss.Clones = append(ss.Clones, c)
	}
	d.End("snapset", end)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("snapset: %w", err)
	}
	return ss, nil
}
