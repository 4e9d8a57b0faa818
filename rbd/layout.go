package rbd

import (
	"cmp"
	"slices"
)

// layout maps an image's bytes to its data objects, as Ceph's Striper
// (src/osdc/Striper.cc, file_to_extents; doc/dev/file-striping.rst):
// stripe unit su bytes go round-robin over sc objects of objSize bytes;
// once each of the sc objects is full, the next object set begins.
type layout struct {
	prefix  string // data object names: prefix + ".%016x"
	objSize uint64
	su, sc  uint64
}

// extent is a piece of an image range within one object: bytes
// [objOff, objOff+length) of object number object, which are bytes
// [bufOff, bufOff+length) of the range.
type extent struct {
	object         uint64
	objOff, length uint64
	bufOff         uint64
}

// objectName is data object n's name: the prefix, a dot and n in 16
// lower-case hex digits (RBD's rbd_data.ID.%016x). Formatted by hand:
// fmt's zero padding took 7% of an NBD server's CPU on 4 KiB reads.
func (l layout) objectName(n uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, len(l.prefix)+17)
	copy(b, l.prefix)
	b[len(l.prefix)] = '.'
	for i := len(b) - 1; i > len(l.prefix); i-- {
		b[i] = digits[n&15]
		n >>= 4
	}
	return string(b)
}

// extents cuts [off, off+n) into per-object pieces, in image order; a
// piece never crosses a stripe unit, and consecutive units landing
// back to back in one object are merged.
func (l layout) extents(off, n uint64) []extent {
	var out []extent
	perObject := l.objSize / l.su // stripe units per object
	for done := uint64(0); done < n; {
		pos := off + done
		block := pos / l.su
		stripe, stripePos := block/l.sc, block%l.sc
		object := stripe/perObject*l.sc + stripePos
		objOff := stripe%perObject*l.su + pos%l.su
		length := min(l.su-pos%l.su, n-done)
		if k := len(out) - 1; k >= 0 && out[k].object == object && out[k].objOff+out[k].length == objOff {
			out[k].length += length
		} else {
			out = append(out, extent{object: object, objOff: objOff, length: length, bufOff: done})
		}
		done += length
	}
	return out
}

// coalesce merges the extents of each object that lie back to back in
// it, whatever their order in the image (a striped range visits each
// object once per stripe): for discards, whose extents carry no data.
// The merged extents' bufOff is meaningless.
func coalesce(exts []extent) []extent {
	s := slices.Clone(exts)
	slices.SortFunc(s, func(a, b extent) int {
		if c := cmp.Compare(a.object, b.object); c != 0 {
			return c
		}
		return cmp.Compare(a.objOff, b.objOff)
	})
	var out []extent
	for _, e := range s {
		if k := len(out) - 1; k >= 0 && out[k].object == e.object && out[k].objOff+out[k].length == e.objOff {
			out[k].length += e.length
			continue
		}
		out = append(out, e)
	}
	return out
}

// objectCount is how many data objects an image of size bytes may use:
// every object of every object set the size reaches.
func (l layout) objectCount(size uint64) uint64 {
	if size == 0 {
		return 0
	}
	setBytes := l.objSize * l.sc
	sets := (size + setBytes - 1) / setBytes
	last := size - (sets-1)*setBytes // bytes in the last set: its first units each start an object
	return (sets-1)*l.sc + min(l.sc, (last+l.su-1)/l.su)
}

// unitOffset is where stripe unit u of object n lies in the image: the
// object's bytes [u*su, (u+1)*su) are the image's [unitOffset, +su). It
// grows with u.
func (l layout) unitOffset(n, u uint64) uint64 {
	perObject := l.objSize / l.su
	set, pos := n/l.sc, n%l.sc
	return ((set*perObject+u)*l.sc + pos) * l.su
}

// underParent reports whether object n holds any of the image's first
// overlap bytes (a clone's object its parent shows through).
func (l layout) underParent(n, overlap uint64) bool { return l.unitOffset(n, 0) < overlap }

// objectBytes is how many of an image's first size bytes object n holds.
func (l layout) objectBytes(n, size uint64) uint64 {
	var b uint64
	for u := range l.objSize / l.su {
		if at := l.unitOffset(n, u); at < size {
			b += min(l.su, size-at)
		}
	}
	return b
}
