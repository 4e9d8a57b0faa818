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

// toolStandIns puts scripts (by name: rados, rbd, fio) first on PATH, in
// place of Ceph's and fio's tools, with output in a file for them to
// print; scripts gets the file their arguments are to be appended to
// (returned) and the output file.
func toolStandIns(t *testing.T, output string, scripts func(args, out string) map[string]string) (args string) {
	t.Helper()
	bin := t.TempDir()
	args, out := filepath.Join(bin, "args"), filepath.Join(bin, "out.txt")
	if err := os.WriteFile(out, []byte(output), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, script := range scripts(args, out) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return args
}

// runArchived runs sweep s into a new archive and reads it back.
func runArchived(t *testing.T, s *Spec) *Archive {
	t.Helper()
	dir := t.TempDir()
	if err := Run(context.Background(), s, Options{Archive: dir}); err != nil {
		t.Fatal(err)
	}
	a, err := ReadArchive(dir)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestCephTarget runs a sweep against a stand-in for ceph-common's rados
// (a script printing rados bench's output): the arguments it gets and
// what the sweep archives from its output.
func TestCephTarget(t *testing.T) {
	args := toolStandIns(t, radosBenchOut, func(args, out string) map[string]string {
		return map[string]string{"rados": "#!/bin/sh\necho \"$@\" >> " + args + "\ncase \"$*\" in *lspools*) echo rbench;; *' bench '*) cat " + out + ";; esac\n"}
	})
	a := runArchived(t, testSpec(t, "target: {kind: ceph, conf: /etc/ceph/x.conf, osds: 3}\nduration: 2s\n"+
		"setup: ['echo setup $CEPH_CONF >> "+args+"']\nteardown: ['echo teardown >> "+args+"']\n"+
		"benchmarks:\n  rados:\n    setup: ['echo bench-setup >> "+args+"']\n    pool: rbench\n    concurrency: [16]\n"))
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

// fioOut is the shape of fio 3.33's --output-format=json+
// --status-interval=1 output through its nbd engine (a line of text,
// then one report a second and the final one, each of totals so far),
// trimmed to the fields a sweep reads; figures made up.
const fioOut = `connected to NBD server
{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "sweep",
      "read" : {
        "io_bytes" : 8192,
        "total_ios" : 2,
        "clat_ns" : {
          "bins" : {
            "1000000" : 2
          }
        }
      },
      "write" : {
        "io_bytes" : 0,
        "total_ios" : 0,
        "clat_ns" : {}
      }
    }
  ]
}
{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "sweep",
      "read" : {
        "io_bytes" : 16384,
        "total_ios" : 4,
        "clat_ns" : {
          "bins" : {
            "1000000" : 3,
            "8000000" : 1
          }
        }
      },
      "write" : {
        "io_bytes" : 4096,
        "total_ios" : 1,
        "clat_ns" : {
          "bins" : {
            "2000000" : 1
          }
        }
      }
    }
  ]
}
`

// readFioReports records what each report adds to the one before: the
// operations, bytes and each completion's latency from fio's bins; text
// between reports goes to the log; output without a report, or totals
// that go down, are errors.
func TestReadFioReports(t *testing.T) {
	var rec Recorder
	var log strings.Builder
	if err := readFioReports(strings.NewReader(fioOut), &rec, &log); err != nil {
		t.Fatal(err)
	}
	s, _ := rec.cut()
	if s.ops != 5 || s.bytes != 20480 || s.lat.Count() != 5 || log.String() != "connected to NBD server\n" {
		t.Fatalf("ops %d bytes %d latencies %d log %q", s.ops, s.bytes, s.lat.Count(), log.String())
	}
	// 1, 1, 1, 2 and 8 ms: the mean exact, the percentiles within a bucket
	if m := s.lat.Mean(); m != 2600*time.Microsecond {
		t.Errorf("mean %v, want 2.6ms", m)
	}
	if p, m := s.lat.Quantile(0.5), s.lat.Quantile(0.99); p < 980*time.Microsecond || p > 1020*time.Microsecond || m < 7800*time.Microsecond || m > 8000*time.Microsecond {
		t.Errorf("p50 %v p99 %v, want 1ms and 8ms", p, m)
	}
	if err := readFioReports(strings.NewReader("fio: pid=1, err=5/file:io_u.c\n"), &rec, &log); err == nil {
		t.Error("output with no report accepted")
	}
	body := strings.TrimPrefix(fioOut, "connected to NBD server\n")
	i := strings.Index(body, "}\n{") + 2
	backwards := body[i:] + body[:i]
	if err := readFioReports(strings.NewReader(backwards), &rec, &log); err == nil || !strings.Contains(err.Error(), "fewer") {
		t.Errorf("totals going down: %v", err)
	}
}

// A block point with engine fio against a Ceph target runs fio's rbd
// engine on the image with the target's conf and user, and archives
// latency percentiles from its histogram.
func TestCephFio(t *testing.T) {
	args := toolStandIns(t, strings.TrimPrefix(fioOut, "connected to NBD server\n"), func(args, out string) map[string]string {
		return map[string]string{
			"rados": "#!/bin/sh\necho rbench\n",
			"rbd":   "#!/bin/sh\necho rbd \"$@\" >> " + args + "\n",
			"fio":   "#!/bin/sh\necho fio CEPH_CONF=$CEPH_CONF \"$@\" >> " + args + "\ncat " + out + "\n",
		}
	})
	a := runArchived(t, testSpec(t, "target: {kind: ceph, conf: /etc/ceph/x.conf, user: client.bench}\nduration: 2s\n"+
		"benchmarks:\n  block:\n    image: rbench/img\n    engine: fio\n    io_type: readwrite\n    iodepth: 16\n"))
	r := a.Results[0]
	if r.Ops != 5 || r.Bytes != 20480 || r.P99MS < 7.8 || r.P99MS > 8 || r.MeanMS != 2.6 {
		t.Fatalf("result ops %d bytes %d p99 %v mean %v", r.Ops, r.Bytes, r.P99MS, r.MeanMS)
	}
	b, _ := os.ReadFile(args)
	want := "fio CEPH_CONF=/etc/ceph/x.conf --name=sweep --rw=randrw --bs=4096 --iodepth=16 --numjobs=1 --size=1073741824 --time_based --runtime=2 " +
		"--output-format=json+ --status-interval=1 --thread --rwmixread=70 --ioengine=rbd --clientname=bench --pool=rbench --rbdname=img"
	if !strings.Contains(string(b), want) {
		t.Fatalf("calls\n%s\nwant\n%s", b, want)
	}
	// fio's rbd engine cannot take a keyring of its own: refused before any run
	s := testSpec(t, "target: {kind: ceph, conf: /etc/ceph/x.conf, keyring: /k}\nbenchmarks:\n  block:\n    engine: fio\n")
	if err := Run(context.Background(), s, Options{Archive: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "keyring") {
		t.Fatalf("engine fio with a keyring: %v", err)
	}
}
