package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Bucket logging requests: PutBucketLogging, GetBucketLogging and RGW's
// flush (POST /BUCKET?logging), and the access log records of logged
// buckets' requests, in S3's server access log format (the S3 user guide,
// "Amazon S3 server access log format": 26 space-separated fields, "-"
// for none). The batches and their commits are package rgw's
// (bucketlog.go).

// logService is the principal a log bucket's policy grants s3:PutObject
// to for logs to be delivered (S3's "logging.s3.amazonaws.com").
const logService = "logging.s3.amazonaws.com"

type bucketLoggingStatus struct {
	XMLName        xml.Name        `xml:"BucketLoggingStatus"`
	Xmlns          string          `xml:"xmlns,attr,omitempty"`
	LoggingEnabled *loggingEnabled `xml:"LoggingEnabled,omitempty"`
}

type loggingEnabled struct {
	TargetBucket string `xml:"TargetBucket"`
	TargetPrefix string `xml:"TargetPrefix"`
	// TargetGrants are accepted and ignored, as RGW does: log objects
	// belong to the log bucket's owner.
	TargetGrants          *struct{}              `xml:"TargetGrants,omitempty"`
	TargetObjectKeyFormat *targetObjectKeyFormat `xml:"TargetObjectKeyFormat,omitempty"`
}

type targetObjectKeyFormat struct {
	SimplePrefix      *struct{}          `xml:"SimplePrefix,omitempty"`
	PartitionedPrefix *partitionedPrefix `xml:"PartitionedPrefix,omitempty"`
}

type partitionedPrefix struct {
	PartitionDateSource string `xml:"PartitionDateSource,omitempty"`
}

type postBucketLoggingOutput struct {
	XMLName              xml.Name `xml:"PostBucketLoggingOutput"`
	Xmlns                string   `xml:"xmlns,attr,omitempty"`
	FlushedLoggingObject string   `xml:"FlushedLoggingObject"`
}

// bucketLogging answers ?logging: GET and PUT by the bucket's owner (or
// as its policy allows), POST (flush the pending batch now).
func (srv *Server) bucketLogging(rq *request) error {
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	ctx := rq.r.Context()
	switch rq.r.Method {
	case http.MethodGet:
		out := bucketLoggingStatus{Xmlns: s3NS}
		if c := b.Logging; c != nil {
			le := &loggingEnabled{TargetBucket: logTargetName(b, c.TargetBucket), TargetPrefix: c.TargetPrefix, TargetObjectKeyFormat: &targetObjectKeyFormat{}}
			if c.KeyFormat == rgw.LogKeyPartitioned {
				le.TargetObjectKeyFormat.PartitionedPrefix = &partitionedPrefix{c.DateSource}
			} else {
				le.TargetObjectKeyFormat.SimplePrefix = &struct{}{}
			}
			out.LoggingEnabled = le
			rq.w.Header().Set("Last-Modified", c.Modified.UTC().Format(http.TimeFormat))
		}
		return writeXML(rq, http.StatusOK, out)
	case http.MethodPost:
		if b.Logging == nil {
			return s3err.InvalidRequest.With("bucket %q has no logging configuration", b.S3Name())
		}
		key, err := srv.s.CommitLog(ctx, b, srv.opt.LogRollTime, true)
		if err != nil {
			return err
		}
		return writeXML(rq, http.StatusOK, postBucketLoggingOutput{Xmlns: s3NS, FlushedLoggingObject: key})
	case http.MethodPut:
		var st bucketLoggingStatus
		if err := readXMLBody(rq.r, &st); err != nil {
			return err
		}
		le := st.LoggingEnabled
		if le == nil { // disable: what was gathered goes out first
			if b.Logging != nil {
				if _, err := srv.s.CommitLog(ctx, b, 0, true); err != nil {
					return err
				}
			}
			nb, err := srv.s.SetBucketLogging(ctx, b.Name, nil)
			if err != nil {
				return err
			}
			rq.b = nb // this request is logged as the bucket now stands
			rq.w.WriteHeader(http.StatusOK)
			return nil
		}
		cfg, err := srv.loggingConfig(rq, b, le)
		if err != nil {
			return err
		}
		switch old := b.Logging; {
		case old == nil: // what gathered while logging was off is not delivered
			if err := srv.s.DropLogBatch(ctx, b); err != nil {
				return err
			}
		case !old.SameDestination(cfg):
			// what gathered goes to the old target; if it cannot (gone,
			// or created again), to the new one the owner just chose
			if _, err := srv.s.CommitLog(ctx, b, 0, true); err != nil {
				srv.opt.Logger.Warn("bucket log: pending records go to the new log bucket", "bucket", b.Name, "err", err)
			}
		}
		nb, err := srv.s.SetBucketLogging(ctx, b.Name, cfg)
		if err != nil {
			return err
		}
		rq.b = nb
		rq.w.WriteHeader(http.StatusOK)
		return nil
	}
	return s3err.MethodNotAllowed
}

// loggingConfig checks a LoggingEnabled for source bucket b: its target
// exists (NoSuchKey otherwise, as RGW answers), is another bucket without
// logging of its own, and its policy lets the logging service put objects
// under the prefix for this bucket and account (AccessDenied otherwise).
func (srv *Server) loggingConfig(rq *request, b *rgw.Bucket, le *loggingEnabled) (*rgw.BucketLogging, error) {
	if le.TargetBucket == "" {
		return nil, s3err.MalformedXML.With("LoggingEnabled needs a TargetBucket")
	}
	cfg := &rgw.BucketLogging{TargetPrefix: le.TargetPrefix, KeyFormat: rgw.LogKeySimple}
	if f := le.TargetObjectKeyFormat; f != nil {
		switch {
		case f.SimplePrefix != nil && f.PartitionedPrefix != nil:
			return nil, s3err.MalformedXML.With("TargetObjectKeyFormat takes one of SimplePrefix, PartitionedPrefix")
		case f.PartitionedPrefix != nil:
			cfg.KeyFormat, cfg.DateSource = rgw.LogKeyPartitioned, f.PartitionedPrefix.PartitionDateSource
			if cfg.DateSource != "" && cfg.DateSource != "EventTime" && cfg.DateSource != "DeliveryTime" {
				return nil, s3err.MalformedXML.With("PartitionDateSource must be EventTime or DeliveryTime, not %q", cfg.DateSource)
			}
		}
	}
	key, ok := rgw.RequestBucketKey(rq.uid, le.TargetBucket)
	if !ok {
		return nil, s3err.InvalidBucketName.With("log bucket %q names a tenant that is not valid", le.TargetBucket)
	}
	target, err := srv.s.GetBucket(rq.r.Context(), key)
	if err != nil {
		if errors.Is(err, s3err.NoSuchBucket) {
			return nil, s3err.NoSuchKey.With("log bucket %q does not exist", le.TargetBucket)
		}
		return nil, err
	}
	if err := rgw.ValidLogTarget(b, target); err != nil {
		return nil, err
	}
	p := bucketPolicy(target)
	values := func(k string) ([]string, bool) {
		switch strings.ToLower(k) {
		case "aws:sourcearn":
			return []string{resourceARN(b, "")}, true
		case "aws:sourceaccount":
			return []string{rq.uid}, true
		}
		return nil, false
	}
	if p == nil || p.eval(&policyRequest{uid: servicePrincipal(logService), action: "s3:PutObject", resource: resourceARN(target, "") + "/" + le.TargetPrefix, value: values}) != decAllow {
		return nil, s3err.AccessDenied.With("the policy of log bucket %q does not let %s put objects under %q for bucket %q and account %q",
			le.TargetBucket, logService, le.TargetPrefix, b.S3Name(), rq.uid)
	}
	cfg.TargetBucket, cfg.TargetID = target.Name, target.ID
	return cfg, nil
}

// logTargetName is how a configuration of bucket b names its log
// bucket: bare in b's own tenant, "TENANT:BUCKET" otherwise.
func logTargetName(b *rgw.Bucket, target string) string {
	t, n := rgw.SplitBucketKey(target)
	if t == b.Tenant() {
		return n
	}
	return t + ":" + n
}

// logBatches remembers, per logged bucket this gateway appended records
// to, when its pending batch began, so a request after the roll time (or
// the periodic pass) commits it.
type logBatches struct {
	mu    sync.Mutex
	since map[string]time.Time // bucket key → batch start
}

// logRequest writes rq's access log record if its bucket is logged,
// committing the bucket's batch first if it is RollTime old (so the
// record that finds it due starts the next one).
func (srv *Server) logRequest(rq *request, w *countingWriter, start time.Time) {
	b := rq.b
	if b == nil {
		return // failed before its bucket was loaded, or removed it
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rq.r.Context()), 30*time.Second)
	defer cancel()
	if b.Logging == nil {
		return
	}
	record := accessLogRecord(rq, w, b, start) // before a commit: its time is not the request's
	roll := srv.opt.LogRollTime
	srv.logs.mu.Lock()
	since, ok := srv.logs.since[b.Name]
	srv.logs.mu.Unlock()
	if ok && time.Since(since) >= roll {
		if _, err := srv.s.CommitLog(ctx, b, roll, false); err != nil {
			srv.opt.Logger.Warn("bucket log commit failed", "bucket", b.Name, "err", err)
		}
	}
	since, err := srv.s.AppendLogRecord(ctx, b, record)
	if err != nil {
		srv.opt.Logger.Warn("bucket log record lost", "bucket", b.Name, "err", err)
		return
	}
	srv.logs.mu.Lock()
	srv.logs.since[b.Name] = since
	srv.logs.mu.Unlock()
}

// commitDueLogs commits the batches this gateway appended to that are
// RollTime old (the periodic pass: a bucket no request reaches still gets
// its records delivered).
func (srv *Server) commitDueLogs(ctx context.Context) {
	roll := srv.opt.LogRollTime
	srv.logs.mu.Lock()
	due := map[string]time.Time{}
	for k, since := range srv.logs.since {
		if time.Since(since) >= roll {
			due[k] = since
		}
	}
	srv.logs.mu.Unlock()
	for k, since := range due {
		b, err := srv.s.LookupBucket(ctx, k)
		if err == nil && b.Logging != nil {
			var key string
			if key, err = srv.s.CommitLog(ctx, b, roll, false); err != nil {
				srv.opt.Logger.Warn("bucket log commit failed", "bucket", k, "err", err)
			}
			if err != nil || key == "" {
				continue // busy elsewhere or failed: tried again next pass
			}
		}
		srv.logs.mu.Lock()
		if srv.logs.since[k].Equal(since) { // no record appended meanwhile
			delete(srv.logs.since, k)
		}
		srv.logs.mu.Unlock()
	}
}

// runLogCommits runs commitDueLogs every half roll time until ctx ends.
func (srv *Server) runLogCommits(ctx context.Context) {
	t := time.NewTicker(max(srv.opt.LogRollTime/2, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			srv.commitDueLogs(ctx)
		}
	}
}

// accessLogRecord formats rq as one line of S3's server access log.
func accessLogRecord(rq *request, w *countingWriter, b *rgw.Bucket, start time.Time) []byte {
	r := rq.r
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	quote := func(s string) string {
		if s == "" {
			return "-"
		}
		return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
	}
	ip := r.RemoteAddr
	if h, _, err := net.SplitHostPort(ip); err == nil {
		ip = h
	}
	key := "-"
	if rq.key != "" {
		key = (&url.URL{Path: rq.key}).EscapedPath()
	}
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	bytesSent := "-"
	if w.bytes > 0 {
		bytesSent = strconv.FormatInt(w.bytes, 10)
	}
	size := "-"
	switch {
	case status >= 300:
	case rq.key != "" && r.Method == http.MethodPut && r.ContentLength >= 0:
		size = strconv.FormatInt(r.ContentLength, 10)
	case rq.key != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		size = dash(w.Header().Get("Content-Length"))
	}
	authType, sigVersion := "-", "-"
	if rq.uid != "" {
		q := rq.q
		switch {
		case r.Header.Get("Authorization") != "":
			authType = "AuthHeader"
		case q.Has("X-Amz-Signature") || q.Has("Signature"):
			authType = "QueryString"
		}
		switch {
		case strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-"), q.Has("X-Amz-Algorithm"):
			sigVersion = "SigV4"
		case authType != "-":
			sigVersion = "SigV2"
		}
	}
	aclRequired := "-"
	if rq.aclRequired.Load() {
		aclRequired = "Yes"
	}
	fields := []string{
		dash(b.Owner), b.S3Name(), "[" + start.UTC().Format("02/Jan/2006:15:04:05 -0700") + "]", dash(ip), dash(rq.uid), rq.id,
		logOperation(rq), key, quote(r.Method + " " + r.RequestURI + " " + r.Proto), strconv.Itoa(status), dash(rq.errCode),
		bytesSent, size, strconv.FormatInt(time.Since(start).Milliseconds(), 10), "-", quote(r.Referer()), quote(r.UserAgent()),
		dash(w.Header().Get("x-amz-version-id")), "-", sigVersion, "-", authType, dash(r.Host), "-", "-", aclRequired,
	}
	return []byte(strings.Join(fields, " ") + "\n")
}

// logOperation names rq as S3's access log does: REST.METHOD.RESOURCE.
func logOperation(rq *request) string {
	q := rq.q
	first := func(pairs ...string) string {
		for i := 0; i+1 < len(pairs); i += 2 {
			if has(q, pairs[i]) {
				return pairs[i+1]
			}
		}
		return ""
	}
	var res string
	if rq.key != "" {
		res = first("acl", "ACL", "tagging", "TAGGING", "retention", "RETENTION", "legal-hold", "LEGAL_HOLD",
			"attributes", "OBJECT_ATTRIBUTES", "uploads", "UPLOADS", "uploadId", "UPLOAD")
		if res == "UPLOAD" && rq.r.Method == http.MethodPut {
			res = "PART"
		}
		if res == "" {
			res = "OBJECT"
			if rq.r.Method == http.MethodPut && rq.r.Header.Get("x-amz-copy-source") != "" {
				return "REST.COPY.OBJECT"
			}
		}
	} else {
		res = first("acl", "ACL", "policy", "BUCKETPOLICY", "logging", "LOGGING_STATUS", "versioning", "VERSIONING",
			"cors", "CORS", "lifecycle", "LIFECYCLE", "tagging", "TAGGING", "uploads", "UPLOADS", "versions", "BUCKETVERSIONS",
			"location", "LOCATION", "delete", "MULTI_OBJECT_DELETE", "object-lock", "OBJECT_LOCK_CONFIGURATION",
			"publicAccessBlock", "PUBLIC_ACCESS_BLOCK", "ownershipControls", "OWNERSHIP_CONTROLS")
		if res == "" {
			res = "BUCKET"
		}
	}
	return "REST." + rq.r.Method + "." + res
}
