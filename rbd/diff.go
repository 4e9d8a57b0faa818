package rbd

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/osdop"
)

// Extent is a range of an image's bytes, [Off, Off+Len).
type Extent struct{ Off, Len uint64 }

// Changed lists the ranges of the image (at the snapshot it is opened
// at, or its head) that may differ from snapshot from (from "": from an
// empty image), sorted and merged, within the image's size — rbd diff's
// extents, as librbd finds them without an object map: each data
// object's SnapSet (list-snaps) tells which clone holds it at either
// end, and the bytes every clone between shares with the next (clone
// overlap) are what did not change; an object that exists at one end
// only changed whole. In a clone, an object absent at both ends changed
// only where one end's parent overlap covers it and the other's does
// not. Ranges may be reported that hold the same bytes at both ends
// (whole objects written with the same data), never the reverse. With
// fast-diff, the object maps answer instead, in whole objects.
func (img *Image) Changed(ctx context.Context, from string) ([]Extent, error) {
	img.mu.RLock()
	lay, size, overlapT := img.layoutLocked(), img.sizeLocked(), img.overlap
	img.mu.RUnlock()
	to := atHead
	if img.snap != nil {
		to = img.snap.ID
	}
	var fromSnap *clsrbd.Snapshot
	sizeF, overlapF := uint64(0), uint64(0)
	if from != "" {
		s, err := img.snapshot(from)
		if err != nil {
			return nil, err
		}
		if to != atHead && s.ID >= to {
			return nil, fmt.Errorf("rbd: diff %s/%s from %s: %w: the snapshot is not older than %s", img.pool.Name(), img.name, from, ErrInvalid, img.snap.Name)
		}
		fromSnap, sizeF = &s, s.Size
		if s.Parent != nil {
			overlapF = s.Parent.Overlap
		}
	}
	if img.hasFeature(clsrbd.FeatureFastDiff) {
		if exts, ok, err := img.changedFast(ctx, fromSnap, lay, size, overlapF, overlapT); ok || err != nil {
			return exts, err
		}
	}
	n := lay.objectCount(max(size, sizeF))
	perObject := make([][]osdop.Extent, n)
	if err := img.forObjects(ctx, n, func(i uint64, oid string) error {
		ss, headSize, err := img.snapSet(ctx, oid)
		if err != nil {
			return err
		}
		var fs, ts objectState
		if fromSnap != nil {
			fs = stateAt(ss, headSize, fromSnap.ID)
		}
		ts = stateAt(ss, headSize, to)
		perObject[i] = objectChanges(ss, fs, ts, lay, i, overlapF, overlapT)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("rbd: diff %s/%s: %w", img.pool.Name(), img.name, err)
	}
	var out []Extent
	for i, exts := range perObject {
		for _, e := range exts {
			out = append(out, lay.imageRanges(uint64(i), e.Off, e.Len)...)
		}
	}
	return mergeExtents(out, size), nil
}

// atHead stands for the head in place of a snap id.
const atHead = ^uint64(0)

// snapSet is a data object's SnapSet and its head's size (0 if the head
// does not exist); an object that never existed has an empty SnapSet.
func (img *Image) snapSet(ctx context.Context, oid string) (*osdop.SnapSet, uint64, error) {
	rep, err := img.data.Operate(ctx, oid, []osdop.Op{{Code: osdop.ListSnaps}, {Code: osdop.Stat, FailOK: true}})
	if errors.Is(err, client.ErrNotFound) {
		return &osdop.SnapSet{}, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	ss, err := osdop.DecodeSnapSet(rep.Results[0].Data)
	if err != nil {
		return nil, 0, err
	}
	return ss, rep.Results[1].Size, nil
}

// objectState is a data object at one end of a diff: whether it
// existed, its size, and which of its SnapSet's versions held it (pos:
// the clone's index, or len(Clones) for the head).
type objectState struct {
	exists bool
	size   uint64
	pos    int
}

// stateAt resolves the object at snap (atHead: its head).
func stateAt(ss *osdop.SnapSet, headSize, snap uint64) objectState {
	if snap != atHead {
		if i, head, ok := ss.Resolve(snap); !ok {
			return objectState{}
		} else if !head {
			return objectState{exists: true, size: ss.Clones[i].Size, pos: i}
		}
	}
	return objectState{exists: ss.HeadExists, size: headSize, pos: len(ss.Clones)}
}

// objectChanges is what changed in object n (object byte ranges)
// between states f and t; overlapF and overlapT are the parent overlaps
// at either end (0 where no parent shows).
func objectChanges(ss *osdop.SnapSet, f, t objectState, lay layout, n, overlapF, overlapT uint64) []osdop.Extent {
	switch {
	case !f.exists && !t.exists:
		return parentChanges(lay, n, overlapF, overlapT)
	case f.exists != t.exists:
		end := max(f.size, t.size)
		if lay.underParent(n, max(overlapF, overlapT)) {
			end = lay.objSize // the absent end shows its parent
		}
		return []osdop.Extent{{Off: 0, Len: end}}
	case f.pos == t.pos:
		return nil
	}
	// both exist, in different versions: what every version between
	// shares with the next did not change
	same := []osdop.Extent{{Off: 0, Len: max(f.size, t.size)}}
	for i := f.pos; i < t.pos; i++ {
		same = intersect(same, ss.Clones[i].Overlap)
	}
	return subtract(max(f.size, t.size), same)
}

// parentChanges is what changed in object n of a clone, absent at both
// ends of a diff: the bytes one end's parent overlap covers and the
// other's does not (its parent's at one end, zeros at the other).
func parentChanges(lay layout, n, overlapF, overlapT uint64) []osdop.Extent {
	lo, hi := min(overlapF, overlapT), max(overlapF, overlapT)
	var out []osdop.Extent
	for u := range lay.objSize / lay.su {
		at := lay.unitOffset(n, u)
		if s, e := max(at, lo), min(at+lay.su, hi); s < e {
			out = append(out, osdop.Extent{Off: u*lay.su + s - at, Len: e - s})
		}
	}
	return out
}

// intersect is the bytes in both a and b (sorted, disjoint extents).
func intersect(a, b []osdop.Extent) []osdop.Extent {
	var out []osdop.Extent
	for i, j := 0, 0; i < len(a) && j < len(b); {
		s, e := max(a[i].Off, b[j].Off), min(a[i].Off+a[i].Len, b[j].Off+b[j].Len)
		if s < e {
			out = append(out, osdop.Extent{Off: s, Len: e - s})
		}
		if a[i].Off+a[i].Len < b[j].Off+b[j].Len {
			i++
		} else {
			j++
		}
	}
	return out
}

// subtract is [0, end) without the (sorted, disjoint) extents.
func subtract(end uint64, exts []osdop.Extent) []osdop.Extent {
	var out []osdop.Extent
	at := uint64(0)
	for _, x := range exts {
		if x.Off > at {
			out = append(out, osdop.Extent{Off: at, Len: x.Off - at})
		}
		at = max(at, x.Off+x.Len)
	}
	if at < end {
		out = append(out, osdop.Extent{Off: at, Len: end - at})
	}
	return out
}

// imageRanges maps bytes [off, off+n) of object obj to the image's
// ranges (one per stripe unit touched).
func (l layout) imageRanges(obj, off, n uint64) []Extent {
	var out []Extent
	for end := off + n; off < end; {
		u := off / l.su
		k := min(end, (u+1)*l.su) - off
		out = append(out, Extent{Off: l.unitOffset(obj, u) + off - u*l.su, Len: k})
		off += k
	}
	return out
}

// mergeExtents sorts and merges extents, clipped to [0, size).
func mergeExtents(exts []Extent, size uint64) []Extent {
	slices.SortFunc(exts, func(a, b Extent) int { return cmp.Compare(a.Off, b.Off) })
	var out []Extent
	for _, e := range exts {
		if e.Off >= size {
			continue
		}
		e.Len = min(e.Len, size-e.Off)
		if k := len(out) - 1; k >= 0 && out[k].Off+out[k].Len >= e.Off {
			out[k].Len = max(out[k].Len, e.Off+e.Len-out[k].Off)
			continue
		}
		out = append(out, e)
	}
	return out
}

// RBD's export-diff stream, version 1 (Ceph: doc/dev/rbd-diff.rst): a
// header line, then records — each a tag byte and little-endian fields —
// ending with 'e'.
const (
	diffHeader = "rbd diff v1\n"
	tagFrom    = 'f' // from snapshot: u32 length, name
	tagTo      = 't' // to snapshot: u32 length, name
	tagSize    = 's' // image size: u64
	tagData    = 'w' // updated data: u64 offset, u64 length, the bytes
	tagZero    = 'z' // zeroed data: u64 offset, u64 length
	tagEnd     = 'e'
)

// ExportDiff writes what changed in the image (at its snapshot, or its
// head) since snapshot from ("": everything) as an RBD diff v1 stream
// (rbd export-diff): the snapshot names, the size, then each changed
// range's bytes — 4 KiB blocks of zeros as zero records, the rest as
// data.
func (img *Image) ExportDiff(ctx context.Context, from string, w io.Writer) error {
	exts, err := img.Changed(ctx, from)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(diffHeader)
	name := func(tag byte, s string) {
		bw.WriteByte(tag)
		bw.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(s))))
		bw.WriteString(s)
	}
	u64 := func(v ...uint64) {
		for _, x := range v {
			bw.Write(binary.LittleEndian.AppendUint64(nil, x))
		}
	}
	if from != "" {
		name(tagFrom, from)
	}
	if img.snap != nil {
		name(tagTo, img.snap.Name)
	}
	bw.WriteByte(tagSize)
	u64(img.Size())
	const chunk = 4 << 20
	buf := make([]byte, chunk)
	for _, e := range exts {
		for off := e.Off; off < e.Off+e.Len; off += chunk {
			p := buf[:min(chunk, e.Off+e.Len-off)]
			if err := img.ReadAt(ctx, p, off); err != nil {
				return fmt.Errorf("rbd: export-diff %s/%s: %w", img.pool.Name(), img.name, err)
			}
			for at := 0; at < len(p); {
				// a run of blocks all zero, or all not
				zero := isZero(p[at:min(at+SparseBlock, len(p))])
				end := min(at+SparseBlock, len(p))
				for end < len(p) && isZero(p[end:min(end+SparseBlock, len(p))]) == zero {
					end = min(end+SparseBlock, len(p))
				}
				if zero {
					bw.WriteByte(tagZero)
					u64(off+uint64(at), uint64(end-at))
				} else {
					bw.WriteByte(tagData)
					u64(off+uint64(at), uint64(end-at))
					bw.Write(p[at:end])
				}
				at = end
			}
		}
	}
	bw.WriteByte(tagEnd)
	return bw.Flush()
}

// DiffInfo is what ImportDiff applied.
type DiffInfo struct {
	From, To    string // the stream's snapshot names ("" if none)
	Size        uint64
	Data, Zeros uint64 // bytes written and zeroed
}

// ImportDiff applies an RBD diff v1 stream to the image (rbd
// import-diff): the image must have the stream's from snapshot and not
// its to snapshot (ErrNotFound, ErrExists: nothing is applied); it is
// resized to the stream's size, every record is applied, and the to
// snapshot is taken at the end, so an interrupted import can be run
// again from the start. A malformed stream is ErrInvalid.
func (img *Image) ImportDiff(ctx context.Context, r io.Reader) (DiffInfo, error) {
	var in DiffInfo
	fail := func(err error) (DiffInfo, error) {
		return in, fmt.Errorf("rbd: import-diff %s/%s: %w", img.pool.Name(), img.name, err)
	}
	if err := img.checkWritable(); err != nil {
		return in, err
	}
	br := bufio.NewReaderSize(r, 1<<20)
	hdr := make([]byte, len(diffHeader))
	if _, err := io.ReadFull(br, hdr); err != nil || string(hdr) != diffHeader {
		return fail(fmt.Errorf("%w: not an rbd diff v1 stream (header %q)", ErrInvalid, hdr))
	}
	bad := func(what string, err error) (DiffInfo, error) {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fail(fmt.Errorf("%w: %s: %v", ErrInvalid, what, err))
	}
	u64 := func() (uint64, error) {
		var b [8]byte
		_, err := io.ReadFull(br, b[:])
		return binary.LittleEndian.Uint64(b[:]), err
	}
	sized := false
	var buf []byte
	for {
		tag, err := br.ReadByte()
		if err != nil {
			return bad("record", err)
		}
		switch tag {
		case tagFrom, tagTo:
			if sized {
				return bad("snapshot name", errors.New("after the size record"))
			}
			var b [4]byte
			if _, err := io.ReadFull(br, b[:]); err != nil {
				return bad("snapshot name", err)
			}
			n := binary.LittleEndian.Uint32(b[:])
			if n == 0 || n > 4096 {
				return bad("snapshot name", fmt.Errorf("length %d", n))
			}
			name := make([]byte, n)
			if _, err := io.ReadFull(br, name); err != nil {
				return bad("snapshot name", err)
			}
			if tag == tagFrom {
				in.From = string(name)
				if _, err := img.snapshot(in.From); err != nil {
					return fail(fmt.Errorf("the stream starts at snapshot %q, which the image does not have (%w)", in.From, ErrNotFound))
				}
			} else {
				in.To = string(name)
				if _, err := img.snapshot(in.To); err == nil {
					return fail(fmt.Errorf("snapshot %q, which the stream ends at, exists (%w)", in.To, ErrExists))
				}
			}
		case tagSize:
			if in.Size, err = u64(); err != nil {
				return bad("size", err)
			}
			if cur := img.Size(); cur != in.Size {
				if err := img.Resize(ctx, in.Size, true); err != nil {
					return fail(err)
				}
			}
			sized = true
		case tagData, tagZero:
			off, err := u64()
			if err != nil {
				return bad("extent", err)
			}
			n, err := u64()
			if err != nil {
				return bad("extent", err)
			}
			if !sized || off+n < off || off+n > in.Size {
				return bad("extent", fmt.Errorf("%d bytes at %d: past the size %d, or before it", n, off, in.Size))
			}
			if tag == tagZero {
				if err := img.WriteZeroes(ctx, off, n); err != nil {
					return fail(err)
				}
				in.Zeros += n
				continue
			}
			for n > 0 { // in pieces of at most 4 MiB
				k := min(n, 4<<20)
				if uint64(cap(buf)) < k {
					buf = make([]byte, k)
				}
				if _, err := io.ReadFull(br, buf[:k]); err != nil {
					return bad("data", err)
				}
				if err := img.WriteAt(ctx, buf[:k], off); err != nil {
					return fail(err)
				}
				off, n, in.Data = off+k, n-k, in.Data+k
			}
		case tagEnd:
			if in.To != "" {
				if err := img.SnapCreate(ctx, in.To); err != nil {
					return fail(err)
				}
			}
			return in, nil
		default:
			return bad("record", fmt.Errorf("unknown tag %q", tag))
		}
	}
}
