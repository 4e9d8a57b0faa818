package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeDriver records a fixed number of operations per point; block, if
// set, is the point id whose run waits for the context to end (after
// telling started).
type fakeDriver struct {
	ran     []string
	block   string
	started chan struct{}
	early   int // ops recorded at once when the load starts
	late    int // ops recorded when it ends
}

func (f *fakeDriver) check(context.Context, Point) error              { return nil }
func (f *fakeDriver) prepare(context.Context, Point, io.Writer) error { return nil }
func (f *fakeDriver) after(context.Context, Point, io.Writer) error   { return nil }
func (f *fakeDriver) cleanup(context.Context, io.Writer) error        { return nil }
func (f *fakeDriver) daemons() []Daemon                               { return []Daemon{{"self", os.Getpid()}} }
func (f *fakeDriver) counts() Counts                                  { return Counts{OSDs: 3, Devices: 3, Hosts: 1} }
func (f *fakeDriver) close()                                          {}
func (f *fakeDriver) counters(context.Context) map[string]uint64      { return nil }
func (f *fakeDriver) run(ctx context.Context, p Point, d time.Duration, rec *Recorder, _ io.Writer) error {
	f.ran = append(f.ran, p.ID)
	if p.ID == f.block {
		close(f.started)
		<-ctx.Done()
		return ctx.Err()
	}
	for range f.early {
		rec.Op(4096, time.Millisecond, nil)
	}
	select {
	case <-time.After(d): // the load's own length, not synchronisation
	case <-ctx.Done():
		return ctx.Err()
	}
	for range f.late {
		rec.Op(4096, 2*time.Millisecond, nil)
	}
	return nil
}

func testSpec(t *testing.T, file string) *Spec {
	t.Helper()
	s, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunResumesAfterInterrupt(t *testing.T) {
	const file = "duration: 100ms\nbenchmarks:\n  rados:\n    concurrency: [1, 2, 4]\n"
	s := testSpec(t, file)
	dir := t.TempDir()
	pts := s.Points()
	f := &fakeDriver{block: pts[1].ID, started: make(chan struct{}), late: 5}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-f.started; cancel() }()
	if err := claimArchive(dir, s.Raw); err != nil {
		t.Fatal(err)
	}
	err := runPoints(ctx, s, Options{Archive: dir}, f, pts)
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "1 of 3 points done") {
		t.Fatalf("err %v, want ErrInterrupted after 1 of 3", err)
	}
	if _, err := os.Stat(filepath.Join(pointDir(dir, 0, pts[0].ID), "result.json")); err != nil {
		t.Fatalf("finished point lost: %v", err)
	}
	if _, err := os.Stat(pointDir(dir, 0, pts[1].ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("interrupted point left behind: %v", err)
	}
	// Resume: only the two points not done run.
	f2 := &fakeDriver{late: 5}
	if err := claimArchive(dir, s.Raw); err != nil {
		t.Fatal(err)
	}
	if err := runPoints(context.Background(), s, Options{Archive: dir}, f2, pts); err != nil {
		t.Fatal(err)
	}
	if len(f2.ran) != 2 || f2.ran[0] != pts[1].ID || f2.ran[1] != pts[2].ID {
		t.Fatalf("resumed run ran %v", f2.ran)
	}
	a, err := ReadArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Results) != 3 || a.Target.Counts.OSDs != 3 {
		t.Fatalf("archive has %d results, counts %+v", len(a.Results), a.Target.Counts)
	}
	for i, r := range a.Results {
		if r.Point.ID != pts[i].ID || r.Ops != 5 || r.Bytes != 5*4096 {
			t.Fatalf("result %d: %s ops %d bytes %d", i, r.Point.ID, r.Ops, r.Bytes)
		}
	}
	// Another file's sweep is refused on this archive.
	if err := claimArchive(dir, []byte(file+"ramp: 1s\n")); err == nil || !strings.Contains(err.Error(), "another sweep file") {
		t.Fatalf("claim of another file: %v", err)
	}
}

func TestRampNotMeasured(t *testing.T) {
	s := testSpec(t, "duration: 1s\nramp: 1s\nbenchmarks:\n  rados: {}\n")
	dir := t.TempDir()
	if err := claimArchive(dir, s.Raw); err != nil {
		t.Fatal(err)
	}
	f := &fakeDriver{early: 1000, late: 10}
	if err := runPoints(context.Background(), s, Options{Archive: dir}, f, s.Points()); err != nil {
		t.Fatal(err)
	}
	a, err := ReadArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := a.Results[0]
	if r.Ops != 10 || r.P50MS < 1.9 || r.P50MS > 2.1 {
		t.Fatalf("measured %d ops, p50 %.3f ms: want the 10 ops of 2 ms after the ramp, not the 1,000 in it", r.Ops, r.P50MS)
	}
	if r.Seconds < 0.9 || r.Seconds > 1.5 {
		t.Fatalf("window %.2f s, want about the 1 s duration", r.Seconds)
	}
	samples, err := readSamples(dir, 0, r.Point.ID)
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, sm := range samples {
		total += sm.Ops
	}
	if samples[0].Ops != 1000 || total != 1010 {
		t.Fatalf("samples %+v", samples)
	}
	if _, ok := r.Usage.CPU["self"]; !ok {
		t.Fatalf("usage %+v: no CPU of the daemon", r.Usage)
	}
}

func TestCounterDeltas(t *testing.T) {
	c0 := map[string]uint64{"osd.0/shard_w": 10, "osd.1/shard_w": 20, "osd.0/op_w": 5, "osd.1/op_w": 0}
	c1 := map[string]uint64{"osd.0/shard_w": 13, "osd.1/shard_w": 26, "osd.0/op_w": 8, "osd.1/op_w": 0}
	d := counterDeltas(c0, c1)
	if d["shard_w"] != 9 || d["op_w"] != 3 || len(d) != 2 {
		t.Fatalf("%v", d)
	}
	restarted := map[string]uint64{"osd.0/shard_w": 1, "osd.1/shard_w": 26, "osd.0/op_w": 8, "osd.1/op_w": 0}
	if counterDeltas(c0, restarted) != nil {
		t.Fatal("a counter that went down gave a delta")
	}
	if counterDeltas(c0, map[string]uint64{"osd.0/shard_w": 13, "osd.0/op_w": 8}) != nil || counterDeltas(nil, c1) != nil {
		t.Fatal("a changed OSD set gave a delta")
	}
}

// readSamples reads a point's samples.csv back (the runner only writes
// it; the test checks what it wrote).
func readSamples(archive string, it int, id string) ([]Sample, error) {
	b, err := os.ReadFile(filepath.Join(pointDir(archive, it, id), "samples.csv"))
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var out []Sample
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i == 0 {
			continue
		}
		var s Sample
		var mean, p50, p99, mx float64
		if _, err := fmt.Sscanf(line, "%f,%f,%d,%d,%d,%f,%f,%f,%f", &s.At, &s.Span, &s.Ops, &s.Bytes, &s.Errors, &mean, &p50, &p99, &mx); err != nil {
			return nil, errors.Join(fmt.Errorf("sweep: %s samples line %d", id, i+1), err)
		}
		s.Mean, s.P50, s.P99, s.Max = fromMS(mean), fromMS(p50), fromMS(p99), fromMS(mx)
		out = append(out, s)
	}
	return out, nil
}

func fromMS(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
