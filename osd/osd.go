// Package osd is the OSD daemon: it stores the PGs CRUSH gives it on one
// object store and serves them.
//
// For each PG whose acting set it is in, an OSD is the primary (the first
// of the acting set) or a replica. The primary orders the PG's writes in
// its log — version (epoch, seq) per write — applies each locally and
// sends it to every replica at once, and acknowledges the client only when
// all of them have committed it; a replica applies writes strictly in log
// order. A PG serves I/O only while its acting set is at least the pool's
// min_size.
//
// Whenever the acting set changes (a new OSD map moves the PG, or a member
// restarts), the primary peers: it asks every member for its PG info and
// log, takes the newest history as authoritative, brings itself and every
// member to it — the objects named in the log entries a member lacks (or
// that it wrote and the others never saw), or every object when the logs
// no longer overlap — and only then serves. Writes a client resends after
// a failure are recognised by their request id in the log and answered
// without being applied twice.
//
// Failure detection: OSDs ping every other up OSD each
// osd_heartbeat_interval and report a peer that is silent for
// osd_heartbeat_grace (or whose port refuses connections) to the MONs,
// which mark it down once enough reporters agree.
package osd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/shoal-project/shoal/caps"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/internal/durable"
	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/internal/sem"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Options configure an OSD.
type Options struct {
	DataDir string // whoami and, unless Store is set, the object store
	Addr    string // listen address (host:port; port 0 picks one)
	// ClusterAddr, if set, is a second listen address for other OSDs:
	// replication, recovery, peering and back heartbeats go there (a
	// cluster network, Ceph's cluster_addr), clients and MONs use Addr.
	ClusterAddr string
	Host        string // CRUSH host the OSD registers under; default the hostname
	Class       string // CRUSH device class it registers with when new ("" none)
	MonAddrs    []string
	Keyring     msgr.Keyring
	Config      *config.File // the configuration file (over the MON's database)
	Store       objectstore.Store
	Logger      *slog.Logger
	// FileKeys are the keyring file's entities; with the MONs' key
	// database (`shoal auth`, fetched every second) they are the entities
	// this OSD accepts, with their caps (the file's caps lines, else
	// caps.Default). nil: every peer shares Keyring's key, and an entity
	// not in the database may do anything.
	FileKeys map[string]msgr.KeyringEntry
	// SetMemoryLimit, if set, is called with MemoryBudget.GoMemLimit when
	// the memory budget changes while the OSD runs (the process's
	// GOMEMLIMIT, when the OSD owns its process).
	SetMemoryLimit func(bytes int64)
	// Transport makes the OSD's connections (to its peers, clients and
	// the MONs); nil is TCP (tests: msgr/memnet, msgr/faultnet).
	Transport msgr.Transport
	// Clock times the OSD's schedules — heartbeats and their grace,
	// beacons, markdown damping, read leases, recovery reservation
	// grants, scrub scheduling, the fullness and I/O governor passes —
	// nil is the real clock (tests: clockwork's fake). Op timeouts, retry
	// back-offs and latency measurements keep real time.
	Clock clockwork.Clock
}

// OSD is a running OSD daemon.
type OSD struct {
	o     Options
	clock clockwork.Clock // Options.Clock, or the real one
	id    int32
	store objectstore.Store
	srv   *msgr.Server
	back  *msgr.Server // on Options.ClusterAddr; nil without a cluster network
	mc    *monc.Client
	addr  string // advertised: host:port/nonce
	// clusterAddr is back's advertised address (the same nonce), "" when
	// there is no cluster network.
	clusterAddr string
	log         *slog.Logger
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup

	mu    sync.RWMutex
	m     *osdmap.Map
	mapCh chan struct{} // closed on every new map
	// installed is the map whose handleMap has finished (m is set as it
	// starts): what heartbeats answer by, without waiting for mu.
	installed atomic.Pointer[osdmap.Map]

	scrubKick wake // wakes the scrub loop for a requested scrub
	// compacting is set while a `shoal osd compact` runs: one at a time
	compacting atomic.Bool
	// snapTrimKick wakes the snap trimmer for a new map
	snapTrimKick wake
	notifyID     atomic.Uint64 // the last notify id given out (watch.go)
	recovering   sem.Weighted  // object copies of recovery in flight (osd_recovery_max_active)
	reserver     reserver      // PGs recovering with this OSD as primary (osd_max_backfills), by priority
	// object data held by recovery (osd_memory_target / 8)
	recoveryMem sem.Weighted
	qos         qos // the I/O scheduler (osd_op_queue)
	ops         opTracker
	scrubSlots  scrubSlots
	remoteSlots remoteSlots // remote recovery reservations granted (recoveryres.go)
	pgTemp      pgTempRequests
	history     historyRecords
	pgs         map[osdmap.PGID]*PG
	removing    map[osdmap.PGID]*pgRemoval // stray copies being deleted
	// mergeReporting: the merge sources whose readiness this OSD, their
	// primary, reports (merge.go; guarded by mu)
	mergeReporting map[osdmap.PGID]bool
	// mergeRetry: a retry of failed merges is scheduled (merge.go)
	mergeRetry atomic.Bool
	cfg        atomic.Pointer[config.Config]
	name       string // entity name, osd.N

	auth atomic.Pointer[authState] // the MONs' key database and every entity's caps
	// msgr is the base of the OSD's messenger configurations: its logger,
	// map epoch, transport and frame protection (ms_mode, ms_session_ttl,
	// read at start).
	msgr msgr.Config
	// authMu serialises fetchAuth; authAt is when its last fetch began,
	// authEarlyAt its last for an unknown entity, authDump the last
	// database installed.
	authMu              sync.Mutex
	authAt, authEarlyAt time.Time
	authDump            string

	codecMu sync.Mutex
	codecs  map[int64]*ec.Codec // of erasure-coded pools, by pool id

	perf        *perfCounters
	metricsAddr string // where /metrics is served, if anywhere

	// markdowns are the times the map marked this OSD down while it ran,
	// within osd_max_markdown_period; bootAt is when it may boot again
	// (guarded by mu).
	markdowns []time.Time
	bootAt    time.Time
	peerMu    sync.Mutex
	peers     map[string]*msgr.Client // by address without nonce
	lastHB    map[string]time.Time    // last ping answered, by peer address (host:port)
	leases    leaseTable              // read leases held and promised (lease.go)
	shareMu   sync.Mutex
	sharing   bool // a fetch of a newer map from the peers is under way (mapshare.go)
	// mem is the memory budget applied to the store's caches (applyMemory;
	// watchConfig's goroutine only, once started); its MetaCache stays the
	// size the store opened with
	mem MemoryBudget
}

// Start opens the store, registers with the MONs (a new OSD gets an id and
// a place in CRUSH under host=Host) and starts serving.
func Start(o Options) (*OSD, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Config == nil {
		o.Config = config.NewFile(nil)
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("osd: %w", err)
	}
	id := int32(-1)
	if b, err := os.ReadFile(filepath.Join(o.DataDir, "whoami")); err == nil {
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("osd: %s/whoami: %w", o.DataDir, err)
		}
		id = int32(v)
	}
	name := "osd"
	if id >= 0 {
		name = fmt.Sprintf("osd.%d", id)
	}
	cfg := o.Config.For(name)
	store := o.Store
	mem := Memory(cfg)
	if store == nil {
		if mem.Warning != "" {
			o.Logger.Warn("osd: " + mem.Warning)
		}
		o.Logger.Info("memory budget", "budget", mem.String())
		opts := objectstore.Options{Dir: filepath.Join(o.DataDir, "store"), Size: int64(cfg.Size("bluestore_block_size")),
			DBDir: fastDir(cfg.String("bluestore_block_db_path"), o.DataDir, "block.db"), WALDir: fastDir(cfg.String("bluestore_block_wal_path"), o.DataDir, "block.wal"),
			Logger: o.Logger, CommitWindow: storeCommitWindow(cfg), DeferredMax: storeDeferredMax(cfg)}
		mem.storeOptions(&opts)
		bs, err := objectstore.Open(opts)
		if err != nil {
			return nil, fmt.Errorf("osd: %w", err)
		}
		store = bs
	}
	ctx, cancel := context.WithCancel(context.Background())
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	d := &OSD{o: o, clock: o.Clock, id: id, store: store, log: o.Logger, ctx: ctx, cancel: cancel, name: name,
		mapCh: make(chan struct{}), scrubKick: newWake(), snapTrimKick: newWake(), pgTemp: pgTempRequests{kick: newWake()}, history: historyRecords{kick: newWake()}, pgs: map[osdmap.PGID]*PG{}, removing: map[osdmap.PGID]*pgRemoval{}, codecs: map[int64]*ec.Codec{}, peers: map[string]*msgr.Client{}, lastHB: map[string]time.Time{}, leases: newLeaseTable(o.Clock.Now())}
	d.cfg.Store(cfg)
	d.mem = memory(cfg, mem.MetaCache)
	d.qos.class = o.Class
	if err := d.start(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *OSD) start() error {
	if typ, _, _ := strings.Cut(d.o.Keyring.Name, "."); typ != "osd" {
		return fmt.Errorf("osd: keyring entity %q is not an OSD's (osd.N, or osd before the OSD has an id)", d.o.Keyring.Name)
	}
	if err := d.ensureMeta(); err != nil {
		return err
	}
	d.loadCapacity()
	if err := d.loadPGs(); err != nil {
		return err
	}
	t, err := caps.NewTable(nil, msgr.KeyringCaps(d.o.FileKeys), d.o.FileKeys == nil)
	if err != nil {
		return fmt.Errorf("osd: keyring: %w", err)
	}
	d.auth.Store(&authState{caps: t})
	if d.msgr, err = msgr.SessionConfig(msgr.Config{Logger: d.log, Epoch: d.epoch, Transport: d.o.Transport}, d.conf().String("ms_mode"), d.conf().Seconds("ms_session_ttl")); err != nil {
		return fmt.Errorf("osd: %w", err)
	}
	mc := d.msgr
	mc.Epoch = nil // the MONs' frames carry no OSD map epoch
	d.mc, err = monc.New(d.o.MonAddrs, d.o.Keyring, mc)
	if err != nil {
		return err
	}
	if d.o.FileKeys != nil {
		lookup := msgr.KeyLookup(func(name string) ([]byte, bool) {
			if k, ok := d.auth.Load().keys[name]; ok {
				return k, true
			}
			e, ok := d.o.FileKeys[name]
			return e.Key, ok
		})
		d.o.Keyring.Lookup = func(name string) ([]byte, bool) {
			if k, ok := lookup(name); ok {
				return k, true
			}
			if !d.fetchAuth(true) { // an entity added since the last fetch?
				return nil, false
			}
			return lookup(name)
		}
	}
	d.srv, err = msgr.Listen(d.o.Addr, d.o.Keyring, d.handle, d.msgr)
	if err != nil {
		return fmt.Errorf("osd: %w", err)
	}
	nonce := time.Now().UnixNano() % 1_000_000_000
	d.addr = fmt.Sprintf("%s/%d", d.srv.Addr(), nonce)
	if d.o.ClusterAddr != "" {
		if d.back, err = msgr.Listen(d.o.ClusterAddr, d.o.Keyring, d.handle, d.msgr); err != nil {
			return fmt.Errorf("osd: cluster network: %w", err)
		}
		d.clusterAddr = fmt.Sprintf("%s/%d", d.back.Addr(), nonce)
	}
	ctx, cancel := context.WithTimeout(d.ctx, 60*time.Second)
	defer cancel()
	m, err := d.boot(ctx)
	if err != nil {
		return err
	}
	if addr := d.conf().String("metrics_addr"); addr != "" {
		if err := d.serveMetrics(d.ctx, addr); err != nil {
			return err
		}
	}
	d.handleMap(m)
	d.wg.Add(11)
	go d.snapTrimLoop()
	go d.watchLoop()
	go d.beaconLoop()
	go d.pgTempLoop()
	go d.historyLoop()
	go d.scrubLoop()
	go d.fullnessLoop()
	go d.governLoop()
	go func() {
		defer d.wg.Done()
		d.mc.Subscribe(d.ctx, m, d.handleMap)
	}()
	go func() {
		defer d.wg.Done()
		d.watchConfig()
	}()
	go func() {
		defer d.wg.Done()
		d.heartbeat()
	}()
	return nil
}

// ensureMeta creates the collection of PG metadata on a new store.
func (d *OSD) ensureMeta() error {
	colls, err := d.store.Collections()
	if err != nil {
		return fmt.Errorf("osd: %w", err)
	}
	for _, c := range colls {
		if c == metaColl {
			return nil
		}
	}
	var t objectstore.Transaction
	t.CreateCollection(metaColl)
	if err := d.store.Apply(&t); err != nil {
		return fmt.Errorf("osd: create meta collection: %w", err)
	}
	return nil
}

// loadPGs loads every PG the store holds, as strays until a map says
// otherwise, so that a former member can answer a new primary's query.
func (d *OSD) loadPGs() error {
	colls, err := d.store.Collections()
	if err != nil {
		return fmt.Errorf("osd: %w", err)
	}
	for _, c := range colls {
		if c == metaColl {
			continue
		}
		id, err := osdmap.ParsePGID(string(c))
		if err != nil {
			d.log.Warn("ignoring a collection that is not a PG", "collection", c)
			continue
		}
		pg, err := d.loadPG(id, 0)
		if err != nil {
			return fmt.Errorf("osd: load pg %s: %w", id, err)
		}
		d.pgs[id] = pg
	}
	return nil
}

// boot registers the OSD with the MONs and returns the map that has it up.
func (d *OSD) boot(ctx context.Context) (*osdmap.Map, error) {
	fs, _ := d.store.StatFS()
	if fs.Total == 0 { // a store without a device size (MemStore): weight 1
		fs.Total = 1 << 40
	}
	args := map[string]string{"id": strconv.Itoa(int(d.id)), "host": d.o.Host,
		"addr": d.addr, "cluster_addr": d.clusterAddr, "size": strconv.FormatUint(fs.Total, 10), "class": d.o.Class}
	r, err := d.mc.Command(ctx, "osd boot", args)
	for errors.Is(err, monc.ErrBusy) { // noup: stay down until a map clears it
		d.log.Warn("boot refused; waiting for the next map", "err", err)
		m, gerr := d.mc.GetMap(d.ctx, nil, false)
		for gerr == nil && m.Flags.Has(osdmap.FlagNoUp) {
			m, gerr = d.mc.WaitEpoch(d.ctx, m, uint32(m.Epoch)+1)
		}
		err = gerr
		if err == nil {
			cctx, cancel := context.WithTimeout(d.ctx, 60*time.Second)
			r, err = d.mc.Command(cctx, "osd boot", args)
			cancel()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("osd: boot: %w", err)
	}
	m, err := d.mc.WaitEpoch(d.ctx, nil, r.Epoch) // committed: it comes
	if err != nil {
		return nil, fmt.Errorf("osd: boot: %w", err)
	}
	if d.id < 0 {
		for i, e := range m.OSDs {
			if e.Exists && e.Addr == d.addr {
				d.id = int32(i)
			}
		}
		if d.id < 0 {
			return nil, fmt.Errorf("osd: boot: epoch %d does not hold this OSD (%s)", m.Epoch, d.addr)
		}
		if err := durable.WriteFile(filepath.Join(d.o.DataDir, "whoami"), []byte(fmt.Sprintf("%d\n", d.id)), 0o644); err != nil {
			return nil, fmt.Errorf("osd: %w", err)
		}
		d.name = fmt.Sprintf("osd.%d", d.id)
		d.cfg.Store(d.o.Config.For(d.name))
	}
	d.log = d.log.With("osd", d.id)
	d.perf = newPerf(fmt.Sprintf("osd.%d", d.id), d.store, d.qos.scale)
	d.log.Info("booted", "addr", d.addr, "epoch", m.Epoch)
	return m, nil
}

// MetricsAddr is where the OSD serves /metrics ("" if it does not).
func (d *OSD) MetricsAddr() string { return d.metricsAddr }

// ID is the OSD's id.
func (d *OSD) ID() int32 { return d.id }

// Addr is the advertised address (host:port/nonce).
func (d *OSD) Addr() string { return d.addr }

// Close stops serving and closes the store.
func (d *OSD) Close() error {
	d.cancel()
	if d.srv != nil {
		d.srv.Close()
	}
	if d.back != nil {
		d.back.Close()
	}
	d.wg.Wait()
	if d.mc != nil {
		d.mc.Close()
	}
	d.peerMu.Lock()
	for _, c := range d.peers {
		c.Close()
	}
	d.peerMu.Unlock()
	return d.store.Close()
}

// conf is the OSD's configuration: its file over the MONs' database.
func (d *OSD) conf() *config.Config { return d.cfg.Load() }

// watchConfig applies the MONs' configuration database (`shoal config
// set`) as it changes — options are read where they are used, so a new
// value takes effect at once — and refreshes the key database.
func (d *OSD) watchConfig() {
	last := ""
	for {
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		r, err := d.mc.Command(ctx, "config dump", nil)
		cancel()
		d.fetchAuth(false)
		if err == nil && string(r.Data) != last {
			var db map[string]map[string]string
			if json.Unmarshal(r.Data, &db) == nil {
				cfg := config.NewFile(db).Over(d.o.Config).For(d.name)
				d.cfg.Store(cfg)
				if last != "" {
					d.log.Info("configuration changed")
				}
				d.applyMemory(cfg)
				last = string(r.Data)
			}
		}
		select {
		case <-d.ctx.Done():
			return
		case <-time.After(configPoll):
		}
	}
}

// configPoll is how often an OSD fetches the configuration database.
const configPoll = time.Second

// stats reports the PGs this OSD is primary of.
// fullness is this OSD's fill level by mon_osd_nearfull_ratio,
// mon_osd_backfillfull_ratio and mon_osd_full_ratio, and the fraction of
// its device in use — its data blocks and its metadata store's files,
// against the data device's size (a store without a size is never
// full).
func (d *OSD) fullness() (osdmap.Fullness, float64) {
	fs, err := d.store.StatFS()
	if err != nil || fs.Total == 0 {
		return osdmap.NotFull, 0
	}
	used := float64(fs.Used+fs.Meta) / float64(fs.Total) // the metadata store's files count: small objects live there
	cfg := d.conf()
	switch {
	case used >= cfg.Float("mon_osd_full_ratio"):
		return osdmap.Full, used
	case used >= cfg.Float("mon_osd_backfillfull_ratio"):
		return osdmap.BackfillFull, used
	case used >= cfg.Float("mon_osd_nearfull_ratio"):
		return osdmap.NearFull, used
	}
	return osdmap.NotFull, used
}

// fullnessLoop reports this OSD's fill level to the MONs whenever it
// differs from the map's (checked every second), as Ceph's OSDs report
// their nearfull, backfillfull and full states, and samples the recovery
// rate.
func (d *OSD) fullnessLoop() {
	defer d.wg.Done()
	periodic.Every(d.ctx, d.clock, time.Second, nil, func() {
		d.perf.sampleRecovery(d.clock.Now())
		lvl, used := d.fullness()
		m, _ := d.curMap()
		if m == nil || d.id < 0 || d.id >= m.MaxOSD() || !m.OSDs[d.id].Up || m.OSDs[d.id].Fullness == lvl {
			return
		}
		d.log.Warn("device fill level changed", "was", m.OSDs[d.id].Fullness, "now", lvl, "used", fmt.Sprintf("%.1f%%", used*100))
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		defer cancel()
		if _, err := d.mc.Command(ctx, "osd fullness", map[string]string{"id": strconv.Itoa(int(d.id)), "addr": d.addr, "level": strconv.Itoa(int(lvl))}); err != nil {
			d.log.Warn("reporting fill level", "err", err)
		}
	})
}

func (d *OSD) stats() osdop.Stats {
	fs, _ := d.store.StatFS()
	var meta *osdop.MetaStore // outside the map lock: it may wait for the store's Close
	if ms, ok := d.store.(metaStore); ok {
		m := ms.MetaStats()
		meta = &osdop.MetaStore{Flushes: m.Flushes, Compactions: m.Compactions, FlushesRunning: m.FlushesRunning,
			CompactionsRunning: m.CompactionsRunning, CompactionDebt: m.CompactionDebt, ReadAmp: m.ReadAmp,
			SSTBytes: m.SSTBytes, BlobBytes: m.BlobBytes, BlobGarbageBytes: m.BlobGarbageBytes}
	}
	d.mu.RLock()
	st := osdop.Stats{ID: d.id, Epoch: uint32(d.m.Epoch), Total: fs.Total >> 10, Used: (fs.Used + fs.Meta) >> 10, Perf: d.perf.snapshot(), MetricsAddr: d.metricsAddr, MetaStore: meta}
	st.Perf.MClockCapacityIOPS = d.qos.capacityIOPS(d.conf(), d.qosError)
	st.Perf.MClockScale = d.qos.scale()
	now := time.Now()
	var oldest time.Time
	if st.SlowOps, oldest = d.ops.slow(now.Add(-time.Duration(d.conf().Seconds("osd_op_complaint_time") * float64(time.Second)))); st.SlowOps > 0 {
		st.SlowOpOldest = now.Sub(oldest).Seconds()
	}
	st.RecoveryOpsRate, st.RecoveryBytesRate = d.perf.recoveryRates()
	pgs := make([]*PG, 0, len(d.pgs))
	for _, pg := range d.pgs {
		pgs = append(pgs, pg)
	}
	st.HeldPGs = len(d.pgs) + len(d.removing)
	d.mu.RUnlock()
	for _, pg := range pgs {
		if s, ok := pg.stats(); ok {
			st.PGs = append(st.PGs, s)
		}
	}
	return st
}

// metaStore is a store with a metadata LSM (BlockStore).
type metaStore interface {
	MetaStats() objectstore.MetaStats
	FlushMeta() error
	CompactMeta(ctx context.Context) error
}

// osdCommand serves MsgOSDCommand: "flush" or "compact" the metadata
// store, answering when done. One compaction runs at a time (another
// asked meanwhile gets osdop.ErrBusy); it runs to its end even if the
// client goes away, or until the OSD stops.
func (d *OSD) osdCommand(ctx context.Context, payload []byte) ([]byte, error) {
	var c osdop.OSDCommand
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: osd command: %v", osdop.ErrInvalid, err)
	}
	ms, ok := d.store.(metaStore)
	if !ok {
		return nil, fmt.Errorf("%w: osd.%d: its store has no metadata store to %s", osdop.ErrInvalid, d.id, c.Cmd)
	}
	start := time.Now()
	var err error
	switch c.Cmd {
	case "flush":
		err = ms.FlushMeta()
	case "compact":
		if !d.compacting.CompareAndSwap(false, true) {
			return nil, fmt.Errorf("%w: osd.%d: a compaction of its metadata store is already running", osdop.ErrBusy, d.id)
		}
		err = ms.CompactMeta(ctx)
		d.compacting.Store(false)
	default:
		return nil, fmt.Errorf("%w: osd command %q (flush or compact)", osdop.ErrInvalid, c.Cmd)
	}
	if err != nil {
		return nil, fmt.Errorf("osd.%d: %s: %w", d.id, c.Cmd, err)
	}
	took := time.Since(start).Round(time.Millisecond)
	d.log.Info("metadata store command done", "cmd", c.Cmd, "took", took)
	return []byte(fmt.Sprintf("osd.%d: %s done in %s", d.id, c.Cmd, took)), nil
}

// storeCommitWindow is objectstore_commit_window as objectstore.Options
// takes it: the option's 0 ("disabled") is the store's negative
// ("never"), since the store's 0 means its default (300 µs).
func storeCommitWindow(cfg *config.Config) time.Duration {
	d := time.Duration(cfg.Seconds("objectstore_commit_window") * float64(time.Second))
	if d <= 0 {
		return -1
	}
	return d
}

// storeDeferredMax is bluestore_prefer_deferred_size as
// objectstore.Options takes it: the option's 0 (disabled) is the store's
// negative, since the store's 0 means its default.
func storeDeferredMax(cfg *config.Config) int {
	if n := int(cfg.Size("bluestore_prefer_deferred_size")); n > 0 {
		return n
	}
	return -1
}

// pgList is a snapshot of the PGs the OSD holds, for a background pass
// over them (scrub, snap trimming, watch expiry).
func (d *OSD) pgList() []*PG {
	d.mu.RLock()
	defer d.mu.RUnlock()
	pgs := make([]*PG, 0, len(d.pgs))
	for _, pg := range d.pgs {
		pgs = append(pgs, pg)
	}
	return pgs
}

// fastDir is where an OSD's metadata store or write-ahead log goes: the
// configured path, else the OSD directory's block.db or block.wal link
// (`shoal up --db-dir`, BlueStore's layout), else "" (the store's own
// directory). The store keeps them where they were at its creation.
func fastDir(configured, dataDir, link string) string {
	if configured != "" {
		return configured
	}
	if fi, err := os.Stat(filepath.Join(dataDir, link)); err == nil && fi.IsDir() {
		return filepath.Join(dataDir, link)
	}
	return ""
}
