package osd

import (
	"math"
	"testing"
)

func TestQuantile(t *testing.T) {
	buckets := []float64{math.Inf(-1), 0.001, 0.002, 0.004, math.Inf(1)}
	prev := []uint64{5, 10, 0, 0}
	tests := []struct {
		counts []uint64
		q      float64
		want   float64
		n      uint64
	}{
		{[]uint64{5, 10, 0, 0}, 0.9, 0, 0},             // nothing new
		{[]uint64{5, 20, 0, 0}, 0.9, 0.002, 10},        // all new samples in [1 ms, 2 ms)
		{[]uint64{5, 19, 1, 0}, 0.9, 0.002, 10},        // the 9th of 10 in the second bucket: on its boundary
		{[]uint64{5, 18, 2, 0}, 0.9, 0.004, 10},        // the 9th in the third
		{[]uint64{5, 10, 0, 10}, 0.9, math.Inf(1), 10}, // all above 4 ms
		{[]uint64{6, 10, 0, 0}, 0.5, 0.001, 1},         // below the first bound
	}
	for _, tc := range tests {
		if got, n := quantile(buckets, prev, tc.counts, tc.q); got != tc.want || n != tc.n {
			t.Errorf("counts %v, q %g: %g of %d samples, want %g of %d", tc.counts, tc.q, got, n, tc.want, tc.n)
		}
	}
	if got, n := quantile(buckets, nil, []uint64{1, 2, 3, 4}, 0.9); got != 0 || n != 0 {
		t.Errorf("no earlier reading: %g, %d; want 0, 0", got, n)
	}
}
