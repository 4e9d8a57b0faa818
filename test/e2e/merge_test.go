package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/shoal-project/shoal/osdmap"
)

// TestMergeSurvivesKill9: a pool of 16 PGs holding 3,000 objects shrinks
// to 8 PGs under writers and readers; osd.1 is killed with SIGKILL as
// soon as its log shows its first merge (the other merges still to come:
// they wait for it, as their PGs are no longer clean) and started again,
// when it merges the copies it holds of the PGs merged meanwhile. The
// cluster returns to HEALTH_OK with pg_num 8; every acknowledged write
// reads back whole (no read during it saw an older or torn version), and
// each PG counts the objects a listing finds in it.
func TestMergeSurvivesKill9(t *testing.T) {
	c := up(t, "--osds", "3", "--set", "target_max_misplaced_ratio=0.5")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := c.connect(ctx)
	if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "merge", "size": "3", "pg_num": "16"}); err != nil {
		t.Fatal(err)
	}
	p, err := conn.Pool(ctx, "merge")
	if err != nil {
		t.Fatal(err)
	}
	prefill(ctx, t, p, 3000)
	l := startLoad(ctx, t, p, 4, 2, 50)
	l.waitOps(ctx, 200, "before the merges")

	// kill osd.1 once it has merged one PG
	k := c.killOnLog(ctx, "osd.1", "merged pg")
	c.must("pool", "set", "merge", "pg_num", "8")
	k.wait(t)
	l.waitOps(ctx, 200, "with osd.1 killed mid-merges")
	if m := conn.Map(); m != nil {
		if pool, err := m.Pool(p.ID()); err == nil && pool.PGNum == 8 {
			t.Fatal("every merge done with osd.1 down: the kill came too late to test a restart mid-merges")
		}
	}
	c.up() // starts osd.1 again
	waitMap(ctx, t, conn, "pg_num 8", func(m *osdmap.Map) bool {
		pool, err := m.Pool(p.ID())
		return err == nil && pool.PGNum == 8 && pool.PGNumTarget == 0
	})
	l.waitOps(ctx, 200, "after the merges")
	l.finish()
	c.waitHealth("HEALTH_OK", 90*time.Second)
	c.waitClean(90 * time.Second)
	l.verify(ctx, "after the merges and the kill")
	verifyPrefill(ctx, t, p, 3000)
	n, wrong := c.poolObjects(ctx, conn, p)
	if len(wrong) > 0 || n != 3000+len(l.acked) {
		t.Fatalf("pgs count %d objects (want %d): %v", n, 3000+len(l.acked), wrong)
	}
	t.Logf("osd.1 logged %d merges", k.count())
}
