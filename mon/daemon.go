package mon

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/jonboulle/clockwork"

	"github.com/shoal-project/shoal/balancer"
	"github.com/shoal-project/shoal/caps"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdmap"
)

// Options configure a MON daemon.
type Options struct {
	Addr string // messenger address this MON serves (host:port); raft uses port+1
	// Peers are the first MONs' messenger addresses (mon_initial_members'),
	// Addr among them: a MON with no state and Join unset forms the
	// cluster with them.
	Peers []string
	// Join: a MON with no state waits to be added (`shoal mon add`)
	// instead of forming a cluster; once it has state, Join is moot.
	Join    bool
	DataDir string // raft log, stable store and snapshots
	FSID    string
	Keyring msgr.Keyring
	Config  *config.File // the configuration file (over the MON's configuration database)
	// FileKeys are the keyring file's entities, accepted besides the
	// database's (`shoal auth`); an entity's own entry wins over its
	// type's ("osd." for every OSD). Their caps are the file's caps lines,
	// else caps.Default. Nil: no keyring file, every entity shares
	// Keyring's key, and an entity not in the database may do anything.
	FileKeys map[string]msgr.KeyringEntry
	Name     string // entity name, "mon.a"

	Logger *slog.Logger
	// Transport makes the MON's connections, the messenger's and raft's;
	// nil is TCP (tests: msgr/memnet, msgr/faultnet).
	Transport msgr.Transport
	// Clock times the leader's schedules — down→out
	// (mon_osd_down_out_interval), report timeouts
	// (mon_osd_report_timeout), failure reports' grace — nil is the real
	// clock (tests: clockwork's fake). Raft keeps real time.
	Clock clockwork.Clock
	// OnRemoved is called (once, on a goroutine of its own) when the MON
	// finds itself removed from the MON map; it refuses every request from
	// then on. The daemon's process exits (cluster.RunMon).
	OnRemoved func()
}

// Daemon is a running MON: a raft member whose state machine is the
// cluster State, serving commands and map subscriptions on the messenger.
type Daemon struct {
	o      Options
	clock  clockwork.Clock
	fsm    *fsm
	raft   *raft.Raft
	trans  *raft.NetworkTransport
	bolt   *raftboltdb.BoltStore
	srv    *msgr.Server
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	peers map[string]*msgr.Client // messenger clients to other MONs, by address
	// removedOnce is set once this MON finds itself removed from the MON
	// map.
	removedOnce atomic.Bool
	// joinedAt is the epoch of the last MON map in the MON's stores that
	// holds it, when it started (lastMembership).
	joinedAt uint64
	// fileCaps are FileKeys' caps (read-only once made).
	fileCaps *caps.Table
	// msgr is the base of the MON's messenger configurations: its logger,
	// transport and frame protection (ms_mode, ms_session_ttl).
	msgr    msgr.Config
	reports map[int32]map[int32]time.Time
	wg      sync.WaitGroup // the tick loop and memberLoop

	// downSince is when the leader first saw each down, in OSD down (its
	// own clock: a new leader starts the down-out interval afresh, so an
	// OSD is never marked out early). Owned by the tick loop.
	downSince map[int32]time.Time
	// beacons is, per up OSD instance (its address), when the leader last
	// heard from it: its boot or an "osd beacon" (guarded by mu; reset on a
	// leader change, so an OSD is never marked down early).
	beacons map[string]time.Time
	// balancedAt is when the leader's balancer last looked (tickLoop's
	// goroutine only).
	balancedAt time.Time
	// pgpSteppedAt is when the leader last stepped a pool's pgp_num
	// (tickLoop's goroutine only).
	pgpSteppedAt time.Time
	// mergeSteppedAt and merges are the leader's merge steps' clock
	// (stepMerge; tickLoop's goroutine only).
	mergeSteppedAt time.Time
	merges         map[int64]mergeTimes
	// balancerLast is the leader's last balancer round (guarded by mu).
	balancerLast monc.BalancerRound
	// metricsAddr is where /metrics is served ("" if it is not).
	metricsAddr string
}

// RaftAddr is the raft address of the MON serving addr: the next port.
func RaftAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("mon address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p >= 65535 {
		return "", fmt.Errorf("mon address %q: a fixed port below 65535 is required", addr)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

func msgrAddr(raftAddr string) string {
	host, port, _ := net.SplitHostPort(raftAddr)
	p, _ := strconv.Atoi(port)
	return net.JoinHostPort(host, strconv.Itoa(p-1))
}

// Start opens (or creates) the MON's state in DataDir and joins the quorum.
// A MON with no state bootstraps a cluster whose members are Peers, with
// the first state of a new cluster: epoch 1, an empty CRUSH root "default"
// and the default rules over osd_crush_chooseleaf_type.
func Start(o Options) (*Daemon, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Config == nil {
		o.Config = config.NewFile(nil)
	}
	if o.Name == "" {
		o.Name = "mon"
	}
	if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("mon: %w", err)
	}
	raddr, err := RaftAddr(o.Addr)
	if err != nil {
		return nil, err
	}
	mcfg := o.Config.For(o.Name)
	base, err := msgr.SessionConfig(msgr.Config{Logger: o.Logger, Transport: o.Transport}, mcfg.String("ms_mode"), mcfg.Seconds("ms_session_ttl"))
	if err != nil {
		return nil, fmt.Errorf("mon: %w", err)
	}
	fd := crush.DefaultTypes[mcfg.Int("osd_crush_chooseleaf_type")]
	cm, err := crush.Simple(crush.SimpleSpec{FailureDomain: fd})
	if err != nil {
		return nil, fmt.Errorf("mon: initial crush map: %w", err)
	}
	st, err := NewState(o.FSID, cm)
	if err != nil {
		return nil, fmt.Errorf("mon: initial state: %w", err)
	}
	if fd != ec.DefaultFailureDomain {
		// the default erasure-code profile spreads shards like the
		// default rule spreads replicas (one-host clusters: over OSDs)
		st.ECProfiles["default"] = []string{"crush-failure-domain=" + fd}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Transport == nil {
		o.Transport = msgr.TCP{}
	}
	d := &Daemon{o: o, clock: o.Clock, fsm: newFSM(st), log: o.Logger, ctx: ctx, cancel: cancel, msgr: base,
		peers: map[string]*msgr.Client{}, reports: map[int32]map[int32]time.Time{}}
	d.o.Keyring.Lookup = msgr.KeyLookup(func(name string) ([]byte, bool) {
		if k, ok := d.fsm.authKey(name); ok {
			return k, true
		}
		e, ok := d.o.FileKeys[name]
		return e.Key, ok
	})
	if o.FileKeys == nil { // no keyring file given: everyone shares the daemon's key
		d.o.Keyring.Lookup = nil
	}
	if d.fileCaps, err = caps.NewTable(nil, msgr.KeyringCaps(o.FileKeys), o.FileKeys == nil); err != nil {
		cancel()
		return nil, fmt.Errorf("mon: keyring: %w", err)
	}
	if err := d.startRaft(raddr); err != nil {
		d.Close()
		return nil, err
	}
	lc := d.msgr
	lc.Epoch = d.epoch
	d.srv, err = msgr.Listen(o.Addr, d.o.Keyring, d.handle, lc)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("mon: %w", err)
	}
	if addr := d.config().String("metrics_addr"); addr != "" {
		if err := d.serveMetrics(addr); err != nil {
			d.Close()
			return nil, err
		}
	}
	d.wg.Add(2)
	go d.tickLoop()
	go d.memberLoop()
	return d, nil
}

// tickLoop runs the leader's periodic work until Close.
func (d *Daemon) tickLoop() {
	defer d.wg.Done()
	periodic.Every(d.ctx, d.clock, 500*time.Millisecond, nil, func() {
		now := d.clock.Now()
		d.downOut(now)
		d.reportTimeout(now)
		d.balance(now)
		d.stepPGPNum(now)
		d.stepMerge(now)
	})
}

// balance, on the leader with balancer_active set, runs one round of
// the balancer every balancer_sleep_interval once the cluster is ready
// (State.BalancerReady): a plan of at most target_max_misplaced_ratio of
// the PGs (at least one), committed as one osd pg-upmap-items command —
// Ceph's balancer module in upmap mode, which Ceph runs in its manager.
func (d *Daemon) balance(now time.Time) {
	cfg := d.config()
	if d.raft.State() != raft.Leader || !cfg.Bool("balancer_active") || cfg.String("balancer_mode") != "upmap" {
		return
	}
	interval := time.Duration(cfg.Seconds("balancer_sleep_interval") * float64(time.Second))
	if now.Sub(d.balancedAt) < interval {
		return
	}
	d.balancedAt = now
	round := monc.BalancerRound{Started: now.UTC().Format(time.RFC3339)}
	defer func() {
		round.Seconds = d.clock.Now().Sub(now).Seconds()
		d.mu.Lock()
		d.balancerLast = round
		d.mu.Unlock()
	}()
	m, wait := d.fsm.balancerView()
	round.Epoch = uint32(m.Epoch)
	if wait != "" {
		round.Result = "waiting: " + wait
		d.log.Info("balancer waits", "why", wait)
		return
	}
	pgs := 0
	for _, p := range m.Pools {
		pgs += int(p.PGNum)
	}
	plan, err := balancer.Optimize(m, balancer.Options{MaxDeviation: cfg.Float("balancer_upmap_max_deviation"),
		MaxMoves: max(1, int(cfg.Float("target_max_misplaced_ratio")*float64(pgs)))})
	if err != nil {
		round.Result = "error: " + err.Error()
		d.log.Warn("balancer", "err", err)
		return
	}
	if len(plan.Changes) == 0 {
		round.Result = "balanced: nothing to move"
		return
	}
	r, err := d.commit(monc.Command{Prefix: "osd pg-upmap-items", Args: map[string]string{"items": monc.FormatUpmapItems(plan.Changes)}})
	if err != nil {
		round.Result = "error: " + err.Error()
		d.log.Warn("balancer", "err", err)
		return
	}
	if r.err != nil {
		round.Result = "error: plan refused: " + r.err.Error()
		d.log.Warn("balancer: plan refused", "err", r.err)
		return
	}
	round.Result = fmt.Sprintf("moved %d PG(s)", len(plan.Changes))
	round.PGs = len(plan.Changes)
	d.log.Info("balancer moved PGs", "pgs", len(plan.Changes), "epoch", plan.Epoch)
}

// commit applies command c through the MONs' log (on the leader, 10 s
// at most) and returns its result; err is the log's failure (no longer
// the leader, a timeout), the command's own refusal is the result's err.
func (d *Daemon) commit(c monc.Command) (applyResult, error) {
	raw, _ := json.Marshal(c)
	f := d.raft.Apply(raw, 10*time.Second)
	if err := f.Error(); err != nil {
		return applyResult{}, err
	}
	return f.Response().(applyResult), nil
}

// balancerStatus answers "balancer status" on the leader: the settings,
// the pg_upmap_items in the map, why the balancer would wait now, and
// its last round.
func (d *Daemon) balancerStatus() (monc.Result, error) {
	cfg := d.config()
	m, wait := d.fsm.balancerView()
	d.mu.Lock()
	last := d.balancerLast
	d.mu.Unlock()
	st := monc.BalancerStatus{Active: cfg.Bool("balancer_active"), Mode: cfg.String("balancer_mode"),
		MaxDeviation: cfg.Float("balancer_upmap_max_deviation"), SleepInterval: cfg.Seconds("balancer_sleep_interval"),
		MaxMisplaced: cfg.Float("target_max_misplaced_ratio"), UpmapItems: len(m.PGUpmapItems), Waiting: wait, Last: last}
	b, _ := json.Marshal(st)
	return monc.Result{Data: b}, nil
}

// downOut marks out the OSDs that have been down and in for
// mon_osd_down_out_interval (0: never), unless noout is set — Ceph's
// OSDMonitor::tick. The command is marked auto, so the OSD is marked in
// again when it boots.
func (d *Daemon) downOut(now time.Time) {
	if d.raft.State() != raft.Leader {
		d.downSince = nil
		return
	}
	if d.downSince == nil {
		d.downSince = map[int32]time.Time{}
	}
	m, _ := d.fsm.view()
	interval := time.Duration(d.config().Seconds("mon_osd_down_out_interval") * float64(time.Second))
	var due []string
	for id, o := range m.OSDs {
		id := int32(id)
		if !o.Exists || o.Up || !o.In() {
			delete(d.downSince, id)
			continue
		}
		since, ok := d.downSince[id]
		if !ok {
			d.downSince[id] = now
			continue
		}
		if interval > 0 && now.Sub(since) >= interval && !m.Flags.Has(osdmap.FlagNoOut) {
			due = append(due, strconv.Itoa(int(id)))
		}
	}
	if len(due) == 0 {
		return
	}
	d.log.Info("marking down osds out", "osds", due, "interval", interval)
	if _, err := d.commit(monc.Command{Prefix: "osd out", Args: map[string]string{"ids": strings.Join(due, ","), "auto": "true"}}); err != nil {
		d.log.Warn("down-out", "err", err)
	}
}

func (d *Daemon) epoch() uint32 {
	m, _ := d.fsm.view()
	return uint32(m.Epoch)
}

func (d *Daemon) startRaft(raddr string) error {
	hl := hclog.New(&hclog.LoggerOptions{Name: "raft", Output: logWriter{d.log}, Level: hclog.Warn})
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(d.o.Addr)
	rc.Logger = hl
	rc.HeartbeatTimeout = raftHeartbeat
	rc.ElectionTimeout = raftHeartbeat
	rc.LeaderLeaseTimeout = 250 * time.Millisecond
	rc.SnapshotThreshold = 1024
	var err error
	d.bolt, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(d.o.DataDir, "raft.db")})
	if err != nil {
		return fmt.Errorf("mon: raft store: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(d.o.DataDir, 2, hl)
	if err != nil {
		return fmt.Errorf("mon: snapshots: %w", err)
	}
	ln, err := d.o.Transport.Listen(raddr)
	if err != nil {
		return fmt.Errorf("mon: raft listen: %w", err)
	}
	d.trans = raft.NewNetworkTransportWithLogger(&authStream{Listener: ln, tr: d.o.Transport, kr: d.o.Keyring, log: d.log, monsOnly: d.o.FileKeys != nil, mode: d.msgr.Mode}, 3, 5*time.Second, hl)
	exists, err := raft.HasExistingState(d.bolt, d.bolt, snaps)
	if err != nil {
		return fmt.Errorf("mon: %w", err)
	}
	if !exists && d.o.Join {
		d.log.Info("no state: waiting to be added to the MON map (shoal mon add)", "addr", d.o.Addr)
	}
	if !exists && !d.o.Join {
		var cfg raft.Configuration
		for _, p := range d.o.Peers {
			ra, err := RaftAddr(p)
			if err != nil {
				return err
			}
			cfg.Servers = append(cfg.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p), Address: raft.ServerAddress(ra)})
		}
		if err := raft.BootstrapCluster(rc, d.bolt, d.bolt, snaps, d.trans, cfg); err != nil {
			return fmt.Errorf("mon: bootstrap: %w", err)
		}
	}
	if d.joinedAt, err = lastMembership(d.bolt, snaps, d.o.Addr); err != nil {
		return fmt.Errorf("mon: raft log: %w", err)
	}
	d.raft, err = raft.NewRaft(rc, d.fsm, d.bolt, d.bolt, snaps, d.trans)
	if err != nil {
		return fmt.Errorf("mon: raft: %w", err)
	}
	return nil
}

// Close leaves: it stops serving, shuts raft down and closes the stores.
func (d *Daemon) Close() error {
	d.cancel()
	d.wg.Wait()
	var errs []error
	if d.srv != nil {
		errs = append(errs, d.srv.Close())
	}
	if d.raft != nil {
		errs = append(errs, d.raft.Shutdown().Error())
	}
	if d.trans != nil {
		errs = append(errs, d.trans.Close())
	}
	if d.bolt != nil {
		errs = append(errs, d.bolt.Close())
	}
	d.mu.Lock()
	for _, c := range d.peers {
		c.Close()
	}
	d.mu.Unlock()
	return errors.Join(errs...)
}

// Addr is the messenger address.
func (d *Daemon) Addr() string { return d.srv.Addr() }

// IsLeader reports whether this MON leads the quorum.
func (d *Daemon) IsLeader() bool { return d.raft.State() == raft.Leader }

func (d *Daemon) handle(ctx context.Context, m *msgr.Message) ([]byte, error) {
	if d.removedOnce.Load() {
		return nil, monc.RemoteError(fmt.Errorf("%w: %s: %v", monc.ErrNotLeader, d.o.Name, errRemoved))
	}
	switch m.Type {
	case monc.MsgGetMap:
		req, err := monc.DecodeMapRequest(m.Payload)
		if err != nil {
			return nil, monc.RemoteError(fmt.Errorf("%w: %v", ErrInvalid, err))
		}
		if !d.capsOf(m.From).Mon.Allows("", caps.Read) {
			return nil, monc.RemoteError(fmt.Errorf("%w: %s may not read the cluster map (no mon 'allow r')", monc.ErrPermission, m.From))
		}
		if err := d.current(); err != nil {
			return nil, monc.RemoteError(err)
		}
		m, changed := d.fsm.view()
		if req.Wait && req.Have >= m.Epoch {
			select {
			case <-changed:
			case <-time.After(monc.WaitFor):
			case <-ctx.Done():
			}
		}
		return d.fsm.mapReply(req.Have).Encode(), nil
	case monc.MsgCommand:
		var c monc.Command
		if err := json.Unmarshal(m.Payload, &c); err != nil {
			return nil, monc.RemoteError(fmt.Errorf("%w: bad command: %v", ErrInvalid, err))
		}
		r, err := d.command(ctx, c, m.Payload, m.From)
		if err != nil {
			return nil, monc.RemoteError(err)
		}
		return json.Marshal(r)
	}
	return nil, monc.RemoteError(fmt.Errorf("%w: message type %d", ErrInvalid, m.Type))
}

// command serves what any MON can answer from its state and sends changes
// through raft (on the leader) or to the leader.
func (d *Daemon) command(ctx context.Context, c monc.Command, raw []byte, from string) (monc.Result, error) {
	if err := d.authorize(from, c); err != nil {
		return monc.Result{}, err
	}
	if c.Prefix != "mon status" {
		if err := d.current(); err != nil { // a read it cannot vouch for, or a change it cannot forward
			return monc.Result{}, err
		}
	}
	switch c.Prefix {
	case "osd erasure-code-profile ls":
		b, _ := json.Marshal(d.fsm.ecProfiles())
		return monc.Result{Data: b}, nil
	case "osd erasure-code-profile get":
		args, err := d.fsm.ecProfile(c.Args["name"])
		if err != nil {
			return monc.Result{}, err
		}
		b, _ := json.Marshal(args)
		return monc.Result{Data: b}, nil
	case "auth ls":
		type entry struct {
			Entity string            `json:"entity"`
			Caps   map[string]string `json:"caps"`
		}
		var out []entry
		for n, e := range d.fsm.authDB() {
			out = append(out, entry{n, e.Caps})
		}
		slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.Entity, b.Entity) })
		b, _ := json.Marshal(out)
		return monc.Result{Data: b}, nil
	case "auth dump":
		b, _ := json.Marshal(d.fsm.authDB())
		return monc.Result{Data: b}, nil
	case "auth get-key", "auth get":
		e, ok := d.fsm.authEntry(c.Args["entity"])
		if !ok {
			return monc.Result{}, fmt.Errorf("%s %s: %w", c.Prefix, c.Args["entity"], ErrNotFound)
		}
		var b []byte
		if c.Prefix == "auth get-key" {
			b, _ = json.Marshal(map[string]string{c.Args["entity"]: e.Key})
		} else {
			b, _ = json.Marshal(map[string]monc.AuthEntry{c.Args["entity"]: e})
		}
		return monc.Result{Data: b}, nil
	case "mon status":
		b, _ := json.Marshal(d.status())
		return monc.Result{Data: b}, nil
	case "mon dump":
		b, _ := json.Marshal(d.fsm.monMap())
		return monc.Result{Data: b}, nil
	case "config dump":
		b, _ := json.Marshal(d.fsm.configDB())
		return monc.Result{Data: b}, nil
	}
	if d.raft.State() != raft.Leader {
		return d.forward(ctx, raw)
	}
	if c.Prefix == "osd failure" {
		return d.failure(c)
	}
	if c.Prefix == "osd beacon" {
		return d.beacon(c)
	}
	if c.Prefix == "pg history get" {
		return d.historyGet(ctx, c)
	}
	if c.Prefix == "balancer status" {
		return d.balancerStatus()
	}
	switch c.Prefix {
	case "mon add":
		return d.monAdd(c)
	case "mon rm":
		return d.monRm(c)
	}
	var data json.RawMessage
	if c.Prefix == "auth add" && c.Args == nil {
		c.Args = map[string]string{}
	}
	if c.Prefix == "auth add" && c.Args["key"] == "" { // the leader makes the key; the log carries it
		key, err := msgr.NewKey()
		if err != nil {
			return monc.Result{}, err
		}
		c.Args["key"] = base64.StdEncoding.EncodeToString(key)
		raw, _ = json.Marshal(c)
		data, _ = json.Marshal(map[string]string{"entity": c.Args["entity"], "key": c.Args["key"]})
	}
	// the leader takes the time; the log carries it
	if c.Prefix == "osd pool mksnap" && c.Args["stamp"] == "" {
		c.Args = withArg(c.Args, "stamp", strconv.FormatInt(time.Now().UnixNano(), 10))
		raw, _ = json.Marshal(c)
	}
	if c.Prefix == "osd blocklist add" && c.Args["until"] == "" {
		expire := osdmap.BlocklistDefaultExpire
		if s := c.Args["expire"]; s != "" {
			secs, err := strconv.ParseFloat(s, 64)
			if err != nil || secs <= 0 {
				return monc.Result{}, fmt.Errorf("%w: blocklist expiry %q: want a positive number of seconds", ErrInvalid, s)
			}
			expire = time.Duration(secs * float64(time.Second))
		}
		c.Args = withArg(c.Args, "until", strconv.FormatInt(time.Now().Add(expire).UnixNano(), 10))
		raw, _ = json.Marshal(c)
	}
	if _, err := Translate(c); err != nil { // refuse bad commands before they reach the log
		return monc.Result{}, err
	}
	f := d.raft.Apply(raw, 10*time.Second)
	if err := f.Error(); err != nil {
		return monc.Result{}, fmt.Errorf("%w: %v", monc.ErrNotLeader, err)
	}
	r := f.Response().(applyResult)
	return monc.Result{Message: r.msg, Epoch: r.epoch, Data: data}, r.err
}

// forward sends a command to the leader.
func (d *Daemon) forward(ctx context.Context, raw []byte) (monc.Result, error) {
	addr, _ := d.raft.LeaderWithID()
	if addr == "" {
		return monc.Result{}, monc.ErrNotLeader
	}
	la := msgrAddr(string(addr))
	r, err := d.peerCall(ctx, la, raw)
	if err != nil {
		if re := (*msgr.RemoteError)(nil); errors.As(err, &re) {
			return monc.Result{}, re // the leader's answer
		}
		return monc.Result{}, fmt.Errorf("%w: forwarding to %s: %v", monc.ErrNotLeader, la, err)
	}
	return r, nil
}

// historyGet answers "pg history get" (args pgid, epoch) on the leader:
// the PG's recorded intervals (JSON []monc.PGInterval) once this MON has
// applied map epoch — a record committed before the asker's map is
// applied by then. It gives up with ErrNotLeader after 5 s.
func (d *Daemon) historyGet(ctx context.Context, c monc.Command) (monc.Result, error) {
	pg, err := osdmap.ParsePGID(c.Args["pgid"])
	if err != nil {
		return monc.Result{}, fmt.Errorf("pg history get: %w: %v", ErrInvalid, err)
	}
	want, _ := strconv.ParseUint(c.Args["epoch"], 10, 32)
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for {
		m, ch := d.fsm.view()
		if uint64(m.Epoch) >= want {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return monc.Result{}, ctx.Err()
		case <-timeout.C:
			return monc.Result{}, fmt.Errorf("pg history get: %w: epoch %d not applied here yet", monc.ErrNotLeader, want)
		}
	}
	b, _ := json.Marshal(d.fsm.history(pg))
	return monc.Result{Data: b}, nil
}

// failure counts a report that an OSD is unreachable and marks it down
// once mon_osd_min_down_reporters OSDs from distinct
// mon_osd_reporter_subtree_level buckets agree (Ceph's OSDMonitor
// check_failure). Reports older than twice osd_heartbeat_grace expire. An
// immediate report — the OSD's port refused a connection, so its process
// is gone — marks it down at once, as Ceph's force_failure does: the last
// OSD standing can report the others.
func (d *Daemon) failure(c monc.Command) (monc.Result, error) {
	target, err1 := strconv.Atoi(c.Args["target"])
	reporter, err2 := strconv.Atoi(c.Args["reporter"])
	if err1 != nil || err2 != nil {
		return monc.Result{}, fmt.Errorf("osd failure: %w: target and reporter ids required", ErrInvalid)
	}
	m, _ := d.fsm.view()
	if target < 0 || target >= int(m.MaxOSD()) || !m.OSDs[target].Up || m.OSDs[target].Addr != c.Args["addr"] {
		return monc.Result{Message: "ignored: already down or restarted"}, nil
	}
	if m.Flags.Has(osdmap.FlagNoDown) {
		return monc.Result{Message: "ignored: the nodown flag is set"}, nil
	}
	cfg := d.config()
	need := int(cfg.Int("mon_osd_min_down_reporters"))
	level := cfg.String("mon_osd_reporter_subtree_level")
	grace := time.Duration(2 * cfg.Seconds("osd_heartbeat_grace") * float64(time.Second))
	now := d.clock.Now()
	d.mu.Lock()
	rs := d.reports[int32(target)]
	if rs == nil {
		rs = map[int32]time.Time{}
		d.reports[int32(target)] = rs
	}
	rs[int32(reporter)] = now
	domains := map[string]bool{}
	for r, t := range rs {
		if now.Sub(t) > grace {
			delete(rs, r)
			continue
		}
		domains[m.Crush.Ancestor(r, level)] = true
	}
	enough := len(domains) >= need || c.Args["immediate"] == "true"
	if enough {
		delete(d.reports, int32(target))
	}
	d.mu.Unlock()
	if !enough {
		return monc.Result{Message: fmt.Sprintf("osd.%d: %d of %d reporters", target, len(domains), need)}, nil
	}
	d.log.Info("marking osd down", "osd", target, "reporters", len(domains))
	// the instance reported, not one booted since (the map can change
	// before this applies)
	r, err := d.commit(monc.Command{Prefix: "osd down", Args: map[string]string{"ids": strconv.Itoa(target), "addrs": c.Args["addr"]}})
	if err != nil {
		return monc.Result{}, fmt.Errorf("%w: %v", monc.ErrNotLeader, err)
	}
	return monc.Result{Message: r.msg}, r.err
}

// beacon records that an OSD instance (args addr) is alive and talks to
// the MONs (Ceph's MOSDBeacon); the leader keeps it in memory.
func (d *Daemon) beacon(c monc.Command) (monc.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.beacons != nil {
		d.beacons[c.Args["addr"]] = d.clock.Now()
	}
	return monc.Result{}, nil
}

// reportTimeout, on the leader, marks down the up OSDs it has not heard
// from (boot or beacon) for mon_osd_report_timeout — Ceph's
// OSDMonitor::handle_osd_timeouts: an OSD cut off from the MONs but not
// from its peers, which no peer reports, would otherwise stay up. A new
// leader gives every OSD the whole timeout.
func (d *Daemon) reportTimeout(now time.Time) {
	if d.raft.State() != raft.Leader {
		d.mu.Lock()
		d.beacons = nil
		d.mu.Unlock()
		return
	}
	m, _ := d.fsm.view()
	timeout := time.Duration(d.config().Seconds("mon_osd_report_timeout") * float64(time.Second))
	var due, addrs []string
	d.mu.Lock()
	if d.beacons == nil {
		d.beacons = map[string]time.Time{}
	}
	up := map[string]bool{}
	for id, o := range m.OSDs {
		if !o.Exists || !o.Up {
			continue
		}
		up[o.Addr] = true
		last, ok := d.beacons[o.Addr]
		if !ok { // booted since, or a new leader: the whole timeout
			d.beacons[o.Addr] = now
			continue
		}
		if timeout > 0 && now.Sub(last) >= timeout {
			due, addrs = append(due, strconv.Itoa(id)), append(addrs, o.Addr)
			delete(d.beacons, o.Addr)
		}
	}
	maps.DeleteFunc(d.beacons, func(a string, _ time.Time) bool { return !up[a] })
	d.mu.Unlock()
	if len(due) == 0 || m.Flags.Has(osdmap.FlagNoDown) {
		return
	}
	d.log.Warn("marking osds down: no beacon", "osds", due, "timeout", timeout)
	if _, err := d.commit(monc.Command{Prefix: "osd down", Args: map[string]string{"ids": strings.Join(due, ","), "addrs": strings.Join(addrs, ",")}}); err != nil {
		d.log.Warn("report timeout", "err", err)
	}
}

// config is this MON's configuration: its file over the database.
func (d *Daemon) config() *config.Config {
	return config.NewFile(d.fsm.configDB()).Over(d.o.Config).For(d.o.Name)
}

// authStream is raft's stream layer over connections authenticated and
// protected as the messenger's are (msgr.Authenticate: every record
// authenticated, and encrypted with ms_mode secure).
type authStream struct {
	net.Listener
	tr  msgr.Transport
	kr  msgr.Keyring
	log *slog.Logger
	// monsOnly accepts MON entities only ("mon." or "mon.ID"): false when
	// every entity shares one key (no keyring file).
	monsOnly bool
	mode     msgr.Mode // ms_mode: the stream's records are authenticated, or also encrypted
}

func (s *authStream) Accept() (net.Conn, error) {
	for {
		nc, err := s.Listener.Accept()
		if err != nil {
			return nil, err
		}
		sc, who, err := msgr.Authenticate(nc, s.kr, true, s.mode, 5*time.Second)
		if typ, _, _ := strings.Cut(who, "."); err == nil && s.monsOnly && typ != "mon" {
			err = fmt.Errorf("%s is not a MON", who)
		}
		if err != nil {
			s.log.Warn("mon: refused raft peer", "remote", nc.RemoteAddr().String(), "err", err)
			nc.Close()
			continue
		}
		return sc, nil
	}
}

func (s *authStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	nc, err := s.tr.Dial(ctx, string(addr), "")
	cancel()
	if err != nil {
		return nil, err
	}
	sc, _, err := msgr.Authenticate(nc, s.kr, false, s.mode, timeout)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return sc, nil
}

// logWriter sends raft's log lines to slog.
type logWriter struct{ l *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Warn(string(p))
	return len(p), nil
}

// withArg returns a copy of args with k set to v.
func withArg(args map[string]string, k, v string) map[string]string {
	out := maps.Clone(args)
	if out == nil {
		out = map[string]string{}
	}
	out[k] = v
	return out
}
