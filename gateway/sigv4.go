package gateway

// Request authentication: AWS Signature Version 4 (Authorization header,
// presigned query string, aws-chunked payloads) and the legacy Signature
// Version 2, as the Amazon S3 API reference describes them:
//
//   - "Authenticating Requests (AWS Signature Version 4)" and its sections
//     "Signature Calculations for the Authorization Header: Transferring
//     Payload in a Single Chunk", "... Transferring Payload in Multiple
//     Chunks (Chunked Upload)", "Signature calculations for trailing headers
//     (chunked uploads)" and "Authenticating Requests: Using Query
//     Parameters";
//   - "Signing and authenticating REST requests" (Signature Version 2).
//
// Every helper here is prefixed sig so as not to collide with the rest of
// the package.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/gateway/s3err"
)

// SecretLookup returns the secret key of an access key id; it returns an
// error wrapping s3err.InvalidAccessKeyID when the key does not exist.
type SecretLookup func(ctx context.Context, accessKey string) (secret string, err error)

const (
	sigV4Algorithm        = "AWS4-HMAC-SHA256"
	sigV4ChunkAlgorithm   = "AWS4-HMAC-SHA256-PAYLOAD"
	sigV4TrailerAlgorithm = "AWS4-HMAC-SHA256-TRAILER"
	sigV4Terminator       = "aws4_request"
	sigV4Service          = "s3"
	sigV4IAMService       = "iam"   // the user-policy API on the same endpoint (iam.go)
	maxIAMBody            = 1 << 20 // bytes of an IAM request's form

	// The values of x-amz-content-sha256 besides a hex SHA-256
	// ("Authenticating Requests: Using the Authorization Header").
	sigUnsignedPayload          = "UNSIGNED-PAYLOAD"
	sigStreamingPayload         = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	sigStreamingPayloadTrailer  = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	sigStreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	sigStreamingECDSAPrefix     = "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"

	sigEmptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

	sigISO8601Basic = "20060102T150405Z"
	sigScopeDate    = "20060102"

	// sigMaxSkew is how far a header-signed request's date may be from the
	// server's clock (S3: RequestTimeTooSkewed beyond 15 minutes).
	sigMaxSkew = 15 * time.Minute
	// sigMaxPresignExpires is the largest X-Amz-Expires, seven days.
	sigMaxPresignExpires = 7 * 24 * 60 * 60

	// sigMaxLine bounds a chunk header or trailer line of an aws-chunked
	// body; real ones are under 200 bytes.
	sigMaxLine = 4096
	// sigMaxTrailers bounds the number of trailing headers.
	sigMaxTrailers = 64
)

// sigError is an API error with a specific message that still matches its
// generic variable: errors.As finds detail (what the client is shown),
// errors.Is(err, base) holds.
type sigError struct {
	detail *s3err.Error
	base   *s3err.Error
}

func (e *sigError) Error() string   { return e.detail.Error() }
func (e *sigError) Unwrap() []error { return []error{e.detail, e.base} }

// sigFail returns base with a specific message.
func sigFail(base *s3err.Error, format string, args ...any) error {
	return &sigError{detail: base.With(format, args...), base: base}
}

// Authenticate verifies r's AWS Signature Version 4 and returns the access
// key id. It accepts these forms (AWS S3 API reference, "Authenticating
// Requests (AWS Signature Version 4)" and "Signing and authenticating REST
// requests"):
//
//   - the Authorization header "AWS4-HMAC-SHA256
//     Credential=AK/yyyymmdd/region/s3/aws4_request, SignedHeaders=h1;h2,
//     Signature=hex", whose date (X-Amz-Date, else Date) must be within 15
//     minutes of now (else s3err.RequestTimeTooSkewed);
//   - a presigned URL: the query parameters X-Amz-Algorithm,
//     X-Amz-Credential, X-Amz-Date, X-Amz-Expires (at most 604800 seconds),
//     X-Amz-SignedHeaders and X-Amz-Signature; an expired URL gets
//     s3err.ExpiredToken;
//   - Signature Version 2, the header "Authorization: AWS AK:signature" or
//     the query parameters AWSAccessKeyId, Signature and Expires, for
//     path-style requests (its CanonicalizedResource is the request path:
//     Authenticate does not know which hosts name virtual-hosted buckets);
//   - an anonymous request (no Authorization header and none of the query
//     parameters above), for which it returns "" and a nil error.
//
// Any region in the credential scope is accepted; the service must be s3
// or iam (the caller routes an iam-signed request to the IAM API only).
// The canonical request uses r.URL.EscapedPath() as sent (S3 neither
// normalizes nor double-encodes it), the query re-encoded and sorted, and
// r.Host for the host header. Every x-amz-* header of the request must be
// signed (x-amz-content-sha256 is covered by the payload hash).
//
// The payload is then checked according to x-amz-content-sha256 (for a
// presigned URL the X-Amz-Content-Sha256 query parameter, else the header,
// else UNSIGNED-PAYLOAD):
//
//   - a hex SHA-256: r.Body is replaced by a reader that fails with an error
//     wrapping s3err.XAmzContentSHA256Mismatch at the end if the body hashes
//     differently;
//   - UNSIGNED-PAYLOAD: the body is left alone;
//   - STREAMING-AWS4-HMAC-SHA256-PAYLOAD (and -TRAILER): r.Body is replaced
//     by a decoder of the aws-chunked body that checks each chunk's
//     signature, chained from the request's ("Transferring Payload in
//     Multiple Chunks (Chunked Upload)"), and the trailer's;
//   - STREAMING-UNSIGNED-PAYLOAD-TRAILER: r.Body is replaced by a decoder of
//     the unsigned aws-chunked body, which ends with trailing headers.
//
// For aws-chunked bodies r.ContentLength (and the Content-Length header)
// becomes x-amz-decoded-content-length, the aws-chunked token leaves
// Content-Encoding, and the trailing headers are put in r.Trailer once the
// body has been read; a trailing x-amz-checksum-crc32, -crc32c, -crc64nvme,
// -sha1 or -sha256 announced by x-amz-trailer is checked (s3err.BadDigest). The
// decoder fails with an error wrapping s3err.SignatureDoesNotMatch on a bad
// chunk and s3err.IncompleteBody on a truncated body. The replaced bodies
// return data before the end of the body is verified: a caller must
// discard what it read when Read returns an error other than io.EOF.
//
// Errors are *s3err.Error values of errors.go, possibly with a more specific
// message, found with errors.As (apiError) and matching the variable with
// errors.Is; an error of lookup that is no s3err.Error is returned wrapped.
func Authenticate(ctx context.Context, r *http.Request, lookup SecretLookup, now time.Time) (accessKey string, err error) {
	return sigAuthenticate(ctx, r, lookup, now, "")
}

// sigAuthenticate is Authenticate for a request whose Host names the
// virtual-hosted bucket hostBucket ("" for path style), which only
// Signature Version 2 needs: its CanonicalizedResource is then
// "/" + hostBucket + path.
func sigAuthenticate(ctx context.Context, r *http.Request, lookup SecretLookup, now time.Time, hostBucket string) (accessKey string, err error) {
	authorization := strings.TrimSpace(r.Header.Get("Authorization"))
	query := r.URL.Query()
	v4Query := query.Has("X-Amz-Algorithm") || query.Has("X-Amz-Credential") || query.Has("X-Amz-Signature")
	v2Query := query.Has("AWSAccessKeyId") || query.Has("Signature")

	mechanisms := 0
	for _, used := range []bool{authorization != "", v4Query, v2Query} {
		if used {
			mechanisms++
		}
	}
	switch {
	case mechanisms > 1:
		return "", sigFail(s3err.InvalidArgument, "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified")
	case v4Query:
		return sigV4Query(ctx, r, lookup, now, query)
	case v2Query:
		return sigV2Query(ctx, r, lookup, now, query, hostBucket)
	case authorization == "":
		hash, err := sigPayloadHash(r, r.Header.Get("X-Amz-Content-Sha256"), false)
		if err != nil {
			return "", err
		}
		return "", sigPreparePayload(r, hash, nil)
	}
	scheme, rest, _ := strings.Cut(authorization, " ")
	switch scheme {
	case sigV4Algorithm:
		return sigV4Header(ctx, r, lookup, now, rest)
	case "AWS":
		return sigV2Header(ctx, r, lookup, now, rest, hostBucket)
	}
	return "", sigFail(s3err.InvalidArgument, "Unsupported Authorization Type %q", scheme)
}

// sigV4Auth is what a Signature Version 4 request claims.
type sigV4Auth struct {
	accessKey string
	date      string // yyyymmdd of the credential scope
	region    string
	service   string
	// signedHeaders are the names of SignedHeaders, in order.
	signedHeaders []string
	// signature is the hex signature the client sent.
	signature string
	// amzDate is the request time as the string to sign has it.
	amzDate string
}

func (a *sigV4Auth) scope() string {
	return a.date + "/" + a.region + "/" + a.service + "/" + sigV4Terminator
}

// sigV4Header authenticates a request signed in its Authorization header
// ("Authenticating Requests: Using the Authorization Header").
func sigV4Header(ctx context.Context, r *http.Request, lookup SecretLookup, now time.Time, fields string) (string, error) {
	malformed := s3err.AuthorizationHeaderMalformed
	var a sigV4Auth
	var credential, signedHeaders string
	seen := map[string]bool{}
	for field := range strings.SplitSeq(fields, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		name, value, ok := strings.Cut(field, "=")
		if !ok || seen[name] {
			return "", sigFail(malformed, "The authorization header is malformed; the authorization component %q is malformed.", field)
		}
		seen[name] = true
		switch name {
		case "Credential":
			credential = value
		case "SignedHeaders":
			signedHeaders = value
		case "Signature":
			a.signature = value
		default:
			return "", sigFail(malformed, "The authorization header is malformed; the authorization component %q is malformed.", field)
		}
	}
	if credential == "" || signedHeaders == "" || a.signature == "" {
		return "", sigFail(malformed, "The authorization header is malformed; it needs Credential, SignedHeaders and Signature.")
	}
	if err := sigV4ParseCredential(&a, credential, malformed); err != nil {
		return "", err
	}
	if err := sigV4ParseSignedHeaders(&a, signedHeaders, malformed); err != nil {
		return "", err
	}

	var when time.Time
	if v := r.Header.Get("X-Amz-Date"); v != "" {
		t, err := time.Parse(sigISO8601Basic, v)
		if err != nil {
			return "", sigFail(s3err.AccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
		}
		when, a.amzDate = t, v
	} else {
		t, ok := sigParseHTTPDate(r.Header.Get("Date"))
		if !ok {
			return "", sigFail(s3err.AccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
		}
		when, a.amzDate = t, t.UTC().Format(sigISO8601Basic)
	}
	if a.date != a.amzDate[:8] {
		return "", sigFail(malformed, "The authorization header is malformed; Invalid credential date %q. Date is not the same as X-Amz-Date: %q.", a.date, a.amzDate[:8])
	}
	if err := sigCheckSkew(when, now); err != nil {
		return "", err
	}
	if err := sigCheckAmzHeadersSigned(r, a.signedHeaders); err != nil {
		return "", err
	}
	header := r.Header.Get("X-Amz-Content-Sha256")
	if header == "" && a.service == sigV4IAMService && !sigEmptyBody(r) {
		// IAM's clients sign the body's hash without sending it (the
		// signature covers it all the same): take it from the body, a
		// small form
		body, err := io.ReadAll(io.LimitReader(r.Body, maxIAMBody+1))
		if err != nil || len(body) > maxIAMBody {
			return "", sigFail(s3err.InvalidRequest, "an IAM request's body must be a form of at most %d bytes", maxIAMBody)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256(body)
		header = hex.EncodeToString(sum[:])
	}
	if header == "" && !sigEmptyBody(r) {
		return "", sigFail(s3err.InvalidRequest, "Missing required header for this request: x-amz-content-sha256")
	}
	payloadHash, err := sigPayloadHash(r, header, false)
	if err != nil {
		return "", err
	}
	return sigV4Finish(ctx, r, lookup, &a, false, payloadHash)
}

// sigV4Query authenticates a presigned URL ("Authenticating Requests:
// Using Query Parameters").
func sigV4Query(ctx context.Context, r *http.Request, lookup SecretLookup, now time.Time, query url.Values) (string, error) {
	malformed := s3err.AuthorizationQueryParametersError
	params := map[string]string{}
	for _, name := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"} {
		values := query[name]
		if len(values) != 1 || values[0] == "" {
			return "", sigFail(malformed, "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters, once each.")
		}
		params[name] = values[0]
	}
	if params["X-Amz-Algorithm"] != sigV4Algorithm {
		return "", sigFail(malformed, "X-Amz-Algorithm only supports %q", sigV4Algorithm)
	}
	var a sigV4Auth
	a.signature = params["X-Amz-Signature"]
	if err := sigV4ParseCredential(&a, params["X-Amz-Credential"], malformed); err != nil {
		return "", err
	}
	when, err := time.Parse(sigISO8601Basic, params["X-Amz-Date"])
	if err != nil {
		return "", sigFail(malformed, "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
	}
	a.amzDate = params["X-Amz-Date"]
	if a.date != a.amzDate[:8] {
		return "", sigFail(malformed, "Invalid credential date %q. Date is not the same as X-Amz-Date: %q.", a.date, a.amzDate[:8])
	}
	expires, err := strconv.ParseInt(params["X-Amz-Expires"], 10, 64)
	switch {
	case err != nil:
		return "", sigFail(malformed, "X-Amz-Expires should be a number")
	case expires < 0: // refused as RGW refuses it (AWS: 400)
		return "", sigFail(s3err.AccessDenied, "X-Amz-Expires must be non-negative")
	case expires > sigMaxPresignExpires:
		return "", sigFail(s3err.AccessDenied, "X-Amz-Expires must be less than a week (in seconds) that is 604800")
	}
	if now.Before(when.Add(-sigMaxSkew)) {
		return "", sigFail(s3err.AccessDenied, "Request is not valid yet")
	}
	if now.After(when.Add(time.Duration(expires) * time.Second)) {
		return "", sigFail(s3err.ExpiredToken, "Request has expired")
	}
	if err := sigV4ParseSignedHeaders(&a, params["X-Amz-SignedHeaders"], malformed); err != nil {
		return "", err
	}
	if err := sigCheckAmzHeadersSigned(r, a.signedHeaders); err != nil {
		return "", err
	}

	hashValue := sigUnsignedPayload
	if values := query["X-Amz-Content-Sha256"]; len(values) > 0 {
		hashValue = values[0]
	} else if v := r.Header.Get("X-Amz-Content-Sha256"); v != "" {
		hashValue = v
	}
	payloadHash, err := sigPayloadHash(r, hashValue, true)
	if err != nil {
		return "", err
	}

	return sigV4Finish(ctx, r, lookup, &a, true, payloadHash)
}

// sigV4Finish checks the signature of a parsed header or presigned
// request over its canonical query and payload hash, and sets up the
// body's verification; it returns the access key.
func sigV4Finish(ctx context.Context, r *http.Request, lookup SecretLookup, a *sigV4Auth, presigned bool, payloadHash string) (string, error) {
	canonicalQuery, err := sigV4CanonicalQuery(r.URL.RawQuery, presigned)
	if err != nil {
		return "", err
	}
	chain, err := sigV4Verify(ctx, r, lookup, a, canonicalQuery, payloadHash)
	if err != nil {
		return "", err
	}
	if err := sigPreparePayload(r, payloadHash, chain); err != nil {
		return "", err
	}
	return a.accessKey, nil
}

// sigV4ParseCredential parses "AK/yyyymmdd/region/s3/aws4_request" into a.
// The access key is everything before the last four parts.
func sigV4ParseCredential(a *sigV4Auth, credential string, malformed *s3err.Error) error {
	parts := strings.Split(credential, "/")
	n := len(parts)
	if n < 5 || parts[0] == "" {
		return sigFail(malformed, "The Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
	}
	a.accessKey = strings.Join(parts[:n-4], "/")
	a.date, a.region, a.service = parts[n-4], parts[n-3], parts[n-2]
	if _, err := time.Parse(sigScopeDate, a.date); err != nil || len(a.date) != 8 {
		return sigFail(malformed, "The Credential is mal-formed; invalid date %q.", a.date)
	}
	if a.service != sigV4Service && a.service != sigV4IAMService {
		return sigFail(malformed, "The Credential is mal-formed; incorrect service %q. This endpoint belongs to %q.", a.service, sigV4Service)
	}
	if parts[n-1] != sigV4Terminator {
		return sigFail(malformed, "The Credential is mal-formed; incorrect terminal %q. This endpoint uses %q.", parts[n-1], sigV4Terminator)
	}
	return nil
}

// sigV4ParseSignedHeaders parses the ;-separated SignedHeaders, which must
// name host.
func sigV4ParseSignedHeaders(a *sigV4Auth, list string, malformed *s3err.Error) error {
	host := false
	for name := range strings.SplitSeq(list, ";") {
		if name == "" || strings.ContainsAny(name, " \t:") {
			return sigFail(malformed, "SignedHeaders %q is malformed.", list)
		}
		if strings.EqualFold(name, "host") {
			host = true
		}
		a.signedHeaders = append(a.signedHeaders, name)
	}
	if !host {
		return sigFail(malformed, "SignedHeaders must include the host header.")
	}
	return nil
}

// sigCheckSkew fails with s3err.RequestTimeTooSkewed when when is more than
// sigMaxSkew away from now.
func sigCheckSkew(when, now time.Time) error {
	if d := now.Sub(when); d > sigMaxSkew || d < -sigMaxSkew {
		return sigFail(s3err.RequestTimeTooSkewed, "The difference between the request time (%s) and the server's time (%s) is too large.",
			when.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// sigCheckAmzHeadersSigned denies a request with an x-amz-* header its
// signature does not cover, as S3 does ("There were headers present in the
// request which were not signed"). x-amz-content-sha256 is exempt: its
// value is the payload hash of the canonical request.
func sigCheckAmzHeadersSigned(r *http.Request, signed []string) error {
	covered := make(map[string]bool, len(signed))
	for _, name := range signed {
		covered[strings.ToLower(name)] = true
	}
	var unsigned []string
	for name := range r.Header {
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "x-amz-") && lower != "x-amz-content-sha256" && !covered[lower] {
			unsigned = append(unsigned, lower)
		}
	}
	if len(unsigned) > 0 {
		sort.Strings(unsigned)
		return sigFail(s3err.AccessDenied, "There were headers present in the request which were not signed: %s", strings.Join(unsigned, ", "))
	}
	return nil
}

// sigEmptyBody tells whether r has no body.
func sigEmptyBody(r *http.Request) bool {
	return r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody
}

// sigPayloadHash validates the x-amz-content-sha256 value v and returns the
// payload hash of the canonical request. An empty v (allowed by the
// callers only for an empty body or an anonymous request) stands for no
// check.
func sigPayloadHash(r *http.Request, v string, presigned bool) (string, error) {
	switch {
	case v == "" && presigned:
		return sigUnsignedPayload, nil
	case v == "" && sigEmptyBody(r):
		return sigEmptySHA256, nil
	case v == "", v == sigUnsignedPayload, v == sigStreamingPayload, v == sigStreamingPayloadTrailer, v == sigStreamingUnsignedTrailer:
		return v, nil
	case strings.HasPrefix(v, sigStreamingECDSAPrefix):
		return "", sigFail(s3err.NotImplemented, "x-amz-content-sha256 %s (Signature Version 4A) is not supported", v)
	case len(v) == sha256.Size*2 && sigIsHex(v):
		return v, nil
	}
	return "", sigFail(s3err.InvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.")
}

func sigIsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// sigV4Verify looks up the secret of a.accessKey and checks a.signature
// against r's canonical request ("Signature Calculations for the
// Authorization Header: Transferring Payload in a Single Chunk"). It
// returns the chain aws-chunked payloads continue from.
func sigV4Verify(ctx context.Context, r *http.Request, lookup SecretLookup, a *sigV4Auth, canonicalQuery, payloadHash string) (*sigChunkChain, error) {
	secret, err := sigLookup(ctx, lookup, a.accessKey)
	if err != nil {
		return nil, err
	}
	canonical := sigV4CanonicalRequest(r, a.signedHeaders, canonicalQuery, payloadHash)
	canonicalHash := sha256.Sum256([]byte(canonical))
	stringToSign := sigV4Algorithm + "\n" + a.amzDate + "\n" + a.scope() + "\n" + hex.EncodeToString(canonicalHash[:])
	key := sigV4SigningKey(secret, a.date, a.region, a.service)
	want := sigHMAC(key, stringToSign)
	got, err := hex.DecodeString(a.signature)
	if err != nil || !hmac.Equal(want, got) {
		return nil, sigFail(s3err.SignatureDoesNotMatch, "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	}
	return &sigChunkChain{key: key, amzDate: a.amzDate, scope: a.scope(), previous: hex.EncodeToString(want)}, nil
}

// sigLookup calls lookup, refusing an empty secret.
func sigLookup(ctx context.Context, lookup SecretLookup, accessKey string) (string, error) {
	secret, err := lookup(ctx, accessKey)
	if err != nil {
		var ae *s3err.Error
		if errors.As(err, &ae) {
			return "", err
		}
		return "", fmt.Errorf("gateway: looking up access key %q: %w", accessKey, err)
	}
	if secret == "" {
		return "", sigFail(s3err.InvalidAccessKeyID, "The AWS access key Id you provided does not exist in our records.")
	}
	return secret, nil
}

// sigV4SigningKey derives the signing key of the scope date/region/service
// ("Signature Calculations ...: Calculating a Signature").
func sigV4SigningKey(secret, date, region, service string) []byte {
	id := signingKeyID{secret, date, region, service}
	signingKeys.Lock()
	key, ok := signingKeys.m[id]
	signingKeys.Unlock()
	if ok {
		return key
	}
	key = sigHMAC([]byte("AWS4"+secret), date)
	key = sigHMAC(key, region)
	key = sigHMAC(key, service)
	key = sigHMAC(key, sigV4Terminator)
	signingKeys.Lock()
	if len(signingKeys.m) >= maxSigningKeys {
		clear(signingKeys.m) // a new day, or many keys: start afresh
	}
	signingKeys.m[id] = key
	signingKeys.Unlock()
	return key
}

// signingKeys caches derived SigV4 signing keys: one key serves a
// secret's requests for a whole day and region, and deriving it costs
// four HMACs per request (AWS's SigV4 documentation suggests caching it).
var signingKeys = struct {
	sync.Mutex
	m map[signingKeyID][]byte
}{m: map[signingKeyID][]byte{}}

const maxSigningKeys = 4096

type signingKeyID struct{ secret, date, region, service string }

func sigHMAC(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// sigV4CanonicalRequest is the canonical request of r:
//
//	HTTPMethod \n CanonicalURI \n CanonicalQueryString \n
//	CanonicalHeaders \n SignedHeaders \n HashedPayload
//
// CanonicalURI is the path as the client escaped it: S3 does not
// normalize it nor encode it twice.
func sigV4CanonicalRequest(r *http.Request, signedHeaders []string, canonicalQuery, payloadHash string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(path)
	b.WriteByte('\n')
	b.WriteString(canonicalQuery)
	b.WriteByte('\n')
	for _, name := range signedHeaders {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(sigHeaderValue(r, name))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signedHeaders, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

// sigHeaderValue is the canonical value of header name: its values,
// trimmed and with runs of spaces made one, joined by commas. Host is
// r.Host; Content-Length and Transfer-Encoding, which net/http may take
// out of r.Header, come from r's fields when missing.
func sigHeaderValue(r *http.Request, name string) string {
	values := r.Header.Values(name)
	if len(values) == 0 {
		switch strings.ToLower(name) {
		case "host":
			host := r.Host
			if host == "" {
				host = r.URL.Host
			}
			values = []string{host}
		case "content-length":
			if r.ContentLength >= 0 {
				values = []string{strconv.FormatInt(r.ContentLength, 10)}
			}
		case "transfer-encoding":
			values = r.TransferEncoding
		}
	}
	trimmed := make([]string, len(values))
	for i, v := range values {
		trimmed[i] = sigTrimAll(v)
	}
	return strings.Join(trimmed, ",")
}

// sigTrimAll trims v and turns each run of spaces inside it into one.
func sigTrimAll(v string) string {
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "  ") {
		return v
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// sigV4CanonicalQuery is the canonical query string of rawQuery: each name
// and value decoded, then URI-encoded (sigURIEncode), the pairs sorted by
// name then value, joined by &. Presigned requests leave X-Amz-Signature
// out.
func sigV4CanonicalQuery(rawQuery string, presigned bool) (string, error) {
	type pair struct{ name, value string }
	var pairs []pair
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, err1 := url.QueryUnescape(rawName)
		value, err2 := url.QueryUnescape(rawValue)
		if err1 != nil || err2 != nil {
			return "", sigFail(s3err.InvalidArgument, "The query string parameter %q is not properly encoded.", part)
		}
		if presigned && name == "X-Amz-Signature" {
			continue
		}
		pairs = append(pairs, pair{sigURIEncode(name), sigURIEncode(value)})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].name != pairs[j].name {
			return pairs[i].name < pairs[j].name
		}
		return pairs[i].value < pairs[j].value
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(p.value)
	}
	return b.String(), nil
}

// sigURIEncode percent-encodes every byte of s but the unreserved
// A-Z a-z 0-9 - _ . ~, with upper-case hex (a space is %20).
func sigURIEncode(s string) string {
	const upperHex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// sigParseHTTPDate parses a Date or x-amz-date header of the forms HTTP and
// AWS clients use.
func sigParseHTTPDate(v string) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	for _, layout := range []string{http.TimeFormat, time.RFC1123, time.RFC1123Z, time.RFC850, time.ANSIC, sigISO8601Basic} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// Signature Version 2 ("Signing and authenticating REST requests").

// sigV2SubResources are the query parameters the CanonicalizedResource of
// Signature Version 2 keeps (those of the AWS documentation and of
// botocore's HmacV1Auth).
var sigV2SubResources = map[string]bool{
	"accelerate": true, "acl": true, "analytics": true, "cors": true, "defaultObjectAcl": true,
	"delete": true, "inventory": true, "lifecycle": true, "location": true, "logging": true,
	"metrics": true, "notification": true, "object-lock": true, "partNumber": true, "policy": true,
	"replication": true, "requestPayment": true, "restore": true, "select": true, "select-type": true,
	"storageClass": true, "tagging": true, "torrent": true, "uploadId": true, "uploads": true,
	"versionId": true, "versioning": true, "versions": true, "website": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
}

// sigV2Header authenticates "Authorization: AWS AK:signature".
func sigV2Header(ctx context.Context, r *http.Request, lookup SecretLookup, now time.Time, credential, hostBucket string) (string, error) {
	i := strings.LastIndex(credential, ":")
	if i <= 0 || i == len(credential)-1 {
		return "", sigFail(s3err.InvalidArgument, "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature")
	}
	accessKey, signature := strings.TrimSpace(credential[:i]), strings.TrimSpace(credential[i+1:])

	dateLine := ""
	date := r.Header.Get("X-Amz-Date")
	if len(r.Header.Values("X-Amz-Date")) == 0 { // present, even empty, it is the date
		date = r.Header.Get("Date")
		dateLine = date
	}
	when, ok := sigParseHTTPDate(date)
	if !ok || when.Before(time.Unix(0, 0)) {
		return "", sigFail(s3err.AccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
	}
	if err := sigCheckSkew(when, now); err != nil {
		return "", err
	}
	return sigV2Verify(ctx, r, lookup, accessKey, signature, dateLine, hostBucket)
}

// sigV2Query authenticates the query parameters AWSAccessKeyId, Signature
// and Expires ("Query string request authentication alternative"); an
// Expires more than sigMaxPresignExpires ahead is refused, as SigV4's.
func sigV2Query(ctx context.Context, r *http.Request, lookup SecretLookup, now time.Time, query url.Values, hostBucket string) (string, error) {
	accessKeys, signatures, expiries := query["AWSAccessKeyId"], query["Signature"], query["Expires"]
	if len(accessKeys) != 1 || len(signatures) != 1 || len(expiries) != 1 || accessKeys[0] == "" || signatures[0] == "" {
		return "", sigFail(s3err.AccessDenied, "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters")
	}
	expires, err := strconv.ParseInt(expiries[0], 10, 64)
	if err != nil {
		return "", sigFail(s3err.AccessDenied, "Invalid date (should be seconds since epoch): %s", expiries[0])
	}
	if now.Unix() > expires {
		return "", sigFail(s3err.ExpiredToken, "Request has expired")
	}
	if expires-now.Unix() > sigMaxPresignExpires { // as SigV4's X-Amz-Expires: a leaked URL stays good a week at most
		return "", sigFail(s3err.AccessDenied, "Expires may be at most a week (604800 seconds) from now")
	}
	// A '+' the client left unescaped was decoded as a space.
	signature := strings.ReplaceAll(signatures[0], " ", "+")
	return sigV2Verify(ctx, r, lookup, accessKeys[0], signature, expiries[0], hostBucket)
}

// sigV2Verify checks a Signature Version 2 signature, base64 of
// HMAC-SHA1(secret, StringToSign) where StringToSign is
//
//	HTTP-Verb \n Content-MD5 \n Content-Type \n Date \n
//	CanonicalizedAmzHeaders CanonicalizedResource
func sigV2Verify(ctx context.Context, r *http.Request, lookup SecretLookup, accessKey, signature, dateLine, hostBucket string) (string, error) {
	hashValue := r.Header.Get("X-Amz-Content-Sha256")
	payloadHash, err := sigPayloadHash(r, hashValue, false)
	if err != nil {
		return "", err
	}
	secret, err := sigLookup(ctx, lookup, accessKey)
	if err != nil {
		return "", err
	}
	stringToSign := func(dateLine, amzHeaders string) string {
		return r.Method + "\n" + r.Header.Get("Content-Md5") + "\n" + r.Header.Get("Content-Type") + "\n" +
			dateLine + "\n" + amzHeaders + sigV2Resource(r, hostBucket)
	}
	candidates := []string{stringToSign(dateLine, sigV2AmzHeaders(r, ""))}
	if amzDate := r.Header.Get("X-Amz-Date"); amzDate != "" && dateLine == "" {
		// The documentation's Delete example puts x-amz-date in the Date
		// line instead, and leaves it out of the x-amz-* headers.
		candidates = append(candidates, stringToSign(amzDate, sigV2AmzHeaders(r, "x-amz-date")))
	}
	got, err := base64.StdEncoding.DecodeString(signature)
	matched := false
	for _, candidate := range candidates {
		m := hmac.New(sha1.New, []byte(secret))
		m.Write([]byte(candidate))
		if err == nil && hmac.Equal(m.Sum(nil), got) {
			matched = true
		}
	}
	if !matched {
		return "", sigFail(s3err.SignatureDoesNotMatch, "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	}
	if err := sigPreparePayload(r, payloadHash, nil); err != nil {
		return "", err
	}
	return accessKey, nil
}

// sigV2AmzHeaders is the CanonicalizedAmzHeaders of r: each x-amz-* header
// but skip lower-cased, sorted, "name:v1,v2\n".
func sigV2AmzHeaders(r *http.Request, skip string) string {
	var names []string
	for name := range r.Header {
		if lower := strings.ToLower(name); strings.HasPrefix(lower, "x-amz-") && lower != skip {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return strings.ToLower(names[i]) < strings.ToLower(names[j]) })
	var b strings.Builder
	for _, name := range names {
		values := make([]string, len(r.Header[name]))
		for i, v := range r.Header[name] {
			values[i] = strings.TrimSpace(v)
		}
		b.WriteString(strings.ToLower(name))
		b.WriteByte(':')
		b.WriteString(strings.Join(values, ","))
		b.WriteByte('\n')
	}
	return b.String()
}

// sigV2Resource is the CanonicalizedResource of a request: "/" +
// hostBucket if virtual-hosted, the path as sent, then the sub-resources
// sorted, values not encoded.
func sigV2Resource(r *http.Request, hostBucket string) string {
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	if hostBucket != "" {
		path = "/" + hostBucket + path
	}
	query := r.URL.Query()
	var names []string
	for name := range query {
		if sigV2SubResources[name] {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return path
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(path)
	sep := byte('?')
	for _, name := range names {
		for _, value := range query[name] {
			b.WriteByte(sep)
			sep = '&'
			b.WriteString(name)
			if value != "" {
				b.WriteByte('=')
				b.WriteString(value)
			}
		}
	}
	return b.String()
}

// Payloads.

// sigPreparePayload arranges for r's body to be checked against
// payloadHash, chain being the signature aws-chunked signatures continue
// (nil when the request is not signed with Signature Version 4).
func sigPreparePayload(r *http.Request, payloadHash string, chain *sigChunkChain) error {
	switch payloadHash {
	case "", sigUnsignedPayload:
		return nil
	case sigStreamingPayload, sigStreamingPayloadTrailer:
		if chain == nil {
			return sigFail(s3err.AccessDenied, "x-amz-content-sha256 %s needs a request signed with Signature Version 4", payloadHash)
		}
		return sigDecodeChunked(r, chain, payloadHash == sigStreamingPayloadTrailer)
	case sigStreamingUnsignedTrailer:
		return sigDecodeChunked(r, nil, true)
	}
	want, err := hex.DecodeString(payloadHash)
	if err != nil || len(want) != sha256.Size {
		return sigFail(s3err.InvalidArgument, "x-amz-content-sha256 %q is not a SHA-256", payloadHash)
	}
	if sigEmptyBody(r) {
		empty := sha256.Sum256(nil)
		if !hmac.Equal(want, empty[:]) {
			return sigFail(s3err.XAmzContentSHA256Mismatch, "The provided 'x-amz-content-sha256' header does not match what was computed: the body is empty.")
		}
		return nil
	}
	r.Body = &sigHashReader{body: r.Body, hash: sha256.New(), want: want}
	return nil
}

// sigHashReader passes a body through, failing at its end if its SHA-256 is
// not want.
type sigHashReader struct {
	body io.ReadCloser
	hash hash.Hash
	want []byte
	err  error
}

func (h *sigHashReader) Read(p []byte) (int, error) {
	if h.err != nil {
		return 0, h.err
	}
	n, err := h.body.Read(p)
	h.hash.Write(p[:n])
	if err == io.EOF {
		if got := h.hash.Sum(nil); !hmac.Equal(got, h.want) {
			err = sigFail(s3err.XAmzContentSHA256Mismatch, "The provided 'x-amz-content-sha256' header does not match what was computed: the body hashes to %x.", got)
		}
	}
	if err != nil {
		h.err = err
	}
	return n, err
}

func (h *sigHashReader) Close() error { return h.body.Close() }

// sigChunkChain is the state of the signatures of an aws-chunked payload:
// each chunk's signs its data and the previous signature, starting with
// the request's (the seed).
type sigChunkChain struct {
	key      []byte
	amzDate  string
	scope    string
	previous string // hex
}

// chunk returns the signature of a chunk whose data hashes to dataHash and
// makes it the previous one:
//
//	AWS4-HMAC-SHA256-PAYLOAD \n timestamp \n scope \n previous-signature \n
//	SHA256("") \n SHA256(chunk-data)
func (c *sigChunkChain) chunk(dataHash []byte) []byte {
	sig := sigHMAC(c.key, sigV4ChunkAlgorithm+"\n"+c.amzDate+"\n"+c.scope+"\n"+c.previous+"\n"+sigEmptySHA256+"\n"+hex.EncodeToString(dataHash))
	c.previous = hex.EncodeToString(sig)
	return sig
}

// trailer returns the signature of the trailing headers whose canonical
// form ("name:value\n" each, sorted) is canonical:
//
//	AWS4-HMAC-SHA256-TRAILER \n timestamp \n scope \n previous-signature \n
//	SHA256(canonical)
func (c *sigChunkChain) trailer(canonical string) []byte {
	sum := sha256.Sum256([]byte(canonical))
	return sigHMAC(c.key, sigV4TrailerAlgorithm+"\n"+c.amzDate+"\n"+c.scope+"\n"+c.previous+"\n"+hex.EncodeToString(sum[:]))
}

// sigDecodeChunked replaces r.Body by a decoder of its aws-chunked
// encoding, signed when chain is not nil, ending with trailing headers when
// trailer.
func sigDecodeChunked(r *http.Request, chain *sigChunkChain, trailer bool) error {
	v := r.Header.Get("X-Amz-Decoded-Content-Length")
	if v == "" {
		return sigFail(s3err.MissingContentLength, "An aws-chunked payload needs the x-amz-decoded-content-length header.")
	}
	declared, err := strconv.ParseInt(v, 10, 64)
	if err != nil || declared < 0 {
		return sigFail(s3err.InvalidArgument, "x-amz-decoded-content-length %q is not a length.", v)
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	c := &sigChunkedReader{
		body:      r.Body,
		src:       bufio.NewReaderSize(r.Body, sigMaxLine),
		chain:     chain,
		trailer:   trailer,
		declared:  declared,
		chunkHash: sha256.New(),
		checksums: map[string]hash.Hash{},
	}
	if trailer {
		for _, value := range r.Header.Values("X-Amz-Trailer") {
			for name := range strings.SplitSeq(value, ",") {
				name = strings.ToLower(strings.TrimSpace(name))
				if name == "" {
					continue
				}
				c.announced = append(c.announced, name)
				if a := checksumAlgOfHeader(name); a != nil { // checksum.go
					c.checksums[name] = a.New()
				}
			}
		}
		if r.Trailer == nil {
			r.Trailer = http.Header{}
		}
		for _, name := range c.announced {
			key := http.CanonicalHeaderKey(name)
			if _, ok := r.Trailer[key]; !ok {
				r.Trailer[key] = nil
			}
		}
		c.trailers = r.Trailer
	}

	if v := sigDropAWSChunked(r.Header.Values("Content-Encoding")); v != "" {
		r.Header.Set("Content-Encoding", v)
	} else {
		r.Header.Del("Content-Encoding")
	}
	r.ContentLength = declared
	r.Header.Set("Content-Length", strconv.FormatInt(declared, 10))
	r.Body = c
	return nil
}

// sigChunkedReader decodes an aws-chunked body:
//
//	hex-size[;chunk-signature=sig]\r\n data \r\n ... 0[;chunk-signature=sig]\r\n
//	[name:value\r\n ... [x-amz-trailer-signature:sig\r\n]] \r\n
//
// checking the chunk signatures when chain is not nil. It returns a
// chunk's data before reaching its end and signature.
type sigChunkedReader struct {
	body      io.Closer
	src       *bufio.Reader
	chain     *sigChunkChain
	trailer   bool
	declared  int64
	total     int64
	chunks    int
	remaining int64 // of the current chunk's data
	inChunk   bool
	chunkHash hash.Hash
	chunkSig  []byte
	announced []string
	checksums map[string]hash.Hash
	trailers  http.Header
	err       error
}

func (c *sigChunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if !c.inChunk {
		if err := c.startChunk(); err != nil {
			c.err = err
			return 0, err
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > c.remaining {
		p = p[:c.remaining]
	}
	n, err := c.src.Read(p)
	c.chunkHash.Write(p[:n])
	for _, h := range c.checksums {
		h.Write(p[:n])
	}
	c.remaining -= int64(n)
	c.total += int64(n)
	if c.remaining == 0 {
		c.inChunk = false
		if err := c.endChunk(); err != nil {
			c.err = err
			return n, err
		}
		return n, nil
	}
	if err != nil {
		if err == io.EOF {
			err = c.truncated()
		}
		c.err = err
		return n, err
	}
	return n, nil
}

func (c *sigChunkedReader) Close() error { return c.body.Close() }

func (c *sigChunkedReader) truncated() error {
	return sigFail(s3err.IncompleteBody, "The aws-chunked body ends in chunk %d, after %d of its %d bytes.", c.chunks, c.total, c.declared)
}

func (c *sigChunkedReader) malformed(format string, args ...any) error {
	return sigFail(s3err.InvalidRequest, "The aws-chunked body is malformed: "+format+".", args...)
}

func (c *sigChunkedReader) badSignature(format string, args ...any) error {
	return sigFail(s3err.SignatureDoesNotMatch, "The aws-chunked body's signatures do not match: "+format+".", args...)
}

// readLine reads a line, without its \r\n (or \n); atEOF tells the body
// ended before any byte of it.
func (c *sigChunkedReader) readLine() (line string, atEOF bool, err error) {
	b, err := c.src.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return "", false, c.malformed("a line is longer than %d bytes", sigMaxLine)
	case err == io.EOF && len(b) == 0:
		return "", true, c.truncated()
	case err == io.EOF:
		return "", false, c.truncated()
	case err != nil:
		return "", false, err
	}
	line = strings.TrimSuffix(string(b[:len(b)-1]), "\r")
	return line, false, nil
}

// startChunk reads a chunk header; at the last, empty chunk it reads the
// trailer and returns io.EOF if the whole body is right.
func (c *sigChunkedReader) startChunk() error {
	line, _, err := c.readLine()
	if err != nil {
		return err
	}
	c.chunks++
	sizeText, extension, _ := strings.Cut(line, ";")
	size, err := strconv.ParseUint(sizeText, 16, 63)
	if err != nil || sizeText == "" || len(sizeText) > 16 {
		return c.malformed("chunk %d has size %q", c.chunks, sizeText)
	}
	if c.chain != nil {
		sig, ok := strings.CutPrefix(extension, "chunk-signature=")
		if !ok {
			return c.badSignature("chunk %d has no chunk-signature", c.chunks)
		}
		if c.chunkSig, err = hex.DecodeString(sig); err != nil || len(c.chunkSig) != sha256.Size {
			return c.badSignature("chunk %d has chunk-signature %q", c.chunks, sig)
		}
	}
	if int64(size) > c.declared-c.total {
		return sigFail(s3err.IncompleteBody, "The aws-chunked body is longer than its x-amz-decoded-content-length, %d.", c.declared)
	}
	c.chunkHash.Reset()
	if size == 0 {
		return c.finish()
	}
	c.remaining = int64(size)
	c.inChunk = true
	return nil
}

// endChunk reads the \r\n after a chunk's data and checks its signature.
func (c *sigChunkedReader) endChunk() error {
	var crlf [2]byte
	if _, err := io.ReadFull(c.src, crlf[:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return c.truncated()
		}
		return err
	}
	if string(crlf[:]) != "\r\n" {
		return c.malformed("chunk %d is not followed by CRLF", c.chunks)
	}
	return c.checkChunk()
}

func (c *sigChunkedReader) checkChunk() error {
	if c.chain == nil {
		return nil
	}
	if want := c.chain.chunk(c.chunkHash.Sum(nil)); !hmac.Equal(want, c.chunkSig) {
		return c.badSignature("the signature of chunk %d does not match", c.chunks)
	}
	return nil
}

// finish checks the last chunk and reads the trailer.
func (c *sigChunkedReader) finish() error {
	if err := c.checkChunk(); err != nil {
		return err
	}
	if c.total != c.declared {
		return sigFail(s3err.IncompleteBody, "The aws-chunked body has %d bytes, its x-amz-decoded-content-length %d.", c.total, c.declared)
	}
	trailers := map[string]string{}
	var signature []byte
	signed := false
	ended := false // by an empty line rather than the end of the body
	for {
		line, atEOF, err := c.readLine()
		if atEOF {
			break
		}
		if err != nil {
			return err
		}
		if line == "" {
			ended = true
			break
		}
		if !c.trailer {
			return c.malformed("trailing header %q in a payload without trailer", line)
		}
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if !ok || name == "" || len(trailers) >= sigMaxTrailers {
			return c.malformed("trailing header %q", line)
		}
		if name == "x-amz-trailer-signature" {
			if signed || c.chain == nil {
				return c.malformed("unexpected x-amz-trailer-signature")
			}
			signed = true
			signature, _ = hex.DecodeString(value)
			continue
		}
		if _, dup := trailers[name]; dup || signed {
			return c.malformed("trailing header %q", line)
		}
		trailers[name] = value
	}

	if c.chain != nil && c.trailer {
		if !signed {
			if !ended {
				return c.truncated()
			}
			return c.badSignature("the trailer has no x-amz-trailer-signature")
		}
		names := make([]string, 0, len(trailers))
		for name := range trailers {
			names = append(names, name)
		}
		sort.Strings(names)
		var canonical strings.Builder
		for _, name := range names {
			canonical.WriteString(name + ":" + trailers[name] + "\n")
		}
		if want := c.chain.trailer(canonical.String()); !hmac.Equal(want, signature) {
			return c.badSignature("the trailer signature does not match")
		}
	}
	for _, name := range c.announced {
		value, ok := trailers[name]
		if !ok {
			return sigFail(s3err.IncompleteBody, "The aws-chunked body lacks the trailing header %s that x-amz-trailer announces.", name)
		}
		if h := c.checksums[name]; h != nil {
			if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != value {
				return sigFail(s3err.BadDigest, "The %s you specified did not match the calculated checksum.", strings.ToUpper(strings.TrimPrefix(name, "x-amz-checksum-")))
			}
		}
	}
	if c.trailers != nil {
		for name, value := range trailers {
			c.trailers.Set(name, value)
		}
	}
	return io.EOF
}

// sigDropAWSChunked returns the Content-Encoding values without the
// aws-chunked token, the other codings as the client wrote them (S3
// stores and returns them verbatim: "aws-chunked, deflate, gzip" leaves
// "deflate, gzip").
func sigDropAWSChunked(values []string) string {
	var keep []string
	for _, value := range values {
		for part := range strings.SplitSeq(value, ",") {
			if t := strings.TrimSpace(part); t != "" && !strings.EqualFold(t, "aws-chunked") {
				keep = append(keep, part)
			}
		}
	}
	return strings.TrimSpace(strings.Join(keep, ","))
}
