package rgw

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/osdop"
)

// condRetries is how many times a conditional write re-reads the head
// after another write raced it before giving up with
// ConditionalRequestConflict.
const condRetries = 8

// conditionally runs attempt — check the head, then write guarded by
// it — again while it loses races (raced), condRetries times at most.
func conditionally(key string, attempt func() error) error {
	for i := 0; ; i++ {
		err := attempt()
		if !raced(err) {
			return err
		}
		if i == condRetries {
			return s3err.ConditionalRequestConflict.With("%q changed under %d conditional attempts", key, condRetries+1)
		}
	}
}

// WriteCond is a conditional PUT's If-Match and If-None-Match ("" when not
// given; "*" or a list of ETags).
type WriteCond struct {
	IfMatch, IfNoneMatch string
}

// needsHead reports whether the condition depends on the current head's
// ETag (If-None-Match: * alone needs only an exclusive create).
func (c WriteCond) needsHead() bool {
	return c.IfMatch != "" || (c.IfNoneMatch != "" && c.IfNoneMatch != "*")
}

// check applies the condition to the current head (nil: the key has
// none): If-Match on a missing key is NoSuchKey, a failed one
// PreconditionFailed, as S3 answers.
func (c WriteCond) check(cur *HeadInfo, key string) error {
	if c.IfMatch != "" {
		if cur == nil {
			return s3err.NoSuchKey.With("If-Match: key %q does not exist", key)
		}
		if !ETagMatches(c.IfMatch, cur.ETag) {
			return s3err.PreconditionFailed.With("If-Match: the ETag of %q is %s", key, cur.ETag)
		}
	}
	if c.IfNoneMatch != "" && cur != nil && ETagMatches(c.IfNoneMatch, cur.ETag) {
		return s3err.PreconditionFailed.With("If-None-Match: %q exists with ETag %s", key, cur.ETag)
	}
	return nil
}

// guard reads key's head, checks c against it and returns the op that
// makes a head write happen only over that head, and the head (nil if
// none).
func (s *Store) guard(ctx context.Context, b *Bucket, key string, c WriteCond) (osdop.Op, *HeadInfo, error) {
	cur, _, ver, _, err := s.HeadAt(ctx, HeadOID(b.ID, key), false)
	switch {
	case errors.Is(err, s3err.NoSuchKey):
		cur = nil
	case err != nil:
		return osdop.Op{}, nil, err
	}
	if err := c.check(cur, key); err != nil {
		return osdop.Op{}, nil, err
	}
	if cur == nil {
		return osdop.Op{Code: osdop.Create, Exclusive: true}, nil, nil
	}
	return osdop.Op{Code: osdop.AssertVersion, Ver: ver}, cur, nil
}

// raced reports whether a guarded head write failed because the head
// changed after it was read.
func raced(err error) bool {
	return errors.Is(err, client.ErrExists) || errors.Is(err, client.ErrNotFound) ||
		errors.Is(err, osdop.ErrVerNewer) || errors.Is(err, osdop.ErrVerOlder)
}

// refused reports whether an OSD answered err without applying the
// request: a failed assertion or precondition, not a timeout or a lost
// connection, after which the request may or may not have been applied.
func refused(err error) bool {
	return raced(err) || errors.Is(err, osdop.ErrInvalid) || errors.Is(err, osdop.ErrNameTooLong)
}

// DeleteCond is a conditional delete's ETag, last-modified time (second
// precision, as S3 shows it) and size; zero values are not checked.
type DeleteCond struct {
	ETag  string
	Mtime time.Time
	Size  *int64
	// BypassGovernance lets the removal of a version under a GOVERNANCE
	// retention through (x-amz-bypass-governance-retention; objectlock.go).
	BypassGovernance bool
}

func (c DeleteCond) empty() bool { return c.ETag == "" && c.Mtime.IsZero() && c.Size == nil }

func (c DeleteCond) check(h *HeadInfo, key string) error {
	if c.ETag != "" && !ETagMatches(c.ETag, h.ETag) {
		return s3err.PreconditionFailed.With("If-Match: the ETag of %q is %s", key, h.ETag)
	}
	if !c.Mtime.IsZero() && !time.Unix(0, h.Mtime).Truncate(time.Second).Equal(c.Mtime.Truncate(time.Second)) {
		return s3err.PreconditionFailed.With("x-amz-if-match-last-modified-time: %q was last modified at %s", key, time.Unix(0, h.Mtime).UTC().Format(time.RFC3339))
	}
	if c.Size != nil && *c.Size != h.Size {
		return s3err.PreconditionFailed.With("x-amz-if-match-size: %q is %d bytes", key, h.Size)
	}
	return nil
}

// DeleteObjectIf deletes key if its head meets c; a missing key is
// deleted already (no error), as S3 answers.
func (s *Store) DeleteObjectIf(ctx context.Context, b *Bucket, key string, c DeleteCond) error {
	if c.empty() {
		return s.DeleteObject(ctx, b, key)
	}
	return conditionally(key, func() error {
		cur, _, ver, _, err := s.HeadAt(ctx, HeadOID(b.ID, key), false)
		if errors.Is(err, s3err.NoSuchKey) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := c.check(cur, key); err != nil {
			return err
		}
		return s.deleteObject(ctx, b, key, ver)
	})
}

// ETagMatches reports whether list — an If-Match or If-None-Match value:
// "*" or ETags separated by commas, quoted or not (RFC 9110 section
// 13.1.1) — names etag, compared without their quotes; "*" matches any.
func ETagMatches(list, etag string) bool {
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "*" || strings.Trim(e, `"`) == strings.Trim(etag, `"`) {
			return true
		}
	}
	return false
}
