package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestRequesterPays: a bucket is BucketOwner-pays until its owner sets
// Payer Requester; then another user's requests (read or write, bucket or
// object) are refused unless they send x-amz-request-payer: requester and
// are answered x-amz-request-charged, anonymous ones are refused even
// where an ACL grants AllUsers, and the owner's need nothing; a bad Payer
// and another user's PUT ?requestPayment change nothing; a Requester Pays
// bucket may not receive access logs.
func TestRequesterPays(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c, o := f.s3(f.admin), f.s3(f.other)
	b, src := "pays", "logged"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b, ACL: types.BucketCannedACLPublicReadWrite}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &src}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: strings.NewReader("v"), ACL: types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	payer := func() types.Payer {
		t.Helper()
		out, err := c.GetBucketRequestPayment(ctx, &s3.GetBucketRequestPaymentInput{Bucket: &b})
		if err != nil {
			t.Fatalf("GET ?requestPayment: %v", err)
		}
		return out.Payer
	}
	if p := payer(); p != types.PayerBucketOwner {
		t.Fatalf("a new bucket's payer: %q", p)
	}
	// before: the other user and anonymous read through the ACLs
	if _, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k")}); err != nil {
		t.Fatalf("GET by another user of a BucketOwner-pays bucket: %v", err)
	}
	if st, _ := anon(t, "GET", f.url+"/"+b+"/k", ""); st != 200 {
		t.Fatalf("anonymous GET of a BucketOwner-pays bucket: %d", st)
	}
	// refused: a bad Payer, another user
	if st, body := f.signed(t, f.admin, "PUT", "/"+b+"?requestPayment", nil, "<RequestPaymentConfiguration><Payer>Nobody</Payer></RequestPaymentConfiguration>"); !strings.Contains(body, "<Code>MalformedXML</Code>") {
		t.Fatalf("PUT ?requestPayment Nobody: %d %s", st, body)
	}
	if st, body := f.signed(t, f.admin, "PUT", "/"+b+"?requestPayment", nil, "<RequestPaymentConfiguration>"); !strings.Contains(body, "<Code>MalformedXML</Code>") {
		t.Fatalf("PUT ?requestPayment with malformed XML: %d %s", st, body)
	}
	set := func(cl *s3.Client, p types.Payer) error {
		_, err := cl.PutBucketRequestPayment(ctx, &s3.PutBucketRequestPaymentInput{Bucket: &b, RequestPaymentConfiguration: &types.RequestPaymentConfiguration{Payer: p}})
		return err
	}
	if err := set(o, types.PayerRequester); code(err) != "AccessDenied" {
		t.Fatalf("PUT ?requestPayment by another user: %v", err)
	}
	if p := payer(); p != types.PayerBucketOwner {
		t.Fatalf("after refused changes the payer is %q", p)
	}
	if err := set(c, types.PayerRequester); err != nil {
		t.Fatal(err)
	}
	if p := payer(); p != types.PayerRequester {
		t.Fatalf("after PUT Requester the payer is %q", p)
	}
	// the other user: refused without the header, served with it
	if _, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k")}); code(err) != "AccessDenied" {
		t.Fatalf("GET by another user without x-amz-request-payer: %v", err)
	}
	if _, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("theirs"), Body: strings.NewReader("x")}); code(err) != "AccessDenied" {
		t.Fatalf("PUT by another user without x-amz-request-payer: %v", err)
	}
	if _, err := o.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b}); code(err) != "AccessDenied" {
		t.Fatalf("listing by another user without x-amz-request-payer: %v", err)
	}
	out, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k"), RequestPayer: types.RequestPayerRequester})
	if err != nil {
		t.Fatalf("GET by another user with x-amz-request-payer: %v", err)
	}
	body, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(body) != "v" || out.RequestCharged != types.RequestChargedRequester {
		t.Fatalf("GET by another user with x-amz-request-payer: %q, charged %q", body, out.RequestCharged)
	}
	if _, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("theirs"), Body: strings.NewReader("x"), RequestPayer: types.RequestPayerRequester}); err != nil {
		t.Fatalf("PUT by another user with x-amz-request-payer: %v", err)
	}
	// refused for another reason (the object's ACL grants no READ_ACP):
	// not charged
	_, err = o.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: &b, Key: aws.String("k"), RequestPayer: types.RequestPayerRequester})
	var re *smithyhttp.ResponseError
	if code(err) != "AccessDenied" || !errors.As(err, &re) {
		t.Fatalf("GET ?acl by another user without READ_ACP: %v", err)
	}
	if charged := re.Response.Header.Get("x-amz-request-charged"); charged != "" {
		t.Fatalf("a refused GET ?acl was answered x-amz-request-charged: %q", charged)
	}
	// a missing key: AccessDenied without the header (not NoSuchKey)
	if _, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("missing")}); code(err) != "AccessDenied" {
		t.Fatalf("GET of a missing key by another user without x-amz-request-payer: %v", err)
	}
	// a multi-object delete: refused whole without the header; with it,
	// its keys are deleted in parallel
	var objs []types.ObjectIdentifier
	for _, k := range []string{"d1", "d2", "d3", "d4"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: strings.NewReader(k)}); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, types.ObjectIdentifier{Key: aws.String(k)})
	}
	if _, err := o.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: objs}}); code(err) != "AccessDenied" {
		t.Fatalf("DeleteObjects by another user without x-amz-request-payer: %v", err)
	}
	del, err := o.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: objs}, RequestPayer: types.RequestPayerRequester})
	if err != nil || len(del.Deleted) != len(objs) || len(del.Errors) != 0 {
		t.Fatalf("DeleteObjects by another user with x-amz-request-payer: %v, %d deleted, errors %v", err, len(del.Deleted), del.Errors)
	}
	// a presigned URL carries x-amz-request-payer as a query parameter
	for _, tc := range []struct {
		payer types.RequestPayer
		want  int
	}{{"", http.StatusForbidden}, {types.RequestPayerRequester, http.StatusOK}} {
		ps, err := s3.NewPresignClient(o).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k"), RequestPayer: tc.payer}, s3.WithPresignExpires(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if tc.payer != "" && !strings.Contains(ps.URL, "x-amz-request-payer=requester") {
			t.Fatalf("the presigned URL does not carry the payer: %s", ps.URL)
		}
		if st, _ := anon(t, "GET", ps.URL, ""); st != tc.want {
			t.Fatalf("another user's presigned GET, payer %q: %d, want %d", tc.payer, st, tc.want)
		}
	}
	// anonymous: refused even though the ACLs grant AllUsers
	if st, _ := anon(t, "GET", f.url+"/"+b+"/k", ""); st != 403 {
		t.Fatalf("anonymous GET of a Requester Pays bucket: %d", st)
	}
	// the owner needs no header
	if out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k")}); err != nil || out.RequestCharged != "" {
		t.Fatalf("GET by the owner of a Requester Pays bucket: %v", err)
	} else {
		out.Body.Close()
	}
	// no access logs into it
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &src, BucketLoggingStatus: &types.BucketLoggingStatus{
		LoggingEnabled: &types.LoggingEnabled{TargetBucket: &b, TargetPrefix: aws.String("log/")}}}); code(err) != "InvalidArgument" {
		t.Fatalf("logging into a Requester Pays bucket: %v", err)
	}
	// back to BucketOwner: anonymous reads again
	if err := set(c, types.PayerBucketOwner); err != nil {
		t.Fatal(err)
	}
	if st, _ := anon(t, "GET", f.url+"/"+b+"/k", ""); st != 200 {
		t.Fatalf("anonymous GET after Payer BucketOwner: %d", st)
	}
}
