package autoscaler

import "testing"

// Cases and expected pg_num from Ceph's own tests of the three passes
// (src/pybind/mgr/pg_autoscaler/tests/test_cal_final_pg_target.py):
// capacity ratios given as raw use over a capacity of 1000 bytes, a
// root's PG budget as its OSDs times 100.
func TestCephCases(t *testing.T) {
	type pool struct {
		name  string
		root  int32
		ratio float64
		bulk  bool
		want  uint32
	}
	for _, tc := range []struct {
		name  string
		roots map[int32]int // root → OSDs
		pools []pool
	}{
		{"even pools, one meta three bulk", map[int32]int{0: 4},
			[]pool{{"meta_0", 0, 0.2, false, 64}, {"bulk_0", 0, 0.2, true, 128}, {"bulk_1", 0, 0.2, true, 128}, {"bulk_2", 0, 0.1, true, 128}}},
		{"even pools, two meta two bulk", map[int32]int{0: 4},
			[]pool{{"meta0", 0, 0.2, false, 64}, {"meta1", 0, 0.2, false, 64}, {"bulk0", 0, 0.2, true, 128}, {"bulk1", 0, 0.1, true, 128}}},
		{"uneven pools, one meta three bulk", map[int32]int{0: 4},
			[]pool{{"meta0", 0, 0.1, false, 32}, {"bulk0", 0, 0.5, true, 128}, {"bulk1", 0, 0.1, true, 64}, {"bulk2", 0, 0.1, true, 64}}},
		{"uneven pools, two meta two bulk", map[int32]int{0: 4},
			[]pool{{"meta0", 0, 0.1, false, 32}, {"meta1", 0, 0.1, false, 32}, {"bulk0", 0, 0.5, true, 128}, {"bulk1", 0, 0.1, true, 128}}},
		{"uneven pools with different roots", map[int32]int{0: 50, 1: 50},
			[]pool{{"meta0", 0, 0.3, false, 1024}, {"meta1", 1, 0.6, false, 2048}, {"bulk2", 0, 0.6, true, 2048}, {"bulk3", 0, 0.1, true, 1024}, {"bulk4", 1, 0.4, true, 2048}}},
		{"even pools with different roots", map[int32]int{0: 50, 1: 50},
			[]pool{{"meta0", 0, 0.4, false, 2048}, {"meta1", 1, 0.6, false, 2048}, {"bulk1", 0, 0.2, true, 1024}, {"bulk2", 0, 0.1, true, 1024}, {"bulk4", 1, 0.25, true, 2048}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roots := map[int32]Root{}
			for id, n := range tc.roots {
				roots[id] = Root{OSDs: n, Capacity: 1000}
			}
			var ps []Pool
			for i, p := range tc.pools {
				ps = append(ps, Pool{ID: int64(i), Name: p.name, Root: p.root, Size: 1, RawRate: 1, PGNum: 32,
					RawUsed: uint64(p.ratio * 1000), Bulk: p.bulk})
			}
			rows := Recommend(ps, roots, 0)
			if len(rows) != len(ps) {
				t.Fatalf("%d rows for %d pools", len(rows), len(ps))
			}
			for i, r := range rows {
				if r.Name != tc.pools[i].name || r.Final != tc.pools[i].want {
					t.Errorf("%s: pg_num %d, want %d (ideal %d)", r.Name, r.Final, tc.pools[i].want, r.Ideal)
				}
			}
		})
	}
}

// Targets, bias, bounds and the 3x threshold: a 3-replica pool expected
// to fill its root on 30 OSDs wants 30*100/3 = 1000 -> 1024 PGs; half
// the bias halves it; pg_num_max caps it; a pool of 512 PGs is within
// 3x of 1024 (no adjustment), one of 32 is not.
func TestTargetsAndBounds(t *testing.T) {
	roots := map[int32]Root{-1: {OSDs: 30, Capacity: 1 << 40}}
	base := Pool{ID: 1, Name: "p", Root: -1, Size: 3, RawRate: 3, PGNum: 32, TargetRatio: 1}
	check := func(p Pool, want uint32, adjust bool) {
		t.Helper()
		r := Recommend([]Pool{p}, roots, 0)[0]
		if r.Final != want || r.WouldAdjust != adjust {
			t.Errorf("%+v: pg_num %d (would adjust %v), want %d (%v)", p, r.Final, r.WouldAdjust, want, adjust)
		}
	}
	check(base, 1024, true)
	half := base
	half.Bias = 0.5
	check(half, 512, true)
	capped := base
	capped.PGNumMax = 256
	check(capped, 256, true)
	near := base
	near.PGNum = 512
	check(near, 1024, false)
	empty := base
	empty.TargetRatio = 0
	check(empty, 32, false) // an empty pool gets the floor
	floor := empty
	floor.PGNumMin = 64
	check(floor, 64, false)
	bytes := empty
	bytes.TargetBytes = 1 << 38 // a quarter of the capacity after 3x: 3/4 of it
	check(bytes, 512, true)     // 0.75*3000/3 = 750: 512 is nearer than 1024
	if got := Recommend([]Pool{base}, map[int32]Root{-1: {OSDs: 3}}, 0); len(got) != 0 {
		t.Errorf("a root without capacity: %+v", got)
	}
}

func TestNearestPowerOfTwo(t *testing.T) {
	for n, want := range map[float64]uint32{0: 1, 1: 1, 40: 32, 48: 64, 80: 64, 96: 128, 106.67: 128, 1500: 1024, 3000: 2048, 1e12: 1 << 30} {
		if got := nearestPowerOfTwo(n); got != want {
			t.Errorf("nearestPowerOfTwo(%v) = %d, want %d", n, got, want)
		}
	}
}
