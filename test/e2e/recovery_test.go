package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// objectMap is `shoal osd map --format json`.
type objectMap struct {
	PGID          string  `json:"pgid"`
	Acting        []int32 `json:"acting"`
	ActingPrimary int32   `json:"acting_primary"`
}

func (c *tcluster) osdMap(pool, object string) objectMap {
	c.t.Helper()
	var om objectMap
	if err := json.Unmarshal([]byte(c.must("osd", "map", pool, object, "--format", "json")), &om); err != nil {
		c.t.Fatal(err)
	}
	return om
}

// pgStamps is a PG's scrub stamps from `shoal pg ls`.
func (c *tcluster) pgStamps(pgid string) (scrub, deep time.Time, state string) {
	c.t.Helper()
	var pgs []struct {
		PGID          string    `json:"pgid"`
		State         string    `json:"state"`
		LastScrub     time.Time `json:"last_scrub_stamp"`
		LastDeepScrub time.Time `json:"last_deep_scrub_stamp"`
	}
	if err := json.Unmarshal([]byte(c.must("pg", "ls", "--format", "json")), &pgs); err != nil {
		c.t.Fatal(err)
	}
	for _, pg := range pgs {
		if pg.PGID == pgid {
			return pg.LastScrub, pg.LastDeepScrub, pg.State
		}
	}
	c.t.Fatalf("pg ls does not list %s", pgid)
	return
}

// deepScrub runs `shoal pg CMD PGID` (deep-scrub or repair) and waits
// until the PG's deep-scrub stamp passes.
func (c *tcluster) deepScrub(cmd, pgid string) {
	c.t.Helper()
	_, before, _ := c.pgStamps(pgid)
	out := c.must("pg", cmd, pgid)
	if !strings.Contains(out, "instructing pg "+pgid) {
		c.t.Fatalf("pg %s: %q", cmd, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, deep, _ := c.pgStamps(pgid); deep.After(before) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("pg %s %s did not finish in 60 s", cmd, pgid)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// findOnDisk returns the offset of the 4 KiB block holding want in the
// data file at path, reading only its allocated extents (SEEK_DATA).
func findOnDisk(t *testing.T, path string, want []byte) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var off int64
	for {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if err != nil {
			t.Fatalf("%s: no extent holds the block", path)
		}
		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			t.Fatal(err)
		}
		for pos := data &^ 4095; pos < hole; pos += int64(len(buf)) {
			n, err := f.ReadAt(buf, pos)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			for i := 0; i+len(want) <= n; i += 4096 {
				if bytes.Equal(buf[i:i+len(want)], want) {
					return pos + int64(i)
				}
			}
		}
		off = hole
	}
}

// TestDeepScrubRepairsCorruptReplica flips a byte of one replica's copy
// on its OSD's data device: a deep scrub finds the copy unreadable (its
// block checksum fails), health turns HEALTH_ERR naming the PG, `pg
// list-inconsistent` names the object and the OSD, and `pg repair`
// rewrites the copy from a good one; a deep scrub after it is clean.
func TestDeepScrubRepairsCorruptReplica(t *testing.T) {
	c := up(t, "--osds", "3")
	data := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	file := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c.must("rados", "-p", "data", "put", "victim", file)
	om := c.osdMap("data", "victim")
	replica := om.Acting[1]
	dev := filepath.Join(c.data, fmt.Sprintf("osd.%d", replica), "store", "block")
	block := data[64<<10 : 68<<10]
	off := findOnDisk(t, dev, block)
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{block[100] ^ 0x5a}, off+100); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Logf("flipped a byte of %s on osd.%d at offset %d of its device (pg %s, acting %v)", "victim", replica, off+100, om.PGID, om.Acting)

	c.deepScrub("deep-scrub", om.PGID)
	c.waitHealth("HEALTH_ERR", 30*time.Second)
	detail, _ := c.run("health", "detail")
	for _, want := range []string{"Possible data damage: 1 pgs inconsistent", "1 scrub errors", "pg " + om.PGID + " is active+clean+inconsistent", "shoal pg repair " + om.PGID} {
		if !strings.Contains(detail, want) {
			t.Fatalf("health detail lacks %q:\n%s", want, detail)
		}
	}
	var list struct {
		Inconsistents []struct {
			Object  string `json:"object"`
			AuthOSD int32  `json:"selected_osd"`
			Shards  []struct {
				OSD    int32    `json:"osd"`
				Errors []string `json:"errors"`
			} `json:"shards"`
		} `json:"inconsistents"`
	}
	out := c.must("pg", "list-inconsistent", om.PGID)
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Inconsistents) != 1 || list.Inconsistents[0].Object != "victim" || list.Inconsistents[0].AuthOSD == replica {
		t.Fatalf("list-inconsistent:\n%s", out)
	}
	for _, sh := range list.Inconsistents[0].Shards {
		if bad := len(sh.Errors) > 0; bad != (sh.OSD == replica) || (bad && sh.Errors[0] != "read_error") {
			t.Fatalf("list-inconsistent: osd.%d errors %v (the corrupt copy is on osd.%d):\n%s", sh.OSD, sh.Errors, replica, out)
		}
	}

	c.deepScrub("repair", om.PGID)
	c.waitHealth("HEALTH_OK", 30*time.Second)
	c.deepScrub("deep-scrub", om.PGID)
	if out := c.must("pg", "list-inconsistent", om.PGID); !strings.Contains(out, `"inconsistents": []`) {
		t.Fatalf("deep scrub after repair:\n%s", out)
	}
	got := filepath.Join(t.TempDir(), "got")
	c.must("rados", "-p", "data", "get", "victim", got)
	if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("victim after repair: %v (%d bytes)", err, len(b))
	}
	if _, _, state := c.pgStamps(om.PGID); state != "active+clean" {
		t.Fatalf("pg %s after repair: %s", om.PGID, state)
	}
}

// load is a verifying client load: writers overwrite their own objects
// with numbered versions; readers check that every read returns the last
// acknowledged version of the object or one written after it — never an
// older one, never torn bytes. Every op must succeed (the client retries
// across map changes within its 90 s deadline).
type load struct {
	t       *testing.T
	p       *client.Pool
	mu      sync.Mutex
	acked   map[string]int // object → newest acknowledged version
	tried   map[string]int // object → newest version sent
	names   []string       // objects with an acknowledged version
	errs    []error
	ops     atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	stopped bool
}

func loadContent(oid string, v int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("%s v%d|", oid, v)), 1+v*37%300)
}

func loadVersion(oid string, b []byte) (int, bool) {
	var v int
	if _, err := fmt.Sscanf(string(b), oid+" v%d|", &v); err != nil {
		return 0, false
	}
	return v, bytes.Equal(b, loadContent(oid, v))
}

func startLoad(ctx context.Context, t *testing.T, p *client.Pool, writers, readers, objects int) *load {
	l := &load{t: t, p: p, acked: map[string]int{}, tried: map[string]int{}, stop: make(chan struct{})}
	stopped := func() bool {
		select {
		case <-l.stop:
			return true
		default:
			return false
		}
	}
	for w := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; !stopped(); i++ {
				oid := fmt.Sprintf("load-%d-%d", w, i%objects)
				l.mu.Lock()
				l.tried[oid]++
				v := l.tried[oid]
				l.mu.Unlock()
				wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
				err := p.WriteFull(wctx, oid, loadContent(oid, v))
				cancel()
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, fmt.Errorf("write %s v%d: %w", oid, v, err))
				} else {
					if l.acked[oid] == 0 {
						l.names = append(l.names, oid)
					}
					l.acked[oid] = max(l.acked[oid], v)
				}
				l.mu.Unlock()
				l.ops.Add(1)
			}
		}()
	}
	for r := range readers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(r), 7))
			for !stopped() {
				l.mu.Lock()
				if len(l.names) == 0 {
					l.mu.Unlock()
					runtime.Gosched()
					continue
				}
				oid := l.names[rnd.IntN(len(l.names))]
				lo := l.acked[oid]
				l.mu.Unlock()
				rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
				b, err := p.Read(rctx, oid, 0, 0)
				cancel()
				l.mu.Lock()
				hi := l.tried[oid]
				v, whole := loadVersion(oid, b)
				switch {
				case err != nil:
					l.errs = append(l.errs, fmt.Errorf("read %s: %w", oid, err))
				case !whole || v < lo || v > hi:
					l.errs = append(l.errs, fmt.Errorf("read %s: version %d (whole %v), acknowledged %d before the read, %d sent", oid, v, whole, lo, hi))
				}
				l.mu.Unlock()
				l.ops.Add(1)
			}
		}()
	}
	t.Cleanup(l.finish)
	return l
}

// waitOps waits until n more ops have completed.
func (l *load) waitOps(ctx context.Context, n int64, when string) {
	l.t.Helper()
	want := l.ops.Load() + n
	for l.ops.Load() < want {
		l.mu.Lock()
		errs := len(l.errs)
		l.mu.Unlock()
		if errs > 0 || ctx.Err() != nil {
			l.finish()
			l.t.Fatalf("%s: %d of %d ops done, %d errors", when, l.ops.Load(), want, errs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finish stops the load and fails the test on any error.
func (l *load) finish() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	l.mu.Unlock()
	close(l.stop)
	l.wg.Wait()
	for i, err := range l.errs {
		if i == 5 {
			l.t.Errorf("... and %d more errors", len(l.errs)-5)
			break
		}
		l.t.Error(err)
	}
}

// verify reads every object: each holds its last acknowledged version (or
// a later one sent), whole.
func (l *load) verify(ctx context.Context, when string) {
	l.t.Helper()
	for oid, lo := range l.acked {
		b, err := l.p.Read(ctx, oid, 0, 0)
		v, whole := loadVersion(oid, b)
		if err != nil || !whole || v < lo || v > l.tried[oid] {
			l.t.Fatalf("%s: %s: %v, version %d (whole %v), acknowledged %d", when, oid, err, v, whole, lo)
		}
	}
}

// waitMap waits until the client's map satisfies ok.
func waitMap(ctx context.Context, t *testing.T, conn *client.Conn, what string, ok func(*osdmap.Map) bool) {
	t.Helper()
	for !ok(conn.Map()) {
		if ctx.Err() != nil {
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clusterStatus is `shoal status --format json`.
type clusterStatus struct {
	Health   string         `json:"health"`
	PGs      int            `json:"num_pgs"`
	PGStates map[string]int `json:"pgs_by_state"`
	Objects  int            `json:"num_objects"`
}

func (c *tcluster) status() clusterStatus {
	c.t.Helper()
	var st clusterStatus
	if err := json.Unmarshal([]byte(c.must("status", "--format", "json")), &st); err != nil {
		c.t.Fatal(err)
	}
	return st
}

// poolObjects sums the object counts of the pool's PGs as their
// primaries report them, and lists the PGs whose count differs from a
// listing of their objects.
func (c *tcluster) poolObjects(ctx context.Context, conn *client.Conn, p *client.Pool) (int, []string) {
	c.t.Helper()
	listed := map[string]int{}
	m := conn.Map()
	if err := p.List(ctx, func(name string) bool {
		pg, _ := m.ObjectToPG(p.ID(), name, "")
		listed[pg.String()]++
		return true
	}); err != nil {
		c.t.Fatal(err)
	}
	var pgs []osdop.PGStats
	if err := json.Unmarshal([]byte(c.must("pg", "ls", "--format", "json")), &pgs); err != nil {
		c.t.Fatal(err)
	}
	n := 0
	var wrong []string
	for _, pg := range pgs {
		if !strings.HasPrefix(pg.PGID, fmt.Sprintf("%d.", p.ID())) {
			continue
		}
		n += int(pg.Objects)
		if int(pg.Objects) != listed[pg.PGID] {
			wrong = append(wrong, fmt.Sprintf("pg %s counts %d, lists %d", pg.PGID, pg.Objects, listed[pg.PGID]))
		}
	}
	return n, wrong
}

// waitClean waits until every PG is active+clean.
func (c *tcluster) waitClean(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := c.status()
		if st.PGs > 0 && st.PGStates["active+clean"] == st.PGs {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("pgs not all active+clean after %v: %v", timeout, st.PGStates)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deepScrubAll deep-scrubs every PG of the pool and fails on any
// inconsistency: the members of each PG hold the same objects and bytes.
func deepScrubAll(ctx context.Context, t *testing.T, conn *client.Conn, pool int64) {
	t.Helper()
	p, err := conn.Map().Pool(pool)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for seed := range p.PGNum {
		if _, err := conn.PGCommand(ctx, osdmap.PGID{Pool: pool, Seed: seed}.String(), "deep-scrub"); err != nil {
			t.Fatal(err)
		}
	}
	for seed := range p.PGNum {
		pgid := osdmap.PGID{Pool: pool, Seed: seed}
		for {
			mp, err := conn.Map().MapPG(pgid)
			if err != nil {
				t.Fatal(err)
			}
			st, err := conn.OSDStats(ctx, mp.ActingPrimary)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(st.PGs, func(s osdop.PGStats) bool { return s.PGID == pgid.String() })
			if i >= 0 && st.PGs[i].LastDeepScrub.After(start) {
				if st.PGs[i].ScrubErrors != 0 {
					b, _ := conn.PGCommand(ctx, pgid.String(), "list-inconsistent")
					t.Fatalf("pg %s: %d scrub errors: %s", pgid, st.PGs[i].ScrubErrors, b)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("deep scrub of %s: %v", pgid, ctx.Err())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// checkLoad stops the load and checks what it wrote: no op failed, every
// acknowledged write reads back, the pool's PGs count exactly the objects
// written, and a deep scrub of every PG finds their copies identical. It
// reports whether the test may go on.
func (c *tcluster) checkLoad(ctx context.Context, l *load, conn *client.Conn, p *client.Pool, when string) bool {
	t := c.t
	t.Helper()
	l.finish()
	if t.Failed() {
		return false
	}
	l.verify(ctx, when)
	if n, wrong := c.poolObjects(ctx, conn, p); n != len(l.acked) {
		t.Fatalf("%s: the pool's PGs count %d objects, %d were written: %v", when, n, len(l.acked), wrong)
	}
	deepScrubAll(ctx, t, conn, p.ID())
	return !t.Failed()
}

// TestOSDLossRecoveryAndReturn: under a verifying read/write load on 4
// OSDs, kill -9 one. Its peers report it and the MONs mark it down (I/O
// goes on), then out after mon_osd_down_out_interval; its PGs recover
// onto the others until every PG is active+clean again and the cluster is
// healthy with the OSD still down; restarted, it is
// marked in and rejoins. No acknowledged write is lost or rolled back, no
// read is stale, the object count is exact, and a deep scrub of every PG
// finds its copies identical.
func TestOSDLossRecoveryAndReturn(t *testing.T) {
	c := up(t, "--osds", "4")
	c.must("config", "set", "global", "mon_osd_down_out_interval", "5")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, p := c.connPool(ctx)
	l := startLoad(ctx, t, p, 4, 2, 50)
	l.waitOps(ctx, 400, "before the kill")
	killed := time.Now()
	c.kill9("osd.1")
	waitMap(ctx, t, conn, "osd.1 down", func(m *osdmap.Map) bool { return !m.OSDs[1].Up })
	down := time.Since(killed)
	l.waitOps(ctx, 300, "with osd.1 down")
	waitMap(ctx, t, conn, "osd.1 out", func(m *osdmap.Map) bool { return !m.OSDs[1].In() && m.OSDs[1].AutoOut })
	out := time.Since(killed)
	c.waitClean(3 * time.Minute)
	clean := time.Since(killed)
	// down and out, its data recovered elsewhere: healthy, as Ceph's
	// OSD_DOWN counts only OSDs down and in
	c.waitHealth("HEALTH_OK", 30*time.Second)
	l.waitOps(ctx, 300, "after recovery")
	c.up() // restarts osd.1: marked in again, its PGs map back to it
	waitMap(ctx, t, conn, "osd.1 up and in", func(m *osdmap.Map) bool { return m.OSDs[1].Up && m.OSDs[1].In() })
	c.waitHealth("HEALTH_OK", 2*time.Minute)
	l.waitOps(ctx, 300, "after osd.1 returned")
	if !c.checkLoad(ctx, l, conn, p, "after osd.1 returned") {
		return
	}
	t.Logf("%d ops; osd.1 marked down %v after kill -9, out after %v, all PGs active+clean after %v",
		l.ops.Load(), down.Round(time.Millisecond), out.Round(time.Millisecond), clean.Round(time.Millisecond))
}

// TestBelowMinSize: with two of a 3-replica pool's three OSDs killed,
// every PG is below min_size: writes are held and fail at their deadline
// with an error that says so; no acknowledged write is lost, and with one
// OSD back the pool serves reads and writes again.
func TestBelowMinSize(t *testing.T) {
	c := up(t, "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn, p := c.connPool(ctx)
	model := map[string][]byte{}
	for i := range 60 {
		oid := fmt.Sprintf("m%d", i)
		model[oid] = loadContent(oid, i+1)
		if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
			t.Fatal(err)
		}
	}
	c.kill9("osd.1")
	c.kill9("osd.2")
	waitMap(ctx, t, conn, "osd.1 and osd.2 down", func(m *osdmap.Map) bool { return !m.OSDs[1].Up && !m.OSDs[2].Up })
	wctx, wcancel := context.WithTimeout(ctx, 8*time.Second)
	err := p.WriteFull(wctx, "held", []byte("not acknowledged"))
	wcancel()
	if !errors.Is(err, client.ErrTimeout) || !strings.Contains(err.Error(), "below min_size 2") {
		t.Fatalf("write with 1 of 3 OSDs up: %v, want a timeout saying the PG is below min_size", err)
	}
	t.Logf("held write: %v", err)
	// every copy but one of each object is missing, and status says so
	var st struct {
		Degraded int64 `json:"degraded_objects"`
		Copies   int64 `json:"degraded_total"`
	}
	for st.Degraded == 0 {
		if err := json.Unmarshal([]byte(c.must("status", "--format", "json")), &st); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("status never counted degraded objects")
		}
	}
	if st.Degraded*3 != st.Copies*2 {
		t.Fatalf("status: %d of %d object copies degraded with 1 of 3 OSDs up, want 2/3", st.Degraded, st.Copies)
	}
	// one OSD back: two of three copies, min_size met
	c.startOSD("osd.1")
	waitMap(ctx, t, conn, "osd.1 up", func(m *osdmap.Map) bool { return m.OSDs[1].Up })
	for oid, want := range model {
		if got, err := p.Read(ctx, oid, 0, 0); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s with osd.0 and osd.1: %v (%d bytes)", oid, err, len(got))
		}
	}
	for i := range 20 {
		oid := fmt.Sprintf("after%d", i)
		model[oid] = loadContent(oid, 1)
		if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
			t.Fatalf("write with osd.0 and osd.1: %v", err)
		}
	}
	c.up()
	c.waitHealth("HEALTH_OK", 2*time.Minute)
	for oid, want := range model {
		if got, err := p.Read(ctx, oid, 0, 0); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after all returned: %v (%d bytes)", oid, err, len(got))
		}
	}
}

// startOSD starts one OSD of the cluster again, as `shoal up` does.
func (c *tcluster) startOSD(name string) {
	c.t.Helper()
	logf, err := os.OpenFile(filepath.Join(c.data, "log", name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(shoalBin, "osd", "--conf", filepath.Join(c.data, "shoal.conf"), "--data", filepath.Join(c.data, name))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go cmd.Wait()
}

// TestFullRatio: past mon_osd_nearfull_ratio the OSDs warn; past
// mon_osd_full_ratio writes that add data fail with ENOSPC saying which
// OSD is full, while reads and deletes go on; raising the ratio (or
// freeing space) lets writes in again.
func TestFullRatio(t *testing.T) {
	c := up(t, "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var df struct {
		Nodes []struct {
			UsePct float64 `json:"utilization"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(c.must("osd", "df", "--format", "json")), &df); err != nil {
		t.Fatal(err)
	}
	used := 0.0
	for _, n := range df.Nodes {
		used = max(used, n.UsePct/100)
	}
	// 2 GiB devices: nearfull 4 MiB above today's use, full 20 MiB above
	near, full := used+0.002, used+0.01
	c.must("config", "set", "global", "mon_osd_nearfull_ratio", fmt.Sprintf("%.4f", near))
	c.must("config", "set", "global", "mon_osd_backfillfull_ratio", fmt.Sprintf("%.4f", near))
	c.must("config", "set", "global", "mon_osd_full_ratio", fmt.Sprintf("%.4f", full))
	p := c.pool(ctx)
	data := bytes.Repeat([]byte("f"), 4<<20)
	written := 0
	var err error
	for ; written < 40; written++ { // 160 MiB at most, 8% of a device
		if err = p.WriteFull(ctx, fmt.Sprintf("fill%d", written), data); err != nil {
			break
		}
		// the OSDs report their level within a second: wait for it past the
		// full ratio's worth of data, so the test does not outrun it
		if written == 6 {
			c.waitHealth("HEALTH_ERR", 30*time.Second)
		}
	}
	if !errors.Is(err, client.ErrNoSpace) || !strings.Contains(err.Error(), "is full") {
		t.Fatalf("write %d past mon_osd_full_ratio %.4f: %v, want ENOSPC naming the full OSD", written, full, err)
	}
	t.Logf("write %d refused: %v", written, err)
	// the OSD refuses by its own fill level; the MONs' map has it within a
	// second of its report
	c.waitHealth("HEALTH_ERR", 30*time.Second)
	detail, _ := c.run("health", "detail")
	if !strings.Contains(detail, "full osd(s)") {
		t.Fatalf("health detail with full OSDs:\n%s", detail)
	}
	if got, err := p.Read(ctx, "fill0", 0, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read while full: %v", err)
	}
	if err := p.Remove(ctx, "fill0"); err != nil {
		t.Fatalf("delete while full: %v", err)
	}
	c.must("config", "set", "global", "mon_osd_full_ratio", "0.95")
	c.must("config", "set", "global", "mon_osd_backfillfull_ratio", "0.90")
	c.must("config", "set", "global", "mon_osd_nearfull_ratio", "0.85")
	c.waitHealth("HEALTH_OK", 30*time.Second)
	if err := p.WriteFull(ctx, "after", data); err != nil {
		t.Fatalf("write after the ratio was raised: %v", err)
	}
}

// TestBackfillFull: a PG does not backfill onto an OSD past
// mon_osd_backfillfull_ratio — it waits as active+…+backfill_toofull —
// and completes once the ratio allows.
func TestBackfillFull(t *testing.T) {
	c := up(t, "--osds", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn, p := c.connPool(ctx)
	want := map[string][]byte{}
	for i := range 100 {
		oid := fmt.Sprintf("o%d", i)
		want[oid] = bytes.Repeat([]byte{byte(i)}, 64<<10)
		if err := p.WriteFull(ctx, oid, want[oid]); err != nil {
			t.Fatal(err)
		}
	}
	c.must("osd", "out", "3")
	c.waitClean(2 * time.Minute)
	// every device past the backfillfull ratio, the emptied osd.3 too (none full)
	c.must("config", "set", "global", "mon_osd_nearfull_ratio", "0")
	c.must("config", "set", "global", "mon_osd_backfillfull_ratio", "0")
	waitMap(ctx, t, conn, "osd.3 backfillfull", func(m *osdmap.Map) bool { return m.OSDs[3].Fullness == osdmap.BackfillFull })
	c.must("osd", "in", "3")
	for {
		st := c.status()
		toofull := 0
		for state, n := range st.PGStates {
			if strings.Contains(state, "backfill_toofull") {
				toofull += n
			}
		}
		if toofull > 0 {
			t.Logf("osd.3 backfillfull: %v", st.PGStates)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no pg waits as backfill_toofull: %v", st.PGStates)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.must("config", "set", "global", "mon_osd_backfillfull_ratio", "0.90")
	c.must("config", "set", "global", "mon_osd_nearfull_ratio", "0.85")
	c.waitClean(2 * time.Minute)
	for oid, data := range want {
		if got, err := p.Read(ctx, oid, 0, 0); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s after backfill: %v", oid, err)
		}
	}
}

// TestKillsDuringRecovery: under the verifying load, one OSD of four is
// killed with SIGKILL, misses writes, is restarted, and is killed again
// while its PGs still recover — five times. Its missing sets must survive
// each kill (writes to objects it lacks were only logged there), objects
// it lacks are recovered when clients ask for them, and at the end
// nothing acknowledged is lost or stale and every copy is identical.
func TestKillsDuringRecovery(t *testing.T) {
	c := up(t, "--osds", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, p := c.connPool(ctx)
	c.killsDuringRecovery(ctx, conn, p)
}

// TestKillsDuringECRecovery is TestKillsDuringRecovery on a 2+2
// erasure-coded pool: the killed OSD's shards are rebuilt by decoding, in
// the background and on demand (a write first rebuilds its object's
// shards), and survive each kill as missing sets.
func TestKillsDuringECRecovery(t *testing.T) {
	c := up(t, "--osds", "4")
	c.must("osd", "erasure-code-profile", "set", "p22", "k=2", "m=2", "crush-failure-domain=osd")
	c.must("pool", "create", "ec", "erasure", "p22")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn := c.connect(ctx)
	p, err := conn.Pool(ctx, "ec")
	if err != nil {
		t.Fatal(err)
	}
	c.killsDuringRecovery(ctx, conn, p)
}

// killsDuringRecovery kills osd.1 of four five times under the verifying
// load on pool p, the last times while its PGs recover.
func (c *tcluster) killsDuringRecovery(ctx context.Context, conn *client.Conn, p *client.Pool) {
	t := c.t
	// slow recovery down, so that the kills come in the middle of it
	c.must("config", "set", "osd", "osd_recovery_max_active", "2")
	c.must("config", "set", "osd", "osd_recovery_sleep", "0.02")
	l := startLoad(ctx, t, p, 4, 2, 100)
	l.waitOps(ctx, 300, "before the first kill")
	var midRecovery int
	for round := range 5 {
		c.kill9("osd.1")
		waitMap(ctx, t, conn, "osd.1 down", func(m *osdmap.Map) bool { return !m.OSDs[1].Up })
		l.waitOps(ctx, 400, fmt.Sprintf("round %d: with osd.1 down", round))
		c.startOSD("osd.1")
		waitMap(ctx, t, conn, "osd.1 up", func(m *osdmap.Map) bool { return m.OSDs[1].Up })
		l.waitOps(ctx, 50, fmt.Sprintf("round %d: with osd.1 back", round))
		for state := range c.status().PGStates {
			if strings.Contains(state, "recover") {
				midRecovery++
				break
			}
		}
	}
	if midRecovery == 0 {
		t.Fatal("no kill came while PGs were recovering: the test proves nothing")
	}
	c.waitClean(3 * time.Minute)
	l.waitOps(ctx, 300, "after the last recovery")
	if !c.checkLoad(ctx, l, conn, p, "after the kills") {
		return
	}
	t.Logf("%d ops; %d of 5 kills came while PGs were still recovering", l.ops.Load(), midRecovery)
}

// TestKillDuringStrayDeletion: an OSD marked out deletes its copies once
// their PGs are clean, and is killed with SIGKILL while it does.
// Restarted, still out, it tells the primaries of the copies it has left
// and deletes them all, the half-deleted one included; marked in again,
// it is backfilled (a PG's log goes first, so a half-deleted copy that
// maps back has no history and is never taken for a current copy): every
// object reads back and a deep scrub finds every PG's copies identical.
func TestKillDuringStrayDeletion(t *testing.T) {
	c := up(t, "--osds", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn, p := c.connPool(ctx)
	want := map[string][]byte{}
	for i := range 1500 {
		oid := fmt.Sprintf("o%d", i)
		want[oid] = bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 2048)
		if err := p.WriteFull(ctx, oid, want[oid]); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(c.data, "log", "osd.3.log")
	c.must("osd", "out", "3")
	for { // kill it as soon as it starts deleting
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte("msg=\"deleted stray copy\"")) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("osd.3 never deleted a stray copy")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.kill9("osd.3")
	b, _ := os.ReadFile(logPath)
	deleted := bytes.Count(b, []byte("msg=\"deleted stray copy\""))
	c.startOSD("osd.3")
	waitMap(ctx, t, conn, "osd.3 up", func(m *osdmap.Map) bool { return m.OSDs[3].Up })
	// still out, it tells the primaries of the copies it has left —
	// the one cut short too — and deletes them when told to
	for {
		st, err := conn.OSDStats(ctx, 3)
		if errors.Is(err, osdop.ErrRetry) && ctx.Err() == nil { // up in the map before it installed one
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.HeldPGs == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("osd.3, restarted out, still holds %d pg copies", st.HeldPGs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.must("osd", "in", "3")
	c.waitClean(3 * time.Minute)
	for oid, data := range want {
		if got, err := p.Read(ctx, oid, 0, 0); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %v (%d bytes, want %d)", oid, err, len(got), len(data))
		}
	}
	deepScrubAll(ctx, t, conn, p.ID())
	t.Logf("osd.3 killed after deleting %d stray copies", deleted)
}

// TestKillsDuringBackfill: under the verifying load on a 3-replica and a
// 2+1 erasure-coded pool, osd.3 of four is marked out: its PGs backfill
// onto the others while pg_temp keeps their old acting sets (for the
// erasure-coded PGs, osd.3 at its shard's position), osd.3 included,
// serving, and the target of an erasure-coded PG's backfill is killed
// with SIGKILL in the middle and restarted. Then osd.3 is marked in again and, a backfill target itself
// now, is killed in the middle of that. Nothing acknowledged is lost or
// stale, no pg_temp is left once the PGs are clean, and every PG's
// copies are identical. (More rounds: raise the loop's count; one keeps
// CI's time.)
func TestKillsDuringBackfill(t *testing.T) {
	c := up(t, "--osds", "4")
	c.must("osd", "erasure-code-profile", "set", "p21", "k=2", "m=1", "crush-failure-domain=osd")
	c.must("pool", "create", "ec", "erasure", "p21")
	c.must("pool", "set", "ec", "min_size", "2") // I/O goes on with a shard's OSD killed
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, p := c.connPool(ctx)
	ecp, err := conn.Pool(ctx, "ec")
	if err != nil {
		t.Fatal(err)
	}
	// data that makes the backfill last, copied slowly
	if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "fill", "size": "3"}); err != nil {
		t.Fatal(err)
	}
	fill, err := conn.Pool(ctx, "fill")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1500 {
		if err := fill.WriteFull(ctx, fmt.Sprintf("fill%d", i), bytes.Repeat([]byte{byte(i)}, 4096)); err != nil {
			t.Fatal(err)
		}
	}
	c.must("config", "set", "osd", "osd_recovery_max_active", "1")
	c.must("config", "set", "osd", "osd_recovery_sleep", "0.02")
	l := startLoad(ctx, t, p, 4, 2, 100)
	le := startLoad(ctx, t, ecp, 2, 1, 60)
	l.waitOps(ctx, 300, "before the first backfill")
	le.waitOps(ctx, 100, "before the first backfill (erasure-coded)")
	// target finds an OSD (want, or any: -1) the up set of a PG under
	// pg_temp backfills (of pool, or any: -1)
	target := func(m *osdmap.Map, want int32, pool int64) (int32, bool) {
		for pg := range m.PGTemp {
			mp, err := m.MapPG(pg)
			if err != nil || (pool >= 0 && pg.Pool != pool) {
				continue
			}
			for _, o := range mp.Up {
				if !slices.Contains(mp.Acting, o) && (want < 0 || o == want) {
					return o, true
				}
			}
		}
		return 0, false
	}
	kill := func(id int32, when string) {
		t.Helper()
		name := fmt.Sprintf("osd.%d", id)
		c.kill9(name)
		waitMap(ctx, t, conn, name+" down", func(m *osdmap.Map) bool { return !m.OSDs[id].Up })
		// (the erasure-coded load may wait meanwhile: an object whose
		// recovery the kill interrupted can be on k shards, the killed
		// OSD's among them, until it returns)
		l.waitOps(ctx, 200, when+": with "+name+" down")
		c.startOSD(name)
		waitMap(ctx, t, conn, name+" up", func(m *osdmap.Map) bool { return m.OSDs[id].Up })
		l.waitOps(ctx, 50, when+": with "+name+" back")
	}

	for round := range 1 {
		c.must("osd", "out", "3")
		var victim int32
		waitMap(ctx, t, conn, "an erasure-coded pg's backfill under pg_temp", func(m *osdmap.Map) bool {
			o, ok := target(m, -1, ecp.ID())
			victim = o
			return ok
		})
		kill(victim, fmt.Sprintf("round %d, osd.3 out", round))
		c.waitClean(3 * time.Minute)
		c.must("osd", "in", "3")
		waitMap(ctx, t, conn, "osd.3 backfilled under pg_temp", func(m *osdmap.Map) bool {
			_, ok := target(m, 3, -1)
			return ok
		})
		kill(3, fmt.Sprintf("round %d, osd.3 in", round))
		c.waitClean(3 * time.Minute)
	}
	l.waitOps(ctx, 300, "after the last backfill")
	if err := conn.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(conn.Map().PGTemp); n != 0 {
		t.Fatalf("clean with %d pg_temp entries: %v", n, conn.Map().PGTemp)
	}
	le.waitOps(ctx, 100, "after the last backfill (erasure-coded)")
	if !c.checkLoad(ctx, l, conn, p, "after the kills") || !c.checkLoad(ctx, le, conn, ecp, "after the kills (erasure-coded)") {
		return
	}
	deepScrubAll(ctx, t, conn, fill.ID())
	for i := range 1500 {
		if got, err := fill.Read(ctx, fmt.Sprintf("fill%d", i), 0, 0); err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, 4096)) {
			t.Fatalf("fill%d: %v (%d bytes)", i, err, len(got))
		}
	}
	t.Logf("%d ops, %d on the erasure-coded pool; 2 kills, each in the middle of a backfill under pg_temp", l.ops.Load(), le.ops.Load())
}
