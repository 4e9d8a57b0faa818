package crush

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// TestOptions selects what Test maps and prints; the fields mirror
// `crushtool --test` flags.
type TestOptions struct {
	MinX, MaxX       int               // inputs; default 0..1023
	MinRule, MaxRule int               // rule ids; -1 = every rule
	MinRep, MaxRep   int               // replica counts; -1 = the rule's min_size..max_size
	PoolID           int               // ≥ 0: hash x with the pool id, as a pool's PGs are
	Reweight         map[int32]float64 // --weight: per-device reweight in [0, 1]
	ShowMappings     bool
	ShowBadMappings  bool
	ShowUtilization  bool
	ShowUtilAll      bool
	ShowStatistics   bool
}

// DefaultTestOptions are crushtool's defaults.
func DefaultTestOptions() TestOptions {
	return TestOptions{MinX: -1, MaxX: -1, MinRule: -1, MaxRule: -1, MinRep: -1, MaxRep: -1, PoolID: -1}
}

// FormatMapping prints a mapping as crushtool does: "[1,2,3]".
func FormatMapping(out []int32) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, o := range out {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatInt(int64(o), 10))
	}
	sb.WriteByte(']')
	return sb.String()
}

// deviceWeights is the weight vector crushtool tests with: 1.0 for every
// device placed in a bucket, the --weight value where given, else 0.
func (m *Map) deviceWeights(reweight map[int32]float64) []uint32 {
	present := map[int32]bool{}
	for _, b := range m.buckets {
		if b != nil {
			for _, it := range b.Items {
				present[it] = true
			}
		}
	}
	w := make([]uint32, m.maxDevices)
	for i := range w {
		if f, ok := reweight[int32(i)]; ok {
			v := int32(float32(f) * WeightOne)
			w[i] = uint32(min(max(v, 0), WeightOne))
		} else if present[int32(i)] {
			w[i] = WeightOne
		}
	}
	return w
}

// bucketCapacity is Ceph's crush->max_buckets: the bucket array grows from 8
// by doubling, and crushtool's statistics depend on that size.
func (m *Map) bucketCapacity() int {
	n := 0
	for len(m.buckets) > n {
		if n == 0 {
			n = 8
		} else {
			n *= 2
		}
	}
	return n
}

// maxAffected is CrushTester::get_maximum_affected_by_rule, reproduced with
// its quirks (devices never count for type 0; a type used by two steps is
// counted twice) so that "expected" figures match crushtool's.
func (m *Map) maxAffected(r *Rule) int {
	var types []int32
	reps := map[int32]int32{}
	for _, s := range r.Steps {
		if s.Op >= 2 && s.Op != OpEmit {
			types = append(types, s.Arg2)
			reps[s.Arg2] = s.Arg1
		}
	}
	count := map[int32]int{}
	for _, t := range types {
		for _, b := range m.buckets {
			if b != nil && b.Name != "" && b.Type == t {
				count[t]++
			}
		}
	}
	for _, t := range types {
		if reps[t] > 0 && int(reps[t]) < count[t] {
			count[t] = int(reps[t])
		}
	}
	maxAff := max(m.bucketCapacity(), int(m.maxDevices))
	for _, t := range types {
		if count[t] > 0 && count[t] < maxAff {
			maxAff = count[t]
		}
	}
	return maxAff
}

func g6(f float32) string { return strconv.FormatFloat(float64(f), 'g', 6, 64) }

// Test maps a range of inputs through the selected rules and writes what
// `crushtool --test` writes for the same options, line for line.
func (m *Map) Test(out io.Writer, o TestOptions) error {
	bw := bufio.NewWriter(out)
	if o.MinRule < 0 || o.MaxRule < 0 {
		o.MinRule, o.MaxRule = 0, len(m.rules)-1
	}
	if o.MinX < 0 || o.MaxX < 0 {
		o.MinX, o.MaxX = 0, 1023
	}
	// crushtool turns statistics on for either utilization flag, and
	// --show-utilization-all lists every device, not only those used.
	stats := o.ShowStatistics || o.ShowUtilization || o.ShowUtilAll
	weights := m.deviceWeights(o.Reweight)
	var result []int32
	for r := o.MinRule; r < len(m.rules) && r <= o.MaxRule; r++ {
		rule := m.rules[r]
		if rule == nil {
			if stats {
				fmt.Fprintf(bw, "rule %d dne\n", r)
			}
			continue
		}
		minr, maxr := o.MinRep, o.MaxRep
		if minr < 0 || maxr < 0 {
			minr, maxr = int(rule.MinSize), int(rule.MaxSize)
		}
		if stats {
			fmt.Fprintf(bw, "rule %d (%s), x = %d..%d, numrep = %d..%d\n", r, rule.Name, o.MinX, o.MaxX, minr, maxr)
		}
		for nr := minr; nr <= maxr; nr++ {
			per := make([]int, m.maxDevices)
			sizes := map[int]int{}
			numObjects := o.MaxX - o.MinX + 1
			total := 0
			for _, w := range weights {
				total += int(w)
			}
			if total == 0 {
				continue
			}
			expected := float32(min(nr, m.maxAffected(rule)) * numObjects)
			for x := o.MinX; x <= o.MaxX; x++ {
				realX := uint32(x)
				if o.PoolID >= 0 {
					realX = Hash32_2(uint32(x), uint32(o.PoolID))
				}
				result = m.DoRule(r, realX, nr, weights, result)
				if o.ShowMappings {
					fmt.Fprintf(bw, "CRUSH rule %d x %d %s\n", r, x, FormatMapping(result))
				}
				hasNone := false
				for _, d := range result {
					switch {
					case d == ItemNone:
						hasNone = true
					case d >= 0 && int(d) < len(per): // a rule may emit buckets
						per[d]++
					}
				}
				sizes[len(result)]++
				if o.ShowBadMappings && (len(result) != nr || hasNone) {
					fmt.Fprintf(bw, "bad mapping rule %d x %d num_rep %d result %s\n", r, x, nr, FormatMapping(result))
				}
			}
			if stats {
				var keys []int
				for k := range sizes {
					keys = append(keys, k)
				}
				sort.Ints(keys)
				for _, k := range keys {
					fmt.Fprintf(bw, "rule %d (%s) num_rep %d result size == %d:\t%d/%d\n", r, rule.Name, nr, k, sizes[k], numObjects)
				}
				for i, n := range per {
					exp := float32(weights[i]) / float32(total) * expected
					if o.ShowUtilAll || (o.ShowUtilization && exp > 0 && n > 0) {
						fmt.Fprintf(bw, "  device %d:\t\t stored : %d\t expected : %s\n", i, n, g6(exp))
					}
				}
			}
		}
	}
	return bw.Flush()
}
