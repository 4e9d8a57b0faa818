// Package e2e starts real Shoal clusters — `shoal up`, separate MON and
// OSD processes on 127.0.0.1 — and kills their daemons with SIGKILL.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

var shoalBin string

// Tests that spend most of their time waiting (for a watch or a read
// lease to expire, for peering after a kill) rather than computing call
// t.Parallel: they run after the others, two at a time (-parallel is
// GOMAXPROCS), each cluster on its own ports (clusterPorts). Measured
// here alone, those measured kept the two cores 20 to 55 % busy; the longest of
// the others (TestKillsDuringBackfill, 80 %) gain nothing from company.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shoal-e2e-")
	if err != nil {
		panic(err)
	}
	shoalBin = filepath.Join(dir, "shoal")
	// static (no cgo): TestComposeCluster puts it in a FROM-scratch image
	build := exec.Command("go", "build", "-o", shoalBin, "github.com/shoal-project/shoal/cmd/shoal")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build shoal: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// tcluster is a cluster started by `shoal up` in a temporary directory.
type tcluster struct {
	t    *testing.T
	data string
}

// up starts a cluster without the S3 gateway (fewer pools to peer: the
// RADOS tests start faster); upWithGateway starts `shoal up`'s default.
func up(t *testing.T, args ...string) *tcluster {
	t.Helper()
	return startUp(t, append([]string{"--no-gateway"}, args...)...)
}

func upWithGateway(t *testing.T, args ...string) *tcluster {
	t.Helper()
	return startUp(t, args...)
}

// clusterPorts numbers the test clusters: each takes its ports from its
// own range (shoal up --base-port), so that clusters of tests running in
// parallel, or one whose daemons are down for a while, never meet.
var clusterPorts atomic.Int32

func startUp(t *testing.T, args ...string) *tcluster {
	t.Helper()
	c := &tcluster{t: t, data: t.TempDir()}
	// a range another process holds a port of is refused before anything
	// is made: take the next
	for try := 0; ; try++ {
		base := 20000 + 20*int(clusterPorts.Add(1))
		out, err := c.tryUp(append([]string{"--base-port", strconv.Itoa(base)}, args...)...)
		if err == nil {
			break
		}
		if !strings.Contains(out, "is in use") || try == 10 {
			t.Fatalf("shoal up: %v\n%s", err, out)
		}
		t.Logf("shoal up: %s", strings.TrimSpace(out))
	}
	t.Cleanup(func() {
		// SHOAL_E2E_DUMP=DIR: a failed test's daemons dump their goroutines
		// into their logs (SIGQUIT), which are copied to DIR
		if dir := os.Getenv("SHOAL_E2E_DUMP"); t.Failed() && dir != "" {
			pids, _ := filepath.Glob(filepath.Join(c.data, "run", "*.pid"))
			for _, pf := range pids {
				b, _ := os.ReadFile(pf)
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				syscall.Kill(pid, syscall.SIGQUIT)
				for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
			}
			exec.Command("cp", "-r", filepath.Join(c.data, "log"), filepath.Join(dir, t.Name())).Run()
		}
		out, err := exec.Command(shoalBin, "down", "--data", c.data).CombinedOutput()
		if err != nil {
			t.Logf("down: %v\n%s", err, out)
		}
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(c.data, "log", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("--- %s (tail)\n%s", filepath.Base(l), tail(b, 4000))
			}
		}
	})
	return c
}

// up runs `shoal up --detach` (start or restart) and waits for HEALTH_OK.
func (c *tcluster) up(args ...string) string {
	c.t.Helper()
	out, err := c.tryUp(args...)
	if err != nil {
		c.t.Fatalf("shoal up: %v\n%s", err, out)
	}
	return out
}

func (c *tcluster) tryUp(args ...string) (string, error) {
	return c.run(append([]string{"up", "--detach", "--data", c.data, "--osd-size", "2G", "--timeout", "90s"}, args...)...)
}

func (c *tcluster) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, shoalBin, args...)
	cmd.Env = append(os.Environ(), "SHOAL_CONF="+filepath.Join(c.data, "shoal.conf"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c *tcluster) must(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("shoal %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kill9 sends SIGKILL to a daemon by its pid file and waits for it to die.
func (c *tcluster) kill9(name string) {
	c.t.Helper()
	pid := c.pid(name)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		c.t.Fatalf("kill %s (%d): %v", name, pid, err)
	}
	c.waitGone(name, pid)
}

// waitGone waits until daemon name's process pid, killed, is gone: it is
// not our child, and until it is reaped `shoal up` takes it for running.
func (c *tcluster) waitGone(name string, pid int) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s (pid %d) survived SIGKILL", name, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pid is a running daemon's pid, from its pid file.
func (c *tcluster) pid(name string) int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.data, "run", name+".pid"))
	if err != nil {
		c.t.Fatalf("%s: %v", name, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// conf is the cluster's shoal.conf as it is now.
func (c *tcluster) conf() *cluster.Conf {
	c.t.Helper()
	conf, err := cluster.FindConf(filepath.Join(c.data, "shoal.conf"))
	if err != nil {
		c.t.Fatal(err)
	}
	return conf
}

func (c *tcluster) connect(ctx context.Context) *client.Conn {
	c.t.Helper()
	conf := c.conf()
	kr, err := conf.Keyring("client.admin")
	if err != nil {
		c.t.Fatal(err)
	}
	conn, err := client.Connect(ctx, client.Config{MonAddrs: conf.MonAddrs(), Keyring: kr})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(conn.Close)
	return conn
}

// pool opens the pool "data" on a new connection.
func (c *tcluster) pool(ctx context.Context) *client.Pool {
	c.t.Helper()
	_, p := c.connPool(ctx)
	return p
}

// connPool connects a client and opens the "data" pool.
func (c *tcluster) connPool(ctx context.Context) (*client.Conn, *client.Pool) {
	c.t.Helper()
	conn := c.connect(ctx)
	p, err := conn.Pool(ctx, "data")
	if err != nil {
		c.t.Fatal(err)
	}
	return conn, p
}

func (c *tcluster) health() string {
	out, err := c.run("health", "--format", "json")
	if err != nil {
		return "error: " + out
	}
	var h struct{ Health string }
	json.Unmarshal([]byte(out), &h)
	return h.Health
}

// waitHealth polls `shoal health` until it reports want.
func (c *tcluster) waitHealth(want string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h := c.health()
		if h == want {
			return
		}
		if time.Now().After(deadline) {
			out, _ := c.run("health", "detail")
			c.t.Fatalf("health is %s, want %s after %v:\n%s", h, want, timeout, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestRadosRoundTripAndBadInput(t *testing.T) {
	c := up(t, "--osds", "3")
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	payload := make([]byte, 3<<20+17)
	for i := range payload {
		payload[i] = byte(rand.IntN(256))
	}
	os.WriteFile(in, payload, 0o644)
	c.must("rados", "-p", "data", "put", "big", in)
	c.must("rados", "-p", "data", "get", "big", filepath.Join(dir, "out"))
	if got, _ := os.ReadFile(filepath.Join(dir, "out")); !bytes.Equal(got, payload) {
		t.Fatalf("get returned %d bytes that differ from the %d put", len(got), len(payload))
	}
	c.must("rados", "-p", "data", "setxattr", "big", "owner", "alice")
	if out := c.must("rados", "-p", "data", "getxattr", "big", "owner"); out != "alice\n" {
		t.Fatalf("getxattr: %q", out)
	}
	c.must("rados", "-p", "data", "setomapval", "idx", "k1", "v1")
	c.must("rados", "-p", "data", "setomapval", "idx", "k2", "v2")
	c.must("rados", "-p", "data", "rmomapkey", "idx", "k1")
	if out := c.must("rados", "-p", "data", "listomapkeys", "idx"); out != "k2\n" {
		t.Fatalf("listomapkeys: %q", out)
	}
	if out := c.must("rados", "-p", "data", "ls"); !strings.Contains(out, "big\n") || !strings.Contains(out, "idx\n") {
		t.Fatalf("ls: %q", out)
	}
	// bad input: clear errors, nothing changed
	if out, err := c.run("rados", "-p", "nope", "put", "x", in); err == nil || !strings.Contains(out, "no such pool") {
		t.Fatalf("unknown pool: %v %q", err, out)
	}
	long := strings.Repeat("n", 2049)
	if out, err := c.run("rados", "-p", "data", "put", long, in); err == nil || !strings.Contains(out, "name too long") {
		t.Fatalf("long name: %v %q", err, out)
	}
	c.must("config", "set", "osd", "osd_max_object_size", "1M")
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := c.run("rados", "-p", "data", "put", "toolarge", in)
		if err != nil && strings.Contains(out, "too large") {
			break
		}
		if err == nil {
			c.must("rados", "-p", "data", "rm", "toolarge")
		}
		if time.Now().After(deadline) {
			t.Fatalf("osd_max_object_size 1M not applied: %v %q", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.must("config", "rm", "osd", "osd_max_object_size")
	if out, err := c.run("rados", "-p", "data", "stat", "toolarge"); err == nil || !strings.Contains(out, "no such object") {
		t.Fatalf("refused object exists: %v %q", err, out)
	}
	// a wrong key is refused
	bad := filepath.Join(dir, "bad.conf")
	conf, _ := os.ReadFile(filepath.Join(c.data, "shoal.conf"))
	os.WriteFile(bad, bytes.Replace(conf, []byte("keyring = $data/keyring"), []byte("keyring = "+filepath.Join(dir, "badkeyring")), 1), 0o644)
	os.WriteFile(filepath.Join(dir, "badkeyring"), []byte("[client.admin]\nkey = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), 0o600)
	if out, err := c.run("--conf", bad, "rados", "-p", "data", "get", "big", "-"); err == nil || !strings.Contains(out, "authentication") {
		t.Fatalf("wrong key: %v %q", err, out)
	}
	if out := c.must("rados", "-p", "data", "stat", "big"); !strings.Contains(out, fmt.Sprintf("size %d", len(payload))) {
		t.Fatalf("stat after bad input: %q", out)
	}
}

// TestKillPrimaryDuringWrites kills an OSD with SIGKILL while a client
// writes; every write acknowledged before, during and after must read
// back, also once the OSD returns and catches up.
func TestKillPrimaryDuringWrites(t *testing.T) {
	c := up(t, "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := c.pool(ctx)
	var mu sync.Mutex
	acked := map[string][]byte{}
	var failed []error
	writers, stop := sync.WaitGroup{}, make(chan struct{})
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				oid := fmt.Sprintf("w%d-%d", w, i)
				data := bytes.Repeat([]byte(oid+"|"), 50+i%300)
				wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
				err := p.WriteFull(wctx, oid, data)
				wcancel()
				mu.Lock()
				if err != nil {
					failed = append(failed, fmt.Errorf("%s: %w", oid, err))
				} else {
					acked[oid] = data
				}
				mu.Unlock()
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitCount := func(n int) {
		for count() < n {
			if ctx.Err() != nil {
				t.Fatalf("only %d writes acknowledged", count())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCount(200)
	c.kill9("osd.0") // the primary of about a third of the PGs
	before := count()
	waitCount(before + 300) // writes continue once the map marks osd.0 down
	close(stop)
	writers.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d writes failed, first: %v", len(failed), failed[0])
	}
	verify := func(when string) {
		for oid, want := range acked {
			got, err := p.Read(ctx, oid, 0, 0)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %s: %v (%d bytes, want %d)", when, oid, err, len(got), len(want))
			}
		}
	}
	verify("with osd.0 down")
	c.up() // restarts osd.0; it catches up from the PG logs
	c.waitHealth("HEALTH_OK", 60*time.Second)
	verify("after osd.0 returned")
	t.Logf("%d writes acknowledged, %d of them after the kill", len(acked), len(acked)-before)
}

// TestKillEverythingAndRestart: SIGKILL every daemon, restart, all data
// reads back intact (every block's crc32c is checked on read).
func TestKillEverythingAndRestart(t *testing.T) {
	c := up(t, "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := c.pool(ctx)
	want := map[string][]byte{}
	for i := range 100 {
		oid := fmt.Sprintf("obj-%d", i)
		data := make([]byte, 1+rand.IntN(200<<10))
		for j := range data {
			data[j] = byte(rand.IntN(256))
		}
		if err := p.WriteFull(ctx, oid, data); err != nil {
			t.Fatal(err)
		}
		if err := p.OmapSet(ctx, oid, []client.KV{{Key: "n", Value: []byte(strconv.Itoa(i))}}); err != nil {
			t.Fatal(err)
		}
		want[oid] = data
	}
	for _, n := range []string{"osd.0", "osd.1", "osd.2", "mon.a"} {
		c.kill9(n)
	}
	c.up()
	p = c.pool(ctx) // a new client, as after a full outage
	for oid, data := range want {
		got, err := p.Read(ctx, oid, 0, 0)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s after restart: %v", oid, err)
		}
		kv, err := p.OmapGet(ctx, oid, []string{"n"})
		if err != nil || len(kv) != 1 {
			t.Fatalf("%s omap after restart: %v %v", oid, kv, err)
		}
	}
}

// TestThreeMonsLoseOne: a 3-MON quorum keeps serving map changes and I/O
// after one MON is killed.
func TestThreeMonsLoseOne(t *testing.T) {
	c := up(t, "--mons", "3", "--osds", "2")
	c.kill9("mon.a")
	c.must("pool", "create", "second", "--size", "2", "--pg-num", "8")
	c.must("rados", "-p", "second", "setomapval", "o", "k", "v")
	if out := c.must("rados", "-p", "second", "getomapval", "o", "k"); out != "v\n" {
		t.Fatalf("getomapval: %q", out)
	}
	out, _ := c.run("health", "detail")
	if !strings.Contains(out, "1/3 mons down") {
		t.Fatalf("health does not report the lost MON:\n%s", out)
	}
}

// TestAdminCommands exercises the operator's commands on a live cluster.
func TestAdminCommands(t *testing.T) {
	c := up(t, "--osds", "3")
	// status and health as JSON
	var st struct {
		Health   string
		NumOSDs  int            `json:"num_osds"`
		PGs      int            `json:"num_pgs"`
		PGStates map[string]int `json:"pgs_by_state"`
	}
	if err := json.Unmarshal([]byte(c.must("status", "--format", "json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Health != "HEALTH_OK" || st.NumOSDs != 3 || st.PGs != 32 || st.PGStates["active+clean"] != 32 {
		t.Fatalf("status: %+v", st)
	}
	// pools
	c.must("pool", "create", "p2", "--size", "2", "--pg-num", "16")
	if out := c.must("pool", "get", "p2", "size"); out != "size: 2\n" {
		t.Fatalf("pool get: %q", out)
	}
	c.must("pool", "set", "p2", "size", "3")
	if out := c.must("pool", "get", "p2", "size"); out != "size: 3\n" {
		t.Fatalf("pool set: %q", out)
	}
	if out := c.must("pool", "ls"); out != "data\np2\n" {
		t.Fatalf("pool ls: %q", out)
	}
	if out, err := c.run("pool", "create", "p2"); err == nil || !strings.Contains(out, "already exists") {
		t.Fatalf("duplicate pool: %v %q", err, out)
	}
	c.must("pool", "rm", "p2")
	// CRUSH: a rack, a host moved under it, a rule over it
	c.must("osd", "crush", "add", "osd.2", "0.00195", "host=h2", "rack=r1", "root=default")
	c.must("osd", "crush", "rule", "create-replicated", "byrack", "default", "rack")
	tree := c.must("osd", "tree")
	for _, want := range []string{"rack r1", "host h2", "osd.2"} {
		if !strings.Contains(tree, want) {
			t.Fatalf("osd tree lacks %q:\n%s", want, tree)
		}
	}
	c.must("osd", "crush", "reweight", "osd.2", "0.25")
	if tree := c.must("osd", "tree"); !strings.Contains(tree, "0.25000") {
		t.Fatalf("reweight not in the tree:\n%s", tree)
	}
	c.must("osd", "crush", "reweight", "osd.2", "0.00195") // as heavy as the others again
	// marking an OSD out moves its PGs; marking it in brings them back
	c.must("osd", "out", "1")
	if tree := c.must("osd", "tree"); !regexp.MustCompile(`osd\.1 +up +0\.00000`).MatchString(tree) {
		t.Fatalf("osd out not shown:\n%s", tree)
	}
	// osd df: the out OSD at reweight 0 holds no PG, the others do
	if df := c.must("osd", "df"); !regexp.MustCompile(`(?m)^\s*1\s.*\s0\.00000\s.*\s0\s+up\s*$`).MatchString(df) ||
		!regexp.MustCompile(`(?m)^\s*0\s.*\s1\.00000\s.*\s[1-9]\d*\s+up\s*$`).MatchString(df) {
		t.Fatalf("osd df after osd.1 went out:\n%s", df)
	}
	c.must("osd", "in", "1")
	c.waitHealth("HEALTH_OK", 30*time.Second)
	// config database
	c.must("config", "set", "osd.1", "osd_heartbeat_grace", "30")
	if out := c.must("config", "get", "osd.1", "osd_heartbeat_grace"); out != "30\n" {
		t.Fatalf("config get: %q", out)
	}
	if out := c.must("config", "get", "osd.0", "osd_heartbeat_grace"); out != "20\n" {
		t.Fatalf("config get (default): %q", out)
	}
	if out := c.must("config", "dump"); !strings.Contains(out, "osd.1") || !strings.Contains(out, "osd_heartbeat_grace") {
		t.Fatalf("config dump: %q", out)
	}
	if out, err := c.run("config", "set", "osd", "no_such_option", "1"); err == nil || !strings.Contains(out, "unknown option") {
		t.Fatalf("unknown option: %v %q", err, out)
	}
	c.must("config", "rm", "osd.1", "osd_heartbeat_grace")
	if out := c.must("df"); !strings.Contains(out, "RAW STORAGE") || !strings.Contains(out, "data") {
		t.Fatalf("df: %q", out)
	}
	// marking an OSD down: it notices and boots again
	c.must("osd", "down", "0")
	c.waitHealth("HEALTH_OK", 30*time.Second)
	// cluster flags: shown, warned about, refused when unknown, cleared
	c.must("osd", "set", "noout")
	c.must("osd", "set", "nodeep-scrub")
	if out := c.must("status"); !strings.Contains(out, "flags noout,nodeep-scrub") {
		t.Fatalf("status with flags set:\n%s", out)
	}
	if out, _ := c.run("health", "detail"); !strings.Contains(out, "HEALTH_WARN noout,nodeep-scrub flag(s) set") || !strings.Contains(out, "shoal osd unset") {
		t.Fatalf("health with flags set:\n%s", out)
	}
	if out, err := c.run("osd", "set", "noway"); err == nil || !strings.Contains(out, `unknown osd map flag "noway"`) {
		t.Fatalf("unknown flag: %v %q", err, out)
	}
	// `shoal up` restarts a killed OSD during maintenance (noout set)
	c.kill9("osd.2")
	c.up()
	c.must("osd", "unset", "noout")
	c.must("osd", "unset", "nodeep-scrub")
	c.waitHealth("HEALTH_OK", 30*time.Second)
}

// TestAuthKeysAndCaps: an entity added with `shoal auth add` connects with
// its own key and may do what its caps allow and nothing else; changed
// caps apply; removed, it is refused; an unknown entity is refused; the
// bootstrap-osd key adds only OSD entities; the gateway runs as its own
// entity.
func TestAuthKeysAndCaps(t *testing.T) {
	c := upWithGateway(t, "--osds", "2")
	c.must("pool", "create", "a", "--size", "2")
	c.must("pool", "create", "b", "--size", "2")
	in := filepath.Join(t.TempDir(), "in")
	os.WriteFile(in, []byte("admin's data"), 0o644)
	c.must("rados", "-p", "b", "put", "x", in)

	kr := filepath.Join(t.TempDir(), "bob.keyring")
	c.must("auth", "add", "client.bob", "mon", "allow r", "osd", "allow r pool=a", "-o", kr)
	if out := c.must("auth", "ls"); !strings.Contains(out, "client.bob\n\tcaps mon: allow r\n\tcaps osd: allow r pool=a\n") {
		t.Fatalf("auth ls: %q", out)
	}
	if out := c.must("auth", "get", "client.bob"); !strings.Contains(out, `caps osd = "allow r pool=a"`) {
		t.Fatalf("auth get: %q", out)
	}
	bob := func(args ...string) (string, error) {
		return c.run(append([]string{"--name", "client.bob", "--keyring", kr}, args...)...)
	}
	denied := func(what string, args ...string) {
		t.Helper()
		if out, err := bob(args...); err == nil || !strings.Contains(out, "permission denied") {
			t.Fatalf("client.bob %s: %v %q, want permission denied", what, err, out)
		}
	}
	c.must("rados", "-p", "a", "put", "y", in)
	// the MONs know the key at once; an OSD fetches the key database when
	// an entity it does not know connects (a MON follower may lag a little)
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := bob("rados", "-p", "a", "get", "y", "-")
		if err == nil && out == "admin's data" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client.bob never read pool a: %v %q", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := bob("rados", "-p", "a", "ls"); err != nil || !strings.Contains(out, "y") {
		t.Fatalf("client.bob lists pool a: %v %q", err, out)
	}
	denied("writes pool a", "rados", "-p", "a", "put", "z", in)
	denied("reads pool b", "rados", "-p", "b", "get", "x", "-")
	denied("lists pool b", "rados", "-p", "b", "ls")
	denied("scrubs", "pg", "scrub", "1.0")
	denied("compacts an OSD's metadata store", "osd", "compact", "0")
	denied("creates a pool", "pool", "create", "c")
	denied("adds an entity", "auth", "add", "client.mallory", "mon", "allow *", "osd", "allow *")
	denied("reads a key", "auth", "get-key", "client.admin")
	denied("lists the key database", "auth", "ls")
	denied("gives itself caps", "auth", "caps", "client.bob", "mon", "allow *", "osd", "allow *")
	if out := c.must("rados", "-p", "a", "ls"); strings.Contains(out, "z") {
		t.Fatalf("a refused write left an object: %q", out)
	}
	// the admin may: each up OSD compacts and says so; their statistics
	// show the compaction
	if out := c.must("osd", "compact"); strings.Count(out, "compact done in") != 2 {
		t.Fatalf("osd compact: %q, want two OSDs done", out)
	}
	var perf []struct {
		MetaStore *struct {
			Compactions int64 `json:"compactions"`
		} `json:"meta_store"`
	}
	if err := json.Unmarshal([]byte(c.must("osd", "perf", "--format", "json")), &perf); err != nil || len(perf) != 2 {
		t.Fatalf("osd perf: %v %+v", err, perf)
	}
	for i, p := range perf {
		if p.MetaStore == nil || p.MetaStore.Compactions == 0 {
			t.Fatalf("osd perf: OSD %d's metadata store %+v, want compactions counted", i, p.MetaStore)
		}
	}

	// new caps apply (on every OSD within its next fetch of the key
	// database, each second): now bob may write a, and no longer read it
	c.must("auth", "caps", "client.bob", "mon", "allow r", "osd", "allow w pool=a")
	for deadline := time.Now().Add(20 * time.Second); ; {
		_, werr := bob("rados", "-p", "a", "put", "z", in)
		out, rerr := bob("rados", "-p", "a", "get", "y", "-")
		if werr == nil && rerr != nil && strings.Contains(out, "permission denied") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client.bob's new caps never applied: write %v, read %v %q", werr, rerr, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// the key database is the MONs' replicated state: after kill -9 of the
	// MON and a restart, bob's key and new caps are still there
	c.kill9("mon.a")
	c.up()
	if out, err := bob("rados", "-p", "a", "put", "z2", in); err != nil {
		t.Fatalf("client.bob's write after the MON restarted: %v %q", err, out)
	}
	denied("reads pool a after the MON restarted", "rados", "-p", "a", "get", "y", "-")
	if out := c.must("auth", "get", "client.bob"); !strings.Contains(out, `caps osd = "allow w pool=a"`) {
		t.Fatalf("auth get after the MON restarted: %q", out)
	}

	// without mon caps an entity cannot even read the cluster map
	nomon := filepath.Join(t.TempDir(), "carol.keyring")
	c.must("auth", "add", "client.carol", "osd", "allow *", "-o", nomon)
	if out, err := c.run("--name", "client.carol", "--keyring", nomon, "rados", "-p", "a", "get", "y", "-"); err == nil || !strings.Contains(out, "permission denied") {
		t.Fatalf("client.carol without mon caps: %v %q", err, out)
	}
	// bad caps are refused, and nothing is added
	if out, err := c.run("auth", "add", "client.dave", "osd", "allow q"); err == nil || !strings.Contains(out, "invalid") {
		t.Fatalf("bad caps: %v %q", err, out)
	}
	if out := c.must("auth", "ls"); strings.Contains(out, "client.dave") {
		t.Fatalf("refused entity added: %q", out)
	}

	// an entity the cluster does not know is refused, whatever key it has
	bobKey, _ := os.ReadFile(kr)
	eve := filepath.Join(t.TempDir(), "eve.keyring")
	os.WriteFile(eve, bytes.Replace(bobKey, []byte("client.bob"), []byte("client.eve"), 1), 0o600)
	if out, err := c.run("--name", "client.eve", "--keyring", eve, "rados", "-p", "a", "get", "y", "-"); err == nil || !strings.Contains(out, "authentication") {
		t.Fatalf("unknown client.eve with bob's key: %v %q", err, out)
	}
	c.must("auth", "rm", "client.bob")
	if out, err := bob("rados", "-p", "a", "get", "y", "-"); err == nil || !strings.Contains(out, "authentication") {
		t.Fatalf("removed client.bob: %v %q", err, out)
	}

	// bootstrap-osd adds an OSD entity with the OSD profile, and nothing else
	boot := filepath.Join(c.data, "bootstrap-osd.keyring")
	bootstrap := func(args ...string) (string, error) {
		return c.run(append([]string{"--name", "client.bootstrap-osd", "--keyring", boot, "auth", "add"}, args...)...)
	}
	if out, err := bootstrap("osd.9", "mon", "profile osd", "osd", "allow *"); err != nil {
		t.Fatalf("bootstrap-osd adds osd.9: %v %q", err, out)
	}
	for _, args := range [][]string{{"client.x", "mon", "allow *"}, {"osd.10", "mon", "allow *", "osd", "allow *"},
		{"osd.9", "mon", "profile osd", "osd", "allow *"}} { // osd.9 exists now: no replacing its key
		if out, err := bootstrap(args...); err == nil || !strings.Contains(out, "permission denied") {
			t.Fatalf("bootstrap-osd adds %v: %v %q", args, err, out)
		}
	}

	// the gateway connects as client.rgw.gateway, with its own caps
	if out := c.must("auth", "get", "client.rgw.gateway"); !strings.Contains(out, `caps mon = "profile rgw"`) {
		t.Fatalf("gateway entity: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(c.data, "log", "client.rgw.gateway.log")); !bytes.Contains(b, []byte("entity=client.rgw.gateway")) {
		t.Fatalf("the gateway does not run as its own entity:\n%s", tail(b, 2000))
	}
	// the admin is unaffected
	if out := c.must("rados", "-p", "a", "get", "y", "-"); out != "admin's data" {
		t.Fatalf("admin reads %q", out)
	}
}

// TestErasureCodeProfiles: profiles are kept by the MONs and validated.
func TestErasureCodeProfiles(t *testing.T) {
	c := up(t, "--osds", "2")
	c.must("osd", "erasure-code-profile", "set", "p42", "k=4", "m=2", "crush-failure-domain=osd")
	if out := c.must("osd", "erasure-code-profile", "get", "p42"); !strings.Contains(out, "k=4\n") || !strings.Contains(out, "stripe_unit=4096\n") {
		t.Fatalf("get: %q", out)
	}
	if out := c.must("osd", "erasure-code-profile", "ls"); out != "default\np42\n" {
		t.Fatalf("ls: %q", out)
	}
	if out, err := c.run("osd", "erasure-code-profile", "set", "bad", "k=1"); err == nil || !strings.Contains(out, "at least 2") {
		t.Fatalf("k=1: %v %q", err, out)
	}
	c.must("osd", "erasure-code-profile", "rm", "p42")
	c.waitHealth("HEALTH_OK", 10*time.Second)
}

// ecContent is generation gen of an erasure-coded test object: its size
// varies across stripe boundaries and every byte depends on (oid, gen), so
// a mix of two generations is detected.
func ecContent(oid string, gen int) []byte {
	r := rand.New(rand.NewPCG(uint64(gen), uint64(len(oid))*7919+uint64(oid[len(oid)-1])))
	b := make([]byte, 3000+r.IntN(40000))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, fmt.Sprintf("%s|%08d|", oid, gen))
	return b
}

// TestErasureCodedPool: a 2+1 pool through the CLI and the client; a shard
// corrupted on disk is detected by its checksum, decoded around and
// repaired; SIGKILL of the primary in the middle of overwrites and appends
// leaves every object at its old or its new content, never a mix, and
// every appended object a run of whole appends with every acknowledged one
// (appends are rolled back by truncation, overwrites from a full copy).
func TestErasureCodedPool(t *testing.T) {
	c := up(t, "--osds", "3", "--osd-size", "512M")
	c.must("osd", "erasure-code-profile", "set", "p21", "k=2", "m=1", "crush-failure-domain=osd")
	c.must("pool", "create", "ec", "erasure", "p21")
	if out := c.must("pool", "get", "ec", "min_size"); out != "min_size: 2\n" { // k+min(1, m-1), as Ceph: serve with a shard missing
		t.Fatalf("min_size of a 2+1 pool: %q", out)
	}
	c.waitHealth("HEALTH_OK", 30*time.Second)
	// the CLI
	in := filepath.Join(t.TempDir(), "in")
	payload := bytes.Repeat([]byte("erasure-coded "), 100000)
	os.WriteFile(in, payload, 0o644)
	c.must("rados", "-p", "ec", "put", "cli", in)
	out := filepath.Join(t.TempDir(), "out")
	c.must("rados", "-p", "ec", "get", "cli", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, payload) {
		t.Fatalf("rados get: %d bytes, want %d", len(got), len(payload))
	}
	if o, err := c.run("rados", "-p", "ec", "setomapval", "cli", "k", "v"); err == nil || !strings.Contains(o, "not supported") {
		t.Fatalf("omap on an EC pool: %v %q", err, o)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := c.connect(ctx)
	p, err := conn.Pool(ctx, "ec")
	if err != nil {
		t.Fatal(err)
	}

	// 1. corrupt the first chunk of an object (data shard 0) on its OSD's disk
	marked := bytes.Repeat([]byte("corrupt-me-"), 20000)[:200000] // shards past the 32 KiB inline limit: on the block device
	if err := p.WriteFull(ctx, "victim", marked); err != nil {
		t.Fatal(err)
	}
	holder := -1
	for i := range 3 {
		c.kill9(fmt.Sprintf("osd.%d", i)) // the device is read at rest
		f, err := os.OpenFile(filepath.Join(c.data, fmt.Sprintf("osd.%d", i), "store", "block"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		for off := int64(0); holder < 0; off += int64(len(buf)) - 4096 {
			n, _ := f.ReadAt(buf, off)
			if n <= 0 {
				break
			}
			if at := bytes.Index(buf[:n], marked[:4096]); at >= 0 {
				f.WriteAt([]byte{buf[at+100] ^ 0xff}, off+int64(at)+100)
				holder = i
			}
		}
		f.Close()
	}
	if holder < 0 {
		t.Fatal("no OSD holds the object's first chunk")
	}
	c.up()
	c.waitHealth("HEALTH_OK", 60*time.Second)
	reconstructs := func() (n uint64) {
		for i := range 3 {
			st, err := conn.OSDStats(ctx, int32(i))
			if err != nil {
				t.Fatal(err)
			}
			n += st.Perf.ECReconstruct
		}
		return n
	}
	if got, err := p.Read(ctx, "victim", 0, 0); err != nil || !bytes.Equal(got, marked) {
		t.Fatalf("read of the object with a corrupt shard on osd.%d: %v", holder, err)
	}
	if n := reconstructs(); n != 1 {
		t.Fatalf("%d reads decoded around a bad shard, want 1", n)
	}
	if got, err := p.Read(ctx, "victim", 0, 0); err != nil || !bytes.Equal(got, marked) || reconstructs() != 1 {
		t.Fatalf("second read: %v; the shard was not repaired (%d decodes)", err, reconstructs())
	}

	// 2. SIGKILL the primary while four writers overwrite 40 objects and
	// each appends to one more
	type state struct{ acked, tried int }
	var mu sync.Mutex
	objs := map[string]*state{}
	const chunk = 8 << 10 // whole stripes of the 2+1 pool: EC appends
	appendChunk := func(oid string, gen int) []byte {
		b := bytes.Repeat([]byte{byte(gen)}, chunk)
		copy(b, fmt.Sprintf("%s|%08d|", oid, gen))
		return b
	}
	appended := map[string][]int{} // per writer's append object: the acknowledged generations
	for i := range 40 {
		oid := fmt.Sprintf("ow%d", i)
		if err := p.WriteFull(ctx, oid, ecContent(oid, 0)); err != nil {
			t.Fatal(err)
		}
		objs[oid] = &state{}
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	var writes, failures int
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for gen := 1; ; gen++ {
				select {
				case <-stop:
					return
				default:
				}
				oid := fmt.Sprintf("ow%d", (gen*4+w)%40)
				if (gen*4+w)%40%4 != w { // each object has one writer
					continue
				}
				mu.Lock()
				st := objs[oid]
				st.tried = gen
				mu.Unlock()
				wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
				err := p.WriteFull(wctx, oid, ecContent(oid, gen))
				wcancel()
				mu.Lock()
				writes++
				if err == nil {
					st.acked = gen
				} else {
					failures++
				}
				mu.Unlock()
				aoid := fmt.Sprintf("ap%d", w)
				wctx, wcancel = context.WithTimeout(ctx, 60*time.Second)
				err = p.Append(wctx, aoid, appendChunk(aoid, gen))
				wcancel()
				if err == nil {
					mu.Lock()
					appended[aoid] = append(appended[aoid], gen)
					mu.Unlock()
				}
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return writes }
	for count() < 150 {
		time.Sleep(20 * time.Millisecond)
	}
	m := conn.Map()
	pgid, _ := m.ObjectToPG(p.ID(), "ow0", "")
	mp, _ := m.MapPG(pgid)
	c.kill9(fmt.Sprintf("osd.%d", mp.ActingPrimary))
	before := count()
	for count() < before+150 {
		if ctx.Err() != nil {
			t.Fatalf("writes stalled after the kill: %d", count())
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	writers.Wait()
	verify := func(when string) {
		for oid, st := range objs {
			got, err := p.Read(ctx, oid, 0, 0)
			if err != nil {
				t.Fatalf("%s: %s: %v", when, oid, err)
			}
			var gen int
			if _, err := fmt.Sscanf(string(got[len(oid)+1:len(oid)+9]), "%08d", &gen); err != nil || gen < st.acked || gen > st.tried || !bytes.Equal(got, ecContent(oid, gen)) {
				t.Fatalf("%s: %s reads as generation %d (%v; acknowledged %d, tried %d), or a mix", when, oid, gen, err, st.acked, st.tried)
			}
		}
		for w := range 4 {
			aoid := fmt.Sprintf("ap%d", w)
			got, err := p.Read(ctx, aoid, 0, 0)
			if err != nil || len(got)%chunk != 0 {
				t.Fatalf("%s: %s: %d bytes (%v), not whole appends", when, aoid, len(got), err)
			}
			have := map[int]bool{}
			last := 0
			for off := 0; off < len(got); off += chunk {
				var gen int
				fmt.Sscanf(string(got[off+len(aoid)+1:off+len(aoid)+9]), "%08d", &gen)
				if gen <= last || !bytes.Equal(got[off:off+chunk], appendChunk(aoid, gen)) {
					t.Fatalf("%s: %s: append at %d is not a whole later append (generation %d after %d)", when, aoid, off, gen, last)
				}
				have[gen], last = true, gen
			}
			for _, gen := range appended[aoid] {
				if !have[gen] {
					t.Fatalf("%s: %s lost acknowledged append %d", when, aoid, gen)
				}
			}
		}
	}
	verify("with the primary dead")
	c.up()
	c.waitHealth("HEALTH_OK", 60*time.Second)
	verify("after it returned")
	rollbacks := 0
	logs, _ := filepath.Glob(filepath.Join(c.data, "log", "osd.*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		rollbacks += bytes.Count(b, []byte("rolling back writes"))
	}
	appends := 0
	for _, gens := range appended {
		appends += len(gens)
	}
	if appends == 0 {
		t.Fatal("no append was acknowledged: the append half of the test did not run")
	}
	t.Logf("%d overwrites, %d failed (retried by the client until its timeout), %d appends; %d PG copies rolled back", writes, failures, appends, rollbacks)
}

// TestAddOSD: a new OSD takes over some PGs; their data moves to it during
// peering and nothing is lost.
func TestAddOSD(t *testing.T) {
	c := up(t, "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, p := c.connPool(ctx)
	for i := range 100 {
		if err := p.WriteFull(ctx, fmt.Sprintf("o%d", i), []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	recovered := func() (ops, bytes uint64) {
		var all []osdop.Stats
		if err := json.Unmarshal([]byte(c.must("osd", "perf", "--format", "json")), &all); err != nil {
			t.Fatal(err)
		}
		for _, st := range all {
			ops, bytes = ops+st.Perf.RecoveryOps, bytes+st.Perf.RecoveryBytes
		}
		return ops, bytes
	}
	ops0, _ := recovered()
	c.up("--add-osd", "1") // returns once nothing is degraded; the backfill goes on
	// backfilled: every PG clean, its up set the map's, its acting set its
	// up set (no pg_temp)
	if err := conn.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	var pgs []osdop.PGStats
	for {
		if err := json.Unmarshal([]byte(c.must("pg", "ls", "data", "--format", "json")), &pgs); err != nil {
			t.Fatal(err)
		}
		done := len(pgs) > 0
		for _, pg := range pgs {
			pgid, _ := osdmap.ParsePGID(pg.PGID)
			mp, err := conn.Map().MapPG(pgid)
			done = done && err == nil && pg.State == "active+clean" && slices.Equal(pg.Up, mp.Up) && slices.Equal(pg.Up, pg.Acting)
		}
		if done {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("adding osd.3: not backfilled: %+v", pgs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// data moved: only the new copies on osd.3 (one per PG that maps to it)
	ops1, _ := recovered()
	minimum := 0
	for _, pg := range pgs {
		if slices.Contains(pg.Acting, 3) {
			minimum += int(pg.Objects)
		}
	}
	moved := int(ops1 - ops0)
	t.Logf("adding osd.3 to 3 OSDs moved %d objects; the minimum (one copy of each object of the PGs that map to osd.3) is %d", moved, minimum)
	if minimum == 0 || moved < minimum || moved > minimum+minimum/10 {
		t.Fatalf("adding osd.3 moved %d objects, the minimum is %d", moved, minimum)
	}
	var st struct {
		NumOSDs  int `json:"num_osds"`
		OSDStats []struct {
			ID  int32             `json:"osd"`
			PGs []json.RawMessage `json:"pgs"`
		} `json:"osd_stats"`
	}
	if err := json.Unmarshal([]byte(c.must("status", "--format", "json")), &st); err != nil {
		t.Fatal(err)
	}
	led := -1
	for _, o := range st.OSDStats {
		if o.ID == 3 {
			led = len(o.PGs)
		}
	}
	if st.NumOSDs != 4 || led <= 0 {
		t.Fatalf("after adding an OSD: %d OSDs, osd.3 leads %d PGs", st.NumOSDs, led)
	}
	for i := range 100 {
		got, err := p.Read(ctx, fmt.Sprintf("o%d", i), 0, 0)
		if err != nil || string(got) != strconv.Itoa(i) {
			t.Fatalf("o%d after adding an OSD: %q %v", i, got, err)
		}
	}
	checkDashboard(ctx, t, c, 4)
}

// TestKillDuringCatchUp: an OSD that returns after missing writes is
// killed with SIGKILL as soon as the first PG it leads has recovered,
// while the others still copy (their missing sets half filled);
// restarted, it finishes, and then serves every object on its own.
func TestKillDuringCatchUp(t *testing.T) {
	c := up(t, "--osds", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := c.pool(ctx)
	want := map[string][]byte{}
	write := func(from, to int) {
		for i := from; i < to; i++ {
			oid := fmt.Sprintf("o%d", i%300)
			data := bytes.Repeat([]byte{byte(i)}, 64<<10+i)
			if err := p.WriteFull(ctx, oid, data); err != nil {
				t.Fatalf("write %s: %v", oid, err)
			}
			want[oid] = data
		}
	}
	write(0, 100)
	c.kill9("osd.2")
	c.must("osd", "down", "2")
	write(100, 500) // osd.2 misses 400 writes over 300 objects
	// start osd.2 by hand and kill it when its first PG has recovered
	logPath := filepath.Join(c.data, "log", "osd.2.log")
	before, _ := os.ReadFile(logPath)
	osd := exec.Command(shoalBin, "osd", "--conf", filepath.Join(c.data, "shoal.conf"), "--data", filepath.Join(c.data, "osd.2"))
	if err := osd.Start(); err != nil {
		t.Fatal(err)
	}
	for {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b[len(before):], []byte("msg=recovered")) {
			break
		}
		if ctx.Err() != nil {
			osd.Process.Kill()
			t.Fatal("osd.2 never recovered a PG")
		}
		time.Sleep(5 * time.Millisecond)
	}
	osd.Process.Kill() // SIGKILL
	osd.Wait()
	b, _ := os.ReadFile(logPath)
	t.Logf("killed osd.2 after %d of its PGs recovered", bytes.Count(b[len(before):], []byte("msg=recovered")))
	c.up() // restarts osd.2, waits for HEALTH_OK
	verify := func(when string) {
		for oid, data := range want {
			got, err := p.Read(ctx, oid, 0, 0)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: %s: %v (%d bytes, want %d)", when, oid, err, len(got), len(data))
			}
		}
	}
	verify("after the restart")
	// osd.2 alone must hold everything
	c.must("pool", "set", "data", "min_size", "1")
	for _, n := range []string{"osd.0", "osd.1"} {
		c.kill9(n)
	}
	c.must("osd", "down", "0", "1")
	verify("on osd.2 alone")
}
