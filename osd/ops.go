package osd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/cls"
	_ "github.com/shoal-project/shoal/cls/rgw" // the bucket index methods every OSD serves
	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdop"
)

// prepared is a write request turned into a transaction.
type prepared struct {
	t           *objectstore.Transaction   // replicated: every copy's
	shards      []*objectstore.Transaction // erasure-coded: each shard's, by position
	results     []osdop.Result
	existed     bool // the object existed before the request
	existsAfter bool
	dObjects    int64
	dBytes      int64
}

// object is the state of the request's object before it, read lazily.
type object struct {
	pg      *PG
	oid     string
	exists  bool
	size    uint64
	version uint64
}

func (pg *PG) loadObject(oid string) (*object, error) {
	o := &object{pg: pg, oid: oid}
	st, err := pg.osd.store.Stat(pg.coll, oid)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return o, nil
	case err != nil:
		return nil, storeErr(err)
	}
	o.exists, o.size = true, st.Size
	if b, err := pg.osd.store.GetAttr(pg.coll, oid, attrVersion); err == nil {
		o.version = peering.VersionFrom(b).Seq
	}
	return o, nil
}

// prepare executes a write request's ops against the object's current
// state (the object lock is held) and builds the transaction.
func (pg *PG) prepare(req *osdop.Request) (*prepared, error) {
	o, err := pg.loadObject(req.OID)
	if err != nil {
		return nil, err
	}
	t := &objectstore.Transaction{}
	c, oid := pg.coll, req.OID
	exists, size := o.exists, o.size
	x := &prepared{t: t, results: make([]osdop.Result, len(req.Ops))}
	maxSize := pg.osd.conf().Size("osd_max_object_size")
	for i := range req.Ops {
		op := &req.Ops[i]
		fail := func(err error) (*prepared, error) {
			return nil, fmt.Errorf("%w (op %d %s on %s)", err, i, op.Code, oid)
		}
		end := op.Off + uint64(len(op.Data))
		switch op.Code {
		case osdop.WriteFull:
			t.Truncate(c, oid, 0)
			t.WriteSums(c, oid, 0, op.Data, op.DataSums)
			size = uint64(len(op.Data))
		case osdop.Write:
			if end < op.Off {
				return fail(osdop.ErrInvalid)
			}
			t.WriteSums(c, oid, op.Off, op.Data, op.DataSums)
			size = max(size, end)
		case osdop.Append:
			t.WriteSums(c, oid, size, op.Data, op.DataSums)
			size += uint64(len(op.Data))
		case osdop.Truncate:
			t.Truncate(c, oid, op.Off)
			size = op.Off
		case osdop.Zero:
			if op.Off < size {
				t.Zero(c, oid, op.Off, min(op.Len, size-op.Off))
			} else if !exists {
				t.Touch(c, oid)
			}
		case osdop.Remove:
			if !exists {
				return fail(osdop.ErrNotFound)
			}
			t.Remove(c, oid)
			exists, size = false, 0
			continue
		case osdop.Create:
			if exists && op.Exclusive {
				return fail(osdop.ErrExists)
			}
			t.Touch(c, oid)
		case osdop.SetXattr:
			if op.Name == "" {
				return fail(fmt.Errorf("%w: empty xattr name", osdop.ErrInvalid))
			}
			t.SetAttr(c, oid, userAttr+op.Name, op.Data)
		case osdop.RmXattr:
			if _, err := pg.osd.store.GetAttr(c, oid, userAttr+op.Name); err != nil || !exists {
				return fail(fmt.Errorf("%w: %q", osdop.ErrNoData, op.Name))
			}
			t.RmAttr(c, oid, userAttr+op.Name)
		case osdop.OmapSet:
			t.OmapSet(c, oid, op.KVs)
		case osdop.OmapRm:
			if !exists {
				return fail(osdop.ErrNotFound)
			}
			t.OmapRm(c, oid, op.Keys)
		case osdop.OmapClear:
			if !exists {
				return fail(osdop.ErrNotFound)
			}
			t.OmapClear(c, oid)
		case osdop.AssertVersion:
			if err := assertVersion(exists, o.version, op.Ver); err != nil {
				return fail(err)
			}
			continue
		case osdop.Call:
			m, ok := cls.Lookup(op.Name)
			if !ok {
				return fail(fmt.Errorf("%w: no object class method %q", osdop.ErrUnsupported, op.Name))
			}
			co := &clsObject{pg: pg, o: o, t: t}
			out, err := m(co, op.Data)
			if err != nil {
				switch {
				case errors.Is(err, cls.ErrNotFound):
					err = fmt.Errorf("%w: %v", osdop.ErrNotFound, err)
				case errors.Is(err, cls.ErrExists):
					err = fmt.Errorf("%w: %v", osdop.ErrExists, err)
				case errors.Is(err, cls.ErrInvalid):
					err = fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
				}
				return fail(err)
			}
			x.results[i].Data = out
			if co.removed {
				exists, size = false, 0
			}
			if co.wrote {
				exists = true
				if co.size >= 0 {
					size = uint64(co.size)
				}
			}
			if !co.wrote && !co.removed {
				continue
			}
		default: // a read inside a write request sees the state before it
			r, err := pg.readOp(o, op)
			if err != nil {
				if !failOK(op, err) {
					return fail(err)
				}
				r = osdop.Result{}
			}
			x.results[i] = r
			continue
		}
		if op.Code != osdop.Call {
			exists = true
		}
		if size > maxSize {
			return fail(fmt.Errorf("%w: %d bytes (osd_max_object_size %d)", osdop.ErrTooLarge, size, maxSize))
		}
	}
	x.existsAfter = exists
	switch {
	case exists && !o.exists:
		x.dObjects = 1
	case !exists && o.exists:
		x.dObjects = -1
	}
	x.dBytes = int64(size) - int64(o.size)
	if !exists && !o.exists {
		return nil, fmt.Errorf("%w: %s", osdop.ErrNotFound, oid)
	}
	return x, nil
}

// failOK reports whether a read op's failure leaves its result empty
// instead of failing the request: the op asked for it (osdop.Op.FailOK)
// and the object or the attribute is absent. Other errors — a corrupt
// copy, an unfound object, a retry — still fail the request.
func failOK(op *osdop.Op, err error) bool {
	return op.FailOK && (errors.Is(err, osdop.ErrNotFound) || errors.Is(err, osdop.ErrNoData))
}

// assertVersion is the assert-version op: the object exists at version
// want (ErrNotFound, ErrVerOlder, ErrVerNewer otherwise).
func assertVersion(exists bool, have, want uint64) error {
	switch {
	case !exists:
		return osdop.ErrNotFound
	case have < want:
		return fmt.Errorf("%w: %d < %d", osdop.ErrVerOlder, have, want)
	case have > want:
		return fmt.Errorf("%w: %d > %d", osdop.ErrVerNewer, have, want)
	}
	return nil
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
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	rep = &osdop.Reply{Ver: o.version, Results: make([]osdop.Result, len(req.Ops))}
	for i := range req.Ops {
		if op := &req.Ops[i]; op.Code == osdop.Read && o.exists {
			// into a pooled buffer, returned once the reply is written
			parts, sums, rel, err := pg.readData(o, op)
			if err != nil {
				release()
				return nil, nil, fmt.Errorf("%w (op %d %s on %s)", err, i, op.Code, req.OID)
			}
			releases = append(releases, rel)
			rep.Results[i].Vec, rep.Results[i].VecSums = parts, sums
			continue
		}
		r, err := pg.readOp(o, &req.Ops[i])
		if err != nil {
			if !failOK(&req.Ops[i], err) {
				release()
				return nil, nil, fmt.Errorf("%w (op %d %s on %s)", err, i, req.Ops[i].Code, req.OID)
			}
			r = osdop.Result{}
		}
		rep.Results[i] = r
	}
	return rep, release, nil
}

// readData is a Read op of an existing object (as readOp reads it) as
// the store's parts — its cache's buffers, not copies — with their
// checksums where the store knows them and the function that gives the
// parts back once the reply is written.
func (pg *PG) readData(o *object, op *osdop.Op) ([][]byte, []crc32c.Sum, func(), error) {
	if op.Off >= o.size {
		return [][]byte{}, nil, func() {}, nil
	}
	n := op.Len
	if n == 0 || n > o.size-op.Off {
		n = o.size - op.Off
	}
	parts, sums, release, err := pg.osd.store.ReadVec(pg.coll, o.oid, op.Off, n)
	if err != nil {
		return nil, nil, nil, storeErr(err)
	}
	return parts, sums, release, nil
}

func (pg *PG) readOp(o *object, op *osdop.Op) (osdop.Result, error) {
	s, c := pg.osd.store, pg.coll
	var r osdop.Result
	if !o.exists {
		return r, osdop.ErrNotFound
	}
	var err error
	switch op.Code {
	case osdop.Read:
		if op.Off >= o.size {
			return r, nil
		}
		n := op.Len
		if n == 0 || n > o.size-op.Off {
			n = o.size - op.Off
		}
		r.Data, err = s.Read(c, o.oid, op.Off, n)
	case osdop.Stat:
		r.Size, r.Ver = o.size, o.version
		if b, err := s.GetAttr(c, o.oid, attrMtime); err == nil && len(b) == 8 {
			r.Mtime = int64(binary.LittleEndian.Uint64(b))
		}
	case osdop.GetXattr:
		r.Data, err = s.GetAttr(c, o.oid, userAttr+op.Name)
		if errors.Is(err, objectstore.ErrNotFound) {
			return r, fmt.Errorf("%w: %q", osdop.ErrNoData, op.Name)
		}
	case osdop.GetXattrs:
		var attrs map[string][]byte
		attrs, err = s.Attrs(c, o.oid)
		for k, v := range attrs {
			if name, ok := strings.CutPrefix(k, userAttr); ok {
				r.KVs = append(r.KVs, omap.KV{Key: name, Value: v})
			}
		}
		slices.SortFunc(r.KVs, func(a, b omap.KV) int { return strings.Compare(a.Key, b.Key) })
	case osdop.OmapGet:
		var kv map[string][]byte
		kv, err = s.OmapGet(c, o.oid, op.Keys)
		for _, k := range op.Keys {
			if v, ok := kv[k]; ok {
				r.KVs = append(r.KVs, omap.KV{Key: k, Value: v})
			}
		}
	case osdop.OmapList:
		max := int(op.Max)
		if max <= 0 || max > 100000 {
			max = 100000
		}
		r.KVs, r.More, err = s.OmapList(c, o.oid, op.Name, op.Prefix, max)
	default:
		return r, fmt.Errorf("%w: op %s", osdop.ErrInvalid, op.Code)
	}
	if err != nil {
		return r, storeErr(err)
	}
	return r, nil
}

// clsObject is an object-class method's view of the request's object.
type clsObject struct {
	pg      *PG
	o       *object
	t       *objectstore.Transaction
	wrote   bool
	removed bool
	size    int64 // -1: unknown change
}

func (c *clsObject) Exists() bool { return c.o.exists }
func (c *clsObject) Size() uint64 { return c.o.size }
func (c *clsObject) Read(off, n uint64) ([]byte, error) {
	r, err := c.pg.readOp(c.o, &osdop.Op{Code: osdop.Read, Off: off, Len: n})
	return r.Data, err
}
func (c *clsObject) GetXattr(name string) ([]byte, error) {
	r, err := c.pg.readOp(c.o, &osdop.Op{Code: osdop.GetXattr, Name: name})
	return r.Data, err
}
func (c *clsObject) OmapGet(keys []string) (map[string][]byte, error) {
	if !c.o.exists {
		return map[string][]byte{}, nil
	}
	return c.pg.osd.store.OmapGet(c.pg.coll, c.o.oid, keys)
}
func (c *clsObject) OmapList(after, prefix string, max int) ([]omap.KV, bool, error) {
	if !c.o.exists {
		return nil, false, nil
	}
	return c.pg.osd.store.OmapList(c.pg.coll, c.o.oid, after, prefix, max)
}
func (c *clsObject) Write(off uint64, data []byte) {
	c.t.Write(c.pg.coll, c.o.oid, off, data)
	c.wrote, c.size = true, int64(max(c.o.size, off+uint64(len(data))))
}
func (c *clsObject) WriteFull(data []byte) {
	c.t.WriteFull(c.pg.coll, c.o.oid, data)
	c.wrote, c.size = true, int64(len(data))
}
func (c *clsObject) SetXattr(name string, v []byte) {
	c.t.SetAttr(c.pg.coll, c.o.oid, userAttr+name, v)
	c.mark()
}
func (c *clsObject) OmapSet(kvs []omap.KV) {
	c.t.OmapSet(c.pg.coll, c.o.oid, kvs)
	c.mark()
}
func (c *clsObject) OmapRm(keys []string) {
	c.t.OmapRm(c.pg.coll, c.o.oid, keys)
	c.mark()
}
func (c *clsObject) Remove() {
	if c.o.exists {
		c.t.Remove(c.pg.coll, c.o.oid)
	}
	c.removed, c.wrote = true, false
}

func (c *clsObject) mark() {
	if !c.wrote {
		c.wrote, c.size = true, int64(c.o.size)
	}
}
