package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestSweep runs a sweep file against a real cluster through the CLI:
// rados, block and s3 points; Ctrl-C in the middle, then the same
// command resumes; the report and its plots; compare against itself and
// under a rule that must fail; and nothing left behind in the cluster.
func TestSweep(t *testing.T) {
	c := upWithGateway(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.yaml")
	err := os.WriteFile(file, []byte(`target:
  conf: `+filepath.Join(c.data, "shoal.conf")+`
duration: 1s
iterations: 2
benchmarks:
  rados:
    mode: [seq, write]
    op_size: [64K, 16K]
    concurrency: 2
    procs: 2
  block:
    image: data/sweep-img
    image_size: 16M
    iodepth: [1, 4]
  s3:
    op: [put, get]
    size: 16K
    objects: 20
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "archive")

	// Ctrl-C (SIGINT) once the third point starts.
	cmd := exec.Command(shoalBin, "bench", "sweep", file, "--archive", archive)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var log, stderr bytes.Buffer // stderr: written by exec's copying goroutine until Wait
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "[3/16]") {
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(stderr.String(), "2 of 16 points done") {
		t.Fatalf("interrupted sweep: %v\n%s%s", err, log.String(), stderr.String())
	}
	done, _ := filepath.Glob(filepath.Join(archive, "results", "00000000", "*", "result.json"))
	if len(done) != 2 {
		t.Fatalf("%d points archived after the interrupt, want 2", len(done))
	}

	// The second iteration reads the 64K set again after the 16K set was
	// written: each read checks its bytes, so sets that overwrote one
	// another would fail here.
	out := c.must("bench", "sweep", file, "--archive", archive)
	if strings.Count(out, "done earlier, kept") != 2 || strings.Count(out, "MB/s") != 14 {
		t.Fatalf("resumed sweep:\n%s", out)
	}
	for _, p := range []string{"rados.mode=seq.op_size=16K", "rados.mode=write.op_size=64K", "block.iodepth=4", "s3.op=get"} {
		for _, f := range []string{"params.json", "samples.csv", "result.json", "output.txt"} {
			for _, it := range []string{"00000000", "00000001"} {
				if _, err := os.Stat(filepath.Join(archive, "results", it, p, f)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// procs: each rados point ran two client processes of their own
	for _, p := range []string{"rados.mode=seq.op_size=16K", "rados.mode=write.op_size=64K"} {
		ran, _ := os.ReadFile(filepath.Join(archive, "results", "00000001", p, "output.txt"))
		if m := regexp.MustCompile(`2 client process\(es\), pids \[(\d+) (\d+)\]`).FindSubmatch(ran); m == nil || bytes.Equal(m[1], m[2]) {
			t.Fatalf("%s's output:\n%s", p, ran)
		}
	}
	// Cleaned up: no benchmark object, image or key left.
	if ls := c.must("rados", "-p", "data", "ls"); strings.Contains(ls, "benchmark") || strings.Contains(ls, "sweep") {
		t.Fatalf("objects left in data:\n%s", ls)
	}
	if ls := c.must("rbd", "ls", "data"); strings.Contains(ls, "sweep-img") {
		t.Fatalf("image left: %s", ls)
	}

	out = c.must("bench", "report", archive)
	for _, f := range []string{"report.md", "report.html", "block-throughput.png", "block-latency.svg", "block-cpu.png"} {
		if _, err := os.Stat(filepath.Join(archive, "report", f)); err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
	}
	md, _ := os.ReadFile(filepath.Join(archive, "report", "report.md"))
	// a seq read of a set written for as long as it reads may finish early: marked short
	if !regexp.MustCompile(`\| mode=seq op_size=16K( \(short\))? \| 2 \|`).Match(md) || !strings.Contains(string(md), "3 OSDs") {
		t.Fatalf("report.md:\n%s", md)
	}

	c.must("bench", "compare", archive, archive)
	out, err = c.run("bench", "compare", archive, archive, "--rule", "mb_per_s=greater:1000")
	if err == nil || !strings.Contains(out, "REGRESSION") {
		t.Fatalf("compare under an impossible rule: %v\n%s", err, out)
	}

	// Bad input fails before anything runs.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("benchmarks:\n  rados:\n    concurrency: [1, 2]\n    threads: 4\n"), 0o644)
	if out, err := c.run("bench", "sweep", bad, "--archive", filepath.Join(dir, "bad")); err == nil || !strings.Contains(out, `unknown rados parameter "threads"`) {
		t.Fatalf("bad file: %v\n%s", err, out)
	}
	unreachable := filepath.Join(dir, "unreachable.yaml")
	os.WriteFile(unreachable, []byte("target: {kind: s3, endpoint: 'http://127.0.0.1:1', access_key: a, secret_key: b}\nbenchmarks:\n  s3: {}\n"), 0o644)
	if out, err := c.run("bench", "sweep", unreachable, "--archive", filepath.Join(dir, "unreach")); err == nil || !strings.Contains(out, "connection refused") {
		t.Fatalf("unreachable target: %v\n%s", err, out)
	}
}

// TestSweepFio runs block points with engine fio against a real cluster:
// the sweep exports the image over NBD on a socket of its own and runs
// fio's nbd engine on it; each point archives throughput and latency
// percentiles from fio's histogram, and the export and image go after.
func TestSweepFio(t *testing.T) {
	if _, err := exec.LookPath("fio"); err != nil {
		t.Fatal("fio is not installed (Debian: fio; .ci/run installs it)")
	}
	c := up(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.yaml")
	err := os.WriteFile(file, []byte(`target:
  conf: `+filepath.Join(c.data, "shoal.conf")+`
duration: 2s
benchmarks:
  block:
    image: data/sweep-fio
    image_size: 16M
    engine: fio
    io_type: [read, readwrite]
    iodepth: [1, 8]
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "archive")
	exports := filepath.Join(os.TempDir(), "shoal-sweep-nbd-*")
	before, _ := filepath.Glob(exports)
	out := c.must("bench", "sweep", file, "--archive", archive)
	results, _ := filepath.Glob(filepath.Join(archive, "results", "00000000", "*", "result.json"))
	if len(results) != 4 {
		t.Fatalf("%d points archived, want 4\n%s", len(results), out)
	}
	for _, f := range results {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Ops   uint64  `json:"ops"`
			P50MS float64 `json:"lat_p50_ms"`
			P99MS float64 `json:"lat_p99_ms"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Ops < 10 || r.P50MS <= 0 || r.P99MS < r.P50MS {
			t.Fatalf("%s: ops %d p50 %v p99 %v\n%s", f, r.Ops, r.P50MS, r.P99MS, b)
		}
		// fio ran, through the export (its nbd engine says so)
		if log, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "output.txt")); !strings.Contains(string(log), "connected to NBD server") {
			t.Fatalf("%s: no fio nbd output:\n%s", f, log)
		}
	}
	if ls := c.must("rbd", "ls", "data"); strings.Contains(ls, "sweep-fio") {
		t.Fatalf("image left: %s", ls)
	}
	if after, _ := filepath.Glob(exports); len(after) > len(before) {
		t.Fatalf("export sockets left: %v (before the sweep: %v)", after, before)
	}
}
