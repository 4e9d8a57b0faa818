package sizing

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/bench/report"
	"github.com/shoal-project/shoal/bench/sweep"
)

// Entry is a per-drive figure: what one drive (one OSD) of a type
// delivers to clients on a workload, in MB/s (10^6 bytes) or operations
// per second, with the CPU cores an OSD of that type wants.
type Entry struct {
	DriveType string `yaml:"drive_type"` // hdd, ssd, nvme
	Workload  string `yaml:"workload"`
	// Protection is "replicated", "ec" or "any": the class of scheme the
	// figure was measured with.
	Protection  string  `yaml:"protection"`
	PerDrive    float64 `yaml:"per_drive"`
	CoresPerOSD float64 `yaml:"cores_per_osd"`
	Source      string  `yaml:"source"`
}

// Calibration is a table of per-drive figures.
type Calibration struct {
	Entries []Entry `yaml:"entries"`
}

// Sources of the built-in calibration, cited by its entries.
const (
	srcRHBlog   = "Red Hat blog, \"Achieving maximum performance from a fixed size Ceph object storage cluster\" (2019): 7 nodes, 112 HDD OSDs, 14 RGWs, about 6.3 GB/s PUT and 6.5 GB/s GET of large objects (divided by 112 here)"
	srcClyso3x  = "ceph.io blog, \"Ceph: A Journey to 1 TiB/s\" (Clyso, 2024), summary table, 320 NVMe OSDs, 3x, RBD via fio: 4MB read 635 GiB/s, write 133 GiB/s, 4K random read 16.6M IOPS, write 2.4M IOPS (divided by 320 here)"
	srcClysoEC  = "ceph.io blog, \"Ceph: A Journey to 1 TiB/s\" (Clyso, 2024), 630 NVMe OSDs, EC 6+2, RBD via fio: 4K random read 3.4M IOPS, write 936K IOPS (divided by 630 here)"
	srcRGWNVMe  = "ceph.io blog, \"Benchmarking the Ceph Object Gateway, Part 2\" (2025): 12 nodes x 24 NVMe (288 OSDs), EC 2+2, 32 MiB GET 111 GiB/s, PUT 65.8 GiB/s (network-limited), 64 KiB GET 391K, PUT 86.6K ops/s (divided by 288 here)"
	srcHDDCores = "IBM Storage Ceph 7 documentation, \"Minimum hardware considerations\": 1 CPU core per OSD container"
	srcNVMeCore = "Ceph documentation, \"Hardware Recommendations\" (start/hardware-recommendations): NVMe OSDs use 5-6 cores on real clusters"
)

// Builtin is the calibration shipped with Shoal: per-drive figures
// derived from published Ceph results (each entry cites its source and
// how it was divided). They are Ceph's, on those clusters' hardware:
// use them to compare configurations, and a sweep on the hardware itself
// (--measured) to size one.
var Builtin = Calibration{Entries: []Entry{
	{"hdd", "large-write", "any", 56, 1, srcRHBlog + "; " + srcHDDCores},
	{"hdd", "large-read", "any", 58, 1, srcRHBlog + "; " + srcHDDCores},
	{"nvme", "large-read", "replicated", 2130, 6, srcClyso3x + "; " + srcNVMeCore},
	{"nvme", "large-write", "replicated", 446, 6, srcClyso3x + "; " + srcNVMeCore},
	{"nvme", "block-randread", "replicated", 51875, 6, srcClyso3x + "; " + srcNVMeCore},
	{"nvme", "block-randwrite", "replicated", 7500, 6, srcClyso3x + "; " + srcNVMeCore},
	{"nvme", "block-randread", "ec", 5397, 6, srcClysoEC + "; " + srcNVMeCore},
	{"nvme", "block-randwrite", "ec", 1486, 6, srcClysoEC + "; " + srcNVMeCore},
	{"nvme", "large-read", "ec", 414, 6, srcRGWNVMe + "; " + srcNVMeCore},
	{"nvme", "large-write", "ec", 245, 6, srcRGWNVMe + "; " + srcNVMeCore},
	{"nvme", "small-read", "ec", 1358, 6, srcRGWNVMe + "; " + srcNVMeCore},
	{"nvme", "small-write", "ec", 301, 6, srcRGWNVMe + "; " + srcNVMeCore},
}}

// class is a scheme's protection class.
func class(s Scheme) string {
	if s.Replicas > 0 {
		return "replicated"
	}
	return "ec"
}

// lookup finds the figure for a drive type and workload under a scheme:
// one of its class, else one measured with any protection.
func (c *Calibration) lookup(driveType, workload string, s Scheme) (Entry, bool) {
	var anyE *Entry
	for i, e := range c.Entries {
		if e.DriveType != driveType || e.Workload != workload {
			continue
		}
		if e.Protection == class(s) {
			return e, true
		}
		if e.Protection == "any" {
			anyE = &c.Entries[i]
		}
	}
	if anyE != nil {
		return *anyE, true
	}
	return Entry{}, false
}

// perDrive is the measured figure if it applies, else the calibration's.
func (o Options) perDrive(driveType, workload string, s Scheme) (Entry, bool) {
	if m := o.Measured; m != nil && m.DriveType == driveType && m.Workload == workload {
		if m.CoresPerOSD == 0 {
			if e, ok := o.cal().lookup(driveType, workload, s); ok {
				m.CoresPerOSD = e.CoresPerOSD
			}
		}
		return *m, true
	}
	return o.cal().lookup(driveType, workload, s)
}

// perDriveMix is a mix's per-drive figure: the weighted harmonic mean
// of its workloads' figures (the time a drive spends per unit of work
// adds up), the most cores any of them wants.
func (o Options) perDriveMix(driveType string, mix []share, s Scheme) (Entry, bool) {
	if len(mix) == 1 {
		return o.perDrive(driveType, mix[0].workload, s)
	}
	out := Entry{DriveType: driveType, Protection: class(s)}
	var inv float64
	var src []string
	for _, m := range mix {
		e, ok := o.perDrive(driveType, m.workload, s)
		if !ok {
			return Entry{}, false
		}
		inv += m.weight / e.PerDrive
		out.CoresPerOSD = max(out.CoresPerOSD, e.CoresPerOSD)
		src = append(src, fmt.Sprintf("%s %.0f%%: %s", m.workload, m.weight*100, e.Source))
	}
	out.PerDrive = 1 / inv
	out.Source = strings.Join(src, " | ")
	return out, true
}

func (o Options) cal() *Calibration {
	if o.Calibration != nil {
		return o.Calibration
	}
	return &Builtin
}

// Check validates a calibration table.
func (c *Calibration) Check() error {
	for i, e := range c.Entries {
		switch {
		case e.DriveType != "hdd" && e.DriveType != "ssd" && e.DriveType != "nvme":
			return fmt.Errorf("%w: calibration entry %d: drive_type %q: hdd, ssd or nvme", ErrInput, i, e.DriveType)
		case !slices.Contains(Workloads, e.Workload):
			return fmt.Errorf("%w: calibration entry %d: workload %q: one of %s", ErrInput, i, e.Workload, strings.Join(Workloads, ", "))
		case e.Protection != "replicated" && e.Protection != "ec" && e.Protection != "any":
			return fmt.Errorf("%w: calibration entry %d: protection %q: replicated, ec or any", ErrInput, i, e.Protection)
		case e.PerDrive <= 0:
			return fmt.Errorf("%w: calibration entry %d: per_drive must be above 0", ErrInput, i)
		}
	}
	return nil
}

// WorkloadOf classifies a sweep point: large (1 MiB and up) or small
// object writes and reads (rados, s3), random block reads and writes.
// "" for a point that is none of them (a mix, sequential block I/O).
func WorkloadOf(p sweep.Point) string {
	size, _ := report.SizeOf(p)
	kind := "small-"
	if size >= 1<<20 {
		kind = "large-"
	}
	switch p.Type {
	case "rados":
		if p.Params["mode"] == "write" {
			return kind + "write"
		}
		return kind + "read"
	case "s3":
		switch p.Params["op"] {
		case "put":
			return kind + "write"
		case "get":
			return kind + "read"
		}
	case "block":
		if p.Params["pattern"] != "rand" {
			return ""
		}
		switch p.Params["io_type"] {
		case "read":
			return "block-randread"
		case "write":
			return "block-randwrite"
		}
	}
	return ""
}

// FromArchive is the per-drive figure a sweep measured for a workload:
// the best point of that workload, per device of the target, taken to
// be drives of driveType.
func FromArchive(a *sweep.Archive, workload, driveType string) (*Entry, error) {
	if !slices.Contains([]string{"hdd", "ssd", "nvme"}, driveType) {
		return nil, fmt.Errorf("%w: measured drive type %q: hdd, ssd or nvme", ErrInput, driveType)
	}
	if !slices.Contains(Workloads, workload) {
		return nil, fmt.Errorf("%w: a measured figure is of one workload (%s), not %q", ErrInput, strings.Join(Workloads, ", "), workload)
	}
	if a.Target.Counts.Devices <= 0 {
		return nil, fmt.Errorf("%w: %s: the target's device count is unknown (set target devices in the sweep file)", ErrInput, a.Dir)
	}
	var best *report.Point
	pts := report.Aggregate(a)
	for i, p := range pts {
		if WorkloadOf(p.Point) != workload {
			continue
		}
		if best == nil || figure(p, workload) > figure(*best, workload) {
			best = &pts[i]
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: %s has no %s point", ErrInput, a.Dir, workload)
	}
	per := figure(*best, workload) / float64(a.Target.Counts.Devices)
	return &Entry{DriveType: driveType, Workload: workload, Protection: "any", PerDrive: per,
		Source: fmt.Sprintf("measured: %s, point %s, %.4g per device of %d", a.Dir, best.Point.ID, per, a.Target.Counts.Devices)}, nil
}

func figure(p report.Point, workload string) float64 {
	if ByOps(workload) {
		return p.OpsPerSec
	}
	return p.MBPerSec
}
