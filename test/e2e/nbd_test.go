package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-project/shoal/nbd"
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

// TestRBDNBD exports an image over NBD to the tools the guides use:
// nbdinfo describes it, nbdcopy writes a file into it and reads it back,
// fio's nbd engine runs random writes with crc32c verification; an
// unknown export is refused and the server serves on.
func TestRBDNBD(t *testing.T) {
	for _, tool := range []string{"nbdinfo", "nbdcopy", "fio"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Debian: libnbd-bin, fio; .ci/run installs them)", tool)
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
}

// TestNBDSurvivesKill9: four connections write 4 KiB blocks (each its
// own) through the NBD server. The server is killed with SIGKILL
// mid-write and started again: every block reads back as its last
// acknowledged write, or as the write in flight when the server died —
// whole, never torn. Then the primary OSD of the image's first object is
// killed while the writes go on: none fails, and every block reads back
// as its last write.
func TestNBDSurvivesKill9(t *testing.T) {
	c := up(t, "--osds", "3")
	c.must("pool", "create", "rbd", "--size", "3", "--pg-num", "8")
	c.must("rbd", "create", "disk", "--size", "16")
	prefix := regexp.MustCompile(`block_name_prefix: (\S+)`).FindStringSubmatch(c.must("rbd", "info", "disk"))[1]
	sock := filepath.Join(t.TempDir(), "disk.sock")
	srv := c.serveNBD(sock, "disk")
	const blocks, conns = 1024, 4 // the first 4 MiB: object 0
	content := func(block, gen int) []byte {
		b := make([]byte, 4096)
		rand.New(rand.NewSource(int64(block)<<32 | int64(gen))).Read(b)
		binary.LittleEndian.PutUint64(b, uint64(block)<<32|uint64(gen))
		return b
	}
	var mu sync.Mutex
	acked := map[int]int{}    // block → generation of its last acknowledged write
	inFlight := map[int]int{} // block → generation written when the connection failed
	var writes atomic.Int64
	// run writes through conns connections until stop closes or a write
	// fails; it reports the first failure
	run := func(stop <-chan struct{}) error {
		errs := make(chan error, conns)
		for w := range conns {
			go func() {
				cl, err := nbd.Dial("unix", sock, "disk")
				if err != nil {
					errs <- err
					return
				}
				defer cl.Close()
				rng := rand.New(rand.NewSource(int64(w)))
				for {
					select {
					case <-stop:
						errs <- nil
						return
					default:
					}
					block := rng.Intn(blocks/conns)*conns + w
					mu.Lock()
					gen := acked[block] + 1
					mu.Unlock()
					if err := cl.WriteAt(content(block, gen), uint64(block)*4096, false); err != nil {
						mu.Lock()
						inFlight[block] = gen
						mu.Unlock()
						errs <- err
						return
					}
					mu.Lock()
					acked[block] = gen
					mu.Unlock()
					writes.Add(1)
				}
			}()
		}
		var first error
		for range conns {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	// verify reads every block: its last acknowledged content, or the
	// write in flight (allowIn), or zeros if never written
	verify := func(when string, allowIn bool) {
		cl, err := nbd.Dial("unix", sock, "disk")
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		got := make([]byte, 4096)
		mu.Lock()
		defer mu.Unlock()
		for b := range blocks {
			if err := cl.ReadAt(got, uint64(b)*4096); err != nil {
				t.Fatalf("%s: read block %d: %v", when, b, err)
			}
			want := make([]byte, 4096)
			if g, ok := acked[b]; ok {
				want = content(b, g)
			}
			if bytes.Equal(got, want) {
				continue
			}
			if g, ok := inFlight[b]; ok && allowIn && bytes.Equal(got, content(b, g)) {
				acked[b] = g // the write landed
				continue
			}
			t.Fatalf("%s: block %d holds %x…, want generation %d (in flight: %d)", when, b, got[:8], acked[b], inFlight[b])
		}
		clear(inFlight)
	}
	// 1: SIGKILL of the server in the middle of the writes
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- run(stop) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !reached(ctx, func() bool { return writes.Load() >= 500 }) {
		t.Fatal("500 writes did not finish")
	}
	srv.kill()
	if err := <-done; err == nil {
		t.Fatal("the writes went on with the server killed")
	}
	t.Logf("server killed after %d acknowledged writes", writes.Load())
	c.serveNBD(sock, "disk") // stopped by the test's cleanup
	verify("after SIGKILL of the server", true)
	// 2: SIGKILL of the primary OSD of object 0 while the writes go on
	victim := fmt.Sprintf("osd.%d", c.osdMap("rbd", prefix+".0000000000000000").ActingPrimary)
	stop = make(chan struct{})
	go func() { done <- run(stop) }()
	from := writes.Load()
	if !reached(ctx, func() bool { return writes.Load() >= from+300 }) {
		t.Fatal("300 writes did not finish")
	}
	c.kill9(victim)
	if !reached(ctx, func() bool { return writes.Load() >= from+900 }) { // across the failover
		close(stop)
		t.Fatalf("writes stalled after %s was killed: %v", victim, <-done)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("a write failed across SIGKILL of %s: %v", victim, err)
	}
	verify("after SIGKILL of "+victim, false)
	// the killed server held the image's exclusive lock: the new one
	// broke it (once the dead one's watch expired) and fenced it
	if bl := c.must("osd", "blocklist", "ls"); !strings.Contains(bl, "client.") {
		t.Fatalf("no client blocklisted after the lock holder was killed: %q", bl)
	}
	c.up() // the OSD back: it catches up
	verify(victim+" back", false)
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
// first object is SIGKILLed: no write fails, every block reads back. Then `shoal rbd flatten` is SIGKILLed part-way: the clone
// reads the same, half copied up; flatten run again detaches it, and it
// reads the same with its parent's snapshot removed.
func TestCloneSurvivesKill9(t *testing.T) {
	c := up(t, "--osds", "3")
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

	content := func(block, gen int) []byte {
		b := make([]byte, 4096)
		rand.New(rand.NewSource(int64(block)<<32 | int64(gen))).Read(b)
		return b
	}
	var mu sync.Mutex
	acked := map[int]int{}    // block → generation of its last acknowledged write
	inFlight := map[int]int{} // block → generation written when the connection failed
	var writes atomic.Int64
	// run writes through four connections until stop closes or a write
	// fails; it reports the first failure
	run := func(stop <-chan struct{}) error {
		errs := make(chan error, 4)
		for w := range 4 {
			go func() {
				cl, err := nbd.Dial("unix", sock, "kid")
				if err != nil {
					errs <- err
					return
				}
				defer cl.Close()
				rng := rand.New(rand.NewSource(int64(w) + writes.Load()))
				for {
					select {
					case <-stop:
						errs <- nil
						return
					default:
					}
					block := rng.Intn(blocks/4)*4 + w
					mu.Lock()
					gen := acked[block] + 1
					mu.Unlock()
					if err := cl.WriteAt(content(block, gen), uint64(block)*4096, false); err != nil {
						mu.Lock()
						inFlight[block] = gen
						mu.Unlock()
						errs <- fmt.Errorf("write block %d: %w", block, err)
						return
					}
					mu.Lock()
					acked[block] = gen
					mu.Unlock()
					writes.Add(1)
				}
			}()
		}
		var first error
		for range 4 {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	// verify reads every block: its last acknowledged write, the write
	// in flight when the server died, or its parent's
	verify := func(when string) {
		t.Helper()
		cl, err := nbd.Dial("unix", sock, "kid")
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		got := make([]byte, 4096)
		for b := range blocks {
			if err := cl.ReadAt(got, uint64(b)*4096); err != nil {
				t.Fatalf("%s: read block %d: %v", when, b, err)
			}
			want := parent[b*4096 : (b+1)*4096]
			if g, ok := acked[b]; ok {
				want = content(b, g)
			}
			if bytes.Equal(got, want) {
				continue
			}
			if g, ok := inFlight[b]; ok && bytes.Equal(got, content(b, g)) {
				acked[b] = g // the write landed
				continue
			}
			t.Fatalf("%s: block %d differs (last write: generation %d, in flight %d)", when, b, acked[b], inFlight[b])
		}
		clear(inFlight)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// 1: SIGKILL of the NBD server while copy-ups go on
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- run(stop) }()
	if !reached(ctx, func() bool { return writes.Load() >= 300 }) {
		t.Fatal("300 writes did not finish")
	}
	srv.kill()
	if err := <-done; err == nil {
		t.Fatal("the writes went on with the server killed")
	}
	c.serveNBD(sock, "kid")
	verify("after SIGKILL of the NBD server")

	// 2: SIGKILL of an OSD (the primary of the clone's first object)
	victim := fmt.Sprintf("osd.%d", c.osdMap("rbd", prefix+".0000000000000000").ActingPrimary)
	stop = make(chan struct{})
	go func() { done <- run(stop) }()
	from := writes.Load()
	if !reached(ctx, func() bool { return writes.Load() >= from+300 }) {
		t.Fatal("300 writes did not finish")
	}
	c.kill9(victim)
	if !reached(ctx, func() bool { return writes.Load() >= from+1200 }) {
		close(stop)
		t.Fatalf("writes stalled after %s was killed: %v", victim, <-done)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("across SIGKILL of %s: %v", victim, err)
	}
	verify("after SIGKILL of " + victim)
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
	verify("after SIGKILL of flatten")
	c.must("rbd", "flatten", "kid")
	if info := c.must("rbd", "info", "kid"); strings.Contains(info, "parent:") {
		t.Fatalf("after flatten:\n%s", info)
	}
	c.must("rbd", "snap", "unprotect", "base@gold")
	c.must("rbd", "snap", "rm", "base@gold")
	verify("flattened, its parent's snapshot removed")
	if out, err := c.run("rbd", "object-map", "check", "kid"); err != nil {
		t.Fatalf("rbd object-map check after the kills: %v\n%s", err, out)
	}
}
