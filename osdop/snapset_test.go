package osdop_test

import (
	"reflect"
	"testing"

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/osdop"
)

// A SnapSet resolves snaps as Ceph's find_object_context does: newer than
// seq is the head; otherwise the oldest clone at or after the snap, if it
// serves the snap; otherwise the object did not exist then.
func TestSnapSetResolve(t *testing.T) {
	ss := &osdop.SnapSet{Seq: 9, Clones: []osdop.CloneInfo{
		{ID: 3, Snaps: []uint64{3, 2}, Size: 10},
		{ID: 7, Snaps: []uint64{7, 5}, Size: 20}, // snaps 4 and 6 were removed or never taken
	}}
	for _, c := range []struct {
		snap        uint64
		clone       int
		head, ok    bool
		whatItMeans string
	}{
		{10, 0, true, true, "after every write's context: the head"},
		{1, 0, false, false, "served by no clone: did not exist"},
		{2, 0, false, true, "clone 3"},
		{3, 0, false, true, "clone 3"},
		{4, 1, false, false, "clone 7 does not serve it"},
		{5, 1, false, true, "clone 7"},
		{8, 0, false, false, "no clone at or after it, not newer than seq: created after it"},
	} {
		clone, head, ok := ss.Resolve(c.snap)
		if head != c.head || ok != c.ok || (ok && !head && clone != c.clone) {
			t.Errorf("Resolve(%d) = %d, %v, %v; want %s", c.snap, clone, head, ok, c.whatItMeans)
		}
	}
}

func TestSnapSetOverlapAndEncoding(t *testing.T) {
	ss := &osdop.SnapSet{Seq: 4, Clones: []osdop.CloneInfo{{ID: 4, Snaps: []uint64{4}, Size: 100, Overlap: []osdop.Extent{{0, 100}}}}}
	ss.Written(10, 20)
	ss.Written(90, ^uint64(0)-90) // to the end
	ss.Written(0, 5)
	if want := []osdop.Extent{{5, 5}, {30, 60}}; !reflect.DeepEqual(ss.Clones[0].Overlap, want) {
		t.Fatalf("overlap %v, want %v", ss.Clones[0].Overlap, want)
	}
	got, err := osdop.DecodeSnapSet(ss.Bytes())
	if err != nil || !reflect.DeepEqual(got, ss) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	bad := &osdop.SnapSet{Seq: 2, Clones: []osdop.CloneInfo{{ID: 3}}}
	if _, err := osdop.DecodeSnapSet(bad.Bytes()); err == nil {
		t.Fatal("a clone above seq decoded")
	}
}

func TestRequestSnapFields(t *testing.T) {
	r := osdop.Request{Pool: 1, OID: "x", Ops: []osdop.Op{{Code: osdop.Rollback, Ver: 3}}, SnapSeq: 5, Snaps: []uint64{5, 3}, Snap: 0}
	e := wire.NewEncoder(nil)
	r.Encode(e)
	got, err := osdop.DecodeRequest(e.Bytes())
	if err != nil || got.SnapSeq != 5 || !reflect.DeepEqual(got.Snaps, []uint64{5, 3}) || got.Ops[0].Code != osdop.Rollback || !got.IsWrite() {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}
