// Package client is Shoal's librados: a Go API to the object store that
// computes placement itself and talks to each PG's primary OSD directly.
//
// Connect with the MON addresses and a keyring; open a Pool by name; call
// its methods from any number of goroutines. Every op has a synchronous
// form and an asynchronous one (Operate / OperateAsync and the *Async
// helpers) returning a Completion. An op that meets a map change or a
// failed primary is resent — with the same request id, so a write the old
// primary applied is not applied twice — until it succeeds, fails with an
// error of its own, or its context (or Config.OpTimeout) ends.
//
// Errors are typed (errors.Is): ErrNotFound, ErrExists, ErrNoSpace,
// ErrTimeout, ErrPermission, ErrUnsupported, ErrInvalid, ErrTooLarge,
// ErrNameTooLong, ErrNoData, ErrPoolNotFound, ErrUnreadable (an
// erasure-coded object with fewer than k readable shards), ErrCorrupt.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// KV is an omap entry or an xattr.
type KV = omap.KV

// Errors (errors.Is).
var (
	ErrNotFound    = osdop.ErrNotFound
	ErrExists      = osdop.ErrExists
	ErrNoSpace     = osdop.ErrNoSpace
	ErrInvalid     = osdop.ErrInvalid
	ErrUnsupported = osdop.ErrUnsupported
	ErrTooLarge    = osdop.ErrTooLarge
	ErrNameTooLong = osdop.ErrNameTooLong
	ErrNoData      = osdop.ErrNoData
	ErrUnreadable  = osdop.ErrUnreadable
	ErrCorrupt     = osdop.ErrCorrupt
	ErrBlocklisted = osdop.ErrBlocklisted
	// ErrPermission: a wrong key (msgr.ErrAuth), or caps that do not
	// allow the op or MON command.
	ErrPermission   = osdop.ErrPermission
	ErrTimeout      = errors.New("operation timed out")
	ErrPoolNotFound = errors.New("no such pool")
)

// Config is how to reach a cluster.
type Config struct {
	MonAddrs []string
	Keyring  msgr.Keyring
	// OpTimeout bounds each op, resends included (rados_osd_op_timeout);
	// 0: only the caller's context does.
	OpTimeout time.Duration
	// InflightBytes bounds request bytes in flight per OSD
	// (objecter_inflight_op_bytes); default 100 MiB.
	InflightBytes int64
	Logger        *slog.Logger
	// Mode and SessionTTL are the messenger's frame protection and
	// session key lifetime (ms_mode, ms_session_ttl; msgr.Config).
	Mode       msgr.Mode
	SessionTTL time.Duration
	// Transport makes the connections to the MONs and OSDs; nil is TCP
	// (tests: msgr/memnet, msgr/faultnet).
	Transport msgr.Transport
}

// Backend runs a Conn's requests in place of a cluster (NewConn): the
// seam through which the layers above the client — the gateway — are
// tested without MONs or OSDs. internal/memrados implements it in memory
// with the OSDs' own op semantics and object classes.
type Backend interface {
	// Operate executes ops on object oid of pool atomically and returns
	// their results, which the caller owns; errors wrap osdop's (or are
	// ctx's). The pool exists in Map (the Conn checks).
	Operate(ctx context.Context, pool int64, oid string, ops []osdop.Op) (*osdop.Reply, error)
	// List calls fn with the name of each object of pool, in an order of
	// the backend's, until it returns false.
	List(ctx context.Context, pool int64, fn func(name string) bool) error
	// Command runs a MON command and returns its result and the map
	// after it.
	Command(ctx context.Context, prefix string, args map[string]string) (monc.Result, *osdmap.Map, error)
	// Map is the current map.
	Map() *osdmap.Map
}

// Conn is a connection to a cluster, shared by all goroutines.
type Conn struct {
	cfg    Config
	local  Backend // NewConn's; nil: the cluster's MONs and OSDs
	mc     *monc.Client
	nonce  uint64
	tid    atomic.Uint64
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.RWMutex
	m     *osdmap.Map
	mapCh chan struct{}
	osds  map[string]*msgr.Client

	primaries atomic.Pointer[primaryCache] // of the map ops were last routed by
}

// primaryCache memoizes the acting primaries of one map's PGs: every op
// maps its PG, and CRUSH's straw2 draws (osdmap.MapPG) were 5 % of a
// block client's CPU at 4 KiB reads (`shoal rbd nbd serve` under fio,
// docs/perf-log/rbd-2026-11-30.md). A map never changes once published
// (osdmap.Map.Apply returns a new one), so its entries hold for as long
// as it is the map.
type primaryCache struct {
	m   *osdmap.Map
	mu  sync.Mutex
	pgs map[osdmap.PGID]int32
}

// actingPrimary is PG pg's acting primary in map m (-1: none).
func (c *Conn) actingPrimary(m *osdmap.Map, pg osdmap.PGID) (int32, error) {
	pc := c.primaries.Load()
	if pc == nil || pc.m != m {
		npc := &primaryCache{m: m, pgs: map[osdmap.PGID]int32{}}
		if pc == nil || m.Epoch > pc.m.Epoch { // an op routed by an older map does not evict the newer one's
			c.primaries.CompareAndSwap(pc, npc)
		}
		pc = npc
	}
	pc.mu.Lock()
	p, ok := pc.pgs[pg]
	pc.mu.Unlock()
	if ok {
		return p, nil
	}
	mp, err := m.MapPG(pg)
	if err != nil {
		return 0, err
	}
	pc.mu.Lock()
	pc.pgs[pg] = mp.ActingPrimary
	pc.mu.Unlock()
	return mp.ActingPrimary, nil
}

// Connect reaches the MONs, fetches the OSD map and keeps it current.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	mc, err := monc.New(cfg.MonAddrs, cfg.Keyring, msgr.Config{Logger: cfg.Logger, Transport: cfg.Transport, Mode: cfg.Mode, SessionTTL: cfg.SessionTTL})
	if err != nil {
		return nil, err
	}
	m, err := mc.GetMap(ctx, nil, false)
	if err != nil {
		mc.Close()
		if errors.Is(err, msgr.ErrAuth) {
			return nil, fmt.Errorf("%w: %v", ErrPermission, err)
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Conn{cfg: cfg, mc: mc, nonce: rand.Uint64() | 1, ctx: cctx, cancel: cancel, m: m, mapCh: make(chan struct{}), osds: map[string]*msgr.Client{}}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		mc.Subscribe(cctx, m, c.setMap)
	}()
	return c, nil
}

// NewConn is a Conn whose requests run on b instead of a cluster (tests
// of the layers above; see Backend). OSD statistics and PG commands are
// not served (ErrUnsupported), and the pause flags do not hold requests.
func NewConn(b Backend, cfg Config) *Conn {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{cfg: cfg, local: b, nonce: rand.Uint64() | 1, ctx: ctx, cancel: cancel, m: b.Map(), mapCh: make(chan struct{}), osds: map[string]*msgr.Client{}}
}

// Close stops the map subscription and closes every connection.
func (c *Conn) Close() {
	c.cancel()
	if c.local != nil {
		return
	}
	c.wg.Wait()
	c.mc.Close()
	c.mu.Lock()
	for _, o := range c.osds {
		o.Close()
	}
	c.mu.Unlock()
}

func (c *Conn) setMap(m *osdmap.Map) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Epoch > c.m.Epoch {
		c.m = m
		close(c.mapCh)
		c.mapCh = make(chan struct{})
	}
}

// Map is the newest OSD map the connection holds.
func (c *Conn) Map() *osdmap.Map {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m
}

func (c *Conn) epoch() uint32 { return uint32(c.Map().Epoch) }

// waitNewer waits up to d for a map newer than e.
func (c *Conn) waitNewer(ctx context.Context, e osdmap.Epoch, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	c.mu.RLock()
	m, ch := c.m, c.mapCh
	c.mu.RUnlock()
	if m.Epoch > e {
		return
	}
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// MonAddrs are the addresses of the MONs the client talks to: mon_host's,
// less the MONs removed and plus those added since it connected
// (monc.Client.Addrs; nil for an in-process cluster).
func (c *Conn) MonAddrs() []string {
	if c.mc == nil {
		return nil
	}
	return c.mc.Addrs()
}

// MonCommand runs a MON command; a change it makes is in Map() when it
// returns.
func (c *Conn) MonCommand(ctx context.Context, prefix string, args map[string]string) (monc.Result, error) {
	if c.local != nil {
		r, m, err := c.local.Command(ctx, prefix, args)
		if err == nil {
			c.setMap(m)
		}
		return r, err
	}
	r, err := c.mc.Command(ctx, prefix, args)
	if err != nil {
		return r, err
	}
	if r.Epoch > c.epoch() {
		m, err := c.mc.WaitEpoch(ctx, c.Map(), r.Epoch)
		if err != nil {
			return r, err
		}
		c.setMap(m)
	}
	return r, nil
}

// RefreshMap fetches the newest map from the MONs.
func (c *Conn) RefreshMap(ctx context.Context) error {
	if c.local != nil {
		c.setMap(c.local.Map())
		return nil
	}
	m, err := c.mc.GetMap(ctx, c.Map(), false)
	if err != nil {
		return err
	}
	c.setMap(m)
	return nil
}

func (c *Conn) osd(addr string) *msgr.Client {
	a, _, _ := strings.Cut(addr, "/")
	c.mu.RLock()
	o := c.osds[a]
	c.mu.RUnlock()
	if o != nil {
		return o
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o = c.osds[a]; o == nil {
		o = msgr.Dial(a, c.cfg.Keyring, msgr.Config{Logger: c.cfg.Logger, Epoch: c.epoch, InflightBytes: c.cfg.InflightBytes, Transport: c.cfg.Transport, Mode: c.cfg.Mode, SessionTTL: c.cfg.SessionTTL,
			MaxBackoff: 500 * time.Millisecond, DialTimeout: 2 * time.Second})
		c.osds[a] = o
	}
	return o
}

// OSDStats asks OSD id for its PGs and usage. An OSD that has not
// installed its first map yet (just booted) answers osdop.ErrRetry.
func (c *Conn) OSDStats(ctx context.Context, id int32) (osdop.Stats, error) {
	var st osdop.Stats
	rep, err := c.osdCall(ctx, id, osdop.MsgStats, nil)
	if err != nil {
		return st, err
	}
	defer rep.Release()
	if err := json.Unmarshal(rep.Payload, &st); err != nil {
		return st, fmt.Errorf("osd.%d: stats: %w", id, err)
	}
	return st, nil
}

// osdCall sends OSD id a message of type typ, errors wrapped with the
// OSD's name.
func (c *Conn) osdCall(ctx context.Context, id int32, typ uint16, payload []byte) (*msgr.Message, error) {
	m := c.Map()
	if c.local != nil {
		return nil, fmt.Errorf("osd.%d: %w: no OSDs behind this connection", id, ErrUnsupported)
	}
	if id < 0 || id >= m.MaxOSD() || !m.OSDs[id].Exists {
		return nil, fmt.Errorf("osd.%d: %w", id, ErrNotFound)
	}
	rep, err := c.osd(m.OSDs[id].Addr).Call(ctx, typ, payload)
	if err != nil {
		var re *msgr.RemoteError
		if errors.As(err, &re) {
			err = osdop.FromErrno(syscall.Errno(re.Code), re.Msg)
		}
		return nil, fmt.Errorf("osd.%d: %w", id, err)
	}
	return rep, nil
}

// OSDCommand asks OSD id to "flush" or "compact" its metadata store
// (osdop.MsgOSDCommand) and returns its answer once done. Errors:
// osdop.ErrPermission without osd 'allow *', osdop.ErrBusy while the OSD
// compacts already, osdop.ErrInvalid for another command or a store
// without a metadata LSM, ErrNotFound for an OSD not in the map.
func (c *Conn) OSDCommand(ctx context.Context, id int32, cmd string) (string, error) {
	payload, err := json.Marshal(osdop.OSDCommand{Cmd: cmd})
	if err != nil {
		return "", err
	}
	rep, err := c.osdCall(ctx, id, osdop.MsgOSDCommand, payload)
	if err != nil {
		return "", err
	}
	defer rep.Release()
	return string(rep.Payload), nil
}

// SettleMetaStores brings every up OSD's metadata store to its steady
// state: it flushes each one's memtable, then polls the OSDs' statistics
// every 200 ms until, for a whole second, none has a flush or compaction
// running or has finished one (osdop.MetaStore.Idle), or ctx ends, or
// 10 minutes pass (an error: writes from elsewhere keep them busy). A
// benchmark calls it before a timed window so that the window neither
// pays for the compactions of the writes before it nor starts with a
// memtable half full.
func (c *Conn) SettleMetaStores(ctx context.Context) error {
	up := c.Map().UpOSDs()
	for _, id := range up {
		if _, err := c.OSDCommand(ctx, id, "flush"); err != nil {
			return err
		}
	}
	const quietPolls = 5
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last, quiet := int64(-1), 0
	for quiet < quietPolls {
		select {
		case <-ctx.Done():
			return fmt.Errorf("settle metadata stores: %w", ctx.Err())
		case <-tick.C:
		}
		idle, done := true, int64(0)
		for _, id := range up {
			st, err := c.OSDStats(ctx, id)
			if err != nil {
				return err
			}
			idle = idle && st.MetaStore.Idle()
			if st.MetaStore != nil {
				done += st.MetaStore.Flushes + st.MetaStore.Compactions
			}
		}
		if idle && done == last {
			quiet++
		} else {
			quiet = 0
		}
		last = done
	}
	return nil
}

// PGCommand sends a command ("scrub", "deep-scrub", "repair",
// "list-inconsistent") to the primary of PG pgid ("1.a"), following the
// primary across map changes, and returns its reply.
func (c *Conn) PGCommand(ctx context.Context, pgid, cmd string) ([]byte, error) {
	if c.local != nil {
		return nil, fmt.Errorf("pg %s: %w: no OSDs behind this connection", pgid, ErrUnsupported)
	}
	id, err := osdmap.ParsePGID(pgid)
	if err != nil {
		return nil, err
	}
	payload, _ := json.Marshal(osdop.PGCommand{PGID: id.String(), Cmd: cmd})
	for {
		m := c.Map()
		pool, err := m.Pool(id.Pool)
		if err != nil || id.Seed >= pool.PGNum {
			return nil, fmt.Errorf("pg %s: %w", id, ErrNotFound)
		}
		mp, err := m.MapPG(id)
		if err != nil {
			return nil, err
		}
		var last error
		if mp.ActingPrimary >= 0 {
			rep, err := c.osd(m.OSDs[mp.ActingPrimary].Addr).Call(ctx, osdop.MsgPGCommand, payload)
			if err == nil {
				defer rep.Release()
				return slices.Clone(rep.Payload), nil
			}
			var re *msgr.RemoteError
			if errors.As(err, &re) && syscall.Errno(re.Code) != syscall.EAGAIN {
				return nil, fmt.Errorf("pg %s: %w", id, osdop.FromErrno(syscall.Errno(re.Code), re.Msg))
			}
			last = err
		} else {
			last = fmt.Errorf("pg %s has no primary", id)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: pg %s %s: %v", ErrTimeout, id, cmd, last)
		}
		c.waitNewer(ctx, m.Epoch, 500*time.Millisecond)
	}
}

// Pool opens a pool by name.
func (c *Conn) Pool(ctx context.Context, name string) (*Pool, error) {
	p, err := c.Map().PoolByName(name)
	if err != nil {
		if err := c.RefreshMap(ctx); err != nil {
			return nil, err
		}
		if p, err = c.Map().PoolByName(name); err != nil {
			return nil, fmt.Errorf("pool %q: %w", name, ErrPoolNotFound)
		}
	}
	return &Pool{c: c, id: p.ID, name: name}, nil
}

// Pool is a handle on one pool (librados' IoCtx). A handle that reads at
// a snap (AtSnap) or writes with a SnapContext (WithSnapContext) is a
// copy; the handle itself never changes, so goroutines may share it.
type Pool struct {
	c    *Conn
	id   int64
	name string
	// snap is the snap id reads see (0: the head); snapSeq and snaps
	// the SnapContext writes carry (snaps.go)
	snap    uint64
	snapSeq uint64
	snaps   []uint64
}

// Name is the pool's name.
func (p *Pool) Name() string { return p.name }

// ID is the pool's id.
func (p *Pool) ID() int64 { return p.id }

// Conn is the connection the handle uses.
func (p *Pool) Conn() *Conn { return p.c }

// vecRequestMin is the request size from which op data is written to the
// connection from the caller's buffers instead of being copied into the
// encoded request.
const vecRequestMin = 64 << 10

// Operate applies ops to the object atomically (all or none) on the PG's
// primary and returns their results.
func (p *Pool) Operate(ctx context.Context, oid string, ops []osdop.Op) (*osdop.Reply, error) {
	r, msg, err := p.operate(ctx, oid, ops)
	if err != nil {
		return nil, err
	}
	if msg != nil { // else a Backend's results, the caller's already
		copyResults(r)
		msg.Release()
	}
	return r, nil
}

// OperateRef is Operate without copying the results out of the reply's
// receive buffer: their Data and KVs stay valid until the caller calls
// release (once; nil on error), and must not be used after it. For data
// passed straight on — the gateway's GETs — it saves a copy and an
// allocation of every byte read.
func (p *Pool) OperateRef(ctx context.Context, oid string, ops []osdop.Op) (rep *osdop.Reply, release func(), err error) {
	r, msg, err := p.operate(ctx, oid, ops)
	if err != nil {
		return nil, nil, err
	}
	return r, msg.Release, nil
}

// hasDataSum reports whether any op carries its data's checksum.
func hasDataSum(ops []osdop.Op) bool {
	for i := range ops {
		if ops[i].DataSum.Valid {
			return true
		}
	}
	return false
}

// ErrDataChanged means an op's data no longer matches the checksum its
// caller took of it (Op.DataSum): the caller changed its buffer while the
// request was in flight.
var ErrDataChanged = errors.New("op data changed after its checksum was taken")

// checkDataSums checks each op's data against its DataSum.
func checkDataSums(ops []osdop.Op) error {
	for i := range ops {
		if s := ops[i].DataSum; s.Valid && crc32c.Checksum(ops[i].Data) != s.CRC {
			return fmt.Errorf("op %d (%d bytes): %w", i, len(ops[i].Data), ErrDataChanged)
		}
	}
	return nil
}

// knownDataSum gives msgr.Checksum the checksum of a part that is an op's
// whole Data (the encoder references data of vecRequestMin/2 bytes and
// more as its own part) when the op carries it.
func knownDataSum(ops []osdop.Op) func(p []byte) crc32c.Sum {
	return func(p []byte) crc32c.Sum {
		for i := range ops {
			d := ops[i].Data
			if ops[i].DataSum.Valid && len(d) > 0 && len(p) == len(d) && &p[0] == &d[0] {
				return ops[i].DataSum
			}
		}
		return crc32c.Sum{}
	}
}

// operate is Operate whose results alias the returned message's payload.
func (p *Pool) operate(ctx context.Context, oid string, ops []osdop.Op) (*osdop.Reply, *msgr.Message, error) {
	if p.c.cfg.OpTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.c.cfg.OpTimeout)
		defer cancel()
	}
	if p.c.local != nil {
		if _, err := p.c.local.Map().Pool(p.id); err != nil {
			return nil, nil, fmt.Errorf("pool %q: %w", p.name, ErrPoolNotFound)
		}
		if p.snap != 0 || p.snapSeq != 0 {
			return nil, nil, fmt.Errorf("%w: snapshots in an in-memory cluster", osdop.ErrUnsupported)
		}
		r, err := p.c.local.Operate(ctx, p.id, oid, ops)
		return r, nil, err
	}
	req := osdop.Request{Pool: p.id, OID: oid, Client: p.c.nonce, Tid: p.c.tid.Add(1), Ops: ops}
	req.Snap = p.snap // a write at a snap is refused (osdop.ErrReadOnly)
	if req.IsWrite() {
		req.SnapSeq, req.Snaps = p.snapSeq, p.snaps
	}
	size := 64 + len(oid)
	for i := range ops {
		size += 64 + len(ops[i].Data) + len(ops[i].Name)
	}
	var payload []byte
	var parts [][]byte
	var last error
	sent := false              // the request went to an OSD at least once
	summed := hasDataSum(ops)  // some op carries its data's checksum
	hold := osdmap.FlagPauseRd // the flag that holds this request (Ceph's Objecter pauses)
	if req.IsWrite() {
		hold = osdmap.FlagPauseWr
	}
	for {
		m := p.c.Map()
		if m.Flags.Has(hold) {
			last = fmt.Errorf("held: the %s flag is set (shoal osd unset pause)", hold)
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("%w: %s: %v (last: %v)", ErrTimeout, oid, ctx.Err(), last)
			}
			p.c.waitNewer(ctx, m.Epoch, 5*time.Second)
			continue
		}
		pool, err := m.Pool(p.id)
		if err != nil {
			return nil, nil, fmt.Errorf("pool %q: %w", p.name, ErrPoolNotFound)
		}
		pgid, err := m.ObjectToPG(pool.ID, oid, "")
		if err != nil {
			return nil, nil, err
		}
		primary, err := p.c.actingPrimary(m, pgid)
		if err != nil {
			return nil, nil, err
		}
		if (payload == nil && parts == nil) || req.Seed != pgid.Seed {
			req.Seed = pgid.Seed
			if size >= vecRequestMin { // large data: sent from the caller's buffers
				parts = req.EncodeVec(vecRequestMin / 2)
			} else {
				e := wire.NewEncoder(make([]byte, 0, size))
				req.Encode(e)
				payload = e.Bytes()
			}
		}
		if primary >= 0 {
			var rep *msgr.Message
			var err error
			if sent && summed {
				// A resend (the last try may have failed a frame check):
				// data that no longer matches the checksum its caller took
				// would fail every try, so it fails the request now.
				if err := checkDataSums(ops); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", oid, err)
				}
			}
			sent = true
			switch {
			case parts != nil && summed:
				rep, err = p.c.osd(m.OSDs[primary].Addr).CallVecSum(ctx, osdop.MsgOp, parts, msgr.Checksum(parts, knownDataSum(ops)))
			case parts != nil:
				rep, err = p.c.osd(m.OSDs[primary].Addr).CallVec(ctx, osdop.MsgOp, parts)
			default:
				rep, err = p.c.osd(m.OSDs[primary].Addr).Call(ctx, osdop.MsgOp, payload)
			}
			if err == nil {
				r, err := osdop.DecodeReply(rep.Payload)
				if err != nil {
					rep.Release()
					return nil, nil, err
				}
				return r, rep, nil
			}
			var re *msgr.RemoteError
			if errors.As(err, &re) && syscall.Errno(re.Code) != syscall.EAGAIN {
				return nil, nil, osdop.FromErrno(syscall.Errno(re.Code), re.Msg)
			}
			if errors.Is(err, msgr.ErrAuth) {
				return nil, nil, fmt.Errorf("%w: %v", ErrPermission, err)
			}
			if last == nil || ctx.Err() == nil { // keep the OSD's reason over our own deadline
				last = fmt.Errorf("osd.%d: %w", primary, err)
			}
		} else {
			last = fmt.Errorf("pg %s has no primary (acting set empty)", pgid)
		}
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("%w: %s: %v (last: %v)", ErrTimeout, oid, ctx.Err(), last)
		}
		p.c.waitNewer(ctx, m.Epoch, 500*time.Millisecond)
	}
}

// copyResults detaches results from the reply buffer.
func copyResults(r *osdop.Reply) {
	for i := range r.Results {
		x := &r.Results[i]
		if x.Data != nil {
			x.Data = append([]byte(nil), x.Data...)
		}
		for j := range x.KVs {
			x.KVs[j].Value = append([]byte(nil), x.KVs[j].Value...)
		}
	}
}

// Completion is an asynchronous op's outcome.
type Completion struct {
	done    chan struct{}
	rep     *osdop.Reply
	release func() // OperateRefAsync: returns the reply's buffer
	err     error
}

// Release ends the use of an OperateRefAsync reply's results (a no-op
// for other completions); call it once the op completed.
func (c *Completion) Release() {
	if c.release != nil {
		c.release()
		c.release = nil
	}
}

// Wait blocks until the op completes.
func (c *Completion) Wait() (*osdop.Reply, error) {
	<-c.done
	return c.rep, c.err
}

// Done is closed when the op completes.
func (c *Completion) Done() <-chan struct{} { return c.done }

// OperateAsync starts Operate and returns at once.
func (p *Pool) OperateAsync(ctx context.Context, oid string, ops []osdop.Op) *Completion {
	c := &Completion{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.rep, c.err = p.Operate(ctx, oid, ops)
	}()
	return c
}

// OperateRefAsync starts OperateRef and returns at once; the results stay
// valid until the completion's Release.
func (p *Pool) OperateRefAsync(ctx context.Context, oid string, ops []osdop.Op) *Completion {
	c := &Completion{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.rep, c.release, c.err = p.OperateRef(ctx, oid, ops)
	}()
	return c
}

func (p *Pool) do(ctx context.Context, oid string, op osdop.Op) (osdop.Result, error) {
	r, err := p.Operate(ctx, oid, []osdop.Op{op})
	if err != nil {
		return osdop.Result{}, err
	}
	if len(r.Results) == 0 {
		return osdop.Result{}, fmt.Errorf("%s: %w: reply without results", oid, ErrInvalid)
	}
	return r.Results[0], nil
}

// WriteFull replaces the object's data.
func (p *Pool) WriteFull(ctx context.Context, oid string, data []byte) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.WriteFull, Data: data})
	return err
}

// Write writes data at off.
func (p *Pool) Write(ctx context.Context, oid string, data []byte, off uint64) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.Write, Data: data, Off: off})
	return err
}

// Append appends data.
func (p *Pool) Append(ctx context.Context, oid string, data []byte) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.Append, Data: data})
	return err
}

// Truncate sets the object's size.
func (p *Pool) Truncate(ctx context.Context, oid string, size uint64) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.Truncate, Off: size})
	return err
}

// Zero makes [off, off+n) read as zeros (within the object's size).
func (p *Pool) Zero(ctx context.Context, oid string, off, n uint64) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.Zero, Off: off, Len: n})
	return err
}

// Create makes an empty object; exclusive fails with ErrExists if it exists.
func (p *Pool) Create(ctx context.Context, oid string, exclusive bool) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.Create, Exclusive: exclusive})
	return err
}

// Remove deletes the object.
func (p *Pool) Remove(ctx context.Context, oid string) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.Remove})
	return err
}

// Read returns up to length bytes from off (length 0: to the end).
func (p *Pool) Read(ctx context.Context, oid string, off, length uint64) ([]byte, error) {
	r, err := p.do(ctx, oid, osdop.Op{Code: osdop.Read, Off: off, Len: length})
	return r.Data, err
}

// ReadRef is Read without copying the data out of the reply's receive
// buffer: data stays valid until the caller calls release (once; nil on
// error) and must not be used after it (see OperateRef).
func (p *Pool) ReadRef(ctx context.Context, oid string, off, length uint64) (data []byte, release func(), err error) {
	r, release, err := p.OperateRef(ctx, oid, []osdop.Op{{Code: osdop.Read, Off: off, Len: length}})
	if err != nil {
		return nil, nil, err
	}
	if len(r.Results) == 0 {
		release()
		return nil, nil, fmt.Errorf("%s: %w: reply without results", oid, ErrInvalid)
	}
	return r.Results[0].Data, release, nil
}

// ObjectStat is an object's size, modification time and version.
type ObjectStat struct {
	Size    uint64
	Mtime   time.Time
	Version uint64
}

// Stat describes the object.
func (p *Pool) Stat(ctx context.Context, oid string) (ObjectStat, error) {
	r, err := p.do(ctx, oid, osdop.Op{Code: osdop.Stat})
	if err != nil {
		return ObjectStat{}, err
	}
	return ObjectStat{Size: r.Size, Mtime: time.Unix(0, r.Mtime), Version: r.Ver}, nil
}

// SetXattr sets an extended attribute.
func (p *Pool) SetXattr(ctx context.Context, oid, name string, value []byte) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.SetXattr, Name: name, Data: value})
	return err
}

// GetXattr reads an extended attribute (ErrNoData if absent).
func (p *Pool) GetXattr(ctx context.Context, oid, name string) ([]byte, error) {
	r, err := p.do(ctx, oid, osdop.Op{Code: osdop.GetXattr, Name: name})
	return r.Data, err
}

// RmXattr removes an extended attribute.
func (p *Pool) RmXattr(ctx context.Context, oid, name string) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.RmXattr, Name: name})
	return err
}

// ListXattrs returns every extended attribute, by name.
func (p *Pool) ListXattrs(ctx context.Context, oid string) ([]omap.KV, error) {
	r, err := p.do(ctx, oid, osdop.Op{Code: osdop.GetXattrs})
	return r.KVs, err
}

// OmapSet sets omap entries.
func (p *Pool) OmapSet(ctx context.Context, oid string, kvs []omap.KV) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.OmapSet, KVs: kvs})
	return err
}

// OmapGet returns the values of the keys present.
func (p *Pool) OmapGet(ctx context.Context, oid string, keys []string) ([]omap.KV, error) {
	r, err := p.do(ctx, oid, osdop.Op{Code: osdop.OmapGet, Keys: keys})
	return r.KVs, err
}

// OmapRm removes omap keys.
func (p *Pool) OmapRm(ctx context.Context, oid string, keys []string) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.OmapRm, Keys: keys})
	return err
}

// OmapClear removes every omap entry.
func (p *Pool) OmapClear(ctx context.Context, oid string) error {
	_, err := p.do(ctx, oid, osdop.Op{Code: osdop.OmapClear})
	return err
}

// OmapList returns up to max entries after startAfter with the prefix, in
// key order, and whether more remain.
func (p *Pool) OmapList(ctx context.Context, oid, startAfter, prefix string, max int) ([]omap.KV, bool, error) {
	r, err := p.do(ctx, oid, osdop.Op{Code: osdop.OmapList, Name: startAfter, Prefix: prefix, Max: uint32(max)})
	return r.KVs, r.More, err
}

// Exec calls an object-class method ("class.method") on the object; one
// registered as a read (cls.RegisterRead) goes on the read path
// (osdop.CallRead), so a resend after a failover returns its output.
func (p *Pool) Exec(ctx context.Context, oid, method string, in []byte) ([]byte, error) {
	code := osdop.Call
	if cls.ReadOnly(method) { // on the read path: a resend runs again
		code = osdop.CallRead
	}
	r, err := p.do(ctx, oid, osdop.Op{Code: code, Name: method, Data: in})
	return r.Data, err
}

// WriteFullAsync, ReadAsync, AppendAsync and RemoveAsync are the
// asynchronous forms of the common data ops; any op list goes through
// OperateAsync.
func (p *Pool) WriteFullAsync(ctx context.Context, oid string, data []byte) *Completion {
	return p.OperateAsync(ctx, oid, []osdop.Op{{Code: osdop.WriteFull, Data: data}})
}

// ReadAsync is Read's asynchronous form; the data is Results[0].Data.
func (p *Pool) ReadAsync(ctx context.Context, oid string, off, length uint64) *Completion {
	return p.OperateAsync(ctx, oid, []osdop.Op{{Code: osdop.Read, Off: off, Len: length}})
}

// AppendAsync is Append's asynchronous form.
func (p *Pool) AppendAsync(ctx context.Context, oid string, data []byte) *Completion {
	return p.OperateAsync(ctx, oid, []osdop.Op{{Code: osdop.Append, Data: data}})
}

// RemoveAsync is Remove's asynchronous form.
func (p *Pool) RemoveAsync(ctx context.Context, oid string) *Completion {
	return p.OperateAsync(ctx, oid, []osdop.Op{{Code: osdop.Remove}})
}

// List calls fn with every object name of the pool, PG by PG (in no
// global order), until fn returns false. A listing that runs across a
// change of pg_num may miss objects that moved into a PG it had listed
// (a PG merged away meanwhile is skipped).
func (p *Pool) List(ctx context.Context, fn func(name string) bool) error {
	if p.c.local != nil {
		return p.c.local.List(ctx, p.id, fn)
	}
	for seed := uint32(0); ; seed++ {
		pool, err := p.c.Map().Pool(p.id)
		if err != nil {
			return fmt.Errorf("pool %q: %w", p.name, ErrPoolNotFound)
		}
		if seed >= pool.PGNum {
			return nil
		}
		after := ""
		for {
			page, err := p.listPG(ctx, seed, after)
			if errors.Is(err, errMergedAway) {
				break
			}
			if err != nil {
				return err
			}
			for _, n := range page.Names {
				if !fn(n) {
					return nil
				}
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
	}
}

// errMergedAway: listPG's PG no longer exists (the pool's pg_num went
// below it).
var errMergedAway = errors.New("pg merged away")

func (p *Pool) listPG(ctx context.Context, seed uint32, after string) (*osdop.ListReply, error) {
	req := (&osdop.ListRequest{Pool: p.id, Seed: seed, After: after, Max: 1000, Snap: p.snap}).Encode()
	for {
		m := p.c.Map()
		if pool, err := m.Pool(p.id); err == nil && seed >= pool.PGNum {
			return nil, errMergedAway
		}
		mp, err := m.MapPG(osdmap.PGID{Pool: p.id, Seed: seed})
		if err != nil {
			return nil, err
		}
		if mp.ActingPrimary >= 0 {
			rep, err := p.c.osd(m.OSDs[mp.ActingPrimary].Addr).Call(ctx, osdop.MsgList, req)
			if err == nil {
				defer rep.Release()
				return osdop.DecodeListReply(rep.Payload)
			}
			var re *msgr.RemoteError
			if errors.As(err, &re) && syscall.Errno(re.Code) != syscall.EAGAIN {
				return nil, osdop.FromErrno(syscall.Errno(re.Code), re.Msg)
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: listing pg %d.%x: %v", ErrTimeout, p.id, seed, ctx.Err())
		}
		p.c.waitNewer(ctx, m.Epoch, 500*time.Millisecond)
	}
}
