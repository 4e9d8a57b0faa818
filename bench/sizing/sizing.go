// Package sizing picks cluster hardware the way the Ceph performance and
// sizing guides do: from a catalog of server models and drives, a
// requirement (usable capacity, throughput or IOPS for a workload, a
// protection scheme) and per-drive performance (a calibration table of
// published figures, or what a sweep measured here), it works out for
// every server and drive pairing how many servers the cluster needs —
// for capacity, for performance, for the protection scheme's failure
// domain and for the guides' fault-domain rule (one server at most 10 %
// of a throughput-optimized cluster, 15 % of a capacity-optimized one) —
// and ranks the configurations by the cost of the cluster that meets
// every need, with price per MB/s, per IOPS and per usable TB and watts
// per TB beside.
//
// The arithmetic, per configuration (a server model filled with one
// drive type):
//
//	raw per server     = bays × drive capacity
//	usable per server  = raw × efficiency × max_fill   (3×: 1/3; EC k+m: k/(k+m))
//	perf per server    = min(bays × per-drive figure,
//	                         NIC MB/s × 0.9 / network factor (ops workloads:
//	                           over 64 KiB per object op, 4 KiB per block op),
//	                         cores / cores per OSD × per-drive figure)
//	servers            = max(⌈usable need / usable per server⌉,
//	                         ⌈perf need / perf per server⌉,
//	                         failure-domain minimum, fault-domain rule)
//
// The per-drive figure is client-visible (after replication or coding),
// as the guides normalise their results. The network factor is the bytes
// a server's NIC carries per client byte: a replicated write arrives once
// and leaves size−1 times to the replicas; an EC k+m write arrives once
// and leaves (k+m−1)/k as shards; an EC read gathers (k−1)/k from peers
// (public and cluster traffic on the same NIC).
package sizing

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrInput is wrapped by every error about a catalog, requirement or
// calibration.
var ErrInput = errors.New("sizing")

// Catalog is the hardware to choose from.
type Catalog struct {
	Servers []Server `yaml:"servers"`
	Drives  []Drive  `yaml:"drives"`
}

// Server is a server model without its drives.
type Server struct {
	Name     string  `yaml:"name"`
	Bays     int     `yaml:"bays"`      // data drive bays
	CPUCores int     `yaml:"cpu_cores"` // physical cores
	RAMGB    float64 `yaml:"ram_gb"`
	NICGbps  float64 `yaml:"nic_gbps"` // all ports together
	PowerW   float64 `yaml:"power_w"`  // under load, without the data drives
	Price    float64 `yaml:"price"`    // without the data drives
	// Drives names the drives it takes (empty: every drive).
	Drives []string `yaml:"drives"`
}

// Drive is a data drive model.
type Drive struct {
	Name       string  `yaml:"name"`
	Type       string  `yaml:"type"` // hdd, ssd or nvme
	CapacityTB float64 `yaml:"capacity_tb"`
	PowerW     float64 `yaml:"power_w"`
	Price      float64 `yaml:"price"`
}

// Workloads the requirement and the calibration name.
var Workloads = []string{"large-write", "large-read", "small-write", "small-read", "block-randwrite", "block-randread"}

// ByOps reports whether a workload is measured in operations per second
// (small objects, 4 KiB block I/O) rather than MB/s.
func ByOps(w string) bool { return !strings.HasPrefix(w, "large-") }

// Requirement is what the cluster must deliver.
type Requirement struct {
	UsableTB float64 `yaml:"usable_tb"`
	// Workload is one of Workloads, or a mix of those measured in the
	// same unit with their shares of the operations or bytes:
	// "large-read:70,large-write:30".
	Workload string  `yaml:"workload"`
	MBps     float64 `yaml:"mb_per_s"` // large-* workloads: client MB/s (10^6 bytes)
	IOPS     float64 `yaml:"iops"`     // the others: client operations per second
	// Protection is "3x" (any "Nx") or "ec:K+M".
	Protection string `yaml:"protection"`
	// FailureDomain is "host" (default: each copy or shard on its own
	// server, so at least size or k+m servers) or "osd".
	FailureDomain string `yaml:"failure_domain"`
	// MaxFill is the share of raw capacity to plan for (default 0.75:
	// below Ceph's nearfull ratio of 0.85, with room for a failure).
	MaxFill float64 `yaml:"max_fill"`
	// IgnoreRule leaves the guides' fault-domain rule out of the server
	// count; each configuration then says whether it holds.
	IgnoreRule bool `yaml:"ignore_fault_domain_rule"`
}

// opBytes is the size of one operation of an ops workload, for the
// network limit: 64 KiB objects (the guides' small-object size), 4 KiB
// block I/O.
func opBytes(workload string) float64 {
	if strings.HasPrefix(workload, "block-") {
		return 4096
	}
	return 65536
}

// share is a workload's part of a mix (weights add up to 1).
type share struct {
	workload string
	weight   float64
}

// parseMix reads a workload or a mix of them.
func parseMix(s string) ([]share, error) {
	var out []share
	total := 0.0
	for _, part := range strings.Split(s, ",") {
		w, v, hasWeight := strings.Cut(strings.TrimSpace(part), ":")
		x := 1.0
		if hasWeight {
			var err error
			if x, err = strconv.ParseFloat(v, 64); err != nil || x <= 0 {
				return nil, fmt.Errorf("%w: workload %q: want WORKLOAD or WORKLOAD:SHARE,WORKLOAD:SHARE", ErrInput, s)
			}
		}
		if !slices.Contains(Workloads, w) {
			return nil, fmt.Errorf("%w: workload %q: each one of %s", ErrInput, w, strings.Join(Workloads, ", "))
		}
		if len(out) > 0 && ByOps(w) != ByOps(out[0].workload) {
			return nil, fmt.Errorf("%w: workload %q mixes MB/s and ops/s workloads", ErrInput, s)
		}
		out = append(out, share{w, x})
		total += x
	}
	for i := range out {
		out[i].weight /= total
	}
	return out, nil
}

// Scheme is a parsed protection scheme.
type Scheme struct {
	Replicas int // N of Nx, 0 for EC
	K, M     int
}

// ParseScheme reads "3x" or "ec:4+2".
func ParseScheme(s string) (Scheme, error) {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		r, err := strconv.Atoi(n)
		if err != nil || r < 1 {
			return Scheme{}, fmt.Errorf("%w: protection %q: want Nx or ec:K+M", ErrInput, s)
		}
		return Scheme{Replicas: r}, nil
	}
	if km, ok := strings.CutPrefix(s, "ec:"); ok {
		a, b, _ := strings.Cut(km, "+")
		k, err1 := strconv.Atoi(a)
		m, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && k >= 1 && m >= 1 {
			return Scheme{K: k, M: m}, nil
		}
	}
	return Scheme{}, fmt.Errorf("%w: protection %q: want Nx or ec:K+M", ErrInput, s)
}

// String is the scheme as ParseScheme reads it ("3x", "ec:4+2").
func (s Scheme) String() string {
	if s.Replicas > 0 {
		return fmt.Sprintf("%dx", s.Replicas)
	}
	return fmt.Sprintf("ec:%d+%d", s.K, s.M)
}

// Efficiency is usable bytes per raw byte: 1/N, or k/(k+m).
func (s Scheme) Efficiency() float64 {
	if s.Replicas > 0 {
		return 1 / float64(s.Replicas)
	}
	return float64(s.K) / float64(s.K+s.M)
}

// Width is the number of failure domains a PG spans: N, or k+m.
func (s Scheme) Width() int {
	if s.Replicas > 0 {
		return s.Replicas
	}
	return s.K + s.M
}

// NetworkFactor is the bytes one server's NIC carries per client byte
// for a workload (see the package doc).
func (s Scheme) NetworkFactor(workload string) float64 {
	write := strings.HasSuffix(workload, "write")
	switch {
	case s.Replicas > 0 && write:
		return float64(s.Replicas)
	case s.Replicas > 0:
		return 1
	case write:
		return 1 + float64(s.K+s.M-1)/float64(s.K)
	default:
		return 1 + float64(s.K-1)/float64(s.K)
	}
}

// Options are a sizing run's inputs beyond the catalog and requirement.
type Options struct {
	Calibration *Calibration
	// Measured, if set, replaces the calibration's per-drive figure of
	// its drive type and workload (from a sweep archive).
	Measured *Entry
}

// Config is one server model filled with one drive model, sized to the
// requirement.
type Config struct {
	Server Server
	Drive  Drive
	// PerDrive is the client-visible figure per drive used (MB/s or
	// ops/s) and where it comes from.
	PerDrive       float64
	PerDriveSource string
	// PerServer is what one server delivers, and Limit what bounds it:
	// "drives", "network" or "cpu".
	PerServer float64
	Limit     string
	// Servers is how many the cluster needs, and Reason which need set
	// the count: "capacity", "performance", "failure domain" or "fault
	// domain rule".
	Servers int
	Reason  string
	// The cluster's figures at that count.
	UsableTB    float64
	Performance float64 // MB/s or ops/s
	Cost        float64
	Watts       float64
	// Prices and power per unit.
	PerMBps, PerIOPS, PerUsableTB, WattsPerTB float64
	// ServerShare is one server's share of the cluster; RuleHolds says
	// it is within the guides' rule (10 % throughput- and IOPS-, 15 %
	// capacity-optimized clusters), which the count meets unless the
	// requirement ignores the rule.
	ServerShare float64
	RuleHolds   bool
	// RAMShort is true when the server has less RAM than its OSDs want
	// (RAMPerOSD each, plus RAMBase).
	RAMShort bool
}

// Sizing defaults, with their sources.
const (
	// DefaultMaxFill: plan to fill 75 % of raw capacity, below Ceph's
	// mon_osd_nearfull_ratio (0.85) with room to re-replicate a failed
	// server's data.
	DefaultMaxFill = 0.75
	// NICEfficiency is the share of a NIC's line rate a cluster gets for
	// data (TCP and framing overhead, imperfect balance).
	NICEfficiency = 0.9
	// RAMPerOSD and RAMBase (GB): Ceph's hardware recommendations
	// (docs.ceph.com, start/hardware-recommendations: "provision ~8 GB
	// per BlueStore OSD") and the Red Hat hardware selection guide's
	// server templates (16 GB for the OS and daemons).
	RAMPerOSD = 8.0
	RAMBase   = 16.0
	// ThroughputRule and CapacityRule: one server at most 10 % of a
	// throughput-optimized cluster, 15 % of a capacity-optimized one
	// (Dell PowerEdge R730xd Performance and Sizing Guide for Red Hat
	// Ceph Storage, 2016, "Ceph cluster design considerations").
	ThroughputRule = 0.10
	CapacityRule   = 0.15
)

// Size works out every configuration of the catalog for the
// requirement, cheapest cluster first (each meets every need, so its
// total price decides; price per MB/s, per IOPS or per usable TB breaks
// ties). Configurations whose drive type has no per-drive figure for the
// workload are left out; none left is an error.
func Size(cat *Catalog, req Requirement, o Options) ([]Config, error) {
	if err := checkInput(cat, &req); err != nil {
		return nil, err
	}
	sch, _ := ParseScheme(req.Protection)
	mix, _ := parseMix(req.Workload)
	byOps := ByOps(mix[0].workload)
	perfNeed := req.MBps
	if byOps {
		perfNeed = req.IOPS
	}
	netFactor := 0.0
	for _, m := range mix {
		netFactor += m.weight * sch.NetworkFactor(m.workload)
	}
	rule := CapacityRule
	if perfNeed > 0 {
		rule = ThroughputRule
	}
	var out []Config
	for _, s := range cat.Servers {
		for _, d := range cat.Drives {
			if len(s.Drives) > 0 && !slices.Contains(s.Drives, d.Name) {
				continue
			}
			e, ok := o.perDriveMix(d.Type, mix, sch)
			if !ok {
				continue
			}
			c := Config{Server: s, Drive: d, PerDrive: e.PerDrive, PerDriveSource: e.Source}
			c.PerServer, c.Limit = float64(s.Bays)*e.PerDrive, "drives"
			if s.NICGbps > 0 {
				nic := s.NICGbps * 125 * NICEfficiency / netFactor // MB/s
				if byOps {
					nic = nic * 1e6 / opBytes(mix[0].workload)
				}
				if nic < c.PerServer {
					c.PerServer, c.Limit = nic, "network"
				}
			}
			if s.CPUCores > 0 && e.CoresPerOSD > 0 {
				if cpu := float64(s.CPUCores) / e.CoresPerOSD * e.PerDrive; cpu < c.PerServer {
					c.PerServer, c.Limit = cpu, "cpu"
				}
			}
			usablePer := float64(s.Bays) * d.CapacityTB * sch.Efficiency() * req.MaxFill
			need := func(n int, why string) {
				if n > c.Servers {
					c.Servers, c.Reason = n, why
				}
			}
			need(int(math.Ceil(req.UsableTB/usablePer-1e-9)), "capacity")
			if perfNeed > 0 {
				need(int(math.Ceil(perfNeed/c.PerServer-1e-9)), "performance")
			}
			if req.FailureDomain == "host" {
				need(sch.Width(), "failure domain")
			}
			if !req.IgnoreRule {
				need(int(math.Ceil(1/rule-1e-9)), "fault domain rule")
			}
			n := float64(c.Servers)
			c.UsableTB = n * usablePer
			c.Performance = n * c.PerServer
			c.Cost = n * (s.Price + float64(s.Bays)*d.Price)
			c.Watts = n * (s.PowerW + float64(s.Bays)*d.PowerW)
			c.PerUsableTB = c.Cost / c.UsableTB
			c.WattsPerTB = c.Watts / c.UsableTB
			if byOps {
				c.PerIOPS = c.Cost / c.Performance
			} else {
				c.PerMBps = c.Cost / c.Performance
			}
			c.ServerShare = 1 / n
			c.RuleHolds = c.ServerShare <= rule+1e-9
			c.RAMShort = s.RAMGB > 0 && s.RAMGB < RAMBase+RAMPerOSD*float64(s.Bays)
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no server and drive of the catalog has a per-drive figure for %s with %s (calibration or --measured)", ErrInput, req.Workload, sch)
	}
	key := func(c Config) float64 {
		switch {
		case perfNeed > 0 && byOps:
			return c.PerIOPS
		case perfNeed > 0:
			return c.PerMBps
		}
		return c.PerUsableTB
	}
	slices.SortStableFunc(out, func(a, b Config) int {
		// the cluster's total cost decides, since every configuration
		// meets the requirement; the unit price breaks ties
		if a.Cost != b.Cost {
			return cmpFloat(a.Cost, b.Cost)
		}
		return cmpFloat(key(a), key(b))
	})
	return out, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func checkInput(cat *Catalog, req *Requirement) error {
	if len(cat.Servers) == 0 || len(cat.Drives) == 0 {
		return fmt.Errorf("%w: the catalog needs servers and drives", ErrInput)
	}
	names := map[string]bool{}
	for _, d := range cat.Drives {
		if d.Name == "" || d.CapacityTB <= 0 || d.Price < 0 || !slices.Contains([]string{"hdd", "ssd", "nvme"}, d.Type) {
			return fmt.Errorf("%w: drive %q: needs a name, type hdd, ssd or nvme, capacity_tb above 0 and a price", ErrInput, d.Name)
		}
		names[d.Name] = true
	}
	for _, s := range cat.Servers {
		if s.Name == "" || s.Bays <= 0 || s.Price < 0 {
			return fmt.Errorf("%w: server %q: needs a name, bays above 0 and a price", ErrInput, s.Name)
		}
		for _, d := range s.Drives {
			if !names[d] {
				return fmt.Errorf("%w: server %s: unknown drive %q", ErrInput, s.Name, d)
			}
		}
	}
	mix, err := parseMix(req.Workload)
	if err != nil {
		return err
	}
	byOps := ByOps(mix[0].workload)
	if req.Protection == "" {
		req.Protection = "3x"
	}
	if _, err := ParseScheme(req.Protection); err != nil {
		return err
	}
	switch req.FailureDomain {
	case "":
		req.FailureDomain = "host"
	case "host", "osd":
	default:
		return fmt.Errorf("%w: failure_domain %q: host or osd", ErrInput, req.FailureDomain)
	}
	if req.MaxFill == 0 {
		req.MaxFill = DefaultMaxFill
	}
	if req.MaxFill < 0 || req.MaxFill > 1 {
		return fmt.Errorf("%w: max_fill %v: between 0 and 1", ErrInput, req.MaxFill)
	}
	if req.UsableTB <= 0 && req.MBps <= 0 && req.IOPS <= 0 {
		return fmt.Errorf("%w: the requirement needs usable_tb, mb_per_s or iops", ErrInput)
	}
	if byOps && req.MBps > 0 || !byOps && req.IOPS > 0 {
		return fmt.Errorf("%w: %s is sized by %s", ErrInput, req.Workload, map[bool]string{true: "iops", false: "mb_per_s"}[byOps])
	}
	return nil
}

// LoadYAML reads a YAML file into v, refusing unknown keys.
func LoadYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInput, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInput, path, err)
	}
	return nil
}
