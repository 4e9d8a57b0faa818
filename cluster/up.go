package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/internal/durable"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/status"
)

// UpOptions configure `shoal up`.
type UpOptions struct {
	Data    string // data directory, default ./shoal-data
	Mons    int    // 1, 3 or 5
	OSDs    int
	OSDSize string // bluestore_block_size of new OSDs, e.g. "10G"
	AddOSDs int    // OSDs to add to an existing cluster (its PGs rebalance onto them)
	// DBDir and WALDir put each new OSD's metadata store and its
	// write-ahead log in DIR/osd.N on another (faster) device, through
	// block.db and block.wal links in the OSD's directory (BlueStore's).
	DBDir, WALDir string
	Foreground    bool // stay up until SIGINT/SIGTERM, then stop the daemons
	NoGateway     bool // do not start the S3 gateway
	// BasePort, if set, places a new cluster's ports from it instead of
	// at free ports from Ceph's defaults (as vstart.sh's CEPH_PORT): MON i
	// at BasePort+2i (raft at the next port), the manager's dashboard and
	// metrics at BasePort+10 and +11, the gateway at BasePort+12. Each
	// must be free. Runs of tests give each cluster its own range.
	BasePort int
	// Set holds "NAME=VALUE" options for [global] of a new cluster's
	// shoal.conf (Ceph's vstart.sh -o); refused for an existing cluster.
	Set     []string
	Timeout time.Duration
	Out     io.Writer
}

var monNames = []string{"a", "b", "c", "d", "e"}

// Up starts (or restarts) a local cluster in o.Data.
func Up(ctx context.Context, o UpOptions) error {
	if o.Data == "" {
		o.Data = "shoal-data"
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	dir, err := filepath.Abs(o.Data)
	if err != nil {
		return err
	}
	confPath := filepath.Join(dir, "shoal.conf")
	fresh := false
	if _, err := os.Stat(confPath); errors.Is(err, os.ErrNotExist) {
		if o.Mons != 1 && o.Mons != 3 && o.Mons != 5 {
			return fmt.Errorf("up: --mons %d: a quorum needs 1, 3 or 5 MONs", o.Mons)
		}
		if o.OSDs < 1 {
			return fmt.Errorf("up: --osds %d: at least one OSD", o.OSDs)
		}
		if err := checkSet(o.Set); err != nil {
			return err
		}
		if err := checkBasePort(o); err != nil {
			return err
		}
		if err := create(dir, o); err != nil {
			return err
		}
		fresh = true
	}
	if !fresh && o.BasePort > 0 {
		return fmt.Errorf("up: --base-port %d: the cluster in %s exists; its ports are in %s", o.BasePort, dir, confPath)
	}
	if !fresh && len(o.Set) > 0 {
		return fmt.Errorf("up: --set %s: the cluster in %s exists; change its options in %s or with `shoal config set`", o.Set[0], dir, confPath)
	}
	c, err := FindConf(confPath)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var started []string
	// MONs: every [mon.ID] section (those `shoal mon add` wrote too)
	for _, id := range c.MonIDs() {
		name := "mon." + id
		if running(c, name) {
			continue
		}
		if err := spawn(c, exe, name, "mon", "--conf", c.Path, "--id", id); err != nil {
			return err
		}
		started = append(started, name)
	}
	mons := c.MonAddrs()
	kr, err := c.Keyring("client.admin")
	if err != nil {
		return err
	}
	conn, err := client.Connect(ctx, client.Config{MonAddrs: mons, Keyring: kr})
	if err != nil {
		return fmt.Errorf("up: MONs did not answer: %w (see %s/log)", err, dir)
	}
	defer conn.Close()
	// OSDs: every osd.* directory, plus new ones up to --osds
	dirs, _ := filepath.Glob(filepath.Join(dir, "osd.*"))
	want := len(dirs) + o.AddOSDs
	if fresh {
		want = o.OSDs
	}
	for i := 0; len(dirs) < want; i++ {
		d := filepath.Join(dir, fmt.Sprintf("osd.%d", i))
		if _, err := os.Stat(d); err == nil {
			continue
		}
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		name := filepath.Base(d)
		if running(c, name) {
			continue
		}
		_, statErr := os.Stat(d)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if os.IsNotExist(statErr) { // a new OSD
			if err := linkFast(d, "block.db", o.DBDir); err != nil {
				return err
			}
			if err := linkFast(d, "block.wal", o.WALDir); err != nil {
				return err
			}
		}
		if err := spawn(c, exe, name, "osd", "--conf", c.Path, "--data", d); err != nil {
			return err
		}
		started = append(started, name)
		if err := waitFile(ctx, filepath.Join(d, "whoami")); err != nil {
			return fmt.Errorf("up: %s did not register: %w (see %s)", name, err, filepath.Join(dir, "log", name+".log"))
		}
	}
	if err := ensureEntity(ctx, conn, BootstrapOSDName, map[string]string{"mon": "profile bootstrap-osd"}, filepath.Join(dir, "bootstrap-osd.keyring")); err != nil {
		return err
	}
	if fresh {
		size := min(3, len(dirs))
		if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "data", "size": strconv.Itoa(size)}); err != nil {
			return fmt.Errorf("up: create pool data: %w", err)
		}
	}
	// new OSDs: the PGs that move onto them backfill in the background,
	// the old copies serving meanwhile (pg_temp) — do not wait for that
	st, err := waitHealthy(ctx, conn, mons, kr, len(dirs), o.AddOSDs > 0)
	if err != nil {
		return err
	}
	// managers: every [mgr.ID] section (a cluster made before them has
	// none), each with its own key
	var dashboards []string
	for _, id := range c.MgrIDs() {
		name := "mgr." + id
		if err := ensureEntity(ctx, conn, name, mgrCaps, c.For(name).String("keyring")); err != nil {
			return err
		}
		if a := c.For(name).String("mgr_dashboard_addr"); a != "" {
			dashboards = append(dashboards, "http://"+a+"/")
		}
		if running(c, name) {
			continue
		}
		os.Remove(pidPath(c, name)) // a killed one's: waitPid waits for the new one's
		exited, err := spawnWatched(c, exe, name, "mgr", "--conf", c.Path, "--id", id)
		if err != nil {
			return err
		}
		if err := waitPid(ctx, c, name, exited); err != nil {
			return err
		}
		started = append(started, name)
	}
	var s3 *s3Env
	if !o.NoGateway {
		if s3, err = startGateway(ctx, c, exe, conn, len(dirs), &started); err != nil {
			return err
		}
	}
	w := o.Out
	if len(started) > 0 {
		fmt.Fprintf(w, "started %s\n", strings.Join(started, ", "))
	} else {
		fmt.Fprintf(w, "cluster in %s is already running\n", dir)
	}
	st.Text(w)
	fmt.Fprintf(w, "\nMONs:   %s\n", strings.Join(mons, ", "))
	m := conn.Map()
	for i, osd := range m.OSDs {
		switch {
		case osd.Exists && osd.ClusterAddr != "":
			fmt.Fprintf(w, "osd.%d:  %s (cluster network %s)\n", i, osd.Addr, osd.ClusterAddr)
		case osd.Exists:
			fmt.Fprintf(w, "osd.%d:  %s\n", i, osd.Addr)
		}
	}
	for _, d := range dashboards {
		fmt.Fprintf(w, "dashboard: %s\n", d)
	}
	if s3 != nil {
		fmt.Fprintf(w, "S3:     %s  (user %s, access key %s; secret in %s)\n", s3.Endpoint, s3.User, s3.AccessKey, s3.Path)
	}
	fmt.Fprintf(w, "\nconfig: %s (logs in %s/log, pids in %s/run)\n", c.Path, dir, dir)
	fmt.Fprintf(w, "try:    export SHOAL_CONF=%s\n        shoal rados -p data put hello /etc/hostname && shoal rados -p data get hello -\n", c.Path)
	if s3 != nil {
		fmt.Fprintf(w, "        set -a; . %s; set +a; aws --endpoint-url $S3_ENDPOINT s3 mb s3://demo\n", s3.Path)
	}
	fmt.Fprintf(w, "stop:   shoal down --data %s\n", dir)
	if !o.Foreground {
		return nil
	}
	fmt.Fprintln(w, "\nrunning in the foreground; Ctrl-C stops the cluster")
	waitSignal()
	return Down(c.Dir, w)
}

// Offsets from UpOptions.BasePort.
const (
	basePortDashboard = 10
	basePortMetrics   = 11
	basePortGateway   = 12
)

// checkBasePort checks that every port a new cluster would take from
// o.BasePort is free.
func checkBasePort(o UpOptions) error {
	if o.BasePort == 0 {
		return nil
	}
	if o.BasePort < 1024 || o.BasePort > 65535-basePortGateway {
		return fmt.Errorf("up: --base-port %d: want 1024 to %d", o.BasePort, 65535-basePortGateway)
	}
	ports := []int{o.BasePort + basePortDashboard, o.BasePort + basePortMetrics, o.BasePort + basePortGateway}
	for i := range o.Mons {
		ports = append(ports, o.BasePort+2*i, o.BasePort+2*i+1)
	}
	for _, p := range ports {
		if !free(p) {
			return fmt.Errorf("up: --base-port %d: port %d on 127.0.0.1 is in use", o.BasePort, p)
		}
	}
	return nil
}

// checkSet checks --set's NAME=VALUE options: known names, valid
// values.
func checkSet(set []string) error {
	for _, kv := range set {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("up: --set %q: want NAME=VALUE", kv)
		}
		if err := config.Defaults("global").Set(strings.TrimSpace(name), strings.TrimSpace(value)); err != nil {
			return fmt.Errorf("up: --set %q: %w", kv, err)
		}
	}
	return nil
}

// create writes a new cluster's keyring and configuration.
func create(dir string, o UpOptions) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// one key per entity type, as Ceph's bootstrap keys: the client's
	// admin key, every MON's and every OSD's, with their caps; the
	// gateway's and bootstrap-osd's are made in the MONs' key database
	// once they run (ensureEntity), `shoal auth add` adds more
	keys := map[string]msgr.KeyringEntry{
		"client.admin": {Caps: map[string]string{"mon": "allow *", "osd": "allow *"}},
		"mon.":         {Caps: map[string]string{"mon": "allow *"}},
		"osd.":         {Caps: map[string]string{"mon": "profile osd", "osd": "allow *"}},
	}
	for n, e := range keys {
		k, err := msgr.NewKey()
		if err != nil {
			return err
		}
		e.Key = k
		keys[n] = e
	}
	if err := msgr.WriteKeyring(filepath.Join(dir, "keyring"), keys); err != nil {
		return err
	}
	var ports []int
	if o.BasePort > 0 {
		for i := range o.Mons {
			ports = append(ports, o.BasePort+2*i)
		}
	} else {
		var err error
		if ports, err = freePorts(o.Mons, nil); err != nil {
			return fmt.Errorf("up: %w", err)
		}
	}
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	fsid := make([]byte, 16)
	rand.Read(fsid)
	var b strings.Builder
	fmt.Fprintf(&b, "# written by `shoal up`; see docs/configuration.md\n[global]\n")
	fmt.Fprintf(&b, "fsid = %x-%x-%x-%x-%x\n", fsid[0:4], fsid[4:6], fsid[6:8], fsid[8:10], fsid[10:])
	fmt.Fprintf(&b, "mon_host = %s\n", strings.Join(addrs, ","))
	fmt.Fprintf(&b, "# the MONs that formed the cluster; those `shoal mon add` adds join it\n")
	fmt.Fprintf(&b, "mon_initial_members = %s\n", strings.Join(monNames[:len(addrs)], ","))
	fmt.Fprintf(&b, "keyring = $data/keyring\n")
	fmt.Fprintf(&b, "# one host: spread replicas across OSDs and count each OSD as a failure reporter (as vstart.sh)\n")
	fmt.Fprintf(&b, "osd_crush_chooseleaf_type = 0\nmon_osd_reporter_subtree_level = osd\n")
	fmt.Fprintf(&b, "osd_pool_default_size = %d\n", min(3, o.OSDs))
	fmt.Fprintf(&b, "osd_heartbeat_interval = 1\n")
	if o.OSDSize != "" {
		fmt.Fprintf(&b, "bluestore_block_size = %s\n", o.OSDSize)
	}
	if len(o.Set) > 0 {
		fmt.Fprintf(&b, "# shoal up --set\n")
	}
	for _, kv := range o.Set {
		name, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s = %s\n", strings.TrimSpace(name), strings.TrimSpace(value))
	}
	for i, a := range addrs {
		fmt.Fprintf(&b, "\n[mon.%s]\npublic_addr = %s\n", monNames[i], a)
	}
	gw, dash, metrics := o.BasePort+basePortGateway, o.BasePort+basePortDashboard, o.BasePort+basePortMetrics
	if o.BasePort == 0 {
		gw = 7480
		for !free(gw) && gw < 7580 {
			gw++
		}
		taken := map[int]bool{gw: true}
		near := func(p int) int {
			for (!free(p) || taken[p]) && p < 65535 {
				p++
			}
			taken[p] = true
			return p
		}
		dash, metrics = near(8080), near(9283)
	}
	fmt.Fprintf(&b, "\n[%s]\n# the manager: dashboard (GET /) and the cluster's metrics (Ceph's mgr ports)\n", MgrName)
	fmt.Fprintf(&b, "mgr_dashboard_addr = 127.0.0.1:%d\nmetrics_addr = 127.0.0.1:%d\nkeyring = $data/%s.keyring\n", dash, metrics, MgrName)
	fmt.Fprintf(&b, "\n[%s]\nrgw_frontends = beast endpoint=127.0.0.1:%d\n", GatewayName, gw)
	fmt.Fprintf(&b, "# the gateway's own key, with only the caps it needs (shoal auth get %s)\nkeyring = $data/%s.keyring\n", GatewayName, GatewayName)
	return durable.WriteFile(filepath.Join(dir, "shoal.conf"), []byte(b.String()), 0o644)
}

// linkFast makes osdDir/link point at DIR/<the OSD directory's name>
// (made if missing), for --db-dir and --wal-dir; nothing when dir is "".
func linkFast(osdDir, link, dir string) error {
	if dir == "" {
		return nil
	}
	target, err := filepath.Abs(filepath.Join(dir, filepath.Base(osdDir)))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("up: %s: %w", link, err)
	}
	if err := os.Symlink(target, filepath.Join(osdDir, link)); err != nil {
		return fmt.Errorf("up: %s: %w", link, err)
	}
	return nil
}

// freePorts finds n MON ports p on 127.0.0.1 with p+1 free too (raft),
// from 6789 up, neither of them in taken (those of MONs not running now).
func freePorts(n int, taken map[int]bool) ([]int, error) {
	var out []int
	for p := 6789; p < 7789 && len(out) < n; p += 2 {
		if !taken[p] && !taken[p+1] && free(p) && free(p+1) {
			out = append(out, p)
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("no free port pairs for %d MONs in 6789-7789 on 127.0.0.1", n)
	}
	return out, nil
}

func free(p int) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// running reports whether the daemon's pid file names a live process.
func running(c *Conf, name string) bool {
	pid, err := readPid(c, name)
	return err == nil && syscall.Kill(pid, 0) == nil
}

func readPid(c *Conf, name string) (int, error) {
	b, err := os.ReadFile(pidPath(c, name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// spawn starts a daemon in its own process group (so a terminal's Ctrl-C
// reaches only `shoal up`, which then stops the daemons in order), output
// appended to its log.
func spawn(c *Conf, exe, name string, args ...string) error {
	_, err := spawnWatched(c, exe, name, args...)
	return err
}

// spawnWatched is spawn, and a channel closed when the daemon exits.
func spawnWatched(c *Conf, exe, name string, args ...string) (<-chan struct{}, error) {
	if err := os.MkdirAll(filepath.Join(c.Dir, "log"), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, "log", name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("up: start %s: %w", name, err)
	}
	exited := make(chan struct{})
	go func() { // reap
		cmd.Wait()
		close(exited)
	}()
	return exited, nil
}

// waitPid waits until daemon name has written its pid file (it runs), or
// fails when it exits first or ctx ends.
func waitPid(ctx context.Context, c *Conf, name string, exited <-chan struct{}) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(pidPath(c, name)); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("up: %s exited at start (see %s)", name, filepath.Join(c.Dir, "log", name+".log"))
		case <-ctx.Done():
			return fmt.Errorf("up: %s did not start: %w (see %s)", name, ctx.Err(), filepath.Join(c.Dir, "log", name+".log"))
		case <-t.C:
		}
	}
}

func waitFile(ctx context.Context, path string) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// waitHealthy polls the status until every OSD is up and every PG
// active+clean with nothing worse than warnings an operator chose (set
// flags) — or, with moving, every PG active and no object degraded, data
// merely moving — or ctx ends (then it returns the last status's
// problems).
func waitHealthy(ctx context.Context, conn *client.Conn, mons []string, kr msgr.Keyring, osds int, moving bool) (*status.Status, error) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var last *status.Status
	for {
		st, err := status.Gather(ctx, conn, mons, kr)
		if err == nil {
			last = st
			if st.UpOSDs >= osds && (settled(st) || moving && onlyMoving(st)) {
				return st, nil
			}
		}
		select {
		case <-ctx.Done():
			if last != nil {
				var sb strings.Builder
				last.HealthText(&sb, true)
				return nil, fmt.Errorf("up: cluster not healthy in time:\n%s", sb.String())
			}
			return nil, fmt.Errorf("up: cluster not healthy in time: %v", err)
		case <-t.C:
		}
	}
}

// settled reports HEALTH_OK, or HEALTH_WARN for set flags only (noout
// during maintenance must not make `shoal up` wait forever), with every
// PG active+clean.
func settled(st *status.Status) bool {
	if st.Health == status.OK {
		return true
	}
	for _, c := range st.Checks {
		if !strings.HasSuffix(c.Summary, "flag(s) set") {
			return false
		}
	}
	return st.PGs > 0 && st.PGStates["active+clean"] == st.PGs
}

// onlyMoving reports every PG active and none degraded, undersized,
// inconsistent or peering: at most remapped and backfilling.
func onlyMoving(st *status.Status) bool {
	n := 0
	for state, c := range st.PGStates {
		if !strings.HasPrefix(state, "active") || strings.Contains(state, "degraded") || strings.Contains(state, "undersized") || strings.Contains(state, "inconsistent") {
			return false
		}
		n += c
	}
	return st.PGs > 0 && n == st.PGs && st.Degraded == 0
}

// Down stops every daemon of the cluster in dir (SIGTERM, then SIGKILL
// after 15 s) — gateways, then OSDs, then MONs — and removes their pid
// files.
func Down(dir string, w io.Writer) error {
	c, err := FindConf(filepath.Join(dir, "shoal.conf"))
	if err != nil {
		return err
	}
	pids, _ := filepath.Glob(filepath.Join(c.Dir, "run", "*.pid"))
	// gateways (clients of the OSDs) first, then OSDs, then MONs
	var gws, osds, mons []string
	for _, p := range pids {
		switch name := strings.TrimSuffix(filepath.Base(p), ".pid"); {
		case strings.HasPrefix(name, "mon."):
			mons = append(mons, name)
		case strings.HasPrefix(name, "osd."):
			osds = append(osds, name)
		default:
			gws = append(gws, name)
		}
	}
	for _, group := range [][]string{gws, osds, mons} {
		stopped := map[string]int{}
		for _, name := range group {
			pid, err := readPid(c, name)
			if err != nil || syscall.Kill(pid, syscall.SIGTERM) != nil {
				os.Remove(pidPath(c, name))
				continue
			}
			stopped[name] = pid
		}
		deadline := time.Now().Add(15 * time.Second)
		for name, pid := range stopped {
			for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if syscall.Kill(pid, 0) == nil {
				syscall.Kill(pid, syscall.SIGKILL)
				fmt.Fprintf(w, "killed %s (pid %d) after 15 s\n", name, pid)
			} else {
				fmt.Fprintf(w, "stopped %s (pid %d)\n", name, pid)
			}
			os.Remove(pidPath(c, name))
		}
	}
	return nil
}

// BootstrapOSDName is the entity `shoal up` creates for adding OSDs with
// their own keys, as Ceph's client.bootstrap-osd: its mon caps (profile
// bootstrap-osd) allow only `auth add osd.N` with the OSD profile. Its
// keyring is DATA/bootstrap-osd.keyring.
const BootstrapOSDName = "client.bootstrap-osd"

// GatewayCaps are the caps `shoal up` gives its gateway: the MONs' maps
// and pool creation, and every object op (Ceph's radosgw runs with
// mon 'allow rw' osd 'allow rwx').
var GatewayCaps = map[string]string{"mon": "profile rgw", "osd": "profile rgw"}

// ensureEntity gives entity a key with caps in the MONs' key database and
// writes its keyring to path, unless path exists. A crash between the two
// leaves no keyring file, and the next run replaces the key.
func ensureEntity(ctx context.Context, conn *client.Conn, entity string, caps map[string]string, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	r, err := conn.MonCommand(ctx, "auth add", monc.AuthArgs(entity, caps))
	if err != nil {
		return fmt.Errorf("up: key for %s: %w", entity, err)
	}
	var k struct{ Key string }
	if err := json.Unmarshal(r.Data, &k); err != nil {
		return fmt.Errorf("up: key for %s: bad reply: %w", entity, err)
	}
	key, err := base64.StdEncoding.DecodeString(k.Key)
	if err != nil {
		return fmt.Errorf("up: key for %s: %w", entity, err)
	}
	return msgr.WriteKeyring(path, map[string]msgr.KeyringEntry{entity: {Key: key, Caps: caps}})
}
