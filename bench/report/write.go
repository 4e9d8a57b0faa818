package report

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/bench/sweep"
)

// Write writes the archive's report into dir: report.md and report.html,
// beside the plots they show (PNG and SVG). It returns the report files.
func Write(a *sweep.Archive, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	pts := Aggregate(a)
	names, byBench := byBenchmark(a, pts)
	c := a.Target.Counts
	var md, ht bytes.Buffer
	title := "Sweep report: " + filepath.Base(filepath.Clean(a.Dir))
	fmt.Fprintf(&md, "# %s\n\n", title)
	fmt.Fprintf(&ht, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n<style>%s</style></head><body>\n<h1>%s</h1>\n", esc(title), css, esc(title))
	intro := fmt.Sprintf("Target: %s (%d OSDs, %d devices, %d hosts) from host %s, started %s. %d iterations, %s measured per point after a %s ramp. Figures are medians over iterations; MB = 10^6 bytes; CPU is the daemons' user+system seconds (%s).",
		a.Target.Kind, c.OSDs, c.Devices, c.Hosts, a.Target.Host, a.Target.Started.Format(time.RFC3339), a.Spec.Iterations, a.Spec.Duration, a.Spec.Ramp, strings.Join(a.Target.Daemons, ", "))
	fmt.Fprintf(&md, "%s\n\n", intro)
	fmt.Fprintf(&ht, "<p>%s</p>\n", esc(intro))
	files := []string{filepath.Join(dir, "report.md"), filepath.Join(dir, "report.html")}
	for _, name := range names {
		bp := byBench[name]
		if len(bp) == 0 {
			continue
		}
		fmt.Fprintf(&md, "## %s (%s)\n\n", name, bp[0].Point.Type)
		fmt.Fprintf(&ht, "<h2>%s (%s)</h2>\n", esc(name), esc(bp[0].Point.Type))
		fixed := fixedParams(bp[0].Point)
		fmt.Fprintf(&md, "Fixed: %s.\n\n", fixed)
		fmt.Fprintf(&ht, "<p>Fixed: %s.</p>\n", esc(fixed))
		table(&md, &ht, bp)
		curves := Curves(bp)
		if len(curves) > 0 {
			fmt.Fprintf(&md, "\nHigh-water marks (the point after which more load adds less than %.0f %%):\n\n", HWMGain*100)
			fmt.Fprintf(&ht, "<p>High-water marks (the point after which more load adds less than %.0f %%):</p>\n<ul>\n", HWMGain*100)
			for i := range curves {
				fmt.Fprintf(&md, "- %s\n", curves[i].Describe())
				fmt.Fprintf(&ht, "<li>%s</li>\n", esc(curves[i].Describe()))
			}
			fmt.Fprintln(&ht, "</ul>")
		}
		md.WriteString("\n")
		for _, ch := range benchCharts(name, curves, bp, c.OSDs > 0) {
			base, err := ch.save(dir)
			if err != nil {
				return nil, err
			}
			files = append(files, filepath.Join(dir, base+".png"), filepath.Join(dir, base+".svg"))
			fmt.Fprintf(&md, "![%s](%s.png)\n\n", ch.title, base)
			fmt.Fprintf(&ht, "<figure><img src=\"%s.svg\" alt=\"%s\"><figcaption>%s</figcaption></figure>\n", esc(base), esc(ch.title), esc(ch.title))
		}
	}
	fmt.Fprintln(&ht, "</body></html>")
	if err := os.WriteFile(files[0], md.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(files[1], ht.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return files, nil
}

const css = `body{font-family:sans-serif;max-width:70em;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}figure{margin:1em 0}img{max-width:100%}`

func esc(s string) string { return html.EscapeString(s) }

// fixedParams lists the parameters that do not vary.
func fixedParams(p sweep.Point) string {
	var s []string
	for _, d := range sweep.Params[p.Type] {
		v := p.Params[d.Name]
		if v == "" || slices.Contains(p.Swept, d.Name) || d.Name == "mix" && p.Params["op"] != "mixed" {
			continue
		}
		s = append(s, d.Name+" "+v)
	}
	return strings.Join(s, ", ")
}

// table writes the points' figures as a Markdown and an HTML table.
func table(md, ht *bytes.Buffer, pts []Point) {
	head := []string{"point", "runs", "MB/s", "ops/s", "MB/s per OSD", "ops/s per OSD", "MB/s per device", "MB/s per host", "mean ms", "p50 ms", "p99 ms", "CPU s/GB", "CPU s/1k ops", "shard I/Os per op", "errors"}
	md.WriteString("| " + strings.Join(head, " | ") + " |\n| --- |" + strings.Repeat(" ---: |", len(head)-1) + "\n")
	ht.WriteString("<table><tr>")
	for _, h := range head {
		fmt.Fprintf(ht, "<th>%s</th>", esc(h))
	}
	ht.WriteString("</tr>\n")
	for _, p := range pts {
		opt := func(v float64) string {
			if v == 0 {
				return "–"
			}
			return fmtNum(v)
		}
		label := p.Point.Label()
		if p.Short {
			label += " (short)"
		}
		row := []string{label, fmt.Sprint(p.Iterations), fmtNum(p.MBPerSec), fmtNum(p.OpsPerSec),
			opt(p.PerOSD.MBPerSec), opt(p.PerOSD.OpsPerSec), opt(p.PerDevice.MBPerSec), opt(p.PerHost.MBPerSec),
			opt(p.MeanMS), opt(p.P50MS), opt(p.P99MS), opt(p.CPUPerGB), opt(p.CPUPer1000), opt(p.ShardIOPerOp), fmt.Sprint(p.Errors)}
		md.WriteString("| " + strings.Join(row, " | ") + " |\n")
		ht.WriteString("<tr>")
		for _, c := range row {
			fmt.Fprintf(ht, "<td>%s</td>", esc(c))
		}
		ht.WriteString("</tr>\n")
	}
	ht.WriteString("</table>\n")
}
