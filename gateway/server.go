package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/internal/sem"
)

// Server is the S3 HTTP front end over a Store. It holds no state of its
// own: any number of servers on one cluster serve the same buckets.
type Server struct {
	s    *rgw.Store
	opt  rgw.Options // s's
	now  func() time.Time
	m    *metrics
	logs logBatches // bucket logging's pending batches (bucketlog.go)
}

// NewServer returns the S3 handler over s.
func NewServer(s *rgw.Store) *Server {
	return &Server{s: s, opt: s.Options(), now: time.Now, m: newMetrics(s), logs: logBatches{since: map[string]time.Time{}}}
}

// Serve answers S3 requests on ln (TLS if certFile and keyFile are set)
// and runs the GC, dynamic reshard, lifecycle and bucket log commit
// workers, until ctx ends; then it stops accepting, lets
// requests in flight finish for up to 10 s, and returns.
func (srv *Server) Serve(ctx context.Context, ln net.Listener, certFile, keyFile string) error {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: nil, BaseContext: func(net.Listener) context.Context { return ctx }}
	gcCtx, stopGC := context.WithCancel(ctx)
	gcDone := make(chan struct{})
	reshardDone := make(chan struct{})
	lcDone := make(chan struct{})
	logDone := make(chan struct{})
	go func() { defer close(gcDone); srv.s.RunGC(gcCtx) }()
	go func() { defer close(reshardDone); srv.s.RunReshard(gcCtx) }()
	go func() { defer close(lcDone); srv.s.RunLC(gcCtx) }()
	go func() { defer close(logDone); srv.runLogCommits(gcCtx) }()
	defer func() { stopGC(); <-gcDone; <-reshardDone; <-lcDone; <-logDone }()
	errc := make(chan error, 1)
	go func() {
		if certFile != "" {
			errc <- hs.ServeTLS(ln, certFile, keyFile)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	<-errc
	return nil
}

// request is one S3 request in progress.
type request struct {
	w      http.ResponseWriter
	r      *http.Request
	id     string
	uid    string // authenticated user ("" anonymous)
	bucket string // the bucket's key in the store (qualifyBucket)
	// requested is the bucket's name as the request gave it
	requested string
	key       string
	vhost     bool // the bucket came from the Host header
	// aclRequired is set when an ACL let a user other than the bucket's
	// owner in (the access log's ACLRequired); errCode is the S3 error
	// the request was answered with
	aclRequired atomic.Bool // set by parallel key checks of a multi-object delete
	errCode     string
	b           *rgw.Bucket // the bucket as the request loaded it (requestBucket)
	q           url.Values
}

func newRequestID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ServeHTTP routes an S3 request.
func (srv *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &countingWriter{ResponseWriter: rw}
	rq := &request{w: w, r: r, id: newRequestID(), q: r.URL.Query()}
	defer srv.m.observe(rq, w, start) // also for a body cut short (http.ErrAbortHandler)
	w.Header().Set("x-amz-request-id", rq.id)
	w.Header().Set("Server", "Shoal")
	if err := srv.route(rq); err != nil {
		srv.writeError(rq, err)
	}
	srv.logRequest(rq, w, start)
}

func (srv *Server) writeError(rq *request, err error) {
	ae := apiError(err)
	rq.errCode = ae.Code
	if ae.Status >= 500 {
		srv.opt.Logger.Warn("s3 request failed", "method", rq.r.Method, "path", rq.r.URL.Path, "err", err)
	}
	h := rq.w.Header()
	if ae != s3err.NotModified { // a 304 carries the object's ETag and Last-Modified (RFC 9110 15.4.5)
		h.Del("ETag")
		h.Del("Last-Modified")
	}
	h.Del("Content-Length")
	h.Del("x-amz-request-charged") // a refused request is not charged
	if dm := (*rgw.DeleteMarkerError)(nil); errors.As(err, &dm) {
		h.Set("x-amz-delete-marker", "true")
		h.Set("x-amz-version-id", dm.VersionID)
	}
	if ae == s3err.NotModified || rq.r.Method == http.MethodHead {
		rq.w.WriteHeader(ae.Status)
		return
	}
	body, _ := xml.Marshal(errorBody{Code: ae.Code, Message: ae.Message, Resource: rq.r.URL.Path, RequestID: rq.id})
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(body)))
	rq.w.WriteHeader(ae.Status)
	io.WriteString(rq.w, xml.Header)
	rq.w.Write(body)
}

func writeXML(rq *request, status int, v any) error {
	body, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	h := rq.w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(body)))
	rq.w.WriteHeader(status)
	io.WriteString(rq.w, xml.Header)
	rq.w.Write(body)
	return nil
}

// split finds the bucket and key: virtual-host style when the Host is
// under rgw_dns_name, path style otherwise.
func (srv *Server) split(rq *request) error {
	path := rq.r.URL.Path
	host := rq.r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if d := srv.opt.DNSName; d != "" && strings.HasSuffix(host, "."+d) {
		rq.bucket = strings.TrimSuffix(host, "."+d)
		rq.key = strings.TrimPrefix(path, "/")
		rq.vhost = true
	} else {
		p := strings.TrimPrefix(path, "/")
		rq.bucket, rq.key, _ = strings.Cut(p, "/")
	}
	if rq.key != "" {
		if len(rq.key) > 1024 {
			return s3err.KeyTooLong
		}
		if !utf8.ValidString(rq.key) || strings.ContainsRune(rq.key, 0) {
			return s3err.InvalidArgument.With("object keys must be UTF-8 without NUL")
		}
	}
	return nil
}

func (srv *Server) route(rq *request) error {
	if err := srv.split(rq); err != nil {
		return err
	}
	if rq.r.Method == http.MethodOptions { // a CORS preflight: unsigned (cors.go)
		// A preflight of a presigned URL names its user's access key: the
		// bucket is in that user's tenant (it is not authenticated, and
		// is not used for anything else; a preflight reveals only what
		// the bucket's CORS rules let every origin see).
		access := rq.q.Get("AWSAccessKeyId")
		if cred := rq.q.Get("X-Amz-Credential"); cred != "" {
			access, _, _ = strings.Cut(cred, "/")
		}
		if access != "" {
			rq.uid, _, _ = srv.s.LookupKey(rq.r.Context(), access)
		}
		err := rq.qualifyBucket()
		rq.uid = ""
		if err != nil {
			return err
		}
		return srv.preflight(rq)
	}
	hostBucket := ""
	if rq.vhost {
		hostBucket = rq.bucket // SigV2 signs "/bucket/key" even for virtual-host requests
	}
	ak, err := sigAuthenticate(rq.r.Context(), rq.r, func(ctx context.Context, access string) (string, error) {
		uid, secret, err := srv.s.LookupKey(ctx, access)
		rq.uid = uid
		return secret, err
	}, srv.now(), hostBucket)
	if err != nil || ak == "" {
		rq.uid = "" // anonymous: only what ACLs grant AllUsers
	}
	if qerr := rq.qualifyBucket(); qerr != nil {
		return qerr
	}
	srv.corsHeaders(rq)
	if err != nil {
		return err
	}
	m := rq.r.Method
	if iamSigned(rq.r) {
		if rq.bucket != "" || m != http.MethodPost {
			return s3err.AuthorizationHeaderMalformed.With("a request signed for the iam service must be an IAM action: POST /")
		}
		srv.iamRequest(rq)
		return nil
	}
	if want := rq.r.Header.Get("x-amz-expected-bucket-owner"); want != "" && rq.bucket != "" {
		if b, err := srv.requestBucket(rq); err == nil && b.Owner != want {
			return s3err.AccessDenied.With("bucket %q is not owned by %q", rq.bucket, want)
		}
	}
	if rq.bucket == "" {
		if m == http.MethodGet && has(rq.q, "usage") && rq.uid != "" {
			return srv.userUsage(rq)
		}
		if m == http.MethodGet {
			return srv.listBuckets(rq)
		}
		return s3err.MethodNotAllowed
	}
	if rq.key == "" {
		return srv.routeBucket(rq)
	}
	return srv.routeObject(rq)
}

// requestBucket loads the request's bucket (through the store's cache)
// and keeps it for the access log (bucketlog.go).
func (srv *Server) requestBucket(rq *request) (*rgw.Bucket, error) {
	b, err := srv.s.LookupBucket(rq.r.Context(), rq.bucket)
	if err == nil {
		rq.b = b
	}
	return b, err
}

// payingBucket is requestBucket with Requester Pays' rule applied
// (checkRequestPayer): how a request about a bucket or its objects loads
// it. (A CORS preflight uses requestBucket alone: it is not charged.)
func (srv *Server) payingBucket(rq *request) (*rgw.Bucket, error) {
	b, err := srv.requestBucket(rq)
	if err != nil {
		return nil, err
	}
	return b, checkRequestPayer(rq, b)
}

// qualifyBucket turns the bucket the request names into its key in the
// store: "TENANT:BUCKET" is that tenant's, a bare name the user's own
// tenant's (rgw/tenant.go). It runs again when the user is known later
// (a POST form's).
func (rq *request) qualifyBucket() error {
	if rq.requested == "" {
		rq.requested = rq.bucket
	}
	if rq.requested == "" {
		return nil
	}
	key, ok := rgw.RequestBucketKey(rq.uid, rq.requested)
	if !ok {
		return s3err.InvalidBucketName.With("bucket name %q names a tenant that is not valid", rq.requested)
	}
	rq.bucket = key
	return nil
}

// bucketFor loads the request's bucket and checks that the caller may do
// the request: the bucket policy, or else perm on the bucket's ACL (""
// for the owner alone).
func (srv *Server) bucketFor(rq *request, perm string) (*rgw.Bucket, error) {
	b, err := srv.payingBucket(rq)
	if err != nil {
		return nil, err
	}
	if err := srv.authorize(rq, b, rq.key, "", nil, func() error { return bucketAllows(b, rq.uid, perm) }); err != nil {
		return nil, err
	}
	return b, nil
}

// bucketAllows checks that uid holds perm on b ("" for the owner alone).
func bucketAllows(b *rgw.Bucket, uid, perm string) error {
	if perm == "" {
		if uid != b.Owner {
			return s3err.AccessDenied.With("only the owner of bucket %q may do this", b.Name)
		}
		return nil
	}
	if !b.EffectiveACL(b.ACL).Allows(b.Owner, uid, perm) {
		return errDenied(uid, perm, fmt.Sprintf("bucket %q", b.Name))
	}
	return nil
}

func has(q url.Values, k string) bool { _, ok := q[k]; return ok }

// unsupportedBucketSubresources answer NotImplemented rather than being
// mistaken for a listing.
var unsupportedBucketSubresources = []string{"website", "replication",
	"notification", "accelerate", "inventory", "analytics",
	"metrics", "intelligent-tiering"}

func (srv *Server) routeBucket(rq *request) error {
	ctx := rq.r.Context()
	q := rq.q
	for _, sub := range unsupportedBucketSubresources {
		if has(q, sub) {
			return s3err.NotImplemented.With("bucket %s is not supported", sub)
		}
	}
	if has(q, "cors") {
		return srv.bucketCORS(rq)
	}
	if has(q, "object-lock") {
		return srv.bucketObjectLock(rq)
	}
	if has(q, "logging") {
		return srv.bucketLogging(rq)
	}
	if has(q, "ownershipControls") {
		return srv.bucketOwnership(rq)
	}
	if has(q, "encryption") {
		return srv.bucketEncryption(rq)
	}
	if has(q, "requestPayment") {
		return srv.bucketRequestPayment(rq)
	}
	if has(q, "lifecycle") {
		return srv.bucketLifecycle(rq)
	}
	if has(q, "policy") {
		return srv.bucketPolicy(rq)
	}
	if has(q, "publicAccessBlock") || has(q, "policyStatus") {
		return srv.bucketPublicAccess(rq)
	}
	switch rq.r.Method {
	case http.MethodPut:
		if has(q, "versioning") {
			return srv.putBucketVersioning(rq)
		}
		if has(q, "acl") {
			return srv.putBucketACL(rq)
		}
		if has(q, "tagging") {
			return srv.setBucketTags(rq, true)
		}
		return srv.createBucket(rq)
	case http.MethodHead:
		b, err := srv.bucketFor(rq, rgw.PermRead)
		if err != nil {
			return err
		}
		if q.Get("read-stats") == "true" { // RGW's extension: the index's totals
			if st, err := srv.s.Stats(ctx, b); err == nil {
				rq.w.Header().Set("X-RGW-Object-Count", strconv.FormatInt(st.Objects, 10))
				rq.w.Header().Set("X-RGW-Bytes-Used", strconv.FormatInt(st.Bytes, 10))
			}
			srv.setQuotaHeaders(rq, b)
		}
		rq.w.WriteHeader(http.StatusOK)
		return nil
	case http.MethodDelete:
		if has(q, "tagging") {
			return srv.setBucketTags(rq, false)
		}
		b, err := srv.bucketFor(rq, "")
		if err != nil {
			return err
		}
		if err := srv.s.DeleteBucket(ctx, b); err != nil {
			return err
		}
		rq.b = nil // gone, its access log batch with it: nothing to log into
		rq.w.WriteHeader(http.StatusNoContent)
		return nil
	case http.MethodPost:
		if has(q, "delete") {
			return srv.deleteObjects(rq)
		}
		return srv.postObject(rq)
	case http.MethodGet:
		perm := rgw.PermRead
		if has(q, "acl") {
			perm = rgw.PermReadACP
		}
		b, err := srv.bucketFor(rq, perm)
		if err != nil {
			return err
		}
		switch {
		case has(q, "location"):
			return writeXML(rq, http.StatusOK, locationConstraint{Xmlns: s3NS, Value: b.Location})
		case has(q, "versioning"):
			return writeXML(rq, http.StatusOK, versioningConfiguration{Xmlns: s3NS, Status: b.Versioning})
		case has(q, "acl"):
			return writeXML(rq, http.StatusOK, srv.policyXML(ctx, b.Owner, b.ACL))
		case has(q, "tagging"):
			if len(b.Tags) == 0 {
				return s3err.NoSuchTagSet.With("bucket %q has no tags", b.Name)
			}
			return writeTagging(rq, b.Tags)
		case has(q, "uploads"):
			return srv.listUploads(rq, b)
		case has(q, "versions"):
			return srv.listVersions(rq, b)
		}
		return srv.listObjects(rq, b)
	}
	return s3err.MethodNotAllowed
}

// setBucketTags replaces (put) or removes a bucket's tags (its owner).
func (srv *Server) setBucketTags(rq *request, put bool) error {
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	if !put {
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *rgw.Bucket) { nb.Tags = nil })
	}
	tags, err := bodyTags(rq.r, maxBucketTags)
	if err != nil {
		return err
	}
	return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *rgw.Bucket) { nb.Tags = tags })
}

// setBucketConfig applies set to bucket b's entry point (unless the
// bucket was deleted and re-created meanwhile: NoSuchBucket) and answers
// status with no body.
func (srv *Server) setBucketConfig(rq *request, b *rgw.Bucket, status int, set func(nb *rgw.Bucket)) error {
	if _, err := srv.s.UpdateBucket(rq.r.Context(), b.Name, func(nb *rgw.Bucket) error {
		if nb.ID != b.ID {
			return s3err.NoSuchBucket.With("bucket %q does not exist", b.Name)
		}
		set(nb)
		return nil
	}); err != nil {
		return err
	}
	srv.s.ForgetBucket(b.Name)
	rq.w.WriteHeader(status)
	return nil
}

// putBucketACL replaces a bucket's ACL (WRITE_ACP).
func (srv *Server) putBucketACL(rq *request) error {
	ctx := rq.r.Context()
	b, err := srv.bucketFor(rq, rgw.PermWriteACP)
	if err != nil {
		return err
	}
	if b.ACLsDisabled() {
		return s3err.AccessControlListNotSupported.With("bucket %q has BucketOwnerEnforced object ownership: ACLs are disabled", b.Name)
	}
	a, err := srv.aclFromRequest(ctx, rq.r, b.Owner, b)
	if err != nil {
		return err
	}
	return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *rgw.Bucket) { nb.ACL = a })
}

// openForACL opens key for a request about the object itself — its ACL
// (READ_ACP, WRITE_ACP) or tags (READ, WRITE) — that perm on the object
// allows; a missing key is answered as missingKey answers it. The caller
// closes the object.
func (srv *Server) openForACL(rq *request, b *rgw.Bucket, perm string) (*rgw.Object, error) {
	o, err := srv.s.OpenVersion(rq.r.Context(), b, rq.key, rq.q.Get("versionId"), false)
	if errors.Is(err, s3err.NoSuchKey) {
		return nil, srv.missingKey(rq, b, rq.key, err)
	}
	if err != nil {
		return nil, err
	}
	setVersionHeader(rq.w.Header(), o.VersionID())
	if err := srv.authorizeObject(rq, b, o, rq.key, "", perm); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// objectAllows is openForACL for a request that then changes the object's
// head itself (its ACL or tags): only the verdict.
func (srv *Server) objectAllows(rq *request, b *rgw.Bucket, perm string) error {
	o, err := srv.openForACL(rq, b, perm)
	if err == nil {
		o.Close()
	}
	return err
}

func (srv *Server) routeObject(rq *request) error {
	q := rq.q
	ctx := rq.r.Context()
	b, err := srv.payingBucket(rq)
	if err != nil {
		return err
	}
	// object reads, ACL and tagging requests check the object's ACL (RGW
	// checks WRITE on the object for its tags); the rest write to the
	// bucket
	switch {
	case has(q, "acl"), has(q, "tagging"), rq.r.Method == http.MethodGet, rq.r.Method == http.MethodHead:
	default:
		if err := srv.authorize(rq, b, rq.key, "", nil, func() error { return bucketAllows(b, rq.uid, rgw.PermWrite) }); err != nil {
			return err
		}
	}
	if has(q, "torrent") && rq.r.Method == http.MethodGet {
		return s3err.NoSuchKey.With("no torrent is kept for object %q", rq.key) // as RGW without torrents
	}
	if has(q, "retention") {
		return srv.objectRetention(rq, b)
	}
	if has(q, "legal-hold") {
		return srv.objectLegalHold(rq, b)
	}
	for _, sub := range []string{"torrent", "restore", "select"} {
		if has(q, sub) {
			return s3err.NotImplemented.With("object %s is not supported", sub)
		}
	}
	if has(q, "attributes") && rq.r.Method != http.MethodGet { // GetObjectAttributes only: never a write
		return s3err.MethodNotAllowed
	}
	switch rq.r.Method {
	case http.MethodPut:
		if has(q, "tagging") {
			if err := srv.objectAllows(rq, b, rgw.PermWrite); err != nil {
				return err
			}
			tags, err := bodyTags(rq.r, maxObjectTags)
			if err != nil {
				return err
			}
			if err := srv.s.UpdateVersion(ctx, b, rq.key, q.Get("versionId"), func(h *rgw.HeadInfo) error { h.Tags = tags; return nil }); err != nil {
				return err
			}
			rq.w.WriteHeader(http.StatusOK)
			return nil
		}
		if has(q, "acl") {
			if err := srv.objectAllows(rq, b, rgw.PermWriteACP); err != nil {
				return err
			}
			if b.ACLsDisabled() {
				return s3err.AccessControlListNotSupported.With("bucket %q has BucketOwnerEnforced object ownership: ACLs are disabled", b.Name)
			}
			if err := srv.s.UpdateVersion(ctx, b, rq.key, q.Get("versionId"), func(h *rgw.HeadInfo) (err error) {
				h.ACL, err = srv.aclFromRequest(ctx, rq.r, h.Owner, b)
				return err
			}); err != nil {
				return err
			}
			rq.w.WriteHeader(http.StatusOK)
			return nil
		}
		if has(q, "uploadId") {
			if rq.r.Header.Get("x-amz-copy-source") != "" {
				return srv.uploadPartCopy(rq, b)
			}
			return srv.uploadPart(rq, b)
		}
		if rq.r.Header.Get("x-amz-copy-source") != "" {
			return srv.copyObject(rq, b)
		}
		return srv.putObject(rq, b)
	case http.MethodGet:
		if has(q, "tagging") {
			o, err := srv.openForACL(rq, b, rgw.PermRead)
			if err != nil {
				return err
			}
			defer o.Close()
			return writeTagging(rq, o.Tags())
		}
		if has(q, "acl") {
			o, err := srv.openForACL(rq, b, rgw.PermReadACP)
			if err != nil {
				return err
			}
			defer o.Close()
			owner, acl := b.ObjectOwnerACL(o)
			return writeXML(rq, http.StatusOK, srv.policyXML(ctx, owner, acl))
		}
		if has(q, "uploadId") {
			if err := srv.authorize(rq, b, rq.key, "", nil, func() error { return bucketAllows(b, rq.uid, rgw.PermWrite) }); err != nil {
				return err
			}
			return srv.listParts(rq, b)
		}
		if has(q, "attributes") {
			return srv.getObjectAttributes(rq, b)
		}
		return srv.getObject(rq, b, false)
	case http.MethodHead:
		return srv.getObject(rq, b, true)
	case http.MethodDelete:
		if has(q, "tagging") {
			if err := srv.objectAllows(rq, b, rgw.PermWrite); err != nil {
				return err
			}
			if err := srv.s.UpdateVersion(ctx, b, rq.key, q.Get("versionId"), func(h *rgw.HeadInfo) error { h.Tags = nil; return nil }); err != nil {
				return err
			}
			rq.w.WriteHeader(http.StatusNoContent)
			return nil
		}
		if has(q, "uploadId") {
			if _, err := srv.s.GetUpload(rq.r.Context(), b, rq.key, q.Get("uploadId")); err != nil {
				return err
			}
			if err := srv.s.AbortUpload(rq.r.Context(), b, rq.key, q.Get("uploadId")); err != nil {
				return err
			}
			rq.w.WriteHeader(http.StatusNoContent)
			return nil
		}
		cond, err := deleteCondFrom(rq.r.Header)
		if err != nil {
			return err
		}
		cond.BypassGovernance = bypassGovernance(rq.r.Header)
		res, err := srv.s.DeleteVersion(rq.r.Context(), b, rq.key, q.Get("versionId"), rq.uid, cond)
		if err != nil {
			return err
		}
		if res.VersionID != "" {
			rq.w.Header().Set("x-amz-version-id", res.VersionID)
		}
		if res.DeleteMarker {
			rq.w.Header().Set("x-amz-delete-marker", "true")
		}
		rq.w.WriteHeader(http.StatusNoContent)
		return nil
	case http.MethodPost:
		if has(q, "uploads") {
			return srv.createUpload(rq, b)
		}
		if has(q, "uploadId") {
			return srv.completeUpload(rq, b)
		}
	}
	return s3err.MethodNotAllowed
}

// ---- buckets ----

// maxListBuckets is the most buckets one ListBuckets page holds, and
// max-buckets' upper bound (S3's ListBuckets).
const maxListBuckets = 10000

// listBuckets lists the user's buckets in name order, a page of at most
// max-buckets (1–10000, default all) that start with prefix, after the
// continuation-token — the last name of the previous page, base64url —
// with the token for the next page when more remain (S3's ListBuckets
// pagination).
func (srv *Server) listBuckets(rq *request) error {
	ctx := rq.r.Context()
	q := rq.r.URL.Query()
	limit := maxListBuckets
	if v := q.Get("max-buckets"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListBuckets {
			return s3err.InvalidArgument.With("max-buckets must be an integer from 1 to %d", maxListBuckets)
		}
		limit = n
	}
	after := ""
	if v := q.Get("continuation-token"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			return s3err.InvalidArgument.With("the continuation token is not one this gateway gave")
		}
		after = string(b)
	}
	prefix := q.Get("prefix")
	res := listAllMyBucketsResult{Xmlns: s3NS, Owner: owner{ID: rq.uid, DisplayName: srv.s.DisplayName(ctx, rq.uid)}, Buckets: []bucketEntry{}, Prefix: prefix}
	if rq.uid == "" { // anonymous: owns nothing (as RGW)
		return writeXML(rq, http.StatusOK, res)
	}
	if evalIdentity(srv.identityPolicies(rq), rq, "s3:ListAllMyBuckets", "arn:aws:s3::"+rgw.UserTenant(rq.uid)+":*", nil) == decDeny {
		return s3err.AccessDenied.With("a policy of user %q denies s3:ListAllMyBuckets", rq.uid)
	}
	names, err := srv.s.UserBuckets(ctx, rq.uid)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, key := range names { // all in the user's tenant: sorted as their S3 names
		_, n := rgw.SplitBucketKey(key)
		if n <= after || !strings.HasPrefix(n, prefix) {
			continue
		}
		if len(res.Buckets) == limit {
			res.ContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(res.Buckets[limit-1].Name))
			break
		}
		b, err := srv.s.GetBucket(ctx, key)
		if err != nil {
			continue // being deleted
		}
		res.Buckets = append(res.Buckets, bucketEntry{Name: n, CreationDate: isoTime(b.Created)})
	}
	return writeXML(rq, http.StatusOK, res)
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (srv *Server) createBucket(rq *request) error {
	ctx := rq.r.Context()
	if rq.uid == "" {
		return s3err.AccessDenied.With("anonymous requests may not create buckets")
	}
	placement, location := "", ""
	body, err := readBody(rq.r, 64<<10)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var c createBucketConfiguration
		if err := xml.Unmarshal(body, &c); err != nil {
			return s3err.MalformedXML
		}
		// RGW's form: "ZONEGROUP:PLACEMENT-TARGET"; a bare region is fine
		location = c.LocationConstraint
		if region, target, ok := strings.Cut(c.LocationConstraint, ":"); ok {
			location, placement = region, target
		}
	}
	acl, err := srv.requestACL(ctx, rq.r.Header, rq.uid, nil)
	if err != nil {
		return err
	}
	ownership := rq.r.Header.Get(objectOwnershipHeader)
	if ownership != "" {
		if err := validOwnership(ownership); err != nil {
			return err
		}
		if ownership == rgw.OwnershipBucketOwnerEnforced && acl.GrantsOthers(rq.uid) {
			return s3err.InvalidBucketAclWithObjectOwnership.With("a bucket created with BucketOwnerEnforced object ownership takes no ACL but private")
		}
	}
	_, err = srv.s.CreateBucket(ctx, rq.bucket, rq.uid, placement, location, acl, ownership)
	if err == nil && strings.EqualFold(rq.r.Header.Get("x-amz-bucket-object-lock-enabled"), "true") {
		_, err = srv.s.EnableObjectLock(ctx, rq.bucket)
	}
	if errors.Is(err, s3err.BucketAlreadyOwnedByYou) {
		// as RGW (and S3 in us-east-1): creating one's own bucket again
		// succeeds and changes nothing — unless it asks for another ACL
		err = nil
		if old, gerr := srv.s.GetBucket(ctx, rq.bucket); gerr != nil || !slices.Equal(old.ACL.WithOwner(rq.uid), acl.WithOwner(rq.uid)) {
			err = s3err.BucketAlreadyExists.With("bucket %q exists with another ACL", rq.bucket)
		}
	}
	if err != nil {
		return err
	}
	_, name := rgw.SplitBucketKey(rq.bucket)
	rq.w.Header().Set("Location", "/"+name)
	rq.w.WriteHeader(http.StatusOK)
	return nil
}

// ---- objects ----

// storedHeaders are the request headers kept with an object and returned
// by GET and HEAD.
var storedHeaders = []string{"Content-Type", "Content-Encoding", "Content-Disposition", "Content-Language", "Cache-Control", "Expires"}

// maxMetaSize is S3's limit on user metadata (names and values), 2 KiB.
const maxMetaSize = 2 << 10

func objectAttrs(r *http.Request) (map[string]string, map[string]string, error) {
	hdr := map[string]string{}
	for _, h := range storedHeaders {
		v := r.Header.Get(h)
		if h == "Content-Encoding" { // aws-chunked describes the request, not the object
			v = sigDropAWSChunked(r.Header.Values(h))
		}
		if v != "" {
			hdr[h] = v
		}
	}
	if hdr["Content-Type"] == "" {
		hdr["Content-Type"] = "binary/octet-stream"
	}
	meta := map[string]string{}
	n := 0
	for k, vs := range r.Header {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-amz-meta-"); ok {
			v := strings.Join(vs, ",")
			meta[name] = v
			n += len(name) + len(v)
		}
	}
	if n > maxMetaSize {
		return nil, nil, s3err.MetadataTooLarge
	}
	return hdr, meta, nil
}

var storageClasses = map[string]bool{"STANDARD": true, "REDUCED_REDUNDANCY": true, "STANDARD_IA": true, "ONEZONE_IA": true,
	"INTELLIGENT_TIERING": true, "GLACIER": true, "DEEP_ARCHIVE": true, "GLACIER_IR": true}

func storageClass(r *http.Request) (string, error) {
	sc := r.Header.Get("x-amz-storage-class")
	if sc == "" {
		return "STANDARD", nil
	}
	if !storageClasses[sc] {
		return "", s3err.InvalidStorageClass
	}
	return sc, nil
}

// bodySize returns the request's payload length (the decoded length of
// an aws-chunked body).
func bodySize(r *http.Request) (int64, error) {
	if r.ContentLength < 0 {
		return 0, s3err.MissingContentLength
	}
	return r.ContentLength, nil
}

// streamSize is bodySize for a PUT of a whole object, which may also come
// with Transfer-Encoding: chunked and no length (-1: read to the end).
func streamSize(r *http.Request) (int64, error) {
	if r.ContentLength < 0 && slices.Contains(r.TransferEncoding, "chunked") {
		return -1, nil
	}
	return bodySize(r)
}

func contentMD5(r *http.Request) ([]byte, error) {
	if len(r.Header.Values("Content-MD5")) == 0 {
		return nil, nil
	}
	v := r.Header.Get("Content-MD5") // present but empty is invalid
	d, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(d) != md5.Size {
		return nil, s3err.InvalidDigest
	}
	return d, nil
}

func (srv *Server) putObject(rq *request, b *rgw.Bucket) error {
	r := rq.r
	size, err := streamSize(r)
	if err != nil {
		return err
	}
	if size > rgw.MaxObjectSize {
		return s3err.EntityTooLarge
	}
	sum, err := contentMD5(r)
	if err != nil {
		return err
	}
	hdr, meta, err := objectAttrs(r)
	if err != nil {
		return err
	}
	sc, err := storageClass(r)
	if err != nil {
		return err
	}
	owner, acl, err := srv.objectOwnerACL(r.Context(), r.Header, rq.uid, b)
	if err != nil {
		return err
	}
	tags, err := headerTags(r.Header)
	if err != nil {
		return err
	}
	ck, err := checksumRequest(r)
	if err != nil {
		return err
	}
	lock, hold, err := lockFromHeaders(r.Header, b)
	if err != nil {
		return err
	}
	sse, err := srv.sseForWrite(rq, b)
	if err != nil {
		return err
	}
	res, err := srv.s.PutObject(r.Context(), b, rq.key, rgw.PutInput{Body: r.Body, Size: size, MD5: sum, Headers: hdr, Meta: meta, Class: sc, Owner: owner, ACL: acl, Tags: tags,
		Cond: rgw.WriteCond{IfMatch: r.Header.Get("If-Match"), IfNoneMatch: r.Header.Get("If-None-Match")}, Checksum: ck, Lock: lock, LegalHold: hold, SSE: sse})
	if err != nil {
		return err
	}
	setSSEHeaders(rq.w.Header(), res.SSE)
	rq.w.Header().Set("ETag", res.ETag)
	setWrittenVersionHeader(rq.w.Header(), res.VersionID)
	setChecksumHeaders(res.Checksum, rq.w.Header())
	rq.w.WriteHeader(http.StatusOK)
	return nil
}

// setVersionHeader answers the version a read found (none in a bucket
// that never had versioning).
func setVersionHeader(h http.Header, vid string) {
	if vid != "" {
		h.Set("x-amz-version-id", vid)
	}
}

// setWrittenVersionHeader answers the version a write made: none in a
// bucket that never had versioning, nor for a null version (a Suspended
// bucket's), as RGW answers.
func setWrittenVersionHeader(h http.Header, vid string) {
	if vid != rgw.NullVersion {
		setVersionHeader(h, vid)
	}
}

// checkConditions applies If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since (RFC 9110 section 13.2.2 order, as S3: a true
// If-Match overrides a false If-Unmodified-Since, a false If-None-Match
// overrides a true If-Modified-Since). prefix is "" or
// "x-amz-copy-source-" for CopyObject's source conditions.
func checkConditions(h http.Header, prefix string, etag string, mtime time.Time, read bool) error {
	mtime = mtime.Truncate(time.Second)
	get := func(n string) string { return h.Get(prefix + n) }
	if im := get("If-Match"); im != "" {
		if !rgw.ETagMatches(im, etag) {
			return s3err.PreconditionFailed
		}
	} else if ius := get("If-Unmodified-Since"); ius != "" {
		if t, err := http.ParseTime(ius); err == nil && mtime.After(t) {
			return s3err.PreconditionFailed
		}
	}
	notModified := s3err.NotModified
	if !read {
		notModified = s3err.PreconditionFailed
	}
	if inm := get("If-None-Match"); inm != "" {
		if rgw.ETagMatches(inm, etag) {
			return notModified
		}
	} else if ims := get("If-Modified-Since"); ims != "" {
		if t, err := http.ParseTime(ims); err == nil && !mtime.After(t) {
			return notModified
		}
	}
	return nil
}

// copySourceRange parses x-amz-copy-source-range: exactly
// "bytes=first-last", zero-based and inclusive, inside the source of size
// bytes (unlike a GET's Range: no suffix or open end, no clamping);
// InvalidRange otherwise.
func copySourceRange(v string, size int64) (off, n int64, err error) {
	spec, ok := strings.CutPrefix(v, "bytes=")
	a, b, ok2 := strings.Cut(spec, "-")
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil || first < 0 || last < first || last >= size {
		return 0, 0, s3err.InvalidRange.With("The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy, within the source object")
	}
	return first, last - first + 1, nil
}

// parseRange parses a single "bytes=" range against size; ok false means
// serve the whole object (no or an unsupported multi-range header).
func parseRange(v string, size int64) (off, n int64, ok bool, err error) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if v == "" || !found || strings.Contains(spec, ",") {
		return 0, size, false, nil
	}
	a, bs, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, size, false, nil
	}
	if a == "" { // suffix: the last bs bytes
		k, perr := strconv.ParseInt(bs, 10, 64)
		if perr != nil {
			return 0, size, false, nil
		}
		if k == 0 {
			return 0, 0, false, s3err.InvalidRange
		}
		k = min(k, size)
		return size - k, k, true, nil
	}
	start, perr := strconv.ParseInt(a, 10, 64)
	if perr != nil || start < 0 {
		return 0, size, false, nil
	}
	end := size - 1
	if bs != "" {
		e, perr := strconv.ParseInt(bs, 10, 64)
		if perr != nil || e < start {
			return 0, size, false, nil
		}
		end = min(e, size-1)
	}
	if start >= size {
		return 0, 0, false, s3err.InvalidRange
	}
	return start, end - start + 1, true, nil
}

func setObjectHeaders(h http.Header, o *rgw.Object) {
	h.Set("ETag", o.ETag())
	h.Set("Last-Modified", o.Mtime().UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	for k, v := range o.Headers() {
		h.Set(k, v)
	}
	for k, v := range o.Meta() {
		h["X-Amz-Meta-"+k] = []string{v}
	}
	if sc := o.StorageClass(); sc != "" && sc != "STANDARD" {
		h.Set("x-amz-storage-class", sc)
	}
	if n := o.PartsCount(); n > 0 {
		h.Set("x-amz-mp-parts-count", strconv.Itoa(n))
	}
	setVersionHeader(h, o.VersionID())
	setLockHeaders(h, o.Info)
	setSSEHeaders(h, o.Encryption())
}

var responseOverrides = map[string]string{"response-content-type": "Content-Type", "response-content-language": "Content-Language",
	"response-expires": "Expires", "response-cache-control": "Cache-Control", "response-content-disposition": "Content-Disposition",
	"response-content-encoding": "Content-Encoding"}

// openToRead opens the request's key (and, if withData, its head's data)
// for a read the request's own action and READ on the object allow: a
// missing key is answered as missingKey answers it. The caller closes
// the object.
func (srv *Server) openToRead(rq *request, b *rgw.Bucket, withData bool) (*rgw.Object, error) {
	o, err := srv.s.OpenVersion(rq.r.Context(), b, rq.key, rq.q.Get("versionId"), withData)
	if errors.Is(err, s3err.NoSuchKey) {
		if dm := (*rgw.DeleteMarkerError)(nil); !errors.As(err, &dm) {
			rq.w.Header().Set("x-amz-delete-marker", "false") // as RGW answers
		}
		return nil, srv.missingKey(rq, b, rq.key, err)
	}
	if err != nil {
		return nil, err
	}
	if err := srv.authorizeObject(rq, b, o, rq.key, "", rgw.PermRead); err != nil {
		o.Close()
		return nil, err
	}
	if err := srv.decrypt(rq, o, ""); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func (srv *Server) getObject(rq *request, b *rgw.Bucket, headOnly bool) error {
	r := rq.r
	ctx := r.Context()
	part := 0
	if has(rq.q, "partNumber") {
		var err error
		if part, err = strconv.Atoi(rq.q.Get("partNumber")); err != nil || part < 1 || part > rgw.MaxParts {
			return s3err.InvalidArgument.With("partNumber must be an integer from 1 to %d", rgw.MaxParts)
		}
		if r.Header.Get("Range") != "" {
			return s3err.InvalidRequest.With("Cannot specify both Range header and partNumber query parameter")
		}
	}
	o, err := srv.openToRead(rq, b, !headOnly && r.Header.Get("Range") == "" && part == 0)
	if err != nil {
		return err
	}
	defer o.Close()
	setTagCount(rq.w.Header(), o.Tags())
	if err := checkConditions(r.Header, "", o.ETag(), o.Mtime(), true); err != nil {
		if err == s3err.NotModified {
			h := rq.w.Header()
			h.Set("ETag", o.ETag())
			h.Set("Last-Modified", o.Mtime().UTC().Format(http.TimeFormat))
		}
		return err
	}
	off, n, ranged, err := parseRange(r.Header.Get("Range"), o.Size())
	if err != nil {
		rq.w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", o.Size()))
		return err
	}
	if part > 0 {
		var ok bool
		if off, n, ok = o.PartRange(part); !ok {
			return s3err.InvalidPart.With("the object has no part %d", part)
		}
		ranged = o.PartsCount() > 0 // a part of a multipart upload is a 206 with its Content-Range, as S3
	}
	h := rq.w.Header()
	setObjectHeaders(h, o)
	if strings.EqualFold(r.Header.Get("x-amz-checksum-mode"), "ENABLED") && r.Header.Get("Range") == "" {
		setChecksumHeaders(o.Checksum(part), h)
	}
	for q, hn := range responseOverrides {
		if v := rq.q.Get(q); v != "" {
			h.Set(hn, v)
		}
	}
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	status := http.StatusOK
	if ranged {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, o.Size()))
		status = http.StatusPartialContent
	}
	rq.w.WriteHeader(status)
	if headOnly || n == 0 {
		return nil
	}
	if err := o.WriteRange(ctx, rq.w, off, n); err != nil {
		// headers are out: the only honest signal left is a cut connection
		srv.opt.Logger.Warn("get failed mid-body; dropping the connection", "bucket", b.Name, "key", rq.key, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// copySource parses x-amz-copy-source ("/bucket/key" or "bucket/key",
// URL-encoded, optionally "?versionId=ID").
func copySource(v string) (bucket, key, versionID string, err error) {
	v, ver, _ := strings.Cut(v, "?")
	if ver != "" {
		q, qerr := url.ParseQuery(ver)
		if qerr != nil || len(q) != 1 || q.Get("versionId") == "" {
			return "", "", "", s3err.InvalidArgument.With("x-amz-copy-source: only ?versionId=ID may follow the key")
		}
		versionID = q.Get("versionId")
	}
	s, uerr := url.PathUnescape(strings.TrimPrefix(v, "/"))
	if uerr != nil {
		return "", "", "", s3err.InvalidArgument.With("x-amz-copy-source is not URL-encoded")
	}
	bucket, key, ok := strings.Cut(s, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", "", s3err.InvalidArgument.With("x-amz-copy-source must be BUCKET/KEY")
	}
	return bucket, key, versionID, nil
}

// openCopySource opens the source object of a copy, checking the caller
// may read it and the x-amz-copy-source-if-* conditions.
func (srv *Server) openCopySource(rq *request) (*rgw.Bucket, *rgw.Object, error) {
	sb, sk, sv, err := copySource(rq.r.Header.Get("x-amz-copy-source"))
	if err != nil {
		return nil, nil, err
	}
	sbk, ok := rgw.RequestBucketKey(rq.uid, sb)
	if !ok {
		return nil, nil, s3err.InvalidBucketName.With("copy source bucket %q names a tenant that is not valid", sb)
	}
	src, err := srv.s.LookupBucket(rq.r.Context(), sbk)
	if err != nil {
		return nil, nil, err
	}
	if err := checkRequestPayer(rq, src); err != nil {
		return nil, nil, err
	}
	o, err := srv.s.OpenVersion(rq.r.Context(), src, sk, sv, false)
	if errors.Is(err, s3err.NoSuchKey) {
		return nil, nil, srv.missingKey(rq, src, sk, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := srv.authorizeObject(rq, src, o, sk, "s3:GetObject", rgw.PermRead); err != nil {
		o.Close()
		return nil, nil, err
	}
	if err := checkConditions(rq.r.Header, "x-amz-copy-source-", o.ETag(), o.Mtime(), false); err != nil {
		o.Close()
		return nil, nil, err
	}
	if err := srv.decrypt(rq, o, "x-amz-copy-source-"); err != nil {
		o.Close()
		return nil, nil, err
	}
	if sv != "" || src.Versioned() {
		rq.w.Header().Set("x-amz-copy-source-version-id", o.VersionID())
	}
	return src, o, nil
}

// pipeRange streams [off, off+n) of o through a pipe (the reader side is
// the body of a new upload); the goroutine ends when the copy ends or the
// reader is closed.
func pipeRange(ctx context.Context, o *rgw.Object, off, n int64) *io.PipeReader {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(o.WriteRange(ctx, pw, off, n)) }()
	return pr
}

func (srv *Server) copyObject(rq *request, b *rgw.Bucket) error {
	ctx := rq.r.Context()
	src, o, err := srv.openCopySource(rq)
	if err != nil {
		return err
	}
	directive := rq.r.Header.Get("x-amz-metadata-directive")
	var hdr, meta map[string]string
	switch directive {
	case "", "COPY":
		if src.ID == b.ID && o.Key == rq.key && !b.Versioned() && !asksSSE(rq.r.Header) {
			return s3err.InvalidRequest.With("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
		}
		hdr, meta = o.Headers(), o.Meta()
	case "REPLACE":
		if hdr, meta, err = objectAttrs(rq.r); err != nil {
			return err
		}
	default:
		return s3err.InvalidArgument.With("Unknown metadata directive.")
	}
	sc, err := storageClass(rq.r)
	if err != nil {
		return err
	}
	if o.Size() > rgw.MaxObjectSize {
		return s3err.InvalidRequest.With("The specified copy source is larger than the maximum allowable size for a copy source: 5368709120")
	}
	owner, acl, err := srv.objectOwnerACL(ctx, rq.r.Header, rq.uid, b)
	if err != nil {
		return err
	}
	tags := o.Tags()
	switch rq.r.Header.Get("x-amz-tagging-directive") {
	case "", "COPY":
	case "REPLACE":
		if tags, err = headerTags(rq.r.Header); err != nil {
			return err
		}
	default:
		return s3err.InvalidArgument.With("Unknown tagging directive.")
	}
	// the copy's checksum: of the algorithm asked for, else the source's,
	// computed over the bytes copied
	var ck *rgw.ChecksumReq
	if name := rq.r.Header.Get("x-amz-checksum-algorithm"); name != "" {
		a, err := rgw.ChecksumAlgNamed(name)
		if err != nil {
			return err
		}
		ck = &rgw.ChecksumReq{Alg: a}
	} else if c := o.Info.Checksum; c != nil {
		ck = &rgw.ChecksumReq{Alg: rgw.ChecksumAlgs[c.Alg]}
	}
	lock, hold, err := lockFromHeaders(rq.r.Header, b)
	if err != nil {
		return err
	}
	sse, err := srv.sseForWrite(rq, b)
	if err != nil {
		return err
	}
	pr := pipeRange(ctx, o, 0, o.Size())
	defer pr.Close()
	res, err := srv.s.PutObject(ctx, b, rq.key, rgw.PutInput{Body: pr, Size: o.Size(), Headers: hdr, Meta: meta, Class: sc, Owner: owner, ACL: acl, Tags: tags,
		Cond: rgw.WriteCond{IfMatch: rq.r.Header.Get("If-Match"), IfNoneMatch: rq.r.Header.Get("If-None-Match")}, Checksum: ck, Lock: lock, LegalHold: hold, SSE: sse})
	if err != nil {
		return err
	}
	setSSEHeaders(rq.w.Header(), res.SSE)
	setWrittenVersionHeader(rq.w.Header(), res.VersionID)
	return writeXML(rq, http.StatusOK, copyObjectResult{Xmlns: s3NS, LastModified: isoTime(res.Mtime), ETag: res.ETag, checksumXML: checksumXMLOf(res.Checksum)})
}

func (srv *Server) deleteObjects(rq *request) error {
	b, err := srv.payingBucket(rq) // each key is authorized (s3:DeleteObject)
	if err != nil {
		return err
	}
	body, err := readBody(rq.r, 2<<20)
	if err != nil {
		return err
	}
	if want, err := contentMD5(rq.r); err != nil {
		return err
	} else if want != nil {
		if got := md5.Sum(body); !bytes.Equal(got[:], want) {
			return s3err.BadDigest
		}
	}
	var req deleteRequest
	if err := xml.Unmarshal(body, &req); err != nil {
		return s3err.MalformedXML
	}
	if len(req.Objects) > 1000 || len(req.Objects) == 0 {
		return s3err.MalformedXML.With("a multi-object delete names 1 to 1000 keys")
	}
	// The keys are removed rgw_multi_obj_del_max_aio at a time, as RGW
	// does; the answer lists them in the request's order.
	errs := make([]error, len(req.Objects))
	done := make([]rgw.DeleteResult, len(req.Objects))
	sem.Parallel(len(req.Objects), srv.opt.MultiDelMaxAIO, func(i int) {
		done[i], errs[i] = srv.deleteOneOf(rq, b, req.Objects[i])
	})
	res := deleteResult{Xmlns: s3NS}
	for i, o := range req.Objects {
		if err := errs[i]; err != nil {
			ae := apiError(err)
			res.Errors = append(res.Errors, deleteError{Key: o.Key, VersionID: o.VersionID, Code: ae.Code, Message: ae.Message})
		} else if !req.Quiet {
			d := deletedEntry{Key: o.Key, VersionID: o.VersionID}
			if r := done[i]; r.DeleteMarker {
				d.DeleteMarker = true
				if o.VersionID == "" { // a marker made: its id
					d.DeleteMarkerVersionID = r.VersionID
				}
			}
			res.Deleted = append(res.Deleted, d)
		}
	}
	return writeXML(rq, http.StatusOK, res)
}

// deleteOneOf removes one key or version of a multi-object delete, if the
// requester may and its conditions hold.
func (srv *Server) deleteOneOf(rq *request, b *rgw.Bucket, o deleteObject) (rgw.DeleteResult, error) {
	err := srv.authorize(rq, b, o.Key, "s3:DeleteObject", nil, func() error { return bucketAllows(b, rq.uid, rgw.PermWrite) })
	cond := rgw.DeleteCond{ETag: o.ETag, Size: o.Size, BypassGovernance: bypassGovernance(rq.r.Header)}
	if err == nil && o.LastModifiedTime != "" {
		if cond.Mtime, err = parseHTTPOrISOTime(o.LastModifiedTime); err != nil {
			err = s3err.InvalidArgument.With("LastModifiedTime %q: %v", o.LastModifiedTime, err)
		}
	}
	if err != nil {
		return rgw.DeleteResult{}, err
	}
	return srv.s.DeleteVersion(rq.r.Context(), b, o.Key, o.VersionID, rq.uid, cond)
}

// ---- listing ----

// encodeKey applies encoding-type=url to a key in a listing: percent-
// encoding as S3 does it, which leaves "/" as is.
func encodeKey(s, encoding string) string {
	if encoding == "url" {
		return strings.ReplaceAll(strings.ReplaceAll(url.QueryEscape(s), "+", "%20"), "%2F", "/")
	}
	return s
}

func maxKeysParam(q url.Values, name string, def int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, s3err.InvalidArgument.With("%s must be a non-negative integer", name)
	}
	return min(n, 1000), nil
}

// listParams reads the parameters every object listing takes: max-keys
// (≤ 1000) and encoding-type ("" or "url").
func listParams(q url.Values) (maxKeys int, enc string, err error) {
	if maxKeys, err = maxKeysParam(q, "max-keys", 1000); err != nil {
		return 0, "", err
	}
	if enc = q.Get("encoding-type"); enc != "" && enc != "url" {
		return 0, "", s3err.InvalidArgument.With("Invalid Encoding Method specified in Request")
	}
	return maxKeys, enc, nil
}

// commonPrefixes is a listing's CommonPrefixes, encoded as asked.
func commonPrefixes(l *rgw.Listing, enc string) []commonPrefix {
	var out []commonPrefix
	for _, p := range l.Prefixes {
		out = append(out, commonPrefix{Prefix: encodeKey(p, enc)})
	}
	return out
}

// listedClass is the class a listing shows ("" was stored as STANDARD).
func listedClass(sc string) string {
	if sc == "" {
		return "STANDARD"
	}
	return sc
}

func (srv *Server) listObjects(rq *request, b *rgw.Bucket) error {
	q := rq.q
	v2 := q.Get("list-type") == "2"
	maxKeys, enc, err := listParams(q)
	if err != nil {
		return err
	}
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	if q.Get("allow-unordered") == "true" && delim != "" { // RGW's unordered listing: answered in order, which is allowed
		return s3err.InvalidArgument.With("allow-unordered cannot be used with a delimiter")
	}
	res := listBucketResult{Xmlns: s3NS, Name: b.S3Name(), Prefix: prefix, MaxKeys: maxKeys, Delimiter: encodeKey(delim, enc), EncodingType: enc}
	if v2 { // V1 answers the prefix as given (the SDKs decode it only in V2)
		res.Prefix = encodeKey(prefix, enc)
	}
	after := ""
	if v2 {
		res.StartAfter = encodeKey(q.Get("start-after"), enc)
		after = q.Get("start-after")
		if has(q, "continuation-token") { // empty: from the start, as RGW
			t := q.Get("continuation-token")
			d, err := base64.RawURLEncoding.DecodeString(t)
			if err != nil {
				return s3err.InvalidArgument.With("The continuation token provided is incorrect")
			}
			res.ContToken = &t
			if t != "" {
				after = string(d)
			}
		}
	} else {
		m := q.Get("marker")
		res.Marker = &m
		after = m
	}
	l, err := srv.s.List(rq.r.Context(), b, prefix, delim, after, maxKeys)
	if err != nil {
		return err
	}
	fetchOwner := !v2 || q.Get("fetch-owner") == "true"
	for _, e := range l.Entries {
		oe := objectEntry{Key: encodeKey(e.Key, enc), LastModified: isoTime(time.Unix(0, e.Mtime)), ETag: e.ETag, Size: e.Size, StorageClass: listedClass(e.StorageClass)}
		if fetchOwner {
			oe.Owner = &owner{ID: e.Owner, DisplayName: srv.s.DisplayName(rq.r.Context(), e.Owner)}
		}
		res.Contents = append(res.Contents, oe)
	}
	res.CommonPrefixes = commonPrefixes(l, enc)
	res.IsTruncated = l.Truncated
	if v2 {
		n := len(l.Entries) + len(l.Prefixes)
		res.KeyCount = &n
		if l.Truncated {
			res.NextContToken = base64.RawURLEncoding.EncodeToString([]byte(l.NextMarker))
		}
	} else if l.Truncated && delim != "" {
		res.NextMarker = encodeKey(l.NextMarker, enc)
	}
	return writeXML(rq, http.StatusOK, res)
}

// ---- multipart ----

func (srv *Server) createUpload(rq *request, b *rgw.Bucket) error {
	hdr, meta, err := objectAttrs(rq.r)
	if err != nil {
		return err
	}
	sc, err := storageClass(rq.r)
	if err != nil {
		return err
	}
	owner, acl, err := srv.objectOwnerACL(rq.r.Context(), rq.r.Header, rq.uid, b)
	if err != nil {
		return err
	}
	tags, err := headerTags(rq.r.Header)
	if err != nil {
		return err
	}
	alg, typ, err := uploadChecksum(rq.r.Header)
	if err != nil {
		return err
	}
	lock, hold, err := lockFromHeaders(rq.r.Header, b)
	if err != nil {
		return err
	}
	sse, err := srv.sseForWrite(rq, b)
	if err != nil {
		return err
	}
	u, err := srv.s.CreateUpload(rq.r.Context(), b, rq.key, rgw.Upload{Owner: owner, Initiator: rq.uid, Headers: hdr, Meta: meta, Class: sc, ACL: acl, Tags: tags,
		ChecksumAlg: alg, ChecksumType: typ, Lock: lock, LegalHold: hold, SSEReq: sse})
	if err != nil {
		return err
	}
	setSSEHeaders(rq.w.Header(), u.SSE)
	if alg != "" {
		rq.w.Header().Set("x-amz-checksum-algorithm", alg)
		rq.w.Header().Set("x-amz-checksum-type", typ)
	}
	return writeXML(rq, http.StatusOK, initiateMultipartUploadResult{Xmlns: s3NS, Bucket: b.S3Name(), Key: rq.key, UploadID: u.UploadID})
}

func partNumber(q url.Values) (int, error) {
	n, err := strconv.Atoi(q.Get("partNumber"))
	if err != nil || n < 1 || n > rgw.MaxParts {
		return 0, s3err.InvalidArgument.With("Part number must be an integer between 1 and %d, inclusive", rgw.MaxParts)
	}
	return n, nil
}

func (srv *Server) uploadPart(rq *request, b *rgw.Bucket) error {
	num, err := partNumber(rq.q)
	if err != nil {
		return err
	}
	size, err := bodySize(rq.r)
	if err != nil {
		return err
	}
	sum, err := contentMD5(rq.r)
	if err != nil {
		return err
	}
	ck, err := checksumRequest(rq.r)
	if err != nil {
		return err
	}
	u, err := srv.s.GetUpload(rq.r.Context(), b, rq.key, rq.q.Get("uploadId"))
	if err != nil {
		return err
	}
	sse, err := srv.sseFromHeaders(rq, "")
	if err != nil {
		return err
	}
	p, err := srv.s.UploadPart(rq.r.Context(), b, u, num, rq.r.Body, size, sum, ck, sse)
	if err != nil {
		return err
	}
	setSSEHeaders(rq.w.Header(), u.SSE)
	rq.w.Header().Set("ETag", p.ETag)
	if p.Checksum != nil { // a part's value (S3 names no type for a part)
		rq.w.Header().Set(rgw.ChecksumAlgs[p.Checksum.Alg].Header(), p.Checksum.Value)
	}
	rq.w.WriteHeader(http.StatusOK)
	return nil
}

func (srv *Server) uploadPartCopy(rq *request, b *rgw.Bucket) error {
	ctx := rq.r.Context()
	num, err := partNumber(rq.q)
	if err != nil {
		return err
	}
	uploadID := rq.q.Get("uploadId")
	u, err := srv.s.GetUpload(ctx, b, rq.key, uploadID)
	if err != nil {
		return err
	}
	_, o, err := srv.openCopySource(rq)
	if err != nil {
		return err
	}
	off, n := int64(0), o.Size()
	if rv := rq.r.Header.Get("x-amz-copy-source-range"); rv != "" {
		if off, n, err = copySourceRange(rv, o.Size()); err != nil {
			return err
		}
	}
	pr := pipeRange(ctx, o, off, n)
	defer pr.Close()
	sse, err := srv.sseFromHeaders(rq, "")
	if err != nil {
		return err
	}
	p, err := srv.s.UploadPart(ctx, b, u, num, pr, n, nil, nil, sse) // the upload's checksum algorithm, computed over the copy
	if err != nil {
		return err
	}
	res := copyPartResult{Xmlns: s3NS, LastModified: isoTime(time.Now()), ETag: p.ETag, checksumXML: checksumXMLOf(p.Checksum)}
	res.Type = "" // a part's value has no type
	return writeXML(rq, http.StatusOK, res)
}

func (srv *Server) completeUpload(rq *request, b *rgw.Bucket) error {
	body, err := readBody(rq.r, 4<<20)
	if err != nil {
		return err
	}
	var c completeMultipartUpload
	if err := xml.Unmarshal(body, &c); err != nil {
		return s3err.MalformedXML
	}
	var list []rgw.CompletePart
	for _, p := range c.Parts {
		list = append(list, rgw.CompletePart{Num: p.PartNumber, ETag: p.ETag, Checksums: p.checksumXML.values()})
	}
	res, err := srv.s.CompleteUpload(rq.r.Context(), b, rq.key, rq.q.Get("uploadId"), list, checksumHeaders(rq.r.Header),
		rgw.WriteCond{IfMatch: rq.r.Header.Get("If-Match"), IfNoneMatch: rq.r.Header.Get("If-None-Match")})
	if err != nil {
		return err
	}
	setWrittenVersionHeader(rq.w.Header(), res.VersionID)
	setSSEHeaders(rq.w.Header(), res.SSE)
	return writeXML(rq, http.StatusOK, completeMultipartUploadResult{Xmlns: s3NS, Location: "/" + b.S3Name() + "/" + rq.key, Bucket: b.S3Name(), Key: rq.key, ETag: res.ETag,
		checksumXML: checksumXMLOf(res.Checksum)})
}

func (srv *Server) listParts(rq *request, b *rgw.Bucket) error {
	q := rq.q
	maxParts, err := maxKeysParam(q, "max-parts", 1000)
	if err != nil {
		return err
	}
	marker := 0
	if v := q.Get("part-number-marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			return s3err.InvalidArgument.With("part-number-marker must be a non-negative integer")
		}
	}
	uploadID := q.Get("uploadId")
	u, err := srv.s.GetUpload(rq.r.Context(), b, rq.key, uploadID)
	if err != nil {
		return err
	}
	parts, more, err := srv.s.ListParts(rq.r.Context(), b, rq.key, uploadID, marker, maxParts)
	if err != nil {
		return err
	}
	o, in := srv.uploadOwners(rq.r.Context(), u)
	res := listPartsResult{Xmlns: s3NS, Bucket: b.S3Name(), Key: rq.key, UploadID: uploadID, Initiator: in, Owner: o, StorageClass: u.Class,
		PartNumberMarker: marker, MaxParts: maxParts, IsTruncated: more, ChecksumAlgorithm: u.ChecksumAlg, ChecksumType: u.ChecksumType}
	for _, p := range parts {
		var ck checksumXML
		if u.ChecksumAlg != "" {
			ck = checksumXMLOf(p.Checksum)
			ck.Type = ""
		}
		res.Parts = append(res.Parts, partEntry{PartNumber: p.Num, LastModified: isoTime(p.Mtime), ETag: p.ETag, Size: p.Size, checksumXML: ck})
		res.NextPartNumberMarker = p.Num
	}
	return writeXML(rq, http.StatusOK, res)
}

func (srv *Server) listUploads(rq *request, b *rgw.Bucket) error {
	q := rq.q
	maxUploads, err := maxKeysParam(q, "max-uploads", 1000)
	if err != nil {
		return err
	}
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	res := listMultipartUploadsResult{Xmlns: s3NS, Bucket: b.S3Name(), KeyMarker: q.Get("key-marker"), UploadIDMarker: q.Get("upload-id-marker"),
		Prefix: prefix, Delimiter: delim, MaxUploads: maxUploads}
	ups, more, err := srv.s.ListUploads(rq.r.Context(), b, prefix, res.KeyMarker, res.UploadIDMarker, maxUploads)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, u := range ups {
		if delim != "" {
			if i := strings.Index(u.Key[len(prefix):], delim); i >= 0 {
				cp := u.Key[:len(prefix)+i+len(delim)]
				if !seen[cp] {
					seen[cp] = true
					res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: cp})
				}
				continue
			}
		}
		o, in := srv.uploadOwners(rq.r.Context(), &u)
		res.Uploads = append(res.Uploads, uploadEntry{Key: u.Key, UploadID: u.UploadID, Initiator: in, Owner: o, StorageClass: u.Class, Initiated: isoTime(u.Initiated)})
		res.NextKeyMarker, res.NextUploadIDMarker = u.Key, u.UploadID
	}
	res.IsTruncated = more
	return writeXML(rq, http.StatusOK, res)
}

// listVersions is ListObjectVersions: every version of each key, newest
// first, delete markers among them; in a bucket that never had
// versioning, every object is its only version, "null".
func (srv *Server) listVersions(rq *request, b *rgw.Bucket) error {
	q := rq.q
	maxKeys, enc, err := listParams(q)
	if err != nil {
		return err
	}
	prefix, delim, marker, vmarker := q.Get("prefix"), q.Get("delimiter"), q.Get("key-marker"), q.Get("version-id-marker")
	if vmarker != "" && marker == "" {
		return s3err.InvalidArgument.With("A version-id marker cannot be specified without a key marker.")
	}
	l, err := srv.s.ListVersions(rq.r.Context(), b, prefix, delim, marker, vmarker, maxKeys)
	if err != nil {
		return err
	}
	res := listVersionsResult{Xmlns: s3NS, Name: b.S3Name(), Prefix: encodeKey(prefix, enc), KeyMarker: encodeKey(marker, enc),
		VersionIDMarker: vmarker, MaxKeys: maxKeys, Delimiter: encodeKey(delim, enc), EncodingType: enc, IsTruncated: l.Truncated}
	for _, v := range l.Versions {
		o := owner{ID: v.Owner, DisplayName: srv.s.DisplayName(rq.r.Context(), v.Owner)}
		if v.DeleteMarker {
			res.DeleteMarkers = append(res.DeleteMarkers, deleteMarkerEntry{Key: encodeKey(v.Key, enc), VersionID: v.ID, IsLatest: v.IsLatest,
				LastModified: isoTime(time.Unix(0, v.Mtime)), Owner: o})
			continue
		}
		res.Versions = append(res.Versions, versionEntry{Key: encodeKey(v.Key, enc), VersionID: v.ID, IsLatest: v.IsLatest,
			LastModified: isoTime(time.Unix(0, v.Mtime)), ETag: v.ETag, Size: v.Size, StorageClass: listedClass(v.StorageClass), Owner: o})
	}
	for _, p := range l.Prefixes {
		res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{Prefix: encodeKey(p, enc)})
	}
	if l.Truncated {
		res.NextKeyMarker, res.NextVersionIDMarker = encodeKey(l.NextKeyMarker, enc), l.NextVersionIDMarker
	}
	return writeXML(rq, http.StatusOK, res)
}

// putBucketVersioning sets the bucket's versioning status (its owner):
// Enabled or Suspended; MFA delete is refused (no MFA devices here).
func (srv *Server) putBucketVersioning(rq *request) error {
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	var c versioningConfiguration
	if err := readXMLBody(rq.r, &c); err != nil {
		return err
	}
	if c.MFADelete == "Enabled" {
		return s3err.NotImplemented.With("MFA delete is not supported")
	}
	if c.MFADelete != "" && c.MFADelete != "Disabled" {
		return s3err.MalformedXML.With("MfaDelete must be Enabled or Disabled")
	}
	if c.Status == "" && !b.Versioned() {
		rq.w.WriteHeader(http.StatusOK) // nothing to change
		return nil
	}
	if _, err := srv.s.SetVersioning(rq.r.Context(), b.Name, c.Status); err != nil {
		return err
	}
	rq.w.WriteHeader(http.StatusOK)
	return nil
}
