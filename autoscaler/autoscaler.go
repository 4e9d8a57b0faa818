// Package autoscaler recommends each pool's pg_num as Ceph's PG
// autoscaler does (src/pybind/mgr/pg_autoscaler/module.py, Quincy):
// every CRUSH root gets mon_target_pg_per_osd (100) PG copies per OSD
// under it, shared among the root's pools by the capacity each uses or is
// expected to use (target_size_ratio, target_size_bytes), then divided by
// the pool's size (replicas or k+m shards), multiplied by its bias and
// rounded to the nearest power of two, no lower than pg_num_min (32) nor
// higher than pg_num_max.
//
// The shares are taken in Ceph's three passes: pools without the bulk
// flag first, each by its capacity ratio; then bulk pools that use more
// than an even share of what is left; then the rest, evenly. A pool's
// pg_num is worth changing only when the recommendation is more than
// Threshold (3) times above or below it.
//
// It is pure: pools, usage and capacity in, recommendations out: `shoal
// osd pool autoscale-status`; a health warning for pools in warn mode;
// and for pools in on mode, the manager sets pg_num to a recommendation
// worth it (package mgr): PGs split at once, or merge one at a time.
package autoscaler

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"text/tabwriter"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/osdmap"
)

// Ceph's defaults.
const (
	// TargetPGPerOSD is mon_target_pg_per_osd.
	TargetPGPerOSD = 100
	// PGNumMin is the floor of a recommendation without pg_num_min.
	PGNumMin = 32
	// Threshold is the factor by which a recommendation must differ from
	// pg_num to be acted on (the module's threshold option).
	Threshold = 3.0
)

// Pool is what the autoscaler knows of one pool.
type Pool struct {
	ID   int64
	Name string
	// Root is the CRUSH root its rule takes.
	Root int32
	// Size is its replicas or k+m shards; RawRate the raw bytes one
	// logical byte takes (Size, or (k+m)/k).
	Size    int
	RawRate float64
	PGNum   uint32
	// RawUsed is the raw bytes its objects take now.
	RawUsed uint64
	// The pool's options (osdmap.AutoscaleOptions).
	TargetRatio        float64
	TargetBytes        uint64
	Bias               float64
	PGNumMin, PGNumMax uint32
	Bulk               bool
	Mode               string
}

// Root is a CRUSH root's OSDs and their raw capacity (bytes).
type Root struct {
	OSDs     int
	Capacity uint64
}

// Row is one pool's recommendation: `ceph osd pool autoscale-status`'s
// columns.
type Row struct {
	Pool int64  `json:"pool_id"`
	Name string `json:"pool_name"`
	// LogicalUsed is the pool's bytes before replication or coding,
	// TargetBytes its target_size_bytes (0 when a ratio is set), RawRate
	// the raw bytes per logical byte, Capacity its root's raw bytes.
	LogicalUsed uint64  `json:"logical_used"`
	TargetBytes uint64  `json:"target_bytes"`
	RawRate     float64 `json:"raw_used_rate"`
	Capacity    uint64  `json:"subtree_capacity"`
	// CapacityRatio is the share of Capacity the pool uses or is
	// expected to use (the larger); TargetRatio its target_size_ratio,
	// EffRatio that ratio as a share of its root's.
	CapacityRatio float64 `json:"capacity_ratio"`
	TargetRatio   float64 `json:"target_ratio"`
	EffRatio      float64 `json:"effective_target_ratio"`
	Bias          float64 `json:"bias"`
	// PGNum is the pool's pg_num, Ideal the unrounded recommendation,
	// Final the recommendation; WouldAdjust: Final is more than Threshold
	// times above or below PGNum.
	PGNum       uint32 `json:"pg_num_target"`
	Ideal       int    `json:"pg_num_ideal"`
	Final       uint32 `json:"pg_num_final"`
	WouldAdjust bool   `json:"would_adjust"`
	Mode        string `json:"pg_autoscale_mode"` // off, warn or on
	Bulk        bool   `json:"bulk"`
}

type rootState struct {
	Root
	pgLeft, poolCount, poolUsed int
	totalRatio, totalBytes      float64
}

// Recommend computes a Row for every pool whose root has capacity, in
// the order given (Ceph goes by pool id), with targetPerOSD PG copies per
// OSD (TargetPGPerOSD when 0).
func Recommend(pools []Pool, roots map[int32]Root, targetPerOSD int) []Row {
	if targetPerOSD <= 0 {
		targetPerOSD = TargetPGPerOSD
	}
	rs := map[int32]*rootState{}
	for id, r := range roots {
		rs[id] = &rootState{Root: r, pgLeft: r.OSDs * targetPerOSD}
	}
	var live []Pool
	for _, p := range pools {
		r := rs[p.Root]
		if r == nil || r.Capacity == 0 {
			continue
		}
		live = append(live, p)
		r.poolCount++
		r.totalRatio += p.TargetRatio
		r.totalBytes += float64(p.TargetBytes) * p.RawRate
	}
	rows := map[int64]Row{}
	pass := func(ps []Pool, which int) (later []Pool) {
		for _, p := range ps {
			r := rs[p.Root]
			targetBytes := uint64(0)
			if p.TargetRatio == 0 {
				targetBytes = p.TargetBytes
			}
			rawUsed := math.Max(float64(p.RawUsed), float64(targetBytes)*p.RawRate)
			capRatio := rawUsed / float64(r.Capacity)
			eff := effectiveRatio(p.TargetRatio, r.totalRatio, r.totalBytes, float64(r.Capacity))
			capRatio = math.Max(capRatio, eff)
			bias := p.Bias
			if bias == 0 {
				bias = 1
			}
			var final, target float64
			switch which {
			case 1:
				if p.Bulk {
					later = append(later, p)
					continue
				}
				final = capRatio
				used := final * float64(r.pgLeft)
				r.pgLeft -= int(used)
				r.poolUsed++
				target = used / float64(p.Size) * bias
			case 2:
				even := 1 / float64(r.poolCount-r.poolUsed)
				if capRatio <= even {
					later = append(later, p)
					continue
				}
				r.poolUsed++
				final = math.Max(capRatio, even)
				used := final * float64(r.pgLeft)
				r.pgLeft -= int(used)
				target = used / float64(p.Size) * bias
			default:
				final = 1 / float64(r.poolCount-r.poolUsed)
				target = final * float64(r.pgLeft) / float64(p.Size) * bias
			}
			floor := uint32(PGNumMin)
			if p.PGNumMin > 0 {
				floor = p.PGNumMin
			}
			pgs := max(floor, nearestPowerOfTwo(target))
			if p.PGNumMax > 0 && p.PGNumMax < pgs {
				pgs = p.PGNumMax
			}
			logical := uint64(0)
			if p.RawRate > 0 {
				logical = uint64(float64(p.RawUsed) / p.RawRate)
			}
			rows[p.ID] = Row{Pool: p.ID, Name: p.Name, LogicalUsed: logical, TargetBytes: targetBytes, RawRate: p.RawRate,
				Capacity: r.Capacity, CapacityRatio: capRatio, TargetRatio: p.TargetRatio, EffRatio: eff, Bias: bias,
				PGNum: p.PGNum, Ideal: int(target), Final: pgs, Mode: p.Mode, Bulk: p.Bulk,
				WouldAdjust: (float64(pgs) > float64(p.PGNum)*Threshold || float64(pgs) < float64(p.PGNum)/Threshold) && final >= 0 && final <= 1}
		}
		return later
	}
	bulk := pass(live, 1)
	even := pass(bulk, 2)
	pass(even, 3)
	out := make([]Row, 0, len(rows))
	for _, p := range live {
		out = append(out, rows[p.ID])
	}
	return out
}

// effectiveRatio is a pool's target_size_ratio as a share of its root's
// ratios, scaled down by the capacity target_size_bytes reserve (Ceph's
// effective_target_ratio).
func effectiveRatio(ratio, totalRatio, totalBytes, capacity float64) float64 {
	if totalRatio > 0 {
		ratio /= totalRatio
	}
	if totalBytes > 0 && capacity > 0 {
		ratio *= 1 - math.Min(1, totalBytes/capacity)
	}
	return ratio
}

// nearestPowerOfTwo rounds n to the closer of the powers of two around
// it (the upper one on a tie), as Ceph's nearest_power_of_two.
func nearestPowerOfTwo(n float64) uint32 {
	n = math.Min(n, 1<<30)
	v := uint32(n)
	if v == 0 {
		return 1
	}
	up := uint32(1) << bits.Len32(v-1) // the next power of two ≥ v
	down := up >> 1
	if float64(up)-n > n-float64(down) {
		return down
	}
	return up
}

// FromMap describes m's pools and their CRUSH roots for Recommend. used
// is each pool's logical bytes (before replication), rawRate the raw
// bytes a logical byte takes (absent: the pool's size, right for
// replicated pools; an erasure-coded pool's is (k+m)/k), and osdBytes
// each OSD's device size. A root's OSDs are the devices under the bucket
// its rule takes (a device class's shadow tree included); its capacity
// the sum of their sizes.
func FromMap(m *osdmap.Map, used map[int64]uint64, rawRate map[int64]float64, osdBytes map[int32]uint64) ([]Pool, map[int32]Root) {
	roots := map[int32]Root{}
	var pools []Pool
	for _, id := range m.PoolIDs() {
		p := m.Pools[id]
		root, ok := ruleRoot(m.Crush, p.CrushRule)
		if !ok {
			continue
		}
		if _, seen := roots[root]; !seen {
			var r Root
			for _, o := range devicesUnder(m.Crush, root) {
				r.OSDs++
				r.Capacity += osdBytes[o]
			}
			roots[root] = r
		}
		rate, ok := rawRate[id]
		if !ok || rate <= 0 {
			rate = float64(p.Size)
		}
		a := p.Autoscale
		mode := a.Mode
		if mode == "" {
			mode = "off"
		}
		pools = append(pools, Pool{ID: id, Name: p.Name, Root: root, Size: p.Size, RawRate: rate, PGNum: p.PGNum,
			RawUsed: uint64(float64(used[id]) * rate), TargetRatio: a.TargetRatio, TargetBytes: a.TargetBytes, Bias: a.Bias,
			PGNumMin: a.PGNumMin, PGNumMax: a.PGNumMax, Bulk: a.Bulk, Mode: mode})
	}
	return pools, roots
}

// ruleRoot is the bucket a rule's first take step takes.
func ruleRoot(c *crush.Map, rule int) (int32, bool) {
	r := c.Rule(rule)
	if r == nil {
		return 0, false
	}
	for _, st := range r.Steps {
		if st.Op == crush.OpTake {
			return st.Arg1, true
		}
	}
	return 0, false
}

// devicesUnder lists the devices in the subtree of bucket id.
func devicesUnder(c *crush.Map, id int32) []int32 {
	if id >= 0 {
		return []int32{id}
	}
	b := c.Bucket(id)
	if b == nil {
		return nil
	}
	var out []int32
	for _, it := range b.Items {
		out = append(out, devicesUnder(c, it)...)
	}
	return out
}

// Text writes rows as `ceph osd pool autoscale-status` does: NEW PG_NUM
// only where the advice differs from pg_num.
func Text(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tSIZE\tTARGET SIZE\tRATE\tRAW CAPACITY\tRATIO\tTARGET RATIO\tEFFECTIVE RATIO\tBIAS\tPG_NUM\tNEW PG_NUM\tAUTOSCALE\tBULK")
	for _, r := range rows {
		target, eff, newPG := "", "", ""
		if r.TargetBytes > 0 {
			target = strconv.FormatUint(r.TargetBytes, 10)
		}
		if r.TargetRatio > 0 {
			eff = fmt.Sprintf("%.4f", r.EffRatio)
		}
		if r.Final != r.PGNum {
			newPG = strconv.FormatUint(uint64(r.Final), 10)
		}
		ratio := ""
		if r.TargetRatio > 0 {
			ratio = fmt.Sprintf("%.4f", r.TargetRatio)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%d\t%.4f\t%s\t%s\t%.1f\t%d\t%s\t%s\t%t\n", r.Name, r.LogicalUsed, target, r.RawRate, r.Capacity,
			r.CapacityRatio, ratio, eff, r.Bias, r.PGNum, newPG, r.Mode, r.Bulk)
	}
	return tw.Flush()
}
