package main

import (
	"github.com/spf13/cobra"

	"github.com/shoal-project/shoal/bench/sizing"
	"github.com/shoal-project/shoal/bench/sweep"
)

// sizingCmd is `shoal sizing`.
func sizingCmd() *cobra.Command {
	var catalog, reqFile, calFile, measured, measuredDrive, format string
	var req sizing.Requirement
	var top int
	cmd := &cobra.Command{
		Use:   "sizing --catalog FILE (--requirement FILE | --usable-tb N --workload W ...)",
		Short: "Rank server and drive configurations for a requirement by cost, $/MB/s or $/IOPS, $/usable TB and W/TB",
		Long: `Size a cluster as the Ceph sizing guides do (docs/benchmarking.md): for every
server model of the catalog filled with each drive it takes, the servers needed
for the usable capacity, for the throughput or IOPS (per-drive figures from the
built-in calibration of published Ceph results, a --calibration table, or a
sweep archive with --measured), for the protection's failure domain and for
the guides' fault-domain rule (one server at most 10 % of a performance
cluster, 15 % of a capacity one); ranked by the cluster's cost.
Workloads: large-write, large-read, small-write, small-read, block-randwrite,
block-randread, or a mix such as large-read:70,large-write:30.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var cat sizing.Catalog
			if err := sizing.LoadYAML(catalog, &cat); err != nil {
				return err
			}
			if reqFile != "" {
				if err := sizing.LoadYAML(reqFile, &req); err != nil {
					return err
				}
			}
			var o sizing.Options
			if calFile != "" {
				o.Calibration = &sizing.Calibration{}
				if err := sizing.LoadYAML(calFile, o.Calibration); err != nil {
					return err
				}
				if err := o.Calibration.Check(); err != nil {
					return err
				}
			}
			if measured != "" {
				a, err := sweep.ReadArchive(measured)
				if err != nil {
					return err
				}
				if o.Measured, err = sizing.FromArchive(a, req.Workload, measuredDrive); err != nil {
					return err
				}
			}
			cfgs, err := sizing.Size(&cat, req, o)
			if err != nil {
				return err
			}
			if format == "json" {
				return printJSON(c.OutOrStdout(), cfgs)
			}
			if req.FailureDomain == "" {
				req.FailureDomain = "host"
			}
			if req.MaxFill == 0 {
				req.MaxFill = sizing.DefaultMaxFill
			}
			if req.Protection == "" {
				req.Protection = "3x"
			}
			sizing.Print(c.OutOrStdout(), req, cfgs, top)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&catalog, "catalog", "", "hardware catalog (YAML: servers, drives)")
	f.StringVar(&reqFile, "requirement", "", "requirement (YAML); the flags below instead")
	f.Float64Var(&req.UsableTB, "usable-tb", 0, "usable capacity, TB")
	f.StringVar(&req.Workload, "workload", "large-write", "workload or mix")
	f.Float64Var(&req.MBps, "mb-per-s", 0, "client throughput, MB/s (large-* workloads)")
	f.Float64Var(&req.IOPS, "iops", 0, "client operations per second (the other workloads)")
	f.StringVar(&req.Protection, "protection", "3x", "3x or ec:K+M")
	f.StringVar(&req.FailureDomain, "failure-domain", "host", "host or osd")
	f.Float64Var(&req.MaxFill, "max-fill", sizing.DefaultMaxFill, "share of raw capacity to plan for")
	f.BoolVar(&req.IgnoreRule, "ignore-fault-domain-rule", false, "do not raise the count to keep one server within 10 % (performance) or 15 % (capacity) of the cluster; say whether each configuration meets it")
	f.StringVar(&calFile, "calibration", "", "per-drive figures (YAML entries) instead of the built-in ones")
	f.StringVar(&measured, "measured", "", "a sweep archive: its best point of the workload, per device, as the per-drive figure")
	f.StringVar(&measuredDrive, "measured-drive", "nvme", "the drive type the --measured archive's devices are")
	f.IntVar(&top, "top", 10, "configurations to show (0: all)")
	f.StringVar(&format, "format", "table", "table or json")
	cmd.MarkFlagRequired("catalog")
	return cmd
}
