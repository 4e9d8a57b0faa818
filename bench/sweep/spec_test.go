package sweep

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseExpand(t *testing.T) {
	s, err := Parse([]byte(`
target:
  conf: /x/shoal.conf
  osds: 6
iterations: 2
duration: 20
ramp: 2s
benchmarks:
  rados-4m:
    type: rados
    mode: [write, seq]
    concurrency: [1, 4, 16]
  block:
    io_size: 4K
    iodepth: [1, 32]
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != 20*time.Second || s.Ramp != 2*time.Second || s.Iterations != 2 || s.Target.Kind != "shoal" || !s.Cleanup {
		t.Fatalf("spec %+v", s)
	}
	if s.Count() != 8 {
		t.Fatalf("count %d, want 2*3 + 2", s.Count())
	}
	var ids []string
	for _, p := range s.Points() {
		ids = append(ids, p.ID)
	}
	want := []string{
		"rados-4m.mode=write.concurrency=1", "rados-4m.mode=write.concurrency=4", "rados-4m.mode=write.concurrency=16",
		"rados-4m.mode=seq.concurrency=1", "rados-4m.mode=seq.concurrency=4", "rados-4m.mode=seq.concurrency=16",
		"block.iodepth=1", "block.iodepth=32",
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids\n%q\nwant\n%q", ids, want)
	}
	p := s.Points()[4]
	if p.Type != "rados" || p.Params["mode"] != "seq" || p.Params["concurrency"] != "4" || p.Params["op_size"] != "4M" || p.Params["pool"] != "data" {
		t.Fatalf("point %+v: defaults not filled in", p)
	}
	if !slices.Equal(p.Swept, []string{"mode", "concurrency"}) || p.Label() != "mode=seq concurrency=4" {
		t.Fatalf("swept %v label %q", p.Swept, p.Label())
	}
}

func TestKeyIgnoresPlacement(t *testing.T) {
	parse := func(pool string) Point {
		s, err := Parse([]byte("benchmarks:\n  rados:\n    pool: " + pool + "\n    concurrency: 8\n"))
		if err != nil {
			t.Fatal(err)
		}
		return s.Points()[0]
	}
	a, b := parse("data"), parse("rbench")
	if a.Key() != b.Key() {
		t.Fatalf("keys differ by pool: %s / %s", a.Key(), b.Key())
	}
	if !strings.Contains(a.Key(), "concurrency=8") || strings.Contains(a.Key(), "pool") {
		t.Fatalf("key %s", a.Key())
	}
	// a point archived before a parameter existed matches one at its default
	s, err := Parse([]byte("benchmarks:\n  block: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	now := s.Points()[0]
	old := Point{Type: now.Type, Params: maps.Clone(now.Params)}
	delete(old.Params, "engine")
	if old.Key() != now.Key() || !strings.Contains(now.Key(), "engine=bench") {
		t.Fatalf("keys %s / %s", old.Key(), now.Key())
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"unknown top key", "benchmark:\n  rados: {}\n", "field benchmark not found"},
		{"unknown target key", "target: {kin: shoal}\nbenchmarks:\n  rados: {}\n", "field kin not found"},
		{"unknown kind", "target: {kind: minio}\nbenchmarks:\n  rados: {}\n", "target kind \"minio\""},
		{"no benchmarks", "duration: 1s\n", "benchmarks"},
		{"unknown type", "benchmarks:\n  fio: {}\n", "unknown type \"fio\""},
		{"unknown param", "benchmarks:\n  rados:\n    threads: 4\n", "unknown rados parameter \"threads\""},
		{"empty list", "benchmarks:\n  rados:\n    concurrency: []\n", "an empty list"},
		{"nested list", "benchmarks:\n  rados:\n    concurrency: [[1]]\n", "a list of plain values"},
		{"twice", "benchmarks:\n  rados:\n    mode: write\n    mode: seq\n", "mode"},
		{"bad duration", "duration: soon\nbenchmarks:\n  rados: {}\n", "duration \"soon\""},
		{"too many points", "max_points: 5\nbenchmarks:\n  rados:\n    concurrency: [1, 2, 4]\n    op_size: [4K, 4M]\n", "6 points, more than max_points 5"},
		{"s3 target, rados", "target: {kind: s3}\nbenchmarks:\n  rados: {}\n", "only s3 benchmarks"},
		{"bad name", "benchmarks:\n  a.b:\n    type: rados\n", "no spaces, dots or slashes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.file))
			if err == nil || !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrSpec with %q", err, c.want)
			}
		})
	}
}

// TestShippedSweeps parses every sweep file in bench/sweeps/.
func TestShippedSweeps(t *testing.T) {
	files, err := filepath.Glob("../sweeps/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sweep files: %v", err)
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if err := checkIDs(s.Points()); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestOverrides(t *testing.T) {
	s, err := Parse([]byte("benchmarks:\n  rados:\n    pool: data\n    concurrency: [1, 2]\n  s3: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Overrides{Kind: "ceph", Conf: "/etc/ceph/ceph.conf", Set: []string{"pool=rbench", "concurrency=8"}}); err != nil {
		t.Fatal(err)
	}
	pts := s.Points()
	if s.Target.Kind != "ceph" || s.Target.Conf != "/etc/ceph/ceph.conf" || len(pts) != 2 || pts[0].Params["pool"] != "rbench" || pts[0].Params["concurrency"] != "8" {
		t.Fatalf("target %+v points %+v", s.Target, pts)
	}
	// the archive's copy of the file records them, and reads back the same
	again, err := Parse(s.Raw)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := parseOverrides(s.Raw)
	if !ok || again.Apply(o) != nil || again.Points()[0].Params["pool"] != "rbench" || again.Target.Kind != "ceph" {
		t.Fatalf("overrides read back: %+v %v", o, ok)
	}
	for _, bad := range []Overrides{{Set: []string{"threads=4"}}, {Set: []string{"pool"}}, {Kind: "minio"}} {
		if err := s.Apply(bad); !errors.Is(err, ErrSpec) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestParamsDocumented: docs/benchmarking.md's table lists every
// parameter of every benchmark type.
func TestParamsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/benchmarking.md")
	if err != nil {
		t.Fatal(err)
	}
	// and its example file parses
	doc := string(b)
	i := strings.Index(doc, "```yaml\n")
	j := strings.Index(doc[i+8:], "```")
	if i < 0 || j < 0 {
		t.Fatal("docs/benchmarking.md has no yaml example")
	}
	if _, err := Parse([]byte(doc[i+8 : i+8+j])); err != nil {
		t.Errorf("the example sweep file: %v", err)
	}
	for typ, defs := range Params {
		for _, d := range defs {
			if row := "| " + typ + " | `" + d.Name + "` |"; !strings.Contains(string(b), row) {
				t.Errorf("docs/benchmarking.md has no row %q", row)
			}
		}
	}
}
