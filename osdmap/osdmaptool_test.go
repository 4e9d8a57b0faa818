package osdmap_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/internal/golden"
	"github.com/shoal-project/shoal/internal/mapgen"
	"github.com/shoal-project/shoal/osdmap"
)

// Vectors under testdata/osdmaptool were produced by Ceph's osdmaptool
// (Debian ceph-base): a map made with --createsimple, a CRUSH map from
// mapgen imported with --import-crush, OSD states set with --mark-*, then
// --dump json, --test-map-pgs-dump-all and --test-map-object. Regenerate
// with testdata/regen.sh.
var update = flag.Bool("update", false, "regenerate testdata/osdmaptool with the real osdmaptool")

const vectorDir = "../testdata/osdmaptool"

type osdmapVector struct {
	name    string
	seed    int64
	crush   mapgen.Spec
	pgBits  int
	pgpBits int
	size    int
	noHash  bool     // create the pool without the hashpspool flag
	marks   []string // osdmaptool --mark-* arguments
	// upmap runs Ceph's balancer (osdmaptool --upmap, max deviation 1)
	// and saves its pg_upmap_items into the map before the dumps.
	upmap bool
}

var osdmapVectors = []osdmapVector{
	{"6osd-pgp-half", 11, mapgen.Spec{HostsPerRack: 3, OSDsPerHost: 2, Tunables: "optimal", Alg: "straw2"}, 3, 2, 3, false, []string{"--mark-up-in"}, false},
	{"6osd-one-out", 12, mapgen.Spec{HostsPerRack: 3, OSDsPerHost: 2, Tunables: "optimal", Alg: "straw2", Classes: true}, 3, 3, 3, false, []string{"--mark-up-in", "--mark-out", "2"}, false},
	{"12osd-size2-nohash", 13, mapgen.Spec{HostsPerRack: 4, OSDsPerHost: 3, Tunables: "hammer", Alg: "straw"}, 4, 3, 2, true, []string{"--mark-up-in", "--mark-out", "5"}, false},
	{"40osd-size5", 14, mapgen.Spec{Racks: 2, HostsPerRack: 5, OSDsPerHost: 4, Tunables: "optimal", Alg: "mixed"}, 2, 2, 5, false, []string{"--mark-up-in"}, false},
	{"360osd-3x10x12", 15, mapgen.Spec{Racks: 3, HostsPerRack: 10, OSDsPerHost: 12, Tunables: "optimal", Alg: "straw2", Classes: true}, 2, 1, 3, false, []string{"--mark-up-in", "--mark-out", "100"}, false},
	{"60osd-upmap", 16, mapgen.Spec{Racks: 3, HostsPerRack: 4, OSDsPerHost: 5, Tunables: "optimal", Alg: "straw2"}, 4, 4, 3, false, []string{"--mark-up-in", "--mark-out", "7"}, true},
}

func objectNames(rng *rand.Rand) []string {
	names := []string{"a", "foo", "hello world", "rbd_data.1234abcd.0000000000000001", "ñandú", "exactly12byt", "elevenbytes"}
	for i := 0; i < 57; i++ {
		names = append(names, fmt.Sprintf("obj-%d-%x", i, rng.Uint32()))
	}
	return names
}

// generate runs the real tools and writes the vector directory.
func generate(t *testing.T, v osdmapVector, dir string) {
	rng := rand.New(rand.NewSource(v.seed))
	src, _ := mapgen.Generate(rng, v.crush)
	tmp := t.TempDir()
	srcPath, bin, om := filepath.Join(tmp, "crush.txt"), filepath.Join(tmp, "crush.bin"), filepath.Join(tmp, "om")
	if err := os.WriteFile(srcPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	golden.Run(t, "crushtool", "-c", srcPath, "-o", bin)
	nosd := v.crush.HostsPerRack * max(v.crush.Racks, 1) * v.crush.OSDsPerHost
	golden.Run(t, "osdmaptool", "--createsimple", strconv.Itoa(nosd), "--with-default-pool",
		"--pg-bits", strconv.Itoa(v.pgBits), "--pgp-bits", strconv.Itoa(v.pgpBits), om, "--clobber",
		"--osd_pool_default_size", strconv.Itoa(v.size),
		"--osd_pool_default_flag_hashpspool", strconv.FormatBool(!v.noHash))
	golden.Run(t, "osdmaptool", om, "--import-crush", bin)
	if v.upmap {
		golden.Run(t, "osdmaptool", append([]string{om}, append(v.marks, "--upmap", filepath.Join(tmp, "upmap.txt"),
			"--upmap-deviation", "1", "--upmap-max", "10000", "--save")...)...)
	}
	stripHeader := func(b []byte) []byte { // drop osdmaptool's "marking ..." lines
		var keep []string
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if !strings.HasPrefix(l, "marking ") {
				keep = append(keep, l)
			}
		}
		return []byte(strings.Join(keep, ""))
	}
	dump := stripHeader(golden.Run(t, "osdmaptool", append([]string{om}, append(v.marks, "--dump", "json")...)...))
	pgs := stripHeader(golden.Run(t, "osdmaptool", append([]string{om}, append(v.marks, "--test-map-pgs-dump-all", "--pool", "1")...)...))
	// Keep the per-PG lines; the statistics table after them is not
	// reproduced (osdmaptool indexes it with an unsigned -1 there).
	if i := bytes.Index(pgs, []byte("#osd\t")); i >= 0 {
		pgs = pgs[:i]
	}
	var objs bytes.Buffer
	for _, name := range objectNames(rng) {
		objs.Write(stripHeader(golden.Run(t, "osdmaptool", append([]string{om}, append(v.marks, "--test-map-object", name, "--pool", "1")...)...)))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"crush.txt": []byte(src), "dump.json": dump, "pgs.out": pgs, "objects.out": objs.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dumpJSON is the part of `osdmaptool --dump json` that placement uses.
type dumpJSON struct {
	Epoch  uint32 `json:"epoch"`
	MaxOSD int32  `json:"max_osd"`
	Pools  []struct {
		Pool       int64  `json:"pool"`
		Name       string `json:"pool_name"`
		Type       uint8  `json:"type"`
		Size       int    `json:"size"`
		MinSize    int    `json:"min_size"`
		CrushRule  int    `json:"crush_rule"`
		PGNum      uint32 `json:"pg_num"`
		PGPNum     uint32 `json:"pg_placement_num"`
		Flags      uint64 `json:"flags"`
		ObjectHash uint8  `json:"object_hash"`
	} `json:"pools"`
	OSDs []struct {
		OSD             int32    `json:"osd"`
		Up              int      `json:"up"`
		Weight          float64  `json:"weight"`
		PrimaryAffinity float64  `json:"primary_affinity"`
		State           []string `json:"state"`
	} `json:"osds"`
	PGTemp []struct {
		PGID string  `json:"pgid"`
		OSDs []int32 `json:"osds"`
	} `json:"pg_temp"`
	PrimaryTemp []struct {
		PGID string `json:"pgid"`
		OSD  int32  `json:"osd"`
	} `json:"primary_temp"`
	PGUpmapItems []struct {
		PGID     string `json:"pgid"`
		Mappings []struct {
			From int32 `json:"from"`
			To   int32 `json:"to"`
		} `json:"mappings"`
	} `json:"pg_upmap_items"`
}

// buildMap makes the Shoal map osdmaptool's dump describes.
func buildMap(t *testing.T, dump []byte, crushSrc []byte) *osdmap.Map {
	var d dumpJSON
	if err := json.Unmarshal(dump, &d); err != nil {
		t.Fatalf("dump.json: %v", err)
	}
	c, err := crush.Compile(crushSrc)
	if err != nil {
		t.Fatal(err)
	}
	inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: d.MaxOSD, NewOSDs: map[int32]osdmap.OSD{},
		NewPGTemp: map[osdmap.PGID][]int32{}, NewPrimaryTemp: map[osdmap.PGID]int32{}}
	for _, p := range d.Pools {
		inc.NewPools = append(inc.NewPools, &osdmap.Pool{ID: p.Pool, Name: p.Name, Type: osdmap.PoolType(p.Type),
			Size: p.Size, MinSize: p.MinSize, CrushRule: p.CrushRule, PGNum: p.PGNum, PGPNum: p.PGPNum,
			Flags: p.Flags, ObjectHash: p.ObjectHash})
	}
	for _, o := range d.OSDs {
		exists := false
		for _, s := range o.State {
			exists = exists || s == "exists"
		}
		inc.NewOSDs[o.OSD] = osdmap.OSD{Exists: exists, Up: o.Up == 1,
			Weight: uint32(o.Weight * osdmap.WeightIn), PrimaryAffinity: uint32(o.PrimaryAffinity * 0x10000)}
	}
	for _, pt := range d.PGTemp {
		pg, err := osdmap.ParsePGID(pt.PGID)
		if err != nil {
			t.Fatal(err)
		}
		inc.NewPGTemp[pg] = pt.OSDs
	}
	for _, pt := range d.PrimaryTemp {
		pg, err := osdmap.ParsePGID(pt.PGID)
		if err != nil {
			t.Fatal(err)
		}
		inc.NewPrimaryTemp[pg] = pt.OSD
	}
	inc.NewPGUpmapItems = map[osdmap.PGID][]osdmap.UpmapItem{}
	for _, u := range d.PGUpmapItems {
		pg, err := osdmap.ParsePGID(u.PGID)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range u.Mappings {
			inc.NewPGUpmapItems[pg] = append(inc.NewPGUpmapItems[pg], osdmap.UpmapItem{From: it.From, To: it.To})
		}
	}
	m, err := osdmap.New("", c).Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOsdmaptoolVectors(t *testing.T) {
	for _, v := range osdmapVectors {
		t.Run(v.name, func(t *testing.T) {
			dir := filepath.Join(vectorDir, v.name)
			if *update {
				generate(t, v, dir)
			}
			read := func(name string) []byte {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			m := buildMap(t, read("dump.json"), read("crush.txt"))
			var got bytes.Buffer
			if err := osdmap.DumpPGs(&got, m, 1, true); err != nil {
				t.Fatal(err)
			}
			if want := read("pgs.out"); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("--test-map-pgs-dump-all differs:\n%s", golden.FirstDiff(got.Bytes(), want, "shoal", "osdmaptool"))
			}
			got.Reset()
			for _, line := range strings.Split(strings.TrimSuffix(string(read("objects.out")), "\n"), "\n") {
				name := line[strings.Index(line, "'")+1 : strings.LastIndex(line, "'")]
				if err := osdmap.MapObject(&got, m, 1, name, ""); err != nil {
					t.Fatal(err)
				}
			}
			if want := read("objects.out"); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("--test-map-object differs:\n%s", golden.FirstDiff(got.Bytes(), want, "shoal", "osdmaptool"))
			}
		})
	}
}
