package gateway_test

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// logFields splits an access log record as S3's format reads: fields
// separated by spaces, "[time]" and "quoted strings" (with \" inside)
// one field each.
func logFields(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	for i := 0; i < len(line); {
		switch line[i] {
		case ' ':
			i++
		case '[':
			j := strings.IndexByte(line[i:], ']')
			out, i = append(out, line[i+1:i+j]), i+j+1
		case '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(line) && line[j] != '"'; j++ {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				b.WriteByte(line[j])
			}
			out, i = append(out, b.String()), j+1
		default:
			j := strings.IndexByte(line[i:], ' ')
			if j < 0 {
				j = len(line) - i
			}
			out, i = append(out, line[i:i+j]), i+j
		}
	}
	if len(out) != 26 {
		t.Fatalf("access log record has %d fields, want 26: %q", len(out), line)
	}
	return out
}

// logPolicy is the log bucket policy S3's documentation gives: the
// logging service may put objects under prefix for bucket src of account.
func logPolicy(target, prefix, src, account string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},`+
		`"Action":"s3:PutObject","Resource":"arn:aws:s3:::%s/%s","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:s3:::%s"},`+
		`"StringEquals":{"aws:SourceAccount":%q}}}]}`, target, prefix, src, account)
}

// TestBucketLogging: PutBucketLogging checks its target as RGW does (it
// exists, is another bucket without logging, and its policy lets the
// logging service write for this bucket and account), GetBucketLogging
// answers it with an unchanged Last-Modified for an unchanged
// configuration, and the requests on the bucket reach the log bucket as
// S3 access log records once flushed or rolled, in order, each once.
func TestBucketLogging(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, LogRollTime: time.Hour})
	ctx := context.Background()
	c, o := f.s3(f.admin), f.s3(f.other)
	src, dst, prefix := "logsrc", "logdst", "log/"
	for _, b := range []string{src, dst, "other-dst"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	enable := func(cl *s3.Client, bucket, target string, kf *types.TargetObjectKeyFormat) error {
		_, err := cl.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &bucket, BucketLoggingStatus: &types.BucketLoggingStatus{
			LoggingEnabled: &types.LoggingEnabled{TargetBucket: &target, TargetPrefix: &prefix, TargetObjectKeyFormat: kf}}})
		return err
	}
	// refused: nothing set
	if err := enable(c, src, dst, nil); code(err) != "AccessDenied" {
		t.Fatalf("logging to a bucket whose policy does not allow it: %v", err)
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &dst, Policy: aws.String(logPolicy(dst, prefix, src, "tester"))}); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]struct {
		cl     *s3.Client
		bucket string
		target string
		kf     *types.TargetObjectKeyFormat
		code   string
	}{
		"a missing log bucket":    {c, src, "nowhere", nil, "NoSuchKey"},
		"the bucket itself":       {c, src, src, nil, "InvalidArgument"},
		"another user":            {o, src, dst, nil, "AccessDenied"},
		"a bad date source":       {c, src, dst, &types.TargetObjectKeyFormat{PartitionedPrefix: &types.PartitionedPrefix{PartitionDateSource: "kaboom"}}, "MalformedXML"},
		"a missing source bucket": {c, "nobucket", dst, nil, "NoSuchBucket"},
	} {
		if err := enable(c.cl, c.bucket, c.target, c.kf); code(err) != c.code {
			t.Fatalf("%s: %v, want %s", what, err, c.code)
		}
	}
	if out, err := c.GetBucketLogging(ctx, &s3.GetBucketLoggingInput{Bucket: &src}); err != nil || out.LoggingEnabled != nil {
		t.Fatalf("logging after refused requests: %+v %v", out, err)
	}
	// a log bucket with logging of its own cannot take logs
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("other-dst"), Policy: aws.String(logPolicy("other-dst", prefix, dst, "tester"))}); err != nil {
		t.Fatal(err)
	}
	if err := enable(c, dst, "other-dst", nil); err != nil {
		t.Fatal(err)
	}
	if err := enable(c, src, dst, nil); code(err) != "InvalidArgument" {
		t.Fatalf("logging into a bucket that has logging: %v", err)
	}
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &dst, BucketLoggingStatus: &types.BucketLoggingStatus{}}); err != nil {
		t.Fatal(err)
	}
	if err := enable(c, src, dst, nil); err != nil {
		t.Fatal(err)
	}
	var lastModified []string
	for range 2 {
		raw := &http.Response{}
		out, err := c.GetBucketLogging(ctx, &s3.GetBucketLoggingInput{Bucket: &src}, captureResponse(raw))
		if err != nil || *out.LoggingEnabled.TargetBucket != dst || *out.LoggingEnabled.TargetPrefix != prefix ||
			out.LoggingEnabled.TargetObjectKeyFormat == nil || out.LoggingEnabled.TargetObjectKeyFormat.SimplePrefix == nil {
			t.Fatalf("GET ?logging: %+v %v", out, err)
		}
		lastModified = append(lastModified, raw.Header.Get("Last-Modified"))
		if err := enable(c, src, dst, nil); err != nil { // the same again
			t.Fatal(err)
		}
	}
	if lastModified[0] == "" || lastModified[0] != lastModified[1] {
		t.Fatalf("Last-Modified of an unchanged configuration: %q", lastModified)
	}

	// a statement without Resource is accepted and applies to nothing (as
	// RGW): another user still may not change the configuration
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &src,
		Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:PutBucketLogging"}]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &src, BucketLoggingStatus: &types.BucketLoggingStatus{}}); code(err) != "AccessDenied" {
		t.Fatalf("another user disabling logging under a policy without Resource: %v", err)
	}
	if _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: &src}); err != nil {
		t.Fatal(err)
	}

	// requests: the owner's PUT and GET, an anonymous GET of a public
	// object, another user's listing through the bucket's ACL, a miss
	putRaw := &http.Response{}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &src, Key: aws.String("k 1"), Body: strings.NewReader("hello"), ACL: types.ObjectCannedACLPublicRead},
		captureResponse(putRaw)); err != nil {
		t.Fatal(err)
	}
	putID := putRaw.Header.Get("x-amz-request-id")
	if got, _ := get(t, c, src, "k 1", ""); string(got) != "hello" {
		t.Fatal("GET")
	}
	if st, body := anon(t, http.MethodGet, f.url+"/"+src+"/k%201", ""); st != 200 || body != "hello" {
		t.Fatalf("anonymous GET: %d %q", st, body)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &src, ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &src}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &src, Key: aws.String("missing")}); code(err) != "NoSuchKey" {
		t.Fatal(err)
	}
	// flush (RGW's POST ?logging): one object under the prefix, the records in order
	st, body := f.signed(t, f.admin, http.MethodPost, "/"+src+"?logging", nil, "")
	var flushed struct {
		Key string `xml:"FlushedLoggingObject"`
	}
	if st != 200 || xml.Unmarshal([]byte(body), &flushed) != nil || !regexp.MustCompile(`^log/\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d-[0-9a-f]{16}$`).MatchString(flushed.Key) {
		t.Fatalf("flush: %d %s", st, body)
	}
	records := func(key string) [][]string {
		got, _ := get(t, c, dst, key, "")
		var out [][]string
		for _, l := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
			out = append(out, logFields(t, l))
		}
		return out
	}
	var recs [][]string
	for _, r := range records(flushed.Key) {
		if !strings.HasSuffix(r[6], ".LOGGING_STATUS") && !strings.HasSuffix(r[6], ".BUCKETPOLICY") { // the configuration requests above are logged too
			recs = append(recs, r)
		}
	}
	want := []struct{ op, key, status, errCode, requester, auth, acl string }{
		{"REST.PUT.OBJECT", "k%201", "200", "-", "tester", "AuthHeader", "-"},
		{"REST.GET.OBJECT", "k%201", "200", "-", "tester", "AuthHeader", "-"},
		{"REST.GET.OBJECT", "k%201", "200", "-", "-", "-", "Yes"},
		{"REST.PUT.ACL", "-", "200", "-", "tester", "AuthHeader", "-"},
		{"REST.GET.BUCKET", "-", "200", "-", "other", "AuthHeader", "Yes"},
		{"REST.GET.OBJECT", "missing", "404", "NoSuchKey", "tester", "AuthHeader", "-"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %q", len(recs), len(want), recs)
	}
	for i, w := range want {
		r := recs[i]
		if r[0] != "tester" || r[1] != src || r[6] != w.op || r[7] != w.key || r[9] != w.status || r[10] != w.errCode ||
			r[4] != w.requester || r[21] != w.auth || r[25] != w.acl {
			t.Errorf("record %d: %q; want %+v", i, r, w)
		}
	}
	if recs[0][5] != putID || recs[0][12] != "5" || recs[1][11] != "5" || recs[0][19] != "SigV4" {
		t.Errorf("the PUT's record: request id %s (the response's %s), object size %s, bytes sent by the GET %s, %s",
			recs[0][5], putID, recs[0][12], recs[1][11], recs[0][19])
	}
	if _, err := time.Parse("02/Jan/2006:15:04:05 -0700", recs[0][2]); err != nil {
		t.Errorf("record time: %v", err)
	}
	// a commit killed between the log object and the trim: the next
	// commit writes the same object again, with what came since, and
	// every record is delivered once
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &src, Key: aws.String("k 1")}); err != nil {
		t.Fatal(err)
	}
	f.store.SetFailpoint("log-before-trim")
	if st, body := f.signed(t, f.admin, http.MethodPost, "/"+src+"?logging", nil, ""); st != http.StatusInternalServerError {
		t.Fatalf("flush killed before its trim: %d %s", st, body)
	}
	f.store.SetFailpoint("")
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &src, Key: aws.String("k 1")}); err != nil {
		t.Fatal(err)
	}
	st, body = f.signed(t, f.admin, http.MethodPost, "/"+src+"?logging", nil, "")
	var again struct {
		Key string `xml:"FlushedLoggingObject"`
	}
	if st != 200 || xml.Unmarshal([]byte(body), &again) != nil {
		t.Fatalf("flush after the killed one: %d %s", st, body)
	}
	var ops []string
	for _, r := range records(again.Key) {
		ops = append(ops, r[6])
	}
	// the first flush's record, the HEAD, the killed flush's, the second HEAD
	if want := "REST.POST.LOGGING_STATUS REST.HEAD.OBJECT REST.POST.LOGGING_STATUS REST.HEAD.OBJECT"; strings.Join(ops, " ") != want {
		t.Fatalf("the batch committed after a killed commit: %q; want %q", ops, want)
	}
	if l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &dst, Prefix: &prefix}); err != nil || len(l.Contents) != 2 {
		t.Fatalf("log objects after a killed commit and its retry: %+v %v; want the retry to overwrite its own", l, err)
	}
	flushed = again

	// nothing pending: a second flush commits nothing new... except its
	// own predecessor's record, the flush before
	st, body = f.signed(t, f.admin, http.MethodPost, "/"+src+"?logging", nil, "")
	if xml.Unmarshal([]byte(body), &flushed) != nil || st != 200 {
		t.Fatalf("second flush: %d %s", st, body)
	}
	if r := records(flushed.Key); len(r) != 1 || r[0][6] != "REST.POST.LOGGING_STATUS" {
		t.Fatalf("second flush's object: %q", r)
	}
	// disabling commits what is pending, then nothing more is logged
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &src, Key: aws.String("k 1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &src, BucketLoggingStatus: &types.BucketLoggingStatus{}}); err != nil {
		t.Fatal(err)
	}
	if out, err := c.GetBucketLogging(ctx, &s3.GetBucketLoggingInput{Bucket: &src}); err != nil || out.LoggingEnabled != nil {
		t.Fatalf("GET ?logging after disabling: %+v %v", out, err)
	}
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &dst, Prefix: &prefix})
	if err != nil || len(l.Contents) != 4 {
		t.Fatalf("log objects after disabling: %+v %v", l, err)
	}
	ids := map[string]bool{}
	heads := 0
	for _, obj := range l.Contents {
		for _, r := range records(*obj.Key) {
			if ids[r[5]] {
				t.Fatalf("request %s logged twice", r[5])
			}
			ids[r[5]] = true
			if r[6] == "REST.HEAD.OBJECT" {
				heads++
			}
		}
	}
	// 8 configuration requests, the 6 above, 4 flushes, 3 HEADs
	if heads != 3 || len(ids) != 21 {
		t.Fatalf("%d records over the log objects, %d of the HEAD; want 21 and 3", len(ids), heads)
	}
	// a logged bucket's removal delivers what is pending and takes its batch along
	if err := enable(c, src, dst, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &src, Key: aws.String("k 1")}); err != nil {
		t.Fatal(err)
	}
	sb, err := f.store.GetBucket(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &src}); err != nil {
		t.Fatal(err)
	}
	logPool, err := f.conn.Pool(ctx, rgw.DefaultPools.Log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := logPool.Stat(ctx, "bucketlog."+sb.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("the removed bucket's batch: %v", err)
	}
	if l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &dst, Prefix: &prefix}); err != nil || len(l.Contents) != 5 {
		t.Fatalf("log objects after the bucket's removal: %v %v; want the DELETE of k 1 delivered in a fifth", l, err)
	}
}

// TestBucketLoggingRoll: with a roll time passed, the first request
// after it commits the batch before its own record, which starts the
// next (one record per object here); the partitioned key format names
// owner, region and bucket.
func TestBucketLoggingRoll(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, LogRollTime: time.Nanosecond})
	ctx := context.Background()
	c := f.s3(f.admin)
	src, dst, prefix := "rollsrc", "rolldst", "p/"
	for _, b := range []string{src, dst} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &dst, Policy: aws.String(logPolicy(dst, prefix, src, "tester"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &src, BucketLoggingStatus: &types.BucketLoggingStatus{LoggingEnabled: &types.LoggingEnabled{
		TargetBucket: &dst, TargetPrefix: &prefix, TargetObjectKeyFormat: &types.TargetObjectKeyFormat{PartitionedPrefix: &types.PartitionedPrefix{PartitionDateSource: types.PartitionDateSourceDeliveryTime}}}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &src, Key: aws.String(fmt.Sprint("k", i)), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	// each PUT committed the record before it (the first, PutBucketLogging's own)
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &dst})
	if err != nil || len(l.Contents) != 3 {
		t.Fatalf("log objects after 3 requests with a roll time passed: %+v %v", l, err)
	}
	re := regexp.MustCompile(`^p/tester/default/rollsrc/\d{4}/\d\d/\d\d/\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d-[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for _, obj := range l.Contents {
		if !re.MatchString(*obj.Key) {
			t.Fatalf("partitioned log key %q", *obj.Key)
		}
		got, _ := get(t, c, dst, *obj.Key, "")
		fs := logFields(t, strings.TrimSuffix(string(got), "\n"))
		seen[fs[6]+" "+fs[7]] = true
	}
	if !seen["REST.PUT.LOGGING_STATUS -"] || !seen["REST.PUT.OBJECT k0"] || !seen["REST.PUT.OBJECT k1"] || len(seen) != 3 {
		t.Fatalf("records committed: %v; want PutBucketLogging's, k0's and k1's, once each", seen)
	}
	// a log bucket removed and created again (by anyone) gets nothing
	for _, obj := range l.Contents {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &dst, Key: obj.Key}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &dst}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &dst}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &dst, Policy: aws.String(logPolicy(dst, prefix, src, "tester"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &src, Key: aws.String("k3"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if st, body := f.signed(t, f.admin, http.MethodPost, "/"+src+"?logging", nil, ""); st != http.StatusBadRequest || !strings.Contains(body, "created again") {
		t.Fatalf("flush to a log bucket created again: %d %s", st, body)
	}
	if l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &dst}); err != nil || len(l.Contents) != 0 {
		t.Fatalf("the log bucket created again received %+v (%v)", l, err)
	}
	// configured again (an empty prefix: the policy's resource is the
	// bucket's "/*"), the kept records go out
	empty := ""
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &dst, Policy: aws.String(strings.Replace(logPolicy(dst, "*", src, "tester"), "p/", "", 1))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &src, BucketLoggingStatus: &types.BucketLoggingStatus{LoggingEnabled: &types.LoggingEnabled{
		TargetBucket: &dst, TargetPrefix: &empty}}}); err != nil {
		t.Fatalf("logging with an empty prefix under a policy for %s/*: %v", dst, err)
	}
	st, body := f.signed(t, f.admin, http.MethodPost, "/"+src+"?logging", nil, "")
	if st != http.StatusOK || !regexp.MustCompile(`<FlushedLoggingObject>\d{4}-\d\d-`).MatchString(body) {
		t.Fatalf("flush after configuring again: %d %s", st, body)
	}
	l, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &dst})
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, obj := range l.Contents {
		got, _ := get(t, c, dst, *obj.Key, "")
		all += string(got)
	}
	if strings.Count(all, "REST.PUT.OBJECT k3 ") != 1 {
		t.Fatalf("the kept records were not delivered once: %q", all)
	}
}

// captureResponse copies the HTTP response's header into raw.
func captureResponse(raw *http.Response) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Deserialize.Add(middleware.DeserializeMiddlewareFunc("capture", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				if r, ok := out.RawResponse.(*smithyhttp.Response); ok {
					raw.Header = r.Header
				}
				return out, md, err
			}), middleware.After)
		})
	}
}
