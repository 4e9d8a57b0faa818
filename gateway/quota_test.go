package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestQuotas: a user's bucket limit (TooManyBuckets), the default bucket
// quota of its buckets, a bucket's own quota and the user quota over all
// its buckets (QuotaExceeded, nothing written), and RGW's usage answers
// (GET /?usage, HEAD bucket?read-stats).
func TestQuotas(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	// the defaults: 1000 buckets, no quotas
	st, body := f.signed(t, f.admin, "GET", "/?usage", nil, "")
	if st != 200 || !strings.Contains(body, "<QuotaMaxBuckets>1000</QuotaMaxBuckets>") || !strings.Contains(body, "<QuotaMaxBytes>-1</QuotaMaxBytes>") {
		t.Fatalf("GET /?usage: %d %s", st, body)
	}
	if _, err := f.store.SetMaxBuckets(ctx, "tester", 2); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"qa1", "qa2"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("qa3")}); code(err) != "TooManyBuckets" {
		t.Fatalf("a third bucket past a limit of 2: %v", err)
	}
	put := func(b, k string, n int) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader(strings.Repeat("x", n))})
		if err == nil {
			if err := f.store.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			f.store.ForgetUsage()
		}
		return err
	}
	// the user's default bucket quota: 2 objects a bucket
	if _, err := f.store.SetQuota(ctx, "tester", "bucket", func(q *rgw.Quota) { q.MaxObjects, q.Enabled = 2, true }); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := put("qa1", k, 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("qa1", "c", 10); code(err) != "QuotaExceeded" || !isStatus(err, http.StatusForbidden) {
		t.Fatalf("a third object past a bucket quota of 2: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("qa1"), Key: aws.String("c")}); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("the refused object exists: %v", err)
	}
	// q2's own quota lifts the limit for it
	if _, err := f.store.SetBucketQuota(ctx, "qa2", func(q *rgw.Quota) { q.MaxObjects, q.Enabled = 10, true }); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if err := put("qa2", k, 100); err != nil {
			t.Fatalf("q2 under its own quota of 10: %v", err)
		}
	}
	// the user quota: 400 bytes over both buckets (320 stored)
	if _, err := f.store.SetQuota(ctx, "tester", "user", func(q *rgw.Quota) { q.MaxSize, q.Enabled = 400, true }); err != nil {
		t.Fatal(err)
	}
	if err := put("qa2", "d", 100); code(err) != "QuotaExceeded" {
		t.Fatalf("320 + 100 bytes past a user quota of 400: %v", err)
	}
	if err := put("qa2", "d", 50); err != nil {
		t.Fatalf("320 + 50 bytes under a user quota of 400: %v", err)
	}
	st, body = f.signed(t, f.admin, "GET", "/?usage", nil, "")
	if st != 200 || !strings.Contains(body, "<QuotaMaxBuckets>2</QuotaMaxBuckets>") || !strings.Contains(body, "<QuotaMaxBytes>400</QuotaMaxBytes>") ||
		!strings.Contains(body, "<QuotaMaxObjCountPerBucket>2</QuotaMaxObjCountPerBucket>") || !strings.Contains(body, "<TotalBytes>370</TotalBytes>") {
		t.Fatalf("GET /?usage with quotas: %d %s", st, body)
	}
	// HEAD with read-stats: RGW's X-RGW-Quota-* headers
	req, err := http.NewRequest(http.MethodHead, f.url+"/qa1?read-stats=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: f.admin.AccessKey, SecretAccessKey: f.admin.SecretKey},
		req, "UNSIGNED-PAYLOAD", "s3", "default", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := resp.Header; resp.StatusCode != 200 || h.Get("X-RGW-Quota-Max-Buckets") != "2" || h.Get("X-RGW-Quota-Bucket-Objects") != "2" ||
		h.Get("X-RGW-Quota-User-Size") != "400" || h.Get("X-RGW-Object-Count") != "2" {
		t.Fatalf("HEAD ?read-stats: %d %v", resp.StatusCode, h)
	}
	// disabling a quota lifts it, its limits kept
	if _, err := f.store.SetQuota(ctx, "tester", "bucket", func(q *rgw.Quota) { q.Enabled = false }); err != nil {
		t.Fatal(err)
	}
	if err := put("qa1", "c", 10); code(err) == "QuotaExceeded" {
		t.Fatalf("a disabled bucket quota still refuses: %v", err)
	}
}
