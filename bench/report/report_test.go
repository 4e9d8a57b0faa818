package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/bench/sweep"
)

func TestHighWater(t *testing.T) {
	for _, c := range []struct {
		y       []float64
		i       int
		reached bool
	}{
		{[]float64{100, 190, 350, 560, 600, 610}, 4, true},            // 600 → 610 adds 1.7 %; 560 → 600 still 7.1 %
		{[]float64{100, 104, 200}, 2, false},                          // a flat step, then rising again
		{[]float64{325, 483, 498, 491, 650, 703, 686}, 5, true},       // a flat spell at 2-8, then rising again to 703
		{[]float64{737, 1047, 1136, 1370, 1443, 1398, 1453}, 4, true}, // 1,443 at 16; nothing later beats it by 5 %
		{[]float64{100, 400, 500, 300, 200}, 2, true},                 // a falling tail
		{[]float64{100, 103, 150, 155}, 2, true},
		{[]float64{1, 2, 4}, 2, false},
		{[]float64{10, 9}, 0, true},
		{[]float64{5}, 0, false},
		{nil, 0, false},
	} {
		i, ok := HighWater(c.y)
		if i != c.i || ok != c.reached {
			t.Errorf("HighWater(%v) = %d, %v; want %d, %v", c.y, i, ok, c.i, c.reached)
		}
	}
}

func TestMedian(t *testing.T) {
	if Median([]float64{3, 1, 2}) != 2 || Median([]float64{4, 1, 3, 2}) != 2.5 || Median(nil) != 0 {
		t.Fatal("median")
	}
}

// archive builds an archive in memory: the file's points, with figures
// given per point id (the same for every iteration unless listed).
func archive(t *testing.T, file string, osds int, fig map[string][]float64) *sweep.Archive {
	t.Helper()
	s, err := sweep.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	a := &sweep.Archive{Dir: "mem", Spec: s, Target: sweep.TargetInfo{Kind: "shoal", Counts: sweep.Counts{OSDs: osds, Devices: osds * 2, Hosts: 1}}}
	for _, p := range s.Points() {
		for it, mb := range fig[p.ID] {
			a.Results = append(a.Results, sweep.Result{Point: p, Iteration: it, MBPerSec: mb, OpsPerSec: mb / 4, MeanMS: 10, P99MS: 20, CPUPerGB: 2,
				Ops: 100, Counters: map[string]uint64{"shard_w": 300, "shard_r": 50}})
		}
	}
	return a
}

const sweepFile = `benchmarks:
  rados:
    mode: [write, seq]
    concurrency: [1, 2, 4, 8]
`

func TestCurvesAndNormalisation(t *testing.T) {
	a := archive(t, sweepFile, 4, map[string][]float64{
		"rados.mode=write.concurrency=1": {100, 120, 110},
		"rados.mode=write.concurrency=2": {200},
		"rados.mode=write.concurrency=4": {300},
		"rados.mode=write.concurrency=8": {305},
		"rados.mode=seq.concurrency=1":   {400},
		"rados.mode=seq.concurrency=2":   {800},
		"rados.mode=seq.concurrency=4":   {1600},
		"rados.mode=seq.concurrency=8":   {3200},
	})
	pts := Aggregate(a)
	if pts[0].MBPerSec != 110 || pts[0].Iterations != 3 {
		t.Fatalf("point 0: %+v, want the median 110 of 3 runs", pts[0])
	}
	if pts[0].ShardIOPerOp != 3.5 {
		t.Fatalf("shard I/Os per op %v, want (300+50)/100", pts[0].ShardIOPerOp)
	}
	if pts[0].PerOSD.MBPerSec != 27.5 || pts[0].PerDevice.MBPerSec != 13.75 || pts[0].PerHost.MBPerSec != 110 {
		t.Fatalf("normalised %+v %+v %+v", pts[0].PerOSD, pts[0].PerDevice, pts[0].PerHost)
	}
	cs := Curves(pts)
	if len(cs) != 2 || cs[0].Label != "mode=write" || cs[1].Label != "mode=seq" || cs[0].X != "concurrency" || !cs[0].ByMB {
		t.Fatalf("curves %+v", cs)
	}
	if cs[0].HWM != 2 || !cs[0].Reached || cs[1].HWM != 3 || cs[1].Reached {
		t.Fatalf("write HWM %d %v, seq HWM %d %v", cs[0].HWM, cs[0].Reached, cs[1].HWM, cs[1].Reached)
	}
	if d := cs[0].Describe(); !strings.Contains(d, "high-water mark at concurrency=4: 300.0 MB/s (75.00 per OSD)") {
		t.Fatalf("describe %q", d)
	}
	if d := cs[1].Describe(); !strings.Contains(d, "still rising") {
		t.Fatalf("describe %q", d)
	}
}

func TestRules(t *testing.T) {
	mb, _ := ParseRule("mb_per_s=near:10")
	lat, _ := ParseRule("lat_p99_ms=greater")
	twice, _ := ParseRule("mb_per_s=greater:2")
	for _, c := range []struct {
		r      Rule
		a, b   float64
		ok, in bool
	}{
		{mb, 100, 91, true, true},
		{mb, 100, 89, false, true},
		{mb, 100, 500, true, true},
		{lat, 10, 9, true, true},
		{lat, 10, 11, false, true},
		{twice, 100, 199, false, true},
		{twice, 100, 200, true, true},
		{mb, 0, 50, true, false},
	} {
		ok, in := c.r.Check(c.a, c.b)
		if ok != c.ok || in != c.in {
			t.Errorf("%s %v→%v: ok %v judged %v", c.r.Metric.Name, c.a, c.b, ok, in)
		}
	}
	for _, bad := range []string{"mbps=near:1", "mb_per_s", "mb_per_s=near", "mb_per_s=greater:x", "mb_per_s=less"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("rule %q accepted", bad)
		}
	}
}

func TestCompare(t *testing.T) {
	base := map[string][]float64{"rados.mode=write.concurrency=1": {100}, "rados.mode=seq.concurrency=1": {400}}
	same := archive(t, sweepFile, 3, base)
	slower := archive(t, sweepFile, 3, map[string][]float64{"rados.mode=write.concurrency=1": {80}, "rados.mode=seq.concurrency=1": {400}, "rados.mode=seq.concurrency=8": {900}})
	mb, _ := ParseRule("mb_per_s=near:10")
	var out bytes.Buffer
	if err := Compare(&out, same, same, []Rule{mb}); err != nil {
		t.Fatalf("same archives: %v\n%s", err, out.String())
	}
	out.Reset()
	err := Compare(&out, same, slower, []Rule{mb})
	if !errors.Is(err, ErrRegression) || !strings.Contains(err.Error(), "1 rule checks failed") {
		t.Fatalf("err %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "REGRESSION") || !strings.Contains(out.String(), "only in B") {
		t.Fatalf("table:\n%s", out.String())
	}
	other := archive(t, "benchmarks:\n  block: {}\n", 3, map[string][]float64{"block": {10}})
	if err := Compare(&out, same, other, []Rule{mb}); err == nil || !strings.Contains(err.Error(), "no point") {
		t.Fatalf("unrelated archives: %v", err)
	}
}

func TestWrite(t *testing.T) {
	a := archive(t, "benchmarks:\n  rados:\n    op_size: [64K, 4M]\n    concurrency: [1, 4]\n", 3, map[string][]float64{
		"rados.op_size=64K.concurrency=1": {50}, "rados.op_size=64K.concurrency=4": {90},
		"rados.op_size=4M.concurrency=1": {300}, "rados.op_size=4M.concurrency=4": {600},
	})
	dir := t.TempDir()
	files, err := Write(a, dir)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| op_size=4M concurrency=4 | 1 | 600.0 |", "rados-throughput-mb.png", "rados-throughput-ops.png", "rados-by-size.png", "op_size=4M: still rising at the last point, concurrency=4: 600.0 MB/s (200.0 per OSD)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".png":
			if !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("%s is not a PNG", f)
			}
		case ".svg":
			if !bytes.Contains(b[:min(len(b), 200)], []byte("<svg")) {
				t.Errorf("%s is not an SVG", f)
			}
		}
	}
	if len(files) != 2+2*7 { // md, html; throughput, latency, cpu for the MB/s curve (4M) and the ops/s one (64K); by-size
		t.Fatalf("files %v", files)
	}
}

// TestMatch: two benchmarks that differ only in placement (an indexed
// and an indexless bucket) are each matched with their namesake, not
// both with one; a benchmark renamed on one side is matched by its
// parameters when no other point has them.
func TestMatch(t *testing.T) {
	const two = "benchmarks:\n  indexed:\n    type: s3\n  indexless:\n    type: s3\n    location: default:indexless\n"
	a := Aggregate(archive(t, two, 3, map[string][]float64{"indexed": {10}, "indexless": {20}}))
	b := Aggregate(archive(t, two, 3, map[string][]float64{"indexed": {11}, "indexless": {21}}))
	m := Match(a, b)
	if len(m) != 2 || b[m[0]].MBPerSec != 11 || b[m[1]].MBPerSec != 21 {
		t.Fatalf("match %v", m)
	}
	renamed := Aggregate(archive(t, "benchmarks:\n  puts:\n    type: s3\n    bucket: other\n", 3, map[string][]float64{"puts": {12}}))
	one := Aggregate(archive(t, "benchmarks:\n  s3: {}\n", 3, map[string][]float64{"s3": {10}}))
	if m := Match(one, renamed); len(m) != 1 {
		t.Fatalf("renamed: %v", m)
	}
	// ambiguous: two candidates with the same parameters and no namesake
	if m := Match(one, b); len(m) != 0 {
		t.Fatalf("ambiguous matched: %v", m)
	}
}
