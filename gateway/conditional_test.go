package gateway_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestConditionalWrites: PutObject's If-Match and If-None-Match, and
// DeleteObject's and DeleteObjects' ETag, last-modified and size
// conditions, answer as s3-tests' test_put_object_if_match and
// test_delete_object(s)_if_match* expect; of 8 writers racing with
// If-Match on the same ETag exactly one succeeds, and the object holds
// its body.
func TestConditionalWrites(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b, key := "cond", "obj"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	put := func(ifMatch, ifNoneMatch, body string) (string, error) {
		in := &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader(body)}
		if ifMatch != "" {
			in.IfMatch = &ifMatch
		}
		if ifNoneMatch != "" {
			in.IfNoneMatch = &ifNoneMatch
		}
		out, err := c.PutObject(ctx, in)
		if err != nil {
			return "", err
		}
		return *out.ETag, nil
	}
	mustPut := func(what, ifMatch, ifNoneMatch, body string) string {
		t.Helper()
		etag, err := put(ifMatch, ifNoneMatch, body)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return etag
	}
	failPut := func(what, want, ifMatch, ifNoneMatch string) {
		t.Helper()
		if _, err := put(ifMatch, ifNoneMatch, "refused"); code(err) != want {
			t.Fatalf("%s: %v, want %s", what, err, want)
		}
	}
	etag := mustPut("If-None-Match: * on a new key", "", "*", "a")
	failPut("If-None-Match: * on an existing key", "PreconditionFailed", "", "*")
	failPut("If-None-Match: its ETag", "PreconditionFailed", "", etag)
	etag = mustPut("If-None-Match: another ETag", "", `"badetag"`, "c")
	etag = mustPut("If-Match: its ETag", etag, "", "d")
	failPut("If-Match: another ETag", "PreconditionFailed", `"badetag"`, "")
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: &key}); err != nil {
		t.Fatal(err)
	}
	failPut("If-Match: * on a missing key", "NoSuchKey", "*", "")
	failPut("If-Match: an ETag on a missing key", "NoSuchKey", `"badetag"`, "")
	mustPut("If-None-Match: an ETag on a missing key", "", etag, "g")
	etag = mustPut("If-Match: *", "*", "", "h")

	// racing writers, each If-Match on the same ETag: one wins; the
	// losers' tails (bodies of 3 stripes) are removed
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[string]string{}
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf("writer %d ", i) + strings.Repeat("x", 3*tStripe)
			if _, err := put(etag, "", body); err == nil {
				mu.Lock()
				won[body] = ""
				mu.Unlock()
			} else if code(err) != "PreconditionFailed" {
				t.Errorf("writer %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("8 writers with If-Match on one ETag: %d succeeded, want 1", len(won))
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(got.Body)
	got.Body.Close()
	if _, ok := won[string(data)]; err != nil || !ok {
		t.Fatalf("object holds %.20q… (%v), not the winner's body", data, err)
	}
	if _, err := f.store.GCProcess(ctx, true); err != nil {
		t.Fatal(err)
	}
	pool, err := f.conn.Pool(ctx, "default.rgw.buckets.data")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := pool.List(ctx, func(string) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if want := (len(data) + tStripe - 1) / tStripe; n != want { // the winner's head and tails
		t.Fatalf("after the race and GC the data pool holds %d objects, want %d (the winner's %d bytes in stripes of %d)", n, want, len(data), tStripe)
	}

	// CopyObject's destination conditions
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: &key, CopySource: aws.String(b + "/" + key), MetadataDirective: types.MetadataDirectiveReplace,
		IfNoneMatch: aws.String("*")}); code(err) != "PreconditionFailed" {
		t.Fatalf("CopyObject If-None-Match: * onto an existing key: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("copy"), CopySource: aws.String(b + "/" + key), IfMatch: aws.String("*")}); code(err) != "NoSuchKey" {
		t.Fatalf("CopyObject If-Match: * onto a missing key: %v", err)
	}

	// DeleteObject: ETag, last-modified time, size
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	del := func(in *s3.DeleteObjectInput) error {
		in.Bucket, in.Key = &b, &key
		_, err := c.DeleteObject(ctx, in)
		return err
	}
	old := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	for what, in := range map[string]*s3.DeleteObjectInput{
		"another ETag":         {IfMatch: aws.String(`"badetag"`)},
		"another mtime":        {IfMatchLastModifiedTime: &old},
		"another size":         {IfMatchSize: aws.Int64(*head.ContentLength + 1)},
		"its ETag, other size": {IfMatch: head.ETag, IfMatchSize: aws.Int64(*head.ContentLength + 1)},
	} {
		if err := del(in); code(err) != "PreconditionFailed" {
			t.Fatalf("DeleteObject with %s: %v", what, err)
		}
	}
	if err := del(&s3.DeleteObjectInput{IfMatch: head.ETag, IfMatchLastModifiedTime: head.LastModified, IfMatchSize: head.ContentLength}); err != nil {
		t.Fatalf("DeleteObject with all three matching: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: &key}); code(err) != "NotFound" {
		t.Fatalf("after the conditional delete: %v", err)
	}
	if err := del(&s3.DeleteObjectInput{IfMatch: aws.String(`"badetag"`)}); err != nil {
		t.Fatalf("DeleteObject If-Match of a missing key: %v, want success", err)
	}

	// DeleteObjects: per object
	etag = mustPut("PUT", "", "", "i")
	dels := func(id types.ObjectIdentifier) *s3.DeleteObjectsOutput {
		t.Helper()
		id.Key = &key
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{id}}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := dels(types.ObjectIdentifier{ETag: aws.String("badetag")}); len(out.Errors) != 1 || *out.Errors[0].Code != "PreconditionFailed" {
		t.Fatalf("DeleteObjects with another ETag: %+v", out)
	}
	if out := dels(types.ObjectIdentifier{Size: aws.Int64(99)}); len(out.Errors) != 1 || *out.Errors[0].Code != "PreconditionFailed" {
		t.Fatalf("DeleteObjects with another size: %+v", out)
	}
	if out := dels(types.ObjectIdentifier{ETag: &etag, Size: aws.Int64(1)}); len(out.Errors) != 0 || len(out.Deleted) != 1 {
		t.Fatalf("DeleteObjects with its ETag and size: %+v", out)
	}
	if out := dels(types.ObjectIdentifier{ETag: aws.String("badetag")}); len(out.Errors) != 0 {
		t.Fatalf("DeleteObjects of a missing key with an ETag: %+v", out)
	}
}

// TestConditionalComplete: CompleteMultipartUpload's If-None-Match and
// If-Match answer as s3-tests' test_multipart_put_object_if_match
// expects (412 when they fail, NoSuchKey for If-Match on a missing key);
// a refused completion leaves the upload, which a later completion
// finishes; a completion retried after it succeeded — also when its
// gateway died before removing the upload — answers the same ETag
// although its If-Match no longer holds.
func TestConditionalComplete(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "condmp"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	upload := func(key, body string) (*string, []types.CompletedPart) {
		t.Helper()
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return up.UploadId, []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag}}
	}
	complete := func(key string, id *string, parts []types.CompletedPart, ifMatch, ifNoneMatch string) (string, error) {
		in := &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key, UploadId: id, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}
		if ifMatch != "" {
			in.IfMatch = &ifMatch
		}
		if ifNoneMatch != "" {
			in.IfNoneMatch = &ifNoneMatch
		}
		out, err := c.CompleteMultipartUpload(ctx, in)
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ETag), nil
	}
	body := func(key string) string {
		t.Helper()
		got, _ := get(t, c, b, key, "")
		return string(got)
	}
	id, parts := upload("k", "first")
	etag1, err := complete("k", id, parts, "", "*")
	if err != nil || body("k") != "first" {
		t.Fatalf("If-None-Match * on a new key: %v", err)
	}
	id, parts = upload("k", "second")
	for _, tc := range []struct{ ifMatch, ifNoneMatch, want string }{
		{"", "*", "PreconditionFailed"},
		{"", etag1, "PreconditionFailed"},
		{`"badetag"`, "", "PreconditionFailed"},
	} {
		if _, err := complete("k", id, parts, tc.ifMatch, tc.ifNoneMatch); code(err) != tc.want {
			t.Fatalf("If-Match %q If-None-Match %q on the existing key: %v, want %s", tc.ifMatch, tc.ifNoneMatch, err, tc.want)
		}
	}
	if body("k") != "first" {
		t.Fatal("a refused completion changed the object")
	}
	etag2, err := complete("k", id, parts, etag1, "") // the refused upload is still there
	if err != nil || body("k") != "second" {
		t.Fatalf("If-Match with the current ETag after refusals: %v", err)
	}
	if again, err := complete("k", id, parts, etag1, ""); err != nil || again != etag2 {
		t.Fatalf("the completion retried: %q %v, want %s", again, err, etag2)
	}
	// a completion whose gateway died after the head write, before the
	// upload was removed: its retry finds the upload and its own head,
	// which fails the If-Match it was sent with, and answers success
	id, parts = upload("k", "third")
	f.store.SetFailpoint("complete-before-cleanup")
	etag3, err := complete("k", id, parts, etag2, "")
	f.store.SetFailpoint("")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := complete("k", id, parts, etag2, ""); err != nil || again != etag3 || body("k") != "third" {
		t.Fatalf("retry of a completion interrupted before its cleanup: %q %v, want %s", again, err, etag3)
	}
	id, parts = upload("missing", "x")
	if _, err := complete("missing", id, parts, "*", ""); code(err) != "NoSuchKey" {
		t.Fatalf("If-Match * on a missing key: %v, want NoSuchKey", err)
	}
	if _, err := complete("missing", id, parts, "", etag1); err != nil || body("missing") != "x" {
		t.Fatalf("If-None-Match of another ETag on a missing key: %v", err)
	}
}

// TestMultiDeleteConcurrent: a DeleteObjects of 40 keys, 4 removed at a
// time (rgw_multi_obj_del_max_aio), every third with a size condition
// that fails, answers each key once, in the request's order, with the
// right outcome, and leaves exactly the refused keys.
func TestMultiDeleteConcurrent(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, MultiDelMaxAIO: 4})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "multidel"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	var ids []types.ObjectIdentifier
	var kept, deleted []string
	for i := range 40 {
		key := fmt.Sprintf("k%02d", i)
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("body")}); err != nil {
			t.Fatal(err)
		}
		id := types.ObjectIdentifier{Key: aws.String(key)}
		if i%3 == 0 {
			id.Size = aws.Int64(99) // the body has 4 bytes
			kept = append(kept, key)
		} else {
			deleted = append(deleted, key)
		}
		ids = append(ids, id)
	}
	// the request's order, not the keys' own
	slices.Reverse(ids)
	slices.Reverse(kept)
	slices.Reverse(deleted)
	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: ids}})
	if err != nil {
		t.Fatal(err)
	}
	var gotDeleted, gotErrors []string
	for _, d := range out.Deleted {
		gotDeleted = append(gotDeleted, *d.Key)
	}
	for _, e := range out.Errors {
		if *e.Code != "PreconditionFailed" {
			t.Errorf("key %s: %s, want PreconditionFailed", *e.Key, *e.Code)
		}
		gotErrors = append(gotErrors, *e.Key)
	}
	if !slices.Equal(gotDeleted, deleted) || !slices.Equal(gotErrors, kept) {
		t.Fatalf("deleted %v and refused %v; want %v and %v", gotDeleted, gotErrors, deleted, kept)
	}
	left := map[string][]byte{}
	for _, k := range kept {
		left[k] = []byte("body")
	}
	checkListing(t, c, b, left)
}
