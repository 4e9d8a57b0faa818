package rgw

import (
	"slices"
	"testing"
)

func TestIndexLayout(t *testing.T) {
	l := newIndexLayout(128, 8)
	if len(l.Ranges) != 16 || l.TotalShards() != 128 || l.Ranges[0].Start != "" {
		t.Fatalf("128 shards of 8 per range: %d ranges, %d shards", len(l.Ranges), l.TotalShards())
	}
	for i := 1; i < len(l.Ranges); i++ {
		if l.Ranges[i].Start <= l.Ranges[i-1].Start {
			t.Fatalf("range starts not increasing at %d: %q", i, l.Ranges[i].Start)
		}
	}
	one := newIndexLayout(11, 8)
	if len(one.Ranges) != 2 || one.Ranges[0].Shards != 8 {
		t.Fatalf("11 shards: %+v", one.Ranges)
	}
	// every key maps to exactly the range containing it
	for _, k := range []string{"", "!", "0", "A", "Zebra", "a", "photos/1.jpg", "~~~", "\u00e9t\u00e9"} {
		i := l.rangeOf(k)
		if k < l.Ranges[i].Start || (l.end(i) != "" && k >= l.end(i)) {
			t.Fatalf("key %q in range %d [%q, %q)", k, i, l.Ranges[i].Start, l.end(i))
		}
		if w := l.writeShards("b", k); len(w) != 1 {
			t.Fatalf("no split: %d shards to write", len(w))
		}
	}
	// a prefix listing reads only the ranges that can hold the prefix
	if got := l.listRanges("", "photos/"); len(got) != 1 || got[0] != l.rangeOf("photos/") {
		t.Fatalf("prefix photos/ reads ranges %v", got)
	}
	if got := l.listRanges("", ""); len(got) != len(l.Ranges) {
		t.Fatalf("full listing reads %d of %d ranges", len(got), len(l.Ranges))
	}
	// split: writes go to both, then the halves replace the range
	single := newIndexLayout(4, 8)
	if _, err := single.beginSplit(0, ""); err == nil {
		t.Fatal("split at the range's own start accepted")
	}
	sp, err := single.beginSplit(0, "m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.beginSplit(0, "n"); err == nil {
		t.Fatal("second split of a splitting range accepted")
	}
	if single.Ranges[0].Split != nil {
		t.Fatal("beginSplit changed its receiver")
	}
	lo, hi := sp.writeShards("b", "a"), sp.writeShards("b", "z")
	if len(lo) != 2 || len(hi) != 2 || lo[1] == hi[1] || !slices.Contains(sp.Ranges[0].Split.Lo.oids("b"), lo[1]) || !slices.Contains(sp.Ranges[0].Split.Hi.oids("b"), hi[1]) {
		t.Fatalf("dual writes: %v %v", lo, hi)
	}
	if n := len(sp.allShards("b")); n != 12 {
		t.Fatalf("splitting layout has %d shard objects, want 4+4+4", n)
	}
	done, err := sp.finishSplit(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Ranges) != 2 || done.Ranges[1].Start != "m" || done.Gen != single.Gen+2 || done.rangeOf("a") != 0 || done.rangeOf("m") != 1 {
		t.Fatalf("after the split: %+v", done.Ranges)
	}
	if done.writeShards("b", "z")[0] != hi[1] {
		t.Fatal("a key's shard changed between the dual-write and the final layout")
	}
}
