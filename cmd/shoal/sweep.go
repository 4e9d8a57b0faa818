package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/shoal-project/shoal/bench/report"
	"github.com/shoal-project/shoal/bench/sweep"
)

// benchSweepCmd is `shoal bench sweep FILE`.
func benchSweepCmd() *cobra.Command {
	var archive string
	var list bool
	var ov sweep.Overrides
	cmd := &cobra.Command{
		Use:   "sweep FILE.yaml",
		Short: "Run a CBT-shaped sweep: every combination of the file's list-valued parameters, archived per point",
		Long: `Run the benchmarks of a sweep file (docs/benchmarking.md; examples in
bench/sweeps/) against the target it names: a Shoal cluster, a Ceph cluster
through rados and rbd, or any S3 endpoint. Every combination of the
list-valued parameters is a point; each point runs for ramp + duration, once
per iteration, and is archived under ARCHIVE/results/<iteration>/<point-id>/
(params.json, samples.csv, result.json, output.txt). The target is reached
and every point checked before the first runs. Ctrl-C keeps the finished
points: the same command resumes. --list prints the points and runs nothing.
--target-kind, --target-conf and --set run one file against another target
(the reference Ceph cluster: --target-kind ceph --target-conf
/var/tmp/ceph-reference/ceph.conf --set pool=rbench).

Parameters (name, default, meaning):
` + sweep.ParamHelp(),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			s, err := sweep.Load(a[0])
			if err != nil {
				return err
			}
			if err := s.Apply(ov); err != nil {
				return err
			}
			out := c.OutOrStdout()
			if list {
				for _, p := range s.Points() {
					fmt.Fprintln(out, p.ID)
				}
				return nil
			}
			if archive == "" {
				archive = "sweep-" + strings.TrimSuffix(filepath.Base(a[0]), filepath.Ext(a[0]))
			}
			ctx, cancel := cmdContext()
			defer cancel()
			live := out == os.Stdout && term.IsTerminal(int(os.Stdout.Fd()))
			if err := sweep.Run(ctx, s, sweep.Options{Archive: archive, Out: out, Live: live}); err != nil {
				return err
			}
			fmt.Fprintf(out, "archive: %s (shoal bench report %s)\n", archive, archive)
			return nil
		},
	}
	cmd.Flags().StringVar(&archive, "archive", "", "results directory (default sweep-<file name> here; an existing one of the same file resumes)")
	cmd.Flags().BoolVar(&list, "list", false, "print the points the file expands to, run nothing")
	cmd.Flags().StringVar(&ov.Kind, "target-kind", "", "run against this kind of target instead of the file's (shoal, ceph, s3)")
	cmd.Flags().StringVar(&ov.Conf, "target-conf", "", "the target's conf instead of the file's (shoal.conf or ceph.conf)")
	cmd.Flags().StringArrayVar(&ov.Set, "set", nil, "NAME=VALUE: set a parameter in every benchmark that has it (--set pool=rbench); repeat")
	return cmd
}

// benchSweepClientCmd is `shoal bench sweep-client`, a rados point's
// client process, started by a sweep (hidden: its job comes on standard
// input).
func benchSweepClientCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "sweep-client",
		Short:  "One client process of a sweep's rados point (started by shoal bench sweep; reads its job on standard input)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// a sweep gone away fails a write (EPIPE) instead of killing
			// the process before it removes what it wrote
			signal.Ignore(syscall.SIGPIPE)
			ctx, cancel := cmdContext()
			defer cancel()
			return sweep.RunClient(ctx, os.Stdin, os.Stdout, c.ErrOrStderr())
		},
	}
}

// benchReportCmd is `shoal bench report ARCHIVE`.
func benchReportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report ARCHIVE",
		Short: "Write a sweep archive's report: Markdown and HTML with plots (PNG, SVG), high-water marks, per-OSD figures",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			ar, err := sweep.ReadArchive(a[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(a[0], "report")
			}
			files, err := report.Write(ar, out)
			if err != nil {
				return err
			}
			for _, f := range files[:2] {
				fmt.Fprintln(c.OutOrStdout(), f)
			}
			fmt.Fprintf(c.OutOrStdout(), "%d plots\n", (len(files)-2)/2)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for the report (default ARCHIVE/report)")
	return cmd
}

// benchCompareCmd is `shoal bench compare A B`.
func benchCompareCmd() *cobra.Command {
	var rules []string
	cmd := &cobra.Command{
		Use:   "compare BASELINE CANDIDATE",
		Short: "Compare two sweep archives point by point under acceptance rules; exit 1 on a regression",
		Long: `Match the points of two sweep archives by their parameters (pools, buckets
and images may differ, so a sweep against Ceph matches the same sweep against
Shoal) and judge the candidate against the baseline with each rule:
METRIC=greater (at least as good), METRIC=greater:F (at least F times as good)
or METRIC=near:N (no more than N % worse). Metrics: mb_per_s, ops_per_s,
lat_mean_ms, lat_p99_ms, cpu_s_per_gb, cpu_s_per_1000_ops (throughput is
better higher, the others lower).`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, a []string) error {
			var rs []report.Rule
			for _, r := range rules {
				rule, err := report.ParseRule(r)
				if err != nil {
					return err
				}
				rs = append(rs, rule)
			}
			x, err := sweep.ReadArchive(a[0])
			if err != nil {
				return err
			}
			y, err := sweep.ReadArchive(a[1])
			if err != nil {
				return err
			}
			return report.Compare(c.OutOrStdout(), x, y, rs)
		},
	}
	cmd.Flags().StringArrayVar(&rules, "rule", report.DefaultRules, "acceptance rule METRIC=greater[:FACTOR]|near:PERCENT (repeat)")
	return cmd
}
