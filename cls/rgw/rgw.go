// Package rgw holds the bucket index's object-class methods: the code that
// runs inside the OSD on a bucket index shard object (Ceph: cls_rgw), and
// the types the gateway and the methods exchange.
//
// A shard is one object in the index pool; its omap holds, in key order:
//
//	"\x00p" + key + "\x00" + tag   a pending operation (prepare ran, complete did not)
//	"\x00s"                        the shard's stats (JSON Stats)
//	"\x00t" + key                  a tombstone: the version that deleted key
//	"\x00v" + key                  the versions of key in a versioned bucket (JSON Versions)
//	key                            the listing entry of key (JSON Entry)
//
// S3 keys never contain NUL (XML cannot carry it; the gateway refuses
// them), so the bookkeeping sorts before every entry and a listing that
// starts after "\x00\xff" sees entries only.
//
// Two-phase updates: the gateway calls Prepare before it writes an
// object's data, then Complete with the version (PG log sequence) the
// head object's write or removal got. Complete applies only if its version
// is newer than the key's entry or tombstone, so completions that arrive
// out of order (two gateways racing on one key) leave the index agreeing
// with the head that won. A crash between the phases leaves the pending
// record; `shoal bucket check --fix` resolves it against the head object.
//
// Versioned buckets: a key's entry is its current version (none while
// that is a delete marker), and its "\x00v" record lists every version,
// newest first, as the head object's version records said when the
// completion's version was read (CompleteIn.Versions). The record is
// replaced whole, and only by a newer version, so racing completions
// leave the newest list; ListObjects never reads these records, so its
// cost does not grow with the versions a key has.
package rgw

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/omap"
)

// Omap key prefixes of an index shard (see the package doc).
const (
	PendingPrefix   = "\x00p"
	StatsKey        = "\x00s"
	TombstonePrefix = "\x00t"
	VersionsPrefix  = "\x00v"
	// EntriesAfter is the omap start-after that skips the bookkeeping.
	EntriesAfter = "\x00\xff"
)

// Entry is a listed object: what ListObjects returns without touching the
// data pool.
type Entry struct {
	Size         int64  `json:"size"`
	Mtime        int64  `json:"mtime"` // Unix nanoseconds
	ETag         string `json:"etag"`  // quoted
	Owner        string `json:"owner,omitempty"`
	StorageClass string `json:"sc,omitempty"`
	ContentType  string `json:"ct,omitempty"`
	Ver          uint64 `json:"ver"` // head object's version (PG log sequence)
	Tag          string `json:"tag"` // the write that made it (names its tail objects)
}

// Version is one version of a key in a versioned bucket, as
// ListObjectVersions shows it.
type Version struct {
	ID           string `json:"id"` // "null" for the null version
	DeleteMarker bool   `json:"dm,omitempty"`
	Size         int64  `json:"size,omitempty"`
	Mtime        int64  `json:"mtime"` // Unix nanoseconds
	ETag         string `json:"etag,omitempty"`
	Owner        string `json:"owner,omitempty"`
	StorageClass string `json:"sc,omitempty"`
}

// Versions is the "\x00v" record of a key: its versions, newest (the
// current one) first, and the head object's version they were read at.
type Versions struct {
	Ver  uint64    `json:"ver"`
	List []Version `json:"list"`
}

// Stats are a shard's totals of listed entries.
type Stats struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// Pending is a prepared, not yet completed operation.
type Pending struct {
	Op    string `json:"op"` // "put" or "del"
	Mtime int64  `json:"mtime"`
}

// PrepareIn is rgw.prepare's input.
type PrepareIn struct {
	Key   string `json:"key"`
	Tag   string `json:"tag"`
	Op    string `json:"op"`
	Mtime int64  `json:"mtime"`
}

// CompleteIn is rgw.complete's input: Entry for a put (nil for a delete),
// Ver the head's version after the write or removal. Versions, if set,
// replaces the key's versions record (an empty list: the key has no
// versions left): a versioned bucket's completion.
type CompleteIn struct {
	Key      string    `json:"key"`
	Tag      string    `json:"tag"`
	Ver      uint64    `json:"ver"`
	Entry    *Entry    `json:"entry,omitempty"`
	Mtime    int64     `json:"mtime"`
	Versions *Versions `json:"versions,omitempty"`
	// VersionsOnly applies Versions alone, leaving the entry as it is
	// (a reshard's copy of the record).
	VersionsOnly bool `json:"vonly,omitempty"`
}

// CompleteOut says whether the completion changed the listing (false: a
// newer version of the key was already recorded).
type CompleteOut struct {
	Applied bool  `json:"applied"`
	Objects int64 `json:"objects"` // the shard's entries after it (dynamic resharding watches it)
}

// CompleteBatchOut is rgw.complete_batch's answer: how many of the
// completions changed the listing.
type CompleteBatchOut struct {
	Applied int `json:"applied"`
}

// BatchIn is rgw.batch's input: the index updates of several requests to
// one shard, applied in one call — one replicated write instead of one
// each. The gateway coalesces the updates that queue behind a call in
// flight to the same shard (group commit). Prepares and cancels are
// applied as rgw.prepare and rgw.cancel; completions as rgw.complete, in
// order, so two completions of one key in a batch leave the newer
// version.
type BatchIn struct {
	Prepares  []PrepareIn  `json:"prepares,omitempty"`
	Completes []CompleteIn `json:"completes,omitempty"`
	Cancels   []CancelIn   `json:"cancels,omitempty"`
}

// BatchOut is rgw.batch's answer: for each completion (in BatchIn's
// order) whether it changed the listing, and the shard's entry count
// after the call.
type BatchOut struct {
	Applied []bool `json:"applied,omitempty"`
	Objects int64  `json:"objects"`
}

// CancelIn is rgw.cancel's input: drop the pending record (the data write
// failed or was abandoned).
type CancelIn struct {
	Key string `json:"key"`
	Tag string `json:"tag"`
}

// PendingKey is the omap key of key's pending operation tag.
func PendingKey(key, tag string) string { return PendingPrefix + key + "\x00" + tag }

// SplitPendingKey is PendingKey's inverse.
func SplitPendingKey(k string) (key, tag string, ok bool) {
	s, ok := strings.CutPrefix(k, PendingPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(s, 0)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// shardExists refuses to work on a shard that does not exist: the bucket
// was deleted (or the shard replaced by a reshard) and writing would
// recreate it. The gateway reads the bucket again on ErrNotFound.
func shardExists(o cls.Object) error {
	if !o.Exists() {
		return fmt.Errorf("%w: bucket index shard (bucket deleted or resharded)", cls.ErrNotFound)
	}
	return nil
}

func decode(in []byte, v any, what string) error {
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("%w: %s: %v", cls.ErrInvalid, what, err)
	}
	return nil
}

func prepare(o cls.Object, in []byte) ([]byte, error) {
	var x PrepareIn
	if err := decode(in, &x, "rgw.prepare"); err != nil {
		return nil, err
	}
	if _, err := batch(o, &BatchIn{Prepares: []PrepareIn{x}}); err != nil {
		return nil, err
	}
	return nil, nil
}

func (x *PrepareIn) check() error {
	if x.Key == "" || x.Tag == "" || (x.Op != "put" && x.Op != "del") {
		return fmt.Errorf("%w: rgw.prepare needs key, tag and op put|del", cls.ErrInvalid)
	}
	return nil
}

func complete(o cls.Object, in []byte) ([]byte, error) {
	var x CompleteIn
	if err := decode(in, &x, "rgw.complete"); err != nil {
		return nil, err
	}
	out, err := batch(o, &BatchIn{Completes: []CompleteIn{x}})
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(CompleteOut{Applied: out.Applied[0], Objects: out.Objects})
	return b, nil
}

// completeBatch is rgw.complete_batch: rgw.complete for each element of a
// JSON array of CompleteIn, in one call (a reshard's copy); it answers
// CompleteBatchOut.
func completeBatch(o cls.Object, in []byte) ([]byte, error) {
	var xs []CompleteIn
	if err := decode(in, &xs, "rgw.complete_batch"); err != nil {
		return nil, err
	}
	out, err := batch(o, &BatchIn{Completes: xs})
	if err != nil {
		return nil, err
	}
	applied := 0
	for _, a := range out.Applied {
		if a {
			applied++
		}
	}
	b, _ := json.Marshal(CompleteBatchOut{Applied: applied})
	return b, nil
}

func (x *CompleteIn) check() error {
	if x.Key == "" || x.Tag == "" {
		return fmt.Errorf("%w: rgw.complete needs key and tag", cls.ErrInvalid)
	}
	return nil
}

func (x *CancelIn) check() error {
	if x.Key == "" || x.Tag == "" {
		return fmt.Errorf("%w: rgw.cancel needs key and tag", cls.ErrInvalid)
	}
	return nil
}

// rgwBatch is rgw.batch (BatchIn → BatchOut).
func rgwBatch(o cls.Object, in []byte) ([]byte, error) {
	var x BatchIn
	if err := decode(in, &x, "rgw.batch"); err != nil {
		return nil, err
	}
	out, err := batch(o, &x)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(out)
	return b, nil
}

// batch applies x to the shard: every update or, if one is malformed or
// the shard is gone, none. The shard's stats are read and written once.
// A method's reads see the shard as it was before the call, so the
// completions keep what they read and wrote in cur: a later completion of
// the same key sees the earlier one's entry or tombstone.
func batch(o cls.Object, x *BatchIn) (*BatchOut, error) {
	for i := range x.Prepares {
		if err := x.Prepares[i].check(); err != nil {
			return nil, err
		}
	}
	for i := range x.Completes {
		if err := x.Completes[i].check(); err != nil {
			return nil, err
		}
	}
	for i := range x.Cancels {
		if err := x.Cancels[i].check(); err != nil {
			return nil, err
		}
	}
	if err := shardExists(o); err != nil {
		return nil, err
	}
	if len(x.Prepares) > 0 {
		kvs := make([]omap.KV, len(x.Prepares))
		for i, p := range x.Prepares {
			v, _ := json.Marshal(Pending{Op: p.Op, Mtime: p.Mtime})
			kvs[i] = omap.KV{Key: PendingKey(p.Key, p.Tag), Value: v}
		}
		o.OmapSet(kvs)
	}
	if len(x.Cancels) > 0 {
		keys := make([]string, len(x.Cancels))
		for i, c := range x.Cancels {
			keys[i] = PendingKey(c.Key, c.Tag)
		}
		o.OmapRm(keys)
	}
	out := &BatchOut{Applied: make([]bool, len(x.Completes))}
	if len(x.Completes) == 0 {
		return out, nil
	}
	keys := []string{StatsKey}
	for _, c := range x.Completes {
		keys = append(keys, c.Key, TombstonePrefix+c.Key)
		if c.Versions != nil {
			keys = append(keys, VersionsPrefix+c.Key)
		}
	}
	cur, err := o.OmapGet(keys)
	if err != nil {
		return nil, err
	}
	var st Stats
	if b, ok := cur[StatsKey]; ok {
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("rgw.complete: shard stats: %w", err)
		}
	}
	changed := false
	for i, c := range x.Completes {
		tk := TombstonePrefix + c.Key
		var old *Entry
		var newest uint64
		if b, ok := cur[c.Key]; ok {
			old = &Entry{}
			if err := json.Unmarshal(b, old); err != nil {
				return nil, fmt.Errorf("rgw.complete: entry %q: %w", c.Key, err)
			}
			newest = old.Ver
		}
		if b, ok := cur[tk]; ok {
			var t uint64
			if err := json.Unmarshal(b, &t); err == nil {
				newest = max(newest, t)
			}
		}
		o.OmapRm([]string{PendingKey(c.Key, c.Tag)})
		if c.Versions != nil && completeVersions(o, cur, c) {
			out.Applied[i] = true
		}
		if c.Ver <= newest || c.VersionsOnly {
			continue
		}
		out.Applied[i], changed = true, true
		if old != nil {
			st.Objects--
			st.Bytes -= old.Size
		}
		if c.Entry != nil {
			e := *c.Entry
			e.Ver = c.Ver
			if e.Tag == "" { // the write's own; a versioned completion names the current version's
				e.Tag = c.Tag
			}
			b, _ := json.Marshal(e)
			o.OmapSet([]omap.KV{{Key: c.Key, Value: b}})
			o.OmapRm([]string{tk})
			cur[c.Key] = b
			delete(cur, tk)
			st.Objects++
			st.Bytes += e.Size
		} else {
			b, _ := json.Marshal(c.Ver)
			o.OmapSet([]omap.KV{{Key: tk, Value: b}})
			o.OmapRm([]string{c.Key})
			cur[tk] = b
			delete(cur, c.Key)
		}
	}
	if changed {
		b, _ := json.Marshal(st)
		o.OmapSet([]omap.KV{{Key: StatsKey, Value: b}})
	}
	out.Objects = st.Objects
	return out, nil
}

// completeVersions replaces c.Key's versions record with c's list if c
// is newer than the record (cur holds what the batch has read and
// written); it reports whether it did. A key without versions keeps a
// record with an empty list, as a tombstone that older completions
// cannot overwrite.
func completeVersions(o cls.Object, cur map[string][]byte, c CompleteIn) bool {
	vk := VersionsPrefix + c.Key
	if b, ok := cur[vk]; ok {
		var old Versions
		if json.Unmarshal(b, &old) == nil && old.Ver >= c.Ver {
			return false
		}
	}
	v := *c.Versions
	v.Ver = c.Ver
	b, _ := json.Marshal(v)
	o.OmapSet([]omap.KV{{Key: vk, Value: b}})
	cur[vk] = b
	return true
}

func cancel(o cls.Object, in []byte) ([]byte, error) {
	var x CancelIn
	if err := decode(in, &x, "rgw.cancel"); err != nil {
		return nil, err
	}
	if _, err := batch(o, &BatchIn{Cancels: []CancelIn{x}}); err != nil {
		return nil, err
	}
	return nil, nil
}

// SwapIn is rgw.omap_swap's input: set Key to Value on an existing object
// and return the value it replaces (empty if none) — the multipart upload
// state's atomic "record this part, tell me which upload of it I
// replaced". A missing object is ErrNotFound (the upload is gone).
type SwapIn struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

func omapSwap(o cls.Object, in []byte) ([]byte, error) {
	var x SwapIn
	if err := decode(in, &x, "rgw.omap_swap"); err != nil {
		return nil, err
	}
	if !o.Exists() {
		return nil, fmt.Errorf("%w: object does not exist", cls.ErrNotFound)
	}
	cur, err := o.OmapGet([]string{x.Key})
	if err != nil {
		return nil, err
	}
	o.OmapSet([]omap.KV{{Key: x.Key, Value: x.Value}})
	return cur[x.Key], nil
}

func init() {
	cls.Register("rgw", "omap_swap", omapSwap)
	cls.Register("rgw", "prepare", prepare)
	cls.Register("rgw", "complete", complete)
	cls.Register("rgw", "complete_batch", completeBatch)
	cls.Register("rgw", "cancel", cancel)
	cls.Register("rgw", "batch", rgwBatch)
}
