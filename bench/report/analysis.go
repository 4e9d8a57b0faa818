// Package report analyses sweep archives (bench/sweep) the way the Ceph
// sizing guides read their runs: per point, the median over iterations;
// per curve (a benchmark's points that differ only in the load: clients,
// threads or queue depth), the high-water mark where adding load stops
// adding throughput; every figure also per OSD, per device and per host.
// It writes a Markdown and an HTML report with plots (gonum/plot, PNG and
// SVG), and compares two archives under acceptance rules, as CBT's
// compare does.
package report

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/bench"
	"github.com/shoal-project/shoal/bench/sweep"
)

// Point is a point's figures: medians over its iterations. MBPerSec is
// in MB/s (10^6 bytes), OpsPerSec in operations per second, latencies in
// milliseconds, CPUPerGB in the daemons' CPU seconds per GB moved and
// CPUPer1000 per 1,000 operations (0 where the target gave no figure).
type Point struct {
	Point      sweep.Point
	Iterations int
	MBPerSec   float64
	OpsPerSec  float64
	MeanMS     float64
	P50MS      float64
	P99MS      float64
	CPUPerGB   float64
	CPUPer1000 float64
	// ShardIOPerOp is the object writes and reads the OSDs' stores did
	// per client operation (Shoal targets: the shard_w and shard_r
	// counters; 0 where unknown): a 4 MiB write to a 3× pool is 3, a
	// 32 MiB S3 PUT in 4 MiB chunks to EC 4+2 is 8 × 6 = 48.
	ShardIOPerOp float64
	Errors       uint64 // over all iterations
	// Short is set when a run's load ended before the file's duration
	// (a seq read reaching the end of its set).
	Short bool
	// Per OSD, device and host: MBPerSec and OpsPerSec divided by the
	// target's counts (0 where a count is unknown).
	PerOSD, PerDevice, PerHost Norm
}

// Norm is throughput divided by a count.
type Norm struct{ MBPerSec, OpsPerSec float64 }

func norm(mb, ops float64, n int) Norm {
	if n <= 0 {
		return Norm{}
	}
	return Norm{mb / float64(n), ops / float64(n)}
}

// Aggregate reduces an archive's results to one Point per point id (the
// median of each figure over iterations), in the file's order.
func Aggregate(a *sweep.Archive) []Point {
	byID := map[string][]sweep.Result{}
	var ids []string
	for _, r := range a.Results {
		if _, ok := byID[r.Point.ID]; !ok {
			ids = append(ids, r.Point.ID)
		}
		byID[r.Point.ID] = append(byID[r.Point.ID], r)
	}
	c := a.Target.Counts
	var out []Point
	for _, id := range ids {
		rs := byID[id]
		med := func(f func(sweep.Result) float64) float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			return Median(v)
		}
		p := Point{Point: rs[0].Point, Iterations: len(rs),
			MBPerSec:   med(func(r sweep.Result) float64 { return r.MBPerSec }),
			OpsPerSec:  med(func(r sweep.Result) float64 { return r.OpsPerSec }),
			MeanMS:     med(func(r sweep.Result) float64 { return r.MeanMS }),
			P50MS:      med(func(r sweep.Result) float64 { return r.P50MS }),
			P99MS:      med(func(r sweep.Result) float64 { return r.P99MS }),
			CPUPerGB:   med(func(r sweep.Result) float64 { return r.CPUPerGB }),
			CPUPer1000: med(func(r sweep.Result) float64 { return r.CPUPer1000 }),
			ShardIOPerOp: med(func(r sweep.Result) float64 {
				if r.Ops == 0 || r.Counters == nil {
					return 0
				}
				return float64(r.Counters["shard_w"]+r.Counters["shard_r"]) / float64(r.Ops)
			}),
		}
		for _, r := range rs {
			p.Errors += r.Errors
			p.Short = p.Short || r.Short
		}
		p.PerOSD = norm(p.MBPerSec, p.OpsPerSec, c.OSDs)
		p.PerDevice = norm(p.MBPerSec, p.OpsPerSec, c.Devices)
		p.PerHost = norm(p.MBPerSec, p.OpsPerSec, c.Hosts)
		out = append(out, p)
	}
	return out
}

// Median is the middle value (the mean of the two middle ones for an
// even count); 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// LoadParams are the parameters that set how much load a point offers,
// in the order a curve's x axis is chosen from them.
var LoadParams = []string{"concurrency", "iodepth", "procs"}

// SizeParams are the parameters that set a point's operation size.
var SizeParams = []string{"op_size", "io_size", "size"}

// Curve is a benchmark's points that differ only in their load
// parameter, in increasing load.
type Curve struct {
	Benchmark string
	X         string // the load parameter
	Label     string // the other swept parameters' values ("mode=write"), or the benchmark's name
	Points    []Point
	// ByMB says the curve is read in MB/s (operations of 1 MiB or more),
	// otherwise in operations per second.
	ByMB bool
	// HWM is the index in Points of the high-water mark; Reached is
	// false when throughput still rose by 5 % or more at the last point.
	HWM     int
	Reached bool
}

// HWMGain is the least relative gain that counts as still rising.
const HWMGain = 0.05

// HighWater returns the index of the high-water mark of a throughput
// series in increasing load: the point after which more load adds less
// than HWMGain — the first point that no point of higher load beats by
// HWMGain or more. (The guides' "last point whose successor adds less
// than 5 %", judged against every later point, so that neither a dip at
// low load nor a falling tail is taken for the top.) When the last
// point is the first such, the curve is still rising and reached is
// false.
func HighWater(y []float64) (i int, reached bool) {
	for i := range y {
		best := 0.0
		for _, v := range y[i+1:] {
			best = max(best, v)
		}
		if i+1 < len(y) && best < y[i]*(1+HWMGain) {
			return i, true
		}
	}
	return max(len(y)-1, 0), false
}

// Y is the curve's throughput figure at point i (MB/s or ops/s).
func (c *Curve) Y(i int) float64 {
	if c.ByMB {
		return c.Points[i].MBPerSec
	}
	return c.Points[i].OpsPerSec
}

// Unit is the name of Y's unit.
func (c *Curve) Unit() string {
	if c.ByMB {
		return "MB/s"
	}
	return "ops/s"
}

// XValue is point p's load as a number.
func XValue(p Point, x string) float64 {
	v, _ := strconv.ParseFloat(p.Point.Params[x], 64)
	return v
}

// SizeOf is a point's operation size in bytes (0 if it has none or a
// range), and the parameter that holds it.
func SizeOf(p sweep.Point) (int, string) {
	for _, n := range SizeParams {
		if v, ok := p.Params[n]; ok {
			s, err := bench.ParseSize(v)
			if err != nil {
				return 0, n
			}
			return s, n
		}
	}
	return 0, ""
}

// Curves groups a benchmark's points into curves along the first
// swept load parameter. A benchmark that sweeps none has no curve.
func Curves(pts []Point) []Curve {
	var out []Curve
	idx := map[string]int{}
	for _, p := range pts {
		x := ""
		for _, l := range LoadParams {
			if slices.Contains(p.Point.Swept, l) {
				x = l
				break
			}
		}
		if x == "" {
			continue
		}
		var others []string
		for _, n := range p.Point.Swept {
			if n != x {
				others = append(others, n+"="+p.Point.Params[n])
			}
		}
		label := strings.Join(others, " ")
		if label == "" {
			label = p.Point.Benchmark
		}
		key := p.Point.Benchmark + "\x00" + label
		i, ok := idx[key]
		if !ok {
			size, _ := SizeOf(p.Point)
			i = len(out)
			idx[key] = i
			out = append(out, Curve{Benchmark: p.Point.Benchmark, X: x, Label: label, ByMB: size >= 1<<20})
		}
		out[i].Points = append(out[i].Points, p)
	}
	for i := range out {
		c := &out[i]
		sort.SliceStable(c.Points, func(a, b int) bool { return XValue(c.Points[a], c.X) < XValue(c.Points[b], c.X) })
		y := make([]float64, len(c.Points))
		for j := range y {
			y[j] = c.Y(j)
		}
		c.HWM, c.Reached = HighWater(y)
	}
	return out
}

// Describe says where a curve's high-water mark is, in a sentence.
func (c *Curve) Describe() string {
	p := c.Points[c.HWM]
	at := fmt.Sprintf("%s=%s", c.X, p.Point.Params[c.X])
	fig := fmt.Sprintf("%s %s", fmtNum(c.Y(c.HWM)), c.Unit())
	if p.PerOSD != (Norm{}) {
		po := p.PerOSD.OpsPerSec
		if c.ByMB {
			po = p.PerOSD.MBPerSec
		}
		fig += fmt.Sprintf(" (%s per OSD)", fmtNum(po))
	}
	lat := fmt.Sprintf("latency mean %.2f ms", p.MeanMS)
	if p.P99MS > 0 {
		lat += fmt.Sprintf(", p99 %.2f ms", p.P99MS)
	}
	if !c.Reached {
		return fmt.Sprintf("%s: still rising at the last point, %s: %s, %s", c.Label, at, fig, lat)
	}
	return fmt.Sprintf("%s: high-water mark at %s: %s, %s", c.Label, at, fig, lat)
}

// fmtNum prints a figure with 3 or 4 significant digits and thousands
// separators.
func fmtNum(v float64) string {
	switch {
	case v >= 1000:
		return GroupDigits(strconv.FormatFloat(v, 'f', 0, 64))
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// GroupDigits puts thousands separators into a whole number's digits
// ("1234567" → "1,234,567").
func GroupDigits(s string) string {
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
