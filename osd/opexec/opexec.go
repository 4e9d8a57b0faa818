// Package opexec executes an op request (osdop.Request) against one
// object of a local store: the semantics of every op a client can send —
// writes, reads, attributes, omap, version assertions and object-class
// method calls (cls) — turned into one objectstore.Transaction, or read
// from the object as it stands (Ceph: PrimaryLogPG::do_osd_ops). The OSD
// runs it on a replicated PG's primary under the object's lock; an
// in-memory RADOS for tests of the layers above runs the same code
// (internal/memrados), so both give the same answers.
//
// It does no locking, versioning or replication: the caller holds the
// object's lock from Load until its transaction applies — or, for a
// blind request (Blind), prepares it against the state the write before
// it leaves (Prepared.After) while that one is still in flight — stamps
// the version (AttrVersion) and modification time (AttrMtime), and
// applies or replicates the transaction.
package opexec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdop"
)

// Internal attributes of client objects; client xattrs are stored as
// UserAttr + name so the two never collide.
const (
	AttrVersion = "s.v" // the write's version (peering.Version.Bytes)
	AttrMtime   = "s.m" // the write's time: Unix nanoseconds, little-endian
	UserAttr    = "u."
)

// Object is the state of a request's object before the request.
type Object struct {
	Store   objectstore.Store // the store holding it
	Coll    objectstore.Coll  // its collection (a PG's, or a pool's)
	OID     string            // its name
	Exists  bool              // false: absent (Size and Version 0)
	Size    uint64            // logical size in bytes
	Version uint64            // the seq of the write that made it (AttrVersion)
	// SnapSet and Whiteout are its snapshot state, once LoadSnapSet
	// loaded it (snaps.go): its clones (nil: none), and whether the head
	// is a removed object's whiteout (Exists is then false).
	SnapSet  *osdop.SnapSet
	Whiteout bool
	// Caller is the client instance that sent the request, for object
	// classes (cls.Object.Caller): set by the caller of Prepare.
	Caller string
}

// Load reads the state of oid in collection c of s (absent: Exists false).
func Load(s objectstore.Store, c objectstore.Coll, oid string) (*Object, error) {
	o := &Object{Store: s, Coll: c, OID: oid}
	st, err := s.Stat(c, oid)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return o, nil
	case err != nil:
		return nil, StoreErr(err)
	}
	o.Exists, o.Size = true, st.Size
	if b, err := s.GetAttr(c, oid, AttrVersion); err == nil {
		o.Version = peering.VersionFrom(b).Seq
	}
	return o, nil
}

// CheckName refuses an object name no client may use: empty or starting
// with a NUL byte (the names of a copy's internal objects, see
// peering.IsInternal: osdop.ErrInvalid), or longer than max bytes
// (osd_max_object_name_len: osdop.ErrNameTooLong).
func CheckName(oid string, max int) error {
	if len(oid) > max {
		return fmt.Errorf("%w: %d bytes (max %d)", osdop.ErrNameTooLong, len(oid), max)
	}
	if oid == "" || peering.IsInternal(oid) {
		return fmt.Errorf("%w: object name %q: empty or starting with a NUL byte", osdop.ErrInvalid, oid)
	}
	return nil
}

// Stamp adds to t what every write leaves on an object that exists after
// it: the write's version (AttrVersion: v.Bytes) and its time (AttrMtime:
// Unix nanoseconds, 8 bytes little-endian, which Stat returns as Mtime).
func Stamp(t *objectstore.Transaction, c objectstore.Coll, oid string, v peering.Version, now time.Time) {
	t.SetAttr(c, oid, AttrVersion, v.Bytes())
	t.SetAttr(c, oid, AttrMtime, binary.LittleEndian.AppendUint64(nil, uint64(now.UnixNano())))
}

// Prepared is a write request turned into a transaction.
type Prepared struct {
	T           *objectstore.Transaction // every change the request makes, in op order
	Results     []osdop.Result           // by op: the outputs of reads and method calls
	Existed     bool                     // the object existed before the request
	ExistsAfter bool                     // and after it (false: the request removed it)
	DObjects    int64                    // the change in the PG's object count (-1, 0, 1)
	DBytes      int64                    // the change in the object's size
	// Whiteout: the head does not exist after the request but stays in
	// the store as a whiteout, for its clones (snaps.go).
	Whiteout bool
	// Size and SnapSet are the object's size in bytes and SnapSet after
	// the request (After).
	Size    uint64
	SnapSet *osdop.SnapSet
}

// After is the object's state once x applies, as Load and LoadSnapSet
// would find it, given the version v the caller stamps (Stamp); the
// caller fills in Store, Coll and OID. A caller that keeps several writes
// to one object in flight prepares the next against it (Blind).
func (x *Prepared) After(v uint64) Object {
	a := Object{Exists: x.ExistsAfter, Whiteout: x.Whiteout}
	if a.Exists {
		a.Size, a.Version = x.Size, v
	}
	if a.Exists || a.Whiteout {
		a.SnapSet = x.SnapSet
	}
	return a
}

// Blind reports whether a write request of ops reads nothing of its
// object but the Object fields Prepare is given (existence, size,
// version and snapshot state): no data, attribute or omap read, no
// object-class method. Such a request may be prepared against the state
// a write still in flight leaves (Prepared.After) instead of the store's.
func Blind(ops []osdop.Op) bool {
	for i := range ops {
		switch ops[i].Code {
		case osdop.Write, osdop.WriteFull, osdop.Append, osdop.Truncate, osdop.Zero,
			osdop.Create, osdop.Remove, osdop.SetXattr, osdop.OmapSet, osdop.OmapRm,
			osdop.OmapClear, osdop.AssertVersion:
		default:
			return false
		}
	}
	return len(ops) > 0
}

// Prepare executes a write request's ops against the state of its object
// o (the caller holds the object's lock, so that the state is still o's
// when the transaction applies) and builds the transaction; maxSize is
// osd_max_object_size in bytes. Nothing is applied, and the version and
// time are not stamped (Stamp). snapc is the write's SnapContext (zero
// without snapshots); o's SnapSet must be loaded (LoadSnapSet) in a pool
// with snapshots. Errors are osdop's, wrapped with the op that failed.
func Prepare(o *Object, ops []osdop.Op, maxSize uint64, snapc SnapContext) (*Prepared, error) {
	if len(ops) == 1 && ops[0].Code == osdop.TrimSnaps {
		return trimSnaps(o, ops[0].Data)
	}
	t := &objectstore.Transaction{}
	c, oid := o.Coll, o.OID
	exists, size := o.Exists, o.Size
	x := &Prepared{T: t, Results: make([]osdop.Result, len(ops)), Existed: o.Exists}
	ss := MakeWriteable(o, t, snapc)
	written := func(off, n uint64) { // the head's bytes [off, off+n) change
		if ss != nil {
			ss.Written(off, n)
		}
	}
	const all = ^uint64(0)
	for i := range ops {
		op := &ops[i]
		fail := func(err error) (*Prepared, error) {
			return nil, fmt.Errorf("%w (op %d %s on %s)", err, i, op.Code, oid)
		}
		end := op.Off + uint64(len(op.Data))
		switch op.Code {
		case osdop.WriteFull:
			t.Truncate(c, oid, 0)
			t.WriteSums(c, oid, 0, op.Data, op.DataSums)
			size = uint64(len(op.Data))
			written(0, all)
		case osdop.Write:
			if end < op.Off {
				return fail(osdop.ErrInvalid)
			}
			t.WriteSums(c, oid, op.Off, op.Data, op.DataSums)
			size = max(size, end)
			written(op.Off, uint64(len(op.Data)))
		case osdop.Append:
			t.WriteSums(c, oid, size, op.Data, op.DataSums)
			written(size, uint64(len(op.Data)))
			size += uint64(len(op.Data))
		case osdop.Truncate:
			t.Truncate(c, oid, op.Off)
			written(min(op.Off, size), all)
			size = op.Off
		case osdop.Zero:
			if op.Off < size {
				t.Zero(c, oid, op.Off, min(op.Len, size-op.Off))
				written(op.Off, op.Len)
			} else if !exists {
				t.Touch(c, oid)
			}
		case osdop.Remove:
			if !exists {
				return fail(osdop.ErrNotFound)
			}
			t.Remove(c, oid)
			exists, size = false, 0
			written(0, all)
			continue
		case osdop.Watch, osdop.Unwatch, osdop.WatchExpire:
			if !exists {
				return fail(osdop.ErrNotFound)
			}
			if err := watchOp(o, t, op); err != nil {
				return fail(err)
			}
			continue
		case osdop.Rollback:
			if op.Ver == 0 {
				return fail(fmt.Errorf("%w: rollback to snap 0", osdop.ErrInvalid))
			}
			clone, head := RollbackTarget(ss, op.Ver)
			switch {
			case head:
				continue
			case clone == nil: // the object did not exist at the snap
				if exists {
					t.Remove(c, oid)
				}
				exists, size = false, 0
				written(0, all)
				continue
			}
			t.Clone(c, CloneOID(oid, clone.ID), oid) // data, attributes and omap
			if exists {                              // the head's watchers stay
				if b, err := o.Store.GetAttr(c, oid, AttrWatchers); err == nil {
					t.SetAttr(c, oid, AttrWatchers, b)
				}
			}
			size = clone.Size
			written(0, all)
		case osdop.Create:
			if exists && op.Exclusive {
				return fail(osdop.ErrExists)
			}
			t.Touch(c, oid)
		case osdop.SetXattr:
			if op.Name == "" {
				return fail(fmt.Errorf("%w: empty xattr name", osdop.ErrInvalid))
			}
			t.SetAttr(c, oid, UserAttr+op.Name, op.Data)
		case osdop.RmXattr:
			if _, err := o.Store.GetAttr(c, oid, UserAttr+op.Name); err != nil || !exists {
				return fail(fmt.Errorf("%w: %q", osdop.ErrNoData, op.Name))
			}
			t.RmAttr(c, oid, UserAttr+op.Name)
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
			if err := AssertVersion(exists, o.Version, op.Ver); err != nil {
				return fail(err)
			}
			continue
		case osdop.Call:
			m, ok := cls.Lookup(op.Name)
			if !ok {
				return fail(fmt.Errorf("%w: no object class method %q", osdop.ErrUnsupported, op.Name))
			}
			co := &clsObject{o: o, t: t}
			out, err := m(co, op.Data)
			if err != nil {
				return fail(clsErr(err))
			}
			x.Results[i].Data = out
			if co.removed || co.dataChanged {
				written(0, all)
			}
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
			if op.Code == osdop.ListSnaps {
				return fail(fmt.Errorf("%w: list-snaps in a write", osdop.ErrInvalid))
			}
			r, err := ReadOp(o, op)
			if err != nil {
				if !FailOK(op, err) {
					return fail(err)
				}
				r = osdop.Result{}
			}
			x.Results[i] = r
			continue
		}
		if op.Code != osdop.Call {
			exists = true
		}
		if size > maxSize {
			return fail(fmt.Errorf("%w: %d bytes (osd_max_object_size %d)", osdop.ErrTooLarge, size, maxSize))
		}
	}
	x.ExistsAfter, x.Size, x.SnapSet = exists, size, ss
	x.Whiteout = FinishSnaps(o, t, ss, exists)
	switch {
	case exists && !o.Exists:
		x.DObjects = 1
	case !exists && o.Exists:
		x.DObjects = -1
	}
	x.DBytes = int64(size) - int64(o.Size)
	if ss != nil { // clones count as objects, their bytes the head no longer shares (Ceph's get_clone_bytes)
		x.DObjects += int64(len(ss.Clones) - cloneCount(o.SnapSet))
		x.DBytes += int64(cloneBytes(ss)) - int64(cloneBytes(o.SnapSet))
	}
	if !exists && !o.Exists {
		return nil, fmt.Errorf("%w: %s", osdop.ErrNotFound, oid)
	}
	return x, nil
}

// FailOK reports whether a read op's failure leaves its result empty
// instead of failing the request: the op asked for it (osdop.Op.FailOK)
// and the object or the attribute is absent. Other errors — a corrupt
// copy, an unfound object, a retry — still fail the request.
func FailOK(op *osdop.Op, err error) bool {
	return op.FailOK && (errors.Is(err, osdop.ErrNotFound) || errors.Is(err, osdop.ErrNoData))
}

// AssertVersion is the assert-version op: the object exists at version
// want (ErrNotFound, ErrVerOlder, ErrVerNewer otherwise).
func AssertVersion(exists bool, have, want uint64) error {
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

// ReadOp executes one read op (Read, Stat, GetXattr(s), OmapGet,
// OmapList) against o; an absent object is osdop.ErrNotFound.
func ReadOp(o *Object, op *osdop.Op) (osdop.Result, error) {
	s, c := o.Store, o.Coll
	var r osdop.Result
	switch op.Code {
	case osdop.ListSnaps:
		return listSnaps(o)
	case osdop.CallRead:
		return callRead(o, op)
	}
	if !o.Exists {
		return r, osdop.ErrNotFound
	}
	if op.Code == osdop.ListWatchers {
		return listWatchers(o)
	}
	var err error
	switch op.Code {
	case osdop.Read:
		if op.Off >= o.Size {
			return r, nil
		}
		n := op.Len
		if n == 0 || n > o.Size-op.Off {
			n = o.Size - op.Off
		}
		r.Data, err = s.Read(c, o.OID, op.Off, n)
	case osdop.Stat:
		r.Size, r.Ver = o.Size, o.Version
		if b, err := s.GetAttr(c, o.OID, AttrMtime); err == nil && len(b) == 8 {
			r.Mtime = int64(binary.LittleEndian.Uint64(b))
		}
	case osdop.GetXattr:
		r.Data, err = s.GetAttr(c, o.OID, UserAttr+op.Name)
		if errors.Is(err, objectstore.ErrNotFound) {
			return r, fmt.Errorf("%w: %q", osdop.ErrNoData, op.Name)
		}
	case osdop.GetXattrs:
		var attrs map[string][]byte
		attrs, err = s.Attrs(c, o.OID)
		for k, v := range attrs {
			if name, ok := strings.CutPrefix(k, UserAttr); ok {
				r.KVs = append(r.KVs, omap.KV{Key: name, Value: v})
			}
		}
		slices.SortFunc(r.KVs, func(a, b omap.KV) int { return strings.Compare(a.Key, b.Key) })
	case osdop.OmapGet:
		var kv map[string][]byte
		kv, err = s.OmapGet(c, o.OID, op.Keys)
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
		r.KVs, r.More, err = s.OmapList(c, o.OID, op.Name, op.Prefix, max)
	default:
		return r, fmt.Errorf("%w: op %s", osdop.ErrInvalid, op.Code)
	}
	if err != nil {
		return r, StoreErr(err)
	}
	return r, nil
}

// callRead runs a read-only object-class method (CallRead): its view's
// writes, if it made any, go to a transaction nobody applies, and fail
// the op.
func callRead(o *Object, op *osdop.Op) (osdop.Result, error) {
	m, ok := cls.Lookup(op.Name)
	if !ok || !cls.ReadOnly(op.Name) {
		return osdop.Result{}, fmt.Errorf("%w: no read-only object class method %q", osdop.ErrUnsupported, op.Name)
	}
	co := &clsObject{o: o, t: &objectstore.Transaction{}}
	out, err := m(co, op.Data)
	switch {
	case err != nil:
		return osdop.Result{}, clsErr(err)
	case co.wrote || co.removed:
		return osdop.Result{}, fmt.Errorf("%w: read-only method %q changed its object", osdop.ErrInvalid, op.Name)
	}
	return osdop.Result{Data: out}, nil
}

// clsObject is an object-class method's view of the request's object.
type clsObject struct {
	o           *Object
	t           *objectstore.Transaction
	wrote       bool
	removed     bool
	dataChanged bool  // Write or WriteFull
	size        int64 // -1: unknown change
}

func (c *clsObject) Exists() bool   { return c.o.Exists }
func (c *clsObject) Caller() string { return c.o.Caller }
func (c *clsObject) Now() time.Time { return time.Now() }
func (c *clsObject) Size() uint64   { return c.o.Size }
func (c *clsObject) Read(off, n uint64) ([]byte, error) {
	r, err := ReadOp(c.o, &osdop.Op{Code: osdop.Read, Off: off, Len: n})
	return r.Data, err
}
func (c *clsObject) GetXattr(name string) ([]byte, error) {
	r, err := ReadOp(c.o, &osdop.Op{Code: osdop.GetXattr, Name: name})
	return r.Data, err
}
func (c *clsObject) Xattrs() []string {
	r, err := ReadOp(c.o, &osdop.Op{Code: osdop.GetXattrs})
	if err != nil {
		return nil
	}
	names := make([]string, len(r.KVs))
	for i, kv := range r.KVs {
		names[i] = kv.Key
	}
	return names
}
func (c *clsObject) OmapGet(keys []string) (map[string][]byte, error) {
	if !c.o.Exists {
		return map[string][]byte{}, nil
	}
	return c.o.Store.OmapGet(c.o.Coll, c.o.OID, keys)
}
func (c *clsObject) OmapList(after, prefix string, max int) ([]omap.KV, bool, error) {
	if !c.o.Exists {
		return nil, false, nil
	}
	return c.o.Store.OmapList(c.o.Coll, c.o.OID, after, prefix, max)
}
func (c *clsObject) Write(off uint64, data []byte) {
	c.t.Write(c.o.Coll, c.o.OID, off, data)
	c.wrote, c.dataChanged, c.size = true, true, int64(max(c.o.Size, off+uint64(len(data))))
}
func (c *clsObject) WriteFull(data []byte) {
	c.t.WriteFull(c.o.Coll, c.o.OID, data)
	c.wrote, c.dataChanged, c.size = true, true, int64(len(data))
}
func (c *clsObject) SetXattr(name string, v []byte) {
	c.t.SetAttr(c.o.Coll, c.o.OID, UserAttr+name, v)
	c.mark()
}
func (c *clsObject) OmapSet(kvs []omap.KV) {
	c.t.OmapSet(c.o.Coll, c.o.OID, kvs)
	c.mark()
}
func (c *clsObject) OmapRm(keys []string) {
	c.t.OmapRm(c.o.Coll, c.o.OID, keys)
	c.mark()
}
func (c *clsObject) Remove() {
	if c.o.Exists {
		c.t.Remove(c.o.Coll, c.o.OID)
	}
	c.removed, c.wrote = true, false
}

func (c *clsObject) mark() {
	if !c.wrote {
		c.wrote, c.size = true, int64(c.o.Size)
	}
}

// clsErr maps an object-class method's error to the op protocol's,
// without repeating the sentinel's text.
func clsErr(err error) error {
	for _, m := range []struct{ from, to error }{
		{cls.ErrNotFound, osdop.ErrNotFound}, {cls.ErrExists, osdop.ErrExists},
		{cls.ErrInvalid, osdop.ErrInvalid}, {cls.ErrBusy, osdop.ErrBusy},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w: %s", m.to, strings.TrimPrefix(err.Error(), m.from.Error()+": "))
		}
	}
	return err
}

// StoreErr maps an object store's error to the op protocol's (osdop).
func StoreErr(err error) error {
	switch {
	case errors.Is(err, objectstore.ErrNoSpace):
		return fmt.Errorf("%w: %v", osdop.ErrNoSpace, err)
	case errors.Is(err, objectstore.ErrNotFound):
		return fmt.Errorf("%w: %v", osdop.ErrNotFound, err)
	case errors.Is(err, objectstore.ErrInvalid):
		return fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
	case errors.Is(err, objectstore.ErrCorrupt):
		return fmt.Errorf("%w: %v", osdop.ErrCorrupt, err)
	}
	return err
}
