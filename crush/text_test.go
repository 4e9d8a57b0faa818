package crush_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/internal/wire"
)

const small = `device 0 osd.0 class ssd
device 1 osd.1
type 0 osd
type 1 host
type 11 root
host h0 {
	alg straw2
	item osd.0 weight 1.5
	item osd.1
}
root default {
	item h0
}
rule r {
	id 0
	type replicated
	step take default
	step chooseleaf firstn 0 type host
	step emit
}
`

// Malformed maps report the line and column of the offending token and
// what was expected there.
func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"bad char", "device 0 osd.0\n  type 0 osd @", 2, 14, "unexpected character"},
		{"device id", "device x osd.0", 1, 8, "expected device id"},
		{"unknown tunable", "tunable fast_please 1", 1, 9, "unknown tunable"},
		{"negative tunable", "tunable choose_local_tries -1", 1, 28, "must be in [0, 2147483647]"},
		{"tunable overflow", "tunable chooseleaf_vary_r 256", 1, 27, "must be in [0, 255]"},
		{"unterminated bucket", "type 1 host\nhost h {\n alg straw2\n", 4, 1, "expected id, alg, hash, item"},
		{"undefined type", "root r {\n}", 1, 1, "bucket type \"root\" is not defined"},
		{"undefined item", "type 0 osd\ntype 1 host\nhost h {\n\titem osd.7\n}", 4, 7, "item \"osd.7\" in bucket \"h\" is not defined"},
		{"unknown alg", "type 1 host\nhost h { alg straw3 }", 2, 14, "unknown bucket alg"},
		{"negative weight", "device 0 osd.0\ntype 1 host\nhost h { item osd.0 weight -1 }", 3, 28, "non-negative weight"},
		{"bad step", strings.Replace(small, "step emit", "step launch", 1), 19, 7, "expected take, choose"},
		{"bad mode", strings.Replace(small, "chooseleaf firstn", "chooseleaf first", 1), 18, 18, "expected firstn or indep"},
		{"rule type", strings.Replace(small, "type replicated", "type mirrored", 1), 16, 7, "expected rule type"},
		{"take class missing", strings.Replace(small, "take default", "take default class nvme", 1), 17, 26, "device class \"nvme\" does not exist"},
		{"duplicate device", "device 0 a\ndevice 1 a", 2, 10, "defined twice"},
		{"positive bucket id", "type 1 host\nhost h { id 3 }", 2, 13, "bucket id must be in"},
		{"huge bucket id", "type 1 host\nhost h { id -2000000000 }", 2, 13, "bucket id must be in"},
		{"huge device id", "device 2000000000 osd.x", 1, 8, "device id must be in"},
		{"rule without id", "rule x {\n type replicated\n}", 3, 1, "has no id"},
		{"uniform under a class rule", strings.Replace(strings.Replace(small, "alg straw2\n\titem osd.0 weight 1.5", "alg uniform\n\titem osd.0", 1), "take default", "take default class ssd", 1), 17, 12, "step take default has no class information"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := crush.Compile([]byte(c.src))
			var se *crush.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err %v, want *SyntaxError", err)
			}
			if se.Line != c.line || se.Col != c.col || !strings.Contains(se.Msg, c.msg) {
				t.Fatalf("got %v, want line %d, column %d, %q", err, c.line, c.col, c.msg)
			}
		})
	}
	if _, err := crush.Compile([]byte(small + "choose_args 0 {\n}\n")); !errors.Is(err, crush.ErrUnsupported) {
		t.Fatalf("choose_args: err %v, want ErrUnsupported", err)
	}
}

// Defaults: a device item weighs 1.0, a bucket item its subtree, and a map
// without tunable lines gets the legacy values (as crushtool).
func TestCompileDefaults(t *testing.T) {
	m, err := crush.Compile([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	h := m.Bucket(-1)
	root := m.Bucket(-2)
	if h.Name != "h0" || root.Name != "default" {
		t.Fatalf("ids: %d=%s %d=%s", h.ID, h.Name, root.ID, root.Name)
	}
	if h.ItemWeights[0] != 0x18000 || h.ItemWeights[1] != 0x10000 || root.ItemWeights[0] != 0x28000 {
		t.Fatalf("weights %#x %#x root %#x", h.ItemWeights[0], h.ItemWeights[1], root.ItemWeights[0])
	}
	if m.Tunables != crush.LegacyTunables() {
		t.Fatalf("tunables %+v, want legacy", m.Tunables)
	}
	if id, ok := m.ShadowBucket(-2, "ssd"); !ok || m.Bucket(id).Name != "default~ssd" {
		t.Fatalf("no ssd shadow root: %d %v", id, ok)
	}
}

// The binary encoding keeps every bit of the map, and Decode rejects
// truncated input.
func TestEncodeDecode(t *testing.T) {
	src, err := os.ReadFile("../testdata/crushtool/3x10x12-classes/source.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, err := crush.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	var e wire.Encoder
	m.Encode(&e)
	m2, err := crush.Decode(wire.NewDecoder(e.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Decompile(), m2.Decompile()) {
		t.Fatal("decoded map decompiles differently")
	}
	var e2 wire.Encoder
	m2.Encode(&e2)
	if !bytes.Equal(e.Bytes(), e2.Bytes()) {
		t.Fatal("re-encoding differs")
	}
	w := make([]uint32, m.MaxDevices())
	for i := range w {
		w[i] = crush.WeightOne
	}
	for x := uint32(0); x < 2000; x++ {
		for _, r := range []int{0, 2, 7} {
			a := m.DoRule(r, x, 11, w, nil)
			b := m2.DoRule(r, x, 11, w, nil)
			if crush.FormatMapping(a) != crush.FormatMapping(b) {
				t.Fatalf("rule %d x %d: %v vs %v", r, x, a, b)
			}
		}
	}
	b := e.Bytes()
	for i := 0; i < len(b); i += 7 {
		if _, err := crush.Decode(wire.NewDecoder(b[:i])); !errors.Is(err, wire.ErrCorrupt) {
			t.Fatalf("truncated at %d: err %v", i, err)
		}
	}
}

// A bucket cycle in a binary map is refused (mapping would not terminate).
func TestDecodeRejectsCycle(t *testing.T) {
	m, err := crush.Compile([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	m.Bucket(-1).Items[1] = -2 // h0 now contains its own root
	var e wire.Encoder
	m.Encode(&e)
	if _, err := crush.Decode(wire.NewDecoder(e.Bytes())); !errors.Is(err, wire.ErrCorrupt) {
		t.Fatalf("cycle: err %v, want ErrCorrupt", err)
	}
}

const optimal = "tunable choose_local_tries 0\ntunable choose_local_fallback_tries 0\n" +
	"tunable choose_total_tries 50\ntunable chooseleaf_descend_once 1\ntunable chooseleaf_vary_r 1\n" +
	"tunable chooseleaf_stable 1\ntunable straw_calc_version 1\ntunable allowed_bucket_algs 54\n"

// With optimal tunables, weight-0 devices are never chosen and a reweight
// of 0 marks a device out; an indep rule that cannot fill a position leaves
// ItemNone there. (Under legacy tunables the local fallback search picks by
// permutation and can choose a weight-0 device, as in Ceph.)
func TestMappingEdges(t *testing.T) {
	m, err := crush.Compile([]byte(optimal + strings.Replace(small, "item osd.1\n", "item osd.1 weight 0\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	w := []uint32{crush.WeightOne, crush.WeightOne}
	for x := uint32(0); x < 500; x++ {
		if got := m.DoRule(0, x, 1, w, nil); len(got) != 1 || got[0] != 0 {
			t.Fatalf("x %d: %v, want [0]", x, got)
		}
		if got := m.DoRule(0, x, 1, []uint32{0, crush.WeightOne}, nil); len(got) != 0 {
			t.Fatalf("x %d with osd.0 out: %v, want []", x, got)
		}
	}
	ec, err := crush.Compile([]byte(strings.Replace(small, "type replicated\n\tstep take default\n\tstep chooseleaf firstn", "type erasure\n\tstep take default\n\tstep chooseleaf indep", 1)))
	if err != nil {
		t.Fatal(err)
	}
	got := ec.DoRule(0, 1, 3, w, nil)
	if len(got) != 3 || got[1] != crush.ItemNone || got[2] != crush.ItemNone {
		t.Fatalf("indep over one host: %v, want one OSD then two holes", got)
	}
	if got := m.DoRule(5, 1, 3, w, nil); len(got) != 0 {
		t.Fatalf("unknown rule: %v", got)
	}
}

func FuzzCompile(f *testing.F) {
	f.Add([]byte(small))
	// small seeds: the fuzzer minimises every new input it keeps
	for _, name := range []string{"one-host"} {
		if b, err := os.ReadFile("../testdata/crushtool/" + name + "/decompiled.txt"); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := crush.Compile(src)
		if err != nil {
			var se *crush.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			return
		}
		text := m.Decompile()
		m2, err := crush.Compile(text)
		if err != nil {
			t.Fatalf("decompiled map does not compile: %v\n%s", err, text)
		}
		d2 := m2.Decompile()
		m3, err := crush.Compile(d2)
		if err != nil {
			t.Fatalf("second generation does not compile: %v", err)
		}
		if d3 := m3.Decompile(); !bytes.Equal(d3, d2) {
			t.Fatalf("decompile is not a fixed point:\n%s\n---\n%s", d2, d3)
		}
		// Retry counts are the map's to choose, and a map may ask for
		// billions of retries of an unsatisfiable rule; map only the
		// sane ones.
		if m.MaxRetries() > 20 {
			return
		}
		w := make([]uint32, min(m.MaxDevices(), 1<<12))
		for i := range w {
			w[i] = crush.WeightOne
		}
		for _, r := range m.Rules() {
			for x := uint32(0); x < 8; x++ {
				m.DoRule(int(r.ID), x, 6, w, nil)
			}
		}
	})
}

// crush_ln(2^k - 1) is exactly k·2^44 (log2 of a power of two needs no
// table refinement): an independent check of the fixed-point core.
func TestLnPowersOfTwo(t *testing.T) {
	for k := 0; k < 16; k++ {
		u := uint32(1)<<k - 1
		if got, want := crush.CrushLnForTest(u), uint64(k)<<44; got != want {
			t.Errorf("crush_ln(%d) = %#x, want %#x (log2(%d) = %d)", u, got, want, u+1, k)
		}
	}
}

// A rule may emit buckets instead of devices. crushtool maps this map to
// [-1,-2] for x 0..3 and then crashes in its statistics (it counts uses
// per device with the bucket id as index); Shoal maps the same and its
// tester skips non-devices.
func TestRuleEmittingBuckets(t *testing.T) {
	src := "device 0 osd.0\ndevice 1 osd.1\ndevice 2 osd.2\ndevice 3 osd.3\ntype 0 osd\ntype 1 host\ntype 11 root\n" +
		"host h0 {\n alg straw2\n item osd.0\n item osd.1\n}\nhost h1 {\n alg straw2\n item osd.2\n item osd.3\n}\n" +
		"root default {\n alg straw2\n item h0\n item h1\n}\n" +
		"rule r {\n id 0\n type replicated\n min_size 1\n max_size 10\n step take default\n step choose firstn 0 type host\n step emit\n}\n"
	m, err := crush.Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w := []uint32{crush.WeightOne, crush.WeightOne, crush.WeightOne, crush.WeightOne}
	for x := uint32(0); x < 4; x++ {
		if got := crush.FormatMapping(m.DoRule(0, x, 2, w, nil)); got != "[-1,-2]" {
			t.Fatalf("x %d: %s, want [-1,-2] (crushtool)", x, got)
		}
	}
	o := crush.DefaultTestOptions()
	o.MinRep, o.MaxRep, o.ShowUtilization = 2, 2, true
	var out bytes.Buffer
	if err := m.Test(&out, o); err != nil {
		t.Fatal(err)
	}
}

// A tree bucket whose weights are all zero must not index past its items
// (Ceph reads out of bounds there).
func TestTreeAllZeroWeights(t *testing.T) {
	src := optimal + "device 0 osd.0\ndevice 1 osd.1\ndevice 2 osd.2\ntype 0 osd\ntype 11 root\n" +
		"root default {\n alg tree\n item osd.0 weight 0\n item osd.1 weight 0\n item osd.2 weight 0\n}\n" +
		"rule r {\n id 0\n type replicated\n step take default\n step choose firstn 0 type osd\n step emit\n}\n"
	m, err := crush.Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w := []uint32{crush.WeightOne, crush.WeightOne, crush.WeightOne}
	for x := uint32(0); x < 100; x++ {
		for _, d := range m.DoRule(0, x, 3, w, nil) {
			if d < 0 || d > 2 {
				t.Fatalf("x %d: device %d", x, d)
			}
		}
	}
}

// Buckets whose type is 0 (every type redefined as 0 here) reach the
// reweight test as leaves; mapping must not index weights with their
// negative ids (found by FuzzCompile).
func TestBucketsOfTypeZero(t *testing.T) {
	m, err := crush.Compile([]byte("device 0 osd.1\ntype 0 host\ntype 0 root\nhost h0 { item osd.1 }\nroot default { item h0 }\n" +
		"rule r {\n id 0\n step take default\n step choose firstn 0 type host\n step emit\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.DoRule(0, 0, 6, []uint32{crush.WeightOne}, nil); len(got) != 1 || got[0] != -1 {
		t.Fatalf("got %v, want the type-0 bucket h0 [-1]", got)
	}
}
