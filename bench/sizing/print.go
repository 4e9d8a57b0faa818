package sizing

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/shoal-project/shoal/bench/report"
)

// Print writes the configurations as a table, best first (at most top;
// 0: all), then the per-drive figures used and their sources.
func Print(w io.Writer, req Requirement, cfgs []Config, top int) {
	mix, _ := parseMix(req.Workload)
	byOps := ByOps(mix[0].workload)
	unit, per := "MB/s", "$/MB/s"
	if byOps {
		unit, per = "ops/s", "$/IOPS"
	}
	fmt.Fprintf(w, "Requirement: %s, %s", req.Workload, req.Protection)
	if req.UsableTB > 0 {
		fmt.Fprintf(w, ", %g TB usable", req.UsableTB)
	}
	if req.MBps > 0 {
		fmt.Fprintf(w, ", %g MB/s", req.MBps)
	}
	if req.IOPS > 0 {
		fmt.Fprintf(w, ", %g IOPS", req.IOPS)
	}
	fmt.Fprintf(w, ", failure domain %s, filled to %.0f%%\n\n", req.FailureDomain, req.MaxFill*100)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "#\tserver\tdrive\tservers\tset by\tper server (limit)\tusable TB\t%s\tcost\t%s\t$/usable TB\tW/TB\tserver share\tnotes\n", unit, per)
	if top <= 0 || top > len(cfgs) {
		top = len(cfgs)
	}
	for i, c := range cfgs[:top] {
		unitPrice := c.PerMBps
		if byOps {
			unitPrice = c.PerIOPS
		}
		var notes []string
		if !c.RuleHolds {
			notes = append(notes, "fault-domain rule broken")
		}
		if c.RAMShort {
			notes = append(notes, fmt.Sprintf("RAM below %g GB + %g GB per OSD", RAMBase, RAMPerOSD))
		}
		fmt.Fprintf(tw, "%d\t%s\t%dx %s\t%d\t%s\t%s %s (%s)\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.1f%%\t%s\n",
			i+1, c.Server.Name, c.Server.Bays, c.Drive.Name, c.Servers, c.Reason, num(c.PerServer), unit, c.Limit,
			num(c.UsableTB), num(c.Performance), money(c.Cost), money2(unitPrice), money(c.PerUsableTB), c.WattsPerTB, c.ServerShare*100, strings.Join(notes, "; "))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nPer-drive figures used:")
	seen := map[string]bool{}
	for _, c := range cfgs[:top] {
		k := c.Drive.Type + " " + c.PerDriveSource
		if seen[k] {
			continue
		}
		seen[k] = true
		fmt.Fprintf(w, "  %s: %s %s per drive — %s\n", c.Drive.Type, num(c.PerDrive), unit, c.PerDriveSource)
	}
}

func num(v float64) string {
	if v >= 100 {
		return report.GroupDigits(fmt.Sprintf("%.0f", v))
	}
	return fmt.Sprintf("%.1f", v)
}

func money(v float64) string { return "$" + report.GroupDigits(fmt.Sprintf("%.0f", v)) }

func money2(v float64) string {
	if v >= 100 {
		return money(v)
	}
	return fmt.Sprintf("$%.2f", v)
}
