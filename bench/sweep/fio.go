package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/nbd"
)

// Block points with engine fio run fio (Debian's fio, with its rbd and
// nbd engines): its rbd engine against a Ceph target's image, its nbd
// engine against a Shoal image exported on a Unix socket by the sweep
// itself (nbd.Server, as `shoal rbd nbd serve`). fio reports each
// completion latency in its JSON+ output's histogram bins, so these
// points carry latency percentiles, which rbd bench's output does not.

// fioRW is fio's --rw for a block point's io_type and pattern.
func fioRW(ioType, pattern string) string {
	rw := map[string]string{"read": "read", "write": "write", "readwrite": "rw"}[ioType]
	if pattern == "rand" {
		rw = "rand" + rw
	}
	return rw
}

// fioArgs are fio's arguments for block point p running dur, before the
// engine's own (--ioengine=… and its options).
func fioArgs(p Point, dur time.Duration) []string {
	bo, _, _, size, _ := blockOptions(p)
	args := []string{"--name=sweep", "--rw=" + fioRW(bo.IOType, bo.Pattern), "--bs=" + strconv.Itoa(bo.IOSize),
		"--iodepth=" + strconv.Itoa(bo.Threads), "--numjobs=1", "--size=" + strconv.FormatUint(size, 10),
		"--time_based", "--runtime=" + secs(dur), "--output-format=json+", "--status-interval=1",
		// the job as a thread of fio's one process, so that ending fio
		// (the point's end, Ctrl-C, SIGTERM) ends the load with it
		"--thread"}
	if bo.IOType == "readwrite" {
		args = append(args, "--rwmixread="+strconv.Itoa(bo.RWMixRead))
	}
	return args
}

// fioReport is the part of one of fio's JSON reports a sweep reads:
// each job's totals so far, per direction.
type fioReport struct {
	Jobs []struct {
		Read  fioDir `json:"read"`
		Write fioDir `json:"write"`
		Trim  fioDir `json:"trim"`
	} `json:"jobs"`
}

type fioDir struct {
	IOBytes  uint64 `json:"io_bytes"`
	TotalIOs uint64 `json:"total_ios"`
	Clat     struct {
		// Bins counts completions by latency: fio's histogram buckets,
		// keyed by the bucket's latency in ns (JSON+ output only).
		Bins map[string]uint64 `json:"bins"`
	} `json:"clat_ns"`
}

// fioTotals is what a report says was done so far: operations, bytes
// and completions per latency bucket (ns).
type fioTotals struct {
	ops, bytes uint64
	bins       map[int64]uint64
}

func (r *fioReport) totals() (fioTotals, error) {
	t := fioTotals{bins: map[int64]uint64{}}
	for _, j := range r.Jobs {
		for _, d := range []fioDir{j.Read, j.Write, j.Trim} {
			t.ops += d.TotalIOs
			t.bytes += d.IOBytes
			for k, n := range d.Clat.Bins {
				ns, err := strconv.ParseInt(k, 10, 64)
				if err != nil {
					return t, fmt.Errorf("fio: latency bin %q", k)
				}
				t.bins[ns] += n
			}
		}
	}
	return t, nil
}

// runFio runs fio with args (and env added to the environment), copying
// its text to out and recording, from each of its reports (one a second,
// then the final one; each gives totals since the start), the
// operations, bytes and latencies since the report before.
func runFio(ctx context.Context, args, env []string, rec *Recorder, out io.Writer) error {
	cmd := exec.CommandContext(ctx, "fio", args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("fio: %w", err)
	}
	perr := readFioReports(stdout, rec, out)
	if perr != nil {
		cmd.Process.Kill() // its output is unreadable: stop the load now
	}
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("fio %s: %w", strings.Join(args, " "), err)
	}
	return perr
}

// readFioReports reads fio's output: JSON reports, each from a line "{"
// to a line "}", between lines of text (the nbd engine's "connected to
// NBD server"), which go to out.
func readFioReports(r io.Reader, rec *Recorder, out io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var doc strings.Builder
	in := false
	prev := fioTotals{bins: map[int64]uint64{}}
	reports := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && line == "{":
			in = true
			doc.Reset()
			doc.WriteString(line)
		case in:
			doc.WriteString(line)
			if line != "}" {
				continue
			}
			in = false
			var rep fioReport
			if err := json.Unmarshal([]byte(doc.String()), &rep); err != nil {
				return fmt.Errorf("fio: report %d: %w", reports+1, err)
			}
			t, err := rep.totals()
			if err != nil {
				return err
			}
			reports++
			if t.ops < prev.ops {
				return fmt.Errorf("fio: report %d: %d operations, fewer than the %d before", reports, t.ops, prev.ops)
			}
			var h Histogram
			for ns, n := range t.bins {
				if d := n - min(prev.bins[ns], n); d > 0 {
					h.AddN(time.Duration(ns), d)
				}
			}
			rec.bulk(t.ops-prev.ops, t.bytes-prev.bytes, &h, 0, 0)
			prev = t
		default:
			fmt.Fprintln(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("fio: %w", err)
	}
	if reports == 0 {
		return fmt.Errorf("fio printed no report")
	}
	return nil
}

// fioNBD exports img on a Unix socket of a new directory for as long as
// fio's nbd engine runs block point p against it.
func fioNBD(ctx context.Context, img nbd.Device, p Point, dur time.Duration, rec *Recorder, out io.Writer) error {
	_, _, name, _, _ := blockOptions(p)
	dir, err := os.MkdirTemp("", "shoal-sweep-nbd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "nbd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("nbd export: %w", err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- (&nbd.Server{Exports: []nbd.Export{{Name: name, Description: p.Params["image"], Device: img}}}).Serve(sctx, l)
	}()
	err = runFio(ctx, append(fioArgs(p, dur), "--ioengine=nbd", "--uri=nbd+unix:///"+name+"?socket="+sock), nil, rec, out)
	stop()
	if serr := <-served; err == nil && serr != nil {
		err = fmt.Errorf("nbd export: %w", serr)
	}
	return err
}
