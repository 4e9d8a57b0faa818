package rgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrgw "github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/osdop"
)

// Bucket versioning (S3's PutBucketVersioning), as this layer keeps it.
//
// A bucket that never had versioning keeps one head per key, as the
// package doc describes. Once versioning is Enabled or Suspended, a key's
// head object is also its history (RGW's object logical head, OLH): the
// headAttr xattr is the current version's HeadInfo, as before, and one
// xattr per version, verAttrPrefix+VERSION_ID, holds that version's
// HeadInfo (a delete marker's records no data). Each version written
// while versioning is on keeps all its bytes in tails named after its
// write (HeadSize 0), so versions never share or move data: removing a
// version is removing its record and queueing its tails for GC. A head
// written before versioning (data inline, no version id) is the key's
// "null" version until a newer one is linked, which records it under
// "null" first; a later null version (written while Suspended) replaces
// it, truncating the inline bytes in the same request.
//
// Linking a version, adding a delete marker and removing a version are
// each one atomic request on the head object, guarded by the version
// of the head object it read (AssertVersion, or an exclusive create), and
// retried if another writer got in between: the head object is the commit
// point, as for unversioned writes, and readers see either the whole
// change or none of it. Xattrs rather than omap keep it on the data
// pool, which may be erasure-coded.
//
// The bucket index lists the current versions as before and keeps each
// key's list of versions beside its entry (cls/rgw's Versions record),
// completed with the head object's version as entries are, so a crash
// between the commit and the completion is resolved the same way
// (reconcile on listing, CheckBucket). ListObjects never reads the
// version records; ListObjectVersions reads them and, for keys written
// before versioning (no record), their entries as null versions.
//
// Costs: a versioned PUT reads the head object's xattrs before it links
// (one more round trip than an unversioned PUT, and bytes proportional
// to the key's versions); a GET of the current version reads the head's
// metadata, then the data from the tails (one more round trip than an
// unversioned small object, whose bytes sit in the head).

// Versioning states of a bucket (PutBucketVersioning's Status).
const (
	VersioningEnabled   = "Enabled"
	VersioningSuspended = "Suspended"
)

// NullVersion is the id of the version written while versioning is
// suspended, or before it was enabled.
const NullVersion = "null"

// verAttrPrefix begins the name of a head object's version records.
const verAttrPrefix = "rgw.ver."

// maxVersionIDLen bounds the version ids a request may name.
const maxVersionIDLen = 64

// Versioned reports whether versioning was ever enabled on the bucket
// (then its keys keep their versions, even while Suspended).
func (b *Bucket) Versioned() bool { return b.Versioning != "" }

// SetVersioning sets the bucket's versioning status (VersioningEnabled or
// VersioningSuspended; a bucket cannot return to unversioned, as S3).
//
// Versions other than "null" appear only once every gateway has read the
// bucket since it left the unversioned state: a gateway that still sees
// it unversioned overwrites and removes heads whole, which is harmless to
// null versions but would drop the others. So the first change records
// when it happened (Bucket.VersionedSince), going through Suspended if
// Enabled is asked for, and enabling waits versioningSettle since: the
// bucket cache's lifetime, and a margin for the writes that read the
// bucket before and recheck it (recheck).
func (s *Store) SetVersioning(ctx context.Context, name, status string) (*Bucket, error) {
	if status != VersioningEnabled && status != VersioningSuspended {
		return nil, s3err.MalformedXML.With("versioning status %q is neither Enabled nor Suspended", status)
	}
	set := func(status string) (*Bucket, error) {
		return s.UpdateBucket(ctx, name, func(b *Bucket) error {
			if b.Indexless() {
				return s3err.InvalidRequest.With("bucket %q keeps no index: it cannot list versions", name)
			}
			if b.LockEnabled() && status != VersioningEnabled {
				return s3err.InvalidBucketState.With("bucket %q has object lock: its versioning stays Enabled", name)
			}
			if !b.Versioned() {
				b.VersionedSince = time.Now()
			}
			b.Versioning = status
			return nil
		})
	}
	b, err := s.GetBucket(ctx, name)
	if err != nil {
		return nil, err
	}
	if status == VersioningEnabled {
		if !b.Versioned() {
			if b, err = set(VersioningSuspended); err != nil {
				return nil, err
			}
		}
		if err := sleepCtx(ctx, time.Until(b.VersionedSince.Add(versioningSettle))); err != nil {
			return nil, err
		}
	}
	return set(status)
}

// recheck returns b, or the bucket read again if b was loaded unversioned
// longer ago than the bucket cache's lifetime (a long upload, a
// lifecycle pass). A write or removal of a head that would follow an
// unversioned b must start less than versioningSettle after versioning
// was first set (SetVersioning waits that long before versions other
// than null can exist), and one that starts within cacheTTL of loading b
// does, with versioningSettle - cacheTTL (5 s) for its request to land.
func (s *Store) recheck(ctx context.Context, b *Bucket) (*Bucket, error) {
	if b.Versioned() || time.Since(b.loaded) < cacheTTL {
		return b, nil
	}
	nb, err := s.GetBucket(ctx, b.Name)
	if err != nil {
		return nil, err
	}
	if nb.ID != b.ID {
		return b, nil // recreated: the index tells the caller (NoSuchBucket)
	}
	return nb, nil
}

// newVersionID returns a random version id (32 characters, as RGW's).
func newVersionID() string {
	return randomKey(32, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
}

// olh is a key's head object as versioning reads it.
type olh struct {
	exists bool
	ver    uint64               // the head object's version
	cur    *HeadInfo            // headAttr (nil: none)
	vers   map[string]*HeadInfo // by version id, including a plain head as "null"
	plain  bool                 // cur was written without versioning: the null version, not yet recorded
}

// readOLH reads key's head object and its version records.
func (s *Store) readOLH(ctx context.Context, b *Bucket, key string) (*olh, error) {
	return s.readOLHAt(ctx, HeadOID(b.ID, key))
}

// readOLHAt is readOLH of head object oid.
func (s *Store) readOLHAt(ctx context.Context, oid string) (*olh, error) {
	rep, err := s.data.Operate(ctx, oid, []osdop.Op{{Code: osdop.GetXattrs}})
	o := &olh{vers: map[string]*HeadInfo{}}
	if errors.Is(err, client.ErrNotFound) {
		return o, nil
	}
	if err != nil {
		return nil, fmt.Errorf("head %s: %w", oid, err)
	}
	o.exists, o.ver = true, rep.Ver
	for _, kv := range rep.Results[0].KVs {
		switch {
		case kv.Key == headAttr:
			o.cur = &HeadInfo{}
			if err := json.Unmarshal(kv.Value, o.cur); err != nil {
				return nil, fmt.Errorf("head %s: metadata: %w", oid, err)
			}
		case strings.HasPrefix(kv.Key, verAttrPrefix):
			h := &HeadInfo{}
			if err := json.Unmarshal(kv.Value, h); err != nil {
				return nil, fmt.Errorf("head %s: version %s: %w", oid, kv.Key, err)
			}
			o.vers[kv.Key[len(verAttrPrefix):]] = h
		}
	}
	if o.cur != nil && o.cur.VersionID == "" {
		o.plain = true
		n := *o.cur
		n.VersionID = NullVersion
		o.vers[NullVersion] = &n
	}
	return o, nil
}

// list returns the versions newest first.
func (o *olh) list() []*HeadInfo {
	out := make([]*HeadInfo, 0, len(o.vers))
	for _, h := range o.vers {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seq != out[j].Seq {
			return out[i].Seq > out[j].Seq
		}
		return out[i].Mtime > out[j].Mtime
	})
	return out
}

// current is the current version, nil if the key has none or it is a
// delete marker (what a write's conditions and a listing see).
func (o *olh) current() *HeadInfo {
	if o.cur == nil || o.cur.DeleteMarker {
		return nil
	}
	return o.cur
}

// guard is the first op of a write based on what o read.
func (o *olh) guard() osdop.Op {
	if !o.exists {
		return osdop.Op{Code: osdop.Create, Exclusive: true}
	}
	return osdop.Op{Code: osdop.AssertVersion, Ver: o.ver}
}

// inline reports whether h's first bytes are in the head object itself
// (a head written before versioning).
func (h *HeadInfo) inline() bool { return h.HeadSize > 0 }

// versionsIn is the index's record of versions vs (newest first).
func versionsIn(vs []*HeadInfo) *clsrgw.Versions {
	out := &clsrgw.Versions{List: make([]clsrgw.Version, 0, len(vs))}
	for _, h := range vs {
		out.List = append(out.List, clsrgw.Version{ID: h.VersionID, DeleteMarker: h.DeleteMarker, Size: h.Size, Mtime: h.Mtime,
			ETag: h.ETag, Owner: h.Owner, StorageClass: h.Class})
	}
	return out
}

// completeIn is the index completion that makes the listing agree with
// state o (after a change committed at head version ver) and clears
// tag's pending record; the entry carries the current version's own tag
// (lifecycle and bucket check compare it with the head's).
func (o *olh) completeIn(key, tag string, ver uint64) clsrgw.CompleteIn {
	in := clsrgw.CompleteIn{Key: key, Tag: tag, Ver: ver, Versions: versionsIn(o.list())}
	if h := o.current(); h != nil {
		in.Entry = h.entry()
		in.Entry.Tag = h.Tag
	}
	return in
}

// gcEnqueueVersion queues the tails of version h of head object oid; GC
// checks the head again before removing them, and keeps them if any
// version there still names them.
func (s *Store) gcEnqueueVersion(ctx context.Context, oid string, h *HeadInfo) {
	s.gcAdd(ctx, &GCEntry{Tag: h.Tag, Head: oid, StripeSize: h.StripeSize, Segments: h.Segments})
}

// maxLinkAttempts bounds the retries of a version change that raced
// with others on the same key.
const maxLinkAttempts = 64

// dropInline empties a head object's data (the inline bytes of a null
// version whose bytes leave it): a full write of nothing, which an EC
// pool without overwrites takes where it refuses a truncate.
var dropInline = osdop.Op{Code: osdop.WriteFull}

// linkVersion makes h, whose tails are written, the current version of
// key in a versioned bucket: a new version (Enabled) or the null version
// (Suspended), replacing the null version if there is one. The index
// prepare is the caller's. On failure the tails are removed (ownTails)
// when the head surely was not written.
func (s *Store) linkVersion(ctx context.Context, b *Bucket, key string, h *HeadInfo, cond WriteCond, ownTails bool) (*PutResult, error) {
	h.VersionID = newVersionID()
	if b.Versioning == VersioningSuspended {
		h.VersionID = NullVersion
	}
	oid := HeadOID(b.ID, key)
	fail := func(err error, sure bool) (*PutResult, error) {
		if ownTails && sure && !h.DeleteMarker {
			s.removeTails(h.tailOIDs())
		}
		s.cancel(context.WithoutCancel(ctx), b, key, h.Tag)
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		o, err := s.readOLH(ctx, b, key)
		if err != nil {
			return fail(fmt.Errorf("put %s/%s: %w", b.Name, key, err), true)
		}
		for _, v := range o.vers {
			if v.Tag == h.Tag && !h.DeleteMarker {
				// this write is linked already (a multipart completion
				// retried): the same version, not a second one sharing
				// its tails; the index is completed from the head, in
				// case the first attempt's completion was lost
				s.completeAsyncIn(b, o.completeIn(key, h.Tag, o.ver))
				return v.result(), nil
			}
		}
		if err := cond.check(o.current(), key); err != nil {
			return fail(err, true)
		}
		var seq uint64
		for _, v := range o.vers {
			seq = max(seq, v.Seq)
		}
		h.Seq, h.Mtime = seq+1, time.Now().UnixNano()
		replaced := o.vers[h.VersionID]
		if replaced != nil {
			if err := replaced.removable(time.Now(), false); err != nil {
				return fail(err, true)
			}
		}
		ops := []osdop.Op{o.guard()}
		if replaced != nil && replaced.inline() {
			ops = append(ops, dropInline)
		}
		if o.plain && h.VersionID != NullVersion {
			nb, _ := json.Marshal(o.vers[NullVersion])
			ops = append(ops, osdop.Op{Code: osdop.SetXattr, Name: verAttrPrefix + NullVersion, Data: nb})
		}
		hb, _ := json.Marshal(h)
		ops = append(ops, osdop.Op{Code: osdop.SetXattr, Name: verAttrPrefix + h.VersionID, Data: hb},
			osdop.Op{Code: osdop.SetXattr, Name: headAttr, Data: hb})
		rep, err := s.data.Operate(ctx, oid, ops)
		if raced(err) && attempt < maxLinkAttempts {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("put %s/%s: head: %w", b.Name, key, err), refused(err))
		}
		cctx := context.WithoutCancel(ctx)
		if s.failpoint == "before-complete" {
			return h.result(), nil
		}
		if replaced != nil && replaced.Tag != h.Tag {
			s.gcEnqueueVersion(cctx, oid, replaced)
		}
		o.vers[h.VersionID], o.cur, o.plain = h, h, false
		s.completeAsyncIn(b, o.completeIn(key, h.Tag, rep.Ver))
		return h.result(), nil
	}
}

// DeleteResult is what a DELETE of a key or version did.
type DeleteResult struct {
	VersionID    string // the version removed or the delete marker made ("" unversioned)
	DeleteMarker bool   // a delete marker was made, or the version removed was one
}

// DeleteVersion removes version vid of key; with vid "" it deletes the key
// as S3 does for the bucket's versioning state: unversioned, the object
// goes (DeleteObjectIf with cond); versioned, a delete marker becomes the
// current version (Suspended: the null version, replacing it). Removing
// the current version makes the next newest current. A version that does
// not exist is not an error (S3). owner owns a delete marker made.
func (s *Store) DeleteVersion(ctx context.Context, b *Bucket, key, vid, owner string, cond DeleteCond) (DeleteResult, error) {
	b, err := s.recheck(ctx, b)
	if err != nil {
		return DeleteResult{}, err
	}
	switch {
	case vid == "" && !b.Versioned():
		return DeleteResult{}, s.DeleteObjectIf(ctx, b, key, cond)
	case vid == "":
		if !cond.empty() { // checked against the version read, not atomically with the marker's link
			o, err := s.readOLH(ctx, b, key)
			if err != nil {
				return DeleteResult{}, err
			}
			if o.cur == nil { // no such key: deleted already
				return DeleteResult{}, nil
			}
			// a current delete marker is checked too (as RGW: If-Match
			// "*" holds, an ETag does not)
			if err := cond.check(o.cur, key); err != nil {
				return DeleteResult{}, err
			}
		}
		h := &HeadInfo{Tag: NewTag(), DeleteMarker: true, Owner: owner}
		if err := s.prepare(ctx, b, key, h.Tag, "del"); err != nil {
			return DeleteResult{}, err
		}
		r, err := s.linkVersion(ctx, b, key, h, WriteCond{}, false)
		if err != nil {
			return DeleteResult{}, err
		}
		return DeleteResult{VersionID: r.VersionID, DeleteMarker: true}, nil
	case len(vid) > maxVersionIDLen:
		return DeleteResult{}, s3err.InvalidArgument.With("invalid version id %q", vid)
	case vid == NullVersion && !b.Versioned():
		return DeleteResult{VersionID: vid}, s.DeleteObjectIf(ctx, b, key, cond)
	}
	return s.unlinkVersion(ctx, b, key, vid, cond)
}

// unlinkVersion removes version vid of key from its head object (the
// object itself with the last version) and queues its tails for GC.
func (s *Store) unlinkVersion(ctx context.Context, b *Bucket, key, vid string, cond DeleteCond) (DeleteResult, error) {
	tag := NewTag()
	if err := s.prepare(ctx, b, key, tag, "del"); err != nil {
		return DeleteResult{}, err
	}
	for attempt := 0; ; attempt++ {
		o, err := s.readOLH(ctx, b, key)
		if err != nil {
			s.cancel(context.WithoutCancel(ctx), b, key, tag)
			return DeleteResult{}, err
		}
		rec := o.vers[vid]
		if rec == nil {
			s.cancel(ctx, b, key, tag)
			return DeleteResult{VersionID: vid}, nil
		}
		if !rec.DeleteMarker {
			if err := cond.check(rec, key); err != nil {
				s.cancel(ctx, b, key, tag)
				return DeleteResult{}, err
			}
		}
		if err := rec.removable(time.Now(), cond.BypassGovernance); err != nil {
			s.cancel(ctx, b, key, tag)
			return DeleteResult{}, err
		}
		delete(o.vers, vid)
		rest := o.list()
		ops := []osdop.Op{o.guard()}
		if len(rest) == 0 {
			ops = append(ops, osdop.Op{Code: osdop.Remove})
		} else {
			if rec.inline() {
				ops = append(ops, dropInline)
			}
			if !(o.plain && vid == NullVersion) {
				ops = append(ops, osdop.Op{Code: osdop.RmXattr, Name: verAttrPrefix + vid})
			}
			if o.cur != nil && (o.cur.VersionID == vid || (o.plain && vid == NullVersion)) {
				hb, _ := json.Marshal(rest[0])
				ops = append(ops, osdop.Op{Code: osdop.SetXattr, Name: headAttr, Data: hb})
				o.cur, o.plain = rest[0], false
			}
		}
		rep, err := s.data.Operate(ctx, HeadOID(b.ID, key), ops)
		if raced(err) && attempt < maxLinkAttempts {
			continue
		}
		if err != nil {
			s.cancel(context.WithoutCancel(ctx), b, key, tag)
			return DeleteResult{}, fmt.Errorf("delete %s/%s version %s: %w", b.Name, key, vid, err)
		}
		cctx := context.WithoutCancel(ctx)
		if !rec.DeleteMarker {
			s.gcEnqueueVersion(cctx, HeadOID(b.ID, key), rec)
		}
		if len(rest) == 0 {
			o.cur = nil
		}
		if s.failpoint != "before-complete" {
			s.completeAsyncIn(b, o.completeIn(key, tag, rep.Ver))
		}
		return DeleteResult{VersionID: vid, DeleteMarker: rec.DeleteMarker}, nil
	}
}

// DeleteMarkerError is the answer to a read of a delete marker: NoSuchKey
// when it is the current version, MethodNotAllowed when it was named by
// its version id. The S3 edge adds x-amz-delete-marker and the marker's
// version id to the error.
type DeleteMarkerError struct {
	VersionID string
	Err       error
}

func (e *DeleteMarkerError) Error() string { return e.Err.Error() + " (a delete marker)" }
func (e *DeleteMarkerError) Unwrap() error { return e.Err }

// OpenVersion is OpenObject of version vid ("": the current version) in a
// versioned bucket or not: s3err.NoSuchKey if the key has no current
// version, NoSuchVersion if it has no version vid, DeleteMarkerError if
// the version is a delete marker.
func (s *Store) OpenVersion(ctx context.Context, b *Bucket, key, vid string, withData bool) (*Object, error) {
	if vid == "" {
		o, err := s.OpenObject(ctx, b, key, withData)
		if err == nil && o.Info.DeleteMarker {
			o.Close()
			return nil, &DeleteMarkerError{VersionID: o.Info.VersionID, Err: s3err.NoSuchKey.With("key %q: the current version is a delete marker", key)}
		}
		return o, err
	}
	if len(vid) > maxVersionIDLen {
		return nil, s3err.InvalidArgument.With("invalid version id %q", vid)
	}
	oid := HeadOID(b.ID, key)
	ops := []osdop.Op{{Code: osdop.GetXattr, Name: verAttrPrefix + vid, FailOK: true}, {Code: osdop.GetXattr, Name: headAttr, FailOK: true}}
	if withData {
		ops = append(ops, osdop.Op{Code: osdop.Read})
	}
	rep, rel, err := s.data.OperateRef(ctx, oid, ops)
	if errors.Is(err, client.ErrNotFound) {
		return nil, s3err.NoSuchVersion.With("key %q has no version %q", key, vid)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s/%s version %s: %w", b.Name, key, vid, err)
	}
	h := &HeadInfo{}
	switch {
	case len(rep.Results[0].Data) > 0:
		err = json.Unmarshal(rep.Results[0].Data, h)
	case vid == NullVersion && len(rep.Results[1].Data) > 0:
		if err = json.Unmarshal(rep.Results[1].Data, h); err == nil && h.VersionID != "" {
			h = nil // the current version is another one: no null version
		}
	default:
		h = nil
	}
	if err != nil {
		rel()
		return nil, fmt.Errorf("get %s/%s version %s: metadata: %w", b.Name, key, vid, err)
	}
	if h == nil {
		rel()
		return nil, s3err.NoSuchVersion.With("key %q has no version %q", key, vid)
	}
	if h.VersionID == "" {
		h.VersionID = NullVersion
	}
	if h.DeleteMarker {
		rel()
		return nil, &DeleteMarkerError{VersionID: vid, Err: s3err.MethodNotAllowed.With("version %q of key %q is a delete marker", vid, key)}
	}
	obj := &Object{s: s, b: b, Key: key, Info: h}
	if withData && h.inline() {
		obj.head, obj.release = rep.Results[2].Data, rel
	} else {
		rel()
	}
	return obj, nil
}

// VersionID is the object's version id as S3 shows it: "" in a bucket
// that never had versioning, "null" for a version written without one.
func (o *Object) VersionID() string {
	if o.Info.VersionID == "" && o.b.Versioned() {
		return NullVersion
	}
	return o.Info.VersionID
}

// UpdateVersion changes the metadata (ACL, tags) of version vid of key
// ("": the current version) with fn, atomically with respect to other
// writes of the key.
func (s *Store) UpdateVersion(ctx context.Context, b *Bucket, key, vid string, fn func(h *HeadInfo) error) error {
	b, err := s.recheck(ctx, b)
	if err != nil {
		return err
	}
	if !b.Versioned() && (vid == "" || vid == NullVersion) {
		return s.UpdateHead(ctx, b, key, fn)
	}
	for attempt := 0; ; attempt++ {
		o, err := s.readOLH(ctx, b, key)
		if err != nil {
			return err
		}
		id := vid
		if id == "" {
			if o.current() == nil {
				return s3err.NoSuchKey.With("key %q does not exist", key)
			}
			id = o.cur.VersionID
			if o.plain {
				id = NullVersion
			}
		}
		h := o.vers[id]
		switch {
		case h == nil:
			return s3err.NoSuchVersion.With("key %q has no version %q", key, id)
		case h.DeleteMarker:
			return s3err.MethodNotAllowed.With("version %q of key %q is a delete marker", id, key)
		}
		if err := fn(h); err != nil {
			return err
		}
		isCur := o.cur.VersionID == id || (o.plain && id == NullVersion)
		ops := []osdop.Op{o.guard()}
		if o.plain && id == NullVersion {
			h.VersionID = "" // the plain head stays plain
		} else {
			hb, _ := json.Marshal(h)
			ops = append(ops, osdop.Op{Code: osdop.SetXattr, Name: verAttrPrefix + id, Data: hb})
		}
		if isCur {
			hb, _ := json.Marshal(h)
			ops = append(ops, osdop.Op{Code: osdop.SetXattr, Name: headAttr, Data: hb})
		}
		_, err = s.data.Operate(ctx, HeadOID(b.ID, key), ops)
		if raced(err) && attempt < maxLinkAttempts {
			continue
		}
		return err
	}
}

// ListedVersion is one row of ListObjectVersions.
type ListedVersion struct {
	Key string
	clsrgw.Version
	IsLatest bool
}

// VersionListing is one page of ListObjectVersions.
type VersionListing struct {
	Versions            []ListedVersion
	Prefixes            []string
	Truncated           bool
	NextKeyMarker       string
	NextVersionIDMarker string
}

// keyBefore returns a start-after that lists k itself: k with its last
// byte one less and followed by bytes UTF-8 never holds (keys are UTF-8
// without NUL).
func keyBefore(k string) string {
	if k == "" {
		return ""
	}
	return k[:len(k)-1] + string([]byte{k[len(k)-1] - 1}) + "\xff\xff\xff\xff"
}

// ListVersions returns up to maxKeys versions and common prefixes of keys
// with the prefix, after (keyMarker, vidMarker) — every version of a key
// newest first, delete markers among them (S3's ListObjectVersions
// semantics). Keys written before versioning (or in a bucket that never
// had it) show their one version as "null".
func (s *Store) ListVersions(ctx context.Context, b *Bucket, prefix, delim, keyMarker, vidMarker string, maxKeys int) (*VersionListing, error) {
	l := &VersionListing{}
	if maxKeys <= 0 {
		return l, nil
	}
	after := keyMarker
	if vidMarker != "" {
		after = keyBefore(keyMarker)
	} else if delim != "" && after != "" && strings.HasPrefix(after, prefix) {
		if i := strings.Index(after[len(prefix):], delim); i >= 0 {
			after = after[:len(prefix)+i+len(delim)] + "\xff"
		}
	}
	count := 0
	for {
		batch, more, err := s.listMerged(ctx, b, after, prefix, 1000, true)
		if err != nil {
			return nil, err
		}
		rolled := false
		for _, e := range batch {
			if delim != "" {
				if i := strings.Index(e.Key[len(prefix):], delim); i >= 0 {
					cp := e.Key[:len(prefix)+i+len(delim)]
					if count == maxKeys {
						l.Truncated = true
						return l, nil
					}
					l.Prefixes = append(l.Prefixes, cp)
					l.NextKeyMarker, l.NextVersionIDMarker = cp, ""
					count++
					after = cp + "\xff"
					rolled = true
					break
				}
			}
			list := e.Versions.List
			if e.Key == keyMarker && vidMarker != "" {
				// resume after the marker; a marker removed since the
				// last page resumes at the key's newest version (rows
				// shown twice rather than rows lost)
				if i := slices.IndexFunc(list, func(v clsrgw.Version) bool { return v.ID == vidMarker }); i >= 0 {
					list = list[i+1:]
				}
			}
			for _, v := range list {
				if count == maxKeys {
					l.Truncated = true
					return l, nil
				}
				l.Versions = append(l.Versions, ListedVersion{Key: e.Key, Version: v, IsLatest: v.ID == e.Versions.List[0].ID})
				l.NextKeyMarker, l.NextVersionIDMarker = e.Key, v.ID
				count++
			}
			after = e.Key
		}
		if !rolled && !more {
			return l, nil
		}
	}
}

// olhVersions is the index's view of key's head object: its versions
// record (nil if the key has none) and the head's version.
func (s *Store) olhVersions(ctx context.Context, b *Bucket, key string) (*clsrgw.Versions, uint64, error) {
	o, err := s.readOLH(ctx, b, key)
	if err != nil || len(o.vers) == 0 {
		return nil, 0, err
	}
	v := versionsIn(o.list())
	v.Ver = o.ver
	return v, o.ver, nil
}

// tailsOf lists the tails of every version a head object records
// (CheckOrphans' view of what is in use).
func (o *olh) tailsOf() []string {
	var out []string
	for _, h := range o.vers {
		out = append(out, h.tailOIDs()...)
	}
	if o.cur != nil && !o.plain {
		out = append(out, o.cur.tailOIDs()...)
	}
	return out
}

// checkPendingVersioned is CheckBucket's checkPending in a versioned
// bucket: an operation whose write landed (a version with its tag, or
// any removal) is completed from the head object's state; a put whose
// link never happened is abandoned, its tails queued for GC.
func (s *Store) checkPendingVersioned(ctx context.Context, b *Bucket, key, tag string, p clsrgw.Pending, rep *CheckReport) error {
	o, err := s.readOLH(ctx, b, key)
	if err != nil {
		return err
	}
	if o.uses(tag) || p.Op == "del" {
		rep.Completed++
		return s.completeFromOLH(ctx, b, key, tag, o)
	}
	rep.Abandoned++
	s.gcAdd(ctx, s.orphanTails(ctx, b, tag))
	s.cancel(ctx, b, key, tag)
	return nil
}

// completeFromOLH makes key's index entry and versions record agree with
// its head object's state o (completing tag's pending record). A key
// without a head object gets a removal just above the versions the index
// holds for it: the removal's own version is unknown but higher.
func (s *Store) completeFromOLH(ctx context.Context, b *Bucket, key, tag string, o *olh) error {
	if o.exists {
		return s.completeIn(ctx, b, o.completeIn(key, tag, o.ver))
	}
	shard := b.Index.writeShards(b.ID, key)[0]
	kvs, err := s.index.OmapGet(ctx, shard, []string{key, clsrgw.TombstonePrefix + key, clsrgw.VersionsPrefix + key})
	if err != nil {
		return err
	}
	var top uint64
	for _, kv := range kvs {
		var rec struct {
			Ver uint64 `json:"ver"`
		}
		var t uint64
		switch {
		case json.Unmarshal(kv.Value, &rec) == nil:
			top = max(top, rec.Ver)
		case json.Unmarshal(kv.Value, &t) == nil:
			top = max(top, t)
		}
	}
	return s.completeIn(ctx, b, clsrgw.CompleteIn{Key: key, Tag: tag, Ver: top + 1, Versions: &clsrgw.Versions{}})
}

// uses reports whether a version of the head object was written by
// write tag (its tails are that version's).
func (o *olh) uses(tag string) bool {
	if o.cur != nil && o.cur.Tag == tag {
		return true
	}
	for _, h := range o.vers {
		if h.Tag == tag {
			return true
		}
	}
	return false
}
