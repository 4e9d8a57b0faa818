package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shoal-project/shoal/bench"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestBenchS3 drives `shoal bench s3`'s load generator against the
// gateway: PUTs of sizes across the head, chunk and stripe boundaries,
// GETs that verify every byte (and catch an object rewritten behind the
// generator's back), and an indexless bucket made by --location.
func TestBenchS3(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	sizes, err := bench.ParseSizes("1K-600K")
	if err != nil {
		t.Fatal(err)
	}
	run := func(op, bucket, location string) *bench.S3Result {
		t.Helper()
		r, err := bench.RunS3(ctx, bench.S3Options{Endpoints: []string{f.url}, AccessKey: f.admin.AccessKey, SecretKey: f.admin.SecretKey,
			Bucket: bucket, Location: location, Op: op, Sizes: sizes, Concurrency: 4, Duration: 300 * time.Millisecond, Objects: 12})
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if r.Total.Ops == 0 {
			t.Fatalf("%s: no operations", op)
		}
		return r
	}
	for _, op := range []string{"put", "get", "mixed"} {
		if r := run(op, "loadgen", ""); r.Total.Errors != 0 || r.VerifyFailures != 0 {
			t.Fatalf("%s: %d errors, %d verify failures (%s)", op, r.Total.Errors, r.VerifyFailures, r.FirstError)
		}
	}
	// a warp-style mix of all four operations: DELETEs never make a GET
	// or HEAD miss, and the hook sees every request
	mix, err := bench.ParseS3Mix("get:40,put:30,stat:15,delete:15")
	if err != nil {
		t.Fatal(err)
	}
	var hooked atomic.Int64
	mr, err := bench.RunS3(ctx, bench.S3Options{Endpoints: []string{f.url}, AccessKey: f.admin.AccessKey, SecretKey: f.admin.SecretKey,
		Bucket: "loadmix", Op: "mixed", Mix: mix, Sizes: sizes, Concurrency: 4, Duration: 400 * time.Millisecond, Objects: 12,
		OnOp: func(string, int, time.Duration, error) { hooked.Add(1) }})
	if err != nil || mr.Total.Errors != 0 {
		t.Fatalf("mixed with deletes: %v (%+v)", err, mr)
	}
	for _, op := range []string{"GET", "PUT", "HEAD", "DELETE"} {
		if mr.PerOp[op].Ops == 0 {
			t.Fatalf("mixed: no %s in %+v", op, mr.PerOp)
		}
	}
	if hooked.Load() != mr.Total.Ops {
		t.Fatalf("hook saw %d requests of %d", hooked.Load(), mr.Total.Ops)
	}
	if _, err := bench.ParseS3Mix("get:50,put:30"); err == nil {
		t.Fatal("a mix adding up to 80 accepted")
	}
	n, err := bench.S3RemovePrefix(ctx, bench.S3Options{Endpoints: []string{f.url}, AccessKey: f.admin.AccessKey, SecretKey: f.admin.SecretKey, Bucket: "loadmix", Prefix: "shoal-bench/"})
	if err != nil || n == 0 || n > 12 {
		t.Fatalf("remove prefix: %d keys, %v", n, err)
	}
	if _, err := f.s3(f.admin).HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("loadmix")}); err == nil {
		t.Fatal("the emptied bucket is still there")
	}
	// every key rewritten with other bytes of the same length (the
	// generator re-uploads objects of the wrong size): every GET must notice
	c := f.s3(f.admin)
	for i := range 12 {
		key := "shoal-bench/" + strconv.Itoa(i)
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("loadgen"), Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		other := bytes.Repeat([]byte{'x'}, int(*h.ContentLength))
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("loadgen"), Key: &key, Body: bytes.NewReader(other)}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := bench.RunS3(ctx, bench.S3Options{Endpoints: []string{f.url}, AccessKey: f.admin.AccessKey, SecretKey: f.admin.SecretKey,
		Bucket: "loadgen", Op: "get", Sizes: sizes, Concurrency: 4, Duration: 300 * time.Millisecond, Objects: 12})
	if !errors.Is(err, bench.ErrS3Verify) || r == nil || r.Total.Errors == 0 || r.Total.Ops != 0 || r.VerifyFailures != r.Total.Errors {
		t.Fatalf("rewritten objects: %v; want every GET to fail verification (%+v)", err, r)
	}
	// --location default:indexless makes an indexless bucket
	if r := run("put", "loadgen-indexless", "default:indexless"); r.Total.Errors != 0 {
		t.Fatalf("indexless put: %d errors (%s)", r.Total.Errors, r.FirstError)
	}
	_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("loadgen-indexless")})
	if code(err) != "NotImplemented" {
		t.Fatalf("listing the indexless bucket: %v, want NotImplemented", err)
	}
	// an indexless bucket is cleaned by key
	n, err = bench.S3RemovePrefix(ctx, bench.S3Options{Endpoints: []string{f.url}, AccessKey: f.admin.AccessKey, SecretKey: f.admin.SecretKey,
		Bucket: "loadgen-indexless", Prefix: "shoal-bench/", Objects: 12})
	if err != nil || n != 12 {
		t.Fatalf("remove from the indexless bucket: %d keys, %v", n, err)
	}
	for _, k := range []string{"shoal-bench/0", "shoal-bench/11"} {
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("loadgen-indexless"), Key: aws.String(k)}); code(err) != "NotFound" {
			t.Fatalf("%s after the clean-up: %v", k, err)
		}
	}
}
