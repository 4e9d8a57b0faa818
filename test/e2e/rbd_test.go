package e2e

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRBDCLI drives `shoal rbd` as an operator would: an image created
// thin, a file imported and exported back (sparse), snapshots listed,
// read and rolled back, a resize, a short bench, and removal — each
// verb's output and refusals checked.
func TestRBDCLI(t *testing.T) {
	c := up(t, "--osds", "3")
	c.must("pool", "create", "rbd", "--size", "3", "--pg-num", "8")
	c.must("rbd", "create", "disk", "--size", "64") // MiB, as rbd's --size
	if out := c.must("rbd", "ls"); out != "disk\n" {
		t.Fatalf("rbd ls: %q", out)
	}
	info := c.must("rbd", "info", "rbd/disk")
	for _, want := range []string{"size 64 MiB in 16 objects", "order 22 (4 MiB objects)", "format: 2", "block_name_prefix: rbd_data."} {
		if !strings.Contains(info, want) {
			t.Fatalf("rbd info lacks %q:\n%s", want, info)
		}
	}
	if out := c.must("rbd", "du", "disk"); !strings.Contains(out, "64 MiB") || !strings.Contains(out, "0 B") {
		t.Fatalf("rbd du of a new image: %q", out)
	}
	// features: the default, one disabled, a dependency refused, a choice at creation
	if !strings.Contains(info, "features: layering, exclusive-lock, object-map, fast-diff\n") {
		t.Fatalf("rbd info's default features:\n%s", info)
	}
	if o, err := c.run("rbd", "feature", "disable", "disk", "exclusive-lock"); err == nil || !strings.Contains(o, "object-map needs exclusive-lock") {
		t.Fatalf("rbd feature disable exclusive-lock under object-map: %v %q", err, o)
	}
	c.must("rbd", "feature", "disable", "disk", "object-map") // fast-diff with it
	c.must("rbd", "feature", "disable", "disk", "exclusive-lock")
	if info := c.must("rbd", "info", "disk"); !strings.Contains(info, "features: layering\n") {
		t.Fatalf("rbd info after feature disable:\n%s", info)
	}
	if o, err := c.run("rbd", "feature", "enable", "disk", "object-map"); err == nil || !strings.Contains(o, "needs exclusive-lock") {
		t.Fatalf("rbd feature enable object-map without exclusive-lock: %v %q", err, o)
	}
	c.must("rbd", "feature", "enable", "disk", "exclusive-lock", "object-map", "fast-diff")
	c.must("rbd", "object-map", "rebuild", "disk")
	c.must("rbd", "create", "bare", "--size", "1", "--image-feature", "layering")
	if info := c.must("rbd", "info", "bare"); !strings.Contains(info, "features: layering\n") {
		t.Fatalf("rbd info of an image created with --image-feature layering:\n%s", info)
	}
	c.must("rbd", "rm", "bare")
	// layout flags, and a data pool that is erasure-coded
	c.must("rbd", "create", "striped", "--size", "16", "--object-size", "1M", "--stripe-unit", "64K", "--stripe-count", "4")
	info = c.must("rbd", "info", "striped")
	for _, want := range []string{"order 20 (1 MiB objects)", "stripe unit: 64 KiB", "stripe count: 4"} {
		if !strings.Contains(info, want) {
			t.Fatalf("rbd info of a striped image lacks %q:\n%s", want, info)
		}
	}
	for _, bad := range [][]string{{"--object-size", "3M"}, {"--stripe-unit", "3K"}, {"--size", "0"}} {
		args := append([]string{"rbd", "create", "bad", "--size", "16"}, bad...)
		if o, err := c.run(args...); err == nil {
			t.Fatalf("rbd create %v accepted: %q", bad, o)
		}
	}
	c.must("osd", "erasure-code-profile", "set", "p21", "k=2", "m=1", "crush-failure-domain=osd")
	c.must("pool", "create", "ecdata", "erasure", "p21")
	if o, err := c.run("rbd", "create", "ecimg", "--size", "16", "--data-pool", "ecdata"); err == nil || !strings.Contains(o, "allow_ec_overwrites") {
		t.Fatalf("an EC data pool without overwrites: %v %q", err, o)
	}
	c.must("pool", "set", "ecdata", "allow_ec_overwrites", "true")
	c.must("rbd", "create", "ecimg", "--size", "16", "--data-pool", "ecdata")
	if info := c.must("rbd", "info", "ecimg"); !strings.Contains(info, "data_pool: ecdata") {
		t.Fatalf("rbd info of an image with a data pool:\n%s", info)
	}
	c.must("rbd", "bench", "ecimg", "--io-type", "write", "--io-size", "64K", "--io-total", "2M")
	if out := c.must("rbd", "du", "ecimg"); strings.Contains(out, " 0 B") {
		t.Fatalf("rbd du after writes to an EC data pool: %q", out)
	}
	c.must("rbd", "rm", "ecimg")
	c.must("rbd", "rm", "striped")
	// a 10 MiB file with data in its first and last MiB only
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	payload := make([]byte, 10<<20)
	rng := rand.New(rand.NewSource(1))
	rng.Read(payload[:1<<20])
	rng.Read(payload[9<<20:])
	if err := os.WriteFile(in, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	c.must("rbd", "import", in, "rbd/file")
	// used, from the object map: objects 0 (4 MiB) and 2 (the image's
	// last 2 MiB); object 1, all zeros, was never written
	if out := c.must("rbd", "du", "file"); !strings.Contains(out, "10 MiB") || !strings.Contains(out, " 6 MiB") {
		t.Fatalf("rbd du of an import with 8 MiB of zeros: %q", out)
	}
	if out := c.must("rbd", "object-map", "check", "file"); !strings.Contains(out, "0 stale entries, none missing") {
		t.Fatalf("rbd object-map check: %q", out)
	}
	c.must("rbd", "snap", "create", "file@v1")
	// refused: it has a snapshot
	if out, err := c.run("rbd", "rm", "file"); err == nil || !strings.Contains(out, "snapshots") {
		t.Fatalf("rbd rm of an image with snapshots: %v %q", err, out)
	}
	// the bench overwrites the image's data; the snapshot keeps it
	b := c.must("rbd", "bench", "file", "--io-type", "write", "--io-size", "64K", "--io-total", "4M", "--io-pattern", "rand")
	if !strings.Contains(b, "bench  type write io_size 65536 io_threads 16 bytes 4194304 pattern random") || !strings.Contains(b, "ops: 64 ") {
		t.Fatalf("rbd bench output:\n%s", b)
	}
	out := filepath.Join(dir, "out")
	c.must("rbd", "export", "file@v1", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatalf("export of the snapshot: %d bytes, differs from the import", len(got))
	}
	if ls := c.must("rbd", "snap", "ls", "file"); !strings.Contains(ls, "v1") || !strings.Contains(ls, "10 MiB") {
		t.Fatalf("rbd snap ls: %q", ls)
	}
	c.must("rbd", "cp", "file@v1", "copy")
	c.must("rbd", "export", "copy", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("a copy of the snapshot differs from it")
	}
	c.must("rbd", "rm", "copy")
	// export-diff / import-diff: the snapshot, then the head since it
	d1, d2, head := filepath.Join(dir, "d1"), filepath.Join(dir, "d2"), filepath.Join(dir, "head")
	c.must("rbd", "export-diff", "file@v1", d1)
	c.must("rbd", "export-diff", "file", d2, "--from-snap", "v1")
	c.must("rbd", "create", "replica", "--size", "1")
	if o := c.must("rbd", "import-diff", d1, "replica"); !strings.Contains(o, "snapshot v1") {
		t.Fatalf("rbd import-diff: %q", o)
	}
	c.must("rbd", "export", "replica", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("an image rebuilt from export-diff differs from the snapshot")
	}
	if o, err := c.run("rbd", "import-diff", d1, "replica"); err == nil || !strings.Contains(o, "exists") {
		t.Fatalf("import-diff of a stream to a snapshot the image has: %v %q", err, o)
	}
	c.must("rbd", "import-diff", d2, "replica")
	c.must("rbd", "export", "replica", out)
	c.must("rbd", "export", "file", head)
	got, err1 := os.ReadFile(out)
	want, err2 := os.ReadFile(head)
	if err := errors.Join(err1, err2); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("an image brought forward by import-diff differs from the head (%v)", err)
	}
	if d := c.must("rbd", "diff", "file", "--from-snap", "v1"); !strings.HasPrefix(d, "Offset") || strings.Count(d, "data") == 0 {
		t.Fatalf("rbd diff after a bench: %q", d)
	}
	c.must("rbd", "snap", "purge", "replica")
	c.must("rbd", "rm", "replica")
	c.must("rbd", "snap", "rollback", "file@v1")
	c.must("rbd", "export", "file", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("after rollback the image differs from its snapshot")
	}
	if o, err := c.run("rbd", "resize", "file", "--size", "4"); err == nil || !strings.Contains(o, "allow-shrink") {
		t.Fatalf("shrink without --allow-shrink: %v %q", err, o)
	}
	c.must("rbd", "resize", "file", "--size", "4", "--allow-shrink")
	if info := c.must("rbd", "info", "file"); !strings.Contains(info, "size 4 MiB in 1 objects") {
		t.Fatalf("after shrinking: %s", info)
	}
	c.must("rbd", "snap", "protect", "file@v1")
	if ls := c.must("rbd", "snap", "ls", "file"); !strings.Contains(ls, "yes") {
		t.Fatalf("rbd snap ls after protect: %q", ls)
	}
	if o, err := c.run("rbd", "snap", "rm", "file@v1"); err == nil || !strings.Contains(o, "protected") {
		t.Fatalf("rbd snap rm of a protected snapshot: %v %q", err, o)
	}
	// a clone of the protected snapshot reads it, until flattened
	c.must("rbd", "clone", "file@v1", "kid")
	if info := c.must("rbd", "info", "kid"); !strings.Contains(info, "parent: rbd/file@v1") || !strings.Contains(info, "overlap: 10 MiB") {
		t.Fatalf("rbd info of a clone:\n%s", info)
	}
	if kids := c.must("rbd", "children", "file@v1"); kids != "rbd/kid\n" {
		t.Fatalf("rbd children: %q", kids)
	}
	if o, err := c.run("rbd", "snap", "unprotect", "file@v1"); err == nil || !strings.Contains(o, "clones") {
		t.Fatalf("rbd snap unprotect of a snapshot with a clone: %v %q", err, o)
	}
	c.must("rbd", "export", "kid", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("the clone differs from its parent snapshot")
	}
	c.must("rbd", "flatten", "kid")
	if info := c.must("rbd", "info", "kid"); strings.Contains(info, "parent:") {
		t.Fatalf("rbd info of a flattened clone:\n%s", info)
	}
	if kids := c.must("rbd", "children", "file@v1"); kids != "" {
		t.Fatalf("rbd children after flatten: %q", kids)
	}
	c.must("rbd", "export", "kid", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("the flattened clone differs from its parent snapshot")
	}
	c.must("rbd", "rm", "kid")
	c.must("rbd", "snap", "unprotect", "file@v1")
	if st := c.must("rbd", "status", "file"); st != "Watchers: none\n" {
		t.Fatalf("rbd status of an image nobody has open: %q", st)
	}
	c.must("rbd", "lock", "add", "file", "mylock")
	locks := c.must("rbd", "lock", "ls", "file")
	m := regexp.MustCompile(`(client\.\S+)\s+mylock`).FindStringSubmatch(locks)
	if m == nil || !strings.Contains(locks, "There is 1 exclusive lock on this image.") {
		t.Fatalf("rbd lock ls: %q", locks)
	}
	if o, err := c.run("rbd", "lock", "add", "file", "other"); err == nil {
		t.Fatalf("a second exclusive lock was taken: %q", o)
	}
	c.must("rbd", "lock", "rm", "file", "mylock", m[1])
	if locks := c.must("rbd", "lock", "ls", "file"); locks != "" {
		t.Fatalf("rbd lock ls after rm: %q", locks)
	}
	c.must("rbd", "snap", "purge", "file")
	c.must("rbd", "mv", "file", "old")
	c.must("rbd", "rm", "old")
	c.must("rbd", "rm", "disk")
	if out := c.must("rbd", "ls"); out != "" {
		t.Fatalf("rbd ls after rm: %q", out)
	}
	if o, err := c.run("rbd", "info", "nope"); err == nil || !strings.Contains(o, "image rbd/nope does not exist") {
		t.Fatalf("rbd info of no image: %v %q", err, o)
	}
}

// TestImportDiffSurvivesKill9: `shoal rbd import-diff` is SIGKILLed
// once it has written part of a stream (fed through a pipe, half of it):
// the image has not taken the stream's end snapshot, and importing the
// whole stream again — which breaks the killed import's exclusive lock —
// gives the source's bytes, the snapshot, and a right object map.
func TestImportDiffSurvivesKill9(t *testing.T) {
	t.Parallel() // waits more than it computes: runs beside another such test (e2e_test.go)
	c := up(t, "--osds", "3", "--set", shortWatchTimeout)
	c.must("pool", "create", "rbd", "--size", "3", "--pg-num", "8")
	dir := t.TempDir()
	payload := make([]byte, 16<<20)
	rand.New(rand.NewSource(3)).Read(payload)
	in, stream, out := filepath.Join(dir, "in"), filepath.Join(dir, "d1"), filepath.Join(dir, "out")
	if err := os.WriteFile(in, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	c.must("rbd", "import", in, "src")
	c.must("rbd", "snap", "create", "src@s1")
	c.must("rbd", "export-diff", "src@s1", stream)
	diff, err := os.ReadFile(stream)
	if err != nil {
		t.Fatal(err)
	}
	c.must("rbd", "create", "dst", "--size", "1", "--object-size", "1M")

	cmd := exec.Command(shoalBin, "rbd", "import-diff", "-", "dst")
	cmd.Env = append(os.Environ(), "SHOAL_CONF="+filepath.Join(c.data, "shoal.conf"))
	pipe, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var msgs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msgs, &msgs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := pipe.Write(diff[:len(diff)/2]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// the import is writing: the object map has its first objects
	if !reached(ctx, func() bool {
		f := strings.Fields(strings.Split(c.must("rbd", "du", "dst"), "\n")[1])
		return f[len(f)-2] != "0" && f[len(f)-1] == "MiB"
	}) {
		t.Fatalf("the import wrote nothing: %s", msgs.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if ls := c.must("rbd", "snap", "ls", "dst"); strings.Contains(ls, "s1") {
		t.Fatalf("an interrupted import took the end snapshot:\n%s", ls)
	}
	c.must("rbd", "import-diff", stream, "dst")
	c.must("rbd", "export", "dst", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("after an import killed and run again the image differs from the source")
	}
	if ls := c.must("rbd", "snap", "ls", "dst"); !strings.Contains(ls, "s1") {
		t.Fatalf("no end snapshot after the import:\n%s", ls)
	}
	c.must("rbd", "object-map", "check", "dst")
}
