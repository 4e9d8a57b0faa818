package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/osdop"
)

// Online resharding: a key range of a bucket index is split in two while
// writes go on. The steps (each layout change is a versioned rewrite of
// the bucket's entry point):
//
//  1. create the halves' shard objects and publish the layout with the
//     range marked splitting: from then on every index update of a key in
//     the range goes to the range's shard and to its half's shard;
//  2. wait until every gateway has dropped layouts older than that
//     (cacheTTL plus a margin; index calls re-read the layout, so a long
//     upload that began before step 1 updates both when it completes);
//  3. copy the range's entries and tombstones into the halves, through
//     rgw.complete with each entry's own version: an update the writers
//     already made there is newer and wins, so copy and writers converge;
//  4. publish the layout with the halves in the range's place, wait again,
//     and remove the old shards (a gateway still on step 1's layout that
//     finds one gone re-reads the layout).
//
// Listing reads the old range until step 4, the halves after: no step
// blocks a write, and a page never reads more than one range's shards
// more than before.

// settle is how long a layout change waits for every gateway to see it.
var settle = cacheTTL + 2*time.Second

// updateBucket rewrites the bucket's entry point with fn's change if no
// one else changed it meanwhile (else it retries with the newer one).
func (s *Store) updateBucket(ctx context.Context, name string, fn func(b *Bucket) error) (*Bucket, error) {
	for {
		st, err := s.meta.Stat(ctx, bucketObjP+name)
		if errors.Is(err, client.ErrNotFound) {
			return nil, ErrNoSuchBucket.with("bucket %q does not exist", name)
		}
		if err != nil {
			return nil, err
		}
		b, err := s.GetBucket(ctx, name)
		if err != nil {
			return nil, err
		}
		if err := fn(b); err != nil {
			return nil, err
		}
		body, _ := json.Marshal(b)
		err = operate(ctx, s.meta, bucketObjP+name, []osdop.Op{{Code: osdop.AssertVersion, Ver: st.Version}, {Code: osdop.WriteFull, Data: body}})
		if errors.Is(err, osdop.ErrVerNewer) || errors.Is(err, osdop.ErrVerOlder) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.forgetBucket(name)
		return b, nil
	}
}

// SplitRange splits the range of bucket name that holds key at (at
// becomes the first key of the upper half); with at "", the range with
// the most entries splits at its median key. Progress goes to out.
func (s *Store) SplitRange(ctx context.Context, name, at string, out io.Writer) error {
	b, err := s.GetBucket(ctx, name)
	if err != nil {
		return err
	}
	if b.Indexless() {
		return ErrIndexless
	}
	ri := -1
	if at == "" {
		if ri, at, err = s.pickSplit(ctx, b); err != nil {
			return err
		}
	} else {
		ri = b.Index.rangeOf(at)
	}
	startRange := b.Index.Ranges[ri]
	fmt.Fprintf(out, "bucket %s: splitting range %d [%q, %q) of %d shards at %q\n", name, ri, startRange.Start, b.Index.end(ri), startRange.Shards, at)
	// 1: create the halves, publish the splitting layout
	next, err := b.Index.beginSplit(ri, at)
	if err != nil {
		return err
	}
	sp := next.Ranges[ri].Split
	for _, r := range []*IndexRange{&sp.Lo, &sp.Hi} {
		for _, oid := range r.oids(b.ID) {
			if err := s.index.Create(ctx, oid, false); err != nil {
				return fmt.Errorf("reshard %s: create %s: %w", name, oid, err)
			}
		}
	}
	if _, err := s.updateBucket(ctx, name, func(cur *Bucket) error {
		if cur.ID != b.ID || cur.Index.Gen != b.Index.Gen {
			return fmt.Errorf("reshard %s: the index layout changed meanwhile; run again", name)
		}
		cur.Index = next
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "  writers now update both; waiting %v for every gateway to see it\n", settle)
	if err := sleepCtx(ctx, settle); err != nil {
		return err
	}
	// 3: copy
	copied := 0
	r := next.Ranges[ri]
	for _, oid := range r.oids(b.ID) {
		n, err := s.copyShard(ctx, b, next, oid)
		copied += n
		if err != nil {
			return fmt.Errorf("reshard %s: copy %s: %w", name, oid, err)
		}
	}
	fmt.Fprintf(out, "  copied %d entries\n", copied)
	// 4: switch, wait, remove the old shards
	if _, err := s.updateBucket(ctx, name, func(cur *Bucket) error {
		i := cur.Index.rangeOf(at)
		if cur.ID != b.ID || cur.Index.Ranges[i].Split == nil || cur.Index.Ranges[i].ID != r.ID {
			return fmt.Errorf("reshard %s: the index layout changed meanwhile", name)
		}
		l, err := cur.Index.finishSplit(i)
		cur.Index = l
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "  switched to the new ranges; waiting %v before removing the old shards\n", settle)
	if err := sleepCtx(ctx, settle); err != nil {
		return err
	}
	for _, oid := range r.oids(b.ID) {
		if err := s.index.Remove(ctx, oid); err != nil && !errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("reshard %s: remove %s: %w", name, oid, err)
		}
	}
	fmt.Fprintf(out, "bucket %s: done\n", name)
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// copyShard copies a splitting range shard's entries and tombstones into
// the halves with their own versions (rgw.complete keeps whatever is
// newer), and its pending records as they are (for `bucket check`).
func (s *Store) copyShard(ctx context.Context, b *Bucket, l *IndexLayout, oid string) (int, error) {
	n := 0
	pend, _, err := s.index.OmapList(ctx, oid, "", rgw.PendingPrefix, 0)
	if err != nil {
		return 0, err
	}
	for _, kv := range pend {
		if key, _, ok := rgw.SplitPendingKey(kv.Key); ok {
			shards := l.writeShards(b.ID, key)
			if err := s.index.OmapSet(ctx, shards[len(shards)-1], []client.KV{kv}); err != nil {
				return n, err
			}
		}
	}
	for _, pfx := range []string{rgw.TombstonePrefix, ""} {
		after := ""
		if pfx == "" {
			after = rgw.EntriesAfter
		}
		for {
			kvs, more, err := s.index.OmapList(ctx, oid, after, pfx, 1000)
			if err != nil {
				return n, err
			}
			for _, kv := range kvs {
				var in rgw.CompleteIn
				if pfx == rgw.TombstonePrefix {
					in.Key = kv.Key[len(pfx):]
					if json.Unmarshal(kv.Value, &in.Ver) != nil {
						continue
					}
				} else {
					var e rgw.Entry
					if json.Unmarshal(kv.Value, &e) != nil {
						continue
					}
					in.Key, in.Ver, in.Entry = kv.Key, e.Ver, &e
				}
				in.Tag = "reshard"
				if in.Entry != nil {
					in.Tag = in.Entry.Tag
				}
				body, _ := json.Marshal(in)
				shards := l.writeShards(b.ID, in.Key)
				if _, err := s.index.Exec(ctx, shards[len(shards)-1], "rgw.complete", body); err != nil {
					return n, err
				}
				n++
			}
			if !more || len(kvs) == 0 {
				break
			}
			after = kvs[len(kvs)-1].Key
		}
	}
	return n, nil
}

// pickSplit finds the range with the most entries and its median key.
func (s *Store) pickSplit(ctx context.Context, b *Bucket) (int, string, error) {
	best, bestN := -1, int64(-1)
	for i := range b.Index.Ranges {
		var st BucketStats
		for _, oid := range b.Index.Ranges[i].oids(b.ID) {
			if err := s.shardStats(ctx, oid, &st); err != nil {
				return 0, "", err
			}
		}
		if st.Objects > bestN {
			best, bestN = i, st.Objects
		}
	}
	if bestN < 2 {
		return 0, "", fmt.Errorf("reshard %s: no range has two entries to split between", b.Name)
	}
	// walk the range in key order to its median
	r := b.Index.Ranges[best]
	after, seen := r.Start, int64(0)
	if after < rgw.EntriesAfter {
		after = rgw.EntriesAfter
	}
	for {
		ents, _, err := s.listRange(ctx, b, &r, after, "", 1000)
		if err != nil {
			return 0, "", err
		}
		if len(ents) == 0 {
			return 0, "", fmt.Errorf("reshard %s: range %d emptied while looking for its median", b.Name, best)
		}
		for _, e := range ents {
			seen++
			if seen > bestN/2 && e.Key > r.Start {
				return best, e.Key, nil
			}
		}
		after = ents[len(ents)-1].Key
	}
}
