package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memTarget is an in-memory pool.
type memTarget struct {
	mu      sync.Mutex
	objs    map[string][]byte
	reads   int
	failOID string // WriteFull/Read of this object fails
}

func newMem() *memTarget { return &memTarget{objs: map[string][]byte{}} }

// notFound is the fake's "no such object" error; the default IsNotFound
// recognises it through its NotFound method.
type notFound struct{ oid string }

func (e notFound) Error() string  { return "no such object " + e.oid }
func (e notFound) NotFound() bool { return true }

var errInjected = errors.New("injected I/O error")

func (m *memTarget) WriteFull(ctx context.Context, oid string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if oid == m.failOID {
		return errInjected
	}
	m.objs[oid] = bytes.Clone(data)
	return nil
}

func (m *memTarget) Read(ctx context.Context, oid string, off, length uint64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if oid == m.failOID {
		return nil, errInjected
	}
	b, ok := m.objs[oid]
	if !ok {
		return nil, notFound{oid}
	}
	if off >= uint64(len(b)) {
		return nil, nil
	}
	b = b[off:]
	if length != 0 && length < uint64(len(b)) {
		b = b[:length]
	}
	return bytes.Clone(b), nil
}

func (m *memTarget) Remove(ctx context.Context, oid string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[oid]; !ok {
		return notFound{oid}
	}
	delete(m.objs, oid)
	return nil
}

func (m *memTarget) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n []string
	for k := range m.objs {
		n = append(n, k)
	}
	return n
}

func (m *memTarget) mutate(t *testing.T, oid string, f func([]byte) []byte) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[oid]
	if !ok {
		t.Fatalf("no object %s to corrupt", oid)
	}
	m.objs[oid] = f(b)
}

const (
	testHost = "testhost"
	testPID  = 1234
	testBS   = 4096
)

var testPrefix = ObjectPrefix(testHost, testPID)

// writeOpts is a write --no-cleanup run that stops after maxObjects
// objects (the long Duration makes the count exact, not timing dependent).
func writeOpts(out *bytes.Buffer, maxObjects int) Options {
	o := Options{
		Mode:        ModeWrite,
		BlockSize:   testBS,
		Concurrency: 4,
		Duration:    time.Hour,
		MaxObjects:  maxObjects,
		NoCleanup:   true,
		Hostname:    testHost,
		PID:         testPID,
	}
	if out != nil {
		o.Out = out
	}
	return o
}

func mustWrite(t *testing.T, m *memTarget, o Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), m, o)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if res.Ops <= 0 || res.Objects != int(res.Ops) || res.Errors != 0 {
		t.Fatalf("write result: ops %d objects %d errors %d", res.Ops, res.Objects, res.Errors)
	}
	return res
}

func TestWriteNoCleanupThenSeqAndRand(t *testing.T) {
	m := newMem()
	w := mustWrite(t, m, writeOpts(nil, 50))
	if w.OpSize != testBS || w.ObjectSize != testBS || w.ObjectPrefix != testPrefix || w.Mode != ModeWrite {
		t.Fatalf("write result %+v", w)
	}
	// Every object plus the metadata object, with the documented content.
	if got := len(m.names()); got != w.Objects+1 {
		t.Fatalf("pool holds %d objects, want %d + metadata", got, w.Objects)
	}
	pseed := prefixSeed(testPrefix)
	for i := range w.Objects {
		name := fmt.Sprintf("benchmark_data_testhost_1234_object%d", i)
		b, err := m.Read(context.Background(), name, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != testBS {
			t.Fatalf("%s has %d bytes", name, len(b))
		}
		if off := newContent(pseed, i, testBS).check(b); off != -1 {
			t.Fatalf("%s differs at %d", name, off)
		}
	}

	// seq from "another process": a different PID must not matter, and
	// BlockSize is taken from the metadata. A long Duration is safe: seq
	// stops once every object has been read.
	m.mu.Lock()
	m.reads = 0
	m.mu.Unlock()
	var out bytes.Buffer
	seq, err := Run(context.Background(), m, Options{
		Mode: ModeSeq, Concurrency: 4, Duration: time.Hour, PID: 99, BlockSize: 7, Out: &out,
	})
	if err != nil {
		t.Fatalf("seq: %v\n%s", err, out.String())
	}
	if seq.Ops != int64(w.Objects) || seq.VerifyFailures != 0 || seq.Errors != 0 {
		t.Fatalf("seq: ops %d (want %d) verify %d errors %d", seq.Ops, w.Objects, seq.VerifyFailures, seq.Errors)
	}
	if seq.OpSize != testBS || seq.ObjectPrefix != testPrefix || seq.Objects != w.Objects {
		t.Fatalf("seq result %+v", seq)
	}
	m.mu.Lock()
	reads := m.reads
	m.mu.Unlock()
	if reads != w.Objects+1 { // + the metadata object
		t.Fatalf("seq made %d reads, want %d", reads, w.Objects+1)
	}

	rnd, err := Run(context.Background(), m, Options{Mode: ModeRand, Concurrency: 4, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("rand: %v", err)
	}
	if rnd.Ops <= 0 || rnd.VerifyFailures != 0 || rnd.Mode != ModeRand {
		t.Fatalf("rand: %+v", rnd)
	}
	if rnd.LatencyMin > rnd.LatencyP50 || rnd.LatencyP50 > rnd.LatencyP99 || rnd.LatencyP99 > rnd.LatencyMax {
		t.Fatalf("latencies out of order: %+v", rnd)
	}
}

func TestWriteWithoutNoCleanupLeavesNothing(t *testing.T) {
	m := newMem()
	var out bytes.Buffer
	o := writeOpts(&out, 30)
	o.NoCleanup = false
	o.Duration = 200 * time.Millisecond // at least Concurrency objects
	res, err := Run(context.Background(), m, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops <= 0 || res.Removed != res.Objects {
		t.Fatalf("ops %d removed %d objects %d", res.Ops, res.Removed, res.Objects)
	}
	if n := m.names(); len(n) != 0 {
		t.Fatalf("objects left: %v", n)
	}
	s := out.String()
	for _, want := range []string{
		"\nCleaning up (deleting benchmark objects)\n",
		fmt.Sprintf("\nRemoved %d objects\n", res.Objects),
		"\nClean up completed and total clean up time :",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestCleanup(t *testing.T) {
	m := newMem()
	w := mustWrite(t, m, writeOpts(nil, 20))
	o2 := writeOpts(nil, 5)
	o2.RunName = "other_run"
	o2.PID = 777
	w2 := mustWrite(t, m, o2)

	// An object already gone is skipped, not counted, not an error.
	if err := m.Remove(context.Background(), ObjectName(testPrefix, 0)); err != nil {
		t.Fatal(err)
	}
	n, err := Cleanup(context.Background(), m, "")
	if err != nil {
		t.Fatal(err)
	}
	if n != w.Objects-1 {
		t.Fatalf("Cleanup removed %d, want %d", n, w.Objects-1)
	}
	for _, name := range m.names() {
		if strings.HasPrefix(name, testPrefix+"_") || name == DefaultRunName {
			t.Fatalf("left %s", name)
		}
	}
	var out bytes.Buffer
	n, err = CleanupWith(context.Background(), m, Options{RunName: "other_run", Out: &out, Concurrency: 2})
	if err != nil || n != w2.Objects {
		t.Fatalf("CleanupWith: %d, %v (want %d)", n, err, w2.Objects)
	}
	if want := fmt.Sprintf("Removed %d objects\n", n); out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	if left := m.names(); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
	if _, err := Cleanup(context.Background(), m, ""); !errors.Is(err, ErrNoMetadata) {
		t.Fatalf("Cleanup without metadata: %v", err)
	}
}

func TestReadWithoutMetadata(t *testing.T) {
	for _, mode := range []Mode{ModeSeq, ModeRand} {
		m := newMem()
		var calls int
		res, err := Run(context.Background(), m, Options{
			Mode: mode,
			IsNotFound: func(err error) bool {
				calls++
				var nf notFound
				return errors.As(err, &nf)
			},
		})
		if res != nil || !errors.Is(err, ErrNoMetadata) || calls == 0 {
			t.Fatalf("%s: res %v err %v calls %d", mode, res, err, calls)
		}
		if !strings.Contains(err.Error(), "run write with --no-cleanup first") ||
			!strings.Contains(err.Error(), DefaultRunName) {
			t.Fatalf("%s: unclear error %q", mode, err)
		}
	}
	// An empty metadata object counts as missing; other read errors do not.
	m := newMem()
	m.objs["r"] = nil
	if _, err := Run(context.Background(), m, Options{Mode: ModeSeq, RunName: "r"}); !errors.Is(err, ErrNoMetadata) {
		t.Fatalf("empty metadata: %v", err)
	}
	m.failOID = "r"
	if _, err := Run(context.Background(), m, Options{Mode: ModeSeq, RunName: "r"}); !errors.Is(err, errInjected) || errors.Is(err, ErrNoMetadata) {
		t.Fatalf("failing metadata read: %v", err)
	}
	m.failOID = ""
	m.objs["r"] = []byte("garbage")
	if _, err := Run(context.Background(), m, Options{Mode: ModeSeq, RunName: "r"}); err == nil {
		t.Fatal("garbage metadata accepted")
	}
}

func TestSeqDetectsCorruption(t *testing.T) {
	cases := []struct {
		name string
		f    func([]byte) []byte
		msg  string
	}{
		{"body byte", func(b []byte) []byte { b[1000] ^= 0x01; return b }, "byte 1000 of 4096 differs"},
		{"header byte", func(b []byte) []byte { b[9] ^= 0x80; return b }, "byte 9 of 4096 differs"},
		{"last byte", func(b []byte) []byte { b[testBS-1]++; return b }, "byte 4095 of 4096 differs"},
		{"short", func(b []byte) []byte { return b[:testBS-1] }, "read 4095 bytes, want 4096"},
		{"swapped", func([]byte) []byte {
			b := make([]byte, testBS)
			newContent(prefixSeed(testPrefix), 3, testBS).fill(b) // object 3's content
			return b
		}, "byte 8 of 4096 differs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMem()
			mustWrite(t, m, writeOpts(nil, 20))
			bad := ObjectName(testPrefix, 7)
			m.mutate(t, bad, tc.f)
			var out bytes.Buffer
			res, err := Run(context.Background(), m, Options{Mode: ModeSeq, Concurrency: 4, Duration: time.Hour, Out: &out})
			if !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), bad+" is not correct!") ||
				!strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v", err)
			}
			if res == nil || res.VerifyFailures != 1 || res.Ops != 20 {
				t.Fatalf("result %+v", res)
			}
			if !strings.Contains(out.String(), bad+" is not correct!") {
				t.Fatalf("output does not name the object:\n%s", out.String())
			}
		})
	}
}

// refTarget is memTarget read in place (a RefReader): it counts the
// reads it handed out and the releases, and poisons a released buffer,
// as a reused receive buffer would be.
type refTarget struct {
	*memTarget
	out, released atomic.Int64
}

func (r *refTarget) ReadRef(ctx context.Context, oid string, off, length uint64) ([]byte, func(), error) {
	b, err := r.Read(ctx, oid, off, length)
	if err != nil {
		return nil, nil, err
	}
	r.out.Add(1)
	var once atomic.Bool
	return b, func() {
		if once.Swap(true) {
			panic("released twice")
		}
		clear(b)
		r.released.Add(1)
	}, nil
}

// TestSeqReadsInPlace: a target that reads in place (RefReader) has every
// read checked before its buffer is released, and released once; a bad
// object is still found.
func TestSeqReadsInPlace(t *testing.T) {
	r := &refTarget{memTarget: newMem()}
	mustWrite(t, r.memTarget, writeOpts(nil, 20))
	res, err := Run(context.Background(), r, Options{Mode: ModeSeq, Concurrency: 4, Duration: time.Hour, Out: io.Discard})
	if err != nil || res.Ops != 20 || res.VerifyFailures != 0 {
		t.Fatalf("seq: %v, %+v", err, res)
	}
	if r.out.Load() < 20 || r.released.Load() != r.out.Load() {
		t.Fatalf("%d reads in place, %d released", r.out.Load(), r.released.Load())
	}
	bad := ObjectName(testPrefix, 5)
	r.mutate(t, bad, func(b []byte) []byte { b[100] ^= 1; return b })
	if _, err := Run(context.Background(), r, Options{Mode: ModeSeq, Concurrency: 4, Duration: time.Hour, Out: io.Discard}); !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a bad object read in place: %v", err)
	}
}

func TestRandDetectsCorruption(t *testing.T) {
	m := newMem()
	mustWrite(t, m, writeOpts(nil, 1)) // one object: rand can only read it
	bad := ObjectName(testPrefix, 0)
	m.mutate(t, bad, func(b []byte) []byte { b[2048] ^= 0xff; return b })
	var out bytes.Buffer
	o := Options{Mode: ModeRand, Concurrency: 3, Duration: 100 * time.Millisecond, Out: &out, JSON: true}
	res, err := Run(context.Background(), m, o)
	if !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("err = %v", err)
	}
	if res.Ops <= 0 || res.VerifyFailures != res.Ops {
		t.Fatalf("ops %d verify failures %d", res.Ops, res.VerifyFailures)
	}
	var got Result
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("JSON output: %v\n%s", err, out.String())
	}
	if got.VerifyFailures != res.VerifyFailures {
		t.Fatalf("JSON verify_failures %d, want %d", got.VerifyFailures, res.VerifyFailures)
	}
}

func TestJSONOutput(t *testing.T) {
	m := newMem()
	var out bytes.Buffer
	o := writeOpts(&out, 40)
	o.JSON = true
	res := mustWrite(t, m, o)
	var got Result
	dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
	if dec.More() {
		t.Fatalf("more than one JSON document:\n%s", out.String())
	}
	if got != *res {
		t.Fatalf("JSON %+v\nresult %+v", got, *res)
	}
	if got.Ops <= 0 || got.Mode != ModeWrite || got.OpSize != testBS || got.TotalTime <= 0 ||
		got.BandwidthAvg <= 0 || got.LatencyP99 <= 0 {
		t.Fatalf("JSON result %+v", got)
	}
	for _, key := range []string{`"mode"`, `"total_time_s"`, `"ops"`, `"op_size"`, `"object_size"`,
		`"bandwidth_mb_s"`, `"bandwidth_stddev_mb_s"`, `"bandwidth_max_mb_s"`, `"bandwidth_min_mb_s"`,
		`"iops_avg"`, `"iops_stddev"`, `"iops_max"`, `"iops_min"`, `"latency_avg_s"`, `"latency_stddev_s"`,
		`"latency_max_s"`, `"latency_min_s"`, `"latency_p50_s"`, `"latency_p99_s"`, `"errors"`, `"verify_failures"`} {
		if !strings.Contains(out.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	if strings.Contains(out.String(), "hints") || strings.Contains(out.String(), "Total time run") {
		t.Fatalf("text in JSON output:\n%s", out.String())
	}
}

func TestTextOutput(t *testing.T) {
	m := newMem()
	var out bytes.Buffer
	o := writeOpts(&out, 25)
	o.Duration = 200 * time.Millisecond
	w := mustWrite(t, m, o)
	s := out.String()
	wantStart := "hints = 1\n" +
		"Maintaining 4 concurrent writes of 4096 bytes to objects of size 4096 for up to 0.2 seconds or 25 objects\n" +
		"Object prefix: benchmark_data_testhost_1234\n" +
		"  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)\n"
	if !strings.HasPrefix(s, wantStart) {
		t.Fatalf("output starts\n%s\nwant\n%s", s, wantStart)
	}
	// Line "sec 0" is printed at the start.
	if !regexp.MustCompile(`(?m)^    0 +\d+ +\d+ +\d+ +\S+ +\S+ +\S+ +\S+$`).MatchString(s) {
		t.Fatalf("no second-0 line:\n%s", s)
	}
	writeLabels := []string{
		"Total time run:         ",
		fmt.Sprintf("Total writes made:      %d\n", w.Ops),
		"Write size:             4096\n",
		"Object size:            4096\n",
		"Bandwidth (MB/sec):     ",
		"Stddev Bandwidth:       ",
		"Max bandwidth (MB/sec): ",
		"Min bandwidth (MB/sec): ",
		"Average IOPS:           ",
		"Stddev IOPS:            ",
		"Max IOPS:               ",
		"Min IOPS:               ",
		"Average Latency(s):     ",
		"Stddev Latency(s):      ",
		"Max latency(s):         ",
		"Min latency(s):         ",
		"p50 latency(s):         ",
		"p99 latency(s):         ",
	}
	checkOrder(t, s, writeLabels)

	out.Reset()
	r, err := Run(context.Background(), m, Options{Mode: ModeSeq, Duration: time.Hour, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	s = out.String()
	if !strings.HasPrefix(s, "hints = 1\n"+header) {
		t.Fatalf("seq output starts:\n%s", s)
	}
	readLabels := []string{
		"Total time run:       ",
		fmt.Sprintf("Total reads made:     %d\n", r.Ops),
		"Read size:            4096\n",
		"Object size:          4096\n",
		"Bandwidth (MB/sec):   ",
		"Average IOPS:         ",
		"Stddev IOPS:          ",
		"Max IOPS:             ",
		"Min IOPS:             ",
		"Average Latency(s):   ",
		"Max latency(s):       ",
		"Min latency(s):       ",
		"p50 latency(s):       ",
		"p99 latency(s):       ",
	}
	checkOrder(t, s, readLabels)
	if strings.Contains(s, "Stddev Latency") || strings.Contains(s, "Maintaining") {
		t.Fatalf("seq output has write-only lines:\n%s", s)
	}
}

// checkOrder checks that each want occurs at the start of a line, in order.
func checkOrder(t *testing.T, s string, want []string) {
	t.Helper()
	rest := s
	for _, w := range want {
		i := strings.Index(rest, "\n"+w)
		if i < 0 {
			t.Fatalf("missing (or out of order) %q in:\n%s", w, s)
		}
		rest = rest[i+1:]
	}
}

// TestPrinter drives the status printer tick by tick (no clock involved).
func TestPrinter(t *testing.T) {
	var out bytes.Buffer
	start := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	p := newPrinter(&lockedWriter{w: &out}, mib, start)
	finished := []int{0, 10, 30, 30, 30, 60}
	for i := range 21 {
		f := 60
		if i < len(finished) {
			f = finished[i]
		}
		p.tick(start.Add(time.Duration(i)*time.Second), snapshot{
			inFlight: 2, started: f + 2, finished: f, curLat: 0.25, avgLat: 0.5, minLat: 0.125, maxLat: 1,
		})
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		"  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)",
		"    0       2         2         0         0         0           -         0.5",
		"    1       2        12        10        10        10        0.25         0.5",
		"    2       2        32        30        15        20        0.25         0.5",
		"    3       2        32        30        10         0           -         0.5",
		"    4       2        32        30       7.5         0           -         0.5",
		// 30 more ops over the 3 ticks since the last change: 10 MB/s.
		"    5       2        62        60        12        10        0.25         0.5",
	}
	for i, w := range want {
		if lines[i] != w {
			t.Fatalf("line %d:\n%q\nwant\n%q", i, lines[i], w)
		}
	}
	// 20 lines later: the latency line and the header again.
	if lines[21] != "2024-01-02T03:04:25.000000+0000 min lat: 0.125 max lat: 1 avg lat: 0.5" || lines[22] != lines[0] {
		t.Fatalf("header repeat:\n%s\n%s", lines[21], lines[22])
	}
	if len(lines) != 24 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	// One sample per tick after the first; ticks 3 and 4 sample 0, tick 5
	// samples the 30 ops of three ticks.
	wantBW := []float64{10, 20, 0, 0, 10}
	for i, w := range wantBW {
		if p.bw[i] != w || p.iops[i] != int(w) {
			t.Fatalf("sample %d: bw %v iops %v, want %v", i, p.bw[i], p.iops[i], w)
		}
	}
	if len(p.bw) != 20 || len(p.iops) != 20 {
		t.Fatalf("%d samples", len(p.bw))
	}
}

// TestPrinterFirstTickWithOps: ops finished before the first tick print a
// current bandwidth of -1 and take no sample, as rados bench.
func TestPrinterFirstTickWithOps(t *testing.T) {
	var out bytes.Buffer
	start := time.Now()
	p := newPrinter(&lockedWriter{w: &out}, mib, start)
	p.tick(start.Add(500*time.Millisecond), snapshot{inFlight: 16, started: 44, finished: 28, curLat: 0.03, avgLat: 0.03})
	want := header + "    0      16        44        28        56        -1        0.03        0.03\n"
	if out.String() != want || len(p.bw) != 0 {
		t.Fatalf("got\n%q\nwant\n%q", out.String(), want)
	}
}

func TestContent(t *testing.T) {
	pseed := prefixSeed(testPrefix)
	sizes := []int{}
	for size := 0; size <= 70; size++ {
		sizes = append(sizes, size)
	}
	sizes = append(sizes, 4095, 4096, 4097, 4103, 4104, 2*4096+29)
	for _, size := range sizes {
		c := newContent(pseed, 5, size)
		b := make([]byte, size)
		c.fill(b)
		if off := c.check(b); off != -1 {
			t.Fatalf("size %d: check = %d", size, off)
		}
		// every byte of small objects; around each block's head in larger ones
		flips := []int{}
		for i := range b {
			if size <= 70 || i%blockBytes < 40 || i%blockBytes > blockBytes-40 || i%97 == 0 {
				flips = append(flips, i)
			}
		}
		for _, i := range flips {
			b[i] ^= 0x10
			if off := c.check(b); off != i {
				t.Fatalf("size %d: flipped byte %d, check = %d", size, i, off)
			}
			b[i] ^= 0x10
		}
		if size > 0 {
			if off := c.check(b[:size-1]); off != size-1 {
				t.Fatalf("size %d: short read check = %d", size, off)
			}
		}
		if off := c.check(append(bytes.Clone(b), 0)); off != size {
			t.Fatalf("size %d: long read check = %d", size, off)
		}
		// piece by piece, as readers check
		for _, piece := range []int{8, 16, 24, 1000} {
			if piece < 24 && size > 70 {
				continue
			}
			for _, i := range append([]int{-1}, flips...) { // -1: no byte flipped
				if i >= 0 {
					b[i] ^= 0x10
				}
				bad := -1
				for off := 0; off < size && bad < 0; off += piece {
					bad = c.checkAt(off, b[off:min(off+piece, size)])
				}
				if bad != i {
					t.Fatalf("size %d, pieces of %d, flipped byte %d: checkAt found %d", size, piece, i, bad)
				}
				if i >= 0 {
					b[i] ^= 0x10
				}
			}
		}
		if off := c.checkAt(size&^7, append(bytes.Clone(b[size&^7:]), 0)); off != size {
			t.Fatalf("size %d: a last piece longer than the object: checkAt = %d", size, off)
		}
	}
	// Objects of another index, size or run differ.
	a := make([]byte, 64)
	newContent(pseed, 1, 64).fill(a)
	for _, c := range []content{newContent(pseed, 2, 64), newContent(pseed, 1, 65), newContent(prefixSeed("x"), 1, 64)} {
		if c.check(a) == -1 {
			t.Fatalf("content %+v matches object 1", c)
		}
	}
	if string(a[:8]) != "SHOALBEN" || a[8] != 1 || a[16] != 64 {
		t.Fatalf("header % x", a[:24])
	}
	// A block in the wrong place, or from another object, is found at its
	// first byte.
	const size = 4 * blockBytes
	c := newContent(pseed, 7, size)
	want := make([]byte, size)
	c.fill(want)
	other := make([]byte, size)
	newContent(pseed, 8, size).fill(other)
	for _, tc := range []struct {
		name string
		src  []byte
		from int // block copied over block 2
	}{{"block 1 over block 2", want, 1}, {"block 3 over block 2", want, 3}, {"another object's block 2", other, 2}} {
		b := bytes.Clone(want)
		copy(b[2*blockBytes:3*blockBytes], tc.src[tc.from*blockBytes:])
		if off := c.check(b); off != 2*blockBytes {
			t.Fatalf("%s: check = %d, want %d", tc.name, off, 2*blockBytes)
		}
	}
}

func TestRunErrorNamesObject(t *testing.T) {
	m := newMem()
	m.failOID = ObjectName(testPrefix, 2)
	o := writeOpts(nil, 10)
	res, err := Run(context.Background(), m, o)
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "write "+m.failOID) {
		t.Fatalf("err = %v", err)
	}
	if res == nil || res.Errors != 1 {
		t.Fatalf("result %+v", res)
	}
	if _, ok := m.objs[DefaultRunName]; ok {
		t.Fatal("failed run wrote metadata")
	}
}

// blockTarget blocks every op until its context ends.
type blockTarget struct{ started chan struct{} }

func (b blockTarget) wait(ctx context.Context) error {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}
func (b blockTarget) WriteFull(ctx context.Context, _ string, _ []byte) error { return b.wait(ctx) }
func (b blockTarget) Read(ctx context.Context, _ string, _, _ uint64) ([]byte, error) {
	return nil, b.wait(ctx)
}
func (b blockTarget) Remove(ctx context.Context, _ string) error { return b.wait(ctx) }

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bt := blockTarget{started: make(chan struct{}, 1)}
	type ret struct {
		res *Result
		err error
	}
	done := make(chan ret)
	var out bytes.Buffer
	go func() {
		res, err := Run(ctx, bt, Options{Mode: ModeWrite, BlockSize: 16, Concurrency: 3, Duration: time.Hour, Out: &out})
		done <- ret{res, err}
	}()
	<-bt.started
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) || r.res == nil || r.res.Errors != 0 || r.res.Ops != 0 {
		t.Fatalf("Run after cancel: %+v, %v", r.res, r.err)
	}
	if !strings.Contains(out.String(), "Total writes made:      0\n") {
		t.Fatalf("no partial summary:\n%s", out.String())
	}
}

func TestOptionsValidation(t *testing.T) {
	m := newMem()
	for _, o := range []Options{{}, {Mode: "bogus"}, {Mode: ModeWrite, BlockSize: -1}, {Mode: ModeWrite, Concurrency: -2}} {
		if _, err := Run(context.Background(), m, o); err == nil {
			t.Errorf("Run(%+v) accepted", o)
		}
	}
	c, err := Options{Mode: ModeWrite}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.BlockSize != 4<<20 || c.Concurrency != 16 || c.Duration != 60*time.Second ||
		c.RunName != "benchmark_last_metadata" || c.Hostname == "" || c.PID == 0 || c.text != nil {
		t.Fatalf("defaults: %+v", c.Options)
	}
	if !strings.HasPrefix(c.prefix, "benchmark_data_"+c.Hostname+"_") {
		t.Fatalf("prefix %q", c.prefix)
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]int{
		"4096": 4096, "4K": 4096, "4k": 4096, "4KB": 4096, "4KiB": 4096, "4Ki": 4096,
		"4M": 4 << 20, "4MiB": 4 << 20, "1G": 1 << 30, "2T": 2 << 40, "512B": 512, "0": 0, " 8K ": 8192,
	}
	for s, want := range good {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "K", "-4K", "+4", "4X", "4i", "4.5M", "1e3", "99999999999999999999", "9000000000000000T"} {
		if got, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want error", s, got)
		}
	}
}

func TestStats(t *testing.T) {
	if s := stddev([]float64{2, 4, 4, 4, 5, 5, 7, 9}); math.Abs(s-2.138089935) > 1e-9 {
		t.Fatalf("stddev = %v", s)
	}
	if stddev([]float64{3}) != 0 {
		t.Fatal("stddev of one value")
	}
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(i + 1)
	}
	if percentile(v, 50) != 50 || percentile(v, 99) != 99 || percentile(v, 100) != 100 || percentile(v[:1], 99) != 1 ||
		percentile(v[:10], 99) != 10 || percentile(v[:3], 50) != 2 || percentile(nil, 50) != 0 {
		t.Fatal("percentile")
	}
	if g6(1234567) != "1.23457e+06" || g6(0.000123456789) != "0.000123457" || g6(100000) != "100000" || g6(0.5) != "0.5" {
		t.Fatal("g6 does not match C++ ostream formatting")
	}
}

func BenchmarkFill4M(b *testing.B) {
	buf := make([]byte, 4<<20)
	c := newContent(prefixSeed(testPrefix), 1, len(buf))
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		c.fill(buf)
	}
}

func BenchmarkCheck4M(b *testing.B) {
	buf := make([]byte, 4<<20)
	c := newContent(prefixSeed(testPrefix), 1, len(buf))
	c.fill(buf)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if c.check(buf) != -1 {
			b.Fatal("mismatch")
		}
	}
}

// TestContentReader: the streamed content is the filled content, whatever
// sizes the reads ask for.
func TestContentReader(t *testing.T) {
	for _, size := range []int{0, 5, 24, 4095, 4096, 3*blockBytes + 17} {
		c := newContent(prefixSeed(testPrefix), 2, size)
		want := make([]byte, size)
		c.fill(want)
		for _, piece := range []int{1, 7, 4096, 5000, 1 << 20} {
			r := c.reader()
			var got []byte
			p := make([]byte, piece)
			for {
				n, err := r.Read(p)
				got = append(got, p[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil || n == 0 {
					t.Fatalf("size %d, reads of %d: Read = %d, %v", size, piece, n, err)
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("size %d, reads of %d: streamed content differs from fill's", size, piece)
			}
		}
	}
}

// recConn records what is written to it.
type recConn struct {
	net.Conn // nil: only Write is called
	buf      bytes.Buffer
	writes   []int
}

func (c *recConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, len(p))
	return c.buf.Write(p)
}

// TestBodyConnWrites: a request body sent through bodyConn (as net/http
// sends it: a LimitReader, no WriterTo) goes out in writes of bodyWrite
// bytes, whole and unchanged.
func TestBodyConnWrites(t *testing.T) {
	c := newContent(1, 2, 3*bodyWrite+5)
	rc := &recConn{}
	n, err := bodyConn{rc}.ReadFrom(io.LimitReader(c.reader(), int64(c.size)))
	if err != nil || n != int64(c.size) {
		t.Fatalf("ReadFrom = %d, %v; want %d", n, err, c.size)
	}
	if want := []int{bodyWrite, bodyWrite, bodyWrite, 5}; !slices.Equal(rc.writes, want) {
		t.Fatalf("writes of %v bytes, want %v", rc.writes, want)
	}
	if bad := c.check(rc.buf.Bytes()); bad != -1 {
		t.Fatalf("body differs from its content at byte %d", bad)
	}
}
