package osd

// Erasure-coded PGs.
//
// Shard i of a PG lives on acting[i] (CRUSH's indep rule keeps positions
// stable; a missing OSD is a hole). Every shard holds, per object, its
// chunks of every stripe (ec package layout) as the object's data, and the
// same attributes: version, mtime, the object's logical size (attrECSize)
// and the client's xattrs. The primary turns each write request into one
// transaction per shard — whole stripes re-encoded: the stripes a write
// touches are read back (from the shards, reconstructing if needed),
// modified and encoded again — and sends shard i's to acting[i] with the
// log entry; the client is answered once every shard in the acting set
// committed.
//
// Rollback: before a write changes an object, each shard keeps the
// object's previous state as a stash object (stashName), until the
// primary knows the write is on every shard and rolls it forward (the next
// write carries that point, Info.RolledForward). If a primary dies mid-write
// some shards may hold the new version and others the old; peering then
// takes as authoritative the newest version at least k shards hold and
// rolls the others back from their stashes, so an object is always at its
// old or its new content, never a mix (Ceph: doc/dev/osd_internals/
// erasure_coding/developer_notes, "rollback").
//
// Reads fetch only the data shards (and stripes) the range covers, and
// the object's version with them; a shard that is missing, fails, returns
// another version, or fails its checksum (the object store checks a crc32c
// per 4 KiB block on every read) is replaced by others and the range is
// decoded from any k. A shard that failed its checksum is rewritten from
// the decoded data at once (repair on read).

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// attrECSize is an erasure-coded object's logical size (8 bytes, little
// endian) on every shard; the shards' own data is whole stripes.
const attrECSize = "s.size"

// stashPrefix starts the names of rollback stashes; client object names
// may not start with a NUL byte, so they never collide and listings skip
// them.
const stashPrefix = "\x00rb."

func stashName(seq uint64) string { return stashPrefix + strconv.FormatUint(seq, 10) }

func isInternal(oid string) bool { return strings.HasPrefix(oid, "\x00") }

// codec returns the codec of an erasure-coded pool, fetching its profile
// from the MONs once (a profile cannot change while a pool uses it, and
// pool ids are never reused).
func (d *OSD) codec(ctx context.Context, pool *osdmap.Pool) (*ec.Codec, error) {
	d.codecMu.Lock()
	c := d.codecs[pool.ID]
	d.codecMu.Unlock()
	if c != nil {
		return c, nil
	}
	r, err := d.mc.Command(ctx, "osd erasure-code-profile get", map[string]string{"name": pool.ECProfile})
	if err != nil {
		return nil, fmt.Errorf("osd.%d: pool %s: erasure-code profile %q: %w", d.id, pool.Name, pool.ECProfile, err)
	}
	var args []string
	if err := json.Unmarshal(r.Data, &args); err != nil {
		return nil, fmt.Errorf("osd.%d: pool %s: erasure-code profile %q: %w", d.id, pool.Name, pool.ECProfile, err)
	}
	p, err := ec.ParseProfile(pool.ECProfile, args)
	if err != nil {
		return nil, fmt.Errorf("osd.%d: pool %s: %w", d.id, pool.Name, err)
	}
	if p.K+p.M != pool.Size {
		return nil, fmt.Errorf("osd.%d: pool %s: size %d is not k+m of profile %s (%d+%d)", d.id, pool.Name, pool.Size, p.Name, p.K, p.M)
	}
	if c, err = ec.NewCodec(p); err != nil {
		return nil, err
	}
	d.codecMu.Lock()
	d.codecs[pool.ID] = c
	d.codecMu.Unlock()
	return c, nil
}

// loadECObject is loadObject for an erasure-coded PG: the size is the
// object's logical size, not the shard's.
func (pg *PG) loadECObject(oid string) (*object, error) {
	o, err := pg.loadObject(oid)
	if err != nil || !o.Exists {
		return o, err
	}
	b, err := pg.osd.store.GetAttr(pg.coll, oid, attrECSize)
	if err != nil || len(b) != 8 {
		return nil, fmt.Errorf("%w: pg %s: %s has no valid %s attribute (%v)", osdop.ErrCorrupt, pg.id, oid, attrECSize, err)
	}
	o.Size = binary.LittleEndian.Uint64(b)
	return o, nil
}

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
		data, err := x.pg.readRange(x.ctx, x.cd, x.o, start, end-start)
		if err != nil {
			return err
		}
		copy(buf[start-s0*x.w:], data)
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
	x := &ecWrite{pg: pg, ctx: ctx, cd: cd, o: o, w: uint64(p.StripeWidth()), u: uint64(p.StripeUnit),
		allow: pool.Flags&osdmap.FlagECOverwrites != 0, exists: o.Exists, size: o.Size, zeroFrom: o.Size}
	res := &prepared{Prepared: opexec.Prepared{Results: make([]osdop.Result, len(req.Ops))}}
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
		case osdop.Write:
			if op.Off+uint64(len(op.Data)) < op.Off {
				return fail(osdop.ErrInvalid)
			}
			err = x.write(op.Off, op.Data)
		case osdop.Append:
			err = x.write(x.size, op.Data)
		case osdop.Truncate:
			if op.Off != x.size && !x.allow {
				return fail(fmt.Errorf("%w: truncate on an erasure-coded pool needs allow_ec_overwrites", osdop.ErrUnsupported))
			}
			err = x.truncate(op.Off)
		case osdop.Zero:
			if !x.allow {
				return fail(fmt.Errorf("%w: zero on an erasure-coded pool needs allow_ec_overwrites", osdop.ErrUnsupported))
			}
			err = x.zero(op.Off, op.Len)
		case osdop.Remove:
			if !x.exists {
				return fail(osdop.ErrNotFound)
			}
			x.exists, x.removed, x.size, x.zeroFrom, x.win, x.aliased = false, true, 0, 0, nil, false
			x.attrs, x.rmAttrs = nil, nil
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
		case osdop.AssertVersion:
			if err := opexec.AssertVersion(x.exists, o.Version, op.Ver); err != nil {
				return fail(err)
			}
			continue
		default: // reads see the state before the request
			r, err := pg.readOpEC(ctx, cd, o, op)
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
	if err := x.shardTxns(res, pg.coll, req.OID); err != nil {
		return nil, err
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
		var err error
		if chunks, err = x.cd.Encode(x.win); err != nil {
			return err
		}
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

// readEC serves a read request on an erasure-coded PG.
func (pg *PG) readEC(ctx context.Context, cd *ec.Codec, req *osdop.Request) (*osdop.Reply, error) {
	iv, err := pg.waitReadable(ctx)
	if err != nil {
		return nil, err
	}
	rep, err := pg.readECLocked(ctx, cd, req)
	if lerr := pg.stillReadable(iv); lerr != nil { // its outcome, found or not, needs the lease
		return nil, lerr
	}
	return rep, err
}

// readECLocked is readEC's work once the PG is readable.
func (pg *PG) readECLocked(ctx context.Context, cd *ec.Codec, req *osdop.Request) (*osdop.Reply, error) {
	if err := pg.recoverForRead(ctx, req.OID); err != nil {
		return nil, err
	}
	// a write holds the object until every shard committed: under the
	// lock, all shards agree
	unlock := pg.lockObject(req.OID)
	defer unlock()
	if err := pg.checkNotMissing(req.OID, osdop.ErrRetry); err != nil {
		return nil, err
	}
	o, err := pg.loadECObject(req.OID)
	if err != nil {
		return nil, err
	}
	rep := &osdop.Reply{Ver: o.Version, Results: make([]osdop.Result, len(req.Ops))}
	for i := range req.Ops {
		r, err := pg.readOpEC(ctx, cd, o, &req.Ops[i])
		if err != nil {
			if !opexec.FailOK(&req.Ops[i], err) {
				return nil, fmt.Errorf("%w (op %d %s on %s)", err, i, req.Ops[i].Code, req.OID)
			}
			r = osdop.Result{}
		}
		rep.Results[i] = r
	}
	return rep, nil
}

func (pg *PG) readOpEC(ctx context.Context, cd *ec.Codec, o *object, op *osdop.Op) (osdop.Result, error) {
	switch op.Code {
	case osdop.Read:
		if !o.Exists {
			return osdop.Result{}, osdop.ErrNotFound
		}
		if op.Off >= o.Size {
			return osdop.Result{}, nil
		}
		n := op.Len
		if n == 0 || n > o.Size-op.Off {
			n = o.Size - op.Off
		}
		data, err := pg.readRange(ctx, cd, o, op.Off, n)
		return osdop.Result{Data: data}, err
	case osdop.OmapGet, osdop.OmapList:
		return osdop.Result{}, fmt.Errorf("%w: %s on an erasure-coded pool", osdop.ErrUnsupported, op.Code)
	}
	return pg.readOp(o, op) // stat and xattrs: every shard holds them
}

// readRange reads logical bytes [off, off+n) of an object (within its
// size): the data shards the range covers, then, if any fails, others
// until k have answered, decoding the missing ones.
func (pg *PG) readRange(ctx context.Context, cd *ec.Codec, o *object, off, n uint64) ([]byte, error) {
	p := cd.Profile()
	k, u := p.K, uint64(p.StripeUnit)
	w := uint64(k) * u
	s0, s1 := off/w, (off+n+w-1)/w
	first, last := 0, k-1
	if s1-s0 == 1 { // one stripe: only the chunks the range touches
		first, last = int((off-s0*w)/u), int((off+n-1-s0*w)/u)
	}
	pg.mu.Lock()
	acting, addrs, iv := pg.ps.Interval.Acting, pg.ps.Interval.Addrs, pg.ps.Interval.ID
	pg.mu.Unlock()
	sOff, sLen := s0*u, (s1-s0)*u
	shards := make([][]byte, k+p.M)
	errs := make([]error, k+p.M)
	tried := make([]bool, k+p.M)
	fetch := func(want []int) {
		var wg sync.WaitGroup
		for _, i := range want {
			tried[i] = true
			if i >= len(acting) || acting[i] == osdmap.NoOSD {
				errs[i] = fmt.Errorf("shard %d has no OSD", i)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				shards[i], errs[i] = pg.readShard(ctx, acting[i], addrs[i], iv, o, sOff, sLen)
				if errs[i] == nil { // a client read's shard reads (a scrub's are not counted)
					pg.osd.perf.shardR.Add(1)
					pg.osd.perf.shardRBytes.Add(sLen)
				}
			}()
		}
		wg.Wait()
	}
	var want []int
	for i := first; i <= last; i++ {
		want = append(want, i)
	}
	fetch(want)
	ok := 0
	for _, i := range want {
		if errs[i] == nil {
			ok++
		}
	}
	if ok < len(want) { // degraded: any k shards will do
		want = want[:0]
		for i := range shards {
			if !tried[i] {
				want = append(want, i)
			}
		}
		fetch(want)
		var failed []string
		for i, err := range errs {
			if err != nil {
				shards[i] = nil
				failed = append(failed, fmt.Sprintf("shard %d: %v", i, err))
			}
		}
		corrupt := false
		for _, err := range errs {
			corrupt = corrupt || errors.Is(err, osdop.ErrCorrupt)
		}
		var err error
		if corrupt {
			err = cd.Reconstruct(shards)
		} else {
			err = cd.ReconstructData(shards)
		}
		if err != nil {
			kind := osdop.ErrUnreadable
			if slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, osdop.ErrRetry) }) {
				kind = osdop.ErrRetry // the interval changed under the read: resend it
			}
			return nil, fmt.Errorf("%w: pg %s object %s: cannot decode (%s): %v", kind, pg.id, o.OID, strings.Join(failed, "; "), err)
		}
		pg.osd.perf.ecReconstruct.Add(1)
		if corrupt {
			pg.repairShards(ctx, acting, addrs, iv, o, sOff, shards, errs)
		}
	}
	out := make([]byte, n)
	for pos := off; pos < off+n; {
		s, in := pos/w, pos%w
		j, c := in/u, in%u
		pos += uint64(copy(out[pos-off:], shards[j][(s-s0)*u+c:(s-s0+1)*u]))
	}
	return out, nil
}

// readShard reads [off, off+n) of an object's shard on osd (this one or
// another) and checks that it holds the expected version.
func (pg *PG) readShard(ctx context.Context, osd int32, addr string, iv uint64, o *object, off, n uint64) ([]byte, error) {
	d := pg.osd
	var data []byte
	var ver Version
	if osd == d.id {
		var err error
		if data, ver, err = pg.readLocalShard(o.OID, off, n); err != nil {
			return nil, err
		}
	} else {
		b, err := d.call(ctx, osd, addr, msgECRead, (&peerMsg{PG: pg.id, Interval: iv, OID: o.OID, Off: off, Len: n}).encode())
		if err != nil {
			return nil, err
		}
		pm, err := decodePeerMsg(b)
		if err != nil {
			return nil, err
		}
		if pm.Obj == nil {
			return nil, fmt.Errorf("osd.%d: %w", osd, osdop.ErrNotFound)
		}
		data, ver = pm.Obj.Data, pm.Prev
	}
	if ver.Seq != o.Version {
		return nil, fmt.Errorf("osd.%d holds version %d, not %d", osd, ver.Seq, o.Version)
	}
	if uint64(len(data)) < n { // past the shard's end: padding
		data = append(data, make([]byte, n-uint64(len(data)))...)
	}
	return data, nil
}

func (pg *PG) readLocalShard(oid string, off, n uint64) ([]byte, Version, error) {
	s := pg.osd.store
	b, err := s.GetAttr(pg.coll, oid, attrVersion)
	if err != nil {
		return nil, Version{}, storeErr(err)
	}
	data, err := s.Read(pg.coll, oid, off, n)
	if err != nil {
		return nil, Version{}, storeErr(err)
	}
	return data, peering.VersionFrom(b), nil
}

// handleECRead serves a primary's read of this OSD's shard.
func (pg *PG) handleECRead(pm *peerMsg) ([]byte, error) {
	if err := pg.checkMember(pm); err != nil {
		return nil, err
	}
	if err := pg.checkNotMissing(pm.OID, osdop.ErrUnreadable); err != nil { // not ErrRetry, which is for a changed interval
		return nil, err
	}
	data, ver, err := pg.readLocalShard(pm.OID, pm.Off, pm.Len)
	if err != nil {
		return nil, err
	}
	return (&peerMsg{PG: pg.id, Prev: ver, Obj: &objState{Exists: true, Data: data}}).encode(), nil
}

// checkMember admits a message from the primary of the current interval.
func (pg *PG) checkMember(pm *peerMsg) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.checkMemberLocked(pm)
}

// checkMemberLocked is checkMember with pg.mu held.
func (pg *PG) checkMemberLocked(pm *peerMsg) error {
	if pg.ps.Interval.ID != pm.Interval || (pg.ps.State != peering.ReplicaActive && pg.ps.Interval.Primary != pg.osd.id) {
		return fmt.Errorf("%w: pg %s on osd.%d is not a member of this interval", osdop.ErrRetry, pg.id, pg.osd.id)
	}
	return nil
}

// repairShards rewrites the chunks of shards that failed their checksum
// from the decoded ones (the object lock is held: no write races).
func (pg *PG) repairShards(ctx context.Context, acting []int32, addrs []string, iv uint64, o *object, off uint64, shards [][]byte, errs []error) {
	d := pg.osd
	for i, err := range errs {
		if !errors.Is(err, osdop.ErrCorrupt) || i >= len(acting) {
			continue
		}
		pm := &peerMsg{PG: pg.id, Interval: iv, OID: o.OID, Off: off, Prev: Version{Seq: o.Version}, Obj: &objState{Exists: true, Data: shards[i]}}
		var rerr error
		if acting[i] == d.id {
			rerr = pg.repairLocal(pm)
		} else {
			_, rerr = d.call(ctx, acting[i], addrs[i], msgECRepair, pm.encode())
		}
		if rerr != nil {
			d.log.Warn("repair of a corrupt shard failed", "pg", pg.id, "object", o.OID, "shard", i, "osd", acting[i], "err", rerr)
			continue
		}
		d.log.Warn("repaired a corrupt shard from the others", "pg", pg.id, "object", o.OID, "shard", i, "osd", acting[i], "offset", off, "bytes", len(shards[i]))
	}
}

// repairLocal rewrites part of this OSD's shard of an object if it is
// still at the version the primary decoded.
func (pg *PG) repairLocal(pm *peerMsg) error {
	b, err := pg.osd.store.GetAttr(pg.coll, pm.OID, attrVersion)
	if err != nil {
		return storeErr(err)
	}
	if v := peering.VersionFrom(b); v.Seq != pm.Prev.Seq {
		return fmt.Errorf("%w: %s is at version %d, the repair is for %d", osdop.ErrRetry, pm.OID, v.Seq, pm.Prev.Seq)
	}
	var t objectstore.Transaction
	t.Write(pg.coll, pm.OID, pm.Off, pm.Obj.Data)
	return storeErr(pg.osd.store.Apply(&t))
}

func (pg *PG) handleECRepair(pm *peerMsg) error {
	if err := pg.checkMember(pm); err != nil {
		return err
	}
	if pm.Obj == nil {
		return fmt.Errorf("%w: repair without data", osdop.ErrInvalid)
	}
	return pg.repairLocal(pm)
}

// stash adds to t, before a write of e to an object that exists, the
// keeping of its current state for rollback, and marks e (an
// erasure-coded PG's write). The caller knows whether the object exists
// (the primary from the request's execution, a shard from a Stat before it
// takes the PG lock: the object's previous write committed before this one
// was prepared).
func (pg *PG) stash(t *objectstore.Transaction, e *LogEntry, exists bool, write *objectstore.Transaction) {
	if !exists {
		return
	}
	e.Stash = true
	if from, ok := write.AppendFrom(pg.coll, e.OID); ok {
		// appends keep only the metadata (rollback truncates)
		t.StashForRollback(pg.coll, e.OID, stashName(e.Ver.Seq), from)
		return
	}
	t.Clone(pg.coll, e.OID, stashName(e.Ver.Seq))
}

// rollForward drops the stashes of writes up to seq, which every shard
// holds (pg.mu is held).
func (pg *PG) rollForward(t *objectstore.Transaction, seq uint64) {
	if seq <= pg.log.info.RolledForward {
		return
	}
	for _, e := range pg.log.entries {
		if e.Stash && e.Ver.Seq > pg.log.info.RolledForward && e.Ver.Seq <= seq {
			t.Remove(pg.coll, stashName(e.Ver.Seq))
		}
	}
	pg.log.info.RolledForward = seq
}

// rollback undoes this copy's writes after v, newest first, from their
// stashes, and cuts the log back to v.
func (pg *PG) rollback(iv uint64, v Version) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.Interval.ID != iv {
		return fmt.Errorf("%w: interval changed", osdop.ErrRetry)
	}
	var t objectstore.Transaction
	entries := pg.log.entries
	i := len(entries)
	attrNames := map[string]map[string]bool{} // per object: every attribute it may hold at this point of t
	// the PG's object and byte counts follow the objects rolled back: from
	// their state now to the one before their oldest write undone
	var dObjects, dBytes int64
	rolledTo := map[string]undone{}
	for i > 0 && v.Less(entries[i-1].Ver) {
		e := entries[i-1]
		if e.Ver.Seq <= pg.log.info.RolledForward {
			return fmt.Errorf("pg %s: cannot roll back %s on osd.%d: it was on every shard (rolled forward to %d)", pg.id, e.Ver, pg.osd.id, pg.log.info.RolledForward)
		}
		if _, seen := rolledTo[e.OID]; !seen {
			if o, err := pg.loadECObject(e.OID); err == nil && o.Exists {
				dObjects, dBytes = dObjects-1, dBytes-int64(o.Size)
			}
		}
		before, err := pg.undo(&t, e, attrNames)
		if err != nil {
			return err
		}
		rolledTo[e.OID] = before // newest first: the last one stays
		i--
	}
	if i == len(entries) {
		return nil
	}
	for _, u := range rolledTo {
		if u.exists {
			dObjects, dBytes = dObjects+1, dBytes+int64(u.size)
		}
	}
	pg.osd.log.Info("rolling back writes no k shards hold", "pg", pg.id, "from", pg.log.info.LastUpdate, "to", v, "entries", len(entries)-i)
	info := pg.log.info
	info.LastUpdate = v
	info.Objects += dObjects
	info.Bytes += dBytes
	pg.log.replace(&t, pg.coll, info, entries[:i], pg.log.missingNames())
	if err := pg.osd.store.Apply(&t); err != nil {
		return fmt.Errorf("pg %s: rollback: %w", pg.id, storeErr(err))
	}
	pg.applied = v
	pg.notify()
	return nil
}

// undone is an object's state a rollback restores: whether it exists,
// and its logical size.
type undone struct {
	exists bool
	size   uint64
}

// undo adds to t what restores e.OID to its state before e, and returns
// that state: its stash (a clone, or for appends the metadata: truncate
// and restore attributes), or no object. attrNames collects the
// attribute names the object may have in t so far, so a metadata
// restore removes the ones set since.
func (pg *PG) undo(t *objectstore.Transaction, e LogEntry, attrNames map[string]map[string]bool) (undone, error) {
	st, stash := pg.osd.store, stashName(e.Ver.Seq)
	names := attrNames[e.OID]
	if names == nil {
		names = map[string]bool{}
		attrNames[e.OID] = names
		cur, _ := st.Attrs(pg.coll, e.OID) // none if it does not exist
		for k := range cur {
			names[k] = true
		}
	}
	if !e.Stash {
		t.Remove(pg.coll, e.OID)
		clear(names)
		return undone{}, nil
	}
	saved, err := st.Attrs(pg.coll, stash)
	if err != nil {
		return undone{}, fmt.Errorf("pg %s: rollback %s: stash of %s: %w", pg.id, e.Ver, e.OID, storeErr(err))
	}
	before := undone{exists: true}
	if b := saved[attrECSize]; len(b) == 8 {
		before.size = binary.LittleEndian.Uint64(b)
	}
	size, meta := saved[objectstore.StashMetaAttr]
	delete(saved, objectstore.StashMetaAttr)
	if !meta {
		t.Remove(pg.coll, e.OID)
		t.Clone(pg.coll, stash, e.OID)
	} else {
		if len(size) != 8 {
			return undone{}, fmt.Errorf("pg %s: rollback %s: stash of %s: bad size record", pg.id, e.Ver, e.OID)
		}
		t.Truncate(pg.coll, e.OID, binary.LittleEndian.Uint64(size))
		for k := range names {
			if _, ok := saved[k]; !ok {
				t.RmAttr(pg.coll, e.OID, k)
			}
		}
		for k, v := range saved {
			t.SetAttr(pg.coll, e.OID, k, v)
		}
	}
	clear(names)
	for k := range saved {
		names[k] = true
	}
	t.Remove(pg.coll, stash)
	return before, nil
}

func (pg *PG) handleECRollback(pm *peerMsg) error {
	if err := pg.checkWrite(pm); err != nil {
		return err
	}
	return pg.rollback(pm.Interval, pm.Prev)
}

// shardFill is a shard of an object to rebuild: the shard at position
// pos, on member m (an acting member, or a backfill target).
type shardFill struct {
	pos int
	m   memberInfo
}

// recoverObjectEC rebuilds the shards of oid that acting members and
// backfill targets lack (recoverObject of an erasure-coded PG): copied
// from the acting member holding the same shard when only targets lack
// it and that copy is current (a backfill under pg_temp), else decoded
// from k current ones. The caller holds the object's lock exclusively.
func (pg *PG) recoverObjectEC(ctx context.Context, r *recovery, iv uint64, oid string) error {
	d := pg.osd
	pg.mu.Lock()
	pool := pg.pool
	var fills []shardFill
	for i, m := range r.Shards {
		if m != nil && r.Lacks[m.ID][oid] {
			fills = append(fills, shardFill{i, *m})
		}
	}
	direct := len(fills) == 0
	for _, m := range r.Members {
		if pos, ok := r.TargetShards[m.ID]; ok && r.Lacks[m.ID][oid] {
			fills = append(fills, shardFill{pos, m})
			direct = direct && r.Shards[pos] != nil
		}
	}
	pg.mu.Unlock()
	if len(fills) == 0 {
		return nil
	}
	var mem recoveryMemory
	defer mem.release()
	copied := false
	if direct {
		var err error
		if copied, err = pg.copyShards(ctx, r, iv, oid, fills, &mem); err != nil {
			return err
		}
	}
	if !copied {
		cd, err := d.codec(ctx, pool)
		if err != nil {
			return err
		}
		// every shard is held at once while decoding
		size, err := pg.shardSize(ctx, iv, r.Shards, fills, oid)
		if err != nil {
			return err
		}
		if err := mem.hold(ctx, d, size*uint64(len(r.Shards))); err != nil {
			return err
		}
		if err := pg.recoverEC(ctx, cd, iv, r.sources(), oid, fills); err != nil {
			return err
		}
		d.perf.ecRebuilds.Add(1)
	}
	for _, f := range fills {
		pg.filled(r, f.m.ID, oid)
	}
	return nil
}

// sources are the members an erasure-coded PG's shards can be read from
// for recovery, by shard position: the acting members, then the backfill
// targets (they took every write of their shard since they joined).
func (r *recovery) sources() []shardFill {
	var srcs []shardFill
	for i, m := range r.Shards {
		if m != nil {
			srcs = append(srcs, shardFill{i, *m})
		}
	}
	for _, m := range r.Members {
		if pos, ok := r.TargetShards[m.ID]; ok {
			srcs = append(srcs, shardFill{pos, m})
		}
	}
	return srcs
}

// copyShards fills backfill targets with oid's shards copied from the
// acting members that hold the same shards (no acting member lacks the
// object), when those are at the version this OSD, the primary, holds:
// one shard read per shard written, no decoding. It reports false,
// having pushed nothing, when a source holds another version; the caller
// decodes then.
func (pg *PG) copyShards(ctx context.Context, r *recovery, iv uint64, oid string, fills []shardFill, mem *recoveryMemory) (bool, error) {
	d := pg.osd
	want := &objState{}
	size := uint64(0)
	if st, err := d.store.Stat(pg.coll, oid); err == nil {
		b, err := d.store.GetAttr(pg.coll, oid, attrVersion)
		if err != nil {
			return false, nil
		}
		want.Exists, size = true, st.Size
		want.Attrs = []omap.KV{{Key: attrVersion, Value: b}}
	} else if !errors.Is(err, objectstore.ErrNotFound) {
		return false, fmt.Errorf("pg %s: backfill %s: %w", pg.id, oid, storeErr(err))
	}
	if err := mem.hold(ctx, d, size*uint64(len(fills))); err != nil {
		return false, err
	}
	objs := make([]*objState, len(fills))
	for i, f := range fills {
		if !want.Exists {
			objs[i] = want // deleted: nothing to read
			continue
		}
		src := r.Shards[f.pos]
		obj, err := pg.pull(ctx, iv, *src, oid)
		if err != nil {
			return false, err
		}
		ver := slices.IndexFunc(obj.Attrs, func(a omap.KV) bool { return a.Key == attrVersion })
		if !obj.Exists || ver < 0 || !bytes.Equal(obj.Attrs[ver].Value, want.Attrs[0].Value) {
			d.log.Warn("backfill source holds another version of the object; decoding", "pg", pg.id, "object", oid, "shard", f.pos, "osd", src.ID)
			return false, nil
		}
		objs[i] = obj
	}
	for i, f := range fills {
		if err := pg.push(ctx, iv, f.m, oid, objs[i]); err != nil {
			return false, err
		}
	}
	d.perf.ecShardCopies.Add(uint64(len(fills)))
	return true, nil
}

// shardSize is the size of oid's shard on an acting member not being
// filled: this OSD's if it has one, else the first that answers.
func (pg *PG) shardSize(ctx context.Context, iv uint64, shards []*memberInfo, fills []shardFill, oid string) (uint64, error) {
	var err error
	for _, m := range shards {
		if m == nil || filling(fills, m.ID) {
			continue
		}
		if m.ID == pg.osd.id {
			st, serr := pg.osd.store.Stat(pg.coll, oid)
			if serr != nil {
				return 0, nil // absent here: nothing to hold
			}
			return st.Size, nil
		}
		var obj *objState
		var size uint64
		if obj, size, err = pg.pullUpTo(ctx, iv, *m, oid, 1); err == nil {
			if obj != nil {
				return uint64(len(obj.Data)), nil
			}
			return size, nil
		}
	}
	return 0, err
}

// filling reports whether member o is one of the fills.
func filling(fills []shardFill, o int32) bool {
	return slices.ContainsFunc(fills, func(f shardFill) bool { return f.m.ID == o })
}

// recoverEC rebuilds an object's shards fills from k of the shards srcs
// (members by shard position: the acting members, and backfill targets
// that hold their shard; members being filled are not read) — read
// until k positions agree on the object's version (or on its absence) —
// or removes it from them if the others no longer hold it.
func (pg *PG) recoverEC(ctx context.Context, cd *ec.Codec, iv uint64, srcs []shardFill, oid string, fills []shardFill) error {
	d := pg.osd
	p := cd.Profile()
	// sources by (exists, version): the first group to reach k positions wins
	type key struct {
		exists bool
		ver    uint64
	}
	groups := map[key][][]byte{}
	answered := 0
	for _, src := range srcs {
		if filling(fills, src.m.ID) {
			continue
		}
		obj, err := pg.pull(ctx, iv, src.m, oid)
		if err != nil {
			d.log.Warn("recovery source failed", "pg", pg.id, "object", oid, "shard", src.pos, "osd", src.m.ID, "err", err)
			continue
		}
		answered++
		k := key{exists: obj.Exists}
		for _, a := range obj.Attrs {
			if a.Key == attrVersion {
				k.ver = peering.VersionFrom(a.Value).Seq
			}
		}
		shards := groups[k]
		if shards == nil {
			shards = make([][]byte, p.K+p.M)
		}
		if shards[src.pos] != nil {
			continue // this position answered already (an acting member and its target)
		}
		shards[src.pos] = obj.Data
		if obj.Data == nil {
			shards[src.pos] = []byte{}
		}
		groups[k] = shards
		n := 0
		for _, b := range shards {
			if b != nil {
				n++
			}
		}
		if n < p.K {
			continue
		}
		out := &objState{Exists: k.exists, Attrs: obj.Attrs}
		if k.exists && len(obj.Data) > 0 { // an empty object has empty shards
			if err := cd.Reconstruct(shards); err != nil {
				return fmt.Errorf("pg %s: rebuild %s: %w", pg.id, oid, err)
			}
		}
		for _, f := range fills {
			o := *out
			if k.exists {
				o.Data = shards[f.pos]
			}
			if err := pg.push(ctx, iv, f.m, oid, &o); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: pg %s: object %s is %w: %d shards answered, no k=%d of them agree on its version", osdop.ErrRetry, pg.id, oid, errUnfound, answered, p.K)
}
