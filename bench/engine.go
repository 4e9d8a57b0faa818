package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// engine runs one write, seq or rand benchmark: Concurrency workers, each
// with its own buffer, take op numbers from a shared counter as
// obj_bencher.cc's completion slots do, and a status goroutine samples the
// counters every second.
type engine struct {
	c          *config
	mode       Mode
	prefix     string
	pseed      uint64
	opSize     int
	objectSize int
	// objects bounds the object indexes: write = MaxObjects (0 = none),
	// seq and rand = the number of objects of the write run.
	objects  int
	conc     int
	deadline time.Time

	mu       sync.Mutex
	stopped  bool // an op failed: start no more
	started  int
	finished int
	inFlight int
	curLat   time.Duration
	totalLat time.Duration
	minLat   time.Duration
	maxLat   time.Duration
	lats     []time.Duration
	errs     int
	firstErr error
	verify   int
	firstBad string
	maxIndex int // highest object index started + 1 (write: objects written)
}

func newEngine(c *config, mode Mode, prefix string, opSize, objects int) *engine {
	conc := c.Concurrency
	if mode == ModeSeq && objects < conc {
		conc = max(objects, 1)
	}
	return &engine{
		c:          c,
		mode:       mode,
		prefix:     prefix,
		pseed:      prefixSeed(prefix),
		opSize:     opSize,
		objectSize: opSize,
		objects:    objects,
		conc:       conc,
	}
}

// next claims the next op: its object index, or ok = false when the run is
// over. The first conc ops start regardless of the deadline, as
// obj_bencher.cc starts one op per slot before its timed loop.
func (e *engine) next(ctx context.Context) (idx int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped || ctx.Err() != nil {
		return 0, false
	}
	if e.started >= e.conc && !time.Now().Before(e.deadline) {
		return 0, false
	}
	switch e.mode {
	case ModeWrite:
		if e.objects > 0 && e.started >= e.objects {
			return 0, false
		}
		idx = e.started
	case ModeSeq:
		if e.started >= e.objects {
			return 0, false
		}
		idx = e.started
	case ModeRand:
		idx = rand.IntN(e.objects)
	}
	e.started++
	e.inFlight++
	e.maxIndex = max(e.maxIndex, idx+1)
	return idx, true
}

// done records the end of an op. bad is the verification message of a read
// whose content was wrong, "" otherwise.
func (e *engine) done(ctx context.Context, op, name string, lat time.Duration, err error, bad string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inFlight--
	if err != nil {
		if ctx.Err() != nil {
			return // cancelled, not a failure of the target
		}
		e.errs++
		if e.firstErr == nil {
			e.firstErr = fmt.Errorf("bench: %s %s: %w", op, name, err)
		}
		e.stopped = true
		return
	}
	e.finished++
	e.curLat = lat
	e.totalLat += lat
	if e.finished == 1 || lat < e.minLat {
		e.minLat = lat
	}
	if lat > e.maxLat {
		e.maxLat = lat
	}
	e.lats = append(e.lats, lat)
	if bad != "" {
		e.verify++
		if e.firstBad == "" {
			e.firstBad = bad
		}
		if e.c.text != nil {
			e.c.text.printf("%s\n", bad)
		}
	}
}

func (e *engine) worker(ctx context.Context, t Target) {
	var buf []byte
	if e.mode == ModeWrite {
		buf = make([]byte, e.opSize)
	}
	for {
		idx, ok := e.next(ctx)
		if !ok {
			return
		}
		name := ObjectName(e.prefix, idx)
		want := newContent(e.pseed, idx, e.opSize)
		if e.mode == ModeWrite {
			want.fill(buf)
			t0 := time.Now()
			err := t.WriteFull(ctx, name, buf)
			e.done(ctx, "write", name, time.Since(t0), err, "")
			continue
		}
		t0 := time.Now()
		data, release, err := read(ctx, t, name, uint64(e.opSize))
		lat := time.Since(t0) // before verifying, as obj_bencher.cc
		bad := ""
		if err == nil {
			if off := want.check(data); off >= 0 {
				if len(data) != e.opSize {
					bad = fmt.Sprintf("%s is not correct! (read %d bytes, want %d)", name, len(data), e.opSize)
				} else {
					bad = fmt.Sprintf("%s is not correct! (byte %d of %d differs)", name, off, e.opSize)
				}
			}
		}
		release()
		e.done(ctx, "read", name, lat, err, bad)
	}
}

// read reads [0, n) of oid, in place if t is a RefReader.
func read(ctx context.Context, t Target, oid string, n uint64) ([]byte, func(), error) {
	if r, ok := t.(RefReader); ok {
		data, release, err := r.ReadRef(ctx, oid, 0, n)
		if err != nil {
			return nil, func() {}, err
		}
		return data, release, nil
	}
	data, err := t.Read(ctx, oid, 0, n)
	return data, func() {}, err
}

// snapshot is what the status printer reads each second.
type snapshot struct {
	inFlight, started, finished int
	curLat, avgLat, minLat      float64
	maxLat                      float64
}

func (e *engine) snap() snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := snapshot{
		inFlight: e.inFlight,
		started:  e.started,
		finished: e.finished,
		curLat:   e.curLat.Seconds(),
		minLat:   e.minLat.Seconds(),
		maxLat:   e.maxLat.Seconds(),
	}
	if e.finished > 0 {
		s.avgLat = e.totalLat.Seconds() / float64(e.finished)
	}
	return s
}

// run runs the workers and the status printer and returns the Result and
// the first op error.
func (e *engine) run(ctx context.Context, t Target) (*Result, error) {
	start := time.Now()
	e.deadline = start.Add(e.c.Duration)
	p := newPrinter(e.c.text, e.opSize, start)

	done := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Go(func() {
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		p.tick(time.Now(), e.snap())
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tk.C:
				p.tick(now, e.snap())
			}
		}
	})

	var wg sync.WaitGroup
	for range e.conc {
		wg.Go(func() { e.worker(ctx, t) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(done)
	pwg.Wait()

	e.mu.Lock()
	defer e.mu.Unlock()
	return e.result(elapsed, p), e.firstErr
}

// result builds the Result; e.mu is held and the printer has stopped.
func (e *engine) result(elapsed time.Duration, p *printer) *Result {
	secs := elapsed.Seconds()
	r := &Result{
		Mode:           e.mode,
		ObjectPrefix:   e.prefix,
		Concurrency:    e.conc,
		TotalTime:      secs,
		Ops:            int64(e.finished),
		OpSize:         e.opSize,
		ObjectSize:     e.objectSize,
		Objects:        e.objects,
		Errors:         int64(e.errs),
		VerifyFailures: int64(e.verify),
	}
	if e.mode == ModeWrite {
		r.Objects = e.maxIndex
	}
	if secs > 0 {
		r.BandwidthAvg = float64(e.finished) * float64(e.opSize) / secs / mib
		r.IOPSAvg = float64(e.finished) / secs
	}
	if len(p.bw) > 0 {
		r.BandwidthStddev = stddev(p.bw)
		r.BandwidthMax = slices.Max(p.bw)
		r.BandwidthMin = slices.Min(p.bw)
	} else {
		r.BandwidthMax, r.BandwidthMin = r.BandwidthAvg, r.BandwidthAvg
	}
	if len(p.iops) > 0 {
		f := make([]float64, len(p.iops))
		for i, v := range p.iops {
			f[i] = float64(v)
		}
		r.IOPSStddev = stddev(f)
		r.IOPSMax = slices.Max(p.iops)
		r.IOPSMin = slices.Min(p.iops)
	} else {
		// obj_bencher.cc's status_printer: min = max = finished/runtime.
		r.IOPSMax, r.IOPSMin = int(r.IOPSAvg), int(r.IOPSAvg)
	}
	if n := len(e.lats); n > 0 {
		r.LatencyAvg = e.totalLat.Seconds() / float64(n)
		r.LatencyMax = e.maxLat.Seconds()
		r.LatencyMin = e.minLat.Seconds()
		f := make([]float64, n)
		for i, l := range e.lats {
			f[i] = l.Seconds()
		}
		r.LatencyStddev = stddev(f)
		slices.Sort(f)
		r.LatencyP50 = percentile(f, 50)
		r.LatencyP99 = percentile(f, 99)
	}
	return r
}

const mib = 1024 * 1024

// stddev is the sample standard deviation (n-1), 0 for fewer than two
// values, as obj_bencher.cc computes it.
func stddev(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	var mean float64
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(v)-1))
}

// percentile returns the nearest-rank p-th percentile of sorted (the
// smallest value with at least p% of the values at or below it).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// removeObjects removes <prefix>_object0 .. n-1 with conc removes in
// flight; objects that are already gone are skipped. It returns the number
// removed and the first other error (after which it starts no more).
func removeObjects(ctx context.Context, t Target, prefix string, n, conc int, isNotFound func(error) bool) (int, error) {
	var (
		mu       sync.Mutex
		next     int
		removed  int
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(conc, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				if firstErr != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				name := ObjectName(prefix, i)
				err := t.Remove(ctx, name)
				mu.Lock()
				switch {
				case err == nil:
					removed++
				case isNotFound(err):
				case firstErr == nil:
					if cerr := ctx.Err(); cerr != nil {
						firstErr = cerr
					} else {
						firstErr = fmt.Errorf("bench: remove %s: %w", name, err)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return removed, firstErr
}
