package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/osdop"
)

// Conditional writes (the AWS S3 API reference: PutObject's If-Match and
// If-None-Match, DeleteObject's If-Match, x-amz-if-match-last-modified-time
// and x-amz-if-match-size, and DeleteObjects' per-object ETag,
// LastModifiedTime and Size). The condition is checked against the head
// the gateway reads, and the write is made conditional on that very head
// in the same OSD request (AssertVersion on its RADOS version, or an
// exclusive create where there was none), so a write that raced in
// between makes the OSD refuse, and the check runs again: two writers
// with If-Match on the same ETag never both succeed.

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

// writeCond is a conditional PUT's If-Match and If-None-Match ("" when not
// given; "*" or a list of ETags).
type writeCond struct {
	IfMatch, IfNoneMatch string
}

// needsHead reports whether the condition depends on the current head's
// ETag (If-None-Match: * alone needs only an exclusive create).
func (c writeCond) needsHead() bool {
	return c.IfMatch != "" || (c.IfNoneMatch != "" && c.IfNoneMatch != "*")
}

// check applies the condition to the current head (nil: the key has
// none): If-Match on a missing key is NoSuchKey, a failed one
// PreconditionFailed, as S3 answers.
func (c writeCond) check(cur *headInfo, key string) error {
	if c.IfMatch != "" {
		if cur == nil {
			return s3err.NoSuchKey.With("If-Match: key %q does not exist", key)
		}
		if !etagMatches(c.IfMatch, cur.ETag) {
			return s3err.PreconditionFailed.With("If-Match: the ETag of %q is %s", key, cur.ETag)
		}
	}
	if c.IfNoneMatch != "" && cur != nil && etagMatches(c.IfNoneMatch, cur.ETag) {
		return s3err.PreconditionFailed.With("If-None-Match: %q exists with ETag %s", key, cur.ETag)
	}
	return nil
}

// guard reads key's head, checks c against it and returns the op that
// makes a head write happen only over that head, and the head (nil if
// none).
func (s *Store) guard(ctx context.Context, b *Bucket, key string, c writeCond) (osdop.Op, *headInfo, error) {
	cur, _, ver, _, err := s.headAt(ctx, headOID(b.ID, key), false)
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

// deleteCond is a conditional delete's ETag, last-modified time (second
// precision, as S3 shows it) and size; zero values are not checked.
type deleteCond struct {
	ETag  string
	Mtime time.Time
	Size  *int64
}

func (c deleteCond) empty() bool { return c.ETag == "" && c.Mtime.IsZero() && c.Size == nil }

func (c deleteCond) check(h *headInfo, key string) error {
	if c.ETag != "" && !etagMatches(c.ETag, h.ETag) {
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

// deleteObjectIf deletes key if its head meets c; a missing key is
// deleted already (no error), as S3 answers.
func (s *Store) deleteObjectIf(ctx context.Context, b *Bucket, key string, c deleteCond) error {
	if c.empty() {
		return s.DeleteObject(ctx, b, key)
	}
	return conditionally(key, func() error {
		cur, _, ver, _, err := s.headAt(ctx, headOID(b.ID, key), false)
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

// deleteCondFrom reads a DeleteObject's conditions from its headers.
func deleteCondFrom(h http.Header) (deleteCond, error) {
	c := deleteCond{ETag: h.Get("If-Match")}
	if v := h.Get("x-amz-if-match-last-modified-time"); v != "" {
		t, err := parseHTTPOrISOTime(v)
		if err != nil {
			return c, s3err.InvalidArgument.With("x-amz-if-match-last-modified-time %q: %v", v, err)
		}
		c.Mtime = t
	}
	if v := h.Get("x-amz-if-match-size"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return c, s3err.InvalidArgument.With("x-amz-if-match-size %q: want a byte count", v)
		}
		c.Size = &n
	}
	return c, nil
}

// parseHTTPOrISOTime reads a timestamp as SDKs send one in a header (an
// HTTP date) or in XML (ISO 8601).
func parseHTTPOrISOTime(v string) (time.Time, error) {
	if t, err := http.ParseTime(v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, v)
}
