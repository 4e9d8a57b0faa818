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
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

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
