package gateway_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/shoal-project/shoal/gateway"
)

// TestOrphanedTails: an overwrite whose gateway stops right after the
// head write (where a killed gateway, or a head write answered as a
// duplicate, leaves it) never queues the old version's tails. `bucket
// check --check-orphans` finds exactly those — not the tails of a PUT
// still prepared, of an upload in progress, of the current versions, nor
// a head whose key looks like a tail's name — and --fix queues them for
// GC, which removes them and nothing else.
func TestOrphanedTails(t *testing.T) {
	f := startGateway(t, gateway.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "orphans"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	data, err := f.conn.Pool(ctx, gateway.DefaultPools.Data)
	if err != nil {
		t.Fatal(err)
	}
	tails := func() []string { // the bucket's tail objects, by name
		var out []string
		if err := data.List(ctx, func(name string) bool {
			if strings.HasPrefix(name, bk.ID+"__") {
				out = append(out, name)
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	r := rand.New(rand.NewPCG(7, 8))
	put := func(key string, body []byte) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put("big", randBytes(r, 3*tStripe))
	leaked := tails() // version 1's tails
	if len(leaked) == 0 {
		t.Fatal("a PUT of three stripes wrote no tails")
	}

	// version 2 replaces version 1 but stops before queueing its tails
	f.store.SetFailpoint("before-complete")
	v2 := randBytes(r, 3*tStripe)
	put("big", v2)
	f.store.SetFailpoint("")
	// what must stay: a PUT prepared, its tails written, no head yet
	f.store.SetFailpoint("before-head")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("inflight"), Body: bytes.NewReader(randBytes(r, 2*tStripe))}); err == nil {
		t.Fatal("PUT through the failpoint succeeded")
	}
	f.store.SetFailpoint("")
	// an upload in progress, a head named like a tail, a current version
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	part := randBytes(r, tStripe+5)
	pr, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: aws.String("mp"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(part)})
	if err != nil {
		t.Fatal(err)
	}
	lookalike := randBytes(r, 100)
	put("_shadow_x_1", lookalike)
	put("small", []byte("no tails"))
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	n, err := f.store.CheckOrphans(ctx, bk, false)
	if err != nil || n != len(leaked) {
		t.Fatalf("orphans found: %d, %v; want version 1's %d tails", n, err, len(leaked))
	}
	if es, err := f.store.GCList(ctx, true); err != nil || len(es) != 0 {
		t.Fatalf("the check without --fix queued %d entries (%v)", len(es), err)
	}
	if n, err := f.store.CheckOrphans(ctx, bk, true); err != nil || n != len(leaked) {
		t.Fatalf("orphans found with fix: %d, %v", n, err)
	}
	es, err := f.store.GCList(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	var queued []string
	for _, e := range es {
		queued = append(queued, e.OIDs()...)
	}
	slices.Sort(queued)
	if !slices.Equal(queued, leaked) {
		t.Fatalf("queued for GC %v, want version 1's tails %v", queued, leaked)
	}
	before := tails()
	if removed, err := f.store.GCProcess(ctx, true); err != nil || removed != len(leaked) {
		t.Fatalf("gc removed %d, %v; want %d", removed, err, len(leaked))
	}
	after := tails()
	for _, name := range leaked {
		if slices.Contains(after, name) {
			t.Fatalf("orphan %s survived GC", name)
		}
	}
	if len(after) != len(before)-len(leaked) {
		t.Fatalf("gc removed other objects: %d before, %d after, %d orphans", len(before), len(after), len(leaked))
	}
	if n, err := f.store.CheckOrphans(ctx, bk, false); err != nil || n != 0 {
		t.Fatalf("orphans after GC: %d, %v", n, err)
	}
	for key, want := range map[string][]byte{"big": v2, "_shadow_x_1": lookalike, "small": []byte("no tails")} {
		if got, _ := get(t, c, b, key, ""); !bytes.Equal(got, want) {
			t.Fatalf("%s reads back %d other bytes after the orphans went", key, len(got))
		}
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: aws.String("mp"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: pr.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, c, b, "mp", ""); !bytes.Equal(got, part) {
		t.Fatal("the upload in progress lost its part")
	}
}
