package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// firewall is an nftables table of this test's own, which drops traffic
// between chosen loopback addresses (its daemons listen on, and dial
// from, addresses of their own in 127.0.0.0/8). Close deletes it.
type firewall struct {
	t     *testing.T
	table string
}

func newFirewall(t *testing.T) *firewall {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the partition test needs root (nftables rules on loopback); CI runs as root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatal("nft is missing (Debian package nftables; .ci/run installs it)")
	}
	f := &firewall{t: t, table: fmt.Sprintf("shoal_e2e_%d_%s", os.Getpid(), strings.ToLower(t.Name()))}
	f.nft("add table ip " + f.table)
	t.Cleanup(f.remove)
	f.nft("add chain ip " + f.table + " out { type filter hook output priority 0 ; policy accept ; }")
	return f
}

func (f *firewall) nft(cmd string) {
	f.t.Helper()
	if out, err := exec.Command("nft", strings.Fields(cmd)...).CombinedOutput(); err != nil {
		f.t.Fatalf("nft %s: %v\n%s", cmd, err, out)
	}
}

// cut drops every packet between a and each of others, both ways (silent
// drops, as a failed switch port or cable: connections time out).
func (f *firewall) cut(a string, others ...string) {
	set := "{ " + strings.Join(others, ", ") + " }"
	f.nft("add rule ip " + f.table + " out ip saddr " + a + " ip daddr " + set + " drop")
	f.nft("add rule ip " + f.table + " out ip saddr " + set + " ip daddr " + a + " drop")
}

// heal removes every cut.
func (f *firewall) heal() { f.nft("flush chain ip " + f.table + " out") }

// remove deletes the table (the test's cleanup).
func (f *firewall) remove() {
	exec.Command("nft", "delete", "table", "ip", f.table).Run()
}

// TestNetworkPartition: one OSD of four loses its network to the other
// OSDs (not to the MONs or clients) under a verifying read/write load.
// Its peers report it, the MONs mark it down and its PGs go on without
// it; it sees itself marked down while alive and boots again, and is
// marked down again — it flaps, until osd_max_markdown_count markdowns in
// osd_max_markdown_period keep it down for the rest of the period. No
// split brain: no write is acknowledged that the others did not commit,
// no read returns an older version than one acknowledged before it, and
// I/O goes on. Healed, it boots once the period allows and rejoins;
// every acknowledged write is there and the copies are identical.
func TestNetworkPartition(t *testing.T) {
	t.Parallel() // waits more than it computes: runs beside another such test (e2e_test.go)
	partition(t, false)
}

// TestBackNetworkPartition is TestNetworkPartition with a cluster (back)
// network: each OSD has a public and a cluster address, and only the
// cluster network between osd.3 and the others is cut — its public
// address still answers the others' front heartbeats, the MONs and the
// clients. The back heartbeats find it; the rest goes as with one network.
func TestBackNetworkPartition(t *testing.T) {
	t.Parallel()
	partition(t, true)
}

func partition(t *testing.T, back bool) {
	c := up(t, "--osds", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// each OSD on addresses of its own, so the firewall can tell them
	// apart (and the two tests, which may run at once, theirs)
	lan := 0
	if back {
		lan = 2
	}
	ip := func(i int) string { return fmt.Sprintf("127.0.%d.%d", lan, 20+i) }
	backIP := func(i int) string { return fmt.Sprintf("127.0.1.%d", 20+i) }
	conf := filepath.Join(c.data, "shoal.conf")
	extra := ""
	for i := range 4 {
		extra += fmt.Sprintf("\n[osd.%d]\npublic_addr = %s:0\n", i, ip(i))
		if back {
			extra += fmt.Sprintf("cluster_addr = %s:0\n", backIP(i))
		}
	}
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i := range 4 {
		c.kill9(fmt.Sprintf("osd.%d", i))
	}
	c.up()
	c.must("config", "set", "osd", "osd_heartbeat_grace", "4")
	c.must("config", "set", "osd", "osd_max_markdown_count", "3")
	c.must("config", "set", "osd", "osd_max_markdown_period", "30")
	conn, p := c.connPool(ctx)
	for i := range 4 {
		o := conn.Map().OSDs[i]
		if !strings.HasPrefix(o.Addr, ip(i)+":") || back != strings.HasPrefix(o.ClusterAddr, backIP(i)+":") || (!back && o.ClusterAddr != "") {
			t.Fatalf("osd.%d at %s, cluster %q; want %s (cluster network %v)", i, o.Addr, o.ClusterAddr, ip(i), back)
		}
	}
	fw := newFirewall(t)
	l := startLoad(ctx, t, p, 4, 2, 60)
	l.waitOps(ctx, 300, "before the partition")

	start := time.Now()
	if back {
		fw.cut(backIP(3), backIP(0), backIP(1), backIP(2))
	} else {
		fw.cut(ip(3), ip(0), ip(1), ip(2))
	}
	waitMap(ctx, t, conn, "osd.3 down", func(m *osdmap.Map) bool { return !m.OSDs[3].Up })
	down := time.Since(start)
	if back { // its public address still answers
		if _, err := conn.OSDStats(ctx, 3); err != nil {
			t.Fatalf("osd.3's public address, with only its cluster network cut: %v", err)
		}
	}
	// it flaps until it holds itself down
	logPath := filepath.Join(c.data, "log", "osd.3.log")
	for {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), "marked down in the map while alive too often") {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("osd.3 never held itself down")
		}
		l.waitOps(ctx, 50, "with osd.3 cut off")
	}
	damped := time.Since(start)
	l.waitOps(ctx, 500, "with osd.3 held down")

	fw.heal()
	c.waitHealth("HEALTH_OK", 3*time.Minute)
	healed := time.Since(start)
	l.waitOps(ctx, 300, "after the partition healed")
	b, _ := os.ReadFile(logPath)
	t.Logf("%d ops; osd.3 cut off (cluster network only: %v): marked down after %v, booted again %d times, held down after %v; HEALTH_OK %v after the cut",
		l.ops.Load(), back, down.Round(time.Millisecond), strings.Count(string(b), "booting again"), damped.Round(time.Millisecond), healed.Round(time.Millisecond))
	if !back {
		cutPair(ctx, t, c, fw, l, conn, ip)
	}
	c.checkLoad(ctx, l, conn, p, "after the partition healed")
}

// cutPair cuts osd.0 from osd.1 alone under the load, for twice the
// heartbeat grace: each reports the other, but one reporter apiece is
// below mon_osd_min_down_reporters (2), so neither is marked down — as in
// Ceph, the writes of the PGs they share wait, and health says so (slow
// ops, osd_op_complaint_time set to 2 s here) rather than anything
// failing or being acknowledged without both copies. Healed, the waiting
// writes complete, the warning clears and the load goes on.
func cutPair(ctx context.Context, t *testing.T, c *tcluster, fw *firewall, l *load, conn *client.Conn, ip func(int) string) {
	t.Helper()
	c.must("config", "set", "osd", "osd_op_complaint_time", "2")
	fw.cut(ip(0), ip(1))
	start := time.Now()
	for {
		var st struct {
			OSDStats []osdop.Stats `json:"osd_stats"`
		}
		out := c.must("status", "--format", "json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		oldest := 0.0
		for _, o := range st.OSDStats {
			oldest = max(oldest, o.SlowOpOldest)
		}
		if oldest >= 8 { // twice the grace: both have reported each other
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("osd.0 cut from osd.1: no op blocked 8 s:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	out := c.must("health", "detail")
	t.Logf("cut osd.0 / osd.1: %v later\n%s", time.Since(start).Round(time.Millisecond), out)
	// the writes waiting on the other OSD are slow ops; an op that meets
	// a PG waiting in peering goes back to its client after 5 s (which
	// resends it), so one of the two may have none at this moment
	if !strings.Contains(out, "slow ops, oldest one blocked for") || !strings.Contains(out, "pgs inactive") ||
		!(strings.Contains(out, "osd.0 has") || strings.Contains(out, "osd.1 has")) {
		t.Errorf("health during the cut: want slow ops on osd.0 or osd.1 and inactive PGs:\n%s", out)
	}
	if err := conn.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	if m := conn.Map(); !m.OSDs[0].Up || !m.OSDs[1].Up {
		t.Errorf("a cut between two OSDs marked one down (one reporter each, below mon_osd_min_down_reporters): osd.0 up %v, osd.1 up %v", m.OSDs[0].Up, m.OSDs[1].Up)
	}
	fw.heal()
	c.waitHealth("HEALTH_OK", 2*time.Minute)
	l.waitOps(ctx, 300, "after the cut between osd.0 and osd.1 healed")
	t.Logf("cut between osd.0 and osd.1 healed: HEALTH_OK %v after the cut", time.Since(start).Round(time.Millisecond))
}
