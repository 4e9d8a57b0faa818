// Package memrados is an in-memory RADOS for tests of the layers above
// the client (the gateway's): a client.Backend that a client.Conn runs
// over (client.NewConn) with no MON, OSD or socket.
//
// It keeps the MONs' pure state (mon.State: pools, the map, "pool
// create" and the other commands with the MONs' own validation) and one
// MemStore holding every pool's objects, a collection per pool. A request
// runs as a replicated PG's primary runs it — the same op semantics and
// object classes (osd/opexec, cls/rgw among them) under a per-object
// lock, the version and time stamped on each write (opexec.Stamp), names
// checked as an OSD checks them (opexec.CheckName) — and is applied at
// once. Erasure-coded pools refuse omap and object-class ops, as OSDs do;
// their data is kept whole, and overwrites, truncates and zeroes are
// taken without allow_ec_overwrites. There is no replication, peering or
// failure, no full ratio (ErrNoSpace) and no pause flags: durability and
// recovery are the cluster tests' (internal/testcluster, test/e2e).
// Versions count a pool's writes, not a PG's, and List gives a pool's
// objects in name order, not PG by PG.
package memrados

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	_ "github.com/shoal-project/shoal/cls/rgw" // the bucket index methods, as every OSD serves them
	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/internal/keylock"
	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Cluster is an in-memory RADOS. It is safe for concurrent use.
type Cluster struct {
	mu    sync.Mutex
	state *mon.State
	store *objectstore.MemStore
	locks *keylock.Table   // by collection/object (its own mutex)
	seq   map[int64]uint64 // by pool: the last write's version
	// maxSize is osd_max_object_size in bytes, maxName
	// osd_max_object_name_len (the OSDs' defaults, or conf's).
	maxSize uint64
	maxName int
}

// New returns an empty cluster: no pools, one CRUSH host, and the
// configuration database (`config set`) seeded with conf (who → option →
// value, as mon.State.Config).
func New(conf map[string]map[string]string) (*Cluster, error) {
	cm, err := crush.Simple(crush.SimpleSpec{FailureDomain: "osd"})
	if err != nil {
		return nil, err
	}
	st, err := mon.NewState("memrados", cm)
	if err != nil {
		return nil, err
	}
	for who, opts := range conf {
		st.Config[who] = map[string]string{}
		for k, v := range opts {
			st.Config[who][k] = v
		}
	}
	return &Cluster{state: st, store: objectstore.NewMemStore(), locks: keylock.New(nil), seq: map[int64]uint64{},
		maxSize: uint64(st.ConfigFor("osd").Size("osd_max_object_size")), maxName: int(st.ConfigFor("osd").Int("osd_max_object_name_len"))}, nil
}

// Map is the current OSD map (its pools).
func (c *Cluster) Map() *osdmap.Map {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Map
}

// Command runs a MON command against the MONs' state and returns its
// result and the map after it. A new pool gets its collection; a deleted
// pool's objects and collection go with it.
func (c *Cluster) Command(ctx context.Context, prefix string, args map[string]string) (monc.Result, *osdmap.Map, error) {
	cmd, err := mon.Translate(monc.Command{Prefix: prefix, Args: args})
	if err != nil {
		return monc.Result{}, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.state.Map
	_, msg, err := c.state.Commit(cmd)
	if err != nil {
		return monc.Result{}, nil, err
	}
	m := c.state.Map
	var t objectstore.Transaction
	for _, id := range m.PoolIDs() {
		if _, err := before.Pool(id); err != nil {
			t.CreateCollection(coll(id))
		}
	}
	for _, id := range before.PoolIDs() {
		if _, err := m.Pool(id); err != nil {
			if err := c.List(ctx, id, func(oid string) bool { t.Remove(coll(id), oid); return true }); err != nil {
				return monc.Result{}, nil, err
			}
			t.RemoveCollection(coll(id))
		}
	}
	if err := c.store.Apply(&t); err != nil {
		return monc.Result{}, nil, err
	}
	return monc.Result{Message: msg, Epoch: uint32(m.Epoch)}, m, nil
}

func coll(pool int64) objectstore.Coll { return objectstore.Coll(strconv.FormatInt(pool, 10)) }

// lock takes oid's lock in pool (exclusive for a write, shared among
// reads) and returns its release.
func (c *Cluster) lock(pool int64, oid string, write bool) func() {
	m := keylock.Read
	if write {
		m = keylock.Excl
	}
	return c.locks.Lock(string(coll(pool))+"/"+oid, m)
}

// Operate executes a request on object oid of pool, as a PG's primary
// would, and applies it.
func (c *Cluster) Operate(ctx context.Context, pool int64, oid string, ops []osdop.Op) (*osdop.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	p, err := c.state.Map.Pool(pool)
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("pool %d: %w", pool, osdop.ErrNotFound)
	}
	if err := opexec.CheckName(oid, c.maxName); err != nil {
		return nil, err
	}
	req := &osdop.Request{Pool: pool, OID: oid, Ops: ops}
	if p.Type == osdmap.PoolErasure {
		for i := range ops {
			switch ops[i].Code {
			case osdop.OmapSet, osdop.OmapRm, osdop.OmapClear, osdop.Call, osdop.OmapGet, osdop.OmapList:
				return nil, fmt.Errorf("%w: %s on an erasure-coded pool (keep omap data in a replicated pool) (op %d on %s)", osdop.ErrUnsupported, ops[i].Code, i, oid)
			}
		}
	}
	write := req.IsWrite()
	defer c.lock(pool, oid, write)()
	o, err := opexec.Load(c.store, coll(pool), oid)
	if err != nil {
		return nil, err
	}
	if !write {
		rep := &osdop.Reply{Ver: o.Version, Results: make([]osdop.Result, len(ops))}
		for i := range ops {
			r, err := opexec.ReadOp(o, &ops[i])
			if err != nil && !opexec.FailOK(&ops[i], err) {
				return nil, fmt.Errorf("%w (op %d %s on %s)", err, i, ops[i].Code, oid)
			}
			rep.Results[i] = r
		}
		return rep, nil
	}
	x, err := opexec.Prepare(o, ops, c.maxSize, opexec.SnapContext{})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.seq[pool]++
	v := peering.Version{Epoch: uint32(c.state.Map.Epoch), Seq: c.seq[pool]}
	c.mu.Unlock()
	if x.ExistsAfter {
		opexec.Stamp(x.T, coll(pool), oid, v, time.Now())
	}
	if err := c.store.Apply(x.T); err != nil {
		return nil, opexec.StoreErr(err)
	}
	return &osdop.Reply{Ver: v.Seq, Results: x.Results}, nil
}

// List lists pool's objects, in name order, until fn returns false; a
// pool that does not exist is osdop.ErrNotFound.
func (c *Cluster) List(ctx context.Context, pool int64, fn func(name string) bool) error {
	after := ""
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		names, err := c.store.List(coll(pool), after, 1000)
		if err != nil {
			return opexec.StoreErr(err)
		}
		for _, n := range names {
			if !fn(n) {
				return nil
			}
		}
		if len(names) < 1000 {
			return nil
		}
		after = names[len(names)-1]
	}
}
