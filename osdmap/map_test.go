package osdmap_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/osdmap"
)

// flatCrush has 8 OSDs on 4 hosts and one replicated and one erasure rule.
const flatCrush = `
tunable choose_local_tries 0
tunable choose_local_fallback_tries 0
tunable choose_total_tries 50
tunable chooseleaf_descend_once 1
tunable chooseleaf_vary_r 1
tunable chooseleaf_stable 1
tunable straw_calc_version 1
tunable allowed_bucket_algs 54
device 0 osd.0
device 1 osd.1
device 2 osd.2
device 3 osd.3
device 4 osd.4
device 5 osd.5
device 6 osd.6
device 7 osd.7
type 0 osd
type 1 host
type 11 root
host a { alg straw2
 item osd.0
 item osd.1 }
host b { alg straw2
 item osd.2
 item osd.3 }
host c { alg straw2
 item osd.4
 item osd.5 }
host d { alg straw2
 item osd.6
 item osd.7 }
root default { alg straw2
 item a
 item b
 item c
 item d }
rule replicated { id 0
 type replicated
 step take default
 step chooseleaf firstn 0 type host
 step emit }
rule ec { id 1
 type erasure
 step take default
 step choose indep 0 type osd
 step emit }
`

func testMap(t *testing.T) *osdmap.Map {
	t.Helper()
	c, err := crush.Compile([]byte(flatCrush))
	if err != nil {
		t.Fatal(err)
	}
	inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: 8, NewOSDs: map[int32]osdmap.OSD{},
		NewPools: []*osdmap.Pool{
			{ID: 1, Name: "rep", Type: osdmap.PoolReplicated, Size: 3, MinSize: 2, PGNum: 64, PGPNum: 64, CrushRule: 0, Flags: osdmap.FlagHashPSPool, ObjectHash: osdmap.HashRjenkins},
			{ID: 2, Name: "ec", Type: osdmap.PoolErasure, Size: 5, MinSize: 4, PGNum: 64, PGPNum: 64, CrushRule: 1, Flags: osdmap.FlagHashPSPool, ObjectHash: osdmap.HashRjenkins, ECProfile: "k3m2"},
		}}
	for i := int32(0); i < 8; i++ {
		inc.NewOSDs[i] = osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}
	}
	m, err := osdmap.New("fsid", c).Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func apply(t *testing.T, m *osdmap.Map, inc *osdmap.Incremental) *osdmap.Map {
	t.Helper()
	inc.Epoch = m.Epoch + 1
	n, err := m.Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mapPG(t *testing.T, m *osdmap.Map, pool int64, seed uint32) osdmap.Mapping {
	t.Helper()
	mp, err := m.MapPG(osdmap.PGID{Pool: pool, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return mp
}

// A down OSD leaves a replicated up set (the others shift left) but stays a
// hole in an erasure up set (shard positions never move); CRUSH's raw choice
// is unchanged because down is not out.
func TestDownOSD(t *testing.T) {
	m := testMap(t)
	down := apply(t, m, &osdmap.Incremental{NewOSDs: map[int32]osdmap.OSD{3: {Exists: true, Up: false, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}}})
	hit := map[int64]bool{}
	for _, pool := range []int64{1, 2} {
		for s := uint32(0); s < 64; s++ {
			before, after := mapPG(t, m, pool, s), mapPG(t, down, pool, s)
			if !slices.Equal(before.Raw, after.Raw) {
				t.Fatalf("pool %d pg %d: raw changed on down: %v -> %v", pool, s, before.Raw, after.Raw)
			}
			var want []int32
			for _, o := range before.Raw {
				switch {
				case o != 3:
					want = append(want, o)
				case pool == 2:
					want = append(want, osdmap.NoOSD)
					hit[pool] = true
				default:
					hit[pool] = true
				}
			}
			if !slices.Equal(after.Up, want) || !slices.Equal(after.Acting, want) {
				t.Fatalf("pool %d pg %d: up %v acting %v, want %v", pool, s, after.Up, after.Acting, want)
			}
			for _, o := range want {
				if o != osdmap.NoOSD {
					if after.UpPrimary != o {
						t.Fatalf("pool %d pg %d: primary %d, want first live %d", pool, s, after.UpPrimary, o)
					}
					break
				}
			}
		}
	}
	if !hit[1] || !hit[2] {
		t.Fatal("osd.3 was in no PG; the test map is too small")
	}
}

// An OSD marked out receives no data: CRUSH re-places its PGs.
func TestOutOSD(t *testing.T) {
	m := apply(t, testMap(t), &osdmap.Incremental{NewOSDs: map[int32]osdmap.OSD{5: {Exists: true, Up: true, Weight: osdmap.WeightOut, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}}})
	for _, pool := range []int64{1, 2} {
		for s := uint32(0); s < 64; s++ {
			if mp := mapPG(t, m, pool, s); slices.Contains(mp.Raw, 5) {
				t.Fatalf("pool %d pg %d maps to out osd.5: %v", pool, s, mp.Raw)
			}
		}
	}
}

// Primary affinity 0 means never primary while another OSD of the set
// accepts; a replicated set moves the new primary to the front.
func TestPrimaryAffinity(t *testing.T) {
	m := testMap(t)
	shy := apply(t, m, &osdmap.Incremental{NewOSDs: map[int32]osdmap.OSD{0: {Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: 0}}})
	moved := 0
	for s := uint32(0); s < 64; s++ {
		before, after := mapPG(t, m, 1, s), mapPG(t, shy, 1, s)
		if after.UpPrimary == 0 || after.ActingPrimary == 0 {
			t.Fatalf("pg %d: osd.0 (affinity 0) is primary: %+v", s, after)
		}
		if after.Up[0] != after.UpPrimary {
			t.Fatalf("pg %d: replicated primary %d not moved to front of %v", s, after.UpPrimary, after.Up)
		}
		a, b := slices.Clone(before.Up), slices.Clone(after.Up)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("pg %d: affinity changed membership %v -> %v", s, before.Up, after.Up)
		}
		if before.UpPrimary == 0 {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("osd.0 was primary of no PG; the test proves nothing")
	}
	// Erasure pools keep positions: the primary changes, the order does not.
	for s := uint32(0); s < 64; s++ {
		before, after := mapPG(t, m, 2, s), mapPG(t, shy, 2, s)
		if !slices.Equal(before.Up, after.Up) {
			t.Fatalf("ec pg %d: affinity reordered shards %v -> %v", s, before.Up, after.Up)
		}
		if after.UpPrimary == 0 {
			t.Fatalf("ec pg %d: osd.0 is primary", s)
		}
	}
}

// pg_temp replaces the acting set (down members dropped, or holes on
// erasure pools) and primary_temp the acting primary; up is unaffected.
func TestPGTempAndPrimaryTemp(t *testing.T) {
	m := testMap(t)
	pg := osdmap.PGID{Pool: 1, Seed: 7}
	ec := osdmap.PGID{Pool: 2, Seed: 7}
	base := mapPG(t, m, 1, 7)
	n := apply(t, m, &osdmap.Incremental{
		NewOSDs:   map[int32]osdmap.OSD{6: {Exists: true, Up: false, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}},
		NewPGTemp: map[osdmap.PGID][]int32{pg: {6, 4, 2}, ec: {1, 6, 3, 5, 7}},
	})
	got := mapPG(t, n, 1, 7)
	if !slices.Equal(got.Acting, []int32{4, 2}) || got.ActingPrimary != 4 {
		t.Fatalf("pg_temp acting %v primary %d, want [4 2] primary 4", got.Acting, got.ActingPrimary)
	}
	if !slices.Equal(got.Up, base.Up) {
		t.Fatalf("pg_temp changed up: %v -> %v", base.Up, got.Up)
	}
	gotEC := mapPG(t, n, 2, 7)
	if !slices.Equal(gotEC.Acting, []int32{1, osdmap.NoOSD, 3, 5, 7}) || gotEC.ActingPrimary != 1 {
		t.Fatalf("ec pg_temp acting %v primary %d", gotEC.Acting, gotEC.ActingPrimary)
	}
	n = apply(t, n, &osdmap.Incremental{NewPrimaryTemp: map[osdmap.PGID]int32{pg: 2}})
	if got := mapPG(t, n, 1, 7); got.ActingPrimary != 2 {
		t.Fatalf("primary_temp: acting primary %d, want 2", got.ActingPrimary)
	}
	// removing both restores the CRUSH mapping
	n = apply(t, n, &osdmap.Incremental{NewPGTemp: map[osdmap.PGID][]int32{pg: nil}, NewPrimaryTemp: map[osdmap.PGID]int32{pg: -1}})
	if got := mapPG(t, n, 1, 7); !slices.Equal(got.Acting, got.Up) || got.ActingPrimary != got.UpPrimary {
		t.Fatalf("after removing temps: %+v", got)
	}
	// A raw seed folds to its PG before the pg_temp lookup.
	raw := osdmap.PGID{Pool: 1, Seed: 7 + 64*5}
	n = apply(t, n, &osdmap.Incremental{NewPGTemp: map[osdmap.PGID][]int32{pg: {1, 3}}})
	if got := mapPG(t, n, 1, raw.Seed); !slices.Equal(got.Acting, []int32{1, 3}) {
		t.Fatalf("raw seed %d: acting %v, want pg_temp [1 3]", raw.Seed, got.Acting)
	}
}

// pg_upmap replaces CRUSH's choice (the raw and up sets; acting follows
// unless a pg_temp holds) for the folded PG, and is ignored while it
// names an OSD that is out or does not exist, or has not the pool's
// size; removing it, or deleting the pool, restores CRUSH's choice.
func TestPGUpmap(t *testing.T) {
	m := testMap(t)
	base := mapPG(t, m, 2, 7)
	crushRaw, err := m.CrushOSDs(2)
	if err != nil || !slices.Equal(crushRaw[7], base.Raw) {
		t.Fatalf("CrushOSDs %v, mapping %v: %v", crushRaw[7], base.Raw, err)
	}
	pg := osdmap.PGID{Pool: 2, Seed: 7}
	want := slices.Clone(base.Raw)
	slices.Reverse(want)
	n := apply(t, m, &osdmap.Incremental{NewPGUpmap: map[osdmap.PGID][]int32{pg: want}})
	got := mapPG(t, n, 2, 7+64*3) // a raw seed folds to pg
	if !slices.Equal(got.Raw, want) || !slices.Equal(got.Up, want) || !slices.Equal(got.Acting, want) || got.ActingPrimary != want[0] {
		t.Fatalf("pg_upmap %v: %+v", want, got)
	}
	if after, _ := n.CrushOSDs(2); !slices.Equal(after[7], base.Raw) {
		t.Fatalf("CrushOSDs with a pg_upmap: %v, want CRUSH's %v", after[7], base.Raw)
	}
	// an OSD of it marked out: CRUSH's choice
	out := n.OSDs[want[1]]
	out.Weight = 0
	if got := mapPG(t, apply(t, n, &osdmap.Incremental{NewOSDs: map[int32]osdmap.OSD{want[1]: out}}), 2, 7); slices.Contains(got.Raw, want[1]) {
		t.Fatalf("pg_upmap naming out osd.%d applied: %v", want[1], got.Raw)
	}
	short := apply(t, n, &osdmap.Incremental{NewPGUpmap: map[osdmap.PGID][]int32{pg: want[:2]}})
	if got := mapPG(t, short, 2, 7); !slices.Equal(got.Raw, base.Raw) {
		t.Fatalf("pg_upmap shorter than the pool's size applied: %v", got.Raw)
	}
	if got := mapPG(t, apply(t, n, &osdmap.Incremental{NewPGUpmap: map[osdmap.PGID][]int32{pg: nil}}), 2, 7); !slices.Equal(got.Raw, base.Raw) {
		t.Fatalf("removed pg_upmap: %v, want %v", got.Raw, base.Raw)
	}
	if gone := apply(t, n, &osdmap.Incremental{OldPools: []int64{2}}); len(gone.PGUpmap) != 0 {
		t.Fatalf("pg_upmap of a deleted pool kept: %v", gone.PGUpmap)
	}
}

func TestApplyEpochAndValidation(t *testing.T) {
	m := testMap(t)
	if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 2}); !errors.Is(err, osdmap.ErrEpoch) {
		t.Fatalf("skipping an epoch: err %v, want ErrEpoch", err)
	}
	bad := []*osdmap.Pool{
		{ID: 9, Name: "zero-pgs", Type: osdmap.PoolReplicated, Size: 3, MinSize: 2, PGNum: 0, PGPNum: 0, ObjectHash: osdmap.HashRjenkins},
		{ID: 9, Name: "min>size", Type: osdmap.PoolReplicated, Size: 2, MinSize: 3, PGNum: 8, PGPNum: 8, ObjectHash: osdmap.HashRjenkins},
		{ID: 9, Name: "pgp>pg", Type: osdmap.PoolReplicated, Size: 2, MinSize: 1, PGNum: 8, PGPNum: 16, ObjectHash: osdmap.HashRjenkins},
		{ID: 9, Name: "", Type: osdmap.PoolReplicated, Size: 2, MinSize: 1, PGNum: 8, PGPNum: 8, ObjectHash: osdmap.HashRjenkins},
	}
	for _, p := range bad {
		if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewPools: []*osdmap.Pool{p}}); err == nil {
			t.Errorf("pool %+v accepted", p)
		}
	}
	if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewOSDs: map[int32]osdmap.OSD{8: {Exists: true}}}); err == nil {
		t.Error("osd beyond max_osd accepted")
	}
	// Apply never modifies its input.
	before := m.Encode()
	n := apply(t, m, &osdmap.Incremental{OldPools: []int64{2}, NewOSDs: map[int32]osdmap.OSD{1: {}}})
	if !bytes.Equal(before, m.Encode()) {
		t.Fatal("Apply modified the base map")
	}
	if _, err := n.Pool(2); !errors.Is(err, osdmap.ErrNoPool) {
		t.Fatalf("deleted pool: err %v", err)
	}
	if _, err := n.ObjectToPG(42, "x", ""); !errors.Is(err, osdmap.ErrNoPool) {
		t.Fatalf("unknown pool: err %v", err)
	}
}

func sampleIncremental(t *testing.T, m *osdmap.Map) *osdmap.Incremental {
	c, err := crush.Compile([]byte(flatCrush))
	if err != nil {
		t.Fatal(err)
	}
	flags := osdmap.FlagNoOut | osdmap.FlagNoDeepScrub
	return &osdmap.Incremental{Epoch: m.Epoch + 1, NewCrush: c, NewMaxOSD: 10, NewFlags: &flags,
		NewPools: []*osdmap.Pool{{ID: 3, Name: "new", Type: osdmap.PoolReplicated, Size: 2, MinSize: 1, PGNum: 16, PGPNum: 8, ObjectHash: osdmap.HashLinux}},
		OldPools: []int64{2},
		NewOSDs: map[int32]osdmap.OSD{9: {Exists: true, Up: true, Weight: 0x8000, PrimaryAffinity: 0x4000, Addr: "127.0.0.1:6800", ClusterAddr: "127.0.1.1:6801", UpFrom: m.Epoch + 1},
			8: {Exists: true, AutoOut: true}, 7: {Exists: true, Fullness: osdmap.Full, Lost: true}},
		NewPGTemp:      map[osdmap.PGID][]int32{{Pool: 1, Seed: 3}: {9, 1}},
		NewPrimaryTemp: map[osdmap.PGID]int32{{Pool: 1, Seed: 4}: 2},
		NewPGUpmap:     map[osdmap.PGID][]int32{{Pool: 1, Seed: 5}: {1, 9, 3}, {Pool: 1, Seed: 6}: nil},
	}
}

// Incrementals and maps survive encode/decode exactly, and applying a
// decoded incremental gives the same map as applying the original.
func TestEncodeRoundTrip(t *testing.T) {
	m := testMap(t)
	inc := sampleIncremental(t, m)
	b := inc.Encode()
	inc2, err := osdmap.DecodeIncremental(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(inc2.Encode(), b) {
		t.Fatal("incremental re-encodes differently")
	}
	n1, err := m.Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := m.Apply(inc2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(n1.Encode(), n2.Encode()) {
		t.Fatal("decoded incremental applies differently")
	}
	m2, err := osdmap.Decode(n1.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if m2.Flags.String() != "noout,nodeep-scrub" || !m2.OSDs[8].AutoOut || m2.OSDs[9].AutoOut || m2.OSDs[7].Fullness != osdmap.Full || m2.OSDs[7].AutoOut || !m2.OSDs[7].Lost || m2.OSDs[8].Lost {
		t.Fatalf("decoded map: flags %q, osd.8 auto-out %v, osd.9 auto-out %v", m2.Flags, m2.OSDs[8].AutoOut, m2.OSDs[9].AutoOut)
	}
	if u := m2.PGUpmap[osdmap.PGID{Pool: 1, Seed: 5}]; !slices.Equal(u, []int32{1, 9, 3}) || len(m2.PGUpmap) != 1 {
		t.Fatalf("decoded map: pg_upmap %v", m2.PGUpmap)
	}
	if m2.OSDs[9].ClusterAddr != "127.0.1.1:6801" || m2.OSDs[9].BackAddr() != "127.0.1.1:6801" || m2.OSDs[8].ClusterAddr != "" || m2.OSDs[8].BackAddr() != m2.OSDs[8].Addr {
		t.Fatalf("decoded map: osd.9 cluster address %q, osd.8 %q", m2.OSDs[9].ClusterAddr, m2.OSDs[8].ClusterAddr)
	}
	if m2.OSDs[9].UpFrom != n1.Epoch || m2.OSDs[8].UpFrom != 0 {
		t.Fatalf("decoded map: osd.9 up_from %d (want %d), osd.8 %d", m2.OSDs[9].UpFrom, n1.Epoch, m2.OSDs[8].UpFrom)
	}
	if !bytes.Equal(m2.Encode(), n1.Encode()) {
		t.Fatal("map re-encodes differently")
	}
	for s := uint32(0); s < 16; s++ {
		a, b := mapPG(t, n1, 3, s), mapPG(t, m2, 3, s)
		if !slices.Equal(a.Acting, b.Acting) || a.ActingPrimary != b.ActingPrimary {
			t.Fatalf("decoded map maps pg 3.%x differently", s)
		}
	}
}

// Every truncation of a valid encoding is rejected with ErrCorrupt.
func TestDecodeTruncated(t *testing.T) {
	m := testMap(t)
	for _, b := range [][]byte{m.Encode(), sampleIncremental(t, m).Encode()} {
		for i := 0; i < len(b); i++ {
			_, err1 := osdmap.Decode(b[:i])
			_, err2 := osdmap.DecodeIncremental(b[:i])
			if !errors.Is(err1, wire.ErrCorrupt) || !errors.Is(err2, wire.ErrCorrupt) {
				t.Fatalf("truncated at %d/%d: errors %v / %v, want ErrCorrupt", i, len(b), err1, err2)
			}
		}
	}
}

// A newer writer may append fields to the map section: this reader skips
// them; a section that demands a newer reader is refused.
func TestDecodeForwardCompatible(t *testing.T) {
	b := testMap(t).Encode()
	const hdr = 8 // magic
	grown := append([]byte(nil), b[:hdr]...)
	grown = append(grown, 8, 1) // version 8 (one past this reader's), compat 1
	n := uint32(len(b)-hdr-6) + 3
	grown = append(grown, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	grown = append(grown, b[hdr+6:]...)
	grown = append(grown, 0xaa, 0xbb, 0xcc)
	m2, err := osdmap.Decode(grown)
	if err != nil {
		t.Fatalf("newer map with extra fields: %v", err)
	}
	if !bytes.Equal(m2.Encode(), b) {
		t.Fatal("newer map decoded to different content")
	}
	grown[hdr+1] = 8 // compat 8: needs a newer reader
	if _, err := osdmap.Decode(grown); !errors.Is(err, wire.ErrCorrupt) {
		t.Fatalf("compat 8: err %v, want ErrCorrupt", err)
	}
}

// A map written before pg_upmap, the blocklist and pg_upmap_items (v4:
// none of the three fields) or before pg_upmap_items (v6) still decodes;
// a map with pg_upmap entries demands a reader that knows them (compat
// 5), one with pg_upmap_items compat 7, one without either does not.
func TestDecodeBeforeUpmap(t *testing.T) {
	b := testMap(t).Encode()
	const hdr = 8 // magic
	if b[hdr] != 7 || b[hdr+1] != 1 || !bytes.Equal(b[len(b)-12:], make([]byte, 12)) {
		t.Fatalf("header % x, tail % x: not a v7 map without pg_upmap, blocklist and pg_upmap_items", b[hdr:hdr+2], b[len(b)-12:])
	}
	for _, c := range []struct {
		version byte
		cut     int // the trailing empty counts an older writer did not write
	}{{4, 12}, {6, 4}} {
		old := slices.Clone(b[:len(b)-c.cut])
		old[hdr] = c.version
		n := uint32(len(old) - hdr - 6)
		old[hdr+2], old[hdr+3], old[hdr+4], old[hdr+5] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
		m, err := osdmap.Decode(old)
		if err != nil {
			t.Fatalf("v%d map: %v", c.version, err)
		}
		if !bytes.Equal(m.Encode(), b) {
			t.Fatalf("v%d map decoded to different content", c.version)
		}
	}
	m, err := osdmap.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	items := apply(t, m, &osdmap.Incremental{NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{{Pool: 2, Seed: 1}: {{From: 1, To: 2}}}})
	e := items.Encode()
	if e[hdr+1] != 7 {
		t.Fatalf("map with pg_upmap_items has compat %d, want 7", e[hdr+1])
	}
	back, err := osdmap.Decode(e)
	if err != nil || !bytes.Equal(back.Encode(), e) || len(back.PGUpmapItems) != 1 {
		t.Fatalf("map with pg_upmap_items: decode %v, items %v", err, back.PGUpmapItems)
	}
	if e := (&osdmap.Incremental{Epoch: 2, NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{{Pool: 2, Seed: 1}: nil}}).Encode(); e[hdr+1] != 7 {
		t.Fatalf("incremental with pg_upmap_items changes has compat %d, want 7", e[hdr+1])
	}
	up := apply(t, m, &osdmap.Incremental{NewPGUpmap: map[osdmap.PGID][]int32{{Pool: 2, Seed: 1}: {1, 2, 3, 4, 5}}})
	if e := up.Encode(); e[hdr+1] != 5 {
		t.Fatalf("map with pg_upmap has compat %d, want 5", e[hdr+1])
	}
	inc := &osdmap.Incremental{Epoch: 2, NewPGUpmap: map[osdmap.PGID][]int32{{Pool: 2, Seed: 1}: nil}}
	if e := inc.Encode(); e[hdr+1] != 5 {
		t.Fatalf("incremental with pg_upmap changes has compat %d, want 5", e[hdr+1])
	}
}

func TestParsePGID(t *testing.T) {
	pg, err := osdmap.ParsePGID("12.1f")
	if err != nil || pg != (osdmap.PGID{Pool: 12, Seed: 0x1f}) || pg.String() != "12.1f" {
		t.Fatalf("ParsePGID: %v %v", pg, err)
	}
	for _, bad := range []string{"", "1", "x.1", "1.zz", "-1.0"} {
		if _, err := osdmap.ParsePGID(bad); err == nil {
			t.Errorf("ParsePGID(%q) accepted", bad)
		}
	}
}

// stable_mod keeps every seed below b and, when pg_num grows to the next
// power of two, only seeds of the splitting PGs move.
func TestStableMod(t *testing.T) {
	for b := uint32(1); b <= 300; b++ {
		mask := uint32(1)
		for mask < b {
			mask <<= 1
		}
		mask--
		for x := uint32(0); x < 2048; x++ {
			r := osdmap.StableMod(x, b, mask)
			if r >= b {
				t.Fatalf("StableMod(%d, %d) = %d ≥ b", x, b, r)
			}
			if r2 := osdmap.StableMod(x, b+1, max(mask, nextMask(b+1))); r2 != r && r2 != b {
				t.Fatalf("growing pg_num %d→%d moved seed %d from %d to %d, not to the new PG", b, b+1, x, r, r2)
			}
		}
	}
}

func nextMask(b uint32) uint32 {
	m := uint32(1)
	for m < b {
		m <<= 1
	}
	return m - 1
}

func FuzzDecodeIncremental(f *testing.F) {
	c, err := crush.Compile([]byte(flatCrush))
	if err != nil {
		f.Fatal(err)
	}
	base := osdmap.New("f", c)
	f.Add((&osdmap.Incremental{Epoch: 1}).Encode())
	f.Add((&osdmap.Incremental{Epoch: 1, NewCrush: c, NewMaxOSD: 3,
		NewPools:   []*osdmap.Pool{{ID: 1, Name: "p", Type: osdmap.PoolReplicated, Size: 3, MinSize: 2, PGNum: 8, PGPNum: 8, ObjectHash: osdmap.HashRjenkins}},
		NewOSDs:    map[int32]osdmap.OSD{0: {Exists: true, Up: true, Weight: osdmap.WeightIn}},
		NewPGUpmap: map[osdmap.PGID][]int32{{Pool: 1, Seed: 2}: {0, osdmap.NoOSD, -3}},
	}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		inc, err := osdmap.DecodeIncremental(b)
		if err != nil {
			if !errors.Is(err, wire.ErrCorrupt) {
				t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := osdmap.DecodeIncremental(inc.Encode())
		if err != nil || !bytes.Equal(again.Encode(), inc.Encode()) {
			t.Fatalf("decoded incremental does not round-trip: %v", err)
		}
		inc.Epoch = 1
		m, err := base.Apply(inc)
		if err != nil {
			return
		}
		// Valid but slow inputs are not mapped whole: a fuzz iteration
		// must stay fast (retries multiply with pool size, hierarchy depth
		// and PG count).
		if m.Crush != nil && m.Crush.MaxRetries() > 20 {
			return
		}
		for _, id := range m.PoolIDs() {
			for seed := uint32(0); seed < min(m.Pools[id].PGNum, 32); seed++ {
				if _, err := m.MapPG(osdmap.PGID{Pool: id, Seed: seed}); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// Many goroutines may map against one published map at once (clients do);
// run under -race this checks that mapping shares nothing mutable.
func TestConcurrentMapping(t *testing.T) {
	m := testMap(t)
	want := map[uint32][]int32{}
	for s := uint32(0); s < 64; s++ {
		want[s] = mapPG(t, m, 2, s).Acting
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for s := uint32(0); s < 64; s++ {
				mp, err := m.MapPG(osdmap.PGID{Pool: 2, Seed: s})
				if err == nil && !slices.Equal(mp.Acting, want[s]) {
					err = fmt.Errorf("pg 2.%x: %v, want %v", s, mp.Acting, want[s])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Removing an OSD leaves its weight (Ceph does not reset it), so CRUSH may
// still choose it; the mapping then drops it (replicated) or leaves a hole
// (erasure) instead of choosing another OSD.
func TestRemovedOSDKeepsWeight(t *testing.T) {
	m := testMap(t)
	gone := apply(t, m, &osdmap.Incremental{NewOSDs: map[int32]osdmap.OSD{3: {Exists: false, Weight: osdmap.WeightIn}}})
	hit := false
	for _, pool := range []int64{1, 2} {
		for s := uint32(0); s < 64; s++ {
			before, after := mapPG(t, m, pool, s), mapPG(t, gone, pool, s)
			var want []int32
			for _, o := range before.Raw {
				switch {
				case o != 3:
					want = append(want, o)
				case pool == 2:
					want = append(want, osdmap.NoOSD)
					hit = true
				default:
					hit = true
				}
			}
			if !slices.Equal(after.Raw, want) {
				t.Fatalf("pool %d pg %d: raw %v, want %v", pool, s, after.Raw, want)
			}
		}
	}
	if !hit {
		t.Fatal("osd.3 in no PG")
	}
}

func TestPoolNamesAndOrder(t *testing.T) {
	m := testMap(t)
	dup := &osdmap.Pool{ID: 7, Name: "rep", Type: osdmap.PoolReplicated, Size: 2, MinSize: 1, PGNum: 8, PGPNum: 8, ObjectHash: osdmap.HashRjenkins}
	if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewPools: []*osdmap.Pool{dup}}); err == nil {
		t.Fatal("second pool named \"rep\" accepted")
	}
	if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewPools: []*osdmap.Pool{nil}}); err == nil {
		t.Fatal("nil pool accepted")
	}
	if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewMaxOSD: osdmap.MaxOSDs + 1}); err == nil {
		t.Fatal("max_osd above the limit accepted")
	}
	// a pool both created and deleted in one epoch ends deleted (Ceph's order)
	dup.Name = "brief"
	n := apply(t, m, &osdmap.Incremental{NewPools: []*osdmap.Pool{dup}, OldPools: []int64{7}})
	if _, err := n.Pool(7); !errors.Is(err, osdmap.ErrNoPool) {
		t.Fatalf("pool 7: %v", err)
	}
}

// FuzzDecode: the full map decoder (a peer's or a MON's reply) answers an
// error wrapping ErrCorrupt or a map that round-trips.
func FuzzDecode(f *testing.F) {
	c, err := crush.Compile([]byte(flatCrush))
	if err != nil {
		f.Fatal(err)
	}
	m, err := osdmap.New("f", c).Apply(&osdmap.Incremental{Epoch: 1, NewMaxOSD: 3,
		NewPools: []*osdmap.Pool{{ID: 1, Name: "p", Type: osdmap.PoolReplicated, Size: 3, MinSize: 2, PGNum: 8, PGPNum: 8, ObjectHash: osdmap.HashRjenkins}},
		NewOSDs:  map[int32]osdmap.OSD{0: {Exists: true, Up: true, Weight: osdmap.WeightIn}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(m.Encode())
	f.Add(osdmap.New("f", c).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := osdmap.Decode(b)
		if err != nil {
			if !errors.Is(err, wire.ErrCorrupt) {
				t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := osdmap.Decode(m.Encode())
		if err != nil || !bytes.Equal(again.Encode(), m.Encode()) {
			t.Fatalf("decoded map does not round-trip: %v", err)
		}
	})
}

// pg_upmap_items follow OSDMap::_apply_upmap's rules: a pair replaces its
// From where it stands (an erasure-coded PG keeps the position), not when
// To is already a member or is out; pairs apply in order, so a swap of two
// members is no change; an item of a PG whose pg_upmap is refused is
// ignored with it; removing the items restores CRUSH's choice.
func TestUpmapItems(t *testing.T) {
	m := testMap(t)
	for _, pool := range []int64{1, 2} {
		pg := osdmap.PGID{Pool: pool, Seed: 5}
		base := mapPG(t, m, pool, 5).Up
		var outsider int32 = -1
		for o := int32(0); o < 8 && outsider < 0; o++ {
			if !slices.Contains(base, o) {
				outsider = o
			}
		}
		with := func(items ...osdmap.UpmapItem) []int32 {
			return mapPG(t, apply(t, m, &osdmap.Incremental{NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{pg: items}}), pool, 5).Up
		}
		want := slices.Clone(base)
		want[1] = outsider
		if got := with(osdmap.UpmapItem{From: base[1], To: outsider}); !slices.Equal(got, want) {
			t.Errorf("pool %d: %v with %d->%d = %v, want %v", pool, base, base[1], outsider, got, want)
		}
		if got := with(osdmap.UpmapItem{From: base[1], To: base[2]}); !slices.Equal(got, base) {
			t.Errorf("pool %d: a pair to a member changed %v to %v", pool, base, got)
		}
		if got := with(osdmap.UpmapItem{From: base[0], To: base[1]}, osdmap.UpmapItem{From: base[1], To: base[0]}); !slices.Equal(got, base) {
			t.Errorf("pool %d: a swap changed %v to %v", pool, base, got)
		}
		out := apply(t, m, &osdmap.Incremental{
			NewOSDs:         map[int32]osdmap.OSD{outsider: {Exists: true, Up: true, Weight: 0, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}},
			NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{pg: {{From: base[1], To: outsider}}}})
		if got, crush := mapPG(t, out, pool, 5).Up, mapPG(t, apply(t, m, &osdmap.Incremental{NewOSDs: map[int32]osdmap.OSD{outsider: {Exists: true, Up: true, Weight: 0, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}}}), pool, 5).Up; !slices.Equal(got, crush) {
			t.Errorf("pool %d: a pair to an out OSD applied: %v, want CRUSH's %v", pool, got, crush)
		}
		refused := slices.Clone(base)
		refused[0] = 99 // no such OSD: the pg_upmap does not apply
		both := apply(t, m, &osdmap.Incremental{NewPGUpmap: map[osdmap.PGID][]int32{pg: refused},
			NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{pg: {{From: base[1], To: outsider}}}})
		if got := mapPG(t, both, pool, 5).Up; !slices.Equal(got, base) {
			t.Errorf("pool %d: items applied under a refused pg_upmap: %v, want %v", pool, got, base)
		}
		moved := apply(t, m, &osdmap.Incremental{NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{pg: {{From: base[1], To: outsider}}}})
		back := apply(t, moved, &osdmap.Incremental{NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{pg: nil}})
		if got := mapPG(t, back, pool, 5).Up; !slices.Equal(got, base) || len(back.PGUpmapItems) != 0 {
			t.Errorf("pool %d: after removing the items %v (%d entries), want %v", pool, got, len(back.PGUpmapItems), base)
		}
		gone := apply(t, moved, &osdmap.Incremental{OldPools: []int64{pool}})
		if len(gone.PGUpmapItems) != 0 {
			t.Errorf("pool %d removed, its items stay: %v", pool, gone.PGUpmapItems)
		}
	}
}

// TestUpOSDs: only OSDs that exist and are up, in id order.
func TestUpOSDs(t *testing.T) {
	m := &osdmap.Map{OSDs: []osdmap.OSD{{Exists: true, Up: true}, {Exists: true}, {Up: true}, {}, {Exists: true, Up: true}}}
	if got := m.UpOSDs(); !slices.Equal(got, []int32{0, 4}) {
		t.Fatalf("UpOSDs %v, want [0 4]", got)
	}
	if got := (&osdmap.Map{}).UpOSDs(); got != nil {
		t.Fatalf("an empty map's UpOSDs %v", got)
	}
}
