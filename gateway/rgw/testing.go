// Hooks for tests (failpoints, counters, holds): the tests of this package
// and of the S3 edge drive the layer with them; nothing else calls them.

package rgw

import (
	"context"
	"sync"
	"time"

	clsrgw "github.com/shoal-project/shoal/cls/rgw"
)

// SetFailpoint makes the store stop where a crashed gateway would: a PUT
// "before-head" or "before-complete" (a DELETE too), a multipart completion
// "complete-before-cleanup", a reshard "reshard-after-begin" or
// "reshard-after-switch" ("" for none); and resolve pending index
// operations of any age.
func (s *Store) SetFailpoint(fp string) {
	s.failpoint = fp
	s.pendingGrace = time.Duration(0)
}

// SetSettle shortens the wait of each resharding step for tests whose
// gateways all share one Store (its cache is dropped at each change).
func SetSettle(d time.Duration) { settle, versioningSettle = d, d }

// IndexPut records key in the bucket's index as if a PUT of size bytes at
// version ver completed (no data is written).
func (s *Store) IndexPut(ctx context.Context, b *Bucket, key string, size int64, ver uint64) error {
	return s.complete(ctx, b, key, "bench", ver, &clsrgw.Entry{Size: size, ETag: `"x"`})
}

// ListReads counts the index shard reads listings made.
func (s *Store) ListReads() int64 { return s.listReads.Load() }

// ShardObjects lists the index shard objects the bucket's layout names.
func (b *Bucket) ShardObjects() []string { return b.Index.allShards(b.ID) }

// HoldIndexCalls makes the next index call wait, before it is sent,
// until release is called (updates to its shard queue behind it).
func (s *Store) HoldIndexCalls() (release func()) {
	ch := make(chan struct{})
	var once sync.Once
	s.batch.beforeCall = func() { once.Do(func() { <-ch }) }
	return func() { close(ch) }
}

// IndexWaiting counts the index updates waiting for a call or its answer.
func (s *Store) IndexWaiting() int { return s.batch.waiting() }

// IndexBatches reports the index calls sent, the updates they carried
// and the most one carried.
func (s *Store) IndexBatches() (calls, updates, most int64) {
	return s.batch.calls.Load(), s.batch.updates.Load(), s.batch.maxBatch.Load()
}

// LCDeleteIfCurrent deletes key if its head is still the version the
// write tagged tag made (a lifecycle expiration's delete).
func (s *Store) LCDeleteIfCurrent(ctx context.Context, b *Bucket, key, tag string) (bool, error) {
	return s.deleteIfCurrent(ctx, b, key, tag, nil)
}

// HoldLCLock takes the lifecycle lock as a pass would and never renews
// it (a pass killed mid-way); release gives it back as its holder would.
func (s *Store) HoldLCLock(ctx context.Context) (release func(), err error) {
	lk, err := s.lockObject(ctx, lcLockOID, s.opt.LCLockTTL)
	if err != nil {
		return nil, err
	}
	return func() { lk.release(ctx) }, nil
}

// CancelPending drops key's pending index record of the version its head
// holds, as a PUT does that never learnt whether its head write landed.
func (s *Store) CancelPending(ctx context.Context, b *Bucket, key string) error {
	h, _, err := s.readHead(ctx, b, key)
	if err != nil {
		return err
	}
	s.cancel(ctx, b, key, h.Tag)
	return s.Flush(ctx)
}

// AgeBucket makes b look loaded d ago (a long upload's or a lifecycle
// pass's view of the bucket), so that its writes read the bucket again.
func AgeBucket(b *Bucket, d time.Duration) { b.loaded = time.Now().Add(-d) }

// ForgetUsage drops the cached bucket totals quotas are checked against
// (they are otherwise up to quotaStatsTTL old).
func (s *Store) ForgetUsage() {
	s.mu.Lock()
	clear(s.usage)
	s.mu.Unlock()
}
