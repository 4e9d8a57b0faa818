package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestObjectOwnership: a bucket's ownership controls are stored, shown and
// removed by its owner and decide who owns what another user writes into
// it: the writer (ObjectWriter, and a bucket without controls), the
// bucket's owner when the writer grants it bucket-owner-full-control
// (BucketOwnerPreferred), or always the bucket's owner, with ACLs refused
// and granting nothing (BucketOwnerEnforced), set at creation or later.
func TestObjectOwnership(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c, o := f.s3(f.admin), f.s3(f.other)
	ownership := func(b string) string {
		t.Helper()
		got, err := c.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: &b})
		if code(err) == "OwnershipControlsNotFoundError" {
			return ""
		}
		if err != nil || len(got.OwnershipControls.Rules) != 1 {
			t.Fatalf("GET ?ownershipControls of %s: %+v %v", b, got, err)
		}
		return string(got.OwnershipControls.Rules[0].ObjectOwnership)
	}
	setOwnership := func(b string, v types.ObjectOwnership) error {
		_, err := c.PutBucketOwnershipControls(ctx, &s3.PutBucketOwnershipControlsInput{Bucket: &b,
			OwnershipControls: &types.OwnershipControls{Rules: []types.OwnershipControlsRule{{ObjectOwnership: v}}}})
		return err
	}
	public := func(b string) { // the other user may do anything in b
		t.Helper()
		doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"*","Resource":["arn:aws:s3:::` + b + `","arn:aws:s3:::` + b + `/*"]}]}`
		if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: &doc}); err != nil {
			t.Fatal(err)
		}
	}
	// the owner of key as its ACL shows it, and of a multipart upload
	owner := func(b, key string) string {
		t.Helper()
		acl, err := o.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: &b, Key: &key})
		if err != nil {
			t.Fatalf("GetObjectAcl %s/%s: %v", b, key, err)
		}
		return *acl.Owner.ID
	}
	put := func(b, key string, acl types.ObjectCannedACL) error {
		_, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("x"), ACL: acl})
		return err
	}
	uploadOwner := func(b, key string, acl types.ObjectCannedACL) (string, error) {
		t.Helper()
		u, err := o.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key, ACL: acl})
		if err != nil {
			return "", err
		}
		parts, err := o.ListParts(ctx, &s3.ListPartsInput{Bucket: &b, Key: &key, UploadId: u.UploadId})
		if err != nil {
			t.Fatal(err)
		}
		if *parts.Initiator.ID != "other" {
			t.Fatalf("ListParts: initiator %s, want the uploader (other)", *parts.Initiator.ID)
		}
		return *parts.Owner.ID, nil
	}

	// no controls: 404, and the writer owns its objects
	plain := "plain"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &plain}); err != nil {
		t.Fatal(err)
	}
	if got := ownership(plain); got != "" {
		t.Fatalf("a new bucket's ownership controls: %q, want none", got)
	}
	if _, err := o.PutBucketOwnershipControls(ctx, &s3.PutBucketOwnershipControlsInput{Bucket: &plain,
		OwnershipControls: &types.OwnershipControls{Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipObjectWriter}}}}); code(err) != "AccessDenied" {
		t.Fatalf("PUT ?ownershipControls by another user (no policy yet): %v", err)
	}
	// a policy's actions: s3:GetBucketOwnershipControls reads,
	// s3:PutBucketOwnershipControls puts and deletes
	getOnly := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/other"]},"Action":"s3:GetBucketOwnershipControls","Resource":"arn:aws:s3:::` + plain + `"}]}`
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &plain, Policy: &getOnly}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: &plain}); code(err) != "OwnershipControlsNotFoundError" {
		t.Fatalf("GET ?ownershipControls by another user allowed s3:GetBucketOwnershipControls: %v", err)
	}
	if _, err := o.DeleteBucketOwnershipControls(ctx, &s3.DeleteBucketOwnershipControlsInput{Bucket: &plain}); code(err) != "AccessDenied" {
		t.Fatalf("DELETE ?ownershipControls by another user allowed only s3:GetBucketOwnershipControls: %v", err)
	}
	public(plain)
	if err := put(plain, "k", types.ObjectCannedACLBucketOwnerFullControl); err != nil || owner(plain, "k") != "other" {
		t.Fatalf("no controls: PUT with bucket-owner-full-control: %v, owner %s; want the writer", err, owner(plain, "k"))
	}
	if err := setOwnership(plain, "Nonsense"); code(err) != "MalformedXML" {
		t.Fatalf("PUT ?ownershipControls Nonsense: %v", err)
	}

	// BucketOwnerPreferred: bucket-owner-full-control hands the object over
	if err := setOwnership(plain, types.ObjectOwnershipBucketOwnerPreferred); err != nil || ownership(plain) != "BucketOwnerPreferred" {
		t.Fatalf("PUT ?ownershipControls BucketOwnerPreferred: %v, now %q", err, ownership(plain))
	}
	if err := put(plain, "given", types.ObjectCannedACLBucketOwnerFullControl); err != nil || owner(plain, "given") != "tester" {
		t.Fatalf("preferred: PUT with bucket-owner-full-control: %v, owner %s; want the bucket's", err, owner(plain, "given"))
	}
	if err := put(plain, "kept", types.ObjectCannedACLPublicRead); err != nil || owner(plain, "kept") != "other" {
		t.Fatalf("preferred: PUT public-read: %v, owner %s; want the writer", err, owner(plain, "kept"))
	}
	if u, err := uploadOwner(plain, "mp", types.ObjectCannedACLBucketOwnerFullControl); err != nil || u != "tester" {
		t.Fatalf("preferred: multipart upload with bucket-owner-full-control: %v, owner %s", err, u)
	}

	// BucketOwnerEnforced: refused while the bucket's ACL is public
	pub := "public-acl"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &pub, ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if err := setOwnership(pub, types.ObjectOwnershipBucketOwnerEnforced); code(err) != "InvalidBucketAclWithObjectOwnership" {
		t.Fatalf("BucketOwnerEnforced on a public-read bucket: %v", err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("enforced-public"), ACL: types.BucketCannedACLPublicRead,
		ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}); code(err) != "InvalidBucketAclWithObjectOwnership" {
		t.Fatalf("CreateBucket public-read with BucketOwnerEnforced: %v", err)
	}
	// ACLs stop granting: a public-read object is no longer public
	acls := "acls"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &acls}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &acls, Key: aws.String("pub"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if st, _ := anon(t, "GET", f.url+"/"+acls+"/pub", ""); st != 200 {
		t.Fatalf("anonymous GET of a public-read object: %d", st)
	}
	if err := setOwnership(acls, types.ObjectOwnershipBucketOwnerEnforced); err != nil {
		t.Fatal(err)
	}
	if st, _ := anon(t, "GET", f.url+"/"+acls+"/pub", ""); st != 403 {
		t.Fatalf("anonymous GET of a public-read object once ACLs are disabled: %d", st)
	}
	// the bucket above: the bucket's owner owns everything written
	if err := setOwnership(plain, types.ObjectOwnershipBucketOwnerEnforced); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{plain, "enforced"} {
		if b == "enforced" {
			if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b, ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}); err != nil {
				t.Fatal(err)
			}
			public(b)
		}
		if got := ownership(b); got != "BucketOwnerEnforced" {
			t.Fatalf("%s: ownership %q", b, got)
		}
		for _, acl := range []types.ObjectCannedACL{"", types.ObjectCannedACLBucketOwnerFullControl} {
			if err := put(b, "e", acl); err != nil || owner(b, "e") != "tester" {
				t.Fatalf("%s: enforced: PUT with ACL %q: %v, owner %s; want the bucket's", b, acl, err, owner(b, "e"))
			}
		}
		if err := put(b, "p", types.ObjectCannedACLPrivate); code(err) != "AccessControlListNotSupported" {
			t.Fatalf("%s: enforced: PUT private: %v", b, err)
		}
		if _, err := uploadOwner(b, "mp", types.ObjectCannedACLPublicRead); code(err) != "AccessControlListNotSupported" {
			t.Fatalf("%s: enforced: multipart upload public-read: %v", b, err)
		}
		if u, err := uploadOwner(b, "mp", ""); err != nil || u != "tester" {
			t.Fatalf("%s: enforced: multipart upload: %v, owner %s", b, err, u)
		}
		if _, err := o.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("c"), CopySource: aws.String(b + "/e")}); err != nil || owner(b, "c") != "tester" {
			t.Fatalf("%s: enforced: copy: %v, owner %s", b, err, owner(b, "c"))
		}
		if _, err := o.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("c"), CopySource: aws.String(b + "/e"), ACL: types.ObjectCannedACLPrivate}); code(err) != "AccessControlListNotSupported" {
			t.Fatalf("%s: enforced: copy with ACL private: %v", b, err)
		}
		if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &b, ACL: types.BucketCannedACLPrivate}); code(err) != "AccessControlListNotSupported" {
			t.Fatalf("%s: enforced: PutBucketAcl: %v", b, err)
		}
		if _, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: &b, Key: aws.String("e"), ACL: types.ObjectCannedACLPrivate}); code(err) != "AccessControlListNotSupported" {
			t.Fatalf("%s: enforced: PutObjectAcl: %v", b, err)
		}
	}

	// removed: no controls again, and the writer owns what it writes
	for range 2 { // deleting twice is fine
		if _, err := c.DeleteBucketOwnershipControls(ctx, &s3.DeleteBucketOwnershipControlsInput{Bucket: &plain}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ownership(plain); got != "" {
		t.Fatalf("after DELETE ?ownershipControls: %q", got)
	}
	if err := put(plain, "after", types.ObjectCannedACLBucketOwnerFullControl); err != nil || owner(plain, "after") != "other" {
		t.Fatalf("after removal: PUT: %v, owner %s; want the writer", err, owner(plain, "after"))
	}
}
