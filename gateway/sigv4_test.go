package gateway

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// The example credentials of the AWS documentation.
const (
	testAccessKey = "AKIAIOSFODNN7EXAMPLE"
	testSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

var testT0 = time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)

func testLookup(_ context.Context, accessKey string) (string, error) {
	switch accessKey {
	case testAccessKey:
		return testSecretKey, nil
	case "OTHERKEY":
		return "other-secret", nil
	}
	return "", fmt.Errorf("test lookup of %q: %w", accessKey, s3err.InvalidAccessKeyID)
}

// errCode is the S3 error code of err, "" for nil.
func errCode(err error) string {
	if err == nil {
		return ""
	}
	var ae *s3err.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return "non-API error: " + err.Error()
}

// authOutcome is what the test server saw of a request.
type authOutcome struct {
	accessKey     string
	authErr       error // of Authenticate
	body          []byte
	readErr       error // of reading the body after it
	contentLength int64
	header        http.Header
	trailer       http.Header
}

// authServer is an HTTP server that authenticates each request, reads its
// body and reports both.
type authServer struct {
	*httptest.Server
	now      func() time.Time
	outcomes chan authOutcome
}

func newAuthServer(t *testing.T, useTLS bool, now func() time.Time) *authServer {
	s := &authServer{now: now, outcomes: make(chan authOutcome, 64)}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var o authOutcome
		o.accessKey, o.authErr = Authenticate(r.Context(), r, testLookup, s.now())
		if o.authErr == nil {
			o.body, o.readErr = io.ReadAll(r.Body)
		}
		o.contentLength = r.ContentLength
		o.header = r.Header.Clone()
		o.trailer = r.Trailer.Clone()
		s.outcomes <- o
		switch {
		case o.authErr != nil || o.readErr != nil:
			ae := apiError(errors.Join(o.authErr, o.readErr))
			w.WriteHeader(ae.Status)
			io.WriteString(w, ae.Code)
		case r.URL.Query().Has("list-type"):
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("ETag", `"0123"`)
			if r.Method == http.MethodGet {
				io.WriteString(w, "hello")
			}
		}
	})
	if useTLS {
		s.Server = httptest.NewTLSServer(handler)
	} else {
		s.Server = httptest.NewServer(handler)
	}
	t.Cleanup(s.Close)
	return s
}

// do sends req and returns what the server saw of it.
func (s *authServer) do(t *testing.T, req *http.Request) authOutcome {
	t.Helper()
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return s.next(t)
}

func (s *authServer) next(t *testing.T) authOutcome {
	t.Helper()
	select {
	case o := <-s.outcomes:
		return o
	case <-time.After(20 * time.Second):
		t.Fatal("no request reached the server")
		return authOutcome{}
	}
}

// check fails t unless o authenticated as accessKey with no error, or
// failed with codes authCode (of Authenticate) and readCode (of reading
// the body).
func (o authOutcome) check(t *testing.T, what, accessKey, authCode, readCode string) {
	t.Helper()
	if got := errCode(o.authErr); got != authCode {
		t.Errorf("%s: Authenticate error %q (%v), want %q", what, got, o.authErr, authCode)
		return
	}
	if got := errCode(o.readErr); got != readCode {
		t.Errorf("%s: reading the body: error %q (%v), want %q", what, got, o.readErr, readCode)
	}
	if authCode == "" && o.accessKey != accessKey {
		t.Errorf("%s: access key %q, want %q", what, o.accessKey, accessKey)
	}
}

// sdkRequest describes a request signed by the AWS SDK's v4.Signer.
type sdkRequest struct {
	method string
	path   string // escaped path and query
	body   []byte
	header map[string]string
	// payload is the x-amz-content-sha256 sent and signed: "" for the
	// hex SHA-256 of body, "none" for no header (then signed with the hex).
	payload   string
	region    string
	at        time.Time
	accessKey string
	secret    string
}

func (s *authServer) sign(t *testing.T, o sdkRequest) *http.Request {
	t.Helper()
	if o.method == "" {
		o.method = http.MethodGet
	}
	if o.region == "" {
		o.region = "us-east-1"
	}
	if o.at.IsZero() {
		o.at = testT0
	}
	if o.accessKey == "" {
		o.accessKey, o.secret = testAccessKey, testSecretKey
	}
	var body io.Reader
	if o.body != nil {
		body = bytes.NewReader(o.body)
	}
	req, err := http.NewRequest(o.method, s.URL+o.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range o.header {
		req.Header.Set(k, v)
	}
	sum := sha256.Sum256(o.body)
	payloadHash := hex.EncodeToString(sum[:])
	switch o.payload {
	case "":
		req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	case "none":
	default:
		payloadHash = o.payload
		req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	}
	sdkSign(t, req, payloadHash, o.region, o.at, o.accessKey, o.secret)
	return req
}

func sdkSign(t *testing.T, req *http.Request, payloadHash, region string, at time.Time, accessKey, secret string) {
	t.Helper()
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secret}
	if err := signer.SignHTTP(context.Background(), creds, req, payloadHash, "s3", region, at); err != nil {
		t.Fatal(err)
	}
}

// signatureOf is the Signature of an Authorization header.
func signatureOf(t *testing.T, req *http.Request) string {
	t.Helper()
	_, sig, ok := strings.Cut(req.Header.Get("Authorization"), "Signature=")
	if !ok {
		t.Fatalf("no signature in %q", req.Header.Get("Authorization"))
	}
	return sig
}

// TestAuthSigV4HeaderSDK: requests signed by the SDK's signer are accepted,
// whatever their path, query, headers, payload form and region.
func TestAuthSigV4HeaderSDK(t *testing.T) {
	srv := newAuthServer(t, false, func() time.Time { return testT0 })
	body := []byte("the quick brown fox jumps over the lazy dog\n")
	for _, c := range []struct {
		name string
		req  sdkRequest
	}{
		{"get", sdkRequest{path: "/bucket/key"}},
		{"get without x-amz-content-sha256", sdkRequest{path: "/bucket/key", payload: "none"}},
		{"list buckets", sdkRequest{path: "/"}},
		{"escaped path", sdkRequest{path: "/bucket/dir/a%20b%2Bc~d!e$f'g(h)*i,j;k=l:m@n%C3%BC%25.txt"}},
		{"reserved characters left raw", sdkRequest{path: "/bucket/a+b=c&d$e"}},
		{"double slash and dots", sdkRequest{path: "/bucket//x/./y/../z"}},
		{"query", sdkRequest{path: "/bucket?list-type=2&prefix=a%20b%2Fc&delimiter=%2F&start-after=x%2By&fetch-owner&encoding-type=url&unicode=%C3%BC&tilde=~&empty="}},
		{"repeated query names", sdkRequest{path: "/bucket?b=2&a=z&a=y&a=a%2Fb&a=a-b"}},
		{"sub-resource", sdkRequest{method: http.MethodPut, path: "/bucket/key?acl", body: []byte("<AccessControlPolicy/>")}},
		{"put signed payload", sdkRequest{method: http.MethodPut, path: "/bucket/key", body: body, header: map[string]string{
			"Content-Type":        "text/plain",
			"X-Amz-Meta-Spaces":   "  a   b    c  ",
			"X-Amz-Storage-Class": "STANDARD",
			"Cache-Control":       "no-cache,  no-store",
		}}},
		{"put unsigned payload", sdkRequest{method: http.MethodPut, path: "/bucket/key", body: body, payload: "UNSIGNED-PAYLOAD"}},
		{"region default", sdkRequest{path: "/bucket/key", region: "default"}},
		{"region garage", sdkRequest{path: "/bucket/key", region: "garage"}},
		{"region eu-west-3", sdkRequest{path: "/bucket/key", region: "eu-west-3"}},
		{"14 minutes slow", sdkRequest{path: "/bucket/key", at: testT0.Add(-14 * time.Minute)}},
		{"14 minutes fast", sdkRequest{path: "/bucket/key", at: testT0.Add(14 * time.Minute)}},
		{"another key", sdkRequest{path: "/bucket/key", accessKey: "OTHERKEY", secret: "other-secret"}},
	} {
		req := srv.sign(t, c.req)
		o := srv.do(t, req)
		want := c.req.accessKey
		if want == "" {
			want = testAccessKey
		}
		o.check(t, c.name, want, "", "")
		if c.req.body != nil && !bytes.Equal(o.body, c.req.body) {
			t.Errorf("%s: the server read %q, want %q", c.name, o.body, c.req.body)
		}
	}
}

// TestAuthSigV4HeaderTampering: a changed request, a wrong key or a clock
// too far off is refused with the code S3 gives.
func TestAuthSigV4HeaderTampering(t *testing.T) {
	srv := newAuthServer(t, false, func() time.Time { return testT0 })
	body := []byte("some object data")
	put := sdkRequest{method: http.MethodPut, path: "/bucket/key?tagging", body: body, header: map[string]string{
		"Content-Type":      "text/plain",
		"X-Amz-Meta-Author": "alice",
	}}
	for _, c := range []struct {
		name               string
		req                sdkRequest
		tamper             func(*http.Request)
		authCode, readCode string
	}{
		{name: "intact", req: put},
		{name: "changed signed header", req: put, tamper: func(r *http.Request) { r.Header.Set("X-Amz-Meta-Author", "mallory") }, authCode: "SignatureDoesNotMatch"},
		{name: "changed content type", req: put, tamper: func(r *http.Request) { r.Header.Set("Content-Type", "text/html") }, authCode: "SignatureDoesNotMatch"},
		{name: "added unsigned x-amz header", req: put, tamper: func(r *http.Request) { r.Header.Set("X-Amz-Acl", "public-read") }, authCode: "AccessDenied"},
		{name: "changed path", req: put, tamper: func(r *http.Request) { r.URL.Path = "/bucket/other" }, authCode: "SignatureDoesNotMatch"},
		{name: "changed method", req: put, tamper: func(r *http.Request) { r.Method = http.MethodPost }, authCode: "SignatureDoesNotMatch"},
		{name: "added query", req: put, tamper: func(r *http.Request) { r.URL.RawQuery += "&versionId=1" }, authCode: "SignatureDoesNotMatch"},
		{name: "removed query", req: put, tamper: func(r *http.Request) { r.URL.RawQuery = "" }, authCode: "SignatureDoesNotMatch"},
		{name: "changed host", req: put, tamper: func(r *http.Request) { r.Host = "evil.example.com" }, authCode: "SignatureDoesNotMatch"},
		{name: "changed body", req: put, tamper: func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader("SOME OBJECT DATA"))
		}, readCode: "XAmzContentSHA256Mismatch"},
		{name: "changed x-amz-content-sha256", req: put, tamper: func(r *http.Request) {
			r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		}, authCode: "SignatureDoesNotMatch"},
		{name: "wrong secret", req: sdkRequest{path: "/bucket/key", accessKey: testAccessKey, secret: "not-the-secret"}, authCode: "SignatureDoesNotMatch"},
		{name: "unknown key", req: sdkRequest{path: "/bucket/key", accessKey: "NOSUCHKEY", secret: testSecretKey}, authCode: "InvalidAccessKeyId"},
		{name: "16 minutes slow", req: sdkRequest{path: "/bucket/key", at: testT0.Add(-16 * time.Minute)}, authCode: "RequestTimeTooSkewed"},
		{name: "16 minutes fast", req: sdkRequest{path: "/bucket/key", at: testT0.Add(16 * time.Minute)}, authCode: "RequestTimeTooSkewed"},
		{name: "a day slow", req: sdkRequest{path: "/bucket/key", at: testT0.Add(-24 * time.Hour)}, authCode: "RequestTimeTooSkewed"},
		{name: "x-amz-date changed", req: sdkRequest{path: "/bucket/key"}, tamper: func(r *http.Request) {
			r.Header.Set("X-Amz-Date", testT0.Add(time.Second).Format(sigISO8601Basic))
		}, authCode: "SignatureDoesNotMatch"},
		{name: "x-amz-date on another day than the scope", req: sdkRequest{path: "/bucket/key", at: testT0.Add(-12*time.Hour - time.Second)}, tamper: func(r *http.Request) {
			r.Header.Set("X-Amz-Date", testT0.Format(sigISO8601Basic))
		}, authCode: "AuthorizationHeaderMalformed"},
		{name: "no signature", req: sdkRequest{path: "/bucket/key"}, tamper: func(r *http.Request) {
			auth := r.Header.Get("Authorization")
			r.Header.Set("Authorization", auth[:strings.Index(auth, ", Signature=")])
		}, authCode: "AuthorizationHeaderMalformed"},
		{name: "bad signature", req: sdkRequest{path: "/bucket/key"}, tamper: func(r *http.Request) {
			r.Header.Set("Authorization", r.Header.Get("Authorization")+"00")
		}, authCode: "SignatureDoesNotMatch"},
		{name: "credential neither of s3 nor of iam", req: sdkRequest{path: "/bucket/key"}, tamper: func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/s3/", "/ec2/", 1))
		}, authCode: "AuthorizationHeaderMalformed"},
		{name: "host not signed", req: sdkRequest{path: "/bucket/key"}, tamper: func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "SignedHeaders=host;", "SignedHeaders=", 1))
		}, authCode: "AuthorizationHeaderMalformed"},
		{name: "sigv4a", req: sdkRequest{path: "/bucket/key"}, tamper: func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256", 1))
		}, authCode: "InvalidArgument"},
		{name: "garbage x-amz-content-sha256", req: sdkRequest{path: "/bucket/key", payload: "deadbeef"}, authCode: "InvalidArgument"},
		{name: "body but no x-amz-content-sha256", req: sdkRequest{method: http.MethodPut, path: "/bucket/key", body: body, payload: "none"}, authCode: "InvalidRequest"},
		{name: "header and presigned query", req: sdkRequest{path: "/bucket/key?X-Amz-Signature=00"}, authCode: "InvalidArgument"},
	} {
		req := srv.sign(t, c.req)
		if c.tamper != nil {
			c.tamper(req)
		}
		want := c.req.accessKey
		if want == "" {
			want = testAccessKey
		}
		srv.do(t, req).check(t, c.name, want, c.authCode, c.readCode)
	}
}

// TestAuthSigV4AWSExamples checks the worked examples of "Signature
// Calculations for the Authorization Header: Transferring Payload in a
// Single Chunk" and "Authenticating Requests: Using Query Parameters".
func TestAuthSigV4AWSExamples(t *testing.T) {
	at := time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
	scope := "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"
	for _, c := range []struct {
		name, method, target, body string
		header                     map[string]string
	}{
		{"GET Object", "GET", "/test.txt", "", map[string]string{
			"Range":                "bytes=0-9",
			"X-Amz-Content-Sha256": sigEmptySHA256,
			"X-Amz-Date":           "20130524T000000Z",
			"Authorization":        "AWS4-HMAC-SHA256 " + scope + ",SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
		}},
		{"PUT Object", "PUT", "/test%24file.text", "Welcome to Amazon S3.", map[string]string{
			"Date":                 "Fri, 24 May 2013 00:00:00 GMT",
			"X-Amz-Date":           "20130524T000000Z",
			"X-Amz-Storage-Class":  "REDUCED_REDUNDANCY",
			"X-Amz-Content-Sha256": "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
			"Authorization":        "AWS4-HMAC-SHA256 " + scope + ",SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
		}},
		{"GET Bucket Lifecycle", "GET", "/?lifecycle", "", map[string]string{
			"X-Amz-Content-Sha256": sigEmptySHA256,
			"X-Amz-Date":           "20130524T000000Z",
			"Authorization":        "AWS4-HMAC-SHA256 " + scope + ",SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
		}},
		{"Get Bucket (List Objects)", "GET", "/?max-keys=2&prefix=J", "", map[string]string{
			"X-Amz-Content-Sha256": sigEmptySHA256,
			"X-Amz-Date":           "20130524T000000Z",
			"Authorization":        "AWS4-HMAC-SHA256 " + scope + ",SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
		}},
		{"presigned GET Object", "GET", "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404", "", nil},
	} {
		newRequest := func() *http.Request {
			r := httptest.NewRequest(c.method, "http://examplebucket.s3.amazonaws.com"+c.target, strings.NewReader(c.body))
			for k, v := range c.header {
				r.Header.Set(k, v)
			}
			return r
		}
		r := newRequest()
		ak, err := Authenticate(context.Background(), r, testLookup, at.Add(time.Minute))
		if err != nil || ak != testAccessKey {
			t.Errorf("%s: Authenticate = %q, %v", c.name, ak, err)
			continue
		}
		if got, err := io.ReadAll(r.Body); err != nil || string(got) != c.body {
			t.Errorf("%s: body %q, %v", c.name, got, err)
		}
		// The same request on another host is refused.
		r = newRequest()
		r.Host = "otherbucket.s3.amazonaws.com"
		if _, err := Authenticate(context.Background(), r, testLookup, at.Add(time.Minute)); errCode(err) != "SignatureDoesNotMatch" {
			t.Errorf("%s on another host: %v", c.name, err)
		}
	}
	// The presigned URL is valid for 86400 seconds.
	r := httptest.NewRequest("GET", "http://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404", nil)
	if _, err := Authenticate(context.Background(), r, testLookup, at.Add(86401*time.Second)); !errors.Is(err, s3err.ExpiredToken) {
		t.Errorf("expired presigned example: %v", err)
	}
}

// presign returns a request for a URL presigned by the SDK, with the
// headers the signature covers.
func (s *authServer) presign(t *testing.T, method, target string, expires int, header map[string]string, region string, at time.Time, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := req.URL.Query()
	q.Set("X-Amz-Expires", strconv.Itoa(expires))
	req.URL.RawQuery = q.Encode()
	for k, v := range header {
		req.Header.Set(k, v)
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}
	signedURL, signedHeader, err := signer.PresignHTTP(context.Background(), creds, req, sigUnsignedPayload, "s3", region, at)
	if err != nil {
		t.Fatal(err)
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	out, err := http.NewRequest(method, signedURL, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range signedHeader {
		if k != "Host" {
			out.Header[k] = v
		}
	}
	return out
}

// TestAuthPresignSDK: URLs presigned by the SDK are accepted until they
// expire, and refused once changed.
func TestAuthPresignSDK(t *testing.T) {
	var now time.Time
	srv := newAuthServer(t, false, func() time.Time { return now })
	body := []byte("uploaded through a presigned URL")
	header := map[string]string{"Content-Type": "text/plain", "X-Amz-Meta-Owner": "alice"}
	for _, c := range []struct {
		name     string
		method   string
		target   string
		expires  int
		header   map[string]string
		body     []byte
		region   string
		nowAfter time.Duration
		tamper   func(*http.Request)
		authCode string
	}{
		{name: "get", method: "GET", target: "/bucket/dir/a%20b%2Bc.txt", expires: 3600},
		{name: "get with query", method: "GET", target: "/bucket/key?response-content-type=text%2Fplain&versionId=3", expires: 3600},
		{name: "get region default", method: "GET", target: "/bucket/key", expires: 3600, region: "default"},
		{name: "put with signed headers", method: "PUT", target: "/bucket/key", expires: 600, header: header, body: body},
		{name: "a week", method: "GET", target: "/bucket/key", expires: 604800, nowAfter: 604799 * time.Second},
		{name: "just expired", method: "GET", target: "/bucket/key", expires: 3600, nowAfter: 3601 * time.Second, authCode: "AccessDenied"},
		{name: "more than a week", method: "GET", target: "/bucket/key", expires: 604801, authCode: "AccessDenied"}, // as RGW (AWS: AuthorizationQueryParametersError)
		{name: "negative expiry", method: "GET", target: "/bucket/key", expires: -7, authCode: "AccessDenied"},
		{name: "not valid yet", method: "GET", target: "/bucket/key", expires: 3600, nowAfter: -time.Hour, authCode: "AccessDenied"},
		{name: "changed path", method: "GET", target: "/bucket/key", expires: 3600, tamper: func(r *http.Request) { r.URL.Path = "/bucket/other" }, authCode: "SignatureDoesNotMatch"},
		{name: "added query", method: "GET", target: "/bucket/key", expires: 3600, tamper: func(r *http.Request) { r.URL.RawQuery += "&acl" }, authCode: "SignatureDoesNotMatch"},
		{name: "longer expiry", method: "GET", target: "/bucket/key", expires: 3600, tamper: func(r *http.Request) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "X-Amz-Expires=3600", "X-Amz-Expires=7200", 1)
		}, authCode: "SignatureDoesNotMatch"},
		{name: "other method", method: "GET", target: "/bucket/key", expires: 3600, tamper: func(r *http.Request) { r.Method = "DELETE" }, authCode: "SignatureDoesNotMatch"},
		{name: "changed signed header", method: "PUT", target: "/bucket/key", expires: 600, header: header, body: body, tamper: func(r *http.Request) {
			r.Header.Set("Content-Type", "text/html")
		}, authCode: "SignatureDoesNotMatch"},
		{name: "missing signed header", method: "PUT", target: "/bucket/key", expires: 600, header: header, body: body, tamper: func(r *http.Request) {
			r.Header.Del("X-Amz-Meta-Owner")
		}, authCode: "SignatureDoesNotMatch"},
		{name: "added unsigned x-amz header", method: "PUT", target: "/bucket/key", expires: 600, body: body, tamper: func(r *http.Request) {
			r.Header.Set("X-Amz-Acl", "public-read")
		}, authCode: "AccessDenied"},
		{name: "wrong signature", method: "GET", target: "/bucket/key", expires: 3600, tamper: func(r *http.Request) {
			q := r.URL.Query()
			q.Set("X-Amz-Signature", strings.Repeat("0", 64))
			r.URL.RawQuery = q.Encode()
		}, authCode: "SignatureDoesNotMatch"},
		{name: "no algorithm", method: "GET", target: "/bucket/key", expires: 3600, tamper: func(r *http.Request) {
			q := r.URL.Query()
			q.Del("X-Amz-Algorithm")
			r.URL.RawQuery = q.Encode()
		}, authCode: "AuthorizationQueryParametersError"},
		{name: "with an Authorization header", method: "GET", target: "/bucket/key", expires: 3600, tamper: func(r *http.Request) {
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x")
		}, authCode: "InvalidArgument"},
	} {
		region := c.region
		if region == "" {
			region = "us-east-1"
		}
		req := srv.presign(t, c.method, c.target, c.expires, c.header, region, testT0, c.body)
		if c.tamper != nil {
			c.tamper(req)
		}
		now = testT0.Add(c.nowAfter)
		o := srv.do(t, req)
		o.check(t, c.name, testAccessKey, c.authCode, "")
		if c.authCode == "" && !bytes.Equal(o.body, c.body) && !(c.body == nil && len(o.body) == 0) {
			t.Errorf("%s: the server read %q, want %q", c.name, o.body, c.body)
		}
	}
}

// TestAuthSigV4S3Client runs the SDK's S3 client against the server: over
// HTTP it signs the payload's SHA-256, over HTTPS it streams it as
// STREAMING-UNSIGNED-PAYLOAD-TRAILER with a CRC32 trailer.
func TestAuthSigV4S3Client(t *testing.T) {
	ctx := context.Background()
	for _, useTLS := range []bool{false, true} {
		srv := newAuthServer(t, useTLS, time.Now)
		client := s3.New(s3.Options{
			Region:           "us-east-1",
			BaseEndpoint:     aws.String(srv.URL),
			UsePathStyle:     true,
			Credentials:      credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
			HTTPClient:       srv.Client(),
			RetryMaxAttempts: 1,
			// As config.LoadDefaultConfig sets it.
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		})
		what := fmt.Sprintf("TLS %v", useTLS)
		bucket, key := aws.String("bucket"), aws.String("dir/a b+c=d&e?f#g~h!ü$'()*,;:@%.txt")
		data := bytes.Repeat([]byte("0123456789abcdef"), 20000)

		_, err := client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: bucket, Key: key, Body: bytes.NewReader(data),
			ContentType: aws.String("text/plain"),
			Metadata:    map[string]string{"note": "two  spaces"},
		})
		o := srv.next(t)
		o.check(t, what+" PutObject", testAccessKey, "", "")
		if err != nil {
			t.Errorf("%s PutObject: %v", what, err)
		}
		if !bytes.Equal(o.body, data) {
			t.Errorf("%s PutObject: the server read %d bytes, want %d", what, len(o.body), len(data))
		}
		payload := o.header.Get("X-Amz-Content-Sha256")
		t.Logf("%s PutObject: x-amz-content-sha256 %s", what, payload)
		if useTLS {
			if payload != sigStreamingUnsignedTrailer {
				t.Errorf("%s PutObject: x-amz-content-sha256 %q, expected the unsigned trailer", what, payload)
			}
			sum := crc32.ChecksumIEEE(data)
			want := base64.StdEncoding.EncodeToString([]byte{byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
			if got := o.trailer.Get("X-Amz-Checksum-Crc32"); got != want {
				t.Errorf("%s PutObject: trailer x-amz-checksum-crc32 %q, want %q", what, got, want)
			}
			if o.contentLength != int64(len(data)) || o.header.Get("Content-Encoding") != "" {
				t.Errorf("%s PutObject: ContentLength %d, Content-Encoding %q", what, o.contentLength, o.header.Get("Content-Encoding"))
			}
		}

		if _, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: key, Range: aws.String("bytes=0-9")}); err != nil {
			t.Errorf("%s GetObject: %v", what, err)
		}
		srv.next(t).check(t, what+" GetObject", testAccessKey, "", "")

		if _, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: bucket, Prefix: aws.String("a b/ü+"), Delimiter: aws.String("/"), StartAfter: aws.String("x=y&z"), MaxKeys: aws.Int32(7),
		}); err != nil {
			t.Errorf("%s ListObjectsV2: %v", what, err)
		}
		srv.next(t).check(t, what+" ListObjectsV2", testAccessKey, "", "")

		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: key}); err != nil {
			t.Errorf("%s DeleteObject: %v", what, err)
		}
		srv.next(t).check(t, what+" DeleteObject", testAccessKey, "", "")

		presigner := s3.NewPresignClient(client)
		get, err := presigner.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: key}, s3.WithPresignExpires(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(get.Method, get.URL, nil)
		for k, v := range get.SignedHeader {
			if k != "Host" {
				req.Header[k] = v
			}
		}
		srv.do(t, req).check(t, what+" presigned GetObject", testAccessKey, "", "")

		put, err := presigner.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, ContentType: aws.String("text/plain")}, s3.WithPresignExpires(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		req, _ = http.NewRequest(put.Method, put.URL, bytes.NewReader(data))
		for k, v := range put.SignedHeader {
			if k != "Host" {
				req.Header[k] = v
			}
		}
		o = srv.do(t, req)
		o.check(t, what+" presigned PutObject", testAccessKey, "", "")
		if !bytes.Equal(o.body, data) {
			t.Errorf("%s presigned PutObject: the server read %d bytes, want %d", what, len(o.body), len(data))
		}

		bad := s3.New(s3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, "wrong", ""),
			HTTPClient:  srv.Client(), RetryMaxAttempts: 1,
		})
		if _, err := bad.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: key}); err == nil {
			t.Errorf("%s GetObject with a wrong secret succeeded", what)
		}
		srv.next(t).check(t, what+" wrong secret", testAccessKey, "SignatureDoesNotMatch", "")
	}
}

// The worked example of "Signature Calculations for the Authorization
// Header: Transferring Payload in Multiple Chunks (Chunked Upload)": PUT of
// 66560 bytes of 'a' in chunks of 65536, 1024 and 0 bytes.
const (
	awsChunkSeed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
	awsChunkSig1 = "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
	awsChunkSig2 = "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
	awsChunkSig3 = "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
	// awsTrailerSig signs the trailing headers first:1st, second:2nd and
	// third:3rd after the example's chunks ("Signature calculations for
	// trailing headers"; aws-c-auth's test suite).
	awsTrailerSig = "df5735bd9f3295cd9386572292562fefc93ba94e80a0a1ddcbd652c4e0a75e6c"
)

var awsChunkTime = time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)

func awsChunkBody() []byte {
	var b bytes.Buffer
	for _, c := range []struct {
		size int
		sig  string
	}{{65536, awsChunkSig1}, {1024, awsChunkSig2}, {0, awsChunkSig3}} {
		fmt.Fprintf(&b, "%x;chunk-signature=%s\r\n", c.size, c.sig)
		b.Write(bytes.Repeat([]byte("a"), c.size))
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

func awsChunkRequest(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPut, "http://s3.amazonaws.com/examplebucket/chunkObject.txt", bytes.NewReader(body))
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("Content-Length", "66824")
	r.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	r.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"+
		"SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,"+
		"Signature="+awsChunkSeed)
	return r
}

// TestChunkAWSExample decodes the documentation's chunked upload, then
// corrupted and truncated versions of it.
func TestChunkAWSExample(t *testing.T) {
	body := awsChunkBody()
	if len(body) != 66824 {
		t.Fatalf("the example body has %d bytes, the documentation says 66824", len(body))
	}
	want := bytes.Repeat([]byte("a"), 66560)
	for _, oneByte := range []bool{false, true} {
		r := awsChunkRequest(body)
		ak, err := Authenticate(context.Background(), r, testLookup, awsChunkTime.Add(5*time.Minute))
		if err != nil || ak != testAccessKey {
			t.Fatalf("Authenticate = %q, %v", ak, err)
		}
		if r.ContentLength != 66560 || r.Header.Get("Content-Length") != "66560" || r.Header.Get("Content-Encoding") != "" {
			t.Errorf("after Authenticate: ContentLength %d, Content-Length %q, Content-Encoding %q",
				r.ContentLength, r.Header.Get("Content-Length"), r.Header.Get("Content-Encoding"))
		}
		var src io.Reader = r.Body
		if oneByte {
			src = iotest.OneByteReader(src)
		}
		got, err := io.ReadAll(src)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("decoding (one byte at a time %v): %d bytes, %v", oneByte, len(got), err)
		}
		if err := r.Body.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}

	corrupt := func(at int, b byte) []byte {
		c := bytes.Clone(body)
		c[at] = b
		return c
	}
	chunk2 := 88 + 65536 + 2        // offset of the second chunk
	final := chunk2 + 86 + 1024 + 2 // of the final chunk
	for _, c := range []struct {
		name    string
		body    []byte
		code    string
		atLeast int // bytes the reader may return before failing
	}{
		{"first chunk data", corrupt(88+1000, 'b'), "SignatureDoesNotMatch", 0},
		{"second chunk data", corrupt(chunk2+86+10, 'b'), "SignatureDoesNotMatch", 65536},
		{"first chunk signature", corrupt(30, 'f'), "SignatureDoesNotMatch", 0},
		{"second chunk signature", corrupt(chunk2+30, 'f'), "SignatureDoesNotMatch", 65536},
		{"final chunk signature", corrupt(final+30, 'f'), "SignatureDoesNotMatch", 66560},
		{"signatures swapped", bytes.Replace(bytes.Replace(body, []byte(awsChunkSig1), []byte("X"), 1), []byte(awsChunkSig2), []byte(awsChunkSig1), 1), "", 0},
		{"chunk size", corrupt(0, '2'), "", 0},
		{"CRLF after data", corrupt(88+65536, '\n'), "InvalidRequest", 65536},
		{"truncated in the first chunk", body[:5000], "IncompleteBody", 0},
		{"truncated before a CRLF", body[:88+65536], "IncompleteBody", 0},
		{"truncated after the first chunk", body[:chunk2], "IncompleteBody", 65536},
		{"truncated in a chunk header", body[:chunk2+40], "IncompleteBody", 65536},
		{"truncated before the final chunk", body[:final], "IncompleteBody", 66560},
		{"truncated in the final chunk header", body[:final+50], "IncompleteBody", 66560},
		{"empty", nil, "IncompleteBody", 0},
	} {
		r := awsChunkRequest(c.body)
		if _, err := Authenticate(context.Background(), r, testLookup, awsChunkTime); err != nil {
			t.Errorf("%s: Authenticate: %v", c.name, err)
			continue
		}
		got, err := io.ReadAll(r.Body)
		if err == nil {
			t.Errorf("%s: decoding succeeded", c.name)
			continue
		}
		if c.code != "" && errCode(err) != c.code {
			t.Errorf("%s: error %v, want %s", c.name, err, c.code)
		}
		if c.code == "" && errCode(err) == "" {
			t.Errorf("%s: error %v is no API error", c.name, err)
		}
		if len(got) < c.atLeast || len(got) > 66560 {
			t.Errorf("%s: %d bytes before the error", c.name, len(got))
		}
		// The error stays.
		if _, again := r.Body.Read(make([]byte, 10)); again == nil {
			t.Errorf("%s: reading after the error succeeds", c.name)
		}
	}
	if _, err := io.ReadAll(mustAuth(t, awsChunkRequest(corrupt(88+5, 'b')))); !errors.Is(err, s3err.SignatureDoesNotMatch) {
		t.Errorf("a bad chunk: %v is not s3err.SignatureDoesNotMatch", err)
	}
	if _, err := io.ReadAll(mustAuth(t, awsChunkRequest(body[:100]))); !errors.Is(err, s3err.IncompleteBody) {
		t.Errorf("a truncated body: %v is not s3err.IncompleteBody", err)
	}

	// Only the last CRLF missing: every signature has been checked.
	if got, err := io.ReadAll(mustAuth(t, awsChunkRequest(body[:len(body)-2]))); err != nil || !bytes.Equal(got, want) {
		t.Errorf("without the last CRLF: %d bytes, %v", len(got), err)
	}
	// A changed header breaks the seed signature.
	r := awsChunkRequest(body)
	r.Header.Set("X-Amz-Storage-Class", "STANDARD")
	if _, err := Authenticate(context.Background(), r, testLookup, awsChunkTime); errCode(err) != "SignatureDoesNotMatch" {
		t.Errorf("changed storage class: %v", err)
	}
}

func mustAuth(t *testing.T, r *http.Request) io.Reader {
	t.Helper()
	if _, err := Authenticate(context.Background(), r, testLookup, awsChunkTime); err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return r.Body
}

// TestChunkSignatureChain checks the chain against the documentation's
// chunk and trailer signatures.
func TestChunkSignatureChain(t *testing.T) {
	chain := &sigChunkChain{
		key:      sigV4SigningKey(testSecretKey, "20130524", "us-east-1", "s3"),
		amzDate:  "20130524T000000Z",
		scope:    "20130524/us-east-1/s3/aws4_request",
		previous: awsChunkSeed,
	}
	for i, c := range []struct {
		size int
		want string
	}{{65536, awsChunkSig1}, {1024, awsChunkSig2}, {0, awsChunkSig3}} {
		sum := sha256.Sum256(bytes.Repeat([]byte("a"), c.size))
		if got := hex.EncodeToString(chain.chunk(sum[:])); got != c.want {
			t.Errorf("chunk %d: signature %s, want %s", i+1, got, c.want)
		}
	}
	if got := hex.EncodeToString(chain.trailer("first:1st\nsecond:2nd\nthird:3rd\n")); got != awsTrailerSig {
		t.Errorf("trailer signature %s, want %s", got, awsTrailerSig)
	}
	// The test's own trailer signer agrees with the documentation.
	if got := testTrailerSignature(testSecretKey, "us-east-1", awsChunkTime, awsChunkSig3, "first:1st\nsecond:2nd\nthird:3rd\n"); got != awsTrailerSig {
		t.Errorf("testTrailerSignature = %s, want %s", got, awsTrailerSig)
	}
}

// testTrailerSignature signs trailing headers the way "Signature
// calculations for trailing headers" says; the SDK's StreamSigner has no
// trailer signing.
func testTrailerSignature(secret, region string, at time.Time, previous, canonical string) string {
	mac := func(key []byte, data string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(data))
		return m.Sum(nil)
	}
	date := at.UTC().Format("20060102")
	key := mac(mac(mac(mac([]byte("AWS4"+secret), date), region), "s3"), "aws4_request")
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(mac(key, strings.Join([]string{
		"AWS4-HMAC-SHA256-TRAILER", at.UTC().Format("20060102T150405Z"), date + "/" + region + "/s3/aws4_request", previous, hex.EncodeToString(sum[:]),
	}, "\n")))
}

// chunkedUpload builds an aws-chunked upload the way a client does.
type chunkedUpload struct {
	chunks  [][]byte
	signed  bool
	trailer string // "name:value" of a trailing header, or ""
	// mangle changes the encoded body after signing.
	mangle  func([]byte) []byte
	chunked bool // send with Transfer-Encoding: chunked
	region  string
}

// encode returns the aws-chunked body; sign signs each chunk's data,
// trailerSig the trailer (both nil for unsigned).
func (u chunkedUpload) encode(sign func([]byte) string, trailerSig func(canonical, previous string) string) []byte {
	var b bytes.Buffer
	previous := ""
	for _, chunk := range append(u.chunks, nil) {
		fmt.Fprintf(&b, "%x", len(chunk))
		if sign != nil {
			previous = sign(chunk)
			b.WriteString(";chunk-signature=" + previous)
		}
		b.WriteString("\r\n")
		if len(chunk) > 0 {
			b.Write(chunk)
			b.WriteString("\r\n")
		}
	}
	if u.trailer != "" {
		b.WriteString(u.trailer + "\r\n")
		if trailerSig != nil {
			b.WriteString("x-amz-trailer-signature:" + trailerSig(u.trailer+"\n", previous) + "\r\n")
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// request signs the upload with the SDK's v4.Signer and its chunks with
// the SDK's v4.StreamSigner.
func (u chunkedUpload) request(t *testing.T, srv *authServer, at time.Time) *http.Request {
	t.Helper()
	region := u.region
	if region == "" {
		region = "us-east-1"
	}
	decoded := 0
	for _, c := range u.chunks {
		decoded += len(c)
	}
	payload := sigStreamingUnsignedTrailer
	switch {
	case u.signed && u.trailer != "":
		payload = sigStreamingPayloadTrailer
	case u.signed:
		payload = sigStreamingPayload
	}
	fake := func([]byte) string { return strings.Repeat("0", 64) }
	fakeTrailer := func(string, string) string { return strings.Repeat("0", 64) }
	if !u.signed {
		fake, fakeTrailer = nil, nil
	}
	length := len(u.encode(fake, fakeTrailer))

	req, err := http.NewRequest(http.MethodPut, srv.URL+"/bucket/chunked%20object", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(decoded))
	req.Header.Set("X-Amz-Content-Sha256", payload)
	req.Header.Set("X-Amz-Meta-Kind", "chunked")
	if name, _, ok := strings.Cut(u.trailer, ":"); ok {
		req.Header.Set("X-Amz-Trailer", name)
	}
	// A mangled body may change length: send it chunked, as the signed
	// Content-Length would not match.
	chunked := u.chunked || u.mangle != nil
	req.ContentLength = int64(length)
	if chunked {
		req.ContentLength = -1
	}
	sdkSign(t, req, payload, region, at, testAccessKey, testSecretKey)

	var body []byte
	if u.signed {
		seed, err := hex.DecodeString(signatureOf(t, req))
		if err != nil {
			t.Fatal(err)
		}
		creds := aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}
		stream := v4.NewStreamSigner(creds, "s3", region, seed)
		body = u.encode(func(chunk []byte) string {
			sig, err := stream.GetSignature(context.Background(), nil, chunk, at)
			if err != nil {
				t.Fatal(err)
			}
			return hex.EncodeToString(sig)
		}, func(canonical, previous string) string {
			return testTrailerSignature(testSecretKey, region, at, previous, canonical)
		})
	} else {
		body = u.encode(nil, nil)
	}
	if len(body) != length {
		t.Fatalf("encoded %d bytes, expected %d", len(body), length)
	}
	if u.mangle != nil {
		body = u.mangle(body)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	if chunked {
		req.TransferEncoding = []string{"chunked"}
	}
	return req
}

func testCRC32(data []byte) string {
	var b [4]byte
	sum := crc32.ChecksumIEEE(data)
	b[0], b[1], b[2], b[3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	return base64.StdEncoding.EncodeToString(b[:])
}

// TestChunkRoundTrip sends generated aws-chunked uploads, signed by the
// SDK, through the server.
func TestChunkRoundTrip(t *testing.T) {
	srv := newAuthServer(t, false, func() time.Time { return testT0 })
	rng := rand.New(rand.NewSource(1))
	random := func(n int) []byte {
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	chunks := [][]byte{random(65536), random(8192), random(100000), random(1), random(777)}
	var data []byte
	for _, c := range chunks {
		data = append(data, c...)
	}
	crc := "x-amz-checksum-crc32:" + testCRC32(data)
	flip := func(at int) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= 1; return b }
	}
	cut := func(n int) func([]byte) []byte {
		return func(b []byte) []byte { return b[:len(b)-n] }
	}
	firstData := len("10000;chunk-signature=") + 64 + 2
	for _, c := range []struct {
		name     string
		upload   chunkedUpload
		readCode string
		trailer  string // the x-amz-checksum-crc32 trailer expected in r.Trailer
	}{
		{name: "signed", upload: chunkedUpload{chunks: chunks, signed: true}},
		{name: "signed, region default", upload: chunkedUpload{chunks: chunks, signed: true, region: "default"}},
		{name: "signed, one chunk", upload: chunkedUpload{chunks: [][]byte{[]byte("hello")}, signed: true}},
		{name: "signed, empty", upload: chunkedUpload{signed: true}},
		{name: "signed, HTTP chunked", upload: chunkedUpload{chunks: chunks, signed: true, chunked: true}},
		{name: "signed with trailer", upload: chunkedUpload{chunks: chunks, signed: true, trailer: crc}, trailer: testCRC32(data)},
		{name: "unsigned with trailer", upload: chunkedUpload{chunks: chunks, trailer: crc}, trailer: testCRC32(data)},
		{name: "unsigned with trailer, HTTP chunked", upload: chunkedUpload{chunks: chunks, trailer: crc, chunked: true}, trailer: testCRC32(data)},
		{name: "signed, data flipped", upload: chunkedUpload{chunks: chunks, signed: true, mangle: flip(firstData + 70000)}, readCode: "SignatureDoesNotMatch"},
		{name: "signed, last chunk flipped", upload: chunkedUpload{chunks: chunks, signed: true, mangle: func(b []byte) []byte {
			// Byte 100 of the last chunk, of 777 = 0x309 bytes.
			b[bytes.Index(b, []byte("\r\n309;chunk-signature="))+2+86+100] ^= 1
			return b
		}}, readCode: "SignatureDoesNotMatch"},
		{name: "signed, truncated", upload: chunkedUpload{chunks: chunks, signed: true, mangle: cut(1000)}, readCode: "IncompleteBody"},
		{name: "signed with trailer, checksum changed", upload: chunkedUpload{chunks: chunks, signed: true, trailer: "x-amz-checksum-crc32:AAAAAA=="}, readCode: "BadDigest"},
		{name: "signed with trailer, trailer changed after signing", upload: chunkedUpload{chunks: chunks, signed: true, trailer: crc, mangle: func(b []byte) []byte {
			return bytes.Replace(b, []byte(crc), []byte("x-amz-checksum-crc32:AAAAAA=="), 1)
		}}, readCode: "SignatureDoesNotMatch"},
		{name: "signed with trailer, no trailer signature", upload: chunkedUpload{chunks: chunks, signed: true, trailer: crc, mangle: func(b []byte) []byte {
			i := bytes.Index(b, []byte("x-amz-trailer-signature:"))
			return append(b[:i:i], "\r\n"...)
		}}, readCode: "SignatureDoesNotMatch"},
		{name: "signed with trailer, truncated in the trailer", upload: chunkedUpload{chunks: chunks, signed: true, trailer: crc, mangle: func(b []byte) []byte {
			return b[:bytes.Index(b, []byte("x-amz-trailer-signature:"))]
		}}, readCode: "IncompleteBody"},
		{name: "unsigned with trailer, checksum wrong", upload: chunkedUpload{chunks: chunks, trailer: "x-amz-checksum-crc32:AAAAAA=="}, readCode: "BadDigest"},
		{name: "unsigned with trailer, trailer missing", upload: chunkedUpload{chunks: chunks, trailer: crc, mangle: func(b []byte) []byte {
			return b[:bytes.Index(b, []byte(crc))]
		}}, readCode: "IncompleteBody"},
		{name: "unsigned with trailer, truncated", upload: chunkedUpload{chunks: chunks, trailer: crc, mangle: cut(200)}, readCode: "IncompleteBody"},
	} {
		req := c.upload.request(t, srv, testT0)
		o := srv.do(t, req)
		o.check(t, c.name, testAccessKey, "", c.readCode)
		if c.readCode != "" {
			continue
		}
		var want []byte
		for _, chunk := range c.upload.chunks {
			want = append(want, chunk...)
		}
		if !bytes.Equal(o.body, want) {
			t.Errorf("%s: decoded %d bytes, want %d", c.name, len(o.body), len(want))
		}
		if o.contentLength != int64(len(want)) || o.header.Get("Content-Encoding") != "" {
			t.Errorf("%s: ContentLength %d, Content-Encoding %q", c.name, o.contentLength, o.header.Get("Content-Encoding"))
		}
		if got := o.trailer.Get("X-Amz-Checksum-Crc32"); got != c.trailer {
			t.Errorf("%s: trailer x-amz-checksum-crc32 %q, want %q", c.name, got, c.trailer)
		}
	}
}

// TestChunkTrailerChecksums checks every trailing checksum algorithm.
func TestChunkTrailerChecksums(t *testing.T) {
	check := []byte("123456789")
	// The CRC catalogue's check values of "123456789".
	for name, want := range map[string]string{
		"x-amz-checksum-crc32":     "cbf43926",
		"x-amz-checksum-crc32c":    "e3069283",
		"x-amz-checksum-crc64nvme": "ae8b14860a799888",
		"x-amz-checksum-sha1":      "f7c3bc1d808e04732adf679965ccc34ca7ae3441",
		"x-amz-checksum-sha256":    "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225",
	} {
		h := checksumAlgOfHeader(name).New()
		h.Write(check)
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("%s of 123456789 = %s, want %s", name, got, want)
		}
	}
	for _, a := range rgw.ChecksumAlgs {
		name := a.Header()
		for _, good := range []bool{true, false} {
			h := a.New()
			h.Write(check)
			sum := h.Sum(nil)
			if !good {
				sum[0] ^= 1
			}
			body := "9\r\n123456789\r\n0\r\n" + name + ":" + base64.StdEncoding.EncodeToString(sum) + "\r\n\r\n"
			r := httptest.NewRequest(http.MethodPut, "http://gateway/bucket/key", strings.NewReader(body))
			r.Header.Set("X-Amz-Content-Sha256", sigStreamingUnsignedTrailer)
			r.Header.Set("X-Amz-Decoded-Content-Length", "9")
			r.Header.Set("X-Amz-Trailer", name)
			if _, err := Authenticate(context.Background(), r, testLookup, testT0); err != nil {
				t.Fatalf("%s: anonymous Authenticate: %v", name, err)
			}
			got, err := io.ReadAll(r.Body)
			switch {
			case good && (err != nil || string(got) != "123456789"):
				t.Errorf("%s: %q, %v", name, got, err)
			case !good && !errors.Is(err, s3err.BadDigest):
				t.Errorf("%s wrong: %v", name, err)
			}
		}
	}
}

// TestAuthSigV2 checks Signature Version 2 against the examples of
// "Signing and authenticating REST requests", sent path-style.
func TestAuthSigV2(t *testing.T) {
	date := func(s string) time.Time {
		d, err := time.Parse(time.RFC1123Z, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	type example struct {
		name, method, target, sig string
		header                    http.Header
		now                       time.Time
		hostBucket                string
	}
	examples := []example{
		{name: "Object GET", method: "GET", target: "/johnsmith/photos/puppy.jpg", sig: "bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
			header: http.Header{"Date": {"Tue, 27 Mar 2007 19:36:42 +0000"}}, now: date("Tue, 27 Mar 2007 19:36:42 +0000")},
		{name: "Object PUT", method: "PUT", target: "/johnsmith/photos/puppy.jpg", sig: "MyyxeRY7whkBe+bq8fHCL/2kKUg=",
			header: http.Header{"Date": {"Tue, 27 Mar 2007 21:15:45 +0000"}, "Content-Type": {"image/jpeg"}, "Content-Length": {"94328"}},
			now:    date("Tue, 27 Mar 2007 21:15:45 +0000")},
		{name: "List", method: "GET", target: "/johnsmith/?prefix=photos&max-keys=50&marker=puppy", sig: "htDYFYduRNen8P9ZfE/s9SuKy0U=",
			header: http.Header{"Date": {"Tue, 27 Mar 2007 19:42:41 +0000"}, "User-Agent": {"Mozilla/5.0"}}, now: date("Tue, 27 Mar 2007 19:42:41 +0000")},
		{name: "Fetch", method: "GET", target: "/johnsmith/?acl", sig: "c2WLPFtWHVgbEmeEG93a4cG37dM=",
			header: http.Header{"Date": {"Tue, 27 Mar 2007 19:44:46 +0000"}}, now: date("Tue, 27 Mar 2007 19:44:46 +0000")},
		{name: "Delete", method: "DELETE", target: "/johnsmith/photos/puppy.jpg", sig: "lx3byBScXR6KzyMaifNkardMwNk=",
			header: http.Header{"Date": {"Tue, 27 Mar 2007 21:20:27 +0000"}, "X-Amz-Date": {"Tue, 27 Mar 2007 21:20:26 +0000"}, "User-Agent": {"dotnet"}},
			now:    date("Tue, 27 Mar 2007 21:20:26 +0000")},
		{name: "Upload", method: "PUT", target: "/static.johnsmith.net/db-backup.dat.gz", sig: "ilyl83RwaSoYIEdixDQcA4OnAnc=",
			header: http.Header{
				"Date": {"Tue, 27 Mar 2007 21:06:08 +0000"}, "X-Amz-Acl": {"public-read"}, "Content-Type": {"application/x-download"},
				"Content-Md5": {"4gJE4saaMU4BqNR0kLY+lw=="}, "X-Amz-Meta-Reviewedby": {"joe@johnsmith.net", "jane@johnsmith.net"},
				"X-Amz-Meta-Filechecksum": {"0x02661779"}, "X-Amz-Meta-Checksumalgorithm": {"crc32"},
				"Content-Disposition": {"attachment; filename=database.dat"}, "Content-Encoding": {"gzip"}, "Content-Length": {"5913339"},
			}, now: date("Tue, 27 Mar 2007 21:06:08 +0000")},
		{name: "ListAllMyBuckets", method: "GET", target: "/", sig: "qGdzdERIC03wnaRNKh6OqZehG9s=",
			header: http.Header{"Date": {"Wed, 28 Mar 2007 01:29:59 +0000"}}, now: date("Wed, 28 Mar 2007 01:29:59 +0000")},
		{name: "Unicode keys", method: "GET", target: "/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re", sig: "DNEZGsoieTZ92F3bUfSPQcbGmlM=",
			header: http.Header{"Date": {"Wed, 28 Mar 2007 01:49:49 +0000"}}, now: date("Wed, 28 Mar 2007 01:49:49 +0000")},
		{name: "virtual-hosted Object GET", method: "GET", target: "/photos/puppy.jpg", sig: "bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
			header: http.Header{"Date": {"Tue, 27 Mar 2007 19:36:42 +0000"}}, now: date("Tue, 27 Mar 2007 19:36:42 +0000"), hostBucket: "johnsmith"},
	}
	run := func(e example, mutate func(*http.Request), now time.Time) (string, error) {
		r := httptest.NewRequest(e.method, "http://s3.amazonaws.com"+e.target, nil)
		for k, v := range e.header {
			r.Header[k] = v
		}
		r.Header.Set("Authorization", "AWS "+testAccessKey+":"+e.sig)
		if mutate != nil {
			mutate(r)
		}
		return sigAuthenticate(context.Background(), r, testLookup, now, e.hostBucket)
	}
	for _, e := range examples {
		if ak, err := run(e, nil, e.now.Add(time.Minute)); err != nil || ak != testAccessKey {
			t.Errorf("%s: %q, %v", e.name, ak, err)
		}
		if _, err := run(e, nil, e.now.Add(time.Hour)); errCode(err) != "RequestTimeTooSkewed" {
			t.Errorf("%s an hour later: %v", e.name, err)
		}
		if _, err := run(e, func(r *http.Request) { r.URL.Path += "x"; r.URL.RawPath = "" }, e.now); errCode(err) != "SignatureDoesNotMatch" {
			t.Errorf("%s, changed path: %v", e.name, err)
		}
		if _, err := run(e, func(r *http.Request) { r.Header.Set("Content-Type", "text/evil") }, e.now); errCode(err) != "SignatureDoesNotMatch" {
			t.Errorf("%s, changed content type: %v", e.name, err)
		}
		if _, err := run(e, func(r *http.Request) { r.Header.Set("X-Amz-Meta-Evil", "1") }, e.now); errCode(err) != "SignatureDoesNotMatch" {
			t.Errorf("%s, added x-amz header: %v", e.name, err)
		}
		if _, err := run(e, func(r *http.Request) { r.Header.Set("Authorization", "AWS NOSUCHKEY:"+e.sig) }, e.now); errCode(err) != "InvalidAccessKeyId" {
			t.Errorf("%s, unknown key: %v", e.name, err)
		}
		if _, err := run(e, func(r *http.Request) { r.Header.Set("Authorization", "AWS OTHERKEY:"+e.sig) }, e.now); errCode(err) != "SignatureDoesNotMatch" {
			t.Errorf("%s, other key: %v", e.name, err)
		}
	}
	// The virtual-hosted example path-style names another resource.
	if _, err := Authenticate(context.Background(), func() *http.Request {
		r := httptest.NewRequest("GET", "http://johnsmith.s3.amazonaws.com/photos/puppy.jpg", nil)
		r.Header.Set("Date", "Tue, 27 Mar 2007 19:36:42 +0000")
		r.Header.Set("Authorization", "AWS "+testAccessKey+":bWq2s1WEIj+Ydj0vQ697zp+IXMU=")
		return r
	}(), testLookup, date("Tue, 27 Mar 2007 19:36:42 +0000")); errCode(err) != "SignatureDoesNotMatch" {
		t.Errorf("virtual-hosted request authenticated path-style: %v", err)
	}

	// Query string authentication: "GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg".
	const presigned = "/johnsmith/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D"
	query := func(target string, now time.Time) error {
		_, err := Authenticate(context.Background(), httptest.NewRequest("GET", "http://s3.amazonaws.com"+target, nil), testLookup, now)
		return err
	}
	if err := query(presigned, time.Unix(1175139620, 0)); err != nil {
		t.Errorf("query string example: %v", err)
	}
	if err := query(presigned, time.Unix(1175139621, 0)); !errors.Is(err, s3err.ExpiredToken) {
		t.Errorf("expired query string example: %v", err)
	}
	// an expiry at most a week ahead, as SigV4's X-Amz-Expires
	if err := query(presigned, time.Unix(1175139620-7*24*3600, 0)); err != nil {
		t.Errorf("query string expiring in a week: %v", err)
	}
	if err := query(presigned, time.Unix(1175139620-7*24*3600-1, 0)); errCode(err) != "AccessDenied" {
		t.Errorf("query string expiring in a week and a second: %v", err)
	}
	if err := query(strings.Replace(presigned, "1175139620", "1175139720", 1), time.Unix(1175139620, 0)); errCode(err) != "SignatureDoesNotMatch" {
		t.Errorf("query string example with a later expiry: %v", err)
	}
	if err := query(strings.Replace(presigned, "puppy", "kitty", 1), time.Unix(1175139620, 0)); errCode(err) != "SignatureDoesNotMatch" {
		t.Errorf("query string example for another object: %v", err)
	}
	if err := query("/johnsmith/photos/puppy.jpg?Signature=abc", time.Unix(1175139620, 0)); errCode(err) != "AccessDenied" {
		t.Errorf("query string without AWSAccessKeyId: %v", err)
	}
}

// TestAuthAnonymous: a request with no signature is anonymous; its
// payload is still checked when it says how.
func TestAuthAnonymous(t *testing.T) {
	r := httptest.NewRequest("GET", "http://gateway/bucket/key?prefix=x", nil)
	if ak, err := Authenticate(context.Background(), r, testLookup, testT0); ak != "" || err != nil {
		t.Errorf("anonymous GET: %q, %v", ak, err)
	}
	body := "anonymous upload"
	r = httptest.NewRequest("PUT", "http://gateway/bucket/key", strings.NewReader(body))
	if ak, err := Authenticate(context.Background(), r, testLookup, testT0); ak != "" || err != nil {
		t.Errorf("anonymous PUT: %q, %v", ak, err)
	}
	if got, err := io.ReadAll(r.Body); string(got) != body || err != nil {
		t.Errorf("anonymous PUT body: %q, %v", got, err)
	}
	r = httptest.NewRequest("PUT", "http://gateway/bucket/key", strings.NewReader(body))
	r.Header.Set("X-Amz-Content-Sha256", strings.Repeat("ab", 32))
	if _, err := Authenticate(context.Background(), r, testLookup, testT0); err != nil {
		t.Errorf("anonymous PUT with a hash: %v", err)
	}
	if _, err := io.ReadAll(r.Body); !errors.Is(err, s3err.XAmzContentSHA256Mismatch) {
		t.Errorf("anonymous PUT with a wrong hash: %v", err)
	}
	r = httptest.NewRequest("PUT", "http://gateway/bucket/key", strings.NewReader(body))
	r.Header.Set("X-Amz-Content-Sha256", sigStreamingPayload)
	r.Header.Set("X-Amz-Decoded-Content-Length", "3")
	if _, err := Authenticate(context.Background(), r, testLookup, testT0); errCode(err) != "AccessDenied" {
		t.Errorf("anonymous signed aws-chunked PUT: %v", err)
	}
	r = httptest.NewRequest("GET", "http://gateway/bucket/key", nil)
	r.Header.Set("Authorization", "Bearer xyz")
	if _, err := Authenticate(context.Background(), r, testLookup, testT0); errCode(err) != "InvalidArgument" {
		t.Errorf("Bearer authorization: %v", err)
	}
}

// TestAuthSigV4CanonicalQuery checks the canonical query string: encoded,
// then sorted by name and value.
func TestAuthSigV4CanonicalQuery(t *testing.T) {
	for _, c := range []struct {
		raw, want string
		presigned bool
	}{
		{"", "", false},
		{"uploads", "uploads=", false},
		{"b=2&a=hello%20world&a=%2F&uploads&c=a+b&d=%7e&e=%2a", "a=%2F&a=hello%20world&b=2&c=a%20b&d=~&e=%2A&uploads=", false},
		{"a%2Fb=1&a-b=2", "a%2Fb=1&a-b=2", false},
		{"x=%C3%BC&y=!'()*", "x=%C3%BC&y=%21%27%28%29%2A", false},
		{"X-Amz-Signature=abc&X-Amz-Date=1&a=b", "X-Amz-Date=1&a=b", true},
		{"X-Amz-Signature=abc&a=b", "X-Amz-Signature=abc&a=b", false},
	} {
		got, err := sigV4CanonicalQuery(c.raw, c.presigned)
		if err != nil || got != c.want {
			t.Errorf("sigV4CanonicalQuery(%q) = %q, %v, want %q", c.raw, got, err, c.want)
		}
	}
	if _, err := sigV4CanonicalQuery("a=%zz", false); errCode(err) != "InvalidArgument" {
		t.Errorf("bad escape: %v", err)
	}
	if got := sigTrimAll("  a   b \t c  "); got != "a b \t c" {
		t.Errorf("sigTrimAll = %q", got)
	}
}

func TestChunkDropAWSChunked(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"aws-chunked"}, ""},
		{[]string{"aws-chunked, deflate, gzip"}, "deflate, gzip"},
		{[]string{"gzip,aws-chunked"}, "gzip"},
		{[]string{"AWS-Chunked", "br"}, "br"},
		{[]string{"gzip"}, "gzip"},
	} {
		if got := sigDropAWSChunked(c.in); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}
