package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/internal/snapmodel"
	"github.com/shoal-project/shoal/osdop"
)

// TestSnapshotsSurviveKill9 runs the snapshot model (random writes,
// truncates, removals, snap creations and removals, rollbacks, reads at
// every snap) on real daemons: the primary of some objects is killed with
// SIGKILL while the model writes, it goes on degraded, the OSD returns
// and catches up (clones with their heads), a deep scrub of every PG is
// clean; every snap is removed and the same OSD killed right after (its
// PGs' trims may not have started, or may be done: the kill is not
// synchronised with them), and once it is back the trim finishes (no
// clone, no whiteout left, deep scrub clean); after SIGKILL of every
// daemon and a restart every object still reads back. It runs on the
// replicated pool "data", and on an erasure-coded 2+1 pool with overwrites
// (the killed OSD's writes that fewer than k shards hold are rolled back
// with the clones they made or trimmed; its shards and their clones are
// rebuilt by decoding).
func TestSnapshotsSurviveKill9(t *testing.T) {
	t.Parallel() // waits more than it computes: runs beside another such test (e2e_test.go)
	t.Run("replicated", func(t *testing.T) { snapshotsSurviveKill9(t, false) })
	t.Run("erasure", func(t *testing.T) { snapshotsSurviveKill9(t, true) })
}

func snapshotsSurviveKill9(t *testing.T, erasure bool) {
	c := up(t, "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pool := "data"
	if erasure {
		pool = "ec"
		c.must("osd", "erasure-code-profile", "set", "p21", "k=2", "m=1", "crush-failure-domain=osd")
		c.must("pool", "create", "ec", "erasure", "p21")
		c.must("pool", "set", "ec", "allow_ec_overwrites", "true")
		c.must("pool", "set", "ec", "min_size", "2") // serve with a shard missing
	}
	open := func() (*client.Conn, *client.Pool) {
		conn := c.connect(ctx)
		p, err := conn.Pool(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		return conn, p
	}
	conn, p := open()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	m := snapmodel.New(12, 300_000)
	run := func(n int) {
		for range n {
			m.Step(ctx, t, rng, p)
		}
	}
	run(80)
	victim := fmt.Sprintf("osd.%d", c.osdMap(pool, "o0").ActingPrimary)
	b, err := os.ReadFile(filepath.Join(c.data, "run", victim+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	killed := make(chan error, 1)
	go func() { killed <- syscall.Kill(pid, syscall.SIGKILL) }() // while the model writes
	run(120)
	if err := <-killed; err != nil {
		t.Fatalf("kill %s: %v", victim, err)
	}
	c.waitGone(victim, pid)
	m.Check(ctx, t, p, victim+" killed")
	c.up() // restarts it; it catches up from the PG logs
	c.waitHealth("HEALTH_OK", 90*time.Second)
	m.Check(ctx, t, p, victim+" back")
	deepScrubAll(ctx, t, conn, p.ID())
	// every snap removed, and an OSD killed right after
	m.RemoveAllSnaps(ctx, t, p)
	c.kill9(victim)
	c.up()
	c.waitClean(90 * time.Second) // snaptrim_wait and snaptrim are not clean
	m.CheckNoClones(ctx, t, p)
	m.Check(ctx, t, p, "after trimming")
	deepScrubAll(ctx, t, conn, p.ID())
	for _, n := range []string{"osd.0", "osd.1", "osd.2", "mon.a"} {
		c.kill9(n)
	}
	c.up()
	_, p = open()
	m.Check(ctx, t, p, "after kill -9 of every daemon")
	t.Logf("steps: %v", m.Steps)
}

// TestNotifyAcrossKill9: two watchers (each its own client) answer a
// notify; the primary of the watched object is killed with SIGKILL; the
// next notify reaches both through the new primary, and a watcher whose
// client closed is reported as timed out. A lock taken on the object
// before the kill (a write through the lock class) is still held after
// it.
func TestNotifyAcrossKill9(t *testing.T) {
	c := up(t, "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, p := c.connPool(ctx)
	if err := p.WriteFull(ctx, "watched", []byte("x")); err != nil {
		t.Fatal(err)
	}
	var watches []*client.Watch
	var conns []*client.Conn
	for i, reply := range []string{"a", "b", "gone"} {
		conn, wp := c.connPool(ctx)
		timeout := time.Duration(0)
		if reply == "gone" {
			timeout = 2 * time.Second
		}
		w, err := wp.Watch(ctx, "watched", timeout, func(client.Notification) []byte { return []byte(reply) }, nil)
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
		watches, conns = append(watches, w), append(conns, conn)
	}
	replies := func(r *osdop.NotifyResult) []string {
		var out []string
		for _, a := range r.Acks {
			out = append(out, string(a.Reply))
		}
		slices.Sort(out)
		return out
	}
	r, err := p.Notify(ctx, "watched", []byte("one"), 10*time.Second)
	if err != nil || !slices.Equal(replies(r), []string{"a", "b", "gone"}) {
		t.Fatalf("first notify: %+v, %v", r, err)
	}
	holder, hp := c.connPool(ctx)
	if err := hp.LockExclusive(ctx, "watched", "excl", "cookie", "held across the kill", 0, false); err != nil {
		t.Fatal(err)
	}
	conns[2].Close() // the third watcher's client goes away
	c.kill9(fmt.Sprintf("osd.%d", c.osdMap("data", "watched").ActingPrimary))
	r, err = p.Notify(ctx, "watched", []byte("two"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := replies(r); !slices.Equal(got, []string{"a", "b"}) || len(r.Timeouts) != 1 || r.Timeouts[0].Instance != conns[2].Instance() {
		t.Fatalf("after the primary was killed: replies %v, timeouts %v", got, r.Timeouts)
	}
	info, err := p.LockInfo(ctx, "watched", "excl")
	if err != nil || len(info.Lockers) != 1 || info.Lockers[0].Name != holder.Instance() || info.Lockers[0].Cookie != "cookie" {
		t.Fatalf("lock after the primary was killed: %+v, %v", info, err)
	}
	for _, w := range watches[:2] {
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
