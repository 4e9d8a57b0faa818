package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/osdmap"
)

// balanced reports whether every OSD holds each pool's PG copies within
// one of its weighted share, by osdmap's distribution (not the
// balancer's own count), and the worst pool's max/target.
func balanced(t *testing.T, m *osdmap.Map) (bool, float64) {
	t.Helper()
	ok, worst := true, 0.0
	for _, id := range m.PoolIDs() {
		d, err := m.PGDistribution(id)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, d.MaxRatio)
		for o, exp := range d.Expected {
			if c := float64(d.Count[o]); c > exp+1 || c < exp-1 {
				ok = false
			}
		}
	}
	return ok, worst
}

// TestBalancer balances a live cluster under client load: by hand
// (optimize, show, execute) across a replicated and an erasure-coded
// pool, with a backfill target SIGKILLed in the middle of the moves,
// then automatically (balancer on) after a reweight moves PGs.
// Every OSD ends within one PG copy of its share, the cluster clean,
// and every acknowledged write reads back. Bad input: a plan over a
// cluster with an OSD down is refused and none is written, a stale plan
// is refused, and the MONs wait while an OSD is down.
func TestBalancer(t *testing.T) {
	c := up(t, "--osds", "6")
	c.must("osd", "erasure-code-profile", "set", "p21", "k=2", "m=1", "crush-failure-domain=osd")
	c.must("pool", "create", "ec", "erasure", "p21")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, p := c.connPool(ctx)
	ecp, err := conn.Pool(ctx, "ec")
	if err != nil {
		t.Fatal(err)
	}
	c.waitClean(time.Minute)
	l := startLoad(ctx, t, p, 3, 1, 80)
	le := startLoad(ctx, t, ecp, 2, 1, 40)
	l.waitOps(ctx, 200, "before balancing")
	refresh := func() *osdmap.Map {
		if err := conn.RefreshMap(ctx); err != nil {
			t.Fatal(err)
		}
		return conn.Map()
	}
	if ok, worst := balanced(t, refresh()); ok {
		t.Fatalf("the cluster starts balanced (max/target %.3f): nothing to test", worst)
	} else {
		t.Logf("before: max/target %.3f", worst)
	}

	plan := filepath.Join(t.TempDir(), "plan.json")
	out := c.must("balancer", "optimize", plan)
	if !strings.Contains(out, "PG(s) to change") {
		t.Fatalf("optimize: %q", out)
	}
	if show := c.must("balancer", "show", plan); !strings.Contains(show, "shoal osd pg-upmap-items ") {
		t.Fatalf("show: %q", show)
	}
	// the moves backfill slowly, and a backfill target is killed in the
	// middle of one
	c.must("config", "set", "osd", "osd_recovery_max_active", "1")
	c.must("config", "set", "osd", "osd_recovery_sleep", "0.05")
	c.must("balancer", "execute", plan)
	var victim int32 = -1
	waitMap(ctx, t, conn, "a backfill the plan started (pg_temp)", func(m *osdmap.Map) bool {
		for pg := range m.PGTemp {
			if mp, err := m.MapPG(pg); err == nil {
				for _, o := range mp.Up {
					if !slices.Contains(mp.Acting, o) && o != osdmap.NoOSD {
						victim = o
						return true
					}
				}
			}
		}
		return false
	})
	name := fmt.Sprintf("osd.%d", victim)
	c.kill9(name)
	waitMap(ctx, t, conn, name+" down", func(m *osdmap.Map) bool { return !m.OSDs[victim].Up })
	l.waitOps(ctx, 50, "with "+name+" killed mid-backfill")
	c.startOSD(name)
	c.must("config", "rm", "osd", "osd_recovery_sleep")
	c.waitClean(3 * time.Minute)
	if ok, worst := balanced(t, refresh()); !ok {
		t.Fatalf("after execute: not within one PG of target (max/target %.3f)", worst)
	} else {
		t.Logf("after execute: max/target %.3f, %d PGs with pg_upmap_items", worst, len(conn.Map().PGUpmapItems))
	}
	l.waitOps(ctx, 100, "after the plan")
	le.waitOps(ctx, 50, "after the plan (erasure-coded)")

	// a plan made before the map changed is refused
	stale := filepath.Join(t.TempDir(), "stale.json")
	c.must("balancer", "optimize", stale)
	c.must("osd", "set", "noscrub")
	c.must("osd", "unset", "noscrub")
	if out, err := c.run("balancer", "execute", stale); err == nil || !strings.Contains(out, "run `shoal balancer optimize` again") {
		t.Fatalf("stale plan: %v %q", err, out)
	}

	// nothing is planned over a cluster with an OSD down
	c.kill9("osd.5")
	waitMap(ctx, t, conn, "osd.5 down", func(m *osdmap.Map) bool { return !m.OSDs[5].Up })
	down := filepath.Join(t.TempDir(), "down.json")
	if out, err := c.run("balancer", "optimize", down); err == nil || !strings.Contains(out, "cluster not clean") {
		t.Fatalf("optimize with osd.5 down: %v %q", err, out)
	}
	if _, err := os.Stat(down); !os.IsNotExist(err) {
		t.Fatalf("a plan was written with osd.5 down: %v", err)
	}
	c.must("config", "set", "mon", "balancer_sleep_interval", "1")
	c.must("balancer", "on")
	waitStatus(ctx, t, c, `"waiting": "osd.5 is down"`)
	c.startOSD("osd.5")
	c.waitClean(3 * time.Minute)

	// halving osd.0's CRUSH weight moves PGs; the MONs balance again, in
	// rounds
	host := refresh().Crush.Parent(0)
	w := float64(host.ItemWeights[slices.Index(host.Items, 0)]) / crush.WeightOne
	c.must("osd", "crush", "reweight", "osd.0", strconv.FormatFloat(w/2, 'f', 6, 64))
	deadline := time.Now().Add(3 * time.Minute)
	for {
		m := refresh()
		if ok, _ := balanced(t, m); ok && len(m.PGTemp) == 0 {
			break
		}
		if time.Now().After(deadline) {
			_, worst := balanced(t, m)
			for _, id := range m.PoolIDs() {
				d, _ := m.PGDistribution(id)
				t.Logf("pool %d: copies per OSD %v, targets %v", id, d.Count, d.Expected)
			}
			t.Logf("pg_upmap %v, pg_upmap_items %v, pg_temp %v", m.PGUpmap, m.PGUpmapItems, m.PGTemp)
			t.Fatalf("automatic balancing did not finish in 3 minutes (max/target %.3f): %s\n%s", worst, c.must("balancer", "status"), c.must("balancer", "eval"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.waitClean(3 * time.Minute)
	waitStatus(ctx, t, c, `"result": "balanced: nothing to move"`)
	c.must("balancer", "off")
	if !c.checkLoad(ctx, l, conn, p, "after balancing") || !c.checkLoad(ctx, le, conn, ecp, "after balancing (erasure-coded)") {
		return
	}
	t.Logf("%d ops, %d on the erasure-coded pool", l.ops.Load(), le.ops.Load())
}

// waitStatus waits until `shoal balancer status` says want.
func waitStatus(ctx context.Context, t *testing.T, c *tcluster, want string) {
	t.Helper()
	for {
		out := c.must("balancer", "status")
		if strings.Contains(out, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("balancer status never said %s: %s", want, out)
		case <-time.After(300 * time.Millisecond):
		}
	}
}
