package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/shoal-project/shoal/bench"
	"github.com/shoal-project/shoal/bench/sweep"
)

// series is one line of a plot.
type series struct {
	label  string
	xy     plotter.XYs
	dashed bool
	mark   []int // indexes of points to ring (high-water marks)
}

// chart is a plot to draw: x values on a log2 axis with a tick at each
// value that occurs, labelled by xLabel.
type chart struct {
	name, title, xName, yName string
	series                    []series
	xLabel                    func(float64) string
}

// save draws c as NAME.png and NAME.svg in dir and returns the base name.
func (c chart) save(dir string) (string, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.xName
	p.Y.Label.Text = c.yName
	p.Legend.Top, p.Legend.Left = true, true
	var xs []float64
	maxY := 0.0
	color := 0
	prev := ""
	for _, s := range c.series {
		base, _, _ := strings.Cut(s.label, " (")
		if base != prev && prev != "" {
			color++ // one color per curve; p50 and p99 of a curve share it
		}
		prev = base
		l, pts, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return "", fmt.Errorf("report: %s: %w", c.name, err)
		}
		l.Color, pts.Color, pts.Shape = plotutil.Color(color), plotutil.Color(color), plotutil.Shape(color)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l, pts)
		p.Legend.Add(s.label, l, pts)
		for _, i := range s.mark {
			ring, err := plotter.NewScatter(plotter.XYs{s.xy[i]})
			if err != nil {
				return "", err
			}
			ring.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(color), Radius: vg.Points(7), Shape: draw.RingGlyph{}}
			p.Add(ring)
		}
		for _, pt := range s.xy {
			maxY = max(maxY, pt.Y)
			if !slices.Contains(xs, pt.X) {
				xs = append(xs, pt.X)
			}
		}
	}
	slices.Sort(xs)
	if len(xs) > 0 && xs[0] > 0 {
		p.X.Scale = plot.LogScale{}
		var ticks []plot.Tick
		for _, x := range xs {
			ticks = append(ticks, plot.Tick{Value: x, Label: c.xLabel(x)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = xs[0]/1.2, xs[len(xs)-1]*1.2
	}
	// room above the lines for the legend, one line per series
	p.Y.Min, p.Y.Max = 0, maxY*(1.1+0.07*float64(len(c.series)))
	p.Add(plotter.NewGrid())
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(7*vg.Inch, 4.2*vg.Inch, filepath.Join(dir, c.name+ext)); err != nil {
			return "", fmt.Errorf("report: %s%s: %w", c.name, ext, err)
		}
	}
	return c.name, nil
}

func plainLabel(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func sizeLabel(x float64) string { return bench.FormatSize(int(x)) }

// benchCharts are a benchmark's plots: throughput against load (the
// hockey stick, high-water marks ringed), latency percentiles against
// load, CPU per GB (or per 1,000 ops) against load, and MB/s per OSD by
// operation size when the size is swept.
func benchCharts(name string, curves []Curve, pts []Point, hasOSDs bool) []chart {
	var out []chart
	// curves read in MB/s and in ops/s get charts of their own (one axis,
	// one unit); suffixed only when a benchmark has both
	var groups [][]Curve
	for _, byMB := range []bool{true, false} {
		var g []Curve
		for _, c := range curves {
			if c.ByMB == byMB {
				g = append(g, c)
			}
		}
		if len(g) > 0 {
			groups = append(groups, g)
		}
	}
	for _, g := range groups {
		suffix := ""
		if len(groups) > 1 {
			suffix = map[bool]string{true: "-mb", false: "-ops"}[g[0].ByMB]
		}
		out = append(out, curveCharts(name, suffix, g)...)
	}
	if sz := sizeChart(name, curves, pts, hasOSDs); sz != nil {
		out = append(out, *sz)
	}
	return out
}

// curveCharts draws curves of one unit: throughput, latency and CPU
// against load.
func curveCharts(name, suffix string, curves []Curve) []chart {
	x := curves[0].X
	byMB := curves[0].ByMB
	unit, cpuUnit := "ops/s", "daemons' CPU s per 1,000 ops"
	if byMB {
		unit, cpuUnit = "MB/s", "daemons' CPU s per GB"
	}
	thr := chart{name: name + "-throughput" + suffix, title: name + ": throughput against " + x, xName: x, yName: unit, xLabel: plainLabel}
	lat := chart{name: name + "-latency" + suffix, title: name + ": latency against " + x, xName: x, yName: "latency, ms", xLabel: plainLabel}
	cpu := chart{name: name + "-cpu" + suffix, title: name + ": CPU cost against " + x, xName: x, yName: cpuUnit, xLabel: plainLabel}
	for _, c := range curves {
		var t, p50, p99, mean, cp plotter.XYs
		for i, p := range c.Points {
			xv := XValue(p, c.X)
			t = append(t, plotter.XY{X: xv, Y: c.Y(i)})
			p50 = append(p50, plotter.XY{X: xv, Y: p.P50MS})
			p99 = append(p99, plotter.XY{X: xv, Y: p.P99MS})
			mean = append(mean, plotter.XY{X: xv, Y: p.MeanMS})
			v := p.CPUPer1000
			if byMB {
				v = p.CPUPerGB
			}
			cp = append(cp, plotter.XY{X: xv, Y: v})
		}
		thr.series = append(thr.series, series{label: c.Label, xy: t, mark: []int{c.HWM}})
		if c.Points[0].P99MS > 0 {
			lat.series = append(lat.series, series{label: c.Label + " (p50)", xy: p50}, series{label: c.Label + " (p99)", xy: p99, dashed: true})
		} else {
			lat.series = append(lat.series, series{label: c.Label + " (mean)", xy: mean})
		}
		cpu.series = append(cpu.series, series{label: c.Label, xy: cp})
	}
	return []chart{thr, lat, cpu}
}

// sizeChart plots MB/s per OSD (per cluster when the OSD count is
// unknown) against operation size, at each size's best load, one line
// per combination of the other swept parameters.
func sizeChart(name string, curves []Curve, pts []Point, hasOSDs bool) *chart {
	if len(pts) == 0 {
		return nil
	}
	_, sizeParam := SizeOf(pts[0].Point)
	if sizeParam == "" || !slices.Contains(pts[0].Point.Swept, sizeParam) {
		return nil
	}
	load := ""
	if len(curves) > 0 {
		load = curves[0].X
	}
	lines := map[string]map[float64]float64{}
	var order []string
	for _, p := range pts {
		var others []string
		for _, n := range p.Point.Swept {
			if n != sizeParam && n != load {
				others = append(others, n+"="+p.Point.Params[n])
			}
		}
		label := strings.Join(others, " ")
		if label == "" {
			label = name
		}
		if _, ok := lines[label]; !ok {
			lines[label] = map[float64]float64{}
			order = append(order, label)
		}
		size, _ := SizeOf(p.Point)
		v := p.MBPerSec
		if hasOSDs {
			v = p.PerOSD.MBPerSec
		}
		lines[label][float64(size)] = max(lines[label][float64(size)], v)
	}
	y := "MB/s per OSD"
	if !hasOSDs {
		y = "MB/s"
	}
	c := &chart{name: name + "-by-size", title: name + ": " + y + " by operation size (best load)", xName: sizeParam, yName: y, xLabel: sizeLabel}
	for _, l := range order {
		var xy plotter.XYs
		for _, s := range sortedFloatKeys(lines[l]) {
			xy = append(xy, plotter.XY{X: s, Y: lines[l][s]})
		}
		c.series = append(c.series, series{label: l, xy: xy})
	}
	return c
}

func sortedFloatKeys(m map[float64]float64) []float64 {
	var k []float64
	for x := range m {
		k = append(k, x)
	}
	slices.Sort(k)
	return k
}

// byBenchmark splits points by benchmark name, in the file's order.
func byBenchmark(a *sweep.Archive, pts []Point) ([]string, map[string][]Point) {
	m := map[string][]Point{}
	var names []string
	for _, b := range a.Spec.Benchmarks {
		names = append(names, b.Name)
	}
	for _, p := range pts {
		m[p.Point.Benchmark] = append(m[p.Point.Benchmark], p)
	}
	return names, m
}
