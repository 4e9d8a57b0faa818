package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-project/shoal/nbd"
	"github.com/shoal-project/shoal/osdop"
)

// nbdServer is a `shoal rbd nbd serve` process.
type nbdServer struct {
	cmd  *exec.Cmd
	sock string
}

// serveNBD starts `shoal rbd nbd serve ARGS --socket SOCK` and returns
// once it printed that it serves.
func (c *tcluster) serveNBD(sock string, args ...string) *nbdServer {
	c.t.Helper()
	cmd := exec.Command(shoalBin, append(append([]string{"rbd", "nbd", "serve"}, args...), "--socket", sock)...)
	cmd.Env = append(os.Environ(), "SHOAL_CONF="+filepath.Join(c.data, "shoal.conf"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	s := &nbdServer{cmd: cmd, sock: sock}
	c.t.Cleanup(func() {
		s.kill()
		if c.t.Failed() {
			c.t.Logf("--- shoal rbd nbd serve %s (stderr)\n%s", sock, tail(stderr.Bytes(), 4000))
		}
	})
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "serving ") {
		s.kill()
		c.t.Fatalf("shoal rbd nbd serve: %q, %s", sc.Text(), stderr.String())
	}
	go func() { // drain
		for sc.Scan() {
		}
	}()
	return s
}

// tail is b's last n bytes at most.
func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }

// kill sends SIGKILL and reaps the server.
func (s *nbdServer) kill() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Signal(syscall.SIGKILL)
		s.cmd.Wait()
	}
}

// reached polls done — counters the test's writers advance — until it
// holds (true) or ctx ends (false).
func reached(ctx context.Context, done func() bool) bool {
	for !done() {
		if ctx.Err() != nil {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// blockLoad writes 4 KiB blocks of an NBD export through four
// connections, each its own blocks (block % 4 is its index), every write
// a new generation of its block's content, and checks what the export
// holds against what was acknowledged.
type blockLoad struct {
	t            *testing.T
	sock, export string
	blocks       int
	base         func(block int) []byte // a block never written
	mu           sync.Mutex
	acked        map[int]int // block → generation of its last acknowledged write
	inFlight     map[int]int // block → generation written when its connection failed
	writes       atomic.Int64
}

const loadConns = 4

func newBlockLoad(t *testing.T, sock, export string, blocks int, base func(int) []byte) *blockLoad {
	return &blockLoad{t: t, sock: sock, export: export, blocks: blocks, base: base, acked: map[int]int{}, inFlight: map[int]int{}}
}

// blockContent is generation gen of a block: random bytes after the
// block number and generation.
func blockContent(block, gen int) []byte {
	b := make([]byte, 4096)
	rand.New(rand.NewSource(int64(block)<<32 | int64(gen))).Read(b)
	binary.LittleEndian.PutUint64(b, uint64(block)<<32|uint64(gen))
	return b
}

// run writes until stop closes or a write fails; it reports the first
// failure.
func (l *blockLoad) run(stop <-chan struct{}) error {
	errs := make(chan error, loadConns)
	for w := range loadConns {
		go func() {
			cl, err := nbd.Dial("unix", l.sock, l.export)
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			rng := rand.New(rand.NewSource(int64(w) + l.writes.Load()))
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				block := rng.Intn(l.blocks/loadConns)*loadConns + w
				l.mu.Lock()
				gen := l.acked[block] + 1
				l.mu.Unlock()
				if err := cl.WriteAt(blockContent(block, gen), uint64(block)*4096, false); err != nil {
					l.mu.Lock()
					l.inFlight[block] = gen
					l.mu.Unlock()
					errs <- fmt.Errorf("write block %d: %w", block, err)
					return
				}
				l.mu.Lock()
				l.acked[block] = gen
				l.mu.Unlock()
				l.writes.Add(1)
			}
		}()
	}
	var first error
	for range loadConns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// verify reads every block: its last acknowledged content, or the write
// in flight when a connection failed (allowIn), or its base if never
// written.
func (l *blockLoad) verify(when string, allowIn bool) {
	t := l.t
	t.Helper()
	cl, err := nbd.Dial("unix", l.sock, l.export)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := make([]byte, 4096)
	l.mu.Lock()
	defer l.mu.Unlock()
	for b := range l.blocks {
		if err := cl.ReadAt(got, uint64(b)*4096); err != nil {
			t.Fatalf("%s: read block %d: %v", when, b, err)
		}
		want := l.base(b)
		if g, ok := l.acked[b]; ok {
			want = blockContent(b, g)
		}
		if bytes.Equal(got, want) {
			continue
		}
		if g, ok := l.inFlight[b]; ok && allowIn && bytes.Equal(got, blockContent(b, g)) {
			l.acked[b] = g // the write landed
			continue
		}
		t.Fatalf("%s: block %d holds %x…, want generation %d (in flight: %d)", when, b, got[:8], l.acked[b], l.inFlight[b])
	}
	clear(l.inFlight)
}

// serverKill SIGKILLs the NBD server after n acknowledged writes, starts
// another, and verifies: every block is its last acknowledged write or
// the one in flight, whole.
func (l *blockLoad) serverKill(ctx context.Context, c *tcluster, srv *nbdServer, n int64) {
	t := l.t
	t.Helper()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- l.run(stop) }()
	if !reached(ctx, func() bool { return l.writes.Load() >= n }) {
		close(stop)
		t.Fatalf("%d writes did not finish: %v", n, <-done)
	}
	srv.kill()
	if err := <-done; err == nil {
		t.Fatal("the writes went on with the server killed")
	}
	t.Logf("server killed after %d acknowledged writes", l.writes.Load())
	c.serveNBD(l.sock, l.export) // stopped by the test's cleanup
	l.verify("after SIGKILL of the server", true)
}

// osdKill SIGKILLs victim after before more writes and lets across more
// finish: none may fail, and every block reads back as written.
func (l *blockLoad) osdKill(ctx context.Context, c *tcluster, victim string, before, across int64) {
	t := l.t
	t.Helper()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- l.run(stop) }()
	from := l.writes.Load()
	if !reached(ctx, func() bool { return l.writes.Load() >= from+before }) {
		close(stop)
		t.Fatalf("%d writes did not finish: %v", before, <-done)
	}
	c.kill9(victim)
	if !reached(ctx, func() bool { return l.writes.Load() >= from+across }) {
		close(stop)
		t.Fatalf("writes stalled after %s was killed: %v", victim, <-done)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("a write failed across SIGKILL of %s: %v", victim, err)
	}
	l.verify("after SIGKILL of "+victim, false)
}

// TestRBDNBD exports an image over NBD to the tools the guides use:
// nbdinfo describes it, nbdcopy writes a file into it and reads it back,
// fio's nbd engine runs random writes with crc32c verification; an
// unknown export is refused and the server serves on.
func TestRBDNBD(t *testing.T) {
	for _, tool := range []string{"nbdinfo", "nbdcopy", "fio", "qemu-img", "nbdfuse", "fusermount3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Debian: libnbd-bin, fio, qemu-utils, nbdfuse, fuse3; .ci/run installs them)", tool)
		}
	}
	c := up(t, "--osds", "3")
	c.must("pool", "create", "rbd", "--size", "3", "--pg-num", "8")
	c.must("rbd", "create", "disk", "--size", "64")
	sock := filepath.Join(t.TempDir(), "disk.sock")
	c.serveNBD(sock, "disk")
	uri := "nbd+unix:///disk?socket=" + sock
	work := t.TempDir() // fio leaves its verify state in its working directory
	tool := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	info := tool("nbdinfo", uri)
	for _, want := range []string{"export-size: 67108864", "can_multi_conn: true", "can_trim: true", "can_flush: true", "can_fua: true"} {
		if !strings.Contains(info, want) {
			t.Fatalf("nbdinfo lacks %q:\n%s", want, info)
		}
	}
	if out, err := exec.Command("nbdinfo", "nbd+unix:///nope?socket="+sock).CombinedOutput(); err == nil {
		t.Fatalf("nbdinfo of an unknown export succeeded:\n%s", out)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	payload := make([]byte, 64<<20)
	rand.New(rand.NewSource(1)).Read(payload[:24<<20]) // the rest zeros: nbdcopy sends them as zeroing
	os.WriteFile(in, payload, 0o644)
	tool("nbdcopy", in, uri)
	tool("nbdcopy", uri, out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("nbdcopy into the image and back: the data differs")
	}
	res := tool("fio", "--name=verify", "--ioengine=nbd", "--uri="+uri, "--rw=randwrite", "--bs=4k", "--iodepth=16",
		"--size=16M", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1")
	if !strings.Contains(res, "err= 0") {
		t.Fatalf("fio:\n%s", res)
	}

	// qemu-img: a raw file into the image and back out, then compared
	rand.New(rand.NewSource(2)).Read(payload[:8<<20])
	os.WriteFile(in, payload, 0o644)
	tool("qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", in, uri)
	tool("qemu-img", "convert", "-f", "raw", "-O", "raw", uri, out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("qemu-img convert into the image and back: the data differs")
	}
	if cmp := tool("qemu-img", "compare", "-f", "raw", "-F", "raw", in, uri); !strings.Contains(cmp, "Images are identical") {
		t.Fatalf("qemu-img compare: %s", cmp)
	}

	// nbdfuse: the image as a file; a write through it lands in the image
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mnt, 0o755)
	fuse := exec.Command("nbdfuse", filepath.Join(mnt, "disk"), uri)
	var fuseOut bytes.Buffer
	fuse.Stdout, fuse.Stderr = &fuseOut, &fuseOut
	if err := fuse.Start(); err != nil {
		t.Fatal(err)
	}
	unmount := func() {
		exec.Command("fusermount3", "-u", mnt).Run()
		fuse.Wait()
	}
	defer unmount()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !reached(ctx, func() bool { st, err := os.Stat(filepath.Join(mnt, "disk")); return err == nil && st.Size() == 64<<20 }) {
		t.Fatalf("nbdfuse did not mount the image: %s", fuseOut.String())
	}
	f, err := os.OpenFile(filepath.Join(mnt, "disk"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 1<<20)
	if _, err := f.ReadAt(got, 3<<20); err != nil || !bytes.Equal(got, payload[3<<20:4<<20]) {
		t.Fatalf("a read through nbdfuse differs (%v)", err)
	}
	block := bytes.Repeat([]byte("nbdfuse!"), 8192) // 64 KiB
	if _, err := f.WriteAt(block, 40<<20); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		t.Fatal(err)
	}
	unmount()
	copy(payload[40<<20:], block)
	c.must("rbd", "export", "disk", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatal("after a write through nbdfuse the image differs")
	}
}

// shortWatchTimeout sets osd_client_watch_timeout to 10 s (from 30) in a
// new cluster (shoal up --set): the watch of a lock holder killed by the
// test expires, and its exclusive lock can be broken, sooner. Live
// watchers long-poll their primary, so 10 s still spans many of their
// polls on a loaded machine.
const shortWatchTimeout = "osd_client_watch_timeout=10"

// TestNBDSurvivesKill9: four connections write 4 KiB blocks (each its
// own) through the NBD server. The server is killed with SIGKILL
// mid-write and started again: every block reads back as its last
// acknowledged write, or as the write in flight when the server died —
// whole, never torn. Then the primary OSD of the image's first object is
// killed while the writes go on: none fails, and every block reads back
// as its last write. All the blocks are in that one object, so its
// primary has several writes to it in flight at once (pipelined: the
// OSDs' op_w_pipelined counts them).
func TestNBDSurvivesKill9(t *testing.T) {
	t.Parallel() // waits more than it computes: runs beside another such test (e2e_test.go)
	c := up(t, "--osds", "3", "--set", shortWatchTimeout)
	c.must("pool", "create", "rbd", "--size", "3", "--pg-num", "8")
	c.must("rbd", "create", "disk", "--size", "16")
	prefix := regexp.MustCompile(`block_name_prefix: (\S+)`).FindStringSubmatch(c.must("rbd", "info", "disk"))[1]
	sock := filepath.Join(t.TempDir(), "disk.sock")
	srv := c.serveNBD(sock, "disk")
	l := newBlockLoad(t, sock, "disk", 1024, func(int) []byte { return make([]byte, 4096) }) // the first 4 MiB: object 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l.serverKill(ctx, c, srv, 500)
	victim := fmt.Sprintf("osd.%d", c.osdMap("rbd", prefix+".0000000000000000").ActingPrimary)
	l.osdKill(ctx, c, victim, 300, 900)
	var perf []osdop.Stats
	if err := json.Unmarshal([]byte(c.must("osd", "perf", "--format", "json")), &perf); err != nil {
		t.Fatal(err)
	}
	var pipelined uint64
	for _, st := range perf {
		pipelined += st.Perf.OpWPipelined
	}
	if pipelined == 0 {
		t.Fatal("no write was built behind another in flight to the same object: the kill did not test pipelined writes")
	}
	// the killed server held the image's exclusive lock: the new one
	// broke it (once the dead one's watch expired) and fenced it
	if bl := c.must("osd", "blocklist", "ls"); !strings.Contains(bl, "client.") {
		t.Fatalf("no client blocklisted after the lock holder was killed: %q", bl)
	}
	c.up() // the OSD back: it catches up
	l.verify(victim+" back", false)
	// the object map misses no object the kills left
	if out, err := c.run("rbd", "object-map", "check", "disk"); err != nil {
		t.Fatalf("rbd object-map check after the kills: %v\n%s", err, out)
	}
}

// TestRBDSnapshotUnderLoad: two NBD servers (two processes) have one
// image open, each with a writer filling its own region block after
// block; a third process takes a snapshot meanwhile. Each server learns
// of it through the header's watch before the snapshot command returns,
// so the snapshot is a consistent point of both writers: in each region
// the blocks written form a prefix (no later block without every earlier
// one), holding at least what was acknowledged before the command
// started and at most what was acknowledged by its return, plus the one
// write then in flight. The head keeps every acknowledged write.
func TestRBDSnapshotUnderLoad(t *testing.T) {
	c := up(t, "--osds", "3")
	c.must("pool", "create", "rbd", "--size", "3", "--pg-num", "8")
	c.must("rbd", "create", "disk", "--size", "16")
	dir := t.TempDir()
	socks := []string{filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")}
	for _, s := range socks {
		c.serveNBD(s, "disk")
	}
	const region = 1024 // blocks of 4 KiB: writer w fills blocks [w*2*region, w*2*region+region)
	content := func(block int) []byte {
		b := make([]byte, 4096)
		rand.New(rand.NewSource(int64(block))).Read(b)
		return b
	}
	var acked [2]atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for w, sock := range socks {
		go func() {
			cl, err := nbd.Dial("unix", sock, "disk")
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			for i := range region {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				block := w*2*region + i
				if err := cl.WriteAt(content(block), uint64(block)*4096, false); err != nil {
					errs <- err
					return
				}
				acked[w].Add(1)
			}
			errs <- nil
		}()
	}
	waitAcked := func(n int64) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if !reached(ctx, func() bool { return acked[0].Load() >= n && acked[1].Load() >= n }) {
			t.Fatalf("writers stalled at %d, %d blocks", acked[0].Load(), acked[1].Load())
		}
	}
	waitAcked(150)
	before := [2]int64{acked[0].Load(), acked[1].Load()}
	c.must("rbd", "snap", "create", "disk@mid")
	after := [2]int64{acked[0].Load(), acked[1].Load()}
	waitAcked(min(after[0]+100, region))
	close(stop)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("acknowledged before the snapshot %v, by its return %v", before, after)
	check := func(spec string, lo, hi [2]int64) {
		path := filepath.Join(dir, "export")
		c.must("rbd", "export", spec, path)
		img, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for w := range 2 {
			n := int64(0) // the prefix of written blocks
			for n < region && bytes.Equal(img[(int64(w*2*region)+n)*4096:][:4096], content(w*2*region+int(n))) {
				n++
			}
			for i := n; i < region; i++ {
				if blk := img[(int64(w*2*region)+i)*4096:][:4096]; !bytes.Equal(blk, make([]byte, 4096)) {
					t.Fatalf("%s: writer %d's block %d is written but block %d is not: not a consistent point", spec, w, i, n)
				}
			}
			if n < lo[w] || n > hi[w] {
				t.Fatalf("%s: writer %d's region holds %d blocks, want %d to %d", spec, w, n, lo[w], hi[w])
			}
		}
	}
	check("disk@mid", before, [2]int64{after[0] + 1, after[1] + 1})
	final := [2]int64{acked[0].Load(), acked[1].Load()}
	check("disk", final, [2]int64{final[0] + 1, final[1] + 1})
}

// TestCloneSurvivesKill9: copy-up and flatten are crash-safe. A clone
// of a 16 MiB image of random data, in 32 KiB objects (so most first
// writes copy up), is written through NBD by four connections while the
// NBD server is SIGKILLed: every block reads back as its last
// acknowledged write, the write in flight, or (never written) its
// parent's — a copy-up is never half done. Then the primary OSD of its
// first object is SIGKILLed: no write fails, every block reads back.
// Then `shoal rbd flatten` is SIGKILLed part-way: the clone reads the
// same, half copied up; flatten run again detaches it, and it
// reads the same with its parent's snapshot removed.
func TestCloneSurvivesKill9(t *testing.T) {
	t.Parallel() // waits more than it computes: runs beside another such test (e2e_test.go)
	c := up(t, "--osds", "3", "--set", shortWatchTimeout)
	c.must("pool", "create", "rbd", "--size", "3", "--pg-num", "8")
	const blocks = 4096 // 16 MiB of 4 KiB blocks
	parent := make([]byte, blocks*4096)
	rand.New(rand.NewSource(7)).Read(parent)
	file := filepath.Join(t.TempDir(), "base.img")
	if err := os.WriteFile(file, parent, 0o644); err != nil {
		t.Fatal(err)
	}
	c.must("rbd", "import", file, "base")
	c.must("rbd", "snap", "create", "base@gold")
	c.must("rbd", "snap", "protect", "base@gold")
	c.must("rbd", "clone", "base@gold", "kid", "--object-size", "32K")
	prefix := regexp.MustCompile(`block_name_prefix: (\S+)`).FindStringSubmatch(c.must("rbd", "info", "kid"))[1]
	sock := filepath.Join(t.TempDir(), "kid.sock")
	srv := c.serveNBD(sock, "kid")
	l := newBlockLoad(t, sock, "kid", blocks, func(b int) []byte { return parent[b*4096 : (b+1)*4096] })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// 1: SIGKILL of the NBD server while copy-ups go on; 2: of an OSD
	l.serverKill(ctx, c, srv, 300)
	victim := fmt.Sprintf("osd.%d", c.osdMap("rbd", prefix+".0000000000000000").ActingPrimary)
	l.osdKill(ctx, c, victim, 300, 1200)
	c.up()

	// flatten, killed once it reported 30 %
	cmd := exec.Command(shoalBin, "rbd", "flatten", "kid")
	cmd.Env = append(os.Environ(), "SHOAL_CONF="+filepath.Join(c.data, "shoal.conf"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "flatten: 30%") {
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if info := c.must("rbd", "info", "kid"); !strings.Contains(info, "parent: rbd/base@gold") {
		t.Fatalf("flatten finished before it was killed (make the clone's objects smaller):\n%s", info)
	}
	l.verify("after SIGKILL of flatten", false)
	c.must("rbd", "flatten", "kid")
	if info := c.must("rbd", "info", "kid"); strings.Contains(info, "parent:") {
		t.Fatalf("after flatten:\n%s", info)
	}
	c.must("rbd", "snap", "unprotect", "base@gold")
	c.must("rbd", "snap", "rm", "base@gold")
	l.verify("flattened, its parent's snapshot removed", false)
	if out, err := c.run("rbd", "object-map", "check", "kid"); err != nil {
		t.Fatalf("rbd object-map check after the kills: %v\n%s", err, out)
	}
}

// TestNBDFioVerifyKill9 is the block guide's crash check with fio's own
// verification (crc32c in every 4 KiB block, fio's verify state). fio
// writes random blocks through `shoal rbd nbd serve`; the server is
// SIGKILLed mid-run; a new server is started and fio, replaying its
// saved state, reads back every write it saw acknowledged (those that
// failed in flight when the server died may or may not have landed). Then, on a
// second image, the primary OSD of its first object is SIGKILLed while
// fio writes: fio sees no error, and its verify pass finds every block.
func TestNBDFioVerifyKill9(t *testing.T) {
	c := up(t, "--osds", "3")
	c.must("pool", "create", "rbd", "--size", "3", "--pg-num", "8")
	work := t.TempDir() // fio's verify state lives in its working directory
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fio := func(image, sock string, args ...string) *exec.Cmd {
		cmd := exec.Command("fio", append([]string{"--name=crash", "--ioengine=nbd", "--uri=nbd+unix:///" + image + "?socket=" + sock,
			"--rw=randwrite", "--bs=4k", "--iodepth=16", "--size=16M", "--verify=crc32c", "--verify_fatal=1"}, args...)...)
		cmd.Dir = work
		return cmd
	}
	// written waits until the image's object map holds n bytes' worth of
	// objects (64 KiB each: a few writes per object at most): rbd du's
	// USED, the last column
	written := func(image string, n uint64) {
		t.Helper()
		unit := map[string]uint64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}
		if !reached(ctx, func() bool {
			f := strings.Fields(strings.Split(c.must("rbd", "du", image), "\n")[1])
			v, _ := strconv.ParseFloat(f[len(f)-2], 64)
			return uint64(v*float64(unit[f[len(f)-1]])) >= n
		}) {
			t.Fatalf("fio did not write %d bytes into %s", n, image)
		}
	}

	// 1: SIGKILL of the NBD server under fio
	c.must("rbd", "create", "disk", "--size", "16", "--object-size", "64K")
	sock := filepath.Join(t.TempDir(), "disk.sock")
	srv := c.serveNBD(sock, "disk")
	var out bytes.Buffer
	// the completion latency log, with offsets, lists every write fio saw
	// acknowledged, and only those (failed ones are not logged)
	w := fio("disk", sock, "--do_verify=0", "--verify_state_save=1", "--time_based", "--runtime=120",
		"--write_lat_log=acked", "--log_offset=1")
	w.Stdout, w.Stderr = &out, &out
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	written("disk", 12<<20) // 192 of the 256 objects: some 350 writes
	srv.kill()
	if err := w.Wait(); err == nil {
		t.Fatalf("fio went on with the server killed:\n%s", out.String())
	}
	c.serveNBD(sock, "disk")
	// fio's verify pass may check writes that failed when the server died
	// (in flight: they may or may not have landed); every block fio saw
	// acknowledged must verify
	acked := map[string]bool{}
	lat, err := os.ReadFile(filepath.Join(work, "acked_clat.1.log"))
	if err != nil {
		t.Fatalf("fio's completion log: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(lat)), "\n") {
		// time, latency, direction, block size, offset[, priority]
		if f := strings.Split(line, ", "); len(f) >= 5 && f[2] == "1" {
			acked[f[4]] = true
		}
	}
	if len(acked) < 100 {
		t.Fatalf("fio's completion log lists %d writes:\n%s", len(acked), lat)
	}
	inFlight := len(regexp.MustCompile(`write offset=(\d+)`).FindAllStringSubmatch(out.String(), -1))
	res, _ := fio("disk", sock, "--verify_only", "--verify_state_load=1", "--verify_fatal=0").CombinedOutput()
	bad := regexp.MustCompile(`(?m)^verify: .* offset (\d+), length`).FindAllStringSubmatch(string(res), -1)
	for _, m := range bad {
		if acked[m[1]] {
			t.Fatalf("fio's verify after SIGKILL of the server: block at %s, acknowledged, is wrong\n%s\nthe write run:\n%s", m[1], res, out.String())
		}
	}
	verified := 0
	if m := regexp.MustCompile(`issued rwts: total=(\d+),`).FindStringSubmatch(string(res)); m != nil {
		verified, _ = strconv.Atoi(m[1])
	}
	if verified < 100 {
		t.Fatalf("fio verified %v blocks after SIGKILL of the server\n%s", verified, res)
	}
	t.Logf("fio verified %d blocks after SIGKILL of the server (%d writes acknowledged); %d failed in flight, %d blocks it checked did not land", verified, len(acked), inFlight, len(bad))

	// 2: SIGKILL of an OSD under fio
	c.must("rbd", "create", "disk2", "--size", "16", "--object-size", "64K")
	prefix := regexp.MustCompile(`block_name_prefix: (\S+)`).FindStringSubmatch(c.must("rbd", "info", "disk2"))[1]
	sock2 := filepath.Join(t.TempDir(), "disk2.sock")
	c.serveNBD(sock2, "disk2")
	out.Reset()
	w = fio("disk2", sock2, "--do_verify=1", "--number_ios=3000")
	w.Stdout, w.Stderr = &out, &out
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	written("disk2", 2<<20)
	victim := fmt.Sprintf("osd.%d", c.osdMap("rbd", prefix+".0000000000000000").ActingPrimary)
	c.kill9(victim)
	if err := w.Wait(); err != nil || !strings.Contains(out.String(), "err= 0") {
		t.Fatalf("fio across SIGKILL of %s: %v\n%s", victim, err, out.String())
	}
}
