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
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/internal/sem"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/peering"
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
	// FileKeys are the keyring file's keys; with the MONs' key database
	// (`shoal auth`, fetched every second) they are the entities this OSD
	// accepts. nil: every peer shares Keyring's key.
	FileKeys map[string][]byte
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

	scrubKick  wake         // wakes the scrub loop for a requested scrub
	recovering sem.Weighted // object copies of recovery in flight (osd_recovery_max_active)
	reserver   reserver     // PGs recovering with this OSD as primary (osd_max_backfills), by priority
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
	cfg         atomic.Pointer[config.Config]
	name        string // entity name, osd.N

	authDB atomic.Pointer[map[string][]byte] // the MONs' key database

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
			DBDir: cfg.String("bluestore_block_db_path"), WALDir: cfg.String("bluestore_block_wal_path"), Logger: o.Logger,
			CommitWindow: storeCommitWindow(cfg)}
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
		mapCh: make(chan struct{}), scrubKick: newWake(), pgTemp: pgTempRequests{kick: newWake()}, history: historyRecords{kick: newWake()}, pgs: map[osdmap.PGID]*PG{}, removing: map[osdmap.PGID]*pgRemoval{}, codecs: map[int64]*ec.Codec{}, peers: map[string]*msgr.Client{}, lastHB: map[string]time.Time{}, leases: newLeaseTable(o.Clock.Now())}
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
	if err := d.ensureMeta(); err != nil {
		return err
	}
	d.loadCapacity()
	if err := d.loadPGs(); err != nil {
		return err
	}
	var err error
	if d.o.FileKeys != nil {
		d.o.Keyring.Lookup = msgr.KeyLookup(func(name string) ([]byte, bool) {
			if db := d.authDB.Load(); db != nil {
				if k, ok := (*db)[name]; ok {
					return k, true
				}
			}
			k, ok := d.o.FileKeys[name]
			return k, ok
		})
	}
	d.srv, err = msgr.Listen(d.o.Addr, d.o.Keyring, d.handle, msgr.Config{Logger: d.log, Epoch: d.epoch, Transport: d.o.Transport})
	if err != nil {
		return fmt.Errorf("osd: %w", err)
	}
	nonce := time.Now().UnixNano() % 1_000_000_000
	d.addr = fmt.Sprintf("%s/%d", d.srv.Addr(), nonce)
	if d.o.ClusterAddr != "" {
		if d.back, err = msgr.Listen(d.o.ClusterAddr, d.o.Keyring, d.handle, msgr.Config{Logger: d.log, Epoch: d.epoch, Transport: d.o.Transport}); err != nil {
			return fmt.Errorf("osd: cluster network: %w", err)
		}
		d.clusterAddr = fmt.Sprintf("%s/%d", d.back.Addr(), nonce)
	}
	d.mc, err = monc.New(d.o.MonAddrs, d.o.Keyring, msgr.Config{Logger: d.log, Transport: d.o.Transport})
	if err != nil {
		return err
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
	d.wg.Add(9)
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
		pg, err := d.loadPG(id)
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
		if err := writeFileDurable(filepath.Join(d.o.DataDir, "whoami"), []byte(fmt.Sprintf("%d\n", d.id))); err != nil {
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

func writeFileDurable(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
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
		actx, acancel := context.WithTimeout(d.ctx, 5*time.Second)
		if a, err := d.mc.Command(actx, "auth dump", nil); err == nil {
			var db map[string]string
			if json.Unmarshal(a.Data, &db) == nil {
				keys := map[string][]byte{}
				for n, k := range db {
					if b, err := base64.StdEncoding.DecodeString(k); err == nil {
						keys[n] = b
					}
				}
				d.authDB.Store(&keys)
			}
		}
		acancel()
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

func (d *OSD) epoch() uint32 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.m == nil {
		return 0
	}
	return uint32(d.m.Epoch)
}

func (d *OSD) curMap() (*osdmap.Map, chan struct{}) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.m, d.mapCh
}

// waitEpoch waits (up to 5 s) until the OSD has a map of epoch e; if it
// has not, it asks for it (learnEpoch: from the MONs, or else a peer).
func (d *OSD) waitEpoch(ctx context.Context, e uint32) {
	d.awaitEpoch(ctx, e, 5*time.Second, true)
}

// awaitEpoch waits up to timeout (or until ctx ends) for a map of epoch e
// and reports whether this OSD has one; with learn, a missing epoch is
// asked for (learnEpoch). Having it already costs one read lock: every
// message asks.
func (d *OSD) awaitEpoch(ctx context.Context, e uint32, timeout time.Duration, learn bool) bool {
	m, ch := d.curMap()
	if uint32(m.Epoch) >= e {
		return true
	}
	if learn {
		d.learnEpoch(e, -1, "")
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		}
		if m, ch = d.curMap(); uint32(m.Epoch) >= e {
			return true
		}
	}
}

// handleMap installs a new map: PGs whose acting set changed start a new
// interval (the primary peers), PGs this OSD left become strays.
func (d *OSD) handleMap(m *osdmap.Map) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m != nil && m.Epoch <= d.m.Epoch {
		return
	}
	defer d.installed.Store(m) // before mu is released
	old := d.m
	d.m = m
	close(d.mapCh)
	d.mapCh = make(chan struct{})
	if d.id >= 0 && d.id < m.MaxOSD() && (!m.OSDs[d.id].Up || m.OSDs[d.id].Addr != d.addr) {
		wasUp := old != nil && d.id < old.MaxOSD() && old.OSDs[d.id].Up && old.OSDs[d.id].Addr == d.addr
		wait := d.markedDown(d.clock.Now(), wasUp)
		if wait > 0 {
			d.log.Error("marked down in the map while alive too often: staying down (osd_max_markdown_count, osd_max_markdown_period); check this OSD's network to its peers",
				"epoch", m.Epoch, "times", len(d.markdowns), "boot_in", wait.Round(time.Second))
		} else {
			d.log.Warn("marked down in the map while alive; booting again", "epoch", m.Epoch)
		}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			select {
			case <-d.ctx.Done():
				return
			case <-d.clock.After(wait):
			}
			ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
			defer cancel()
			d.mc.Command(ctx, "osd boot", map[string]string{"id": strconv.Itoa(int(d.id)), "host": d.o.Host, "addr": d.addr, "cluster_addr": d.clusterAddr})
		}()
	}
	seen := map[osdmap.PGID]bool{}
	for _, pid := range m.PoolIDs() {
		pool, _ := m.Pool(pid)
		maps, err := m.PGMappings(pid)
		if err != nil {
			d.log.Error("pg mappings", "pool", pid, "err", err)
			continue
		}
		var oldMaps []osdmap.Mapping
		if old != nil {
			if op, err := old.Pool(pid); err == nil && op.PGNum == pool.PGNum {
				oldMaps, _ = old.PGMappings(pid)
			}
		}
		for seed, mp := range maps {
			pgid := osdmap.PGID{Pool: pid, Seed: uint32(seed)}
			// a member of the acting set, or a backfill target (in its
			// up set, outside a pg_temp)
			in := slices.Contains(mp.Acting, d.id) || slices.Contains(mp.Up, d.id)
			pg := d.pgs[pgid]
			if !in && pg == nil {
				continue
			}
			if pg == nil {
				d.abortRemoval(pgid)
				var err error
				if pg, err = d.loadPG(pgid); err != nil {
					d.log.Error("load pg", "pg", pgid, "err", err)
					continue
				}
				d.pgs[pgid] = pg
			}
			seen[pgid] = true
			var prev []int32
			if seed < len(oldMaps) {
				prev = oldMaps[seed].Acting
			}
			pg.setMapping(m, pool, mp, in, prev)
			if p := mp.ActingPrimary; !in && p >= 0 && p < m.MaxOSD() && m.OSDs[p].Up {
				pg.mu.Lock()
				iv, told := pg.ps.Interval.ID, pg.notified == pg.ps.Interval.ID
				pg.mu.Unlock()
				if !told {
					d.wg.Add(1)
					go func() {
						defer d.wg.Done()
						pg.notifyPrimary(iv, p, m.OSDs[p].BackAddr())
					}()
				}
			}
		}
	}
	for id, pg := range d.pgs {
		if seen[id] {
			continue
		}
		pg.setMapping(m, nil, osdmap.Mapping{ActingPrimary: -1}, false, nil)
		if _, err := m.Pool(id.Pool); err != nil { // the pool was deleted
			delete(d.pgs, id)
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				if err := d.removePG(pg, &pgRemoval{}); err != nil {
					d.log.Error("remove pg of deleted pool", "pg", id, "err", err)
				} else {
					d.log.Info("removed pg of deleted pool", "pg", id)
				}
			}()
		}
	}
}

// markedDown records that the map marked this OSD down while it ran (the
// OSD's map lock is held; wasUp: the previous map had it up, so this is a
// new markdown, not another map that still has it down) and says how
// long to wait before booting again: at once, unless it was marked down
// more than osd_max_markdown_count times in the last
// osd_max_markdown_period — then until the oldest of them leaves the
// period (Ceph's flap damping, which shuts such an OSD down instead).
func (d *OSD) markedDown(now time.Time, wasUp bool) time.Duration {
	if wasUp {
		cfg := d.conf()
		period := time.Duration(cfg.Seconds("osd_max_markdown_period") * float64(time.Second))
		d.markdowns = append(slices.DeleteFunc(d.markdowns, func(t time.Time) bool { return now.Sub(t) >= period }), now)
		d.bootAt = now
		if n := int(cfg.Int("osd_max_markdown_count")); len(d.markdowns) > n {
			d.bootAt = d.markdowns[len(d.markdowns)-n-1].Add(period)
		}
	}
	return max(d.bootAt.Sub(now), 0)
}

// loadPG makes the PG's collection if it is new and reads its log.
func (d *OSD) loadPG(id osdmap.PGID) (*PG, error) {
	c := objectstore.Coll(id.String())
	if _, err := d.store.List(c, "", 1); errors.Is(err, objectstore.ErrNotFound) {
		var t objectstore.Transaction
		t.CreateCollection(c)
		if err := d.store.Apply(&t); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	l, err := loadPGLog(d.store, c)
	if err != nil {
		return nil, err
	}
	pg := newPG(d, id, c, l)
	pg.loadScrubStamps()
	return pg, nil
}

func (d *OSD) getPG(id osdmap.PGID) *PG {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.pgs[id]
}

// peer returns the messenger client for OSD id's address addr
// ("host:port/nonce"). A new connection to a cluster (back) address
// leaves from this OSD's own cluster address.
func (d *OSD) peer(id int32, addr string) *msgr.Client {
	a, _, _ := strings.Cut(addr, "/")
	d.peerMu.Lock()
	c := d.peers[a]
	d.peerMu.Unlock()
	if c != nil {
		return c
	}
	src := d.addr
	if d.clusterAddr != "" && d.backAddrOf(id) == addr {
		src = d.clusterAddr
	}
	d.peerMu.Lock()
	defer d.peerMu.Unlock()
	if c = d.peers[a]; c == nil {
		c = msgr.Dial(a, d.o.Keyring, msgr.Config{Logger: d.log, Epoch: d.epoch, MaxBackoff: time.Second, DialTimeout: 2 * time.Second, SourceIP: sourceIP(src), Transport: d.o.Transport})
		d.peers[a] = c
	}
	return c
}

// backAddrOf is OSD id's cluster address in the current map, "" if none.
func (d *OSD) backAddrOf(id int32) string {
	m, _ := d.curMap()
	if m == nil || id < 0 || id >= m.MaxOSD() {
		return ""
	}
	return m.OSDs[id].ClusterAddr
}

// sourceIP is the host of a listen address of this OSD, which its
// connections on that network leave from ("" when it listens on every
// address).
func sourceIP(addr string) string {
	host, _, err := net.SplitHostPort(strings.Split(addr, "/")[0])
	if ip := net.ParseIP(host); err != nil || ip == nil || ip.IsUnspecified() {
		return ""
	}
	return host
}

// call sends a message to OSD id at addr (its public or cluster address)
// and returns the reply payload (a copy). A refused connection is
// reported to the MONs at once.
func (d *OSD) call(ctx context.Context, id int32, addr string, typ uint16, payload []byte) ([]byte, error) {
	rep, err := d.peer(id, addr).Call(ctx, typ, payload)
	return d.answer(id, addr, rep, err)
}

// callVec is call with the payload as parts (see msgr.Client.CallVecSum)
// and its checksum already computed.
func (d *OSD) callVec(ctx context.Context, id int32, addr string, typ uint16, parts [][]byte, sum uint32) ([]byte, error) {
	rep, err := d.peer(id, addr).CallVecSum(ctx, typ, parts, sum)
	return d.answer(id, addr, rep, err)
}

// answer is a peer call's reply payload (copied) or error.
func (d *OSD) answer(id int32, addr string, rep *msgr.Message, err error) ([]byte, error) {
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) && d.conf().Bool("osd_fast_fail_on_connection_refused") {
			d.reportFailure(id, d.frontAddr(id, addr), true)
		}
		var re *msgr.RemoteError
		if errors.As(err, &re) {
			return nil, osdop.FromErrno(syscall.Errno(re.Code), re.Msg)
		}
		return nil, fmt.Errorf("osd.%d: %w", id, err)
	}
	out := append([]byte(nil), rep.Payload...)
	rep.Release()
	return out, nil
}

// frontAddr is the public address of OSD id reached at addr: the MONs
// know an instance by it.
func (d *OSD) frontAddr(id int32, addr string) string {
	m, _ := d.curMap()
	if m != nil && id >= 0 && id < m.MaxOSD() && addr != "" && m.OSDs[id].ClusterAddr == addr {
		return m.OSDs[id].Addr
	}
	return addr
}

// reportFailure tells the MONs that osd id (at addr) does not answer;
// immediate when its port refused the connection (its process is gone).
func (d *OSD) reportFailure(id int32, addr string, immediate bool) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
		defer cancel()
		r, err := d.mc.Command(ctx, "osd failure", map[string]string{"target": strconv.Itoa(int(id)), "reporter": strconv.Itoa(int(d.id)), "addr": addr, "immediate": strconv.FormatBool(immediate)})
		if err != nil {
			d.log.Warn("report failure", "target", id, "err", err)
			return
		}
		d.log.Info("reported failure", "target", id, "mon", r.Message)
	}()
}

// beaconLoop tells the MONs every osd_beacon_report_interval that this
// OSD is alive and reaches them (Ceph's MOSDBeacon): one they stop
// hearing from for mon_osd_report_timeout is marked down.
func (d *OSD) beaconLoop() {
	defer d.wg.Done()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.clock.After(time.Duration(d.conf().Seconds("osd_beacon_report_interval") * float64(time.Second))):
		}
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		if _, err := d.mc.Command(ctx, "osd beacon", map[string]string{"id": strconv.Itoa(int(d.id)), "addr": d.addr}); err != nil && d.ctx.Err() == nil {
			d.log.Warn("beacon to the MONs", "err", err)
		}
		cancel()
	}
}

// heartbeat pings its peers (heartbeatPeers) each osd_heartbeat_interval
// and reports those silent for osd_heartbeat_grace.
func (d *OSD) heartbeat() {
	for {
		interval := time.Duration(d.conf().Seconds("osd_heartbeat_interval") * float64(time.Second))
		grace := time.Duration(d.conf().Seconds("osd_heartbeat_grace") * float64(time.Second))
		select {
		case <-d.ctx.Done():
			return
		case <-d.clock.After(interval):
		}
		m, _ := d.curMap()
		var wg sync.WaitGroup
		pinged := map[string]bool{}
		for _, id := range d.heartbeatPeers(m) {
			o := m.OSDs[id]
			// front and back: a peer silent on either is reported
			addrs := []string{o.Addr}
			if o.ClusterAddr != "" {
				addrs = append(addrs, o.ClusterAddr)
			}
			for _, addr := range addrs {
				a, _, _ := strings.Cut(addr, "/")
				pinged[a] = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(d.ctx, interval)
					defer cancel()
					r, err := d.ping(ctx, id, addr) // and renew the read lease
					if err == nil && r.Epoch > d.epoch() {
						d.learnEpoch(r.Epoch, id, addr)
					}
					d.peerMu.Lock()
					last, ok := d.lastHB[a]
					if err == nil || !ok {
						d.lastHB[a] = d.clock.Now()
					}
					d.peerMu.Unlock()
					if err != nil && ok && d.clock.Since(last) > grace {
						d.reportFailure(id, o.Addr, false)
					}
				}()
			}
		}
		wg.Wait()
		d.peerMu.Lock()
		maps.DeleteFunc(d.lastHB, func(a string, _ time.Time) bool { return !pinged[a] }) // peers gone or moved
		d.peerMu.Unlock()
	}
}

// heartbeatPeers are the up OSDs this one heartbeats in map m: those it
// shares PGs with (acting sets and backfill targets), then its
// neighbours by id around the ring of up OSDs, up to
// osd_heartbeat_min_peers (Ceph's OSD::maybe_update_heartbeat_peers).
func (d *OSD) heartbeatPeers(m *osdmap.Map) []int32 {
	shared := map[int32]bool{}
	d.mu.RLock()
	for _, pg := range d.pgs {
		pg.mu.Lock()
		if pg.ps.State != peering.Stray {
			writers, _ := pg.ps.Interval.Writers()
			for _, o := range writers {
				shared[o] = true
			}
		}
		pg.mu.Unlock()
	}
	d.mu.RUnlock()
	var up []int32
	for i, o := range m.OSDs {
		if o.Exists && o.Up {
			up = append(up, int32(i))
		}
	}
	return pickHeartbeatPeers(d.id, up, shared, int(d.conf().Int("osd_heartbeat_min_peers")))
}

// pickHeartbeatPeers chooses self's heartbeat peers among up (ascending
// ids): every up OSD in shared, then the next ones after self around the
// ring of up ids until there are min. Sorted.
func pickHeartbeatPeers(self int32, up []int32, shared map[int32]bool, min int) []int32 {
	var peers []int32
	for _, o := range up {
		if o != self && shared[o] {
			peers = append(peers, o)
		}
	}
	start, _ := slices.BinarySearch(up, self+1)
	for i := range up {
		if len(peers) >= min {
			break
		}
		o := up[(start+i)%len(up)]
		if o != self && !slices.Contains(peers, o) {
			peers = append(peers, o)
		}
	}
	slices.Sort(peers)
	return peers
}

func (d *OSD) handle(ctx context.Context, m *msgr.Message) ([]byte, error) {
	switch m.Type { // before the map: these never wait for it
	case msgPing:
		return d.handlePing(m.Payload), nil
	case msgGetMap:
		b, err := d.handleGetMap()
		if err != nil {
			return nil, &msgr.RemoteError{Code: int32(osdop.Errno(err)), Msg: err.Error()}
		}
		return b, nil
	}
	if cur, _ := d.curMap(); cur == nil { // still booting
		return nil, &msgr.RemoteError{Code: int32(osdop.Errno(osdop.ErrRetry)), Msg: "osd is booting"}
	}
	d.waitEpoch(ctx, m.Epoch) // from the MONs, or else a peer
	out, err := d.dispatch(ctx, m)
	if err != nil {
		return nil, &msgr.RemoteError{Code: int32(osdop.Errno(err)), Msg: err.Error()}
	}
	return out, nil
}

func (d *OSD) dispatch(ctx context.Context, m *msgr.Message) ([]byte, error) {
	switch m.Type {
	case osdop.MsgOp:
		req, err := osdop.DecodeRequest(m.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
		}
		return d.handleOp(ctx, m, req)
	case osdop.MsgStats:
		return json.Marshal(d.stats())
	case osdop.MsgPGCommand:
		return d.pgCommand(m.Payload)
	case osdop.MsgList:
		req, err := osdop.DecodeListRequest(m.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
		}
		pg := d.getPG(osdmap.PGID{Pool: req.Pool, Seed: req.Seed})
		if pg == nil {
			return nil, fmt.Errorf("%w: osd.%d does not serve pg %d.%x", osdop.ErrRetry, d.id, req.Pool, req.Seed)
		}
		iv, err := pg.waitReadable(ctx)
		if err != nil {
			return nil, err
		}
		if err := pg.recoverSelf(ctx); err != nil { // a listing reads our store: it must be complete
			return nil, err
		}
		if err := pg.checkComplete(); err != nil {
			return nil, err
		}
		names, err := d.store.List(pg.coll, req.After, int(min(max(req.Max, 1), 10000)))
		if err != nil {
			return nil, storeErr(err)
		}
		if err := pg.stillReadable(iv); err != nil {
			return nil, err
		}
		return osdop.EncodeNames(slices.DeleteFunc(names, isInternal)), nil
	}
	pm, err := decodePeerMsg(m.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
	}
	if m.Type == msgPurge {
		d.purgeStray(pm.PG)
		return nil, nil
	}
	if m.Type == msgNotify {
		if pg := d.getPG(pm.PG); pg != nil {
			pg.handleNotify(pm.From)
		}
		return nil, nil
	}
	if m.Type == msgPGQuery {
		// the reply's lease promises must cover every promise made to an
		// OSD the asker's map has down: only once this OSD has that map
		if e := d.epoch(); e < m.Epoch {
			return nil, fmt.Errorf("%w: osd.%d has map %d, the query %d", osdop.ErrRetry, d.id, e, m.Epoch)
		}
	}
	pg := d.getPG(pm.PG)
	if pg == nil && (m.Type == msgPGQuery || m.Type == msgPGList) { // never held it, or deleted its copy: nothing to offer
		return (&peerMsg{PG: pm.PG, Leases: d.promises()}).encode(), nil
	}
	if pg == nil {
		return nil, fmt.Errorf("%w: pg %s is not here", osdop.ErrRetry, pm.PG)
	}
	switch m.Type {
	case msgRepOp:
		if pm.Txn != nil {
			pm.Txn.SetDataSums(m.BlockSums)
		}
		if err := pg.handleRepOp(ctx, pm); err != nil {
			return nil, err
		}
		d.perf.subopW.Add(1)
		d.perf.subopWBytes.Add(uint64(len(m.Payload)))
		d.charge(mclock.Client, 1, uint64(len(m.Payload)))
		return nil, nil
	case msgPGQuery:
		return pg.handleQuery(ctx, pm)
	case msgPull:
		return pg.handlePull(pm)
	case msgPush:
		return nil, pg.handlePush(pm)
	case msgPGLog:
		return nil, pg.handleLog(pm)
	case msgPGList:
		return pg.handleList(pm)
	case msgECRead:
		return pg.handleECRead(pm)
	case msgECRepair:
		return nil, pg.handleECRepair(pm)
	case msgECRollback:
		return nil, pg.handleECRollback(pm)
	case msgScrubReserve:
		return nil, pg.handleScrubReserve(pm)
	case msgScrubRelease:
		d.scrubSlots.release(pg.id)
		return nil, nil
	case msgRecoveryReserve:
		return nil, pg.handleRecoveryReserve(pm)
	case msgRecoveryRenew:
		return nil, pg.handleRecoveryRenew(pm)
	case msgRecoveryRelease:
		d.remoteSlots.release(pg.id, pm.Interval)
		return nil, nil
	case msgScrubMap:
		return pg.handleScrubMap(pm)
	case msgActivated:
		return nil, pg.handleActivated(pm)
	}
	return nil, fmt.Errorf("%w: message type %d", osdop.ErrInvalid, m.Type)
}

// handleOp serves a client request on the PG's primary.
func (d *OSD) handleOp(ctx context.Context, msg *msgr.Message, req *osdop.Request) ([]byte, error) {
	m, _ := d.curMap()
	pool, err := m.Pool(req.Pool)
	if err != nil {
		return nil, fmt.Errorf("%w: pool %d does not exist", osdop.ErrNotFound, req.Pool)
	}
	var cd *ec.Codec
	if pool.Type == osdmap.PoolErasure {
		if cd, err = d.codec(ctx, pool); err != nil {
			return nil, err
		}
	}
	if max := int(d.conf().Int("osd_max_object_name_len")); len(req.OID) > max {
		return nil, fmt.Errorf("%w: %d bytes (max %d)", osdop.ErrNameTooLong, len(req.OID), max)
	}
	if req.OID == "" || isInternal(req.OID) {
		return nil, fmt.Errorf("%w: object name %q: empty or starting with a NUL byte", osdop.ErrInvalid, req.OID)
	}
	pgid, _ := m.ObjectToPG(pool.ID, req.OID, "")
	if pgid.Seed != req.Seed {
		return nil, fmt.Errorf("%w: object is in pg %s, not %d.%x", osdop.ErrRetry, pgid, req.Pool, req.Seed)
	}
	pg := d.getPG(pgid)
	if pg == nil {
		return nil, fmt.Errorf("%w: osd.%d does not serve pg %s", osdop.ErrRetry, d.id, pgid)
	}
	var rep *osdop.Reply
	release := func() {} // gives back pooled read buffers once the reply is out
	start := time.Now()
	defer d.ops.end(d.ops.begin(start))
	if req.IsWrite() {
		for i := range req.Ops {
			if op := &req.Ops[i]; op.Code == osdop.Write || op.Code == osdop.WriteFull || op.Code == osdop.Append {
				op.DataSums = msg.BlockSums(op.Data)
			}
		}
		rep, err = pg.write(ctx, req, cd, pool)
		if err == nil {
			d.perf.opW.Add(1)
			for i := range req.Ops {
				d.perf.opWBytes.Add(uint64(len(req.Ops[i].Data)))
			}
			d.perf.opWLat.Observe(time.Since(start).Seconds())
		}
	} else {
		if cd != nil {
			rep, err = pg.readEC(ctx, cd, req)
		} else {
			var rel func()
			if rep, rel, err = pg.read(ctx, req); rel != nil {
				release = rel
			}
		}
		if err == nil {
			d.perf.opR.Add(1)
			for i := range rep.Results {
				d.perf.opRBytes.Add(uint64(rep.Results[i].DataLen()))
			}
			d.perf.opRLat.Observe(time.Since(start).Seconds())
		}
	}
	if err != nil {
		return nil, err
	}
	size := 16
	for _, r := range rep.Results {
		size += r.DataLen() + 64
	}
	d.charge(mclock.Client, 1, uint64(len(msg.Payload)+size))
	if size >= vecReplyMin {
		parts, sums := rep.EncodeVec(vecReplyMin / 2)
		msg.ReplyVecThen(parts, sums, release)
		return nil, nil
	}
	e := wireEncoder(size)
	rep.Encode(e)
	release()
	return e.Bytes(), nil
}

// vecReplyMin is the reply size from which read data goes to the
// connection without being copied into the encoded reply (below it, one
// small copy is cheaper than the extra slices of a vectored write).
const vecReplyMin = 64 << 10

// stats reports the PGs this OSD is primary of.
// fullness is this OSD's fill level by mon_osd_nearfull_ratio,
// mon_osd_backfillfull_ratio and mon_osd_full_ratio, and the fraction of
// its device in use (a store without a size is never full).
func (d *OSD) fullness() (osdmap.Fullness, float64) {
	fs, err := d.store.StatFS()
	if err != nil || fs.Total == 0 {
		return osdmap.NotFull, 0
	}
	used := float64(fs.Used) / float64(fs.Total)
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
	d.mu.RLock()
	st := osdop.Stats{ID: d.id, Epoch: uint32(d.m.Epoch), Total: fs.Total >> 10, Used: fs.Used >> 10, Perf: d.perf.snapshot()}
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
