package sweep

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fakeProc writes a /proc tree: one process (pid 42, "ceph-osd --id 3")
// and the system files, with counters scaled by k.
func fakeProc(t *testing.T, root string, k uint64) {
	t.Helper()
	w := func(name, s string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := func(v uint64) string { return strconv.FormatUint(v*k, 10) }
	// /proc/PID/stat as proc(5) lays it out: utime and stime are the
	// 14th and 15th fields, 52 in all
	w("42/stat", "42 (ceph-osd) S 1 1 1 0 -1 4194560 100 0 0 0 "+n(150)+" "+n(50)+" 0 0 20 0 1 0 12345 1000000 250 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	w("42/status", "Name:\tceph-osd\nVmPeak:\t  2048 kB\nVmHWM:\t  "+n(1024)+" kB\nVmRSS:\t  512 kB\n")
	w("42/comm", "ceph-osd\n")
	w("42/cmdline", "/usr/bin/ceph-osd\x00-f\x00--id\x003\x00")
	w("stat", "cpu  "+n(100)+" 0 "+n(50)+" 9999 77 "+n(10)+" 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 0\nctxt 0\nbtime 1700000000\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n")
	// 20 fields (kernel 5.5+): reads completed (4th), sectors read (6th), writes (8th), sectors written (10th)
	w("diskstats", "   8       0 sda "+n(10)+" 0 "+n(80)+" 5 "+n(20)+" 0 "+n(160)+" 7 0 12 12 0 0 0 0 0 0\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	w("net/dev", "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: "+n(1000)+" 10 0 0 0 0 0 0 "+n(1000)+" 10 0 0 0 0 0 0\n  eth0: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
}

func TestUsage(t *testing.T) {
	root := t.TempDir()
	old := procRoot
	procRoot = root
	defer func() { procRoot = old }()
	fakeProc(t, root, 1)
	dms := byName([]string{"ceph-osd", "radosgw"})
	if len(dms) != 1 || dms[0].Name != "osd.3" || dms[0].PID != 42 {
		t.Fatalf("daemons %+v", dms)
	}
	a := snapUsage(dms)
	fakeProc(t, root, 3)
	u := since(a, snapUsage(dms), dms)
	// CPU: (150+50) ticks at 100 per second, tripled: 2 s → 6 s.
	if u.CPU["osd.3"] != 4 || u.CPUAll != 4 {
		t.Fatalf("cpu %+v", u.CPU)
	}
	if math.Abs(u.MachineCPU-3.2) > 1e-9 { // (100+50+10)·2 ticks
		t.Fatalf("machine %v", u.MachineCPU)
	}
	if u.PeakRSS["osd.3"] != 3*1024*1024 {
		t.Fatalf("rss %v", u.PeakRSS)
	}
	want := DeviceIO{ReadOps: 20, ReadBytes: 160 * 512, WriteOps: 40, WriteBytes: 320 * 512}
	if len(u.Devices) != 1 || u.Devices["sda"] != want {
		t.Fatalf("devices %+v, want sda %+v only", u.Devices, want)
	}
	if len(u.Net) != 1 || u.Net["lo"] != (NetIO{2000, 2000}) {
		t.Fatalf("net %+v", u.Net)
	}
}
