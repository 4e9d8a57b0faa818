package osdmap_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/osdmap"
)

// TestSplitChildren: for object names hashed at random, growing pg_num
// from a to b moves each object from its PG p to p or to one of
// SplitChildren(p, a, b), whose SplitParent is p; every PG in [a, b) is
// the child of exactly one PG; SplitBits changes for the PGs that split
// and no other; and a split child maps where its parent maps while
// pgp_num stays (pg_num from 1 to 70, also not powers of two).
func TestSplitChildren(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	m := testMap(t)
	rep, _ := m.PoolByName("rep")
	for it := range 300 {
		a := 1 + rng.Uint32N(40)
		b := a + 1 + rng.Uint32N(30)
		owner := map[uint32]uint32{}
		for p := range a {
			for _, k := range osdmap.SplitChildren(p, a, b) {
				if _, dup := owner[k]; dup || k < a || k >= b {
					t.Fatalf("%d -> %d: child %d of %d (owned by %v)", a, b, k, p, owner)
				}
				owner[k] = p
				if got := osdmap.SplitParent(k, a); got != p {
					t.Fatalf("%d -> %d: parent of %d is %d, want %d", a, b, k, got, p)
				}
			}
			// the split bits change exactly for the PGs that split
			if split := len(osdmap.SplitChildren(p, a, b)) > 0; split != (osdmap.SplitBits(p, a) != osdmap.SplitBits(p, b)) {
				t.Fatalf("%d -> %d: pg %d splits %t, split bits %d -> %d", a, b, p, split, osdmap.SplitBits(p, a), osdmap.SplitBits(p, b))
			}
		}
		if len(owner) != int(b-a) {
			t.Fatalf("%d -> %d: %d children, want %d", a, b, len(owner), b-a)
		}
		old := &osdmap.Pool{ID: 1, PGNum: a, PGPNum: a}
		grown := &osdmap.Pool{ID: 1, PGNum: b, PGPNum: a}
		for range 50 {
			x := rng.Uint32()
			from := old.RawPGToPG(osdmap.PGID{Pool: 1, Seed: x}).Seed
			to := grown.RawPGToPG(osdmap.PGID{Pool: 1, Seed: x}).Seed
			if to != from && owner[to] != from {
				t.Fatalf("%d -> %d: seed %x moved from pg %d to %d, not one of its children", a, b, x, from, to)
			}
		}
		// placement: with pgp_num still a, each child maps as its parent
		np := *rep
		np.ID, np.Name, np.PGNum, np.PGPNum = int64(10+it), fmt.Sprint("p", it), b, a
		gm := apply(t, m, &osdmap.Incremental{NewPools: []*osdmap.Pool{&np}})
		for k, p := range owner {
			c, pp := mapPG(t, gm, np.ID, k), mapPG(t, gm, np.ID, p)
			if !slices.Equal(c.Acting, pp.Acting) {
				t.Fatalf("%d -> %d: child %d maps to %v, its parent %d to %v", a, b, k, c.Acting, p, pp.Acting)
			}
		}
	}
	if got := osdmap.SplitChildren(3, 16, 64); fmt.Sprint(got) != "[19 35 51]" {
		t.Fatalf("children of 3 from 16 to 64: %v", got)
	}
	if got := osdmap.SplitChildren(5, 12, 20); fmt.Sprint(got) != "[13]" { // 13 & 7 = 5; 21 is past 20
		t.Fatalf("children of 5 from 12 to 20: %v", got)
	}
	if got := osdmap.SplitChildren(20, 16, 64); got != nil {
		t.Fatalf("children of a PG that does not exist: %v", got)
	}
}

// TestSplitInMap: a pool's pg_num growing gives each child its parent's
// pg_temp, primary_temp, pg_upmap and pg_upmap_items in the same epoch;
// lowering it (a merge) is refused; pgp_num_target survives encoding.
func TestSplitInMap(t *testing.T) {
	m := testMap(t)
	rep, _ := m.PoolByName("rep")
	parent := osdmap.PGID{Pool: rep.ID, Seed: 3}
	m = apply(t, m, &osdmap.Incremental{
		NewPGTemp:       map[osdmap.PGID][]int32{parent: {4, 5, 6}},
		NewPrimaryTemp:  map[osdmap.PGID]int32{parent: 5},
		NewPGUpmap:      map[osdmap.PGID][]int32{{Pool: rep.ID, Seed: 7}: {0, 1, 2}},
		NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{{Pool: rep.ID, Seed: 9}: {{From: 1, To: 7}}},
	})
	np := *rep
	np.PGNum, np.PGPNumTarget = 128, 128
	g := apply(t, m, &osdmap.Incremental{NewPools: []*osdmap.Pool{&np}})
	kid := osdmap.PGID{Pool: rep.ID, Seed: 67} // 3 + 64
	if !slices.Equal(g.PGTemp[kid], []int32{4, 5, 6}) || g.PrimaryTemp[kid] != 5 {
		t.Fatalf("child pg_temp %v primary_temp %d", g.PGTemp[kid], g.PrimaryTemp[kid])
	}
	if !slices.Equal(g.PGUpmap[osdmap.PGID{Pool: rep.ID, Seed: 71}], []int32{0, 1, 2}) || len(g.PGUpmapItems[osdmap.PGID{Pool: rep.ID, Seed: 73}]) != 1 {
		t.Fatalf("child upmaps %v %v", g.PGUpmap, g.PGUpmapItems)
	}
	if len(g.PGTemp) != 2 || len(g.PGUpmap) != 2 || len(g.PGUpmapItems) != 2 {
		t.Fatalf("entries for PGs that are not children: %v %v %v", g.PGTemp, g.PGUpmap, g.PGUpmapItems)
	}
	d, err := osdmap.Decode(g.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := d.PoolByName("rep"); p.PGPNumTarget != 128 || p.PGNum != 128 || p.PGPNum != 64 {
		t.Fatalf("decoded pool %+v", p)
	}
	merge := np
	merge.PGNum = 100
	if _, err := g.Apply(&osdmap.Incremental{Epoch: g.Epoch + 1, NewPools: []*osdmap.Pool{&merge}}); err == nil {
		t.Fatal("a merge applied")
	}
	over := np
	over.PGPNumTarget = 129
	if _, err := g.Apply(&osdmap.Incremental{Epoch: g.Epoch + 1, NewPools: []*osdmap.Pool{&over}}); err == nil {
		t.Fatal("pgp_num_target above pg_num applied")
	}
}
