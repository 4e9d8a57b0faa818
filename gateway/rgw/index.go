package rgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrgw "github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/internal/sem"
	"github.com/shoal-project/shoal/osdop"
)

// indexCall applies an index update (one of u's prepare, complete,
// cancel) to every shard an update of key goes to, with the bucket's
// current layout (a long upload that began before a reshard updates the
// shards of the layout in force when it ends), through the shard's
// batcher. A shard that is gone means the layout changed or the bucket
// was deleted: the entry point is read again and the call retried once.
// It returns the last shard's answer.
func (s *Store) indexCall(ctx context.Context, b *Bucket, key string, u indexUpdate) (*indexUpdate, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.LookupBucket(ctx, b.Name)
		if err != nil || cur.ID != b.ID {
			return nil, s3err.NoSuchBucket.With("bucket %q does not exist", b.Name)
		}
		if cur.Indexless() {
			return &indexUpdate{}, nil
		}
		var missing bool
		var last *indexUpdate
		for _, oid := range cur.Index.writeShards(cur.ID, key) {
			last = &indexUpdate{prepare: u.prepare, complete: u.complete, cancel: u.cancel}
			err = s.batch.do(ctx, oid, last)
			if errors.Is(err, client.ErrNotFound) {
				missing = true
				break
			}
			if err != nil {
				return nil, fmt.Errorf("bucket %s: index %s %q: %w", b.Name, u.method(), key, err)
			}
		}
		if !missing {
			return last, nil
		}
		s.ForgetBucket(b.Name)
		if attempt > 0 {
			return nil, s3err.NoSuchBucket.With("bucket %q does not exist", b.Name)
		}
	}
}

// method names u's kind for errors.
func (u *indexUpdate) method() string {
	switch {
	case u.prepare != nil:
		return "prepare"
	case u.complete != nil:
		return "complete"
	}
	return "cancel"
}

// prepare records a pending operation on key (phase one). A missing shard
// (the bucket was deleted) gives NoSuchBucket.
func (s *Store) prepare(ctx context.Context, b *Bucket, key, tag, op string) error {
	if b.Indexless() {
		return nil
	}
	_, err := s.indexCall(ctx, b, key, indexUpdate{prepare: &clsrgw.PrepareIn{Key: key, Tag: tag, Op: op, Mtime: time.Now().UnixNano()}})
	return err
}

// complete records the outcome of a prepared operation (phase two): e is
// the new entry of a put, nil for a delete; ver the head's version.
func (s *Store) complete(ctx context.Context, b *Bucket, key, tag string, ver uint64, e *clsrgw.Entry) error {
	return s.completeIn(ctx, b, clsrgw.CompleteIn{Key: key, Tag: tag, Ver: ver, Entry: e})
}

// completeIn is complete with its whole input (a versioned bucket's
// completion also carries the key's versions).
func (s *Store) completeIn(ctx context.Context, b *Bucket, in clsrgw.CompleteIn) error {
	if b.Indexless() {
		return nil
	}
	in.Mtime = time.Now().UnixNano()
	out, err := s.indexCall(ctx, b, in.Key, indexUpdate{complete: &in})
	if err == nil && s.opt.MaxObjsPerShard > 0 && out.objects > s.opt.MaxObjsPerShard {
		s.queueReshard(b.Name)
	}
	return err
}

// completeAsync completes an operation whose head write succeeded
// without making its request wait for it, as RGW sends its index
// completions: the request has already reached its commit point, and
// until the completion lands the key's pending record makes listings read
// the head itself (reconcile), so the listing is right either way, and a
// completion lost with its gateway is finished by `shoal bucket check
// --fix`. At most maxAsyncCompletions are outstanding (then the caller
// waits for room); Flush waits for them.
func (s *Store) completeAsync(b *Bucket, key, tag string, ver uint64, e *clsrgw.Entry) {
	s.completeAsyncIn(b, clsrgw.CompleteIn{Key: key, Tag: tag, Ver: ver, Entry: e})
}

// completeAsyncIn is completeAsync with its whole input.
func (s *Store) completeAsyncIn(b *Bucket, in clsrgw.CompleteIn) {
	if b.Indexless() {
		return
	}
	s.asyncSlots <- struct{}{}
	s.async.Add(1)
	go func() {
		defer s.async.Done()
		defer func() { <-s.asyncSlots }()
		ctx, cancel := context.WithTimeout(context.Background(), asyncCompletionTimeout)
		defer cancel()
		if err := s.completeIn(ctx, b, in); err != nil {
			s.opt.Logger.Warn("index complete failed; `shoal bucket check --fix` resolves it", "bucket", b.Name, "key", in.Key, "err", err)
		}
	}()
}

const (
	// maxAsyncCompletions bounds the index completions a gateway has in
	// flight after answering their requests.
	maxAsyncCompletions = 4096
	// asyncCompletionTimeout bounds one (the cluster unavailable: the
	// pending record stays, and listings and bucket check handle it).
	asyncCompletionTimeout = 5 * time.Minute
)

// Flush waits, until ctx ends, for the index completions the store has
// in flight (a gateway stopping calls it).
func (s *Store) Flush(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.async.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gateway: index completions still in flight: %w", ctx.Err())
	}
}

// cancel drops a prepared operation whose data write failed.
func (s *Store) cancel(ctx context.Context, b *Bucket, key, tag string) {
	if b.Indexless() {
		return
	}
	if _, err := s.indexCall(ctx, b, key, indexUpdate{cancel: &clsrgw.CancelIn{Key: key, Tag: tag}}); err != nil {
		s.opt.Logger.Warn("index cancel failed; `shoal bucket check --fix` resolves it", "bucket", b.Name, "key", key, "err", err)
	}
}

// listEntry is an index entry with its key; in a listing of versions,
// the key's versions instead (newest first; never empty).
type listEntry struct {
	Key string
	clsrgw.Entry
	Versions *clsrgw.Versions
}

// listMerged returns up to n entries after `after` (exclusive) with the
// prefix, in key order, and whether more may exist. It reads the ranges
// in key order, stopping at the first that completes the page; within a
// range it asks each sub-shard for n entries (the n smallest of the union
// are among them) and merges. With versions, the entries are keys with
// their versions (listShard).
func (s *Store) listMerged(ctx context.Context, b *Bucket, after, prefix string, n int, versions bool) ([]listEntry, bool, error) {
	if b.Indexless() {
		return nil, false, s3err.Indexless
	}
	start := after
	if start < clsrgw.EntriesAfter && !versions {
		start = clsrgw.EntriesAfter
	}
	l := b.Index
	var all []listEntry
	ranges := l.listRanges(after, prefix)
	for k, ri := range ranges {
		ents, more, err := s.listRange(ctx, b, &l.Ranges[ri], start, prefix, n-len(all), versions)
		if err != nil {
			return nil, false, err
		}
		all = append(all, ents...)
		if len(all) >= n || more {
			return all, more || len(all) > n || k < len(ranges)-1, nil
		}
	}
	return all, false, nil
}

// listRange lists up to n entries of one range: a k-way merge of its
// sub-shards that reads each in batches of about 2n/shards entries (a
// page costs about 2n entries read whatever the sub-shard count), and
// emits an entry only once every sub-shard that may hold a smaller one
// has been read past it.
func (s *Store) listRange(ctx context.Context, b *Bucket, r *IndexRange, start, prefix string, n int, versions bool) ([]listEntry, bool, error) {
	type cursor struct {
		oid   string
		kvs   []client.KV
		i     int
		more  bool
		after string
	}
	oids := r.oids(b.ID)
	cs := make([]*cursor, len(oids))
	for i, oid := range oids {
		cs[i] = &cursor{oid: oid, more: true, after: start}
	}
	batch := min(n+1, max(32, 2*n/len(oids)+1))
	var out []listEntry
	for {
		// refill the sub-shards whose batch is used up
		var wg sync.WaitGroup
		errs := make([]error, len(cs))
		for i, c := range cs {
			if c.i < len(c.kvs) || !c.more {
				continue
			}
			s.listReads.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				kvs, more, err := s.listShard(ctx, b, c.oid, c.after, prefix, batch, versions)
				c.kvs, c.i, c.more, errs[i] = kvs, 0, more, err
				if len(kvs) > 0 {
					c.after = kvs[len(kvs)-1].Key
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return nil, false, fmt.Errorf("bucket %s: list %s: %w", b.Name, oids[i], err)
			}
		}
		// entries up to the smallest last key of a sub-shard with more
		// are complete
		bound, bounded := "", false
		for _, c := range cs {
			if c.more && (!bounded || c.after < bound) {
				bound, bounded = c.after, true
			}
		}
		for {
			var min *cursor
			for _, c := range cs {
				if c.i < len(c.kvs) && (min == nil || c.kvs[c.i].Key < min.kvs[min.i].Key) {
					min = c
				}
			}
			if min == nil {
				if !bounded {
					return out, false, nil
				}
				break
			}
			kv := min.kvs[min.i]
			if bounded && kv.Key > bound {
				break
			}
			if len(out) == n {
				return out, true, nil
			}
			min.i++
			if strings.HasPrefix(kv.Key, "\x00") {
				continue
			}
			e := listEntry{Key: kv.Key}
			v := any(&e.Entry)
			if versions {
				e.Versions = &clsrgw.Versions{}
				v = e.Versions
			}
			if err := json.Unmarshal(kv.Value, v); err != nil {
				return nil, false, fmt.Errorf("bucket %s: %s entry %q: %w", b.Name, min.oid, kv.Key, err)
			}
			if versions && len(e.Versions.List) == 0 {
				continue // a key whose versions are all removed
			}
			out = append(out, e)
		}
	}
}

// listShard reads up to n entries of shard oid after `after` with the
// prefix, and whether it holds more, as the listing should show them: in
// the same request it reads the shard's pending records of the keys in
// that interval, and the entries of those keys are taken from their heads
// (reconcile). The entries are sorted; the interval they cover ends at
// the last raw entry read (kvs may have lost or gained keys in it).
// With versions, each key's value is its clsrgw.Versions: its versions
// record, or for a key without one (written before versioning) its entry
// as the null version.
func (s *Store) listShard(ctx context.Context, b *Bucket, oid, after, prefix string, n int, versions bool) (kvs []client.KV, more bool, err error) {
	ops := []osdop.Op{{Code: osdop.OmapList, Name: max(after, clsrgw.EntriesAfter), Prefix: prefix, Max: uint32(n)},
		{Code: osdop.OmapList, Name: pendingAfter(after), Prefix: clsrgw.PendingPrefix + prefix, Max: pendingBatch}}
	if versions {
		ops = append(ops, osdop.Op{Code: osdop.OmapList, Name: clsrgw.VersionsPrefix + after, Prefix: clsrgw.VersionsPrefix + prefix, Max: uint32(n)})
	}
	rep, err := s.index.Operate(ctx, oid, ops)
	if errors.Is(err, client.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	kvs, more = rep.Results[0].KVs, rep.Results[0].More
	if versions {
		kvs, more = mergeVersions(kvs, more, rep.Results[2].KVs, rep.Results[2].More)
	}
	bound := "" // the interval's last key ("" with more = false: none)
	if more {
		bound = kvs[len(kvs)-1].Key
	}
	var keys []string
	pend, pmore := rep.Results[1].KVs, rep.Results[1].More
	for {
		last := ""
		for _, kv := range pend {
			k, _, ok := clsrgw.SplitPendingKey(kv.Key)
			if !ok || (more && k > bound) {
				pmore = false
				break
			}
			if len(keys) == 0 || keys[len(keys)-1] != k {
				keys = append(keys, k)
			}
			last = kv.Key
		}
		if !pmore {
			break
		}
		if pend, pmore, err = s.index.OmapList(ctx, oid, last, clsrgw.PendingPrefix+prefix, pendingBatch); err != nil {
			return nil, false, err
		}
	}
	if len(keys) == 0 {
		return kvs, more, nil
	}
	kvs, err = s.reconcile(ctx, b, kvs, keys, versions)
	return kvs, more, err
}

// mergeVersions merges a shard's entries and versions records (each
// sorted, each with its own "more") into one sorted list of keys with
// their clsrgw.Versions, cut at the smaller of the two lists' last keys
// where either has more: past it, one list's keys are not all read.
func mergeVersions(ents []client.KV, emore bool, vers []client.KV, vmore bool) ([]client.KV, bool) {
	bound, bounded := "", false
	if emore && len(ents) > 0 {
		bound, bounded = ents[len(ents)-1].Key, true
	}
	if vmore && len(vers) > 0 {
		if k := vers[len(vers)-1].Key[len(clsrgw.VersionsPrefix):]; !bounded || k < bound {
			bound, bounded = k, true
		}
	}
	out := make([]client.KV, 0, len(ents)+len(vers))
	i, j := 0, 0
	for i < len(ents) || j < len(vers) {
		var kv client.KV
		vk := ""
		if j < len(vers) {
			vk = vers[j].Key[len(clsrgw.VersionsPrefix):]
		}
		switch {
		case j == len(vers) || (i < len(ents) && ents[i].Key < vk):
			var e clsrgw.Entry
			if json.Unmarshal(ents[i].Value, &e) != nil {
				i++
				continue
			}
			v, _ := json.Marshal(clsrgw.Versions{Ver: e.Ver, List: []clsrgw.Version{{ID: NullVersion, Size: e.Size, Mtime: e.Mtime,
				ETag: e.ETag, Owner: e.Owner, StorageClass: e.StorageClass}}})
			kv = client.KV{Key: ents[i].Key, Value: v}
			i++
		default:
			if i < len(ents) && ents[i].Key == vk {
				i++ // the record supersedes the entry
			}
			kv = client.KV{Key: vk, Value: vers[j].Value}
			j++
		}
		if bounded && kv.Key > bound {
			break
		}
		out = append(out, kv)
	}
	return out, emore || vmore
}

// pendingBatch is how many pending records a listing reads with a batch
// of entries (more are read if there are).
const pendingBatch = 256

// pendingAfter is the omap start-after of the pending records of keys
// after `after` (an entry start-after).
func pendingAfter(after string) string {
	if after <= clsrgw.EntriesAfter {
		return ""
	}
	return clsrgw.PendingPrefix + after + "\x00\xff" // past every record of `after` itself
}

// reconcile makes entries kvs (sorted) agree with the heads of keys
// (sorted), which have pending operations: an operation whose completion
// has not landed — sent after its request was answered (completeAsync),
// or lost with its gateway — may have written or removed the head, the
// commit point. Each such key is listed as its head says, or not at all
// if it has none (RGW's check_disk_state on listing). A pending operation
// whose head write has not happened yet leaves the previous version,
// which is what the head still says.
func (s *Store) reconcile(ctx context.Context, b *Bucket, kvs []client.KV, keys []string, versions bool) ([]client.KV, error) {
	vals := make([][]byte, len(keys)) // nil: no head
	errs := make([]error, len(keys))
	sem.Parallel(len(keys), 32, func(i int) {
		if versions {
			v, _, err := s.olhVersions(ctx, b, keys[i])
			if v != nil {
				vals[i], _ = json.Marshal(v)
			}
			errs[i] = err
			return
		}
		h, ver, err := s.readHead(ctx, b, keys[i])
		if errors.Is(err, s3err.NoSuchKey) {
			return
		}
		if err != nil {
			errs[i] = err
			return
		}
		e := h.entry()
		e.Ver, e.Tag = ver, h.Tag
		vals[i], _ = json.Marshal(e)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bucket %s: reconcile pending operations: %w", b.Name, err)
	}
	out := make([]client.KV, 0, len(kvs)+len(keys))
	i, j := 0, 0
	for i < len(kvs) || j < len(keys) {
		switch {
		case j == len(keys) || (i < len(kvs) && kvs[i].Key < keys[j]):
			out = append(out, kvs[i])
			i++
		default:
			if i < len(kvs) && kvs[i].Key == keys[j] {
				i++ // replaced by (or dropped for) the head
			}
			if vals[j] != nil {
				out = append(out, client.KV{Key: keys[j], Value: vals[j]})
			}
			j++
		}
	}
	return out, nil
}

// Listing is one page of ListObjects.
type Listing struct {
	Entries    []listEntry
	Prefixes   []string
	Truncated  bool
	NextMarker string // the last key or common prefix returned (resume after it)
}

// List returns up to maxKeys keys and common prefixes after `after` with
// the prefix; with a delimiter, keys containing it after the prefix roll
// up into one common prefix each (S3 ListObjects semantics).
func (s *Store) List(ctx context.Context, b *Bucket, prefix, delim, after string, maxKeys int) (*Listing, error) {
	l := &Listing{}
	if maxKeys <= 0 {
		return l, nil
	}
	if delim != "" && after != "" && strings.HasPrefix(after, prefix) {
		// a marker inside a common prefix resumes after the whole prefix
		if i := strings.Index(after[len(prefix):], delim); i >= 0 {
			after = after[:len(prefix)+i+len(delim)] + "\xff"
		}
	}
	count := 0
	for count < maxKeys {
		batch, more, err := s.listMerged(ctx, b, after, prefix, min(1000, maxKeys-count+1), false)
		if err != nil {
			return nil, err
		}
		if len(batch) == 0 {
			return l, nil
		}
		rolled := false
		for _, e := range batch {
			if count == maxKeys {
				l.Truncated = true
				return l, nil
			}
			if delim != "" {
				if i := strings.Index(e.Key[len(prefix):], delim); i >= 0 {
					cp := e.Key[:len(prefix)+i+len(delim)]
					l.Prefixes = append(l.Prefixes, cp)
					l.NextMarker = cp
					count++
					after = cp + "\xff" // skip the rest of the prefix: UTF-8 never holds 0xff
					rolled = true
					break
				}
			}
			l.Entries = append(l.Entries, e)
			l.NextMarker = e.Key
			after = e.Key
			count++
		}
		if !rolled && !more {
			return l, nil
		}
	}
	// full page: is there anything after it?
	rest, _, err := s.listMerged(ctx, b, after, prefix, 1, false)
	if err != nil {
		return nil, err
	}
	l.Truncated = len(rest) > 0
	return l, nil
}

// CheckReport is what CheckBucket found (and, with fix, repaired).
type CheckReport struct {
	Pending      int `json:"pending"`       // prepared operations not completed
	Completed    int `json:"completed"`     // pending puts whose head was written: entry (re)made
	Abandoned    int `json:"abandoned"`     // pending operations whose write never landed: tails to GC
	StaleEntries int `json:"stale_entries"` // entries without a head (or with another version): fixed from the head
	Orphans      int `json:"orphans"`       // tail objects nothing refers to (CheckOrphans): queued for GC
}

// defaultPendingGrace is how old a pending operation must be before
// CheckBucket resolves it (younger ones may still be in flight).
const defaultPendingGrace = 30 * time.Second

// CheckBucket reconciles the bucket index with the head objects (Ceph:
// radosgw-admin bucket check): pending operations older than a grace
// period are completed from the head if their write landed, else
// cancelled with their tails queued for GC; with full, every entry is
// checked against its head. Nothing changes unless fix.
func (s *Store) CheckBucket(ctx context.Context, b *Bucket, fix, full bool) (*CheckReport, error) {
	if b.Indexless() {
		return nil, s3err.Indexless
	}
	rep := &CheckReport{}
	now := time.Now()
	for i := range b.Index.Ranges {
		for _, oid := range b.Index.Ranges[i].oids(b.ID) {
			if err := s.checkShard(ctx, b, oid, fix, full, now, rep); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

func (s *Store) checkShard(ctx context.Context, b *Bucket, oid string, fix, full bool, now time.Time, rep *CheckReport) error {
	err := omapEach(ctx, s.index, oid, "", clsrgw.PendingPrefix, func(kv client.KV) (bool, error) {
		return true, s.checkPending(ctx, b, kv, fix, now, rep)
	})
	if err != nil || !full {
		return err
	}
	return omapEach(ctx, s.index, oid, clsrgw.EntriesAfter, "", func(kv client.KV) (bool, error) {
		return true, s.checkEntry(ctx, b, kv, fix, rep)
	})
}

// checkPending resolves one pending record older than the grace period:
// completed from the head if its write landed, else cancelled (a put's
// tails queued for GC).
func (s *Store) checkPending(ctx context.Context, b *Bucket, kv client.KV, fix bool, now time.Time, rep *CheckReport) error {
	key, tag, ok := clsrgw.SplitPendingKey(kv.Key)
	if !ok {
		return nil
	}
	var p clsrgw.Pending
	json.Unmarshal(kv.Value, &p)
	if now.Sub(time.Unix(0, p.Mtime)) < s.pendingGrace {
		return nil
	}
	rep.Pending++
	if !fix {
		return nil
	}
	if b.Versioned() {
		return s.checkPendingVersioned(ctx, b, key, tag, p, rep)
	}
	h, ver, err := s.readHead(ctx, b, key)
	if err != nil && !errors.Is(err, s3err.NoSuchKey) {
		return err
	}
	switch {
	case h != nil && h.Tag == tag:
		rep.Completed++
		return s.complete(ctx, b, key, tag, ver, h.entry())
	case p.Op == "del":
		// the removal either happened (head gone: make the index agree)
		// or not (head present: nothing to do)
		rep.Abandoned++
		s.cancel(ctx, b, key, tag)
		if h == nil {
			return s.dropEntry(ctx, b, key)
		}
	default:
		rep.Abandoned++
		s.gcAdd(ctx, s.orphanTails(ctx, b, tag))
		s.cancel(ctx, b, key, tag)
	}
	return nil
}

// checkEntry compares one listing entry with its head: an entry without
// a head is dropped, one naming another version is rewritten from the head.
func (s *Store) checkEntry(ctx context.Context, b *Bucket, kv client.KV, fix bool, rep *CheckReport) error {
	var e clsrgw.Entry
	if json.Unmarshal(kv.Value, &e) != nil {
		return nil
	}
	h, ver, err := s.readHead(ctx, b, kv.Key)
	if err != nil && !errors.Is(err, s3err.NoSuchKey) {
		return err
	}
	if h != nil && h.Tag == e.Tag {
		return nil
	}
	rep.StaleEntries++
	switch {
	case !fix:
		return nil
	case b.Versioned():
		o, err := s.readOLH(ctx, b, kv.Key)
		if err != nil {
			return err
		}
		return s.completeFromOLH(ctx, b, kv.Key, NewTag(), o)
	case h == nil:
		return s.dropEntry(ctx, b, kv.Key)
	}
	return s.complete(ctx, b, kv.Key, h.Tag, ver, h.entry())
}

// readHead reads key's head metadata and version (s3err.NoSuchKey, also
// when its current version is a delete marker).
func (s *Store) readHead(ctx context.Context, b *Bucket, key string) (*HeadInfo, uint64, error) {
	h, _, ver, _, err := s.HeadAt(ctx, HeadOID(b.ID, key), false)
	if err == nil && h.DeleteMarker {
		return nil, 0, s3err.NoSuchKey
	}
	return h, ver, err
}

// HeadAt reads the head object oid: its metadata, version and, if
// withData, its data, in one request. s3err.NoSuchKey if it does not exist.
// The data aliases the reply's buffer until release is called (nil
// without data).
func (s *Store) HeadAt(ctx context.Context, oid string, withData bool) (h *HeadInfo, data []byte, ver uint64, release func(), err error) {
	ops := []osdop.Op{{Code: osdop.GetXattr, Name: headAttr}}
	if withData {
		ops = append(ops, osdop.Op{Code: osdop.Read})
	}
	rep, rel, err := s.data.OperateRef(ctx, oid, ops)
	if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrNoData) {
		return nil, nil, 0, nil, s3err.NoSuchKey
	}
	if err != nil {
		return nil, nil, 0, nil, fmt.Errorf("head %s: %w", oid, err)
	}
	h = &HeadInfo{}
	if err := json.Unmarshal(rep.Results[0].Data, h); err != nil {
		rel()
		return nil, nil, 0, nil, fmt.Errorf("head %s: metadata: %w", oid, err)
	}
	if !withData {
		rel()
		return h, nil, rep.Ver, nil, nil
	}
	return h, rep.Results[1].Data, rep.Ver, rel, nil
}

func (h *HeadInfo) entry() *clsrgw.Entry {
	return &clsrgw.Entry{Size: h.Size, Mtime: h.Mtime, ETag: h.ETag, Owner: h.Owner, StorageClass: h.Class, ContentType: h.Headers["Content-Type"]}
}

// orphanTails finds the tails an interrupted simple upload (tag) left:
// stripes 1, 2, … until a window's worth in a row are absent (the writer
// has at most a window in flight, so none lie beyond such a gap).
func (s *Store) orphanTails(ctx context.Context, b *Bucket, tag string) *GCEntry {
	g := segment{Prefix: shadowPrefix(b.ID, tag), First: 1}
	gap := int(s.opt.WindowSize/s.opt.StripeSize) + 2
	last := 0
	for i, miss := 0, 0; miss < gap; i++ {
		if _, err := s.data.Stat(ctx, g.oid(i)); err == nil {
			last, miss = i+1, 0
		} else {
			miss++
		}
	}
	g.Size = int64(last) * s.opt.StripeSize
	return &GCEntry{Tag: tag, StripeSize: s.opt.StripeSize, Segments: []segment{g}}
}

// dropEntry removes key's listing entry (its head is gone) with a
// tombstone just above the entry's version: the removal's own version is
// unknown but higher, and any later write's higher still.
func (s *Store) dropEntry(ctx context.Context, b *Bucket, key string) error {
	kvs, err := s.index.OmapGet(ctx, b.Index.writeShards(b.ID, key)[0], []string{key})
	if err != nil || len(kvs) == 0 {
		return err
	}
	var e clsrgw.Entry
	if err := json.Unmarshal(kvs[0].Value, &e); err != nil {
		return err
	}
	return s.complete(ctx, b, key, NewTag(), e.Ver+1, nil)
}
