package opexec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osdop"
)

// Snapshots, as Ceph's OSD keeps them (doc/dev/osd_internals/snaps.rst,
// PrimaryLogPG::make_writeable): before the first change to an object
// after a snap newer than its SnapSet's seq, the head is cloned — a
// metadata-only copy in the object store, which shares the head's blocks
// until either is written — and the clone is recorded in the head's
// SnapSet (AttrSnapSet). A read at a snap resolves to the head or one
// clone (osdop.SnapSet.Resolve). Removing a head that has clones leaves
// a whiteout: an empty head that keeps the SnapSet (AttrWhiteout), which
// reads and listings treat as absent.

// Attributes of a head with snapshots.
const (
	AttrSnapSet  = "s.ss" // the encoded osdop.SnapSet
	AttrWhiteout = "s.wo" // present: the head was removed and is kept for its clones
)

// SnapContext is a write's snapshot context: the newest snap id the
// writer knows of and the live snaps, newest first (Ceph's SnapContext).
type SnapContext struct {
	Seq   uint64
	Snaps []uint64
}

// SnapMapperOID is the internal object of a PG's collection whose omap
// indexes its clones by snap (Ceph's SnapMapper): a key
// SnapMapperKey(snap, head) for every snap a clone of head serves. The
// writes that make and trim clones keep it, in their transactions, so
// every copy has it; the snap trimmer finds a removed snap's objects in
// it instead of reading every head.
const SnapMapperOID = "\x00snapmapper"

// SnapMapperKey is the index key of head's clone serving snap.
func SnapMapperKey(snap uint64, head string) string { return SnapMapperPrefix(snap) + head }

// SnapMapperPrefix begins the index keys of snap.
func SnapMapperPrefix(snap uint64) string { return fmt.Sprintf("%016x/", snap) }

// IndexClone adds to t the index keys of head's clone serving snaps.
func IndexClone(t *objectstore.Transaction, c objectstore.Coll, head string, snaps []uint64) {
	kvs := make([]omap.KV, len(snaps))
	for i, s := range snaps {
		kvs[i] = omap.KV{Key: SnapMapperKey(s, head)}
	}
	t.OmapSet(c, SnapMapperOID, kvs)
}

// UnindexClone adds to t the removal of head's index keys for snaps.
func UnindexClone(t *objectstore.Transaction, c objectstore.Coll, head string, snaps []uint64) {
	keys := make([]string, len(snaps))
	for i, s := range snaps {
		keys[i] = SnapMapperKey(s, head)
	}
	t.Touch(c, SnapMapperOID) // an index made before any clone: removing from it needs it there
	t.OmapRm(c, SnapMapperOID, keys)
}

// CloneOID names clone id of object oid in its PG's collection: an
// internal name (leading NUL byte, peering.IsInternal) that sorts beside
// the other clones of oid.
func CloneOID(oid string, id uint64) string {
	return fmt.Sprintf("\x00s%s\x00%016x", oid, id)
}

// CloneHead returns the head of clone name coid (CloneOID's inverse); ok
// is false if coid is not a clone's name.
func CloneHead(coid string) (head string, ok bool) {
	rest, ok := strings.CutPrefix(coid, "\x00s")
	if !ok || len(rest) < 17 || rest[len(rest)-17] != 0 {
		return "", false
	}
	return rest[:len(rest)-17], true
}

// ReadSnapSet reads the SnapSet of object oid of collection c in s: nil
// if it has none (or does not exist); osdop.ErrCorrupt if the attribute
// does not decode.
func ReadSnapSet(s objectstore.Store, c objectstore.Coll, oid string) (*osdop.SnapSet, error) {
	b, err := s.GetAttr(c, oid, AttrSnapSet)
	switch {
	case errors.Is(err, objectstore.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, StoreErr(err)
	}
	ss, err := osdop.DecodeSnapSet(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", osdop.ErrCorrupt, oid, err)
	}
	return ss, nil
}

// LoadSnapSet adds the object's snapshot state to o: its SnapSet (nil if
// it has none) and whether the head is a whiteout (then Exists is false).
// Callers load it for pools that have snapshots, where any object may.
func (o *Object) LoadSnapSet() error {
	if !o.Exists {
		return nil
	}
	var err error
	if o.SnapSet, err = ReadSnapSet(o.Store, o.Coll, o.OID); err != nil || o.SnapSet == nil {
		return err
	}
	if _, err := o.Store.GetAttr(o.Coll, o.OID, AttrWhiteout); err == nil {
		o.Whiteout, o.Exists, o.Size, o.Version = true, false, 0, 0
	}
	return nil
}

// AtSnap returns the object as of snap: the head itself, or the clone
// that holds it (loaded as an Object of its own). ErrNotFound if the
// object did not exist then.
func (o *Object) AtSnap(snap uint64) (*Object, error) {
	if o.SnapSet == nil {
		if !o.Exists {
			return nil, fmt.Errorf("%w: %s", osdop.ErrNotFound, o.OID)
		}
		return o, nil
	}
	i, head, ok := o.SnapSet.Resolve(snap)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %s did not exist at snap %d", osdop.ErrNotFound, o.OID, snap)
	case head && !o.Exists:
		return nil, fmt.Errorf("%w: %s", osdop.ErrNotFound, o.OID)
	case head:
		return o, nil
	}
	c, err := Load(o.Store, o.Coll, CloneOID(o.OID, o.SnapSet.Clones[i].ID))
	if err != nil {
		return nil, err
	}
	if !c.Exists {
		return nil, fmt.Errorf("%w: %s: clone %d of snap %d is missing", osdop.ErrNotFound, o.OID, o.SnapSet.Clones[i].ID, snap)
	}
	return c, nil
}

// MakeWriteable clones the head before a write whose SnapContext is newer
// than the object's SnapSet (Ceph's make_writeable), and returns the
// SnapSet the write leaves (nil: the object has none and needs none).
// The clone serves the snaps of the context newer than the SnapSet's seq;
// none (all removed) makes no clone.
func MakeWriteable(o *Object, t *objectstore.Transaction, snapc SnapContext) *osdop.SnapSet {
	if o.SnapSet == nil && snapc.Seq == 0 {
		return nil
	}
	ss := &osdop.SnapSet{}
	if o.SnapSet != nil {
		ss.Seq = o.SnapSet.Seq
		for _, c := range o.SnapSet.Clones {
			c.Snaps, c.Overlap = slices.Clone(c.Snaps), slices.Clone(c.Overlap)
			ss.Clones = append(ss.Clones, c)
		}
	}
	if snapc.Seq <= ss.Seq {
		return ss
	}
	var snaps []uint64
	for _, s := range snapc.Snaps {
		if s > ss.Seq {
			snaps = append(snaps, s)
		}
	}
	if o.Exists && len(snaps) > 0 {
		coid := CloneOID(o.OID, snapc.Seq)
		t.Clone(o.Coll, o.OID, coid)
		t.RmAttr(o.Coll, coid, AttrSnapSet)
		t.RmAttr(o.Coll, coid, AttrWatchers) // a clone has no watchers
		IndexClone(t, o.Coll, o.OID, snaps)
		c := osdop.CloneInfo{ID: snapc.Seq, Snaps: snaps, Size: o.Size}
		if o.Size > 0 {
			c.Overlap = []osdop.Extent{{Off: 0, Len: o.Size}}
		}
		ss.Clones = append(ss.Clones, c)
	}
	ss.Seq = snapc.Seq
	return ss
}

// RollbackTarget resolves a rollback op to snap against the SnapSet the
// write leaves so far (nil: the object has none, and the head is the
// object at every snap): head (nothing changes), or the clone to copy
// back, or neither (the object did not exist at snap: it is removed).
func RollbackTarget(ss *osdop.SnapSet, snap uint64) (clone *osdop.CloneInfo, head bool) {
	var at osdop.SnapSet
	if ss != nil {
		at = *ss
	}
	k, head, ok := at.Resolve(snap)
	if head || !ok {
		return nil, head
	}
	return &at.Clones[k], false
}

// FinishSnaps records the SnapSet a write leaves: on the head if it
// exists after the write, or on a whiteout head (whiteout true) if the
// write removed an object that has clones.
func FinishSnaps(o *Object, t *objectstore.Transaction, ss *osdop.SnapSet, exists bool) (whiteout bool) {
	if ss == nil {
		return false
	}
	c, oid := o.Coll, o.OID
	switch {
	case exists:
		t.SetAttr(c, oid, AttrSnapSet, ss.Bytes())
		if o.Whiteout {
			t.RmAttr(c, oid, AttrWhiteout)
		}
	case len(ss.Clones) > 0:
		t.Touch(c, oid) // after the head's removal: an empty object without attributes or omap
		t.SetAttr(c, oid, AttrSnapSet, ss.Bytes())
		t.SetAttr(c, oid, AttrWhiteout, nil)
		return true
	}
	return false
}

// EncodeSnapIDs is the data of a TrimSnaps op: snap ids, 8 bytes
// little-endian each.
func EncodeSnapIDs(ids []uint64) []byte {
	b := make([]byte, 0, 8*len(ids))
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint64(b, id)
	}
	return b
}

// trimSnaps is the TrimSnaps op (Ceph's snap trimmer, one object's
// part): the removed snap ids in data leave every clone's snaps; a
// clone left serving none is removed, and what its older neighbour
// shared with it and it with its newer one is what the neighbour shares
// now (the overlaps' intersection); a whiteout head left without clones
// goes too. The snap mapper's keys of (snap, object) go for every snap
// in data, whether or not a clone still named it; of an object without
// clones nothing else changes.
func trimSnaps(o *Object, data []byte) (*Prepared, error) {
	if len(data)%8 != 0 {
		return nil, fmt.Errorf("%w: trim-snaps data of %d bytes", osdop.ErrInvalid, len(data))
	}
	removed := map[uint64]bool{}
	for i := 0; i < len(data); i += 8 {
		removed[binary.LittleEndian.Uint64(data[i:])] = true
	}
	t := &objectstore.Transaction{}
	x := &Prepared{T: t, Results: make([]osdop.Result, 1), Existed: o.Exists, ExistsAfter: o.Exists, Whiteout: o.Whiteout}
	ids := make([]uint64, 0, len(removed))
	for id := range removed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	UnindexClone(t, o.Coll, o.OID, ids) // and keys the index had but no clone matched go too
	if o.SnapSet == nil {
		return x, nil
	}
	ss := &osdop.SnapSet{Seq: o.SnapSet.Seq}
	for _, c := range o.SnapSet.Clones {
		c.Snaps = slices.DeleteFunc(slices.Clone(c.Snaps), func(s uint64) bool { return removed[s] })
		c.Overlap = slices.Clone(c.Overlap)
		if len(c.Snaps) > 0 {
			ss.Clones = append(ss.Clones, c)
			continue
		}
		t.Remove(o.Coll, CloneOID(o.OID, c.ID))
		if k := len(ss.Clones); k > 0 {
			ss.Clones[k-1].Overlap = intersect(ss.Clones[k-1].Overlap, c.Overlap)
		}
	}
	x.DObjects = int64(len(ss.Clones) - len(o.SnapSet.Clones))
	x.DBytes = int64(cloneBytes(ss)) - int64(cloneBytes(o.SnapSet))
	if o.Whiteout && len(ss.Clones) == 0 {
		t.Remove(o.Coll, o.OID)
		x.Whiteout = false
	} else {
		t.SetAttr(o.Coll, o.OID, AttrSnapSet, ss.Bytes())
	}
	return x, nil
}

// CloneUsage is what ss's clones add to a PG's counts: their number,
// and the bytes of them no newer clone or head shares (0, 0 for nil).
func CloneUsage(ss *osdop.SnapSet) (objects, bytes int64) {
	return int64(cloneCount(ss)), int64(cloneBytes(ss))
}

// cloneCount is the number of clones ss records (0 for nil).
func cloneCount(ss *osdop.SnapSet) int {
	if ss == nil {
		return 0
	}
	return len(ss.Clones)
}

// cloneBytes is the bytes of ss's clones that no newer clone or head
// shares: what the clones add to the PG's stored bytes (Ceph's
// SnapSet::get_clone_bytes summed). 0 for nil.
func cloneBytes(ss *osdop.SnapSet) uint64 {
	if ss == nil {
		return 0
	}
	var n uint64
	for _, c := range ss.Clones {
		shared := uint64(0)
		for _, x := range c.Overlap {
			shared += x.Len
		}
		n += c.Size - min(shared, c.Size)
	}
	return n
}

// intersect is the bytes both a and b cover (each sorted and disjoint).
func intersect(a, b []osdop.Extent) []osdop.Extent {
	var out []osdop.Extent
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo := max(a[i].Off, b[j].Off)
		ae, be := a[i].Off+a[i].Len, b[j].Off+b[j].Len
		if hi := min(ae, be); lo < hi {
			out = append(out, osdop.Extent{Off: lo, Len: hi - lo})
		}
		if ae < be {
			i++
		} else {
			j++
		}
	}
	return out
}

// listSnaps is the ListSnaps op: the SnapSet (empty if none) and whether
// the head exists.
func listSnaps(o *Object) (osdop.Result, error) {
	if !o.Exists && o.SnapSet == nil {
		return osdop.Result{}, osdop.ErrNotFound
	}
	ss := osdop.SnapSet{HeadExists: o.Exists}
	if o.SnapSet != nil {
		ss.Seq, ss.Clones = o.SnapSet.Seq, o.SnapSet.Clones
	}
	return osdop.Result{Data: ss.Bytes()}, nil
}
