package gateway_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestGetObjectAttributes: GET ?attributes answers what was asked of a
// simple object (no parts) and of a multipart one, whose parts page by
// max-parts and part-number-marker; another user needs read access.
func TestGetObjectAttributes(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "attrs"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	all := []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts,
		types.ObjectAttributesStorageClass, types.ObjectAttributesObjectSize}
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("simple"), Body: strings.NewReader("foo")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: aws.String("simple"), ObjectAttributes: all})
	if err != nil || *got.ObjectSize != 3 || *got.ETag != strings.Trim(*put.ETag, `"`) || got.StorageClass != types.StorageClassStandard ||
		got.ObjectParts != nil || got.LastModified == nil {
		t.Fatalf("attributes of a 3-byte object: %+v %v", got, err)
	}
	got, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: aws.String("simple"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectSize}})
	if err != nil || *got.ObjectSize != 3 || got.ETag != nil || got.StorageClass != "" {
		t.Fatalf("ObjectSize alone: %+v %v", got, err)
	}
	if _, err := f.s3(f.other).GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: aws.String("simple"), ObjectAttributes: all}); code(err) != "AccessDenied" {
		t.Fatalf("another user's GetObjectAttributes of a private object: %v", err)
	}
	// a policy must allow both s3:GetObjectAttributes and s3:GetObject, as AWS's
	for _, tc := range []struct{ actions, want string }{
		{`"s3:GetObjectAttributes"`, "AccessDenied"},
		{`"s3:GetObject"`, "AccessDenied"},
		{`["s3:GetObject","s3:GetObjectAttributes"]`, ""},
	} {
		doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/other"]},"Action":` + tc.actions + `,"Resource":"arn:aws:s3:::` + b + `/*"}]}`
		if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &b, Policy: &doc}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s3(f.other).GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: aws.String("simple"), ObjectAttributes: all}); code(err) != tc.want {
			t.Fatalf("another user's GetObjectAttributes allowed %s: %v, want %q", tc.actions, err, tc.want)
		}
	}
	if _, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: aws.String("missing"), ObjectAttributes: all}); code(err) != "NoSuchKey" {
		t.Fatalf("GetObjectAttributes of a missing key: %v", err)
	}
	if st, _ := f.signed(t, f.admin, "PUT", "/"+b+"/simple?attributes", nil, "overwrite"); st != 405 {
		t.Fatalf("PUT ?attributes: %d, want 405 (and the object untouched)", st)
	}
	if _, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: aws.String("simple"), ObjectAttributes: all,
		MaxParts: aws.Int32(0)}); code(err) != "InvalidArgument" {
		t.Fatalf("x-amz-max-parts 0: %v", err)
	}

	// three parts: 5 MiB, 5 MiB, 1 KiB
	key := "multi"
	u, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int64{5 << 20, 5 << 20, 1 << 10}
	var done []types.CompletedPart
	for i, n := range sizes {
		num := int32(i + 1)
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: u.UploadId, PartNumber: &num, Body: bytes.NewReader(bytes.Repeat([]byte{byte(i)}, int(n)))})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: &num, ETag: p.ETag})
	}
	cm, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key, UploadId: u.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil {
		t.Fatal(err)
	}
	got, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: &key, ObjectAttributes: all})
	if err != nil || *got.ObjectSize != sizes[0]+sizes[1]+sizes[2] || *got.ETag != strings.Trim(*cm.ETag, `"`) || got.ObjectParts == nil {
		t.Fatalf("attributes of a multipart object: %+v %v", got, err)
	}
	op := got.ObjectParts
	if *op.TotalPartsCount != 3 || *op.IsTruncated || len(op.Parts) != 3 {
		t.Fatalf("parts: %+v", op)
	}
	for i, p := range op.Parts {
		if *p.PartNumber != int32(i+1) || *p.Size != sizes[i] {
			t.Errorf("part %d: number %d size %d, want %d", i, *p.PartNumber, *p.Size, sizes[i])
		}
	}
	got, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: &key, ObjectAttributes: all, MaxParts: aws.Int32(1), PartNumberMarker: aws.String("1")})
	if err != nil {
		t.Fatal(err)
	}
	op = got.ObjectParts
	if *op.TotalPartsCount != 3 || !*op.IsTruncated || *op.MaxParts != 1 || *op.PartNumberMarker != "1" || *op.NextPartNumberMarker != "2" ||
		len(op.Parts) != 1 || *op.Parts[0].PartNumber != 2 || *op.Parts[0].Size != sizes[1] {
		t.Fatalf("one part after part 1: %+v", op)
	}
}
