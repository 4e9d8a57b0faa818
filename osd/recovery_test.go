package osd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osd"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
	"github.com/shoal-project/shoal/status"
)

// TestRecoveryAfterActivation: an OSD that missed writes returns and its
// PGs serve at once — objects its copy lacks are recovered when a client
// asks for them, writes to objects it lacks as a replica are logged there
// only — while background recovery waits under norecover. Its missing set
// survives a restart: alone, it answers every read with the current bytes
// or an error (unfound), never with its stale copy. Unset norecover and
// the PGs go active+clean; its copy is then complete.
func TestRecoveryAfterActivation(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	want := map[string][]byte{} // nil: deleted
	put := func(oid string, data []byte) {
		t.Helper()
		if err := p.WriteFull(ctx, oid, data); err != nil {
			t.Fatalf("write %s: %v", oid, err)
		}
		want[oid] = data
	}
	for i := range 100 {
		put(fmt.Sprintf("o%d", i), bytes.Repeat([]byte{byte(i)}, 1000+i))
	}
	c.stop(ctx, cl, 2)
	monDo(ctx, t, cl, "osd set", "key", "norecover")
	for i := range 50 { // osd.2 misses these
		put(fmt.Sprintf("o%d", i), bytes.Repeat([]byte{byte(i + 100)}, 2000+i))
	}
	for i := 50; i < 60; i++ {
		oid := fmt.Sprintf("o%d", i)
		if err := p.Remove(ctx, oid); err != nil {
			t.Fatal(err)
		}
		want[oid] = nil
	}
	for i := range 30 {
		put(fmt.Sprintf("n%d", i), []byte(fmt.Sprintf("new %d", i)))
	}

	c.RestartOSD(2)
	// served at once, recovered object by object as asked for
	verifyModel(ctx, t, p, want, "osd.2 back under norecover")
	// writes to objects osd.2 lacks, partial ones too
	for i := range 10 {
		oid := fmt.Sprintf("o%d", i)
		if err := p.Write(ctx, oid, []byte("patch"), 7); err != nil {
			t.Fatal(err)
		}
		w := slices.Clone(want[oid])
		copy(w[7:], "patch")
		want[oid] = w
	}
	verifyModel(ctx, t, p, want, "after writes to degraded objects")
	waitingForRecovery(ctx, t, cl, p.ID())
	if rec := recordedRecovering(ctx, t, cl, p.ID()); len(rec) == 0 {
		t.Fatal("no pg recorded recovering at the MONs under norecover")
	}

	// restarted, osd.2 still knows what its copy lacks; alone, it never
	// serves a stale copy
	c.RestartOSD(2)
	c.stop(ctx, cl, 0, 1)
	monDo(ctx, t, cl, "pool set", "name", "p", "key", "min_size", "value", "1")
	served, refused := readServedOrRefused(ctx, t, p, want, "unfound")
	if len(refused) == 0 {
		t.Fatalf("osd.2 alone served all %d objects: its copy lacked none?", served)
	}
	t.Logf("osd.2 alone under norecover: %d objects served, refused: %v", served, refused)

	c.RestartOSD(0)
	c.RestartOSD(1)
	monDo(ctx, t, cl, "pool set", "name", "p", "key", "min_size", "value", "2")
	monDo(ctx, t, cl, "osd unset", "key", "norecover")
	waitClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, want, "clean")
	// each primary records its recovery's end: the MONs count no pg moving
	var rec []string
	eventually(ctx, t, func() bool {
		rec = recordedRecovering(ctx, t, cl, p.ID())
		return len(rec) == 0
	}, func() string { return fmt.Sprintf("pgs recorded recovering at the MONs once clean: %v", rec) })
	// now osd.2's copy is complete
	c.stop(ctx, cl, 0, 1)
	monDo(ctx, t, cl, "pool set", "name", "p", "key", "min_size", "value", "1")
	verifyModel(ctx, t, p, want, "osd.2 alone after recovery")
}

// recordedRecovering names the pool's PGs whose last interval recorded at
// the MONs is marked recovering.
func recordedRecovering(ctx context.Context, t *testing.T, cl *client.Conn, pool int64) []string {
	t.Helper()
	_ = cl.RefreshMap(ctx)
	m := cl.Map()
	p, err := m.Pool(pool)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for seed := range p.PGNum {
		pg := osdmap.PGID{Pool: pool, Seed: seed}
		r, err := cl.MonCommand(ctx, "pg history get", map[string]string{"pgid": pg.String(), "epoch": strconv.FormatUint(uint64(m.Epoch), 10)})
		if err != nil {
			t.Fatalf("pg history get %s: %v", pg, err)
		}
		var h []monc.PGInterval
		if err := json.Unmarshal(r.Data, &h); err != nil {
			t.Fatal(err)
		}
		if len(h) > 0 && h[len(h)-1].Recovering {
			out = append(out, pg.String())
		}
	}
	return out
}

// waitingForRecovery fails the test unless some of the pool's PGs wait
// for recovery (recovery_wait+degraded, as under norecover).
func waitingForRecovery(ctx context.Context, t *testing.T, cl *client.Conn, pool int64) {
	t.Helper()
	states := pgStates(ctx, t, cl, pool)
	waiting := 0
	for _, s := range states {
		if strings.Contains(s, "recovery_wait+degraded") {
			waiting++
		}
	}
	if waiting == 0 {
		t.Fatalf("no pg waits for recovery under norecover: %v", states)
	}
	t.Logf("under norecover: %d of %d pgs recovery_wait+degraded", waiting, len(states))
}

// readServedOrRefused reads every object of model at once, each within
// 3 s: it must come back current (bytes, or ErrNotFound for nil) or be
// refused in one of the ways accepted — "unfound" (the op is retried
// until its deadline: no copy reached holds the current version),
// "unreadable" (an erasure-coded object with fewer than k current
// shards) — never stale. It returns how many were served and the
// refusals by kind.
func readServedOrRefused(ctx context.Context, t *testing.T, p *client.Pool, model map[string][]byte, accept ...string) (served int, refused map[string]int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	refused = map[string]int{}
	for oid, want := range model {
		wg.Go(func() {
			rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
			defer rcancel()
			got, err := p.Read(rctx, oid, 0, 0)
			kind := ""
			switch {
			case errors.Is(err, osdop.ErrUnreadable):
				kind = "unreadable"
			case errors.Is(err, client.ErrTimeout) && strings.Contains(err.Error(), "unfound"):
				kind = "unfound"
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && want != nil && bytes.Equal(got, want), want == nil && errors.Is(err, osdop.ErrNotFound):
				served++
			case kind != "" && slices.Contains(accept, kind):
				refused[kind]++
			default:
				t.Errorf("%s: %v (%d bytes, want %d)", oid, err, len(got), len(want))
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return served, refused
}

// pgStates lists the pool's PGs as their primaries report them.
func pgStates(ctx context.Context, t *testing.T, cl *client.Conn, pool int64) []string {
	t.Helper()
	var out []string
	for _, pg := range pgStatsOf(ctx, t, cl, pool) {
		out = append(out, pg.PGID+" "+pg.State)
	}
	return out
}

// pgStatsOf is the stats of pool's PGs as their primaries report them.
func pgStatsOf(ctx context.Context, t *testing.T, cl *client.Conn, pool int64) []osdop.PGStats {
	t.Helper()
	if err := cl.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	m := cl.Map()
	var out []osdop.PGStats
	for o := range m.OSDs {
		if !m.OSDs[o].Up {
			continue
		}
		st, err := cl.OSDStats(ctx, int32(o))
		if err != nil {
			t.Fatal(err)
		}
		for _, pg := range st.PGs {
			if strings.HasPrefix(pg.PGID, fmt.Sprintf("%d.", pool)) {
				out = append(out, pg)
			}
		}
	}
	return out
}

// TestStrayCopiesDeleted: an OSD marked out hands its PGs to the others —
// remapped, not degraded, while nobackfill holds the copying (it still
// holds their third copies); once they are clean it deletes its copies,
// freeing the space the rebalance moved data from. Marked in again, it is
// backfilled and holds them again.
func TestStrayCopiesDeleted(t *testing.T) {
	c := startCluster(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	want := map[string][]byte{}
	for i := range 100 {
		oid := fmt.Sprintf("o%d", i)
		want[oid] = bytes.Repeat([]byte{byte(i)}, 500+i)
		if err := p.WriteFull(ctx, oid, want[oid]); err != nil {
			t.Fatal(err)
		}
	}
	held := func() int { return c.held(3, p.ID()) }
	before := held()
	if before == 0 {
		t.Fatal("osd.3 holds none of the pool's objects: the test proves nothing")
	}
	// under nobackfill the PGs that moved wait: remapped, not degraded —
	// osd.3 still holds the third copy of what their new OSDs lack
	if _, err := cl.MonCommand(ctx, "osd set", map[string]string{"key": "nobackfill"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.MonCommand(ctx, "osd out", map[string]string{"ids": "3"}); err != nil {
		t.Fatal(err)
	}
	for {
		states := pgStates(ctx, t, cl, p.ID())
		waiting, degraded := 0, 0
		for _, st := range states {
			if strings.HasSuffix(st, " active+remapped+backfill_wait") {
				waiting++
			}
			if strings.Contains(st, "degraded") {
				degraded++
			}
		}
		if degraded > 0 {
			t.Fatalf("osd.3 out under nobackfill: degraded pgs: %v", states)
		}
		if waiting > 0 && len(states) == 32 && !slices.ContainsFunc(states, func(s string) bool { return strings.Contains(s, "peering") }) {
			t.Logf("osd.3 out under nobackfill: %d pgs active+remapped+backfill_wait", waiting)
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no pg waits remapped under nobackfill: %v", states)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if _, err := cl.MonCommand(ctx, "osd unset", map[string]string{"key": "nobackfill"}); err != nil {
		t.Fatal(err)
	}
	waitClean(ctx, t, cl, p.ID())
	eventually(ctx, t, func() bool { return held() == 0 }, // deleted in the background once clean
		func() string { return fmt.Sprintf("osd.3, out, still holds %d of the pool's objects", held()) })
	verifyModel(ctx, t, p, want, "osd.3 out")
	if _, err := cl.MonCommand(ctx, "osd in", map[string]string{"ids": "3"}); err != nil {
		t.Fatal(err)
	}
	waitClean(ctx, t, cl, p.ID())
	if n := held(); n != before {
		t.Fatalf("osd.3 back in holds %d objects, %d before", n, before)
	}
	verifyModel(ctx, t, p, want, "osd.3 in again")
	t.Logf("osd.3 held %d object copies; out: deleted once clean; in: backfilled", before)
}

// TestStrayCopiesOfADownOSDDeleted: osd.3 is down while it is marked out
// and its PGs recover elsewhere and go clean; restarted (still out), it
// tells their primaries it holds copies, and they have it delete them.
func TestStrayCopiesOfADownOSDDeleted(t *testing.T) {
	c := startCluster(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	for i := range 100 {
		if err := p.WriteFull(ctx, fmt.Sprintf("o%d", i), bytes.Repeat([]byte{byte(i)}, 300)); err != nil {
			t.Fatal(err)
		}
	}
	held := func() int { return c.held(3, p.ID()) }
	before := held()
	if before == 0 {
		t.Fatal("osd.3 holds none of the pool's objects: the test proves nothing")
	}
	c.stop(ctx, cl, 3)
	if _, err := cl.MonCommand(ctx, "osd out", map[string]string{"ids": "3"}); err != nil {
		t.Fatal(err)
	}
	waitClean(ctx, t, cl, p.ID())
	c.RestartOSD(3) // stays out: an operator marked it out
	eventually(ctx, t, func() bool { return held() == 0 },
		func() string {
			return fmt.Sprintf("osd.3, restarted out of every acting set, still holds %d of the pool's objects", held())
		})
	t.Logf("osd.3 held %d object copies; back, out, it deleted them", before)
}

// held counts the pool's objects in osd i's store.
func (c *cluster) held(i int, pool int64) int {
	colls, err := c.Stores[i].Collections()
	if err != nil {
		c.t.Fatal(err)
	}
	n := 0
	for _, coll := range colls {
		if !strings.HasPrefix(string(coll), fmt.Sprintf("%d.", pool)) {
			continue
		}
		names, _ := c.Stores[i].List(coll, "", 100000)
		for _, name := range names {
			if !strings.HasPrefix(name, "\x00") {
				n++
			}
		}
	}
	return n
}

// waitCopies waits until the OSDs hold, in all, n copies (or shards) of
// pool's objects for each live object of model (nil: deleted): none lost,
// the replaced ones deleted.
func (c *cluster) waitCopies(ctx context.Context, pool int64, model map[string][]byte, n int) {
	c.t.Helper()
	live := 0
	for _, v := range model {
		if v != nil {
			live++
		}
	}
	total := 0
	eventually(ctx, c.t, func() bool {
		total = 0
		for i := range c.OSDs {
			total += c.held(i, pool)
		}
		return total == n*live
	}, func() string { return fmt.Sprintf("%d object copies held, want %d", total, n*live) })
}

// TestRecoveryMemoryBudget: with osd_memory_target at its 64 MiB minimum,
// recovery may hold 8 MiB of object data at once: objects of 12 MiB, each
// larger than the whole budget and than a pull's first 4 MiB, are
// recovered one at a time (pulled again once their size is held) and
// arrive whole. Eight objects land in several PGs, which recover at once
// and share the budget. The test moves 3 × 192 MiB; under the race
// detector beside other packages (CI) it took over 120 s once, against
// about 25 s alone, hence its longer deadline.
func TestRecoveryMemoryBudget(t *testing.T) {
	c := startClusterWith(t, 3, "osd_memory_target = 64M\n")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	want := map[string][]byte{}
	put := func(gen int) {
		for i := range 8 {
			oid := fmt.Sprintf("big%d", i)
			want[oid] = bytes.Repeat([]byte{byte(gen), byte(i)}, 6<<20)
			if err := p.WriteFull(ctx, oid, want[oid]); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(1)
	c.missWrites(ctx, cl, put)
	waitClean(ctx, t, cl, p.ID())
	// osd.2's copy is whole: read everything through it alone
	c.stop(ctx, cl, 0, 1)
	if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": "p", "key": "min_size", "value": "1"}); err != nil {
		t.Fatal(err)
	}
	verifyModel(ctx, t, p, want, "osd.2 alone")
}

// TestMClockHoldsBackRecovery: with the I/O scheduler told the device
// moves 1 MiB/s, recovering 2.5 MiB waits for its share (the primaries
// count background waits) and still completes; with osd_op_queue = wpq
// the same recovery never waits.
func TestMClockHoldsBackRecovery(t *testing.T) {
	for _, queue := range []string{"mclock_scheduler", "wpq"} {
		t.Run(queue, func(t *testing.T) {
			c := startClusterWith(t, 3, "osd_op_queue = "+queue+"\nosd_mclock_max_sequential_bandwidth_ssd = 1M\nosd_mclock_profile = high_client_ops\n")
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cl, p := c.pool(ctx, "p")
			want := map[string][]byte{}
			put := func(gen int) {
				for i := range 40 {
					oid := fmt.Sprintf("o%d", i)
					want[oid] = bytes.Repeat([]byte{byte(gen), byte(i)}, 32<<10)
					if err := p.WriteFull(ctx, oid, want[oid]); err != nil {
						t.Fatal(err)
					}
				}
			}
			put(1)
			c.missWrites(ctx, cl, put)
			waitClean(ctx, t, cl, p.ID())
			var waits uint64
			for i := range 3 {
				st, err := cl.OSDStats(ctx, int32(i))
				if err != nil {
					t.Fatal(err)
				}
				waits += st.Perf.MClockWaits
			}
			switch {
			case queue == "wpq" && waits != 0:
				t.Fatalf("wpq: %d background waits", waits)
			case queue != "wpq" && waits == 0:
				t.Fatal("recovery of 2.5 MiB at 1 MiB/s never waited for the scheduler")
			}
			t.Logf("%s: %d background waits", queue, waits)
			verifyModel(ctx, t, p, want, queue)
		})
	}
}

// TestGovernorScalesCapacity: with a scheduler-latency target no wait
// can meet, client writes drive every OSD's mclock scale to its floor
// (1/16); a recovery under that client load still completes, every object
// intact; once the writes stop the scale climbs back to 1.
func TestGovernorScalesCapacity(t *testing.T) {
	c := startClusterWith(t, 3, "osd_mclock_sched_latency_target = 0.000000001\n")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	scales := func() (lo, hi float64) {
		t.Helper()
		lo, hi = 1, 0
		for i := range 3 {
			st, err := cl.OSDStats(ctx, int32(i))
			if err != nil {
				t.Fatal(err)
			}
			lo, hi = min(lo, st.Perf.MClockScale), max(hi, st.Perf.MClockScale)
		}
		return lo, hi
	}
	var mu sync.Mutex
	want := map[string][]byte{}
	put := func(oid string, data []byte) {
		t.Helper()
		if err := p.WriteFull(ctx, oid, data); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		want[oid] = data
		mu.Unlock()
	}
	for i := 0; ; i++ {
		put(fmt.Sprintf("w%d", i%50), bytes.Repeat([]byte{byte(i), 1}, 8<<10))
		if i%20 != 0 {
			continue
		}
		if _, hi := scales(); hi == mclock.MinScale {
			t.Logf("every OSD at scale 1/16 after %d writes", i+1)
			break
		}
	}
	// a writer keeps the scale down while osd.2 misses and recovers writes
	stop := make(chan struct{})
	done := make(chan struct{})
	var once sync.Once
	finish := func() { once.Do(func() { close(stop); <-done }) }
	defer finish() // also when the test fails before the writes stop
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			oid := fmt.Sprintf("w%d", i%50)
			data := bytes.Repeat([]byte{byte(i), 2}, 8<<10)
			if err := p.WriteFull(ctx, oid, data); err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			mu.Lock()
			want[oid] = data
			mu.Unlock()
		}
	}()
	c.missWrites(ctx, cl, func(gen int) {
		for i := range 40 {
			put(fmt.Sprintf("o%d", i), bytes.Repeat([]byte{byte(gen), byte(i)}, 32<<10))
		}
	})
	waitClean(ctx, t, cl, p.ID())
	if lo, _ := scales(); lo == 1 {
		t.Error("recovery under client writes: no OSD below scale 1")
	}
	finish()
	verifyModel(ctx, t, p, want, "after recovery at the floor scale")
	for {
		if lo, _ := scales(); lo == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the scale never returned to 1 after the writes stopped")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// backfillClean clears nobackfill and waits until pool is active+clean
// with no pg_temp left: every backfill done, the up sets serving.
func backfillClean(ctx context.Context, t *testing.T, cl *client.Conn, pool int64) {
	t.Helper()
	monDo(ctx, t, cl, "osd unset", "key", "nobackfill")
	waitClean(ctx, t, cl, pool)
	if err := cl.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(cl.Map().PGTemp); n != 0 {
		t.Fatalf("clean with %d pg_temp entries left: %v", n, cl.Map().PGTemp)
	}
}

// missWrites stops osd.2, has the MON mark it down, writes generation 2
// of the objects (put), and restarts osd.2, which then lacks them.
func (c *cluster) missWrites(ctx context.Context, cl *client.Conn, put func(gen int)) {
	c.t.Helper()
	c.stop(ctx, cl, 2)
	put(2)
	c.RestartOSD(2)
}

// TestBackfillUnderPGTemp: an OSD added to a 3-replica pool — the PGs it
// joins keep their old acting sets as pg_temp while it backfills (under
// nobackfill, until the flag is cleared): remapped, never degraded or
// undersized, served by complete copies, and the new OSD takes every
// write meanwhile. Once it is complete the pg_temps go, the up sets serve,
// and the copies it replaced are deleted.
func TestBackfillUnderPGTemp(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	model := map[string][]byte{}
	put := func(gen int) {
		t.Helper()
		for i := range 60 {
			oid := fmt.Sprintf("o%d", i)
			switch {
			case gen > 0 && i%7 == 0:
				if err := p.Remove(ctx, oid); err != nil && !errors.Is(err, osdop.ErrNotFound) {
					t.Fatal(err)
				}
				model[oid] = nil
			case gen == 0 || i%2 == 0:
				model[oid] = bytes.Repeat([]byte{byte(gen), byte(i)}, 300+i)
				if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range 20 * gen { // new objects: whole on osd.3 at once
			oid := fmt.Sprintf("n%d.%d", gen, i)
			model[oid] = bytes.Repeat([]byte{byte(gen), byte(i), 1}, 200+i)
			if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0)
	waitClean(ctx, t, cl, p.ID())
	monDo(ctx, t, cl, "osd set", "key", "nobackfill")
	c.AddOSD() // osd.3
	// every PG osd.3 joins waits remapped with its old acting set serving
	var remapped []osdmap.PGID
	for {
		states := pgStates(ctx, t, cl, p.ID())
		m := cl.Map()
		waiting, settled := 0, 0
		for _, st := range states {
			switch {
			case strings.HasSuffix(st, " active+remapped+backfill_wait"):
				waiting++
			case strings.HasSuffix(st, " active+clean"):
				settled++
			case strings.Contains(st, "degraded") || strings.Contains(st, "undersized"):
				t.Fatalf("an OSD added: %s", st)
			}
		}
		remapped = remapped[:0]
		for pg := range m.PGTemp {
			if pg.Pool == p.ID() {
				remapped = append(remapped, pg)
			}
		}
		pool, err := m.Pool(p.ID())
		if err != nil {
			t.Fatal(err)
		}
		if m.OSDs[3].Up && waiting > 0 && waiting+settled == int(pool.PGNum) && len(remapped) == waiting {
			t.Logf("osd.3 added under nobackfill: %d pgs active+remapped+backfill_wait under pg_temp, %d clean", waiting, settled)
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no pg waits under pg_temp: %v, pg_temp %v", states, m.PGTemp)
		case <-time.After(20 * time.Millisecond):
		}
	}
	m := cl.Map()
	for _, pg := range remapped {
		mp, err := m.MapPG(pg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(mp.Up, 3) || slices.Contains(mp.Acting, 3) || len(mp.Acting) != 3 || mp.ActingPrimary == 3 {
			t.Fatalf("pg %s: up %v acting %v primary %d: want osd.3 up, not acting", pg, mp.Up, mp.Acting, mp.ActingPrimary)
		}
		st := pgStats(ctx, t, cl, pg)
		if !slices.Equal(st.Up, mp.Up) || !slices.Equal(st.Acting, mp.Acting) {
			t.Fatalf("pg %s stats: up %v acting %v, map: up %v acting %v", pg, st.Up, st.Acting, mp.Up, mp.Acting)
		}
	}
	// writes go on meanwhile: to the acting set and to osd.3
	put(1)
	verifyModel(ctx, t, p, model, "under pg_temp")
	if n := c.held(3, p.ID()); n == 0 {
		t.Fatal("osd.3 took none of the objects created under pg_temp")
	}
	backfillClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, "backfilled")
	c.waitCopies(ctx, p.ID(), model, 3) // the replaced copies deleted, none lost
	put(2)
	verifyModel(ctx, t, p, model, "after")
}

// TestClusterNetwork: OSDs with a cluster address of their own register
// it in the map beside their public one; writes replicate, a returning
// OSD recovers and the PGs go clean with peers talking over it.
func TestClusterNetwork(t *testing.T) {
	c := startClusterNet(t, 3, "", true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	m := cl.Map()
	for i := range 3 {
		o := m.OSDs[i]
		if o.ClusterAddr == "" || o.ClusterAddr == o.Addr || o.BackAddr() != o.ClusterAddr {
			t.Fatalf("osd.%d: public %s, cluster %q", i, o.Addr, o.ClusterAddr)
		}
	}
	model := map[string][]byte{}
	for i := range 50 {
		oid := fmt.Sprintf("o%d", i)
		model[oid] = bytes.Repeat([]byte{byte(i)}, 100+i)
		if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
			t.Fatal(err)
		}
	}
	c.missWrites(ctx, cl, func(gen int) {
		for i := range 20 {
			oid := fmt.Sprintf("o%d", i)
			model[oid] = bytes.Repeat([]byte{byte(gen), byte(i)}, 200)
			if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
				t.Fatal(err)
			}
		}
	})
	waitClean(ctx, t, cl, p.ID())
	c.stop(ctx, cl, 0, 1)
	monDo(ctx, t, cl, "pool set", "name", "p", "key", "min_size", "value", "1")
	verifyModel(ctx, t, p, model, "osd.2 alone, recovered over the cluster network")
}

// TestIntervalOnlyDownOSDsSaw is the stale read the PG history at the
// MONs closes: size 2, min_size 1; osd.B goes down, osd.A alone
// acknowledges a write, then osd.A goes down and both are marked out. The
// PG maps to osd.C, which never held it and can reach no OSD that saw
// osd.A's interval: it must stay down — refusing reads, never serving
// the object's older version or its absence — until osd.A returns, and
// then serve what osd.A acknowledged.
func TestIntervalOnlyDownOSDsSaw(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.Client(ctx)
	monDo(ctx, t, cl, "pool create", "name", "p", "size", "2", "min_size", "1")
	p, err := cl.Pool(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	const oid = "x"
	if err := p.WriteFull(ctx, oid, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	pgid, err := cl.Map().ObjectToPG(p.ID(), oid, "")
	if err != nil {
		t.Fatal(err)
	}
	mp, err := cl.Map().MapPG(pgid)
	if err != nil || len(mp.Acting) != 2 {
		t.Fatalf("pg %s acting %v: %v", pgid, mp.Acting, err)
	}
	a, b := mp.Acting[0], mp.Acting[1]
	c.stop(ctx, cl, b)
	if err := p.WriteFull(ctx, oid, []byte("v2, osd.A alone")); err != nil {
		t.Fatal(err)
	}
	c.stop(ctx, cl, a)
	monDo(ctx, t, cl, "osd out", "ids", fmt.Sprintf("%d,%d", a, b))
	if err := cl.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	mp, _ = cl.Map().MapPG(pgid)
	if slices.Contains(mp.Acting, a) || slices.Contains(mp.Acting, b) || len(mp.Acting) != 1 {
		t.Fatalf("pg %s acting %v after osd.%d and osd.%d are out", pgid, mp.Acting, a, b)
	}
	// osd.C: down, waiting for osd.A
	var st osdop.PGStats
	eventually(ctx, t, func() bool {
		if st = pgStats(ctx, t, cl, pgid); strings.HasPrefix(st.State, "active") {
			got, err := p.Read(ctx, oid, 0, 0)
			t.Fatalf("pg %s went %s without the OSD that took the last write: read %q, %v", pgid, st.State, got, err)
		}
		return st.State == "down"
	}, func() string { return fmt.Sprintf("pg %s is %s, want down", pgid, st.State) })
	if want := fmt.Sprintf("osd.%d", a); !strings.Contains(st.BlockedBy, "waiting for") || !strings.Contains(st.BlockedBy, want) {
		t.Errorf("pg %s down, blocked by %q; want it to say %q", pgid, st.BlockedBy, want)
	}
	t.Logf("pg %s down: %s", pgid, st.BlockedBy)
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	got, err := p.Read(rctx, oid, 0, 0)
	rcancel()
	if err == nil || errors.Is(err, osdop.ErrNotFound) {
		t.Fatalf("pg %s without the OSD that took the last write: read %q, %v; want it refused", pgid, got, err)
	}
	c.RestartOSD(int(a)) // out, but up: asked as a former member
	got, err = p.Read(ctx, oid, 0, 0)
	if err != nil || string(got) != "v2, osd.A alone" {
		t.Fatalf("osd.%d back: read %q, %v", a, got, err)
	}
}

// TestDegradedBeforeMisplaced: of five OSDs, osd.1 misses writes while
// down, then osd.4 is marked out and its PGs backfill slowly, one PG per
// primary at a time (osd_max_backfills 1); then osd.1 returns, which
// degrades its PGs (two copies of what it missed). Their recovery
// preempts the reservations of backfills of PGs osd.1 is not in: every
// PG is free of degraded objects while backfills still run, and
// everything ends clean and whole.
func TestDegradedBeforeMisplaced(t *testing.T) {
	c := startClusterWith(t, 5, "osd_max_backfills = 1\nosd_recovery_max_active = 1\nosd_recovery_sleep = 0.03\n")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	model := map[string][]byte{}
	put := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			oid := fmt.Sprintf("%s%d", prefix, i)
			model[oid] = bytes.Repeat([]byte(prefix), 100+i)
			if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("o", 400)
	c.stop(ctx, cl, 1)
	put("m", 40) // osd.1 misses these
	monDo(ctx, t, cl, "osd out", "ids", "4")
	waitState := func(what string, ok func(states []string) bool) (states []string) {
		t.Helper()
		eventually(ctx, t, func() bool { states = pgStates(ctx, t, cl, p.ID()); return ok(states) },
			func() string { return fmt.Sprintf("waiting for %s: %v", what, states) })
		return states
	}
	has := func(states []string, s string) bool {
		return slices.ContainsFunc(states, func(st string) bool { return strings.Contains(st, s) })
	}
	waitState("a backfill", func(states []string) bool { return has(states, "+backfilling") })
	// the backfilling PGs report their progress: what their plan lacked
	// at its start, and when; the copies done grow from 0 towards it
	var ev status.Event
	eventually(ctx, t, func() bool {
		pgs := pgStatsOf(ctx, t, cl, p.ID())
		for _, pg := range pgs {
			if pg.ToRecover > 0 && (pg.RecoveryTotal < pg.ToRecover || pg.RecoveryStart.IsZero()) {
				t.Fatalf("pg %s (%s): %d copies to recover of %d planned at %v", pg.PGID, pg.State, pg.ToRecover, pg.RecoveryTotal, pg.RecoveryStart)
			}
		}
		for _, e := range status.Progress(pgs, time.Now()) {
			if e.Kind == "backfill" {
				ev = e
			}
		}
		return ev.Done > 0 && ev.Done < ev.Total && ev.Remaining > 0
	}, func() string { return fmt.Sprintf("waiting for backfill progress: %+v", ev) })
	c.RestartOSD(1)
	waitState("osd.1's pgs degraded", func(states []string) bool { return has(states, "degraded") })
	states := waitState("no degraded pg", func(states []string) bool { return !has(states, "degraded") && !has(states, "peering") })
	if !has(states, "backfill") {
		t.Fatalf("the degraded pgs recovered only once every backfill was done: %v", states)
	}
	preempted := c.perfTotal(ctx, cl, func(p osdop.Perf) uint64 { return p.RecoveryPreempted })
	if preempted == 0 {
		t.Fatalf("no backfill reservation was preempted: %v", states)
	}
	t.Logf("degraded pgs recovered while backfills ran (%d reservations preempted): %v", preempted, states)
	waitClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, "clean")
}

// TestBackfillsIntoOneOSD: osd_max_backfills bounds the backfills into an
// OSD, not only those each primary runs (Ceph's remote reservations): a
// fourth OSD added to three is the target of PGs of every primary, and
// with osd_max_backfills 1 it never holds more than one grant, while the
// backfills still all complete.
func TestBackfillsIntoOneOSD(t *testing.T) {
	c := startClusterWith(t, 3, "osd_max_backfills = 1\nosd_recovery_sleep = 0.005\n")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	model := map[string][]byte{}
	for i := range 300 {
		oid := fmt.Sprintf("o%d", i)
		model[oid] = bytes.Repeat([]byte{byte(i)}, 2000+i)
		if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
			t.Fatal(err)
		}
	}
	waitClean(ctx, t, cl, p.ID())
	c.AddOSD() // osd.3
	target := c.OSDs[3]
	stop := make(chan struct{})
	seen := make(chan int)
	go func() { // owned by this test: ends with stop
		most := 0
		for {
			most = max(most, osd.RemoteGrants(target))
			select {
			case <-stop:
				seen <- most
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	backfillClean(ctx, t, cl, p.ID())
	close(stop)
	most := <-seen
	if most != 1 {
		t.Fatalf("osd.3 held at most %d remote recovery reservations at once while it was backfilled; want 1 (osd_max_backfills)", most)
	}
	verifyModel(ctx, t, p, model, "backfilled")
	if n := c.held(3, p.ID()); n == 0 {
		t.Fatal("osd.3 holds no object after the backfill")
	}
}

// TestReweightMovesMinimum: a CRUSH weight change on a 3-replica pool
// moves only the copies whose placement changed — exactly one copy of
// each object for each OSD new to its PG's up set, counted by the OSDs'
// recovery_ops — and the cluster settles clean, every object at three
// copies, the replaced copies deleted.
func TestReweightMovesMinimum(t *testing.T) {
	c := startCluster(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, p := c.pool(ctx, "p")
	model := map[string][]byte{}
	for i := range 200 {
		putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), bytes.Repeat([]byte{byte(i), 7}, 500+i))
	}
	waitClean(ctx, t, cl, p.ID())
	before, err := cl.Map().PGMappings(p.ID())
	if err != nil {
		t.Fatal(err)
	}
	moved := func() uint64 { return c.perfTotal(ctx, cl, func(p osdop.Perf) uint64 { return p.RecoveryOps }) }
	base := moved()
	monDo(ctx, t, cl, "osd crush reweight", "name", "osd.1", "weight", "0.3")
	if err := cl.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := cl.Map().PGMappings(p.ID())
	if err != nil {
		t.Fatal(err)
	}
	objects := objectsPerPG(t, cl.Map(), p.ID(), model)
	minimum, pgs := 0, 0
	for seed, mp := range after {
		n := 0
		for _, o := range mp.Up {
			if !slices.Contains(before[seed].Acting, o) {
				n++
			}
		}
		minimum += n * objects[uint32(seed)]
		if n > 0 {
			pgs++
		}
	}
	if minimum == 0 {
		t.Fatal("the reweight moved no object: the test proves nothing")
	}
	eventually(ctx, t, func() bool { return moved()-base >= uint64(minimum) },
		func() string { return fmt.Sprintf("%d copies moved, the minimum is %d", moved()-base, minimum) })
	backfillClean(ctx, t, cl, p.ID())
	if n := moved() - base; n != uint64(minimum) {
		t.Fatalf("the reweight moved %d copies, the minimum is %d", n, minimum)
	}
	c.waitCopies(ctx, p.ID(), model, 3)
	verifyModel(ctx, t, p, model, "after the reweight")
	t.Logf("osd.1 reweighted to 0.3: %d of %d pgs changed placement; %d copies moved, the minimum", pgs, len(after), minimum)
}
