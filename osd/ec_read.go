package osd

// Erasure-coded reads: the data shards a range covers are read and, past
// a missing or bad shard, the range is decoded from any k; a shard that
// failed its checksum is rewritten (repair on read).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/internal/bufpool"
	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// readEC serves a read request on an erasure-coded PG. The data of its
// Read ops lies in the shards' buffers: release gives them back once the
// reply is sent.
func (pg *PG) readEC(ctx context.Context, cd *ec.Codec, req *osdop.Request) (rep *osdop.Reply, release func(), err error) {
	iv, err := pg.waitReadable(ctx)
	if err != nil {
		return nil, noRelease, err
	}
	rep, release, err = pg.readECLocked(ctx, cd, req)
	if lerr := pg.stillReadable(iv); lerr != nil { // its outcome, found or not, needs the lease
		release()
		return nil, noRelease, lerr
	}
	return rep, release, err
}

// readECLocked is readEC's work once the PG is readable.
func (pg *PG) readECLocked(ctx context.Context, cd *ec.Codec, req *osdop.Request) (rep *osdop.Reply, release func(), err error) {
	if err := pg.recoverForRead(ctx, req.OID); err != nil {
		return nil, noRelease, err
	}
	// a write holds the object until every shard committed: under the
	// lock, all shards agree
	unlock := pg.lockObject(req.OID)
	defer unlock()
	if err := pg.checkNotMissing(req.OID, osdop.ErrRetry); err != nil {
		return nil, noRelease, err
	}
	o, err := pg.loadECObject(req.OID)
	if err != nil {
		return nil, noRelease, err
	}
	if req.Snap != 0 { // the head or the clone that holds the snap
		at, err := o.AtSnap(req.Snap)
		if err != nil {
			return nil, noRelease, err
		}
		if at != o {
			if o, err = pg.loadECObject(at.OID); err != nil {
				return nil, noRelease, err
			}
		}
	}
	var held releases
	rep = &osdop.Reply{Ver: o.Version, Results: make([]osdop.Result, len(req.Ops))}
	for i := range req.Ops {
		r, rel, err := pg.readOpEC(ctx, cd, o, &req.Ops[i])
		held = append(held, rel)
		if err != nil {
			if !opexec.FailOK(&req.Ops[i], err) {
				held.release()
				return nil, noRelease, fmt.Errorf("%w (op %d %s on %s)", err, i, req.Ops[i].Code, req.OID)
			}
			r = osdop.Result{}
		}
		rep.Results[i] = r
	}
	return rep, held.release, nil
}

func (pg *PG) readOpEC(ctx context.Context, cd *ec.Codec, o *object, op *osdop.Op) (osdop.Result, func(), error) {
	switch op.Code {
	case osdop.Read:
		if !o.Exists {
			return osdop.Result{}, noRelease, osdop.ErrNotFound
		}
		if op.Off >= o.Size {
			return osdop.Result{}, noRelease, nil
		}
		n := op.Len
		if n == 0 || n > o.Size-op.Off {
			n = o.Size - op.Off
		}
		parts, release, err := pg.readRange(ctx, cd, o, op.Off, n)
		if err != nil {
			return osdop.Result{}, noRelease, err
		}
		return osdop.Result{Vec: parts}, release, nil
	case osdop.OmapGet, osdop.OmapList, osdop.CallRead:
		return osdop.Result{}, noRelease, fmt.Errorf("%w: %s on an erasure-coded pool", osdop.ErrUnsupported, op.Code)
	}
	r, err := pg.readOp(o, op) // stat and xattrs: every shard holds them
	return r, noRelease, err
}

// readRange reads logical bytes [off, off+n) of an object (within its
// size): the data shards the range covers, then, if any fails, others
// until k have answered, decoding the missing ones. The data is parts,
// in order, that lie in the shards' buffers — a stripe unit each at most,
// not copied into one buffer (a client's reply is written from them);
// release (never nil) gives the buffers back once the parts are done
// with.
func (pg *PG) readRange(ctx context.Context, cd *ec.Codec, o *object, off, n uint64) (parts [][]byte, release func(), err error) {
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
	held := make(releases, k+p.M) // by shard: the buffers each lies in
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
				shards[i], held[i], errs[i] = pg.readShard(ctx, acting[i], addrs[i], iv, o, sOff, sLen)
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
			held.release()
			return nil, noRelease, fmt.Errorf("%w: pg %s object %s: cannot decode (%s): %v", kind, pg.id, o.OID, strings.Join(failed, "; "), err)
		}
		pg.osd.perf.ecReconstruct.Add(1)
		if corrupt {
			pg.repairShards(ctx, acting, addrs, iv, o, sOff, shards, errs)
		}
	}
	parts = make([][]byte, 0, (n+u-1)/u+1)
	for pos := off; pos < off+n; {
		s, in := pos/w, pos%w
		j, c := in/u, in%u
		part := shards[j][(s-s0)*u+c : (s-s0+1)*u]
		part = part[:min(uint64(len(part)), off+n-pos):min(uint64(len(part)), off+n-pos)]
		parts = append(parts, part)
		pos += uint64(len(part))
	}
	return parts, held.release, nil
}

// readShard reads [off, off+n) of an object's shard on osd (this one or
// another) and checks that it holds the expected version. A remote
// shard is read in place in the reply's receive buffer: the caller calls
// release (never nil) once done with the data.
func (pg *PG) readShard(ctx context.Context, osd int32, addr string, iv uint64, o *object, off, n uint64) (data []byte, release func(), err error) {
	d := pg.osd
	var ver Version
	release = noRelease
	if osd == d.id {
		var parts [][]byte
		if parts, _, release, ver, err = pg.readLocalShard(o.OID, off, n); err != nil {
			return nil, noRelease, err
		}
		data, release = flatten(parts, release)
	} else {
		rep, err := d.callRef(ctx, osd, addr, msgECRead, (&peerMsg{PG: pg.id, Interval: iv, OID: o.OID, Off: off, Len: n}).encode())
		if err != nil {
			return nil, noRelease, err
		}
		pm, err := decodePeerMsg(rep.Payload)
		switch {
		case err != nil:
			rep.Release()
			return nil, noRelease, fmt.Errorf("osd.%d: %w", osd, err)
		case pm.Obj == nil:
			rep.Release()
			return nil, noRelease, fmt.Errorf("osd.%d: %w", osd, osdop.ErrNotFound)
		}
		data, ver, release = pm.Obj.Data, pm.Prev, rep.Release
	}
	if ver.Seq != o.Version {
		release()
		return nil, noRelease, fmt.Errorf("osd.%d holds version %d, not %d", osd, ver.Seq, o.Version)
	}
	if uint64(len(data)) < n { // past the shard's end: padding, in a buffer of its own
		padded := make([]byte, n)
		copy(padded, data)
		release()
		data, release = padded, noRelease
	}
	return data, release, nil
}

func noRelease() {}

// readLocalShard reads [off, off+n) of this OSD's shard of an object
// as the store's parts (its read buffers and cached blocks, not copies;
// see objectstore.ReadVec), with their checksums and its version;
// release gives the parts back.
func (pg *PG) readLocalShard(oid string, off, n uint64) (parts [][]byte, sums []crc32c.Sum, release func(), ver Version, err error) {
	s := pg.osd.store
	b, err := s.GetAttr(pg.coll, oid, attrVersion)
	if err != nil {
		return nil, nil, noRelease, Version{}, storeErr(err)
	}
	parts, sums, release, err = s.ReadVec(pg.coll, oid, off, n)
	if err != nil {
		return nil, nil, noRelease, Version{}, storeErr(err)
	}
	return parts, sums, release, peering.VersionFrom(b), nil
}

// flatten is parts as one slice: the part itself if there is one, or a
// pooled buffer they are copied into; release gives back what the
// result lies in (the parts' release is called).
func flatten(parts [][]byte, release func()) ([]byte, func()) {
	switch len(parts) {
	case 0:
		release()
		return nil, noRelease
	case 1:
		return parts[0], release
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	buf := bufpool.Get(n)
	at := buf
	for _, p := range parts {
		at = at[copy(at, p):]
	}
	release()
	return buf, func() { bufpool.Put(buf) }
}

// handleECRead serves a primary's read of this OSD's shard: the reply
// is m's, written from the store's read buffers (ReadVec) without a copy
// into the message, its checksum combined from the stored block ones.
func (pg *PG) handleECRead(pm *peerMsg, m *msgr.Message) error {
	if err := pg.checkMember(pm); err != nil {
		return err
	}
	head := pm.OID
	if h, ok := opexec.CloneHead(head); ok { // a clone is recovered with its head
		head = h
	}
	if err := pg.checkNotMissing(head, osdop.ErrUnreadable); err != nil { // not ErrRetry, which is for a changed interval
		return err
	}
	parts, sums, release, ver, err := pg.readLocalShard(pm.OID, pm.Off, pm.Len)
	if err != nil {
		return err
	}
	e := wire.NewVecEncoder(vecPartMin)
	(&peerMsg{PG: pg.id, Prev: ver, Obj: &objState{Exists: true, DataVec: parts}}).encodeTo(e)
	out := e.Parts()
	m.ReplyVecThen(out, e.PartSums(out, parts, sums), release)
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
