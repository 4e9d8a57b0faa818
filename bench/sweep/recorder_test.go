package sweep

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for v := time.Duration(0); v < 1<<20; v += 1 + v/97 {
		b := bucketOf(v)
		if b < prev {
			t.Fatalf("bucket of %d is %d, below the previous %d", v, b, prev)
		}
		prev = b
		if lo, hi := lowOf(b), lowOf(b+1); v < lo || v >= hi {
			t.Fatalf("%d in bucket %d of [%d, %d)", v, b, lo, hi)
		}
		if hi := lowOf(b + 1); v >= 64 && float64(hi-lowOf(b)) > float64(v)/63 {
			t.Fatalf("bucket %d of %d is %d wide: over 1/64 of the value", b, v, hi-lowOf(b))
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var all []time.Duration
	var sum time.Duration
	for range 20000 {
		d := time.Duration(r.ExpFloat64() * float64(2*time.Millisecond))
		h.Add(d)
		all = append(all, d)
		sum += d
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(q*float64(len(all))+0.999999)-1]
		got := h.Quantile(q)
		if diff := float64(got-exact) / float64(exact); diff > 1.0/64 || diff < -1.0/64 {
			t.Errorf("q%v: %v, exact %v (%.2f%% off)", q, got, exact, diff*100)
		}
	}
	if h.Max() != all[len(all)-1] || h.Mean() != sum/time.Duration(len(all)) || h.Count() != 20000 {
		t.Fatalf("max %v mean %v count %d", h.Max(), h.Mean(), h.Count())
	}
	var a, b Histogram
	for i, d := range all {
		if i%2 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
	}
	a.Merge(&b)
	for _, q := range []float64{0.5, 0.99} {
		if a.Quantile(q) != h.Quantile(q) {
			t.Fatalf("merged q%v %v, whole %v", q, a.Quantile(q), h.Quantile(q))
		}
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 {
		t.Fatal("empty histogram")
	}
}
