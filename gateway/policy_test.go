package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestBucketPolicy: a bucket policy's Allow grants beyond the ACLs, its
// Deny refuses whatever the ACLs grant (the owner included), conditions
// on the request and on the object's tags apply, and only the owner
// manages the policy.
func TestBucketPolicy(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c, o := f.s3(f.admin), f.s3(f.other)
	b := "pol"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	put := func(cl *s3.Client, key, tagging string) error {
		in := &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("data")}
		if tagging != "" {
			in.Tagging = &tagging
		}
		_, err := cl.PutObject(ctx, in)
		return err
	}
	for _, k := range []string{"pub/a", "priv/a"} {
		if err := put(c, k, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := put(c, "tagged", "share=yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: &b}); code(err) != "NoSuchBucketPolicy" {
		t.Fatalf("GET ?policy without one: %v", err)
	}
	setPolicy := func(cl *s3.Client, stmts ...string) error {
		doc := `{"Version":"2012-10-17","Statement":[` + strings.Join(stmts, ",") + `]}`
		_, err := cl.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: &doc})
		return err
	}
	for what, st := range map[string]string{
		"another bucket's resource": `{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}`,
		"an IAM action":             `{"Effect":"Allow","Principal":"*","Action":"iam:CreateUser","Resource":"arn:aws:s3:::pol/*"}`,
		"Allow with NotPrincipal":   `{"Effect":"Allow","NotPrincipal":{"AWS":"x"},"Action":"s3:*","Resource":"arn:aws:s3:::pol/*"}`,
		"an unknown operator":       `{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::pol/*","Condition":{"StringSorta":{"aws:Referer":"x"}}}`,
		"no principal":              `{"Effect":"Allow","Action":"s3:*","Resource":"arn:aws:s3:::pol/*"}`,
		"not JSON":                  `{`,
	} {
		if err := setPolicy(c, st); code(err) != "MalformedPolicy" {
			t.Errorf("%s: %v", what, err)
		}
	}
	anyone := `{"Sid":"read","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pol/pub/*"}`
	listPub := `{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/other"]},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::pol",` +
		`"Condition":{"StringEquals":{"s3:prefix":"pub/"}}}`
	byTag := `{"Effect":"Allow","Principal":{"AWS":"other"},"Action":["s3:GetObject","s3:GetObjectTagging"],"Resource":"arn:aws:s3:::pol/*",` +
		`"Condition":{"StringEquals":{"s3:ExistingObjectTag/share":"yes"}}}`
	denyPut := `{"Effect":"Deny","Principal":"*","Action":"s3:Put*","Resource":"arn:aws:s3:::pol/priv/*"}`
	if err := setPolicy(o, anyone); code(err) != "AccessDenied" {
		t.Fatalf("PUT ?policy by another user: %v", err)
	}
	if err := setPolicy(c, anyone, listPub, byTag, denyPut); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: &b})
	if err != nil || !strings.Contains(*got.Policy, `"Sid":"read"`) || !strings.HasPrefix(*got.Policy, `{"Version":"2012-10-17"`) {
		t.Fatalf("GET ?policy: %v %v", got, err)
	}
	if _, err := o.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: &b}); code(err) != "AccessDenied" {
		t.Errorf("GET ?policy by another user: %v", err)
	}
	anonGet := func(key string) int { st, _ := anon(t, "GET", f.url+"/"+b+"/"+key, ""); return st }
	if st := anonGet("pub/a"); st != 200 {
		t.Errorf("anonymous GET under the public prefix: %d", st)
	}
	if st := anonGet("priv/a"); st != 403 {
		t.Errorf("anonymous GET elsewhere: %d", st)
	}
	if st, _ := anon(t, "GET", f.url+"/"+b, ""); st != 403 {
		t.Errorf("anonymous listing: %d", st)
	}
	if _, err := o.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("pub/")}); err != nil {
		t.Errorf("listing by other with the allowed prefix: %v", err)
	}
	if _, err := o.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("priv/")}); code(err) != "AccessDenied" {
		t.Errorf("listing by other with another prefix: %v", err)
	}
	if _, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("tagged")}); err != nil {
		t.Errorf("other reads the object tagged share=yes: %v", err)
	}
	if _, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("priv/a")}); code(err) != "AccessDenied" {
		t.Errorf("other reads an untagged object: %v", err)
	}
	// Deny beats the ACL's grant and the owner's own rights
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, ACL: types.BucketCannedACLPublicReadWrite}); err != nil {
		t.Fatal(err)
	}
	if err := put(o, "priv/b", ""); code(err) != "AccessDenied" {
		t.Errorf("other writes under the denied prefix despite public-read-write: %v", err)
	}
	if err := put(c, "priv/b", ""); code(err) != "AccessDenied" {
		t.Errorf("the owner writes under the denied prefix: %v", err)
	}
	if err := put(o, "open/b", ""); err != nil {
		t.Errorf("other writes elsewhere under public-read-write: %v", err)
	}
	del, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("open/b")}, {Key: aws.String("priv/a")}}}})
	if err != nil || len(del.Deleted) != 2 {
		t.Errorf("multi-delete by the owner (no Deny on deletes): %+v %v", del, err)
	}
	denyDel := `{"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::pol/pub/*"}`
	if err := setPolicy(c, denyDel); err != nil {
		t.Fatal(err)
	}
	del, err = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("pub/a")}, {Key: aws.String("tagged")}}}})
	if err != nil || len(del.Deleted) != 1 || len(del.Errors) != 1 || *del.Errors[0].Key != "pub/a" || *del.Errors[0].Code != "AccessDenied" {
		t.Errorf("multi-delete with one key denied: %+v %v", del, err)
	}
	if _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("pub/a")}); err != nil {
		t.Errorf("delete after the policy's removal: %v", err)
	}
	// a missing key is NotFound only to whom may list it (s3:prefix: the key)
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, ACL: types.BucketCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	if err := setPolicy(c, `{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::pol","Condition":{"StringLike":{"s3:prefix":"public/*"}}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := o.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("public/x")}); code(err) != "NotFound" {
		t.Errorf("HEAD of a missing key the policy lets other list: %v", err)
	}
	if _, err := o.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("private/x")}); code(err) != "Forbidden" {
		t.Errorf("HEAD of a missing key other may not list: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("private/x")}); code(err) != "NotFound" {
		t.Errorf("HEAD of a missing key by the owner: %v", err)
	}
}

// TestPublicAccessBlock: BlockPublicAcls refuses public ACLs,
// IgnorePublicAcls makes existing ones count for nothing,
// BlockPublicPolicy refuses public policies, RestrictPublicBuckets limits
// a public policy to the owner; GetBucketPolicyStatus tells whether a
// bucket is public.
func TestPublicAccessBlock(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "pab"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	status := func() bool {
		t.Helper()
		out, err := c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: &b})
		if err != nil {
			t.Fatal(err)
		}
		return *out.PolicyStatus.IsPublic
	}
	if status() {
		t.Error("a new bucket is public")
	}
	if _, err := c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: &b}); code(err) != "NoSuchPublicAccessBlockConfiguration" {
		t.Fatalf("GET ?publicAccessBlock without one: %v", err)
	}
	pab := func(blockACLs, ignoreACLs, blockPolicy, restrict bool) {
		t.Helper()
		if _, err := c.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: &b, PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{
			BlockPublicAcls: &blockACLs, IgnorePublicAcls: &ignoreACLs, BlockPublicPolicy: &blockPolicy, RestrictPublicBuckets: &restrict}}); err != nil {
			t.Fatal(err)
		}
	}
	pab(true, false, true, false)
	got, err := c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: &b})
	if err != nil || !*got.PublicAccessBlockConfiguration.BlockPublicAcls || *got.PublicAccessBlockConfiguration.IgnorePublicAcls ||
		!*got.PublicAccessBlockConfiguration.BlockPublicPolicy || *got.PublicAccessBlockConfiguration.RestrictPublicBuckets {
		t.Fatalf("GET ?publicAccessBlock: %+v %v", got, err)
	}
	for _, acl := range []types.BucketCannedACL{types.BucketCannedACLPublicRead, types.BucketCannedACLAuthenticatedRead} {
		if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, ACL: acl}); code(err) != "AccessDenied" {
			t.Errorf("PUT ?acl %s under BlockPublicAcls: %v", acl, err)
		}
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("o"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLPublicRead}); code(err) != "AccessDenied" {
		t.Errorf("PUT public-read object under BlockPublicAcls: %v", err)
	}
	public := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pab/*"}]}`
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: &public}); code(err) != "AccessDenied" {
		t.Errorf("public policy under BlockPublicPolicy: %v", err)
	}
	pinned := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::pab/*",` +
		`"Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/32"}}}]}`
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: &pinned}); err != nil {
		t.Errorf("a policy pinned to an address under BlockPublicPolicy: %v", err)
	}
	if status() {
		t.Error("a policy pinned to an address counts as public")
	}
	if _, err := c.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	// public ACLs, then ignored
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("o"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if !status() {
		t.Error("a public-read bucket is not public")
	}
	anonGet := func(path string) int { st, _ := anon(t, "GET", f.url+path, ""); return st }
	if st, st2 := anonGet("/pab"), anonGet("/pab/o"); st != 200 || st2 != 200 {
		t.Fatalf("anonymous list, GET under public-read: %d %d", st, st2)
	}
	pab(false, true, false, false)
	if st, st2 := anonGet("/pab"), anonGet("/pab/o"); st != 403 || st2 != 403 {
		t.Errorf("anonymous list, GET under IgnorePublicAcls: %d %d", st, st2)
	}
	// a public policy, then restricted
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: &public}); err != nil {
		t.Fatal(err)
	}
	if st := anonGet("/pab/o"); st != 200 {
		t.Errorf("anonymous GET under a public policy: %d", st)
	}
	pab(false, true, false, true)
	if st := anonGet("/pab/o"); st != 403 {
		t.Errorf("anonymous GET under a public policy and RestrictPublicBuckets: %d", st)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("o")}); err != nil {
		t.Errorf("the owner's GET under RestrictPublicBuckets: %v", err)
	}
	// a Deny in the policy applies to the owner's public access block requests
	deny := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:GetBucketPublicAccessBlock","Resource":"arn:aws:s3:::%s"}]}`, b)
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: &deny}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: &b}); code(err) != "AccessDenied" {
		t.Errorf("GET ?publicAccessBlock denied by the policy: %v", err)
	}
}
