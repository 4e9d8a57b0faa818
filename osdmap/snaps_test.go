package osdmap_test

import (
	"slices"
	"testing"

	"github.com/shoal-project/shoal/osdmap"
)

func TestRemovedSnapIntervals(t *testing.T) {
	p := &osdmap.Pool{SnapSeq: 20}
	for _, id := range []uint64{5, 7, 6, 9, 3, 4, 9} {
		p.RemovedSnaps = p.WithRemovedSnap(id)
	}
	want := []osdmap.SnapRange{{3, 7}, {9, 9}}
	if !slices.Equal(p.RemovedSnaps, want) {
		t.Fatalf("removed %v, want %v", p.RemovedSnaps, want)
	}
	for id := uint64(0); id <= 20; id++ {
		if got, want := p.IsRemovedSnap(id), (id >= 3 && id <= 7) || id == 9; got != want {
			t.Fatalf("IsRemovedSnap(%d) = %v", id, got)
		}
	}
}

func TestPoolSnapsRoundTrip(t *testing.T) {
	m := testMap(t)
	p := *m.Pools[1]
	p.SnapSeq, p.Flags = 4, p.Flags|osdmap.FlagPoolSnaps
	p.Snaps = map[uint64]osdmap.PoolSnap{2: {ID: 2, Name: "a", Stamp: 7}, 4: {ID: 4, Name: "b", Stamp: 9}}
	p.RemovedSnaps = []osdmap.SnapRange{{1, 1}, {3, 3}}
	next, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewPools: []*osdmap.Pool{&p}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := osdmap.Decode(next.Encode())
	if err != nil {
		t.Fatal(err)
	}
	q := got.Pools[1]
	seq, snaps := q.PoolSnapContext()
	if seq != 4 || !slices.Equal(snaps, []uint64{4, 2}) || !q.IsRemovedSnap(3) || q.IsRemovedSnap(2) || !q.PoolSnapsMode() || q.SelfManagedSnapsMode() {
		t.Fatalf("decoded pool: seq %d snaps %v removed %v flags %#x", seq, snaps, q.RemovedSnaps, q.Flags)
	}
	if s, ok := q.SnapByName("b"); !ok || s.ID != 4 || s.Stamp != 9 {
		t.Fatalf("snap b: %+v %v", s, ok)
	}
	bad := p
	bad.RemovedSnaps = []osdmap.SnapRange{{3, 3}, {1, 1}}
	if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewPools: []*osdmap.Pool{&bad}}); err == nil {
		t.Fatal("unsorted removed snaps accepted")
	}
}
