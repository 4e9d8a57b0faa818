package osd

// Erasure-coded writes: a request runs against a window of whole
// stripes, re-encoded into one transaction per shard (ec.go has the
// layout and the protocol).

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/internal/bufpool"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// ecWrite is a write request on an erasure-coded object, executed against
// a window of whole stripes [lo, lo+len(win)/w) that the request rewrites.
type ecWrite struct {
	pg    *PG
	ctx   context.Context
	cd    *ec.Codec
	o     *object // the object before the request
	w, u  uint64  // stripe width and unit
	allow bool    // allow_ec_overwrites

	exists   bool
	removed  bool   // a remove: the shards start again from nothing
	size     uint64 // logical size so far
	zeroFrom uint64 // on-disk bytes at or past this are stale (truncated)
	lo       uint64 // first stripe of the window
	win      []byte // the window's bytes; whole stripes unless aliased
	aliased  bool   // win is the client's buffer (a stripe-aligned write to the end)
	attrs    []omap.KV
	rmAttrs  []string
	// snapshots: pre is what every shard does first (the clone of the
	// head a newer SnapContext asks for, osdop's make_writeable), and
	// rollbackTo, if not nil, the clone a rollback op makes the head
	pre        *objectstore.Transaction
	rollbackTo *osdop.CloneInfo
}

func (x *ecWrite) hi() uint64 { return x.lo + (uint64(len(x.win))+x.w-1)/x.w }

// own makes the window a private buffer of whole stripes.
func (x *ecWrite) own() {
	if !x.aliased {
		return
	}
	n := (uint64(len(x.win)) + x.w - 1) / x.w * x.w
	b := make([]byte, n)
	copy(b, x.win)
	x.win, x.aliased = b, false
}

// cover extends the window to the stripes of logical bytes [a, b), reading
// stripes it did not hold from the shards (as they were before the request;
// bytes the request truncated read as zeros).
func (x *ecWrite) cover(a, b uint64) error {
	x.own()
	s0, s1 := a/x.w, (max(b, a+1)+x.w-1)/x.w
	if len(x.win) > 0 {
		s0, s1 = min(s0, x.lo), max(s1, x.hi())
	}
	if len(x.win) > 0 && s0 == x.lo && s1 == x.hi() {
		return nil
	}
	buf := make([]byte, (s1-s0)*x.w)
	valid := uint64(0) // on-disk bytes still meaningful
	if x.o.Exists && !x.removed {
		valid = min(x.o.Size, x.zeroFrom)
	}
	load := func(from, to uint64) error { // stripes [from, to)
		start, end := from*x.w, min(to*x.w, valid)
		if start >= end {
			return nil
		}
		parts, release, err := x.pg.readRange(x.ctx, x.cd, x.o, start, end-start)
		if err != nil {
			return err
		}
		at := buf[start-s0*x.w:]
		for _, p := range parts {
			at = at[copy(at, p):]
		}
		release()
		return nil
	}
	if len(x.win) == 0 {
		if err := load(s0, s1); err != nil {
			return err
		}
	} else {
		if err := load(s0, x.lo); err != nil {
			return err
		}
		if err := load(x.hi(), s1); err != nil {
			return err
		}
		copy(buf[(x.lo-s0)*x.w:], x.win)
	}
	x.lo, x.win = s0, buf
	return nil
}

func (x *ecWrite) write(off uint64, data []byte) error {
	end := off + uint64(len(data))
	if off != x.size && !x.allow {
		return fmt.Errorf("%w: write at %d of an object of %d bytes is an overwrite; erasure-coded pools take them only with allow_ec_overwrites", osdop.ErrUnsupported, off, x.size)
	}
	if len(x.win) == 0 && off%x.w == 0 && end >= x.size && (x.zeroFrom%x.w == 0 || x.zeroFrom >= x.size) {
		// whole new stripes to the end: no read, no copy
		x.lo, x.win, x.aliased = off/x.w, data, true
	} else {
		if err := x.cover(off, end); err != nil {
			return err
		}
		copy(x.win[off-x.lo*x.w:], data)
	}
	x.size = max(x.size, end)
	return nil
}

func (x *ecWrite) truncate(n uint64) error {
	if n >= x.size {
		x.size = n // the bytes past the old end read as zeros already
		return nil
	}
	x.zeroFrom = min(x.zeroFrom, n)
	if n%x.w != 0 {
		if err := x.cover(n, n); err != nil {
			return err
		}
	}
	if len(x.win) > 0 {
		x.own()
		if start := x.lo * x.w; n > start {
			clear(x.win[min(n-start, uint64(len(x.win))):])
		} else {
			x.win = x.win[:0]
		}
	}
	x.size = n
	return nil
}

func (x *ecWrite) zero(off, n uint64) error {
	end := min(off+n, x.size)
	if off >= end {
		return nil
	}
	if err := x.cover(off, end); err != nil {
		return err
	}
	clear(x.win[off-x.lo*x.w : end-x.lo*x.w])
	return nil
}

// prepareEC executes a write request on an erasure-coded object (the
// object lock is held) and builds one transaction per shard.
func (pg *PG) prepareEC(ctx context.Context, cd *ec.Codec, pool *osdmap.Pool, req *osdop.Request) (*prepared, error) {
	o, err := pg.loadECObject(req.OID)
	if err != nil {
		return nil, err
	}
	p := cd.Profile()
	if len(req.Ops) == 1 && req.Ops[0].Code == osdop.TrimSnaps {
		return trimSnapsEC(o, req, p.K+p.M)
	}
	x := &ecWrite{pg: pg, ctx: ctx, cd: cd, o: o, w: uint64(p.StripeWidth()), u: uint64(p.StripeUnit),
		allow: pool.Flags&osdmap.FlagECOverwrites != 0, exists: o.Exists, size: o.Size, zeroFrom: o.Size,
		pre: &objectstore.Transaction{}}
	ss := opexec.MakeWriteable(o, x.pre, opexec.SnapContext{Seq: req.SnapSeq, Snaps: req.Snaps})
	const all = ^uint64(0)
	written := func(off, n uint64) { // the head's bytes [off, off+n) change
		if ss != nil {
			ss.Written(off, n)
		}
	}
	res := &prepared{Prepared: &opexec.Prepared{Results: make([]osdop.Result, len(req.Ops))}, stored: o.Exists || o.Whiteout}
	maxSize := pg.osd.conf().Size("osd_max_object_size")
	for i := range req.Ops {
		op := &req.Ops[i]
		fail := func(err error) (*prepared, error) {
			return nil, fmt.Errorf("%w (op %d %s on %s)", err, i, op.Code, req.OID)
		}
		var err error
		switch op.Code {
		case osdop.WriteFull:
			x.zeroFrom, x.size, x.win, x.aliased = 0, 0, nil, false
			err = x.write(0, op.Data)
			written(0, all)
		case osdop.Write:
			if op.Off+uint64(len(op.Data)) < op.Off {
				return fail(osdop.ErrInvalid)
			}
			err = x.write(op.Off, op.Data)
			written(op.Off, uint64(len(op.Data)))
		case osdop.Append:
			written(x.size, uint64(len(op.Data)))
			err = x.write(x.size, op.Data)
		case osdop.Truncate:
			if op.Off != x.size && !x.allow {
				return fail(fmt.Errorf("%w: truncate on an erasure-coded pool needs allow_ec_overwrites", osdop.ErrUnsupported))
			}
			written(min(op.Off, x.size), all)
			err = x.truncate(op.Off)
		case osdop.Zero:
			if !x.allow {
				return fail(fmt.Errorf("%w: zero on an erasure-coded pool needs allow_ec_overwrites", osdop.ErrUnsupported))
			}
			written(op.Off, op.Len)
			err = x.zero(op.Off, op.Len)
		case osdop.Remove:
			if !x.exists {
				return fail(osdop.ErrNotFound)
			}
			x.remove()
			written(0, all)
			continue
		case osdop.Rollback:
			if len(req.Ops) != 1 {
				return fail(fmt.Errorf("%w: on an erasure-coded pool, rollback is a request of its own", osdop.ErrUnsupported))
			}
			if op.Ver == 0 {
				return fail(fmt.Errorf("%w: rollback to snap 0", osdop.ErrInvalid))
			}
			clone, head := opexec.RollbackTarget(ss, op.Ver)
			switch {
			case head: // the head is the object at that snap: nothing changes
			case clone == nil: // the object did not exist at the snap
				if x.exists {
					x.remove()
				}
				written(0, all)
			default:
				x.rollbackTo = clone
				x.exists, x.size = true, clone.Size
				written(0, all)
			}
			continue
		case osdop.Create:
			if x.exists && op.Exclusive {
				return fail(osdop.ErrExists)
			}
		case osdop.SetXattr:
			if op.Name == "" {
				return fail(fmt.Errorf("%w: empty xattr name", osdop.ErrInvalid))
			}
			x.attrs = append(x.attrs, omap.KV{Key: userAttr + op.Name, Value: op.Data})
		case osdop.RmXattr:
			if _, err := pg.osd.store.GetAttr(pg.coll, req.OID, userAttr+op.Name); err != nil || !x.exists {
				return fail(fmt.Errorf("%w: %q", osdop.ErrNoData, op.Name))
			}
			x.rmAttrs = append(x.rmAttrs, userAttr+op.Name)
		case osdop.OmapSet, osdop.OmapRm, osdop.OmapClear, osdop.Call:
			return fail(fmt.Errorf("%w: %s on an erasure-coded pool (keep omap data in a replicated pool)", osdop.ErrUnsupported, op.Code))
		case osdop.Watch, osdop.Unwatch, osdop.WatchExpire:
			return fail(fmt.Errorf("%w: %s on an erasure-coded pool (watch objects of a replicated pool)", osdop.ErrUnsupported, op.Code))
		case osdop.AssertVersion:
			if err := opexec.AssertVersion(x.exists, o.Version, op.Ver); err != nil {
				return fail(err)
			}
			continue
		default: // reads see the state before the request
			r, release, err := pg.readOpEC(ctx, cd, o, op)
			if r.Vec != nil { // the reply outlives the shards' buffers
				r.Data, r.Vec = bytes.Join(r.Vec, nil), nil
			}
			release()
			if err != nil {
				if !opexec.FailOK(op, err) {
					return fail(err)
				}
				r = osdop.Result{}
			}
			res.Results[i] = r
			continue
		}
		if err != nil {
			return fail(err)
		}
		x.exists = true
		if x.size > maxSize {
			return fail(fmt.Errorf("%w: %d bytes (osd_max_object_size %d)", osdop.ErrTooLarge, x.size, maxSize))
		}
	}
	if !x.exists && !o.Exists {
		return nil, fmt.Errorf("%w: %s", osdop.ErrNotFound, req.OID)
	}
	res.Existed, res.ExistsAfter = o.Exists, x.exists
	switch {
	case x.exists && !o.Exists:
		res.DObjects = 1
	case !x.exists && o.Exists:
		res.DObjects = -1
	}
	res.DBytes = int64(x.size) - int64(o.Size)
	if ss != nil { // clones count as objects, their bytes the head no longer shares
		nowN, nowB := opexec.CloneUsage(ss)
		wasN, wasB := opexec.CloneUsage(o.SnapSet)
		res.DObjects += nowN - wasN
		res.DBytes += nowB - wasB
	}
	if err := x.shardTxns(res, pg.coll, req.OID); err != nil {
		return nil, err
	}
	for _, t := range res.shards { // every shard keeps the SnapSet, or a whiteout
		res.Whiteout = opexec.FinishSnaps(o, t, ss, x.exists)
	}
	return res, nil
}

// remove is a Remove op: the shards start again from nothing.
func (x *ecWrite) remove() {
	x.exists, x.removed, x.size, x.zeroFrom, x.win, x.aliased = false, true, 0, 0, nil, false
	x.attrs, x.rmAttrs = nil, nil
}

// trimSnapsEC is the snap trimmer's TrimSnaps op on an erasure-coded
// object: metadata only (clones removed, the SnapSet and the snap
// mapper updated), so every one of the n shards applies the same
// transaction.
func trimSnapsEC(o *object, req *osdop.Request, n int) (*prepared, error) {
	x, err := opexec.Prepare(o, req.Ops, 0, opexec.SnapContext{})
	if err != nil {
		return nil, err
	}
	res := &prepared{Prepared: x, shards: make([]*objectstore.Transaction, n), stored: o.Exists || o.Whiteout}
	for i := range res.shards {
		res.shards[i] = &objectstore.Transaction{}
		res.shards[i].Append(x.T)
	}
	return res, nil
}

// shardTxns encodes the window and builds every shard's transaction.
func (x *ecWrite) shardTxns(res *prepared, c objectstore.Coll, oid string) error {
	p := x.cd.Profile()
	n := p.K + p.M
	res.shards = make([]*objectstore.Transaction, n)
	for i := range res.shards {
		res.shards[i] = &objectstore.Transaction{}
		res.shards[i].Append(x.pre)
	}
	if x.rollbackTo != nil { // each shard's clone replaces its head: data and attributes
		for _, t := range res.shards {
			t.Clone(c, opexec.CloneOID(oid, x.rollbackTo.ID), oid)
		}
		return nil
	}
	if !x.exists {
		for _, t := range res.shards {
			t.Remove(c, oid)
		}
		return nil
	}
	// stripes past the new end are dropped
	if end := (x.size + x.w - 1) / x.w; x.hi() > end {
		x.own()
		if end <= x.lo {
			x.win = x.win[:0]
		} else {
			x.win = x.win[:(end-x.lo)*x.w]
		}
	}
	var chunks [][]byte
	if len(x.win) > 0 {
		// the shards go into a pooled buffer: PG.write gives it back once
		// every shard's write has committed (res.release)
		buf := bufpool.Get(x.cd.EncodedLen(len(x.win)))
		var err error
		if chunks, err = x.cd.EncodeInto(x.win, buf); err != nil {
			bufpool.Put(buf)
			return err
		}
		res.release = func() { bufpool.Put(buf) }
	}
	oldShard := uint64(p.ShardSize(int64(x.o.Size)))
	if x.removed || !x.o.Exists {
		oldShard = 0
	}
	newShard := uint64(p.ShardSize(int64(x.size)))
	cut := min(oldShard, uint64(p.ShardSize(int64(x.zeroFrom))))
	sizeAttr := binary.LittleEndian.AppendUint64(nil, x.size)
	for i, t := range res.shards {
		if x.removed && x.o.Exists {
			t.Remove(c, oid)
		}
		t.Touch(c, oid)
		length := oldShard
		if cut < oldShard {
			t.Truncate(c, oid, cut)
			length = cut
		}
		if len(chunks) > 0 {
			t.Write(c, oid, x.lo*x.u, chunks[i])
			length = max(length, x.lo*x.u+uint64(len(chunks[i])))
		}
		if length != newShard {
			t.Truncate(c, oid, newShard)
		}
		t.SetAttr(c, oid, attrECSize, sizeAttr)
		for _, a := range x.attrs {
			t.SetAttr(c, oid, a.Key, a.Value)
		}
		for _, a := range x.rmAttrs {
			t.RmAttr(c, oid, a)
		}
	}
	return nil
}
