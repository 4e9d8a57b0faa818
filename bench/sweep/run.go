package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/shoal-project/shoal/cluster"
)

// Sample is one second (or the last, partial one) of a point's load.
type Sample struct {
	// At is the end of the interval, seconds since the load started;
	// Span is its length in seconds (1, but for the last).
	At, Span float64
	Ops      uint64
	Bytes    uint64
	Errors   uint64
	// Latencies of the operations completed in the interval.
	Mean, P50, P99, Max time.Duration
}

// Result is a point's summary, over the samples after the ramp.
type Result struct {
	Point     Point     `json:"point"`
	Iteration int       `json:"iteration"`
	Start     time.Time `json:"start"`
	// Seconds is the measured window's length; Short is set when it is
	// under 90 % of the file's duration (the load ran out: a seq read of
	// a read set smaller than the time asked).
	Seconds float64 `json:"seconds"`
	Short   bool    `json:"short,omitempty"`
	Ops     uint64  `json:"ops"`
	Bytes   uint64  `json:"bytes"`
	Errors  uint64  `json:"errors"`
	// OpsPerSec and MBPerSec are over the window (MB = 10^6 bytes).
	OpsPerSec float64 `json:"ops_per_s"`
	MBPerSec  float64 `json:"mb_per_s"`
	// Latencies in milliseconds, from the window's histogram.
	MeanMS float64 `json:"lat_mean_ms"`
	P50MS  float64 `json:"lat_p50_ms"`
	P90MS  float64 `json:"lat_p90_ms"`
	P99MS  float64 `json:"lat_p99_ms"`
	P999MS float64 `json:"lat_p999_ms"`
	MaxMS  float64 `json:"lat_max_ms"`
	// Usage is the host's resource use during the window.
	Usage Usage `json:"usage"`
	// Counters are the cluster's own counters over the window, summed
	// over its OSDs (a Shoal target: op_w, op_r, shard_w, shard_w_bytes,
	// shard_r, shard_r_bytes, subop_w of every OSD's perf counters);
	// absent when an OSD went down or restarted in the window.
	Counters map[string]uint64 `json:"counters,omitempty"`
	// CPUPerGB is the daemons' CPU seconds per GB (10^9 bytes) moved;
	// CPUPer1000 per 1,000 operations.
	CPUPerGB   float64 `json:"cpu_s_per_gb"`
	CPUPer1000 float64 `json:"cpu_s_per_1000_ops"`
}

// Counts are what figures are normalised by.
type Counts struct {
	OSDs    int `json:"osds"`
	Devices int `json:"devices"`
	Hosts   int `json:"hosts"`
}

// TargetInfo is the archive's target.json.
type TargetInfo struct {
	Kind    string    `json:"kind"`
	Counts  Counts    `json:"counts"`
	Daemons []string  `json:"daemons"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

// driver is a target's way to run points.
type driver interface {
	// check validates a point's parameters before any point runs.
	check(ctx context.Context, p Point) error
	// prepare makes what a point needs (a read's objects, an image) and
	// is not measured; out gets its messages.
	prepare(ctx context.Context, p Point, out io.Writer) error
	// run drives the point's load for d, recording every operation in
	// rec, and returns when the load has ended (before any clean-up).
	run(ctx context.Context, p Point, d time.Duration, rec *Recorder, out io.Writer) error
	// after removes what the point's load wrote, unless kept for others.
	after(ctx context.Context, p Point, out io.Writer) error
	// cleanup removes what the sweep made (the end of the sweep).
	cleanup(ctx context.Context, out io.Writer) error
	daemons() []Daemon
	counts() Counts
	// counters are the cluster's op counters now, summed over its OSDs
	// (nil where the target has none to read).
	counters(ctx context.Context) map[string]uint64
	close()
}

// Options configure Run.
type Options struct {
	// Archive is the directory the results go to; a directory holding
	// an earlier run of the same file is resumed.
	Archive string
	// Out gets the progress: a line per point, and with Live a status
	// line rewritten every second.
	Out  io.Writer
	Live bool
}

// ErrInterrupted is returned (wrapped) when ctx ends mid-sweep; the
// points finished are kept.
var ErrInterrupted = errors.New("sweep interrupted")

// Run runs every point of s not already in the archive, Iterations
// times. The target is reached, and every point's parameters checked,
// before the first point starts.
func Run(ctx context.Context, s *Spec, o Options) error {
	pts := s.Points()
	if err := checkIDs(pts); err != nil {
		return err
	}
	if err := claimArchive(o.Archive, s.Raw); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(o.Archive, "setup.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	defer log.Close()
	env, err := shellEnv(s.Target)
	if err != nil {
		return err
	}
	if err := shell(ctx, "setup", s.Setup, env, log); err != nil {
		return err
	}
	if len(s.Teardown) > 0 {
		defer func() {
			// after an interrupt too: ctx has ended, so not under it
			tctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := shell(tctx, "teardown", s.Teardown, env, log); err != nil && o.Out != nil {
				fmt.Fprintln(o.Out, err)
			}
		}()
	}
	d, err := openDriver(ctx, s, loadMade(o.Archive))
	if err != nil {
		return err
	}
	defer d.close()
	return runPoints(ctx, s, o, d, pts)
}

// benchSetup runs a benchmark's setup commands, output to setup.log.
func benchSetup(ctx context.Context, s *Spec, archive, name string, cmds []string) error {
	env, err := shellEnv(s.Target)
	if err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(archive, "setup.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	defer log.Close()
	return shell(ctx, "setup of "+name, cmds, env, log)
}

// shellEnv is the environment of setup and teardown commands.
func shellEnv(t Target) ([]string, error) {
	env := os.Environ()
	if exe, err := os.Executable(); err == nil {
		env = append(env, "SHOAL="+exe)
	}
	switch t.Kind {
	case "shoal":
		c, err := cluster.FindConf(t.Conf)
		if err != nil {
			return nil, fmt.Errorf("sweep: target: %w", err)
		}
		env = append(env, "SHOAL_CONF="+c.Path, "SHOAL_DATA="+c.Dir)
	case "ceph":
		if t.Conf != "" {
			env = append(env, "CEPH_CONF="+t.Conf)
		}
	}
	return env, nil
}

// shell runs commands with sh -c, output to log; the first that fails
// stops them.
func shell(ctx context.Context, what string, cmds, env []string, log io.Writer) error {
	for _, c := range cmds {
		fmt.Fprintf(log, "%s $ %s\n", what, c)
		cmd := exec.CommandContext(ctx, "sh", "-c", c)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("sweep: %s: %q: %w (its output is in setup.log)", what, c, err)
		}
	}
	return nil
}

// runPoints is Run once the target is reached.
func runPoints(ctx context.Context, s *Spec, o Options, d driver, pts []Point) error {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	for _, p := range pts {
		if err := d.check(ctx, p); err != nil {
			return fmt.Errorf("%w: point %s: %v", ErrSpec, p.ID, err)
		}
	}
	host, _ := os.Hostname()
	ti := TargetInfo{Kind: s.Target.Kind, Counts: d.counts(), Host: host, Started: time.Now().UTC()}
	for _, dm := range d.daemons() {
		ti.Daemons = append(ti.Daemons, dm.Name)
	}
	if err := writeJSON(filepath.Join(o.Archive, "target.json"), ti); err != nil {
		return err
	}
	setups := map[string][]string{}
	for _, b := range s.Benchmarks {
		if len(b.Setup) > 0 {
			setups[b.Name] = b.Setup
		}
	}
	lastSetup := ""
	total := len(pts) * s.Iterations
	done := 0
	for it := range s.Iterations {
		for _, p := range pts {
			dir := pointDir(o.Archive, it, p.ID)
			done++
			if _, err := os.Stat(filepath.Join(dir, "result.json")); err == nil {
				fmt.Fprintf(out, "[%d/%d] %s: done earlier, kept\n", done, total, p.ID)
				continue
			}
			if cmds := setups[p.Benchmark]; cmds != nil && lastSetup != p.Benchmark {
				if err := benchSetup(ctx, s, o.Archive, p.Benchmark, cmds); err != nil {
					return err
				}
			}
			lastSetup = p.Benchmark
			fmt.Fprintf(out, "[%d/%d] iteration %d: %s\n", done, total, it, p.ID)
			res, err := runPoint(ctx, s, d, p, it, dir, out, o.Live)
			if err != nil {
				os.RemoveAll(dir) // a half-run point is run again on resume
				if ctx.Err() != nil {
					return fmt.Errorf("%w: %d of %d points done and kept in %s; run the same command again to resume", ErrInterrupted, done-1, total, o.Archive)
				}
				return fmt.Errorf("sweep: point %s: %w", p.ID, err)
			}
			fmt.Fprintf(out, "        %s\n", res.Line())
		}
	}
	if s.Cleanup {
		if err := d.cleanup(ctx, out); err != nil {
			fmt.Fprintf(out, "cleanup: %v\n", err)
		}
	}
	return nil
}

// Line is the result in one line: throughput, latencies, CPU.
func (r *Result) Line() string {
	short := ""
	if r.Short {
		short = fmt.Sprintf(" (measured over %.1f s only: the load ran out before the duration; for a seq read, raise prefill)", r.Seconds)
	}
	return fmt.Sprintf("%.1f MB/s, %.1f ops/s, latency mean %.2f ms, p99 %.2f ms, daemons' CPU %.2f s/GB, %.3f s per 1,000 ops, %d errors",
		r.MBPerSec, r.OpsPerSec, r.MeanMS, r.P99MS, r.CPUPerGB, r.CPUPer1000, r.Errors) + short
}

func pointDir(archive string, it int, id string) string {
	return filepath.Join(archive, "results", fmt.Sprintf("%08d", it), id)
}

// claimArchive makes the archive directory, or checks that an existing
// one holds this very file's results.
func claimArchive(dir string, raw []byte) error {
	if dir == "" {
		return errors.New("sweep: no archive directory")
	}
	f := filepath.Join(dir, "sweep.yaml")
	old, err := os.ReadFile(f)
	switch {
	case err == nil:
		if !bytes.Equal(old, raw) {
			return fmt.Errorf("sweep: %s holds the results of another sweep file (its sweep.yaml differs): choose another archive", dir)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("sweep: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return writeFile(f, raw)
}

// runPoint runs one point and archives it.
func runPoint(ctx context.Context, s *Spec, d driver, p Point, it int, dir string, out io.Writer, live bool) (*Result, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, "params.json"), p); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "output.txt"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	if err := d.prepare(ctx, p, log); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	res, samples, err := measure(ctx, s, d, p, log, out, live)
	if err != nil {
		// what the failed load wrote goes too (not under ctx, which may
		// be what ended it)
		actx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if aerr := d.after(actx, p, log); aerr != nil {
			fmt.Fprintf(out, "        cleaning up after the failed point: %v\n", aerr)
		}
		return nil, err
	}
	res.Iteration = it
	if err := d.after(ctx, p, log); err != nil {
		return nil, fmt.Errorf("after the load: %w", err)
	}
	if err := writeSamples(filepath.Join(dir, "samples.csv"), samples); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, "result.json"), res); err != nil { // last: its presence marks the point done
		return nil, err
	}
	return res, nil
}

// measure runs the load, cutting samples every second, and summarises
// the ones after the ramp.
func measure(ctx context.Context, s *Spec, d driver, p Point, log, out io.Writer, live bool) (*Result, []Sample, error) {
	rec := &Recorder{}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	loadErr := make(chan error, 1)
	start := time.Now()
	go func() { loadErr <- d.run(lctx, p, s.Ramp+s.Duration, rec, log) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var (
		samples  []Sample
		window   Histogram
		res      = &Result{Point: p, Start: start.UTC()}
		from     usageSnap
		measured bool
		last     time.Time = start
		err      error
	)
	var c0 map[string]uint64
	if s.Ramp == 0 {
		from, measured, c0 = snapUsage(d.daemons()), true, d.counters(ctx)
	}
	cutAt := func(now time.Time) {
		smp, errs := rec.cut()
		sm := Sample{At: now.Sub(start).Seconds(), Span: now.Sub(last).Seconds(), Ops: smp.ops, Bytes: smp.bytes, Errors: errs,
			Mean: smp.lat.Mean(), P50: smp.lat.Quantile(0.5), P99: smp.lat.Quantile(0.99), Max: smp.lat.Max()}
		samples = append(samples, sm)
		if last.Sub(start) >= s.Ramp { // the whole interval is past the ramp
			res.Seconds += sm.Span
			res.Ops += sm.Ops
			res.Bytes += sm.Bytes
			res.Errors += sm.Errors
			window.Merge(&smp.lat)
		}
		last = now
		if live {
			fmt.Fprintf(out, "\r        %4.0fs %10.1f MB/s %10.1f ops/s  p99 %8.2f ms ", sm.At, float64(sm.Bytes)/sm.Span/1e6, float64(sm.Ops)/sm.Span, ms(sm.P99))
		}
	}
loop:
	for {
		select {
		case now := <-tick.C:
			cutAt(now)
			if !measured && now.Sub(start) >= s.Ramp {
				from, measured, c0 = snapUsage(d.daemons()), true, d.counters(ctx)
			}
		case err = <-loadErr:
			// the window ends with the last operation, not with what the
			// generator did after it; a tail with none is dropped
			if l := rec.lastAt(); l.After(last) {
				cutAt(l)
			}
			break loop
		}
	}
	if live {
		fmt.Fprint(out, "\r\033[K")
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, nil, err
	}
	if !measured || res.Seconds == 0 {
		return nil, nil, fmt.Errorf("the load ended (%.1f s) before the ramp (%s) was over", time.Since(start).Seconds(), s.Ramp)
	}
	res.Usage = since(from, snapUsage(d.daemons()), d.daemons())
	res.Counters = counterDeltas(c0, d.counters(ctx))
	res.Short = res.Seconds < 0.9*s.Duration.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.MBPerSec = float64(res.Bytes) / res.Seconds / 1e6
	res.MeanMS, res.MaxMS = ms(window.Mean()), ms(window.Max())
	res.P50MS, res.P90MS = ms(window.Quantile(0.5)), ms(window.Quantile(0.9))
	res.P99MS, res.P999MS = ms(window.Quantile(0.99)), ms(window.Quantile(0.999))
	if window.Count() == 0 { // an external tool's totals: its own latency summary
		res.MeanMS, res.MaxMS = ms(rec.toolMean), ms(rec.toolMax)
	}
	if res.Bytes > 0 {
		res.CPUPerGB = res.Usage.CPUAll / (float64(res.Bytes) / 1e9)
	}
	if res.Ops > 0 {
		res.CPUPer1000 = res.Usage.CPUAll / (float64(res.Ops) / 1000)
	}
	return res, samples, nil
}

// counterDeltas sums per-OSD counters ("osd.N/NAME") over a window by
// NAME; nil when either reading is missing or the OSDs differ or a
// counter went down (an OSD restarted: its counters started over).
func counterDeltas(c0, c1 map[string]uint64) map[string]uint64 {
	if c0 == nil || c1 == nil || len(c0) != len(c1) {
		return nil
	}
	out := map[string]uint64{}
	for k, v1 := range c1 {
		v0, ok := c0[k]
		if !ok || v1 < v0 {
			return nil
		}
		_, name, _ := strings.Cut(k, "/")
		out[name] += v1 - v0
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func writeSamples(path string, samples []Sample) error {
	var b bytes.Buffer
	b.WriteString("at_s,span_s,ops,bytes,errors,lat_mean_ms,lat_p50_ms,lat_p99_ms,lat_max_ms\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.3f,%.3f,%d,%d,%d,%.3f,%.3f,%.3f,%.3f\n", s.At, s.Span, s.Ops, s.Bytes, s.Errors, ms(s.Mean), ms(s.P50), ms(s.P99), ms(s.Max))
	}
	return writeFile(path, b.Bytes())
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, append(b, '\n'))
}

// writeFile writes through a temporary file and a rename, so a file is
// whole or absent after a crash or Ctrl-C.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}
