package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// iam sends an IAM action (a form POSTed to /, signed for the service
// "iam", as the AWS SDKs send it) as user k.
func (f *fixture) iam(t *testing.T, k rgw.Key, form url.Values) (int, string) {
	t.Helper()
	body := form.Encode()
	req, err := http.NewRequest(http.MethodPost, f.url+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: k.AccessKey, SecretAccessKey: k.SecretKey},
		req, hex.EncodeToString(sum[:]), "iam", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func iamForm(action string, kv ...string) url.Values {
	v := url.Values{"Action": {action}, "Version": {"2010-05-08"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// TestUserPolicies: IAM's user-policy API (Put, Get, List, Delete) by a
// user with the user-policy capability or a policy allowing it, refused
// to others; bad documents and names, unknown users and policies get
// IAM's errors and change nothing; a user's policies grant and deny S3
// requests beside the bucket's ACL (a Deny wins; an Allow opens another
// user's bucket).
func TestUserPolicies(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	admin, other := f.admin, f.other
	allowAll := `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"*","Resource":"*"}}`
	// without the capability: refused
	if st, body := f.iam(t, other, iamForm("PutUserPolicy", "UserName", "tester", "PolicyName", "p", "PolicyDocument", allowAll)); st != http.StatusForbidden || !strings.Contains(body, "AccessDenied") {
		t.Fatalf("PutUserPolicy without the capability: %d %s", st, body)
	}
	if _, err := f.store.SetCaps(ctx, "tester", map[string]string{rgw.CapUserPolicy: "*"}, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		form   url.Values
		status int
		code   string
	}{
		{iamForm("PutUserPolicy", "UserName", "nobody", "PolicyName", "p", "PolicyDocument", allowAll), 404, "NoSuchEntity"},
		{iamForm("PutUserPolicy", "UserName", "other", "PolicyName", strings.Repeat("p", 129), "PolicyDocument", allowAll), 400, "ValidationError"},
		{iamForm("PutUserPolicy", "UserName", "other", "PolicyName", "p", "PolicyDocument", `{"Version":"2012-10-17"}`), 400, "MalformedPolicyDocument"},
		{iamForm("PutUserPolicy", "UserName", "other", "PolicyName", "p", "PolicyDocument",
			`{"Version":"2012-10-17","Statement":{"Effect":"Allow","Principal":"*","Action":"*","Resource":"*"}}`), 400, "MalformedPolicyDocument"},
		{iamForm("PutUserPolicy", "UserName", "other", "PolicyName", "p", "PolicyDocument",
			`{"Version":"2012-10-17","Statement":[{"Sid":"a","Effect":"Allow","Action":"*","Resource":"*"},{"Sid":"a","Effect":"Allow","Action":"*","Resource":"*"}]}`), 400, "MalformedPolicyDocument"},
		{iamForm("GetUserPolicy", "UserName", "other", "PolicyName", "none"), 404, "NoSuchEntity"},
		{iamForm("DeleteUserPolicy", "UserName", "other", "PolicyName", "none"), 404, "NoSuchEntity"},
		{iamForm("ListUserPolicies", "UserName", "nobody"), 404, "NoSuchEntity"},
		{iamForm("CreateUser", "UserName", "x"), 400, "InvalidAction"},
	} {
		if st, body := f.iam(t, admin, c.form); st != c.status || !strings.Contains(body, "<Code>"+c.code+"</Code>") {
			t.Fatalf("%s %v: %d %s; want %d %s", c.form.Get("Action"), c.form, st, body, c.status, c.code)
		}
	}
	if names, err := f.store.UserPolicyNames(ctx, "other"); err != nil || len(names) != 0 {
		t.Fatalf("policies after refused requests: %v %v", names, err)
	}
	// the tester's bucket: other may not list it, until a policy allows
	b := "owned"
	c := f.s3(admin)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
		t.Fatal(err)
	}
	oc := f.s3(other)
	if _, err := oc.ListObjects(ctx, &s3.ListObjectsInput{Bucket: &b}); code(err) != "AccessDenied" {
		t.Fatalf("listing another user's bucket: %v", err)
	}
	allowList := `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":["s3:ListBucket","s3:GetObject"],"Resource":["arn:aws:s3:::owned","arn:aws:s3:::owned/*"]}}`
	if st, body := f.iam(t, admin, iamForm("PutUserPolicy", "UserName", "other", "PolicyName", "list", "PolicyDocument", allowList)); st != 200 {
		t.Fatalf("PutUserPolicy: %d %s", st, body)
	}
	if st, body := f.iam(t, admin, iamForm("GetUserPolicy", "UserName", "other", "PolicyName", "list")); st != 200 || !strings.Contains(body, "s3:ListBucket") {
		t.Fatalf("GetUserPolicy: %d %s", st, body)
	}
	if l, err := oc.ListObjects(ctx, &s3.ListObjectsInput{Bucket: &b}); err != nil || len(l.Contents) != 1 {
		t.Fatalf("listing another user's bucket with a policy allowing it: %v", err)
	}
	if _, err := oc.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("x"), Body: strings.NewReader("v")}); code(err) != "AccessDenied" {
		t.Fatalf("a PUT the policy does not allow: %v", err)
	}
	// a Deny wins over the owner's own ACL
	deny := `{"Version":"2012-10-17","Statement":{"Effect":"Deny","Action":["s3:ListAllMyBuckets","s3:DeleteObject"],"Resource":"arn:aws:s3:::*"}}`
	if st, body := f.iam(t, admin, iamForm("PutUserPolicy", "UserName", "tester", "PolicyName", "deny", "PolicyDocument", deny)); st != 200 {
		t.Fatalf("PutUserPolicy deny: %d %s", st, body)
	}
	if _, err := c.ListBuckets(ctx, &s3.ListBucketsInput{}); code(err) != "AccessDenied" {
		t.Fatalf("ListBuckets denied by the user's policy: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k")}); code(err) != "AccessDenied" {
		t.Fatalf("a DELETE denied by the user's policy: %v", err)
	}
	if st, body := f.iam(t, admin, iamForm("ListUserPolicies", "UserName", "tester")); st != 200 || !strings.Contains(body, "<member>deny</member>") {
		t.Fatalf("ListUserPolicies: %d %s", st, body)
	}
	if st, body := f.iam(t, admin, iamForm("DeleteUserPolicy", "UserName", "tester", "PolicyName", "deny")); st != 200 {
		t.Fatalf("DeleteUserPolicy: %d %s", st, body)
	}
	if _, err := c.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Fatalf("ListBuckets once the Deny is gone: %v", err)
	}
	// a policy allowing the IAM actions on oneself, without the capability
	self := `{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":["iam:GetUserPolicy","iam:ListUserPolicies","iam:DeleteUserPolicy"],"Resource":"arn:aws:iam:::user/other"}}`
	if st, body := f.iam(t, admin, iamForm("PutUserPolicy", "UserName", "other", "PolicyName", "self", "PolicyDocument", self)); st != 200 {
		t.Fatalf("PutUserPolicy self: %d %s", st, body)
	}
	if st, body := f.iam(t, other, iamForm("ListUserPolicies", "UserName", "other")); st != 200 || !strings.Contains(body, "<member>self</member>") {
		t.Fatalf("ListUserPolicies of oneself by a policy: %d %s", st, body)
	}
	if st, _ := f.iam(t, other, iamForm("ListUserPolicies", "UserName", "tester")); st != http.StatusForbidden {
		t.Fatalf("ListUserPolicies of another user by a policy on oneself: %d", st)
	}
	// an S3 request signed for iam is refused
	req, err := http.NewRequest(http.MethodGet, f.url+"/"+b, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(nil)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: admin.AccessKey, SecretAccessKey: admin.SecretKey},
		req, hex.EncodeToString(sum[:]), "iam", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an S3 listing signed for iam: %d; want 400", resp.StatusCode)
	}
}
