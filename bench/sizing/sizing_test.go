package sizing

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/bench/sweep"
)

func catalog(t *testing.T) *Catalog {
	t.Helper()
	var c Catalog
	if err := LoadYAML("examples/catalog.yaml", &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func find(t *testing.T, cfgs []Config, server, drive string) Config {
	t.Helper()
	for _, c := range cfgs {
		if c.Server.Name == server && c.Drive.Name == drive {
			return c
		}
	}
	t.Fatalf("no %s with %s", server, drive)
	return Config{}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// The expected figures below are worked by hand from the example
// catalog and the built-in calibration (hdd large-write 56 MB/s, 1 core
// per OSD; nvme 3x large-write 446 MB/s, 6 cores per OSD).

// TestDenseHDDServersForLargeWrites: the guides' finding that denser HDD
// servers give better price/performance for large-object writes, as long
// as their network keeps up; the same 60-bay server on 10 GbE is network
// bound and the worst of all.
func TestDenseHDDServersForLargeWrites(t *testing.T) {
	cfgs, err := Size(catalog(t), Requirement{Workload: "large-write", MBps: 100000, Protection: "3x"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		server    string
		perServer float64
		limit     string
		servers   int
		cost      float64
	}{
		// min(60·56, 100 Gb/s·125·0.9/3 = 3,750, 64 cores/1·56 = 3,584); ⌈100,000/3,360⌉ = 30 servers of $12,000 + 60·$300
		{server: "4u-60hdd", perServer: 3360, limit: "drives", servers: 30, cost: 900000},
		// min(24·56, 1,875, 1,792); ⌈100,000/1,344⌉ = 75 of $15,200
		{server: "2u-24hdd", perServer: 1344, limit: "drives", servers: 75, cost: 1140000},
		// min(12·56, 937.5, 896); ⌈100,000/672⌉ = 149 of $9,600
		{server: "2u-12hdd", perServer: 672, limit: "drives", servers: 149, cost: 1430400},
		// 10 Gb/s·125·0.9/3 = 375; ⌈100,000/375⌉ = 267 of $28,500
		{server: "4u-60hdd-10g", perServer: 375, limit: "network", servers: 267, cost: 7609500},
	} {
		c := find(t, cfgs, w.server, "hdd-16t")
		if !near(c.PerServer, w.perServer) || c.Limit != w.limit || c.Servers != w.servers || !near(c.Cost, w.cost) || c.Reason != "performance" {
			t.Errorf("%s: %.1f MB/s per server (%s), %d servers (%s), $%.0f; want %.1f (%s), %d, $%.0f",
				w.server, c.PerServer, c.Limit, c.Servers, c.Reason, c.Cost, w.perServer, w.limit, w.servers, w.cost)
		}
	}
	a, b, c := find(t, cfgs, "4u-60hdd", "hdd-16t"), find(t, cfgs, "2u-24hdd", "hdd-16t"), find(t, cfgs, "2u-12hdd", "hdd-16t")
	if !(a.PerMBps < b.PerMBps && b.PerMBps < c.PerMBps) {
		t.Errorf("$/MB/s: 60-bay %.2f, 24-bay %.2f, 12-bay %.2f: want denser cheaper", a.PerMBps, b.PerMBps, c.PerMBps)
	}
	// ranking: cheapest cluster first; 1u-10nvme with 7.68 TB drives:
	// min(4,460, 7,500, 64/6·446 = 4,757) → ⌈100,000/4,460⌉ = 23 of $23,000
	if cfgs[0].Server.Name != "1u-10nvme" || cfgs[0].Drive.Name != "nvme-7.68t" || cfgs[0].Servers != 23 || !near(cfgs[0].Cost, 529000) {
		t.Errorf("first: %s %s, %d servers, $%.0f", cfgs[0].Server.Name, cfgs[0].Drive.Name, cfgs[0].Servers, cfgs[0].Cost)
	}
	if last := cfgs[len(cfgs)-1]; last.Server.Name != "4u-60hdd-10g" {
		t.Errorf("last: %s", last.Server.Name)
	}
}

// TestECCheaperPerUsableTB: EC 3+2 stores 60 % of raw as data, 3× 33 %.
func TestECCheaperPerUsableTB(t *testing.T) {
	size := func(prot string) Config {
		cfgs, err := Size(catalog(t), Requirement{Workload: "large-write", UsableTB: 2000, Protection: prot}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return find(t, cfgs, "4u-60hdd", "hdd-16t")
	}
	r, e := size("3x"), size("ec:3+2")
	// 3×: 960 TB raw · 1/3 · 0.75 = 240 TB per server, ⌈2,000/240⌉ = 9 (rule: 7)
	if r.Servers != 9 || r.Reason != "capacity" || !near(r.UsableTB, 2160) || !near(r.PerUsableTB, 270000.0/2160) {
		t.Errorf("3x: %d servers (%s), %.0f TB, $%.2f/TB", r.Servers, r.Reason, r.UsableTB, r.PerUsableTB)
	}
	// EC 3+2: 960 · 0.6 · 0.75 = 432 per server, ⌈4.63⌉ = 5, failure domain 5, rule ⌈1/0.15⌉ = 7
	if e.Servers != 7 || e.Reason != "fault domain rule" || !near(e.UsableTB, 3024) || !near(e.PerUsableTB, 210000.0/3024) {
		t.Errorf("ec:3+2: %d servers (%s), %.0f TB, $%.2f/TB", e.Servers, e.Reason, e.UsableTB, e.PerUsableTB)
	}
	if e.PerUsableTB >= r.PerUsableTB || !e.RuleHolds || !r.RuleHolds {
		t.Errorf("EC 3+2 $%.2f/TB, 3x $%.2f/TB", e.PerUsableTB, r.PerUsableTB)
	}
}

func TestFaultDomainRule(t *testing.T) {
	// a small performance need: 10 servers (one at most 10 %)
	cfgs, err := Size(catalog(t), Requirement{Workload: "large-write", MBps: 1000, Protection: "3x"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, cfgs, "2u-12hdd", "hdd-16t")
	if c.Servers != 10 || c.Reason != "fault domain rule" || !c.RuleHolds || !near(c.ServerShare, 0.1) {
		t.Errorf("%d servers (%s), share %.3f", c.Servers, c.Reason, c.ServerShare)
	}
	// EC 8+3 on host: the failure domain asks 11
	cfgs, err = Size(catalog(t), Requirement{Workload: "large-write", MBps: 1000, Protection: "ec:8+3"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := find(t, cfgs, "2u-12hdd", "hdd-16t"); c.Servers != 11 || c.Reason != "failure domain" {
		t.Errorf("ec:8+3: %d servers (%s)", c.Servers, c.Reason)
	}
}

func TestNetworkFactor(t *testing.T) {
	for _, c := range []struct {
		prot, workload string
		want           float64
	}{
		{"3x", "large-write", 3}, {"3x", "large-read", 1}, {"2x", "large-write", 2},
		{"ec:4+2", "large-write", 1 + 5.0/4}, {"ec:4+2", "large-read", 1 + 3.0/4},
	} {
		s, err := ParseScheme(c.prot)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.NetworkFactor(c.workload); !near(got, c.want) {
			t.Errorf("%s %s: %v, want %v", c.prot, c.workload, got, c.want)
		}
	}
}

func TestMix(t *testing.T) {
	cfgs, err := Size(catalog(t), Requirement{Workload: "large-read:50,large-write:50", MBps: 1000, Protection: "3x"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// harmonic: 1/(0.5/58 + 0.5/56)
	if c := find(t, cfgs, "2u-12hdd", "hdd-16t"); !near(c.PerDrive, 1/(0.5/58+0.5/56)) {
		t.Errorf("mix per drive %v", c.PerDrive)
	}
}

func TestInputErrors(t *testing.T) {
	for _, c := range []struct {
		req  Requirement
		want string
	}{
		{Requirement{Workload: "huge-write", MBps: 1}, "workload"},
		{Requirement{Workload: "large-write:50,small-write:50", MBps: 1}, "mixes MB/s and ops/s"},
		{Requirement{Workload: "large-write", MBps: 1, Protection: "raid5"}, "protection"},
		{Requirement{Workload: "large-write"}, "needs usable_tb, mb_per_s or iops"},
		{Requirement{Workload: "large-write", IOPS: 5}, "sized by mb_per_s"},
		{Requirement{Workload: "small-write", IOPS: 5, Protection: "3x"}, "no server and drive"}, // no hdd or 3x nvme figure
		{Requirement{Workload: "large-write", MBps: 1, FailureDomain: "rack"}, "failure_domain"},
	} {
		_, err := Size(catalog(t), c.req, Options{})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.req, err, c.want)
		}
	}
	bad := &Catalog{Servers: []Server{{Name: "s", Bays: 2, Drives: []string{"nope"}}}, Drives: []Drive{{Name: "d", Type: "hdd", CapacityTB: 1}}}
	if _, err := Size(bad, Requirement{Workload: "large-write", MBps: 1}, Options{}); err == nil || !strings.Contains(err.Error(), "unknown drive") {
		t.Errorf("unknown drive: %v", err)
	}
	if err := (&Calibration{Entries: []Entry{{DriveType: "tape", Workload: "large-write", Protection: "any", PerDrive: 1}}}).Check(); err == nil {
		t.Error("tape accepted")
	}
}

func TestRAMShort(t *testing.T) {
	cat := catalog(t)
	cat.Servers[0].RAMGB = 64 // 12 OSDs want 16 + 12·8 = 112 GB
	cfgs, err := Size(cat, Requirement{Workload: "large-write", MBps: 1000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !find(t, cfgs, "2u-12hdd", "hdd-16t").RAMShort || find(t, cfgs, "2u-24hdd", "hdd-16t").RAMShort {
		t.Error("RAM check")
	}
}

func TestFromArchive(t *testing.T) {
	s, err := sweep.Parse([]byte("benchmarks:\n  rados:\n    op_size: [64K, 4M]\n    concurrency: [4, 16]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := &sweep.Archive{Dir: "mem", Spec: s, Target: sweep.TargetInfo{Counts: sweep.Counts{OSDs: 3, Devices: 3}}}
	mb := map[string]float64{"rados.op_size=64K.concurrency=4": 100, "rados.op_size=64K.concurrency=16": 900,
		"rados.op_size=4M.concurrency=4": 300, "rados.op_size=4M.concurrency=16": 600}
	for _, p := range s.Points() {
		a.Results = append(a.Results, sweep.Result{Point: p, MBPerSec: mb[p.ID], OpsPerSec: mb[p.ID]})
	}
	e, err := FromArchive(a, "large-write", "ssd")
	if err != nil {
		t.Fatal(err)
	}
	if e.PerDrive != 200 || e.DriveType != "ssd" || !strings.Contains(e.Source, "rados.op_size=4M.concurrency=16") {
		t.Fatalf("%+v", e)
	}
	if _, err := FromArchive(a, "block-randread", "ssd"); err == nil {
		t.Fatal("no block point, yet a figure")
	}
	// the measured figure replaces the calibration's for its type
	cat := &Catalog{Servers: []Server{{Name: "s", Bays: 10, Price: 1000}}, Drives: []Drive{{Name: "d", Type: "ssd", CapacityTB: 4, Price: 100}}}
	cfgs, err := Size(cat, Requirement{Workload: "large-write", MBps: 10000}, Options{Measured: e})
	if err != nil {
		t.Fatal(err)
	}
	if cfgs[0].PerServer != 2000 || cfgs[0].Servers != 10 {
		t.Fatalf("%+v", cfgs[0])
	}
}

func TestIgnoreRuleAndOpsNetwork(t *testing.T) {
	cfgs, err := Size(catalog(t), Requirement{Workload: "large-write", MBps: 1000, Protection: "3x", IgnoreRule: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// ⌈1,000/672⌉ = 2, raised to 3 by the failure domain; one server is a third of the cluster
	if c := find(t, cfgs, "2u-12hdd", "hdd-16t"); c.Servers != 3 || c.Reason != "failure domain" || c.RuleHolds {
		t.Errorf("%d servers (%s), rule holds %v", c.Servers, c.Reason, c.RuleHolds)
	}
	// 4 KiB reads on 1 Gb/s: 1·125·0.9/1 MB/s over 4,096 bytes = 27,466 ops/s, under 10·51,875
	cat := &Catalog{Servers: []Server{{Name: "thin", Bays: 10, CPUCores: 128, NICGbps: 1, Price: 1000}}, Drives: []Drive{{Name: "n", Type: "nvme", CapacityTB: 4, Price: 100}}}
	cfgs, err = Size(cat, Requirement{Workload: "block-randread", IOPS: 100000}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := cfgs[0]; c.Limit != "network" || !near(c.PerServer, 112.5e6/4096) {
		t.Errorf("per server %.1f ops/s (%s)", c.PerServer, c.Limit)
	}
}
