package osdmap_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/osdmap"
)

// TestMergeTarget: shrinking a pool from n to n-1 PGs sends every object
// of PG n-1 to MergeTarget(n-1, n-1) and moves no other object; once
// pgp_num is at most n-1 the source maps where its target does, so each
// OSD that holds one holds both (pg_num from 2 to 80).
func TestMergeTarget(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	m := testMap(t)
	rep, _ := m.PoolByName("rep")
	for n := uint32(2); n <= 80; n++ {
		src, dst := n-1, osdmap.MergeTarget(n-1, n-1)
		if dst >= n-1 {
			t.Fatalf("%d -> %d: target %d", n, n-1, dst)
		}
		// the inverse of a split: the source is the one child that
		// growing back from n-1 to n splits off its target
		if kids := osdmap.SplitChildren(dst, n-1, n); !slices.Equal(kids, []uint32{src}) {
			t.Fatalf("%d -> %d: children of the target %d are %v", n, n-1, dst, kids)
		}
		before := &osdmap.Pool{ID: 1, PGNum: n, PGPNum: n}
		after := &osdmap.Pool{ID: 1, PGNum: n - 1, PGPNum: n - 1}
		for range 200 {
			x := rng.Uint32()
			from := before.RawPGToPG(osdmap.PGID{Pool: 1, Seed: x}).Seed
			to := after.RawPGToPG(osdmap.PGID{Pool: 1, Seed: x}).Seed
			if (from == src && to != dst) || (from != src && to != from) {
				t.Fatalf("%d -> %d: seed %x went from pg %d to %d", n, n-1, x, from, to)
			}
		}
		np := *rep
		np.ID, np.Name = 100, "m"
		np.PGNum, np.PGPNum = n, 1+rng.Uint32N(n-1) // pgp_num ≤ n-1
		gm := apply(t, m, &osdmap.Incremental{NewPools: []*osdmap.Pool{&np}})
		if s, d := mapPG(t, gm, np.ID, src), mapPG(t, gm, np.ID, dst); !slices.Equal(s.Acting, d.Acting) {
			t.Fatalf("%d PGs, pgp_num %d: source %d maps to %v, target %d to %v", n, np.PGPNum, src, s.Acting, dst, d.Acting)
		}
	}
}

// TestMergeInMap: pg_num goes down only by one, to a pg_num_pending set
// in an earlier epoch with pgp_num at most that; the source's pg_temp and
// upmaps go with it; pg_num cannot grow while a merge is pending; the
// merge fields survive encoding.
func TestMergeInMap(t *testing.T) {
	m := testMap(t)
	rep, _ := m.PoolByName("rep") // 64 PGs
	src := osdmap.PGID{Pool: rep.ID, Seed: 63}
	m = apply(t, m, &osdmap.Incremental{
		NewPGTemp:       map[osdmap.PGID][]int32{src: {4, 5, 6}},
		NewPrimaryTemp:  map[osdmap.PGID]int32{src: 5},
		NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{src: {{From: 1, To: 7}}, {Pool: rep.ID, Seed: 31}: {{From: 1, To: 7}}},
	})
	refused := func(why string, p osdmap.Pool) {
		t.Helper()
		if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewPools: []*osdmap.Pool{&p}}); err == nil {
			t.Fatalf("%s: applied", why)
		}
	}
	np := *rep
	np.PGNum = 63
	refused("pg_num lowered with no merge pending", np)
	np = *rep
	np.PGNumPending = 63
	refused("pg_num_pending with pgp_num 64", np)
	np.PGPNum = 63
	np.PGNumPending = 62
	refused("pg_num_pending two below pg_num", np)
	np.PGNumPending, np.PGNumTarget = 63, 32
	m = apply(t, m, &osdmap.Incremental{NewPools: []*osdmap.Pool{&np}})
	grow := np
	grow.PGNum = 65
	refused("a split while a merge is pending", grow)
	two := np
	two.PGNum, two.PGNumPending = 62, 62
	refused("two PGs merged at once", two)
	done := np
	done.PGNum, done.PGNumPending = 63, 0
	rec := osdmap.MergeMeta{Source: 63, Epoch: m.Epoch + 1, SourceVersion: [2]uint64{7, 10}, TargetVersion: [2]uint64{9, 4}}
	done.Merges = []osdmap.MergeMeta{{Source: 70, Epoch: 2}, rec}
	g := apply(t, m, &osdmap.Incremental{NewPools: []*osdmap.Pool{&done}})
	if _, ok := g.PGTemp[src]; ok || g.PrimaryTemp[src] != 0 || g.PGUpmapItems[src] != nil {
		t.Fatalf("the source's entries stay: %v %v %v", g.PGTemp, g.PrimaryTemp, g.PGUpmapItems)
	}
	if len(g.PGUpmapItems) != 1 {
		t.Fatalf("another PG's upmap went: %v", g.PGUpmapItems)
	}
	d, err := osdmap.Decode(g.Encode())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := d.PoolByName("rep")
	if got, ok := p.MergeRecord(63); p.PGNum != 63 || p.PGNumTarget != 32 || len(p.Merges) != 2 || !ok || got != rec {
		t.Fatalf("decoded pool %+v", p)
	}
	if _, ok := p.MergeRecord(5); ok {
		t.Fatal("a record of a merge that never was")
	}
	if _, _, ok := p.MergePending(); ok {
		t.Fatal("a merge pending after it was done")
	}
	if s, tg, ok := np.MergePending(); !ok || s != 63 || tg != 31 {
		t.Fatalf("pending merge %d -> %d %t", s, tg, ok)
	}
}
