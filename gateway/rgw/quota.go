package rgw

import (
	"context"
	"fmt"
	"time"

	"github.com/shoal-project/shoal/gateway/s3err"
)

// Quotas, as RGW keeps them (radosgw-admin quota set|enable|disable, and
// the user's max_buckets): a user quota bounds the objects and bytes of
// all a user's buckets together, a bucket quota each bucket (the bucket's
// own, else its owner's default), and MaxBuckets the buckets a user may
// create. Writes that would go past an enabled quota are refused with
// QuotaExceeded (403), bucket creation past MaxBuckets with
// TooManyBuckets (400).
//
// Usage comes from the bucket index's totals, read at most every
// quotaStatsTTL per bucket per gateway (RGW caches them too, for
// rgw_bucket_quota_ttl): concurrent writes through several gateways can
// pass a quota by what lands within that time.

// DefaultMaxBuckets is a user's bucket limit unless set (RGW's
// rgw_user_max_buckets).
const DefaultMaxBuckets = 1000

// quotaStatsTTL bounds the age of the usage quotas are checked against.
const quotaStatsTTL = 2 * time.Second

// Quota bounds objects and bytes (-1 or 0: no bound), when Enabled.
type Quota struct {
	Enabled    bool  `json:"enabled"`
	MaxObjects int64 `json:"max_objects"`
	MaxSize    int64 `json:"max_size"` // bytes
}

// limits reports whether q bounds anything.
func (q Quota) limits() bool { return q.Enabled && (q.MaxObjects > 0 || q.MaxSize > 0) }

// exceeded reports whether adding objects and bytes to usage (objects,
// bytes) passes q.
func (q Quota) exceeded(objects, bytes, addObjects, addBytes int64) bool {
	if !q.Enabled {
		return false
	}
	return (q.MaxObjects > 0 && objects+addObjects > q.MaxObjects) || (q.MaxSize > 0 && bytes+addBytes > q.MaxSize)
}

// Max returns q's bounds as RGW shows them: -1 for none.
func (q Quota) Max() (objects, bytes int64) {
	objects, bytes = -1, -1
	if q.Enabled && q.MaxObjects > 0 {
		objects = q.MaxObjects
	}
	if q.Enabled && q.MaxSize > 0 {
		bytes = q.MaxSize
	}
	return objects, bytes
}

// BucketLimit is the user's bucket limit (-1: none).
func (u *User) BucketLimit() int {
	if u.MaxBuckets == 0 {
		return DefaultMaxBuckets
	}
	return u.MaxBuckets
}

type cachedUsage struct {
	objects, bytes int64
	when           time.Time
}

// SetQuota changes user uid's quota of scope "user" or "bucket" (the
// default of its buckets) with fn.
func (s *Store) SetQuota(ctx context.Context, uid, scope string, fn func(q *Quota)) (*User, error) {
	if scope != "user" && scope != "bucket" {
		return nil, fmt.Errorf("quota scope %q: want user or bucket", scope)
	}
	u, err := s.updateUser(ctx, uid, func(u *User) error {
		if scope == "user" {
			fn(&u.UserQuota)
		} else {
			fn(&u.BucketQuota)
		}
		return nil
	})
	s.forgetAccess(uid)
	return u, err
}

// SetBucketQuota changes bucket name's own quota with fn.
func (s *Store) SetBucketQuota(ctx context.Context, name string, fn func(q *Quota)) (*Bucket, error) {
	return s.UpdateBucket(ctx, name, func(b *Bucket) error {
		if b.Quota == nil {
			b.Quota = &Quota{MaxObjects: -1, MaxSize: -1}
		}
		fn(b.Quota)
		return nil
	})
}

// SetMaxBuckets sets user uid's bucket limit (-1: none).
func (s *Store) SetMaxBuckets(ctx context.Context, uid string, n int) (*User, error) {
	return s.updateUser(ctx, uid, func(u *User) error {
		u.MaxBuckets = n
		return nil
	})
}

// bucketUsage is b's index totals, cached for quotaStatsTTL.
func (s *Store) bucketUsage(ctx context.Context, b *Bucket) (objects, bytes int64, err error) {
	s.mu.Lock()
	c, ok := s.usage[b.ID]
	s.mu.Unlock()
	if ok && time.Since(c.when) < quotaStatsTTL {
		return c.objects, c.bytes, nil
	}
	st, err := s.Stats(ctx, b)
	if err != nil {
		return 0, 0, err
	}
	s.mu.Lock()
	s.usage[b.ID] = cachedUsage{objects: st.Objects, bytes: st.Bytes, when: time.Now()}
	s.mu.Unlock()
	return st.Objects, st.Bytes, nil
}

// Usage is a user's or a bucket's totals.
type Usage struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// UserUsage sums the index totals of user uid's buckets, and returns
// them per bucket.
func (s *Store) UserUsage(ctx context.Context, uid string) (Usage, map[string]Usage, error) {
	names, err := s.UserBuckets(ctx, uid)
	if err != nil {
		return Usage{}, nil, err
	}
	var total Usage
	per := map[string]Usage{}
	for _, n := range names {
		b, err := s.LookupBucket(ctx, n)
		if err != nil {
			continue // removed meanwhile
		}
		o, by, err := s.bucketUsage(ctx, b)
		if err != nil {
			return Usage{}, nil, err
		}
		per[n] = Usage{Objects: o, Bytes: by}
		total.Objects += o
		total.Bytes += by
	}
	return total, per, nil
}

// checkQuota refuses a write of size bytes adding newObjects objects to
// bucket b if it would pass the bucket's or its owner's quota.
func (s *Store) checkQuota(ctx context.Context, b *Bucket, size, newObjects int64) error {
	if b.Indexless() {
		return nil
	}
	u, err := s.quotaOwner(ctx, b.Owner)
	if err != nil || u == nil {
		return err
	}
	bq := u.BucketQuota
	if b.Quota != nil {
		bq = *b.Quota
	}
	if bq.limits() {
		o, by, err := s.bucketUsage(ctx, b)
		if err != nil {
			return err
		}
		if bq.exceeded(o, by, newObjects, size) {
			return s3err.QuotaExceeded.With("bucket %q: the bucket quota (%d objects, %d bytes) would be exceeded", b.Name, bq.MaxObjects, bq.MaxSize)
		}
	}
	if u.UserQuota.limits() {
		total, _, err := s.UserUsage(ctx, b.Owner)
		if err != nil {
			return err
		}
		if u.UserQuota.exceeded(total.Objects, total.Bytes, newObjects, size) {
			return s3err.QuotaExceeded.With("user %q: the user quota (%d objects, %d bytes) would be exceeded", b.Owner, u.UserQuota.MaxObjects, u.UserQuota.MaxSize)
		}
	}
	return nil
}

// quotaOwner is user uid's record as the quota checks see it (cached
// with its access, cacheTTL; nil for a removed user).
func (s *Store) quotaOwner(ctx context.Context, uid string) (*User, error) {
	s.mu.Lock()
	c, ok := s.access[uid]
	s.mu.Unlock()
	if ok && time.Since(c.when) < cacheTTL && c.user != nil {
		return c.user, nil
	}
	if _, _, err := s.UserAccess(ctx, uid); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.access[uid].user, nil
}
