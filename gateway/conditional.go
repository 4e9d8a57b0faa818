package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
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

// deleteCondFrom reads a DeleteObject's conditions from its headers.
func deleteCondFrom(h http.Header) (rgw.DeleteCond, error) {
	c := rgw.DeleteCond{ETag: h.Get("If-Match")}
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
