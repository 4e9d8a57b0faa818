package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cls/rgw"
)

// shardOf picks the index shard of key: crc32c of the key modulo the
// shard count, so sequential keys spread over every shard.
func (b *Bucket) shardOf(key string) int {
	return int(crc32.Checksum([]byte(key), castagnoli) % uint32(b.Shards))
}

// prepare records a pending operation on key (phase one). A missing shard
// (the bucket was deleted) gives NoSuchBucket.
func (s *Store) prepare(ctx context.Context, b *Bucket, key, tag, op string) error {
	if b.Indexless() {
		return nil
	}
	in, _ := json.Marshal(rgw.PrepareIn{Key: key, Tag: tag, Op: op, Mtime: time.Now().UnixNano()})
	_, err := s.index.Exec(ctx, b.shardOID(b.shardOf(key)), "rgw.prepare", in)
	if errors.Is(err, client.ErrNotFound) {
		s.forgetBucket(b.Name)
		return ErrNoSuchBucket.with("bucket %q does not exist", b.Name)
	}
	if err != nil {
		return fmt.Errorf("bucket %s: index prepare %q: %w", b.Name, key, err)
	}
	return nil
}

// complete records the outcome of a prepared operation (phase two): e is
// the new entry of a put, nil for a delete; ver the head's version.
func (s *Store) complete(ctx context.Context, b *Bucket, key, tag string, ver uint64, e *rgw.Entry) error {
	if b.Indexless() {
		return nil
	}
	in, _ := json.Marshal(rgw.CompleteIn{Key: key, Tag: tag, Ver: ver, Entry: e, Mtime: time.Now().UnixNano()})
	if _, err := s.index.Exec(ctx, b.shardOID(b.shardOf(key)), "rgw.complete", in); err != nil {
		return fmt.Errorf("bucket %s: index complete %q: %w", b.Name, key, err)
	}
	return nil
}

// cancel drops a prepared operation whose data write failed.
func (s *Store) cancel(ctx context.Context, b *Bucket, key, tag string) {
	if b.Indexless() {
		return
	}
	in, _ := json.Marshal(rgw.CancelIn{Key: key, Tag: tag})
	if _, err := s.index.Exec(ctx, b.shardOID(b.shardOf(key)), "rgw.cancel", in); err != nil {
		s.opt.Logger.Warn("index cancel failed; `shoal bucket check --fix` resolves it", "bucket", b.Name, "key", key, "err", err)
	}
}

// listEntry is an index entry with its key.
type listEntry struct {
	Key string
	rgw.Entry
}

// listMerged returns up to n entries after `after` (exclusive) with the
// prefix, in key order, merged from the bucket's shards, and whether more
// exist. Each shard is asked for n entries: the n smallest of the union
// are among them.
func (s *Store) listMerged(ctx context.Context, b *Bucket, after, prefix string, n int) ([]listEntry, bool, error) {
	if b.Indexless() {
		return nil, false, ErrIndexless
	}
	start := after
	if start < rgw.EntriesAfter {
		start = rgw.EntriesAfter
	}
	type shardList struct {
		kvs  []client.KV
		more bool
		err  error
	}
	res := make([]shardList, b.Shards)
	done := make(chan int, b.Shards)
	for i := range b.Shards {
		go func() {
			kvs, more, err := s.index.OmapList(ctx, b.shardOID(i), start, prefix, n)
			if errors.Is(err, client.ErrNotFound) {
				err = nil
			}
			res[i] = shardList{kvs, more, err}
			done <- i
		}()
	}
	for range b.Shards {
		<-done
	}
	var all []listEntry
	more := false
	for i, r := range res {
		if r.err != nil {
			return nil, false, fmt.Errorf("bucket %s: list shard %d: %w", b.Name, i, r.err)
		}
		more = more || r.more
		for _, kv := range r.kvs {
			if strings.HasPrefix(kv.Key, "\x00") {
				continue
			}
			e := listEntry{Key: kv.Key}
			if err := json.Unmarshal(kv.Value, &e.Entry); err != nil {
				return nil, false, fmt.Errorf("bucket %s: shard %d entry %q: %w", b.Name, i, kv.Key, err)
			}
			all = append(all, e)
		}
	}
	slices.SortFunc(all, func(a, b listEntry) int { return strings.Compare(a.Key, b.Key) })
	if len(all) > n {
		all, more = all[:n], true
	}
	return all, more, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
		batch, more, err := s.listMerged(ctx, b, after, prefix, min(1000, maxKeys-count+1))
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
	rest, _, err := s.listMerged(ctx, b, after, prefix, 1)
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
		return nil, ErrIndexless
	}
	rep := &CheckReport{}
	now := time.Now()
	for i := range b.Shards {
		oid := b.shardOID(i)
		kvs, _, err := s.index.OmapList(ctx, oid, "", rgw.PendingPrefix, 0)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: shard %d: %w", b.Name, i, err)
		}
		for _, kv := range kvs {
			key, tag, ok := rgw.SplitPendingKey(kv.Key)
			if !ok {
				continue
			}
			var p rgw.Pending
			json.Unmarshal(kv.Value, &p)
			if now.Sub(time.Unix(0, p.Mtime)) < s.pendingGrace {
				continue
			}
			rep.Pending++
			if !fix {
				continue
			}
			h, ver, err := s.readHead(ctx, b, key)
			if err != nil && !errors.Is(err, ErrNoSuchKey) {
				return nil, err
			}
			switch {
			case h != nil && h.Tag == tag:
				rep.Completed++
				if err := s.complete(ctx, b, key, tag, ver, h.entry()); err != nil {
					return nil, err
				}
			case p.Op == "del":
				// the removal either happened (head gone: make the index
				// agree) or not (head present: nothing to do)
				rep.Abandoned++
				s.cancel(ctx, b, key, tag)
				if h == nil {
					if err := s.dropEntry(ctx, b, key); err != nil {
						return nil, err
					}
				}
			default:
				rep.Abandoned++
				s.gcAdd(ctx, s.orphanTails(ctx, b, tag))
				s.cancel(ctx, b, key, tag)
			}
		}
		if !full {
			continue
		}
		after := rgw.EntriesAfter
		for {
			kvs, more, err := s.index.OmapList(ctx, oid, after, "", 1000)
			if err != nil {
				return nil, fmt.Errorf("bucket %s: shard %d: %w", b.Name, i, err)
			}
			for _, kv := range kvs {
				var e rgw.Entry
				if json.Unmarshal(kv.Value, &e) != nil {
					continue
				}
				h, ver, err := s.readHead(ctx, b, kv.Key)
				if err != nil && !errors.Is(err, ErrNoSuchKey) {
					return nil, err
				}
				if h != nil && h.Tag == e.Tag {
					continue
				}
				rep.StaleEntries++
				if !fix {
					continue
				}
				if h == nil {
					err = s.dropEntry(ctx, b, kv.Key)
				} else {
					err = s.complete(ctx, b, kv.Key, h.Tag, ver, h.entry())
				}
				if err != nil {
					return nil, err
				}
			}
			if !more || len(kvs) == 0 {
				break
			}
			after = kvs[len(kvs)-1].Key
		}
	}
	return rep, nil
}

// readHead reads key's head metadata and version (ErrNoSuchKey).
func (s *Store) readHead(ctx context.Context, b *Bucket, key string) (*headInfo, uint64, error) {
	rep, err := s.data.Operate(ctx, headOID(b.ID, key), headRead())
	if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrNoData) {
		return nil, 0, ErrNoSuchKey
	}
	if err != nil {
		return nil, 0, err
	}
	h := &headInfo{}
	if err := json.Unmarshal(rep.Results[0].Data, h); err != nil {
		return nil, 0, fmt.Errorf("head of %s/%s: %w", b.Name, key, err)
	}
	return h, rep.Ver, nil
}

func (h *headInfo) entry() *rgw.Entry {
	return &rgw.Entry{Size: h.Size, Mtime: h.Mtime, ETag: h.ETag, Owner: h.Owner, StorageClass: h.Class, ContentType: h.Headers["Content-Type"]}
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
	kvs, err := s.index.OmapGet(ctx, b.shardOID(b.shardOf(key)), []string{key})
	if err != nil || len(kvs) == 0 {
		return err
	}
	var e rgw.Entry
	if err := json.Unmarshal(kvs[0].Value, &e); err != nil {
		return err
	}
	return s.complete(ctx, b, key, newTag(), e.Ver+1, nil)
}
