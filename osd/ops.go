package osd

import (
	"context"
	"fmt"

	_ "github.com/shoal-project/shoal/cls/lock" // advisory object locks
	_ "github.com/shoal-project/shoal/cls/rbd"  // block image headers and the image directory
	_ "github.com/shoal-project/shoal/cls/rgw"  // the bucket index methods every OSD serves
	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// prepared is a write request turned into a transaction: one for every
// copy (replicated), or one per shard (erasure-coded, shards).
type prepared struct {
	*opexec.Prepared
	shards []*objectstore.Transaction // erasure-coded: each shard's, by position
	// stored (erasure-coded): the object was in the store before the
	// request — it existed, or was a whiteout kept for its clones — so
	// the shards stash it for rollback
	stored bool
	// release (nil: none) gives back the pooled buffer the shards' data
	// lies in; called only once every write of it committed, so that no
	// message still queued to a member (a call that timed out) can be
	// sent from a reused buffer. Left to the collector otherwise.
	release func()
}

// releases are the functions that give back the buffers a reply's data
// lies in (pooled read buffers, pinned cache units, receive buffers);
// nil entries are skipped.
type releases []func()

// release calls them all.
func (rs releases) release() {
	for _, r := range rs {
		if r != nil {
			r()
		}
	}
}

// object is the state of the request's object before it.
type object = opexec.Object

// loadObject loads oid's state, with its snapshot state in a pool that
// has (or had) snapshots.
func (pg *PG) loadObject(oid string) (*object, error) {
	o, err := opexec.Load(pg.osd.store, pg.coll, oid)
	if err != nil || !pg.snapsOn() {
		return o, err
	}
	return o, o.LoadSnapSet()
}

// projectedObject is oid's state as the writes in flight on it leave it
// (nil: none in flight, the store's state is current), for a blind write
// that shares the object's lock with them (write checks that they were
// submitted since the PG last peered, and that this one is).
func (pg *PG) projectedObject(oid string) *object {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	p := pg.projected[oid]
	if p == nil {
		return nil
	}
	o := p.obj
	o.Store, o.Coll, o.OID = pg.osd.store, pg.coll, oid
	pg.osd.perf.opWPipelined.Add(1)
	return &o
}

// snapsOn reports whether the PG's pool has given out snap ids: only then
// may its objects have clones.
func (pg *PG) snapsOn() bool {
	m, _ := pg.osd.curMap()
	if m == nil {
		return false
	}
	p := m.Pools[pg.id.Pool]
	return p != nil && p.SnapSeq > 0
}

// prepare executes a write request's ops against the object's current
// state (the object lock is held) and builds the transaction; the
// request's SnapContext is the one handleOp checked (snapContext).
func (pg *PG) prepare(req *osdop.Request) (*prepared, error) {
	o := pg.projectedObject(req.OID)
	if o == nil {
		var err error
		if o, err = pg.loadObject(req.OID); err != nil {
			return nil, err
		}
	}
	if req.From != "" {
		o.Caller = osdmap.InstanceName(req.From, req.Client)
	}
	x, err := opexec.Prepare(o, req.Ops, pg.osd.conf().Size("osd_max_object_size"), opexec.SnapContext{Seq: req.SnapSeq, Snaps: req.Snaps})
	if err != nil {
		return nil, err
	}
	return &prepared{Prepared: x}, nil
}

// read serves a request of reads only. The data of its Read ops is in
// pooled buffers: release gives them back once the reply is sent.
func (pg *PG) read(ctx context.Context, req *osdop.Request) (rep *osdop.Reply, release func(), err error) {
	iv, err := pg.waitReadable(ctx)
	if err != nil {
		return nil, nil, err
	}
	rep, release, err = pg.readLocked(ctx, req)
	if lerr := pg.stillReadable(iv); lerr != nil { // its outcome, found or not, needs the lease
		if release != nil {
			release()
		}
		return nil, nil, lerr
	}
	return rep, release, err
}

// readLocked is read's work once the PG is readable: under the object's
// lock, from this OSD's copy.
func (pg *PG) readLocked(ctx context.Context, req *osdop.Request) (rep *osdop.Reply, release func(), err error) {
	if err := pg.recoverForRead(ctx, req.OID); err != nil {
		return nil, nil, err
	}
	defer pg.rlockObject(req.OID)()
	if err := pg.checkNotMissing(req.OID, osdop.ErrRetry); err != nil {
		return nil, nil, err
	}
	o, err := pg.loadObject(req.OID)
	if err != nil {
		return nil, nil, err
	}
	if req.Snap != 0 {
		if o, err = o.AtSnap(req.Snap); err != nil {
			return nil, nil, err
		}
	}
	var held releases
	rep = &osdop.Reply{Ver: o.Version, Results: make([]osdop.Result, len(req.Ops))}
	for i := range req.Ops {
		if op := &req.Ops[i]; op.Code == osdop.Read && o.Exists {
			// into a pooled buffer, returned once the reply is written
			parts, sums, rel, err := pg.readData(o, op)
			if err != nil {
				held.release()
				return nil, nil, fmt.Errorf("%w (op %d %s on %s)", err, i, op.Code, req.OID)
			}
			held = append(held, rel)
			rep.Results[i].Vec, rep.Results[i].VecSums = parts, sums
			continue
		}
		r, err := pg.readOp(o, &req.Ops[i])
		if err != nil {
			if !opexec.FailOK(&req.Ops[i], err) {
				held.release()
				return nil, nil, fmt.Errorf("%w (op %d %s on %s)", err, i, req.Ops[i].Code, req.OID)
			}
			r = osdop.Result{}
		}
		rep.Results[i] = r
	}
	return rep, held.release, nil
}

// readData is a Read op of an existing object (as readOp reads it) as
// the store's parts — its cache's buffers, not copies — with their
// checksums where the store knows them and the function that gives the
// parts back once the reply is written.
func (pg *PG) readData(o *object, op *osdop.Op) ([][]byte, []crc32c.Sum, func(), error) {
	if op.Off >= o.Size {
		return [][]byte{}, nil, func() {}, nil
	}
	n := op.Len
	if n == 0 || n > o.Size-op.Off {
		n = o.Size - op.Off
	}
	parts, sums, release, err := pg.osd.store.ReadVec(pg.coll, o.OID, op.Off, n)
	if err != nil {
		return nil, nil, nil, storeErr(err)
	}
	return parts, sums, release, nil
}

func (pg *PG) readOp(o *object, op *osdop.Op) (osdop.Result, error) { return opexec.ReadOp(o, op) }
