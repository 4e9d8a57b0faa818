package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
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
	c.mergedAfterRestart(ctx, conn, p, l, 8, 3000, "osd.1")
	t.Logf("osd.1 logged %d merges", k.count())
}

// TestECMergeStepsSurviveKill9: an erasure-coded 2+1 pool (failure
// domain osd) of 6 PGs on 4 OSDs, holding 1,500 objects, shrinks to 4 PGs
// under writers and readers with pgp_num coming down first, so that
// positional pg_upmaps leave some source's OSD holding one position of
// the source and another of its target: the MONs move such a source
// through a spare OSD, one backfill at a time. The spare of the first
// such step is killed with SIGKILL as soon as the leader logs the step,
// while the backfill to it runs, and started again after the load has
// gone on without it (ecMergeStepsKill: the step named by a pattern of
// the leader's log line, the victim picked from its match). The merges then complete (pg_num 4), the cluster
// returns to HEALTH_OK, every acknowledged write reads back whole (no
// read during it saw an older or torn version), and each PG counts the
// objects a listing finds in it.
func TestECMergeStepsSurviveKill9(t *testing.T) {
	c := up(t, "--osds", "4", "--set", "target_max_misplaced_ratio=0.5")
	ecMergeStepsKill(t, c, "osd", `through osd\.(\d+)\)`, func(m []string) string { return "osd." + m[1] })
}

// TestECMergeSameHostSpareKill9 is TestECMergeStepsSurviveKill9 on six
// OSDs in three hosts with failure domain host: every PG spans every
// host, so shards move through the other OSD of their own host, and once
// no OSD holds two positions the source takes its target's placement,
// every position's OSD coming in at once. The kill is of an OSD coming
// in then, while it is backfilled.
func TestECMergeSameHostSpareKill9(t *testing.T) {
	c := up(t, "--osds", "6", "--set", "target_max_misplaced_ratio=0.5")
	for o := range 6 {
		c.must("osd", "crush", "add", fmt.Sprintf("osd.%d", o), "1", fmt.Sprintf("host=h%d", o/2), "root=default")
	}
	ecMergeStepsKill(t, c, "host", `pg (\S+) given the upmaps of pg \S+, to merge into it`, func(m []string) string {
		// the source's last step: "pg SRC placed on [NEXT] (…), toward
		// pg DST's shard order [WANT]": an OSD of WANT not in NEXT
		steps := c.monLogMatches(regexp.MustCompile(`pg ` + regexp.QuoteMeta(m[1]) + ` placed on \[([\d ]+)\] \(.*\), toward pg \S+'s shard order \[([\d ]+)\]`))
		if len(steps) == 0 {
			t.Fatalf("pg %s took its target's placement with no step through a spare before: the same-host spares were not exercised", m[1])
		}
		last := steps[len(steps)-1]
		next := strings.Fields(last[1])
		for _, o := range strings.Fields(last[2]) {
			if !slices.Contains(next, o) {
				return "osd." + o
			}
		}
		t.Fatalf("pg %s's last step %q brings no OSD in", m[1], last[0])
		return ""
	})
}

func ecMergeStepsKill(t *testing.T, c *tcluster, domain, step string, victim func(match []string) string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn := c.connect(ctx)
	c.must("osd", "erasure-code-profile", "set", "m21", "k=2", "m=1", "stripe_unit=4096", "crush-failure-domain="+domain)
	if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "ecmerge", "type": "erasure", "erasure_code_profile": "m21", "pg_num": "6", "pgp_num": "6"}); err != nil {
		t.Fatal(err)
	}
	p, err := conn.Pool(ctx, "ecmerge")
	if err != nil {
		t.Fatal(err)
	}
	c.waitClean(60 * time.Second)
	prefill(ctx, t, p, 1500)
	l := startLoad(ctx, t, p, 4, 2, 50)
	l.waitOps(ctx, 200, "before the merges")

	c.must("pool", "set", "ecmerge", "pg_num", "4")
	m := c.waitMonLog(ctx, regexp.MustCompile(step))
	dead := victim(m)
	c.kill9(dead)
	t.Logf("killed %s: %s", dead, m[0])
	l.waitOps(ctx, 200, "with "+dead+" killed mid-step")
	c.mergedAfterRestart(ctx, conn, p, l, 4, 1500, dead)
}

// mergedAfterRestart checks that pool p has not reached pgNum PGs with
// killed down (the kill came before the last merge), starts killed
// again, waits for the merges to end, and checks the cluster as
// verifyAfterLoad does.
func (c *tcluster) mergedAfterRestart(ctx context.Context, conn *client.Conn, p *client.Pool, l *load, pgNum uint32, prefilled int, killed string) {
	t := c.t
	t.Helper()
	if err := conn.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	if pool, err := conn.Map().Pool(p.ID()); err == nil && pool.PGNum == pgNum {
		t.Fatalf("every merge done with %s down: the kill came too late to test a restart mid-merges", killed)
	}
	c.up() // starts it again
	waitMap(ctx, t, conn, fmt.Sprintf("pg_num %d", pgNum), func(m *osdmap.Map) bool {
		pool, err := m.Pool(p.ID())
		return err == nil && pool.PGNum == pgNum && pool.PGNumTarget == 0
	})
	l.waitOps(ctx, 200, "after the merges")
	c.verifyAfterLoad(ctx, conn, p, l, prefilled, "after the merges and the kill of "+killed)
}

// monLogMatches returns, for each line of the MONs' logs that re
// matches (each log's in order), the line and then re's groups.
func (c *tcluster) monLogMatches(re *regexp.Regexp) [][]string {
	logs, _ := filepath.Glob(filepath.Join(c.data, "log", "mon.*.log"))
	var out [][]string
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		for line := range bytes.Lines(b) {
			if m := re.FindSubmatch(line); m != nil {
				groups := []string{string(bytes.TrimSpace(line))}
				for _, g := range m[1:] {
					groups = append(groups, string(g))
				}
				out = append(out, groups)
			}
		}
	}
	return out
}

// waitMonLog waits for a line matching re in any MON's log (the leader
// logs its own steps) and returns it and re's groups (monLogMatches).
func (c *tcluster) waitMonLog(ctx context.Context, re *regexp.Regexp) []string {
	c.t.Helper()
	for ctx.Err() == nil {
		if ms := c.monLogMatches(re); len(ms) > 0 {
			return ms[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("no MON logged a line matching %q", re)
	return nil
}
