package rgw

import (
	"context"
	"time"

	"github.com/shoal-project/shoal/gateway/s3err"
)

// Object lock (S3's WORM retention, as RGW implements it): a bucket
// created with object lock, or a versioned bucket given a lock
// configuration, keeps versioning Enabled for good; each version may
// carry a retention (a mode and a date until which it cannot be removed)
// and a legal hold (no removal while on). Removing a version checks them
// (unlinkVersion): a legal hold or a COMPLIANCE retention refuses
// everyone, a GOVERNANCE retention refuses unless the request bypasses
// governance. Deleting a key without a version id only adds a delete
// marker, so it is always allowed, as in S3; lifecycle rules skip locked
// versions.

// Retention modes (S3's ObjectLockRetentionMode).
const (
	LockGovernance = "GOVERNANCE"
	LockCompliance = "COMPLIANCE"
)

// ObjectLock is a bucket's object lock configuration: enabled, and the
// default retention new versions get (Mode "" for none; Days or Years).
type ObjectLock struct {
	Enabled bool   `json:"enabled"`
	Mode    string `json:"mode,omitempty"`
	Days    int    `json:"days,omitempty"`
	Years   int    `json:"years,omitempty"`
}

// LockEnabled reports whether the bucket has object lock.
func (b *Bucket) LockEnabled() bool { return b.ObjectLock != nil && b.ObjectLock.Enabled }

// ValidLockMode reports whether m is a retention mode (case matters).
func ValidLockMode(m string) bool { return m == LockGovernance || m == LockCompliance }

// EnableObjectLock turns object lock on for a bucket just created with
// it (S3's x-amz-bucket-object-lock-enabled): versioning Enabled at once
// (nothing can have cached the new bucket unversioned) and no default
// retention.
func (s *Store) EnableObjectLock(ctx context.Context, name string) (*Bucket, error) {
	return s.UpdateBucket(ctx, name, func(b *Bucket) error {
		if b.Indexless() {
			return s3err.InvalidRequest.With("bucket %q keeps no index: it cannot keep versions", name)
		}
		b.Versioning, b.ObjectLock = VersioningEnabled, &ObjectLock{Enabled: true}
		return nil
	})
}

// SetObjectLock sets the bucket's object lock configuration: its
// versioning must be Enabled (s3err.InvalidBucketState otherwise).
// Callers check the configuration (mode, one positive period).
func (s *Store) SetObjectLock(ctx context.Context, name string, ol ObjectLock) (*Bucket, error) {
	return s.UpdateBucket(ctx, name, func(b *Bucket) error {
		if b.Versioning != VersioningEnabled {
			return s3err.InvalidBucketState.With("bucket %q must have versioning enabled for object lock", name)
		}
		ol.Enabled = true
		b.ObjectLock = &ol
		return nil
	})
}

// Retention is a version's retention: mode and date.
type Retention struct {
	Mode  string
	Until time.Time
}

// defaultRetention is the retention a version written at now gets from
// the bucket's configuration (nil: none).
func (b *Bucket) defaultRetention(now time.Time) *Retention {
	ol := b.ObjectLock
	if ol == nil || !ol.Enabled || ol.Mode == "" {
		return nil
	}
	return &Retention{Mode: ol.Mode, Until: now.AddDate(ol.Years, 0, ol.Days)}
}

// applyLock gives h the retention asked for (r), else the bucket's
// default, and the legal hold.
func (h *HeadInfo) applyLock(b *Bucket, r *Retention, hold bool) {
	if !b.LockEnabled() {
		return
	}
	if r == nil {
		r = b.defaultRetention(time.Now())
	}
	if r != nil {
		h.LockMode, h.LockUntil = r.Mode, r.Until.UnixNano()
	}
	h.LegalHold = hold
}

// Retention is the version's retention, nil if it has none.
func (h *HeadInfo) Retention() *Retention {
	if h.LockMode == "" {
		return nil
	}
	return &Retention{Mode: h.LockMode, Until: time.Unix(0, h.LockUntil)}
}

// removable refuses the removal of version h at now while a legal hold
// or a retention protects it (a GOVERNANCE one yields to bypass).
func (h *HeadInfo) removable(now time.Time, bypass bool) error {
	if h.LegalHold {
		return s3err.AccessDenied.With("version %q is under a legal hold", h.VersionID)
	}
	if h.LockMode == "" || !now.Before(time.Unix(0, h.LockUntil)) {
		return nil
	}
	if h.LockMode == LockGovernance && bypass {
		return nil
	}
	return s3err.AccessDenied.With("version %q is locked in %s mode until %s", h.VersionID, h.LockMode, time.Unix(0, h.LockUntil).UTC().Format(time.RFC3339))
}

// SetRetention changes h's retention to r as S3 allows at now: a
// COMPLIANCE retention only lengthens (same mode, a later date); a
// GOVERNANCE one may also be shortened or change mode with bypass; an
// expired one may be replaced. AccessDenied otherwise.
func (h *HeadInfo) SetRetention(r Retention, now time.Time, bypass bool) error {
	if cur := h.Retention(); cur != nil && now.Before(cur.Until) {
		weaker := r.Mode != cur.Mode || r.Until.Before(cur.Until)
		switch {
		case cur.Mode == LockCompliance && weaker:
			return s3err.AccessDenied.With("a COMPLIANCE retention can only be extended")
		case cur.Mode == LockGovernance && weaker && !bypass:
			return s3err.AccessDenied.With("shortening a GOVERNANCE retention or changing its mode needs x-amz-bypass-governance-retention")
		}
	}
	h.LockMode, h.LockUntil = r.Mode, r.Until.UnixNano()
	return nil
}
