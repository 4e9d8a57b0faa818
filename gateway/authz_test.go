package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestCrossUserAuthorization: another user, even one granted WRITE on the
// bucket, may not change the owner's objects' tags (RGW checks WRITE on
// the object), nor delete, copy from, abort or complete what it has no
// permission on; a missing key's existence is not told to whom may not
// list the bucket, for ?acl, ?tagging and copy sources alike. Nothing a
// refused request touches changes.
func TestCrossUserAuthorization(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c, o := f.s3(f.admin), f.s3(f.other)
	denied := func(what string, err error) {
		t.Helper()
		if code(err) != "AccessDenied" {
			t.Fatalf("other's %s: %v, want AccessDenied", what, err)
		}
	}
	shared, priv, mine := "shared", "private", "others-bucket"
	for _, b := range []string{shared, priv} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(mine)}); err != nil {
		t.Fatal(err)
	}
	// shared: other may write (and list) the bucket, not the owner's objects
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(shared), GrantWrite: aws.String(`id="other"`),
		GrantRead: aws.String(`id="other"`), GrantFullControl: aws.String(`id="tester"`)}); err != nil {
		t.Fatal(err)
	}
	ownerTags := &types.Tagging{TagSet: []types.Tag{{Key: aws.String("class"), Value: aws.String("secret")}}}
	for _, b := range []string{shared, priv} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k"), Body: strings.NewReader("owner's")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(b), Key: aws.String("k"), Tagging: ownerTags}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := o.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(shared), Key: aws.String("k"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("class"), Value: aws.String("public")}}}})
	denied("PutObjectTagging on the owner's object in a bucket it may write", err)
	_, err = o.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: aws.String(shared), Key: aws.String("k")})
	denied("DeleteObjectTagging on the owner's object", err)
	if tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(shared), Key: aws.String("k")}); err != nil ||
		len(tg.TagSet) != 1 || *tg.TagSet[0].Value != "secret" {
		t.Fatalf("owner's tags after refused changes: %+v %v", tg, err)
	}
	// its own object in the shared bucket it may tag
	if _, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(shared), Key: aws.String("o"), Body: strings.NewReader("other's")}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(shared), Key: aws.String("o"), Tagging: ownerTags}); err != nil {
		t.Fatalf("other tags its own object: %v", err)
	}

	// a missing key: NoSuchKey for the owner, AccessDenied for others
	for _, try := range []struct {
		what string
		call func(*s3.Client) error
	}{
		{"GetObjectTagging", func(s *s3.Client) error {
			_, err := s.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(priv), Key: aws.String("nokey")})
			return err
		}},
		{"PutObjectTagging", func(s *s3.Client) error {
			_, err := s.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String(priv), Key: aws.String("nokey"), Tagging: ownerTags})
			return err
		}},
		{"GetObjectAcl", func(s *s3.Client) error {
			_, err := s.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(priv), Key: aws.String("nokey")})
			return err
		}},
		{"CopyObject from it", func(s *s3.Client) error {
			dst := mine
			if s == c {
				dst = priv
			}
			_, err := s.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(dst), Key: aws.String("copy"), CopySource: aws.String(priv + "/nokey")})
			return err
		}},
	} {
		if err := try.call(c); code(err) != "NoSuchKey" {
			t.Fatalf("owner's %s of a missing key: %v, want NoSuchKey", try.what, err)
		}
		denied(try.what+" of a missing key in a private bucket", try.call(o))
	}

	// copy from a private source into its own bucket
	_, err = o.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(mine), Key: aws.String("stolen"), CopySource: aws.String(priv + "/k")})
	denied("CopyObject from a private source", err)
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(priv), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(mine), Key: aws.String("stolen")}); err == nil {
		t.Fatal("a refused copy left an object")
	}

	// deletes
	_, err = o.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(priv), Key: aws.String("k")})
	denied("DeleteObject", err)
	dr, err := o.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(priv), Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("k")}}}})
	if err == nil && (len(dr.Errors) != 1 || *dr.Errors[0].Code != "AccessDenied" || len(dr.Deleted) != 0) {
		t.Fatalf("other's DeleteObjects: %+v", dr)
	} else if err != nil {
		denied("DeleteObjects", err)
	}
	_, err = o.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(priv)})
	denied("DeleteBucket", err)
	if got, _ := get(t, c, priv, "k", ""); string(got) != "owner's" {
		t.Fatalf("owner's object after refused deletes: %q", got)
	}

	// multipart: another user can neither abort nor complete the owner's upload
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(priv), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(priv), Key: aws.String("mp"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("part one")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(priv), Key: aws.String("mp"), UploadId: up.UploadId})
	denied("AbortMultipartUpload", err)
	_, err = o.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(priv), Key: aws.String("mp"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}})
	denied("CompleteMultipartUpload", err)
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(priv), Key: aws.String("mp"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}}); err != nil {
		t.Fatalf("owner completes after the refused abort: %v", err)
	}
}

// TestBodyReadWhole: a body longer than what a handler reads is refused,
// not cut: its signed payload hash is checked on every body acted on.
func TestBodyReadWhole(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "bodies"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	// a Tagging document the signer never saw, padded past the 1 MiB a
	// handler reads, under another body's hash
	doc := `<Tagging><TagSet><Tag><Key>forged</Key><Value>yes</Value></Tag></TagSet></Tagging>` + strings.Repeat(" ", 1<<20)
	signedFor := sha256.Sum256([]byte("<Tagging><TagSet></TagSet></Tagging>"))
	st, body := f.signedPayload(t, f.admin, "PUT", "/"+b+"/k?tagging", nil, doc, hex.EncodeToString(signedFor[:]))
	if st < 400 {
		t.Fatalf("an oversized body under another hash: %d %s", st, body)
	}
	if tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(b), Key: aws.String("k")}); err != nil || len(tg.TagSet) != 0 {
		t.Fatalf("tags after the refused request: %+v %v", tg, err)
	}
	// an honest but oversized document: EntityTooLarge
	if st, body := f.signed(t, f.admin, "PUT", "/"+b+"/k?tagging", nil, doc); st != 400 || !strings.Contains(body, "EntityTooLarge") {
		t.Fatalf("an oversized Tagging document: %d %s", st, body)
	}
}
