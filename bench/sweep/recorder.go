package sweep

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// Histogram counts latencies in log-linear buckets: 64 per power of two
// of nanoseconds, so a percentile read from it is within 1/64 (1.6 %) of
// the latency it stands for, in bounded memory (the scheme of HDR
// Histogram, hdrhistogram.org, at two significant figures).
type Histogram struct {
	counts []uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

const subBits = 6 // 64 sub-buckets per power of two

func bucketOf(d time.Duration) int {
	v := uint64(max(d, 0))
	if v < 1<<subBits {
		return int(v)
	}
	e := bits.Len64(v) - subBits - 1 // shift keeping subBits+1 significant bits
	return (e+1)<<subBits + int(v>>uint(e)) - 1<<subBits
}

// lowOf is the smallest latency bucket b holds.
func lowOf(b int) time.Duration {
	if b < 1<<subBits {
		return time.Duration(b)
	}
	e := b>>subBits - 1
	m := uint64(b&(1<<subBits-1) | 1<<subBits)
	return time.Duration(m << uint(e))
}

// Add counts one latency.
func (h *Histogram) Add(d time.Duration) { h.AddN(d, 1) }

// AddN counts n latencies of d.
func (h *Histogram) AddN(d time.Duration, n uint64) {
	if n == 0 {
		return
	}
	b := bucketOf(d)
	if b >= len(h.counts) {
		h.counts = append(h.counts, make([]uint64, b+1-len(h.counts))...)
	}
	h.counts[b] += n
	h.n += n
	h.sum += d * time.Duration(n)
	h.max = max(h.max, d)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if len(o.counts) > len(h.counts) {
		h.counts = append(h.counts, make([]uint64, len(o.counts)-len(h.counts))...)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count is the number of latencies added.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the mean latency, 0 for none.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Max is the largest latency added.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile is the q-quantile (0 < q ≤ 1) by nearest rank: the middle of
// the bucket that holds the ceil(q·n)-th smallest latency, no more than
// Max. 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := lowOf(b), lowOf(b+1)
			return min(lo+(hi-lo)/2, h.max)
		}
	}
	return h.max
}

// Recorder collects a load's completed operations, and cuts them into
// one Sample per second. Op is safe to call from many goroutines.
type Recorder struct {
	mu     sync.Mutex
	cur    sample
	errors uint64
	// toolMean and toolMax are the latencies an external tool reported
	// for operations recorded by bulk without their single ones.
	toolMean, toolMax time.Duration
	// last is when the latest operation was recorded: the load's end,
	// before what a generator does after it (sorting latencies, writing
	// its metadata object).
	last time.Time
}

// lastAt is when the latest operation was recorded.
func (r *Recorder) lastAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

type sample struct {
	ops, bytes uint64
	lat        Histogram
}

// Op records one completed operation of n bytes that took lat; a failed
// one (err) counts as an error only.
func (r *Recorder) Op(n int, lat time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = time.Now()
	if err != nil {
		r.errors++
		return
	}
	r.cur.ops++
	r.cur.bytes += uint64(n)
	r.cur.lat.Add(lat)
}

// cut returns what was recorded since the last cut and starts anew.
func (r *Recorder) cut() (sample, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, e := r.cur, r.errors
	r.cur, r.errors = sample{}, 0
	return s, e
}

// merge records operations counted elsewhere (another process's
// Recorder, an external tool): ops operations moving b bytes, errs failed
// ones, their latencies in lat (nil: unknown one by one), the latest
// ended at last (zero: none).
func (r *Recorder) merge(ops, b, errs uint64, lat *Histogram, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last.After(r.last) {
		r.last = last
	}
	r.cur.ops += ops
	r.cur.bytes += b
	if lat != nil {
		r.cur.lat.Merge(lat)
	}
	r.errors += errs
}

// bulk records ops operations moving b bytes that an external tool
// reported in bulk, as they are reported (merge): their latencies
// counted in lat (fio's histogram), or, with lat nil, unknown one by one,
// the tool giving at most its own summary of all its operations in mean
// and maxLat (each 0 if not).
func (r *Recorder) bulk(ops, b uint64, lat *Histogram, mean, maxLat time.Duration) {
	var now time.Time
	if ops > 0 {
		now = time.Now()
	}
	r.merge(ops, b, 0, lat, now)
	r.mu.Lock()
	defer r.mu.Unlock()
	if mean > 0 {
		r.toolMean = mean
	}
	if maxLat > 0 {
		r.toolMax = maxLat
	}
}
