package gateway_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestOrphanedTails: an overwrite whose gateway stops right after the
// head write (where a killed gateway, or a head write answered as a
// duplicate, leaves it) never queues the old version's tails. `bucket
// check --check-orphans` finds exactly those — not the tails of a PUT
// still prepared, of an upload in progress, of the current versions
// (one whose index records are gone, as after a head write whose
// outcome its gateway never learnt, and one whose key looks like a
// tail's name), nor those already queued for GC — and --fix queues
// them for GC, which removes them and nothing else. Tails younger than
// the grace are never taken, and a check across a reshard (which may
// have moved pending records to shards it did not read) fails without
// queueing anything; after it, the check finds the same orphans. A fix
// stopped after its first GC entry (where a killed `bucket check` would
// stop: each entry is one atomic omap write) leaves the rest to the next
// run, which queues exactly those.
func TestOrphanedTails(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
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
	data, err := f.conn.Pool(ctx, rgw.DefaultPools.Data)
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
	added := func(before, after []string) []string {
		var out []string
		for _, n := range after {
			if !slices.Contains(before, n) {
				out = append(out, n)
			}
		}
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
	put("big2", randBytes(r, 2*tStripe))
	leaked := tails() // version 1's tails of both
	if len(leaked) == 0 {
		t.Fatal("PUTs of several stripes wrote no tails")
	}

	// version 2 replaces version 1 but stops before queueing its tails
	f.store.SetFailpoint("before-complete")
	v2 := randBytes(r, 3*tStripe)
	put("big", v2)
	big2 := randBytes(r, 2*tStripe)
	put("big2", big2)
	// a new key whose head landed with no index record left
	lost := randBytes(r, 2*tStripe)
	put("lost", lost)
	f.store.SetFailpoint("")
	if err := f.store.CancelPending(ctx, bk, "lost"); err != nil {
		t.Fatal(err)
	}
	// a PUT prepared, its tails written, no head yet
	f.store.SetFailpoint("before-head")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("inflight"), Body: bytes.NewReader(randBytes(r, 2*tStripe))}); err == nil {
		t.Fatal("PUT through the failpoint succeeded")
	}
	f.store.SetFailpoint("")
	// an upload in progress, a head named like a tail, a current version,
	// and tails queued for GC by an ordinary overwrite
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	part := randBytes(r, tStripe+5)
	pr, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: aws.String("mp"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(part)})
	if err != nil {
		t.Fatal(err)
	}
	lookalike := randBytes(r, 2*tStripe)
	put("_shadow_x_1", lookalike)
	put("small", []byte("no tails"))
	before := tails()
	put("gcd", randBytes(r, 2*tStripe))
	gcdV1 := added(before, tails())
	gcdV2 := randBytes(r, 2*tStripe)
	put("gcd", gcdV2)
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	queuedBefore, err := f.store.GCList(ctx, true)
	if err != nil || len(queuedBefore) != 1 {
		t.Fatalf("GC queue before the check: %d entries (%v), want the overwrite's", len(queuedBefore), err)
	}

	if n, err := f.store.CheckOrphans(ctx, bk, false, time.Hour); err != nil || n != 0 {
		t.Fatalf("orphans younger than the grace found: %d, %v", n, err)
	}
	n, err := f.store.CheckOrphans(ctx, bk, false, 0)
	if err != nil || n != len(leaked) {
		t.Fatalf("orphans found: %d, %v; want version 1's %d tails", n, err, len(leaked))
	}
	if es, err := f.store.GCList(ctx, true); err != nil || len(es) != len(queuedBefore) {
		t.Fatalf("the check without --fix changed the GC queue: %d entries (%v)", len(es), err)
	}
	// a check whose bucket was resharded meanwhile (given the bucket as it
	// was, the layout it read) may have missed pending records: it fails
	// and queues nothing
	ranges := len(bk.Index.Ranges)
	if err := f.store.SplitRange(ctx, b, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.CheckOrphans(ctx, bk, true, 0); err == nil {
		t.Fatalf("a check across a reshard succeeded, %d orphans", n)
	}
	if es, err := f.store.GCList(ctx, true); err != nil || len(es) != len(queuedBefore) {
		t.Fatalf("the check across a reshard changed the GC queue: %d entries (%v)", len(es), err)
	}
	if bk, err = f.store.GetBucket(ctx, b); err != nil || len(bk.Index.Ranges) != ranges+1 {
		t.Fatalf("the split left %d index ranges of %d, %v", len(bk.Index.Ranges), ranges, err)
	}
	orphansQueued := func() []string {
		es, err := f.store.GCList(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		var queued []string
		for _, e := range es {
			if strings.HasPrefix(e.Tag, "orphan.") {
				queued = append(queued, e.OIDs()...)
			}
		}
		slices.Sort(queued)
		return queued
	}
	// a fix stopped after queueing one version's tails (as a killed
	// `bucket check` would be) leaves the other version's to the next run
	f.store.SetFailpoint("orphans-after-first")
	if _, err := f.store.CheckOrphans(ctx, bk, true, 0); err == nil {
		t.Fatal("the fix went through its failpoint")
	}
	f.store.SetFailpoint("")
	first := orphansQueued()
	if len(first) == 0 || len(first) >= len(leaked) {
		t.Fatalf("a fix stopped after its first entry queued %d of %d orphans", len(first), len(leaked))
	}
	if n, err := f.store.CheckOrphans(ctx, bk, true, 0); err != nil || n != len(leaked)-len(first) {
		t.Fatalf("orphans found with fix after the stopped one: %d, %v; want the %d not queued", n, err, len(leaked)-len(first))
	}
	queued := orphansQueued()
	if !slices.Equal(queued, leaked) {
		t.Fatalf("queued for GC %v, want version 1's tails %v", queued, leaked)
	}
	gone := append(slices.Clone(leaked), gcdV1...)
	before = tails()
	if removed, err := f.store.GCProcess(ctx, true); err != nil || removed != len(gone) {
		t.Fatalf("gc removed %d, %v; want %d", removed, err, len(gone))
	}
	after := tails()
	for _, name := range gone {
		if slices.Contains(after, name) {
			t.Fatalf("garbage %s survived GC", name)
		}
	}
	if len(after) != len(before)-len(gone) {
		t.Fatalf("gc removed other objects: %d before, %d after, %d garbage", len(before), len(after), len(gone))
	}
	if n, err := f.store.CheckOrphans(ctx, bk, false, 0); err != nil || n != 0 {
		t.Fatalf("orphans after GC: %d, %v", n, err)
	}
	for key, want := range map[string][]byte{"big": v2, "big2": big2, "lost": lost, "_shadow_x_1": lookalike, "small": []byte("no tails"), "gcd": gcdV2} {
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
