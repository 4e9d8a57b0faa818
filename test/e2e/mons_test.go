package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// monDump is `shoal mon dump` parsed: each MON's id (mon.X) → its role
// ("voter" or "non-voter").
func (c *tcluster) monDump() map[string]string {
	c.t.Helper()
	out := c.must("mon", "dump")
	roles := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 3 {
			c.t.Fatalf("mon dump line %q:\n%s", l, out)
		}
		roles[f[0]] = f[2]
	}
	return roles
}

// waitVoters waits until the MON map's members are ids, all voting.
func (c *tcluster) waitVoters(ctx context.Context, ids ...string) {
	c.t.Helper()
	want := map[string]string{}
	for _, id := range ids {
		want["mon."+id] = "voter"
	}
	var last map[string]string
	for {
		if last = c.monDump(); fmt.Sprint(last) == fmt.Sprint(want) {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("MON map %v, want %v", last, want)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// monLeader is the leading MON's name (mon.X), as `shoal status` sees it.
func (c *tcluster) monLeader() string {
	c.t.Helper()
	var st struct {
		Mons []struct {
			Addr   string
			Leader bool
		}
	}
	out := c.must("status", "--format", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("status: %v\n%s", err, out)
	}
	conf := c.conf()
	for _, m := range st.Mons {
		for _, id := range conf.MonIDs() {
			if m.Leader && conf.For("mon."+id).String("public_addr") == m.Addr {
				return "mon." + id
			}
		}
	}
	c.t.Fatalf("no leader in the status:\n%s", out)
	return ""
}

// TestMonAddRemove grows the MONs 1 → 3 → 5 with `shoal mon add` and
// shrinks them back to 1 with `shoal mon rm` — the first MON removed
// among them — under client load: a client that knew only the first
// MON writes objects and runs MON commands throughout, and sees no
// error. Each size is proven a real quorum by SIGKILLs it must survive
// (one MON of three, two of five), and the leader is SIGKILLed while two
// added MONs wait to be promoted; each removed MON stops by itself; the
// last one restarts with its state.
func TestMonAddRemove(t *testing.T) {
	t.Parallel() // waits more than it computes: runs beside another such test (e2e_test.go)
	c := up(t, "--mons", "1", "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, pool := c.connPool(ctx) // its mon_host: mon.a's address only
	firstMon := conn.MonAddrs()

	// the load: an object write, and a MON command every 4th, each given
	// 30 s (MON elections, followed MON maps)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var loadErrs []string
	written := 0
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			octx, ocancel := context.WithTimeout(ctx, 30*time.Second)
			err := pool.WriteFull(octx, fmt.Sprintf("load-%d", i), []byte(fmt.Sprintf("object %d", i)))
			if err == nil && i%4 == 0 {
				_, err = conn.MonCommand(octx, "config dump", nil)
			}
			ocancel()
			mu.Lock()
			if err != nil {
				loadErrs = append(loadErrs, fmt.Sprintf("%s: op %d: %v", time.Now().Format(time.StampMilli), i, err))
			} else {
				written = i + 1
			}
			mu.Unlock()
		}
	})
	stopLoad := func() {
		close(stop)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(loadErrs) > 0 {
			t.Fatalf("the client saw %d errors during the MON changes:\n%s", len(loadErrs), strings.Join(loadErrs, "\n"))
		}
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()

	// 1 → 3
	c.must("mon", "add", "b")
	c.must("mon", "add", "c")
	if roles := c.monDump(); roles["mon.b"] != "non-voter" || roles["mon.c"] != "non-voter" {
		t.Fatalf("MONs added but not started are non-voters: %v", roles)
	}
	c.up("--no-gateway") // starts the MONs added to shoal.conf
	c.waitVoters(ctx, "a", "b", "c")
	c.kill9("mon.a") // the only MON the client was configured with
	c.must("pool", "create", "three", "--size", "2", "--pg-num", "8")
	c.up("--no-gateway")

	// 3 → 5, the leader SIGKILLed while the two added are non-voters: the
	// next leader promotes them once they have caught up
	c.must("mon", "add", "d")
	c.must("mon", "add", "e")
	c.kill9(c.monLeader())
	c.up("--no-gateway")
	c.waitVoters(ctx, "a", "b", "c", "d", "e")
	c.kill9("mon.a")
	c.kill9("mon.b")
	c.must("pool", "create", "five", "--size", "2", "--pg-num", "8")
	c.up("--no-gateway")
	c.waitVoters(ctx, "a", "b", "c", "d", "e")

	// 5 → 1, the first MON among those removed; each stops by itself
	for _, id := range []string{"e", "a", "d", "c"} {
		name := "mon." + id
		pid := c.pid(name)
		c.must("mon", "rm", id)
		c.waitGone(name, pid)
		if log, _ := os.ReadFile(filepath.Join(c.data, "log", name+".log")); !bytes.Contains(log, []byte("removed from the MON map")) {
			t.Fatalf("%s stopped without saying it was removed", name)
		}
	}
	c.waitVoters(ctx, "b")
	if out, err := c.run("mon", "rm", "b"); err == nil || !strings.Contains(out, "last MON") {
		t.Fatalf("removing the last MON: %v\n%s", err, out)
	}
	// the one left restarts with its state and is the whole quorum
	c.kill9("mon.b")
	c.up("--no-gateway")
	c.waitVoters(ctx, "b")
	c.must("pool", "create", "one", "--size", "2", "--pg-num", "8")
	stopLoad()

	// the client followed the MON map from mon.a to mon.b alone
	bAddr := c.conf().For("mon.b").String("public_addr")
	for got := conn.MonAddrs(); !slices.Equal(got, []string{bAddr}); got = conn.MonAddrs() {
		select {
		case <-ctx.Done():
			t.Fatalf("the client follows MONs %v, want mon.b's %s (it started with %v)", got, bAddr, firstMon)
		case <-time.After(50 * time.Millisecond):
		}
	}
	// every acknowledged write reads back through a new client of mon.b
	mu.Lock()
	n := written
	mu.Unlock()
	if n < 20 {
		t.Fatalf("the load wrote %d objects", n)
	}
	p := c.pool(ctx)
	for i := range n {
		got, err := p.Read(ctx, fmt.Sprintf("load-%d", i), 0, 0)
		if want := fmt.Sprintf("object %d", i); err != nil || string(got) != want {
			t.Fatalf("load-%d: %q, %v; want %q", i, got, err, want)
		}
	}
	t.Logf("%d objects written across the MON changes", n)
}
