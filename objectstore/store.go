package objectstore

import (
	"errors"
	"fmt"
	"slices"

	crc "github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/omap"
)

// Errors callers branch on (test with errors.Is).
var (
	// ErrNotFound: the object or collection does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: the collection already exists.
	ErrExists = errors.New("already exists")
	// ErrNotEmpty: a collection to remove still holds objects.
	ErrNotEmpty = errors.New("collection not empty")
	// ErrNoSpace: the data device is full; nothing of the transaction was
	// applied, and everything already stored stays readable.
	ErrNoSpace = errors.New("no space left on device")
	// ErrCorrupt: stored bytes failed their checksum.
	ErrCorrupt = errors.New("checksum mismatch")
	// ErrInvalid: a malformed request (bad name, offset overflow, …).
	ErrInvalid = errors.New("invalid argument")
	// ErrClosed: the store is closed, or failed and went read-only.
	ErrClosed = errors.New("store closed or failed")
)

// Limits on names and sizes.
const (
	MaxNameLen   = 2048      // bytes in an object name
	MaxCollLen   = 255       // bytes in a collection name
	MaxObjectEnd = 1<<40 - 1 // highest byte offset an object may reach (1 TiB)
)

// Coll names a collection: the objects of one PG shard, e.g. "1.2f" or
// "2.1as3". Collections are created and removed explicitly.
type Coll string

// Stat describes an object.
type Stat struct {
	Size uint64 // logical size in bytes
}

// KV is one omap entry or attribute (the leaf package omap's type, so
// that the client and the op protocol need not import the store).
type KV = omap.KV

// Store is a local object store on one device. Apply commits a transaction
// atomically and durably: when it returns nil, every operation in it
// survives kill -9 and power loss; when it returns an error, none took
// effect. Reads see every transaction that has returned. All methods are
// safe for concurrent use; returned slices belong to the caller.
type Store interface {
	Apply(t *Transaction) error
	// Submit queues t and returns at once; the channel yields Apply's
	// result when t is durable. Transactions submitted one after another
	// by one goroutine are applied in that order (a later one sees the
	// earlier one's effects), which is how an OSD keeps a PG's writes in
	// log order while many are in flight. t must not change until the
	// result arrives.
	Submit(t *Transaction) <-chan error
	Read(c Coll, oid string, off, length uint64) ([]byte, error) // length 0: to the end
	// ReadDevice is Read from the device itself, bypassing any cache of
	// data: what deep scrub checks.
	ReadDevice(c Coll, oid string, off, length uint64) ([]byte, error)
	// ReadVec is Read as parts whose concatenation is the data, which
	// the caller must not modify and gives back by calling release
	// (exactly once, when done with them), with each part's crc32c where
	// the store knows it without a pass over the data (sums[i].Valid;
	// sums may be nil).
	ReadVec(c Coll, oid string, off, length uint64) (parts [][]byte, sums []crc.Sum, release func(), err error)
	Stat(c Coll, oid string) (Stat, error)
	GetAttr(c Coll, oid, name string) ([]byte, error)
	Attrs(c Coll, oid string) (map[string][]byte, error)
	OmapGet(c Coll, oid string, keys []string) (map[string][]byte, error)
	// OmapList returns up to max entries with the prefix, in key order,
	// after startAfter; more reports whether entries remain.
	OmapList(c Coll, oid, startAfter, prefix string, max int) (kvs []KV, more bool, err error)
	// List returns up to max object names after startAfter, in name order.
	List(c Coll, startAfter string, max int) ([]string, error)
	Collections() ([]Coll, error)
	StatFS() (FSStat, error)
	Close() error
}

// FSStat is the device's capacity and use.
type FSStat struct {
	Total, Used uint64 // bytes of the data device
	// Meta is what the metadata store (onodes with small objects' data,
	// omap entries, its log) takes on disk, wherever it lives: Ceph
	// counts BlueFS's use in an OSD's raw use too. At most a second old.
	Meta uint64
}

type opCode uint8

const (
	opCreateColl opCode = iota + 1
	opRemoveColl
	opTouch
	opWrite
	opZero
	opTruncate
	opRemove
	opSetAttr
	opRmAttr
	opOmapSet
	opOmapRm
	opOmapClear
	opClone
	opStash
	opSplit // local only: not encoded (SplitCollection)
)

type op struct {
	code      opCode
	coll      Coll
	oid, oid2 string // oid2: clone destination
	off, n    uint64 // offset and length (write: len(data)), truncate size in off
	data      []byte
	sums      []uint32 // write: crc32c of data's whole 4 KiB blocks, if the caller knows them
	name      string   // attribute name
	kvs       []KV     // omap set
	keys      []string
	split     *Split
}

// Split says how SplitCollection divides a collection (a PG's, when its
// pool's pg_num grows).
type Split struct {
	// Children are the collections objects may move to; each must exist
	// when the split applies (made earlier in its transaction, or before).
	Children []Coll
	// Target names the child an object moves to, or "" if it stays.
	Target func(oid string) Coll
	// Indexes are objects that stay but whose omap entries — an index of
	// the collection's objects, such as a PG's snap mapper — are divided
	// by KeyTarget: an entry it names a child for moves to the object of
	// the same name in that child (made if need be).
	Indexes   []string
	KeyTarget func(key string) Coll
	// Fence, if set, says which object names later transactions may no
	// longer use in the collection (SplitCollection); nil: those Target
	// moves.
	Fence func(oid string) bool
	// Moved, if set, is called for each object moved, as the split
	// applies (in the store's committer: what it counts is exact, the
	// transactions before the split included): its name, the child, its
	// size and attributes (not to be kept).
	Moved func(oid string, dst Coll, size uint64, attrs map[string][]byte)
}

// moves reports whether later transactions are refused object oid, or
// its omap entry key if oid is one of the indexes (key "" stands for any
// write to the object itself).
func (sp *Split) moves(oid, key string) bool {
	if sp.Fence != nil && sp.Fence(oid) || sp.Fence == nil && sp.Target(oid) != "" {
		return true
	}
	return key != "" && sp.KeyTarget != nil && slices.Contains(sp.Indexes, oid) && sp.KeyTarget(key) != ""
}

// fenced refuses op (ErrInvalid) if one of the splits of its collection
// since it was made (fs) moved an object or index entry it names: it was
// built before the split. Both stores check every object op with it.
func (o *op) fenced(fs []*Split) error {
	for _, sp := range fs {
		bad := sp.moves(o.oid, "") || (o.oid2 != "" && sp.moves(o.oid2, ""))
		for _, k := range o.keys {
			bad = bad || sp.moves(o.oid, k)
		}
		for _, kv := range o.kvs {
			bad = bad || sp.moves(o.oid, kv.Key)
		}
		if bad {
			return fmt.Errorf("%w: object %q (or its omap entries) moved to another collection by a split", ErrInvalid, o.oid)
		}
	}
	return nil
}

// splitPreceded refuses (ErrInvalid) a split whose transaction changed an
// object of its collection or of a child before it (before: the ops
// ahead of it): a split works on the state its transaction started from.
func splitPreceded(before []op, split *op) error {
	for i := range before {
		if p := &before[i]; p.code != opCreateColl && p.code != opRemoveColl && (p.coll == split.coll || slices.Contains(split.split.Children, p.coll)) {
			return fmt.Errorf("%w: the transaction changed an object of the collection or a child before the split", ErrInvalid)
		}
	}
	return nil
}

// installFences records, in fences (made if nil), the splits a commit
// applied by collection, and forgets those of collections it removed
// (nil).
func installFences(fences *map[Coll][]*Split, changes map[Coll][]*Split) {
	for c, f := range changes {
		if f == nil {
			delete(*fences, c)
			continue
		}
		if *fences == nil {
			*fences = map[Coll][]*Split{}
		}
		(*fences)[c] = f
	}
}

// Transaction is an ordered list of operations applied atomically. Build it
// with the methods below; data slices are referenced, not copied, until
// Apply returns.
type Transaction struct{ ops []op }

// Len is the number of operations.
func (t *Transaction) Len() int { return len(t.ops) }

// DataLen is the bytes the transaction's writes carry (attributes and
// omap not counted).
func (t *Transaction) DataLen() uint64 {
	var n uint64
	for i := range t.ops {
		if t.ops[i].code == opWrite {
			n += t.ops[i].n
		}
	}
	return n
}

// Objects are the names of the objects of collection c that t changes,
// each once, in the order t first names them (a clone's destination
// included).
func (t *Transaction) Objects(c Coll) []string {
	var out []string
	add := func(oid string) { // a transaction names few objects: no map
		if !slices.Contains(out, oid) {
			out = append(out, oid)
		}
	}
	for i := range t.ops {
		o := &t.ops[i]
		if o.coll != c || o.code == opCreateColl || o.code == opRemoveColl || o.code == opSplit {
			continue
		}
		switch o.code {
		case opClone, opStash:
			add(o.oid2) // the source is read, not changed
		default:
			add(o.oid)
		}
	}
	return out
}

// CreateCollection creates an empty collection (ErrExists if it exists).
func (t *Transaction) CreateCollection(c Coll) {
	t.ops = append(t.ops, op{code: opCreateColl, coll: c})
}

// SplitCollection moves the objects of c that sp.Target names a child
// for into that child collection, with their data, attributes and omap,
// without copying their data, and divides the omaps of sp.Indexes — the
// role of BlueStore's split_collection, which only changes the
// collection's hash bits because its keys sort by hash; here, where they
// sort by name, each moved object's metadata key and omap entries are
// rewritten, so the cost grows with the objects moved. The transaction must not have changed
// an object of c or of a child before it. From the split on, the store
// refuses (ErrInvalid) any later operation on c that names a moved
// object or index entry — a transaction built before the split — until
// c is removed. A split is applied locally only: Encode does not carry
// it.
func (t *Transaction) SplitCollection(c Coll, sp *Split) {
	t.ops = append(t.ops, op{code: opSplit, coll: c, split: sp})
}

// Splits are the collections t splits (SplitCollection), in order.
func (t *Transaction) Splits() []Coll {
	var out []Coll
	for i := range t.ops {
		if t.ops[i].code == opSplit {
			out = append(out, t.ops[i].coll)
		}
	}
	return out
}

// RemoveCollection removes an empty collection (ErrNotEmpty otherwise).
func (t *Transaction) RemoveCollection(c Coll) {
	t.ops = append(t.ops, op{code: opRemoveColl, coll: c})
}

// Touch creates the object if it does not exist.
func (t *Transaction) Touch(c Coll, oid string) {
	t.ops = append(t.ops, op{code: opTouch, coll: c, oid: oid})
}

// Write writes data at off, creating the object and extending its size as
// needed; gaps read as zeros.
func (t *Transaction) Write(c Coll, oid string, off uint64, data []byte) {
	t.ops = append(t.ops, op{code: opWrite, coll: c, oid: oid, off: off, n: uint64(len(data)), data: data})
}

// WriteSums is Write with sums, the crc32c of each whole 4 KiB block of
// data from its start (as msgr.Message.BlockSums gives them for received
// data): where data's blocks are stored as they are (off a multiple of
// 4 KiB), those are taken as their block checksums instead of computed.
// nil sums is Write.
func (t *Transaction) WriteSums(c Coll, oid string, off uint64, data []byte, sums []uint32) {
	t.Write(c, oid, off, data)
	if len(sums) >= len(data)/BlockSize {
		t.ops[len(t.ops)-1].sums = sums
	}
}

// SetDataSums gives each write's data the block checksums sums returns
// for it (nil: none known): a transaction decoded from a message whose
// reader kept them.
func (t *Transaction) SetDataSums(sums func(data []byte) []uint32) {
	for i := range t.ops {
		if o := &t.ops[i]; o.code == opWrite && len(o.data) >= BlockSize {
			if s := sums(o.data); len(s) >= len(o.data)/BlockSize {
				o.sums = s
			}
		}
	}
}

// DataSum is the crc32c of p if p is exactly the data of one of the
// transaction's writes whose block checksums are known (for a sender
// forwarding the transaction: msgr.Checksum's known).
func (t *Transaction) DataSum(p []byte) crc.Sum {
	if len(p) < BlockSize {
		return crc.Sum{}
	}
	for i := range t.ops {
		if o := &t.ops[i]; o.sums != nil && len(o.data) == len(p) && &o.data[0] == &p[0] {
			return crc.Sum{CRC: crc.FromBlocks(o.sums, p), Valid: true}
		}
	}
	return crc.Sum{}
}

// WriteFull replaces the object's data with data.
func (t *Transaction) WriteFull(c Coll, oid string, data []byte) {
	t.Truncate(c, oid, 0)
	t.Write(c, oid, 0, data)
}

// Zero makes [off, off+n) read as zeros, freeing whole blocks, extending
// the object if the range passes its end.
func (t *Transaction) Zero(c Coll, oid string, off, n uint64) {
	t.ops = append(t.ops, op{code: opZero, coll: c, oid: oid, off: off, n: n})
}

// Truncate sets the object's size, creating it if needed.
func (t *Transaction) Truncate(c Coll, oid string, size uint64) {
	t.ops = append(t.ops, op{code: opTruncate, coll: c, oid: oid, off: size})
}

// Remove deletes the object with its attributes and omap (ErrNotFound if
// it does not exist).
func (t *Transaction) Remove(c Coll, oid string) {
	t.ops = append(t.ops, op{code: opRemove, coll: c, oid: oid})
}

// SetAttr sets an extended attribute, creating the object if needed.
func (t *Transaction) SetAttr(c Coll, oid, name string, value []byte) {
	t.ops = append(t.ops, op{code: opSetAttr, coll: c, oid: oid, name: name, data: value})
}

// RmAttr removes an extended attribute (no error if it is absent).
func (t *Transaction) RmAttr(c Coll, oid, name string) {
	t.ops = append(t.ops, op{code: opRmAttr, coll: c, oid: oid, name: name})
}

// OmapSet sets omap entries, creating the object if needed.
func (t *Transaction) OmapSet(c Coll, oid string, kvs []KV) {
	t.ops = append(t.ops, op{code: opOmapSet, coll: c, oid: oid, kvs: kvs})
}

// OmapRm removes omap keys (absent keys are ignored).
func (t *Transaction) OmapRm(c Coll, oid string, keys []string) {
	t.ops = append(t.ops, op{code: opOmapRm, coll: c, oid: oid, keys: keys})
}

// OmapClear removes every omap entry of the object.
func (t *Transaction) OmapClear(c Coll, oid string) {
	t.ops = append(t.ops, op{code: opOmapClear, coll: c, oid: oid})
}

// Clone makes dst a copy of src (data, attributes, omap), replacing dst.
func (t *Transaction) Clone(c Coll, src, dst string) {
	t.ops = append(t.ops, op{code: opClone, coll: c, oid: src, oid2: dst})
}

// StashMetaAttr marks a stash StashForRollback made without data; its
// value is the source's size then (8 bytes, little-endian).
const StashMetaAttr = "\x00stash-meta"

// StashForRollback records src's state in dst so that writes to src later
// in this transaction can be undone. appendFrom is the lowest offset those
// writes touch (AppendFrom): if src ends at or before it, the writes only
// append (or change attributes), and dst gets src's attributes and, in
// StashMetaAttr, its size, but no data — undoing is a truncation, so an
// object grown by appends costs O(1) per append instead of a copy of
// everything written so far (Ceph's EC rollback of appends likewise
// truncates). Otherwise dst is a full Clone. The choice is made against
// the state the transaction sees, including transactions submitted before
// it and not yet durable.
func (t *Transaction) StashForRollback(c Coll, src, dst string, appendFrom uint64) {
	t.ops = append(t.ops, op{code: opStash, coll: c, oid: src, oid2: dst, off: appendFrom})
}

// AppendFrom returns the lowest offset the transaction writes in (c, oid)
// (^uint64(0) if it writes no data there), and false if it changes that
// object in any way other than writes and attribute changes.
func (t *Transaction) AppendFrom(c Coll, oid string) (uint64, bool) {
	from := ^uint64(0)
	for i := range t.ops {
		o := &t.ops[i]
		if o.coll != c || (o.oid != oid && o.oid2 != oid) {
			continue
		}
		switch {
		case o.oid2 == oid: // a clone onto it
			return 0, false
		case o.code == opWrite:
			from = min(from, o.off)
		case o.code == opSetAttr || o.code == opRmAttr || o.code == opTouch:
		default:
			return 0, false
		}
	}
	return from, true
}

// validate checks names and ranges, independent of stored state.
func (o *op) validate() error {
	if len(o.coll) == 0 || len(o.coll) > MaxCollLen {
		return fmt.Errorf("%w: collection name of %d bytes (1..%d)", ErrInvalid, len(o.coll), MaxCollLen)
	}
	if o.code == opCreateColl || o.code == opRemoveColl {
		return nil
	}
	if o.code == opSplit {
		if o.split == nil || o.split.Target == nil || len(o.split.Children) == 0 || (len(o.split.Indexes) > 0 && o.split.KeyTarget == nil) {
			return fmt.Errorf("%w: split of %s without children or targets", ErrInvalid, o.coll)
		}
		for _, c := range o.split.Children {
			if len(c) == 0 || len(c) > MaxCollLen || c == o.coll {
				return fmt.Errorf("%w: split of %s into collection %q", ErrInvalid, o.coll, c)
			}
		}
		return nil
	}
	for _, n := range []string{o.oid, o.oid2} {
		if len(n) > MaxNameLen {
			return fmt.Errorf("%w: object name of %d bytes (max %d)", ErrInvalid, len(n), MaxNameLen)
		}
	}
	if o.oid == "" || ((o.code == opClone || o.code == opStash) && o.oid2 == "") {
		return fmt.Errorf("%w: empty object name", ErrInvalid)
	}
	switch o.code {
	case opWrite, opZero:
		if o.off > MaxObjectEnd || o.n > MaxObjectEnd-o.off {
			return fmt.Errorf("%w: range %d+%d passes the %d-byte object limit", ErrInvalid, o.off, o.n, uint64(MaxObjectEnd))
		}
	case opTruncate:
		if o.off > MaxObjectEnd {
			return fmt.Errorf("%w: size %d passes the %d-byte object limit", ErrInvalid, o.off, uint64(MaxObjectEnd))
		}
	case opSetAttr, opRmAttr:
		if o.name == "" {
			return fmt.Errorf("%w: empty attribute name", ErrInvalid)
		}
	}
	return nil
}
