package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// radosBenchOut is the shape of Ceph 16's `rados bench 2 write -t 16`
// output (src/common/obj_bencher.cc), figures made up.
const radosBenchOut = `hints = 1
Maintaining 16 concurrent writes of 4194304 bytes to objects of size 4194304 for up to 2 seconds or 0 objects
Object prefix: benchmark_data_vm_4242
  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)
    0       0         0         0         0         0           -           0
    1      16        89        73   291.949       292   0.0963412    0.195135
    2      16       168       152   303.948       316    0.177014    0.199013
Total time run:         2.21
Total writes made:      168
Write size:             4194304
Object size:            4194304
Bandwidth (MB/sec):     304.1
Stddev Bandwidth:       16.97
Max bandwidth (MB/sec): 316
Min bandwidth (MB/sec): 292
Average IOPS:           76
Stddev IOPS:            4.24
Max IOPS:               79
Min IOPS:               73
Average Latency(s):     0.2051
Stddev Latency(s):      0.061
Max latency(s):         0.4623
Min latency(s):         0.0412
`

func TestParseRadosBench(t *testing.T) {
	parse := parseRadosBench(4 << 20)
	var ops, b uint64
	var mean, mx time.Duration
	for _, line := range strings.Split(radosBenchOut, "\n") {
		o, n, m, x := parse(line)
		ops, b = ops+o, b+n
		if m > 0 {
			mean = m
		}
		if x > 0 {
			mx = x
		}
	}
	if ops != 168 || b != 168*4<<20 || mean != 205100*time.Microsecond || mx != 462300*time.Microsecond {
		t.Fatalf("ops %d bytes %d mean %v max %v", ops, b, mean, mx)
	}
}

func TestParseRBDBench(t *testing.T) {
	out := `bench  type read io_size 4096 io_threads 16 bytes 1073741824 pattern random
  SEC       OPS   OPS/SEC   BYTES/SEC
    1      6960   6975.72    27 MiB/s
    2     14208   7110.74    28 MiB/s
elapsed: 2   ops: 14208   ops/sec: 7000.1   bytes/sec: 27 MiB/s
`
	parse := parseRBDBench(4096)
	var ops, b uint64
	for _, line := range strings.Split(out, "\n") {
		o, n, _, _ := parse(line)
		ops, b = ops+o, b+n
	}
	if ops != 14208 || b != 14208*4096 {
		t.Fatalf("ops %d bytes %d", ops, b)
	}
}

// TestCephTarget runs a sweep against a stand-in for ceph-common's rados
// (a script printing rados bench's output): the arguments it gets and
// what the sweep archives from its output.
func TestCephTarget(t *testing.T) {
	bin := t.TempDir()
	args := filepath.Join(bin, "args")
	out := filepath.Join(bin, "out.txt")
	if err := os.WriteFile(out, []byte(radosBenchOut), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$@\" >> " + args + "\ncase \"$*\" in *lspools*) echo rbench;; *' bench '*) cat " + out + ";; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "rados"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	s := testSpec(t, "target: {kind: ceph, conf: /etc/ceph/x.conf, osds: 3}\nduration: 2s\n"+
		"setup: ['echo setup $CEPH_CONF >> "+args+"']\nteardown: ['echo teardown >> "+args+"']\n"+
		"benchmarks:\n  rados:\n    setup: ['echo bench-setup >> "+args+"']\n    pool: rbench\n    concurrency: [16]\n")
	dir := t.TempDir()
	if err := Run(context.Background(), s, Options{Archive: dir}); err != nil {
		t.Fatal(err)
	}
	a, err := ReadArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := a.Results[0]
	if r.Ops != 168 || r.MeanMS != 205.1 || r.MaxMS != 462.3 || a.Target.Counts.OSDs != 3 {
		t.Fatalf("result ops %d mean %v max %v counts %+v", r.Ops, r.MeanMS, r.MaxMS, a.Target.Counts)
	}
	b, _ := os.ReadFile(args)
	calls := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		"setup /etc/ceph/x.conf",
		"-c /etc/ceph/x.conf --client_mount_timeout 20 lspools",
		"bench-setup",
		"-c /etc/ceph/x.conf -p rbench bench 2 write -t 16 -b 4194304 --no-cleanup --run-name sweep_rados_0",
		"-c /etc/ceph/x.conf -p rbench cleanup --run-name sweep_rados_0",
		"teardown",
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rados calls\n%s\nwant\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
}
