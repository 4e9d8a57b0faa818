package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestTenants: users of two tenants and of the legacy tenant each own a
// bucket "photos" of their own; bare names resolve in the caller's
// tenant, "TENANT:BUCKET" and ":BUCKET" reach the others' only as their
// ACLs and policies allow; policies' ARNs and principals carry tenants as
// RGW's do; bad tenant input is refused with nothing changed.
func TestTenants(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	users := map[string]*s3.Client{"": f.s3(f.admin)}
	for _, uid := range []string{"testx$alice", "testy$alice", "testx$bob"} {
		u, err := f.store.CreateUser(ctx, uid, "", "", rgw.Key{})
		if err != nil {
			t.Fatal(err)
		}
		users[uid] = f.s3(u.Keys[0])
	}
	legacy, xa, ya, xb := users[""], users["testx$alice"], users["testy$alice"], users["testx$bob"]
	for _, bad := range []string{"te-st$u", "$u", "a$b$c"} {
		if _, err := f.store.CreateUser(ctx, bad, "", "", rgw.Key{}); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("user id %q: %v, want ErrInvalid", bad, err)
		}
	}

	// one "photos" per tenant, each with its own object
	b := "photos"
	for uid, c := range map[string]*s3.Client{"tester": legacy, "testx$alice": xa, "testy$alice": ya} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
			t.Fatalf("%s: create %s: %v", uid, b, err)
		}
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: strings.NewReader("of " + uid)}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(c *s3.Client, bucket, key string) (string, error) {
		o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			return "", err
		}
		defer o.Body.Close()
		body, err := io.ReadAll(o.Body)
		return string(body), err
	}
	for _, c := range []struct {
		c      *s3.Client
		bucket string
		want   string
	}{{legacy, b, "of tester"}, {xa, b, "of testx$alice"}, {ya, b, "of testy$alice"},
		{xa, "testx:" + b, "of testx$alice"}, {legacy, ":" + b, "of tester"}} {
		if got, err := read(c.c, c.bucket, "k"); err != nil || got != c.want {
			t.Fatalf("GET %s/k: %q %v, want %q", c.bucket, got, err, c.want)
		}
	}
	// answers name the bucket without its tenant
	lb, err := xa.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 1 || *lb.Buckets[0].Name != b || *lb.Owner.ID != "testx$alice" {
		t.Fatalf("testx$alice's buckets: %+v %v", lb, err)
	}
	lo, err := xa.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b})
	if err != nil || *lo.Name != b || len(lo.Contents) != 1 {
		t.Fatalf("list testx's photos: %+v %v", lo, err)
	}
	if n, err := xb.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil || len(n.Buckets) != 0 {
		t.Fatalf("testx$bob owns no bucket: %+v %v", n, err)
	}

	// other tenants' buckets: refused until a policy grants
	for _, c := range []struct {
		c      *s3.Client
		bucket string
	}{{legacy, "testx:" + b}, {ya, "testx:" + b}, {xa, ":" + b}, {xa, "testy:" + b}, {xb, b}} {
		if _, err := read(c.c, c.bucket, "k"); code(err) != "AccessDenied" && code(err) != "NoSuchBucket" {
			t.Fatalf("GET %s/k across tenants: %v, want AccessDenied", c.bucket, err)
		}
	}
	if _, err := read(xb, b, "k"); code(err) != "AccessDenied" {
		t.Fatalf("testx$bob reading testx's photos: %v, want AccessDenied", err)
	}
	policy := func(principal, action, resource string) string {
		return fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":%q},"Action":%q,"Resource":%q}]}`,
			principal, action, resource)
	}
	// testx's photos: listing and reads for anyone; "arn:aws:s3:::photos" is testx's own
	if _, err := xa.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b,
		Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:ListBucket","s3:GetObject"],"Resource":["arn:aws:s3:::photos","arn:aws:s3::testx:photos/*"]}]}`)}); err != nil {
		t.Fatal(err)
	}
	tb := "testx:" + b
	if lo, err := legacy.ListObjects(ctx, &s3.ListObjectsInput{Bucket: &tb}); err != nil || len(lo.Contents) != 1 || *lo.Name != b {
		t.Fatalf("legacy user listing testx:photos under its policy: %+v %v", lo, err)
	}
	if got, err := read(ya, tb, "k"); err != nil || got != "of testx$alice" {
		t.Fatalf("testy$alice reading testx:photos under its policy: %q %v", got, err)
	}
	// a policy on another tenant's resources, or a cross-tenant bucket name: refused
	for _, doc := range []string{policy("*", "s3:GetObject", "arn:aws:s3::testy:photos/*"), policy("*", "s3:GetObject", "arn:aws:s3:::other/*")} {
		if _, err := xa.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: &doc}); code(err) != "MalformedPolicy" {
			t.Fatalf("policy %s: %v, want MalformedPolicy", doc, err)
		}
	}
	if got, err := read(legacy, tb, "k"); err != nil || got != "of testx$alice" {
		t.Fatalf("a refused policy changed the one in place: %q %v", got, err)
	}
	// the legacy tenant's photos: a user principal with its tenant, then the tenant's root
	if _, err := legacy.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: aws.String(policy("arn:aws:iam::testx:user/alice", "s3:GetObject", "arn:aws:s3:::photos/*"))}); err != nil {
		t.Fatal(err)
	}
	lb2 := ":" + b
	if got, err := read(xa, lb2, "k"); err != nil || got != "of tester" {
		t.Fatalf("testx$alice reading :photos as the policy's principal: %q %v", got, err)
	}
	for _, c := range []*s3.Client{ya, xb} {
		if _, err := read(c, lb2, "k"); code(err) != "AccessDenied" {
			t.Fatalf("a user other than the principal reading :photos: %v", err)
		}
	}
	if _, err := legacy.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: aws.String(policy("arn:aws:iam::testx:root", "s3:GetObject", "arn:aws:s3:::photos/*"))}); err != nil {
		t.Fatal(err)
	}
	if got, err := read(xb, lb2, "k"); err != nil || got != "of tester" {
		t.Fatalf("testx$bob reading :photos under testx's root: %q %v", got, err)
	}
	if _, err := read(ya, lb2, "k"); code(err) != "AccessDenied" {
		t.Fatalf("testy$alice reading :photos under testx's root: %v", err)
	}
	// a copy from another tenant's bucket into one's own
	src := tb + "/k"
	if _, err := legacy.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("copy"), CopySource: &src}); err != nil {
		t.Fatal(err)
	}
	if got, err := read(legacy, b, "copy"); err != nil || got != "of testx$alice" {
		t.Fatalf("copy from testx:photos: %q %v", got, err)
	}

	// a CORS preflight of a presigned URL finds the bucket in its user's tenant
	if _, err := xa.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: &b, CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"example"}}}}}); err != nil {
		t.Fatal(err)
	}
	ps, err := s3.NewPresignClient(xa).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	preflight := func(url string) (int, string) {
		req, _ := http.NewRequest(http.MethodOptions, url, nil)
		req.Header.Set("Origin", "example")
		req.Header.Set("Access-Control-Request-Method", "GET")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin")
	}
	if st, origin := preflight(ps.URL); st != http.StatusOK || origin != "example" {
		t.Fatalf("preflight of testx$alice's presigned URL: %d %q", st, origin)
	}
	if st, _ := preflight(f.url + "/" + b + "/k"); st != http.StatusForbidden { // the legacy photos: no CORS rules
		t.Fatalf("preflight of the legacy tenant's photos: %d", st)
	}
	if st, origin := preflight(f.url + "/testx:" + b + "/k"); st != http.StatusOK || origin != "example" {
		t.Fatalf("preflight of testx:photos: %d %q", st, origin)
	}

	// a browser POST upload signed by a tenant's user lands in its tenant's bucket
	ua, err := f.store.GetUser(ctx, "testx$alice")
	if err != nil {
		t.Fatal(err)
	}
	pol := postPolicy(time.Hour, map[string]string{"bucket": b}, []any{"starts-with", "$key", ""})
	resp := postForm(t, f.url+"/"+b, [][2]string{{"key", "posted"}, {"AWSAccessKeyId", ua.Keys[0].AccessKey}, {"policy", pol},
		{"signature", sigV2Policy(ua.Keys[0].SecretKey, pol)}}, "x", "by testx$alice")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST upload by testx$alice: %d", resp.StatusCode)
	}
	if got, err := read(xa, b, "posted"); err != nil || got != "by testx$alice" {
		t.Fatalf("testx's photos after testx$alice's POST: %q %v", got, err)
	}
	if _, err := read(legacy, b, "posted"); code(err) != "NoSuchKey" {
		t.Fatalf("the legacy photos after testx$alice's POST: %v", err)
	}

	// a user's own policies open its own tenant only: testy$alice allowed
	// everything by its policies still cannot read testx's bucket beyond
	// its policy, nor manage another tenant's users' policies
	allowAll := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*","iam:*"],"Resource":"*"}]}`
	if err := f.store.PutUserPolicy(ctx, "testy$alice", "all", allowAll); err != nil {
		t.Fatal(err)
	}
	if _, err := xa.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := read(ya, tb, "k"); code(err) != "AccessDenied" {
		t.Fatalf("testy$alice reading testx:photos with an allow-all user policy: %v", err)
	}
	if got, err := read(ya, b, "k"); err != nil || got != "of testy$alice" {
		t.Fatalf("testy$alice reading its own photos: %q %v", got, err)
	}
	uy, err := f.store.GetUser(ctx, "testy$alice")
	if err != nil {
		t.Fatal(err)
	}
	if st, body := f.iam(t, uy.Keys[0], iamForm("PutUserPolicy", "UserName", "testx$bob", "PolicyName", "p", "PolicyDocument", allowAll)); st != http.StatusForbidden {
		t.Fatalf("testy$alice putting a policy on testx$bob: %d %s", st, body)
	}
	if st, body := f.iam(t, uy.Keys[0], iamForm("ListUserPolicies", "UserName", "alice")); st != http.StatusOK || !strings.Contains(body, "<member>all</member>") {
		t.Fatalf("testy$alice listing its own (same-tenant) policies: %d %s", st, body)
	}

	// bad tenant input: nothing created
	for _, c := range []struct {
		c      *s3.Client
		bucket string
		code   string
	}{{xa, "testy:fresh", "AccessDenied"}, {xa, ":fresh", "AccessDenied"}, {legacy, "testx:fresh", "AccessDenied"}, {xa, "te-st:fresh", "InvalidBucketName"}} {
		if _, err := c.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &c.bucket}); code(err) != c.code {
			t.Fatalf("create %s: %v, want %s", c.bucket, err, c.code)
		}
	}
	for _, key := range []string{"testy/fresh", "fresh", "testx/fresh"} {
		if _, err := f.store.GetBucket(ctx, key); err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
			t.Fatalf("bucket %s after refused creations: %v", key, err)
		}
	}
	// the store keeps each tenant's bucket under its key
	for _, key := range []string{"photos", "testx/photos", "testy/photos"} {
		bk, err := f.store.GetBucket(ctx, key)
		if err != nil || bk.S3Name() != "photos" || rgw.BucketKey(bk.Tenant(), bk.S3Name()) != key {
			t.Fatalf("bucket %s: %+v %v", key, bk, err)
		}
	}
}
