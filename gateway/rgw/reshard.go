package rgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrgw "github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
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
//  4. publish the layout with the halves in the range's place and the old
//     range listed as retired, wait again, remove the old shards and drop
//     them from the layout (a gateway still on step 1's layout that finds
//     one gone re-reads the layout).
//
// Each step's outcome is in the layout, so a resharder that dies anywhere
// is finished by running it again: a splitting range resumes at step 2,
// retired ranges are removed.
//
// Listing reads the old range until step 4, the halves after: no step
// blocks a write, and a page never reads more than one range's shards
// more than before.

// settle is how long a layout change waits for every gateway to see it.
var settle = cacheTTL + 2*time.Second

// versioningSettle is how long the first change of a bucket's versioning
// waits before versions other than null may be made (SetVersioning,
// recheck).
var versioningSettle = cacheTTL + 5*time.Second

// UpdateBucket rewrites the bucket's entry point with fn's change if no
// one else changed it meanwhile (else it retries with the newer one).
func (s *Store) UpdateBucket(ctx context.Context, name string, fn func(b *Bucket) error) (*Bucket, error) {
	loaded := time.Now()
	b, err := updateJSON(ctx, s.meta, bucketObjP+name, fn)
	if errors.Is(err, client.ErrNotFound) {
		return nil, s3err.NoSuchBucket.With("bucket %q does not exist", name)
	}
	if err == nil {
		b.loaded = loaded
		s.ForgetBucket(name)
	}
	return b, err
}

// SplitRange splits the range of bucket name that holds key at (at
// becomes the first key of the upper half); with at "", the range with
// the most entries splits at its median key. A split that an earlier run
// left unfinished (the process died) is finished instead, and shards it
// left to remove are removed; run again to split further. Progress goes
// to out.
func (s *Store) SplitRange(ctx context.Context, name, at string, out io.Writer) error {
	b, err := s.GetBucket(ctx, name)
	if err != nil {
		return err
	}
	if b.Indexless() {
		return s3err.Indexless
	}
	if ri := b.Index.splitting(); ri >= 0 {
		fmt.Fprintf(out, "bucket %s: finishing the interrupted split of range %d at %q\n", name, ri, b.Index.Ranges[ri].Split.At)
		return s.finishSplitting(ctx, b, ri, out)
	}
	if len(b.Index.Retired) > 0 {
		fmt.Fprintf(out, "bucket %s: removing the shards an interrupted split left\n", name)
		return s.removeRetired(ctx, b, out)
	}
	ri := -1
	if at == "" {
		if ri, at, err = s.pickSplit(ctx, b); err != nil {
			return err
		}
	} else {
		ri = b.Index.rangeOf(at)
	}
	fmt.Fprintf(out, "bucket %s: splitting range %d [%q, %q) of %d shards at %q\n", name, ri, b.Index.Ranges[ri].Start, b.Index.end(ri), b.Index.Ranges[ri].Shards, at)
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
	b, err = s.UpdateBucket(ctx, name, func(cur *Bucket) error {
		if cur.ID != b.ID || cur.Index.Gen != b.Index.Gen {
			return fmt.Errorf("reshard %s: the index layout changed meanwhile; run again", name)
		}
		cur.Index = next
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  writers now update both\n")
	if s.failpoint == "reshard-after-begin" {
		return errors.New("failpoint reshard-after-begin")
	}
	return s.finishSplitting(ctx, b, ri, out)
}

// finishSplitting runs steps 2 to 4 of the split of range ri, whose
// splitting layout b holds.
func (s *Store) finishSplitting(ctx context.Context, b *Bucket, ri int, out io.Writer) error {
	fmt.Fprintf(out, "  waiting %v for every gateway to see the split\n", settle)
	if err := sleepCtx(ctx, settle); err != nil {
		return err
	}
	copied := 0
	r := b.Index.Ranges[ri]
	for _, oid := range r.oids(b.ID) {
		n, err := s.copyShard(ctx, b, b.Index, oid)
		copied += n
		if err != nil {
			return fmt.Errorf("reshard %s: copy %s: %w", b.Name, oid, err)
		}
	}
	fmt.Fprintf(out, "  copied %d entries\n", copied)
	b, err := s.UpdateBucket(ctx, b.Name, func(cur *Bucket) error {
		i := cur.Index.splitting()
		if cur.ID != b.ID || i < 0 || cur.Index.Ranges[i].ID != r.ID {
			return fmt.Errorf("reshard %s: the index layout changed meanwhile", b.Name)
		}
		l, err := cur.Index.finishSplit(i)
		cur.Index = l
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  switched to the new ranges\n")
	if s.failpoint == "reshard-after-switch" {
		return errors.New("failpoint reshard-after-switch")
	}
	return s.removeRetired(ctx, b, out)
}

// removeRetired waits until no gateway uses the retired ranges, removes
// their shard objects and drops them from the layout.
func (s *Store) removeRetired(ctx context.Context, b *Bucket, out io.Writer) error {
	fmt.Fprintf(out, "  waiting %v before removing the old shards\n", settle)
	if err := sleepCtx(ctx, settle); err != nil {
		return err
	}
	gone := map[int]bool{}
	for _, r := range b.Index.Retired {
		for _, oid := range r.oids(b.ID) {
			if err := s.index.Remove(ctx, oid); err != nil && !errors.Is(err, client.ErrNotFound) {
				return fmt.Errorf("reshard %s: remove %s: %w", b.Name, oid, err)
			}
		}
		gone[r.ID] = true
	}
	_, err := s.UpdateBucket(ctx, b.Name, func(cur *Bucket) error {
		if cur.ID != b.ID {
			return fmt.Errorf("reshard %s: the bucket was replaced meanwhile", b.Name)
		}
		cur.Index.Retired = slices.DeleteFunc(cur.Index.Retired, func(r IndexRange) bool { return gone[r.ID] })
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "bucket %s: done\n", b.Name)
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

// copyShard copies a splitting range shard's entries, tombstones and
// versions records into the halves with their own versions (rgw.complete
// keeps whatever is newer), and its pending records as they are (for
// `bucket check`).
func (s *Store) copyShard(ctx context.Context, b *Bucket, l *IndexLayout, oid string) (int, error) {
	half := func(key string) string { // the half's shard of key
		shards := l.writeShards(b.ID, key)
		return shards[len(shards)-1]
	}
	var pending []client.KV
	err := omapEach(ctx, s.index, oid, "", clsrgw.PendingPrefix, func(kv client.KV) (bool, error) {
		if key, _, ok := clsrgw.SplitPendingKey(kv.Key); ok {
			pending = append(pending, kv)
			return true, s.index.OmapSet(ctx, half(key), []client.KV{kv})
		}
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	// An operation may have completed between the listing and the copy:
	// its completion (old shard first, then the half) missed the copy,
	// which would stay pending for ever. A record gone from the old shard
	// now is dropped from the half; one still there will be completed on
	// the half too, after the old shard.
	for _, kv := range pending {
		still, err := s.index.OmapGet(ctx, oid, []string{kv.Key})
		if err != nil {
			return 0, err
		}
		if len(still) == 0 {
			key, _, _ := clsrgw.SplitPendingKey(kv.Key)
			if err := s.index.OmapRm(ctx, half(key), []string{kv.Key}); err != nil {
				return 0, err
			}
		}
	}
	// versioned copies, batched: up to copyBatch entries per
	// rgw.complete_batch call to a half's shard, each key once per call
	n := 0
	type batch struct {
		ins  []clsrgw.CompleteIn
		keys map[string]bool
	}
	batches := map[string]*batch{}
	flush := func(oid string) error {
		bt := batches[oid]
		if bt == nil || len(bt.ins) == 0 {
			return nil
		}
		body, _ := json.Marshal(bt.ins)
		_, err := s.index.Exec(ctx, oid, "rgw.complete_batch", body)
		bt.ins, bt.keys = bt.ins[:0], map[string]bool{}
		return err
	}
	copyAs := func(in clsrgw.CompleteIn) (bool, error) {
		oid := half(in.Key)
		bt := batches[oid]
		if bt == nil {
			bt = &batch{keys: map[string]bool{}}
			batches[oid] = bt
		}
		if bt.keys[in.Key] {
			if err := flush(oid); err != nil {
				return false, err
			}
		}
		bt.ins = append(bt.ins, in)
		bt.keys[in.Key] = true
		n++
		if len(bt.ins) >= copyBatch {
			return true, flush(oid)
		}
		return true, nil
	}
	err = omapEach(ctx, s.index, oid, "", clsrgw.TombstonePrefix, func(kv client.KV) (bool, error) {
		in := clsrgw.CompleteIn{Key: kv.Key[len(clsrgw.TombstonePrefix):], Tag: "reshard"}
		if json.Unmarshal(kv.Value, &in.Ver) != nil {
			return true, nil
		}
		return copyAs(in)
	})
	if err != nil {
		return n, err
	}
	err = omapEach(ctx, s.index, oid, clsrgw.EntriesAfter, "", func(kv client.KV) (bool, error) {
		var e clsrgw.Entry
		if json.Unmarshal(kv.Value, &e) != nil {
			return true, nil
		}
		return copyAs(clsrgw.CompleteIn{Key: kv.Key, Tag: e.Tag, Ver: e.Ver, Entry: &e})
	})
	if err == nil {
		err = omapEach(ctx, s.index, oid, "", clsrgw.VersionsPrefix, func(kv client.KV) (bool, error) {
			var v clsrgw.Versions
			if json.Unmarshal(kv.Value, &v) != nil {
				return true, nil
			}
			return copyAs(clsrgw.CompleteIn{Key: kv.Key[len(clsrgw.VersionsPrefix):], Tag: "reshard", Ver: v.Ver, Versions: &v, VersionsOnly: true})
		})
	}
	for oid := range batches {
		if ferr := flush(oid); err == nil {
			err = ferr
		}
	}
	return n, err
}

// copyBatch is how many index entries a reshard copies per request.
const copyBatch = 256

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
	if after < clsrgw.EntriesAfter {
		after = clsrgw.EntriesAfter
	}
	for {
		ents, _, err := s.listRange(ctx, b, &r, after, "", 1000, false)
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
