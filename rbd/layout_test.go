package rbd

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestObjectName: data object names are RBD's rbd_data.ID.%016x, as fmt
// formats them, at the ends of the range and at random object numbers.
func TestObjectName(t *testing.T) {
	l := layout{prefix: "rbd_data.1f2e3d4c5b6a"}
	rng := rand.New(rand.NewSource(1))
	for _, n := range append([]uint64{0, 1, 15, 16, 1<<63 - 1, ^uint64(0)}, rng.Uint64(), rng.Uint64()>>20, rng.Uint64()>>40) {
		if got, want := l.objectName(n), fmt.Sprintf("rbd_data.1f2e3d4c5b6a.%016x", n); got != want {
			t.Errorf("object %d: %q, want %q", n, got, want)
		}
	}
}

// TestLayoutExample: a striped layout laid out by hand, as
// doc/dev/file-striping.rst draws one: 16-byte objects, 4-byte stripe
// units over 3 objects — units 0, 1, 2 start objects 0, 1, 2; unit 3
// follows unit 0 in object 0; unit 12 starts object set 1 (object 3).
func TestLayoutExample(t *testing.T) {
	l := layout{prefix: "p", objSize: 16, su: 4, sc: 3}
	got := l.extents(2, 12+36+1) // bytes 2 … 50
	want := []extent{
		{0, 2, 2, 0}, {1, 0, 4, 2}, {2, 0, 4, 6}, // stripe 0
		{0, 4, 4, 10}, {1, 4, 4, 14}, {2, 4, 4, 18}, // stripe 1
		{0, 8, 4, 22}, {1, 8, 4, 26}, {2, 8, 4, 30}, // stripe 2
		{0, 12, 4, 34}, {1, 12, 4, 38}, {2, 12, 4, 42}, // stripe 3: the set is full
		{3, 0, 3, 46}, // set 1
	}
	if len(got) != len(want) {
		t.Fatalf("extents %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("extent %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// a discard of the whole first set covers each of its objects whole
	whole := coalesce(l.extents(0, 48))
	if len(whole) != 3 {
		t.Fatalf("coalesced extents of the first set: %+v", whole)
	}
	for i, e := range whole {
		if e.object != uint64(i) || e.objOff != 0 || e.length != 16 {
			t.Fatalf("coalesced extent %d: %+v, want object %d bytes [0,16)", i, e, i)
		}
	}
	if n := l.objectCount(49); n != 4 {
		t.Fatalf("objects of 49 bytes: %d, want 4", n)
	}
	if n := l.objectCount(48); n != 3 {
		t.Fatalf("objects of 48 bytes: %d, want 3", n)
	}
	if n := l.objectCount(5); n != 2 { // units 0 and 1
		t.Fatalf("objects of 5 bytes: %d, want 2", n)
	}
}

// TestLayoutTiles: for random layouts and ranges, the extents cover the
// range exactly once, in order, no two image bytes land on one object
// byte, every object byte is inside its object, and no extent names an
// object objectCount does not count.
func TestLayoutTiles(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for range 500 {
		objSize := uint64(1) << (4 + rng.Intn(5))
		su := objSize >> rng.Intn(3)
		l := layout{objSize: objSize, su: su, sc: 1 + uint64(rng.Intn(4))}
		size := 1 + uint64(rng.Intn(2000))
		off := uint64(rng.Intn(int(size)))
		n := 1 + uint64(rng.Intn(int(size-off)))
		seen := map[[2]uint64]bool{}
		next := uint64(0)
		for _, e := range l.extents(off, n) {
			if e.bufOff != next || e.length == 0 || e.objOff+e.length > objSize {
				t.Fatalf("%+v [%d,+%d): extent %+v after %d bytes", l, off, n, e, next)
			}
			if e.object >= l.objectCount(size) {
				t.Fatalf("%+v size %d: extent in object %d of %d", l, size, e.object, l.objectCount(size))
			}
			for b := range e.length {
				k := [2]uint64{e.object, e.objOff + b}
				if seen[k] {
					t.Fatalf("%+v: object %d byte %d twice", l, e.object, e.objOff+b)
				}
				seen[k] = true
			}
			next += e.length
		}
		if next != n {
			t.Fatalf("%+v [%d,+%d): extents cover %d bytes", l, off, n, next)
		}
	}
}

// TestLayoutUnits checks unitOffset, the inverse map copy-up uses,
// against extents: every stripe unit of an object, mapped to the image
// and back, is that unit of that object, and underParent agrees with the
// lowest image byte the object holds.
func TestLayoutUnits(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for range 300 {
		objSize := uint64(1) << (4 + rng.Intn(5))
		su := objSize >> rng.Intn(3)
		l := layout{objSize: objSize, su: su, sc: 1 + uint64(rng.Intn(4))}
		n := uint64(rng.Intn(20))
		lowest := ^uint64(0)
		for u := range objSize / su {
			at := l.unitOffset(n, u)
			lowest = min(lowest, at)
			got := l.extents(at, su)
			if want := (extent{object: n, objOff: u * su, length: su}); len(got) != 1 || got[0] != want {
				t.Fatalf("%+v: unit %d of object %d at image byte %d maps to %+v", l, u, n, at, got)
			}
		}
		if l.underParent(n, lowest) || !l.underParent(n, lowest+1) {
			t.Fatalf("%+v: object %d starts at image byte %d; underParent disagrees", l, n, lowest)
		}
	}
}
