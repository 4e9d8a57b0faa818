package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Device is a block device a block benchmark drives (an rbd.Image):
// reads and writes of whole buffers at byte offsets within Size.
type Device interface {
	ReadAt(ctx context.Context, p []byte, off uint64) error
	WriteAt(ctx context.Context, p []byte, off uint64) error
	Size() uint64
}

// BlockOptions are rbd bench's options (doc/man/8/rbd.rst, "bench").
type BlockOptions struct {
	IOType    string // "read", "write" or "readwrite"
	IOSize    int    // bytes per I/O; default 4 KiB
	Threads   int    // I/Os in flight; default 16
	Total     uint64 // bytes to transfer in all; default 1 GiB
	Pattern   string // "seq" or "rand"; default "seq"
	RWMixRead int    // readwrite: the percentage of reads (rbd bench's default, 50, is the CLI's)
	// Duration, if set, also ends the run: no I/O starts after it (a
	// sweep's time-bound point; rbd bench has only --io-total).
	Duration time.Duration
}

// BlockResult is a block benchmark's outcome.
type BlockResult struct {
	Elapsed              time.Duration // from the first I/O issued to the last completed
	Ops, ReadOps         uint64        // I/Os completed, all and reads
	Bytes, ReadBytes     uint64        // bytes they moved
	Mean, P99, P999      time.Duration // per-I/O latency over every I/O
	ReadMean, WriteMean  time.Duration // mean latency of reads and of writes
	OpsPerSec, BytesPerS float64       // Ops and Bytes over Elapsed
}

// RunBlock runs rbd bench's loop on dev: o.Threads workers each issue
// one I/O at a time, at consecutive offsets (seq: the workers share one
// cursor that wraps at the end) or uniformly random aligned ones, until
// o.Total bytes moved. It prints rbd bench's header, a line per second
// (SEC, OPS, OPS/SEC, BYTES/SEC) and the summary to out, and returns
// the figures with latency percentiles (which rbd bench does not print).
func RunBlock(ctx context.Context, dev Device, o BlockOptions, out io.Writer) (*BlockResult, error) {
	if o.IOSize == 0 {
		o.IOSize = 4096
	}
	if o.Threads == 0 {
		o.Threads = 16
	}
	if o.Total == 0 {
		o.Total = 1 << 30
	}
	if o.Pattern == "" {
		o.Pattern = "seq"
	}
	size := dev.Size()
	switch {
	case o.IOType != "read" && o.IOType != "write" && o.IOType != "readwrite":
		return nil, fmt.Errorf("bench: io type %q: want read, write or readwrite", o.IOType)
	case o.Pattern != "seq" && o.Pattern != "rand":
		return nil, fmt.Errorf("bench: io pattern %q: want seq or rand", o.Pattern)
	case o.IOSize <= 0 || uint64(o.IOSize) > size:
		return nil, fmt.Errorf("bench: io size %d: want 1 byte to the device's %d", o.IOSize, size)
	case o.RWMixRead < 0 || o.RWMixRead > 100:
		return nil, fmt.Errorf("bench: rw mix read %d%%: want 0 to 100", o.RWMixRead)
	}
	pattern := map[string]string{"seq": "sequential", "rand": "random"}[o.Pattern]
	fmt.Fprintf(out, "bench  type %s io_size %d io_threads %d bytes %d pattern %s\n", o.IOType, o.IOSize, o.Threads, o.Total, pattern)
	slots := size / uint64(o.IOSize) // aligned I/O positions
	total := o.Total / uint64(o.IOSize)
	var issued, done, doneRead, cursor atomic.Uint64
	lat := make([][]time.Duration, o.Threads)
	readLat := make([]time.Duration, o.Threads)
	writeLat := make([]time.Duration, o.Threads)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	start := time.Now()
	var deadline time.Time
	if o.Duration > 0 {
		deadline = start.Add(o.Duration)
	}
	for w := range o.Threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			buf := make([]byte, o.IOSize)
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			for issued.Add(1) <= total && (deadline.IsZero() || time.Now().Before(deadline)) {
				var slot uint64
				if o.Pattern == "rand" {
					slot = rng.Uint64N(slots)
				} else {
					slot = (cursor.Add(1) - 1) % slots
				}
				read := o.IOType == "read" || (o.IOType == "readwrite" && rng.IntN(100) < o.RWMixRead)
				t0 := time.Now()
				var err error
				if read {
					err = dev.ReadAt(ctx, buf, slot*uint64(o.IOSize))
				} else {
					err = dev.WriteAt(ctx, buf, slot*uint64(o.IOSize))
				}
				d := time.Since(t0)
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				lat[w] = append(lat[w], d)
				if read {
					readLat[w] += d
					doneRead.Add(1)
				} else {
					writeLat[w] += d
				}
				done.Add(1)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	fmt.Fprintf(out, "  SEC       OPS   OPS/SEC   BYTES/SEC\n")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, sec := uint64(0), 0
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-tick.C:
			sec++
			n := done.Load()
			fmt.Fprintf(out, "%5d  %8d  %8.2f  %s/s\n", sec, n, float64(n-last), iec(float64((n-last)*uint64(o.IOSize))))
			last = n
		}
	}
	if firstErr != nil {
		return nil, fmt.Errorf("bench: %w", firstErr)
	}
	r := &BlockResult{Elapsed: time.Since(start), Ops: done.Load(), ReadOps: doneRead.Load()}
	r.Bytes, r.ReadBytes = r.Ops*uint64(o.IOSize), r.ReadOps*uint64(o.IOSize)
	all := slices.Concat(lat...)
	slices.Sort(all)
	var sum, rsum, wsum time.Duration
	for _, d := range all {
		sum += d
	}
	for w := range o.Threads {
		rsum, wsum = rsum+readLat[w], wsum+writeLat[w]
	}
	if len(all) > 0 {
		r.Mean = sum / time.Duration(len(all))
		r.P99 = all[min(len(all)-1, len(all)*99/100)]
		r.P999 = all[min(len(all)-1, len(all)*999/1000)]
	}
	if r.ReadOps > 0 {
		r.ReadMean = rsum / time.Duration(r.ReadOps)
	}
	if w := r.Ops - r.ReadOps; w > 0 {
		r.WriteMean = wsum / time.Duration(w)
	}
	secs := r.Elapsed.Seconds()
	r.OpsPerSec, r.BytesPerS = float64(r.Ops)/secs, float64(r.Bytes)/secs
	fmt.Fprintf(out, "elapsed: %d   ops: %d   ops/sec: %.2f   bytes/sec: %s/s\n", int(secs+0.5), r.Ops, r.OpsPerSec, iec(r.BytesPerS))
	if o.IOType == "readwrite" {
		w := r.Ops - r.ReadOps
		fmt.Fprintf(out, "read_ops: %d   read_ops/sec: %.2f   read_bytes/sec: %s/s\n", r.ReadOps, float64(r.ReadOps)/secs, iec(float64(r.ReadBytes)/secs))
		fmt.Fprintf(out, "write_ops: %d   write_ops/sec: %.2f   write_bytes/sec: %s/s\n", w, float64(w)/secs, iec(float64(w*uint64(o.IOSize))/secs))
	}
	fmt.Fprintf(out, "latency: mean %s   p99 %s   p99.9 %s\n", r.Mean.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.P999.Round(time.Microsecond))
	return r, nil
}

// iec formats a byte count as rbd bench does: "59 MiB", "1.2 GiB".
func iec(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if b >= 100 || i == 0 {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
