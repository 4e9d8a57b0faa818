package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"
)

// run executes the shoal command line and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	root := newRoot()
	root.SetArgs(args)
	err = root.Execute()
	w.Close()
	os.Stdout = stdout
	return <-done, err
}

// m1 is a small map; the expected lines below were printed by Ceph 16.2's
// crushtool for the same map and arguments.
const m1 = `tunable choose_local_tries 0
tunable choose_local_fallback_tries 0
tunable choose_total_tries 50
tunable chooseleaf_descend_once 1
tunable chooseleaf_vary_r 1
tunable chooseleaf_stable 1
tunable straw_calc_version 1
tunable allowed_bucket_algs 54
device 0 osd.0 class hdd
device 1 osd.1 class ssd
device 2 osd.2 class hdd
device 3 osd.3 class ssd
device 4 osd.4 class hdd
device 5 osd.5 class hdd
type 0 osd
type 1 host
type 11 root
host h0 { id -2
 alg straw2
 hash 0
 item osd.0 weight 1.0
 item osd.1 weight 2.5 }
host h1 { id -3
 alg straw2
 hash 0
 item osd.2 weight 1.0
 item osd.3 weight 0 }
host h2 { id -4
 alg straw2
 hash 0
 item osd.4 weight 1.0
 item osd.5 weight 1.0 }
root default { id -1
 alg straw2
 hash 0
 item h0 weight 3.5
 item h1 weight 1.0
 item h2 weight 2.0 }
rule rep { id 0
 type replicated
 min_size 1
 max_size 10
 step take default
 step chooseleaf firstn 0 type host
 step emit }
`

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	mapPath := filepath.Join(dir, "m1.txt")
	if err := os.WriteFile(mapPath, []byte(m1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "crush", "test", "-i", mapPath, "--rule", "0", "--num-rep", "3", "--min-x", "0", "--max-x", "5", "--show-mappings")
	if err != nil {
		t.Fatal(err)
	}
	want := "CRUSH rule 0 x 0 [4,1,2]\nCRUSH rule 0 x 1 [1,2,4]\nCRUSH rule 0 x 2 [4,2,0]\nCRUSH rule 0 x 3 [4,2,1]\nCRUSH rule 0 x 4 [1,5,2]\nCRUSH rule 0 x 5 [5,0,2]\n"
	if out != want {
		t.Fatalf("crush test:\n%s\nwant (crushtool):\n%s", out, want)
	}
	out, err = run(t, "crush", "test", "-i", mapPath, "--rule", "0", "--num-rep", "3", "--x", "5", "--show-mappings", "--weight", "5,0", "--weight", "0,0.5")
	if err != nil || out != "CRUSH rule 0 x 5 [0,4,2]\n" {
		t.Fatalf("crush test --weight: %q %v", out, err)
	}
	if _, err := run(t, "crush", "test", "-i", mapPath, "--weight", "1,2"); err == nil || !strings.Contains(err.Error(), "--weight 1,2") {
		t.Fatalf("bad --weight: %v", err)
	}
	out, err = run(t, "crush", "decompile", "-i", mapPath)
	if err != nil || !strings.Contains(out, "\tid -5 class hdd\t\t# do not change unnecessarily\n") {
		t.Fatalf("decompile: %v\n%s", err, out)
	}

	om := filepath.Join(dir, "om")
	if _, err := run(t, "osdmap", "create", om, "--crush", mapPath, "--pg-bits", "3", "--pgp-bits", "2"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "osdmap", "create", om, "--crush", mapPath); err == nil || !strings.Contains(err.Error(), "--clobber") {
		t.Fatalf("create over an existing file: %v", err)
	}
	out, err = run(t, "osdmap", "map-object", om, "foo", "hello world")
	if err != nil {
		t.Fatal(err)
	}
	// the PG ids were printed by osdmaptool for the same names and pg_num 48
	if !strings.HasPrefix(out, " object 'foo' -> 1.6 -> [") || !strings.Contains(out, " object 'hello world' -> 1.26 -> [") {
		t.Fatalf("map-object:\n%s", out)
	}
	out, err = run(t, "osdmap", "map-pgs", om, "--mark-out", "1", "--dump")
	if err != nil || !strings.HasPrefix(out, "pool 1 pg_num 48\n1.0\t[") || strings.Contains(out, "osd.1\t") {
		t.Fatalf("map-pgs with osd.1 out: %v\n%s", err, out)
	}
	// commands that need a cluster say how to get one (`shoal up` itself
	// is tested end to end in test/e2e, with the built binary)
	t.Setenv("SHOAL_CONF", filepath.Join(t.TempDir(), "none.conf"))
	if _, err := run(t, "status"); err == nil || !strings.Contains(err.Error(), "shoal up") {
		t.Fatalf("status without a cluster: %v", err)
	}
	if _, err := run(t, "up", "--mons", "2", "--data", t.TempDir()); err == nil || !strings.Contains(err.Error(), "1, 3 or 5") {
		t.Fatalf("up --mons 2: %v", err)
	}
}

// TestTraceFlag: --trace writes a Go execution trace of the command to
// its file, %p replaced by the pid, which go tool trace can read (its
// header names the Go version).
func TestTraceFlag(t *testing.T) {
	dir := t.TempDir()
	mapPath := filepath.Join(dir, "m1.txt")
	if err := os.WriteFile(mapPath, []byte(m1), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() { traceFile = "" }()
	if _, err := run(t, "--trace", filepath.Join(dir, "t-%p.trace"), "crush", "decompile", "-i", mapPath); err != nil {
		t.Fatal(err)
	}
	trace.Stop() // as main does once the command returns
	b, err := os.ReadFile(filepath.Join(dir, "t-"+strconv.Itoa(os.Getpid())+".trace"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) || !bytes.Contains(b[:16], []byte(" trace")) {
		t.Fatalf("not an execution trace: %q", b[:min(len(b), 16)])
	}
}
