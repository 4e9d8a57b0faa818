package report

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/shoal-project/shoal/bench/sweep"
)

// Metric is a figure compare can judge.
type Metric struct {
	Name   string
	Higher bool // higher is better (throughput); else lower (latency, CPU)
	get    func(Point) float64
}

// Metrics are the figures compare knows, by name.
var Metrics = []Metric{
	{"mb_per_s", true, func(p Point) float64 { return p.MBPerSec }},
	{"ops_per_s", true, func(p Point) float64 { return p.OpsPerSec }},
	{"lat_mean_ms", false, func(p Point) float64 { return p.MeanMS }},
	{"lat_p99_ms", false, func(p Point) float64 { return p.P99MS }},
	{"cpu_s_per_gb", false, func(p Point) float64 { return p.CPUPerGB }},
	{"cpu_s_per_1000_ops", false, func(p Point) float64 { return p.CPUPer1000 }},
}

// Rule is an acceptance rule for one metric, as CBT's compare: B (the
// candidate) against A (the baseline).
type Rule struct {
	Metric Metric
	// Kind is "greater" (B at least as good as A: more throughput, less
	// latency or CPU; with Factor, at least Factor times as good) or
	// "near" (B no worse than A by more than Percent).
	Kind    string
	Percent float64
	Factor  float64
}

// DefaultRules: throughput within 10 % and p99 latency within 20 % of
// the baseline.
var DefaultRules = []string{"mb_per_s=near:10", "ops_per_s=near:10", "lat_p99_ms=near:20"}

// ParseRule reads METRIC=greater, METRIC=greater:FACTOR or
// METRIC=near:PERCENT.
func ParseRule(s string) (Rule, error) {
	name, spec, ok := strings.Cut(s, "=")
	var r Rule
	for _, m := range Metrics {
		if m.Name == name {
			r.Metric = m
		}
	}
	if !ok || r.Metric.Name == "" {
		var names []string
		for _, m := range Metrics {
			names = append(names, m.Name)
		}
		return r, fmt.Errorf("compare: rule %q: want METRIC=greater[:FACTOR] or METRIC=near:PERCENT, METRIC one of %s", s, strings.Join(names, ", "))
	}
	kind, arg, hasArg := strings.Cut(spec, ":")
	r.Kind = kind
	switch {
	case kind == "greater" && !hasArg:
		r.Factor = 1
	case kind == "greater":
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f <= 0 {
			return r, fmt.Errorf("compare: rule %q: factor %q", s, arg)
		}
		r.Factor = f
	case kind == "near" && hasArg:
		p, err := strconv.ParseFloat(arg, 64)
		if err != nil || p < 0 {
			return r, fmt.Errorf("compare: rule %q: percent %q", s, arg)
		}
		r.Percent = p
	default:
		return r, fmt.Errorf("compare: rule %q: want greater, greater:FACTOR or near:PERCENT", s)
	}
	return r, nil
}

// Check says whether b passes the rule against a. ok is false for a
// regression; judged is false when either figure is missing (0), as a
// latency an external tool does not report.
func (r Rule) Check(a, b float64) (ok, judged bool) {
	if a <= 0 || b <= 0 {
		return true, false
	}
	ratio := b / a // > 1 is better for throughput
	if !r.Metric.Higher {
		ratio = a / b
	}
	if r.Kind == "greater" {
		return ratio >= r.Factor, true
	}
	return ratio >= 1-r.Percent/100, true
}

// String is the rule for compare's table ("near 10%", "≥ 2× better").
func (r Rule) String() string {
	switch {
	case r.Kind == "near":
		return fmt.Sprintf("near %g%%", r.Percent)
	case r.Factor != 1:
		return fmt.Sprintf("≥ %g× better", r.Factor)
	}
	return "greater"
}

// Match pairs the points of two archives: first those of benchmarks of
// the same name with the same parameters (placement aside), then, among
// the rest, those whose parameters only one point on each side has (one
// file's benchmark renamed in the other). It maps indexes of a to
// indexes of b; a point with no partner has none.
func Match(a, b []Point) map[int]int {
	out := map[int]int{}
	taken := map[int]bool{}
	byName := map[string]int{}
	for j, y := range b {
		byName[y.Point.Benchmark+"\x00"+y.Point.Key()] = j
	}
	for i, x := range a {
		if j, ok := byName[x.Point.Benchmark+"\x00"+x.Point.Key()]; ok && !taken[j] {
			out[i], taken[j] = j, true
		}
	}
	count := func(ps []Point, skip func(int) bool) map[string][]int {
		m := map[string][]int{}
		for i, p := range ps {
			if !skip(i) {
				m[p.Point.Key()] = append(m[p.Point.Key()], i)
			}
		}
		return m
	}
	restA := count(a, func(i int) bool { _, ok := out[i]; return ok })
	restB := count(b, func(j int) bool { return taken[j] })
	for k, is := range restA {
		if js := restB[k]; len(is) == 1 && len(js) == 1 {
			out[is[0]] = js[0]
		}
	}
	return out
}

// ErrRegression is returned by Compare when a rule failed.
var ErrRegression = errors.New("compare: regression")

// Compare matches the points of archives a and b (Match: by benchmark
// and parameters, placement ones aside — a pool, bucket or image may
// differ), prints a
// table of every rule's metric for each match to w, and returns
// ErrRegression (wrapped, with the count) if any rule failed.
func Compare(w io.Writer, a, b *sweep.Archive, rules []Rule) error {
	pa, pb := Aggregate(a), Aggregate(b)
	match := Match(pa, pb)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n\n", a.Dir, a.Target.Kind, b.Dir, b.Target.Kind)
	fmt.Fprintln(tw, "point\tmetric\tA\tB\tB/A\trule\tverdict\t")
	failed, matched := 0, 0
	seen := map[int]bool{}
	for i, x := range pa {
		j, ok := match[i]
		if !ok {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\tonly in A\t\n", x.Point.ID)
			continue
		}
		y := pb[j]
		seen[j] = true
		matched++
		for _, r := range rules {
			va, vb := r.Metric.get(x), r.Metric.get(y)
			ok, judged := r.Check(va, vb)
			verdict := "ok"
			switch {
			case !judged:
				verdict = "n/a"
			case !ok:
				verdict = "REGRESSION"
				failed++
			}
			ratio := "–"
			if va > 0 && vb > 0 {
				ratio = fmt.Sprintf("%.2f", vb/va)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x.Point.ID, r.Metric.Name, fmtNum(va), fmtNum(vb), ratio, r, verdict)
		}
	}
	for j, y := range pb {
		if !seen[j] {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\tonly in B\t\n", y.Point.ID)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d points matched, %d rule checks failed\n", matched, failed)
	if matched == 0 {
		return fmt.Errorf("compare: no point of %s matches one of %s (same benchmark types and parameters?)", a.Dir, b.Dir)
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d rule checks failed", ErrRegression, failed)
	}
	return nil
}
