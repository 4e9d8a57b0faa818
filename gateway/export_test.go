package gateway

import (
	"context"

	"time"

	"github.com/shoal-project/shoal/cls/rgw"
)

// SetFailpoint makes the store stop PUTs where a crashed gateway would
// ("before-head", "before-complete"; "" for none), and resolve pending
// index operations of any age.
func (s *Store) SetFailpoint(fp string) {
	s.failpoint = fp
	s.pendingGrace = time.Duration(0)
}

// SetSettle shortens the wait of each resharding step for tests whose
// gateways all share one Store (its cache is dropped at each change).
func SetSettle(d time.Duration) { settle = d }

// Layout returns a bucket's index layout.
func (b *Bucket) Layout() *IndexLayout { return b.Index }

// IndexPut records key in the bucket's index as if a PUT of size bytes at
// version ver completed (no data is written).
func (s *Store) IndexPut(ctx context.Context, b *Bucket, key string, size int64, ver uint64) error {
	return s.complete(ctx, b, key, "bench", ver, &rgw.Entry{Size: size, ETag: `"x"`})
}

// ListReads counts the index shard reads listings made.
func (s *Store) ListReads() int64 { return s.listReads.Load() }
