package gateway_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway"
	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/internal/memrados"
	"github.com/shoal-project/shoal/internal/testcluster"
)

// gatewayConf is what these tests add to the shared test configuration:
// two copies a pool.
const gatewayConf = "osd_pool_default_size = 2\n"

// fixture is an in-process MON, three OSDs on MemStores and a gateway
// with small stripes (so tests cross head, stripe and chunk boundaries
// with small objects).
type fixture struct {
	t       testing.TB
	store   *rgw.Store
	conn    *client.Conn
	url     string
	metrics string // the gateway's /metrics URL
	admin   rgw.Key
	other   rgw.Key
}

const (
	tStripe = 256 << 10
	tChunk  = 64 << 10
)

// startGateway starts a gateway over an in-memory RADOS
// (internal/memrados: the OSDs' op semantics and object classes, no
// cluster); benchmarks get a cluster of three OSDs on real stores
// (MemStore copies an object's omap on every write).
func startGateway(t testing.TB, opt rgw.Options) *fixture {
	t.Helper()
	if _, bench := t.(*testing.B); bench {
		return startGatewayN(t, 3, opt, nil)
	}
	r, err := memrados.New(map[string]map[string]string{"global": {"osd_pool_default_size": "2", "osd_pool_default_pg_num": "8"}})
	if err != nil {
		t.Fatal(err)
	}
	conn := client.NewConn(r, client.Config{})
	t.Cleanup(conn.Close)
	return startGatewayOn(t, conn, opt, nil)
}

// startGatewayN starts a gateway over a cluster of n OSDs (tests that
// count the OSDs' work); setup runs before the gateway opens its pools
// (to create some of them differently).
func startGatewayN(t testing.TB, n int, opt rgw.Options, setup func(ctx context.Context, conn *client.Conn)) *fixture {
	t.Helper()
	_, bench := t.(*testing.B)
	c := testcluster.Start(t, testcluster.Options{OSDs: n, Conf: gatewayConf, RealStores: bench})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return startGatewayOn(t, c.Client(ctx), opt, setup)
}

// startGatewayOn starts a gateway on conn's cluster.
func startGatewayOn(t testing.TB, conn *client.Conn, opt rgw.Options, setup func(ctx context.Context, conn *client.Conn)) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if setup != nil {
		setup(ctx, conn)
	}
	st, err := rgw.OpenStore(ctx, conn, opt)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: st, conn: conn}
	u, err := st.CreateUser(ctx, "tester", "", "", rgw.Key{})
	if err != nil {
		t.Fatal(err)
	}
	f.admin = u.Keys[0]
	u2, err := st.CreateUser(ctx, "other", "", "", rgw.Key{})
	if err != nil {
		t.Fatal(err)
	}
	f.other = u2.Keys[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 2)
	srv := gateway.NewServer(st)
	go func() { done <- srv.Serve(sctx, ln, "", "") }()
	go func() { done <- srv.ServeMetrics(sctx, mln) }()
	t.Cleanup(func() { stop(); <-done; <-done })
	f.url = "http://" + ln.Addr().String()
	f.metrics = "http://" + mln.Addr().String() + "/metrics"
	return f
}

func (f *fixture) s3(k rgw.Key) *s3.Client {
	return s3.New(s3.Options{
		Region:           "default",
		BaseEndpoint:     aws.String(f.url),
		UsePathStyle:     true,
		Credentials:      credentials.NewStaticCredentialsProvider(k.AccessKey, k.SecretKey, ""),
		RetryMaxAttempts: 1,
	})
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return `"` + hex.EncodeToString(s[:]) + `"`
}

func get(t *testing.T, c *s3.Client, bucket, key string, rng string) ([]byte, *s3.GetObjectOutput) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
	if rng != "" {
		in.Range = &rng
	}
	out, err := c.GetObject(context.Background(), in)
	if err != nil {
		t.Fatalf("get %s/%s %s: %v", bucket, key, rng, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, out
}

// TestLargePutETags: bodies of 8 MiB and more take their MD5 from the
// shared multi-lane hasher; four uploaded at once (so that they share
// its passes) each get the MD5 of their own bytes as ETag, the data
// reads back, and a wrong Content-MD5 on a large body is BadDigest.
func TestLargePutETags(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: 1 << 20, ChunkSize: 256 << 10})
	c := f.s3(f.admin)
	ctx := context.Background()
	bucket := "large"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	sizes := []int{8 << 20, 8<<20 + 1, 9<<20 + 4097, 12<<20 - 3}
	bodies := make([][]byte, len(sizes))
	for i, n := range sizes {
		bodies[i] = randBytes(r, n)
	}
	etags := make([]string, len(sizes))
	errs := make([]error, len(sizes))
	var wg sync.WaitGroup
	for i := range sizes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("obj-%d", i)
			out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(bodies[i])})
			if err == nil {
				etags[i] = *out.ETag
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, n := range sizes {
		if errs[i] != nil {
			t.Fatalf("put %d bytes: %v", n, errs[i])
		}
		if want := md5hex(bodies[i]); etags[i] != want {
			t.Errorf("put %d bytes: etag %s, want %s", n, etags[i], want)
		}
		got, out := get(t, c, bucket, fmt.Sprintf("obj-%d", i), "")
		if !bytes.Equal(got, bodies[i]) || *out.ETag != etags[i] {
			t.Errorf("get %d bytes: %d bytes back, etag %s", n, len(got), *out.ETag)
		}
	}
	wrong := md5.Sum(bodies[1])
	key := "bad-digest"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(bodies[0]),
		ContentMD5: aws.String(base64.StdEncoding.EncodeToString(wrong[:]))}); code(err) != "BadDigest" {
		t.Fatalf("a wrong Content-MD5 on %d bytes: %v, want BadDigest", len(bodies[0]), err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key}); err == nil {
		t.Fatal("the refused upload is visible")
	}
}

func TestObjectsRoundTrip(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, WindowSize: 2 * tStripe, IndexShards: 3, GCMinWait: time.Hour})
	c := f.s3(f.admin)
	ctx := context.Background()
	bucket := "round"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, tChunk - 1, tChunk, tChunk + 1, tStripe, tStripe + tChunk + 7, 3*tStripe + 5}
	want := map[string][]byte{}
	for i, n := range sizes {
		key := fmt.Sprintf("obj/%02d-%d", i, n)
		data := randBytes(r, n)
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data),
			ContentType: aws.String("text/x-test"), Metadata: map[string]string{"color": "blue"}})
		if err != nil {
			t.Fatalf("put %d bytes: %v", n, err)
		}
		if *out.ETag != md5hex(data) {
			t.Fatalf("put %d bytes: etag %s, want %s", n, *out.ETag, md5hex(data))
		}
		want[key] = data
	}
	for key, data := range want {
		got, out := get(t, c, bucket, key, "")
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: read %d bytes, differ from the %d written", key, len(got), len(data))
		}
		if *out.ContentType != "text/x-test" || out.Metadata["color"] != "blue" || *out.ETag != md5hex(data) {
			t.Fatalf("%s: headers %v %v %v", key, *out.ContentType, out.Metadata, *out.ETag)
		}
		n := int64(len(data))
		for _, rg := range [][2]int64{{0, 0}, {n / 3, n/3 + tChunk}, {tChunk - 1, tStripe + 1}, {n - 1, n + 10}} {
			if rg[0] >= n || rg[0] < 0 {
				continue
			}
			got, out := get(t, c, bucket, key, fmt.Sprintf("bytes=%d-%d", rg[0], rg[1]))
			end := min(rg[1]+1, n)
			if !bytes.Equal(got, data[rg[0]:end]) || *out.ContentRange != fmt.Sprintf("bytes %d-%d/%d", rg[0], end-1, n) {
				t.Fatalf("%s range %v: %d bytes, content-range %s", key, rg, len(got), *out.ContentRange)
			}
		}
		if n > 10 {
			got, _ := get(t, c, bucket, key, "bytes=-10")
			if !bytes.Equal(got, data[n-10:]) {
				t.Fatalf("%s suffix range wrong", key)
			}
			_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key, Range: aws.String(fmt.Sprintf("bytes=%d-", n))})
			if code(err) != "InvalidRange" {
				t.Fatalf("%s: range past the end: %v", key, err)
			}
		}
	}
	// overwrite: the new version is read, the old one's tails go to GC
	big := "obj/07-" + fmt.Sprint(3*tStripe+5)
	newData := randBytes(r, 2*tStripe)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &big, Body: bytes.NewReader(newData)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, c, bucket, big, ""); !bytes.Equal(got, newData) {
		t.Fatal("overwrite: read the old version")
	}
	want[big] = newData
	es, err := f.store.GCList(ctx, true)
	if err != nil || len(es) != 1 || len(es[0].OIDs()) != 3 {
		t.Fatalf("gc queue after one overwrite: %v entries, err %v", len(es), err)
	}
	if due, _ := f.store.GCList(ctx, false); len(due) != 0 {
		t.Fatalf("garbage due before rgw_gc_obj_min_wait: %d", len(due))
	}
	if n, err := f.store.GCProcess(ctx, true); err != nil || n != 3 {
		t.Fatalf("gc removed %d objects, err %v; want the 3 old tails", n, err)
	}
	if got, _ := get(t, c, bucket, big, ""); !bytes.Equal(got, newData) {
		t.Fatal("gc damaged the live version")
	}
	// head, copy, conditional reads
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &big})
	if err != nil || *h.ContentLength != int64(len(newData)) {
		t.Fatalf("head: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &big, IfNoneMatch: h.ETag})
	var re *awshttp.ResponseError
	if !isStatus(err, 304) || !errors.As(err, &re) || re.Response.Header.Get("ETag") != *h.ETag {
		t.Fatalf("If-None-Match matching: %v, want 304 with the ETag", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &big, IfMatch: aws.String(`"nope"`)}); code(err) != "PreconditionFailed" {
		t.Fatalf("If-Match not matching: %v", err)
	}
	cp := "copy/of-big"
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: &cp, CopySource: aws.String(bucket + "/" + big)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, c, bucket, cp, ""); !bytes.Equal(got, newData) {
		t.Fatal("copy differs")
	}
	want[cp] = newData
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: &cp, CopySource: aws.String(bucket + "/" + cp)}); code(err) != "InvalidRequest" {
		t.Fatalf("copy onto itself without REPLACE: %v", err)
	}
	// bad digest loses nothing
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &big, Body: bytes.NewReader([]byte("x")), ContentMD5: aws.String("1B2M2Y8AsgTpgAmY7PhCfg==")}); code(err) != "BadDigest" {
		t.Fatalf("bad Content-MD5: %v", err)
	}
	if got, _ := get(t, c, bucket, big, ""); !bytes.Equal(got, newData) {
		t.Fatal("a refused PUT changed the object")
	}
	checkListing(t, c, bucket, want)
	// delete one, multi-delete the rest
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &cp}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &cp}); code(err) != "NoSuchKey" {
		t.Fatalf("get deleted: %v", err)
	}
	delete(want, cp)
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket}); code(err) != "BucketNotEmpty" {
		t.Fatalf("delete non-empty bucket: %v", err)
	}
	var ids []types.ObjectIdentifier
	for k := range want {
		ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
	}
	dout, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{Objects: ids}})
	if err != nil || len(dout.Deleted) != len(want) || len(dout.Errors) != 0 {
		t.Fatalf("multi-delete: %v", err)
	}
	checkListing(t, c, bucket, nil)
	st, err := f.store.GetBucket(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := f.store.Stats(ctx, st)
	if err != nil || stats.Objects != 0 || stats.Bytes != 0 || stats.Pending != 0 {
		t.Fatalf("stats of the emptied bucket: %+v %v", stats, err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket}); !isStatus(err, 404) {
		t.Fatalf("head of a deleted bucket: %v", err)
	}
}

func isStatus(err error, status int) bool {
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == status
}

// checkListing lists the bucket every way (V1 and V2, pages of 2, with
// and without a delimiter and prefix) and compares with the model.
func checkListing(t *testing.T, c *s3.Client, bucket string, want map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, prefix := range []string{"", "obj/", "copy", "nope"} {
		for _, delim := range []string{"", "/"} {
			var wantKeys, wantPrefixes []string
			for _, k := range keys {
				if !strings.HasPrefix(k, prefix) {
					continue
				}
				if i := strings.Index(k[len(prefix):], delim); delim != "" && i >= 0 {
					cp := k[:len(prefix)+i+1]
					if !slices.Contains(wantPrefixes, cp) {
						wantPrefixes = append(wantPrefixes, cp)
					}
					continue
				}
				wantKeys = append(wantKeys, k)
			}
			var gotKeys, gotPrefixes []string
			in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, Delimiter: &delim, MaxKeys: aws.Int32(2)}
			for pages := 0; ; pages++ {
				out, err := c.ListObjectsV2(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range out.Contents {
					gotKeys = append(gotKeys, *o.Key)
					if *o.Size != int64(len(want[*o.Key])) || *o.ETag != md5hex(want[*o.Key]) {
						t.Fatalf("listing of %s: size %d etag %s", *o.Key, *o.Size, *o.ETag)
					}
				}
				for _, p := range out.CommonPrefixes {
					gotPrefixes = append(gotPrefixes, *p.Prefix)
				}
				if len(out.Contents)+len(out.CommonPrefixes) > 2 || pages > 5000 {
					t.Fatal("page larger than max-keys, or endless")
				}
				if !*out.IsTruncated {
					break
				}
				in.ContinuationToken = out.NextContinuationToken
			}
			if !slices.Equal(gotKeys, wantKeys) || !slices.Equal(gotPrefixes, wantPrefixes) {
				t.Fatalf("list prefix %q delim %q:\n got %q %q\nwant %q %q", prefix, delim, gotKeys, gotPrefixes, wantKeys, wantPrefixes)
			}
			// V1 with markers gives the same
			var v1Keys []string
			marker := ""
			for {
				out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: &bucket, Prefix: &prefix, Delimiter: &delim, MaxKeys: aws.Int32(3), Marker: &marker})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range out.Contents {
					v1Keys = append(v1Keys, *o.Key)
					marker = *o.Key
				}
				if !*out.IsTruncated {
					break
				}
				if out.NextMarker != nil {
					marker = *out.NextMarker
				}
			}
			if !slices.Equal(v1Keys, wantKeys) {
				t.Fatalf("list v1 prefix %q delim %q: got %q want %q", prefix, delim, v1Keys, wantKeys)
			}
		}
	}
}

// TestListBucketsPages: ListBuckets in pages of max-buckets, following
// the continuation token, with a prefix; a bad max-buckets is refused.
func TestListBucketsPages(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c := f.s3(f.admin)
	for _, b := range []string{"pcc", "qaa", "paa", "qbb", "pbb"} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string, max int32) (names []string, pages int) {
		t.Helper()
		in := &s3.ListBucketsInput{MaxBuckets: aws.Int32(max)}
		if prefix != "" {
			in.Prefix = aws.String(prefix)
		}
		for {
			out, err := c.ListBuckets(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, b := range out.Buckets {
				names = append(names, *b.Name)
			}
			if out.ContinuationToken == nil {
				return names, pages
			}
			in.ContinuationToken = out.ContinuationToken
		}
	}
	if names, pages := list("", 2); !slices.Equal(names, []string{"paa", "pbb", "pcc", "qaa", "qbb"}) || pages != 3 {
		t.Fatalf("pages of 2: %v in %d pages", names, pages)
	}
	if names, pages := list("p", 3); !slices.Equal(names, []string{"paa", "pbb", "pcc"}) || pages != 1 {
		t.Fatalf("prefix p, pages of 3: %v in %d pages", names, pages)
	}
	if names, pages := list("q", 1); !slices.Equal(names, []string{"qaa", "qbb"}) || pages != 2 {
		t.Fatalf("prefix q, pages of 1: %v in %d pages", names, pages)
	}
	if _, err := c.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(10001)}); code(err) != "InvalidArgument" {
		t.Fatalf("max-buckets 10001: %v", err)
	}
	if _, err := c.ListBuckets(ctx, &s3.ListBucketsInput{ContinuationToken: aws.String("not base64!")}); code(err) != "InvalidArgument" {
		t.Fatalf("a token the gateway never gave: %v", err)
	}
}

func TestAuthAndErrors(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c, o := f.s3(f.admin), f.s3(f.other)
	b := "mine"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	// creating one's own bucket again succeeds and changes nothing (as RGW)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatalf("create twice: %v", err)
	}
	if _, err := o.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); code(err) != "BucketAlreadyExists" {
		t.Fatalf("create another's: %v", err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("Bad_Name")}); code(err) != "InvalidBucketName" {
		t.Fatalf("bad name: %v", err)
	}
	key := "k"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("secret")}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: &key}); code(err) != "AccessDenied" {
		t.Fatalf("another user's GET: %v", err)
	}
	if _, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("x")}); code(err) != "AccessDenied" {
		t.Fatalf("another user's PUT: %v", err)
	}
	lb, err := o.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 0 {
		t.Fatalf("other's bucket list: %v %v", lb, err)
	}
	bad := f.s3(rgw.Key{AccessKey: "NOSUCHKEY0000000000", SecretKey: "x"})
	if _, err := bad.ListBuckets(ctx, &s3.ListBucketsInput{}); code(err) != "InvalidAccessKeyId" {
		t.Fatalf("unknown key: %v", err)
	}
	wrong := f.s3(rgw.Key{AccessKey: f.admin.AccessKey, SecretKey: "wrong"})
	if _, err := wrong.ListBuckets(ctx, &s3.ListBucketsInput{}); code(err) != "SignatureDoesNotMatch" {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("nobucket"), Key: &key}); code(err) != "NoSuchBucket" {
		t.Fatalf("no bucket: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("none")}); code(err) != "NoSuchKey" {
		t.Fatalf("no key: %v", err)
	}
	long := strings.Repeat("k", 1025)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &long, Body: strings.NewReader("x")}); code(err) != "KeyTooLongError" {
		t.Fatalf("1025-byte key: %v", err)
	}
	ok := strings.Repeat("é", 512) // 1024 bytes of UTF-8
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &ok, Body: strings.NewReader("x")}); err != nil {
		t.Fatalf("1024-byte key: %v", err)
	}
	// an unversioned bucket lists each object as its one "null" version
	lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &b})
	if err != nil || len(lv.Versions) != 2 || *lv.Versions[0].Key != key || *lv.Versions[0].VersionId != "null" || !*lv.Versions[0].IsLatest {
		t.Fatalf("list versions: %v", err)
	}
	// a removed key stops working (after the cache TTL in other gateways;
	// at once in the one that removed it)
	if err := f.store.RemoveKey(ctx, "other", f.other.AccessKey); err != nil {
		t.Fatal(err)
	}
	if _, err := o.ListBuckets(ctx, &s3.ListBucketsInput{}); code(err) != "InvalidAccessKeyId" {
		t.Fatalf("revoked key: %v", err)
	}
	// presigned GET works, and expires
	ps := s3.NewPresignClient(c)
	req, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: &key}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(req.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "secret" {
		t.Fatalf("presigned GET: %d %q", resp.StatusCode, body)
	}
	resp, err = http.Get(strings.Replace(req.URL, "X-Amz-Signature=", "X-Amz-Signature=0", 1))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !bytes.Contains(body, []byte("<Code>SignatureDoesNotMatch</Code>")) {
		t.Fatalf("tampered presigned URL: %d %s", resp.StatusCode, body)
	}
}

func TestMultipart(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: 1 << 20, ChunkSize: 256 << 10, IndexShards: 2, MaxMultipartSize: 11 << 20})
	ctx := context.Background()
	c := f.s3(f.admin)
	b, key := "mpu", "big/object"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key, ContentType: aws.String("video/x-test")})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	parts := [][]byte{randBytes(r, 5<<20), randBytes(r, 5<<20+3), randBytes(r, 1234)}
	var done []types.CompletedPart
	sum := md5.New()
	for i, p := range parts {
		n := int32(i + 1)
		if i == 1 { // upload part 2 twice: the second replaces the first
			if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: cr.UploadId, PartNumber: &n, Body: bytes.NewReader(parts[0])}); err != nil {
				t.Fatal(err)
			}
		}
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: cr.UploadId, PartNumber: &n, Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		if *out.ETag != md5hex(p) {
			t.Fatalf("part %d etag %s", n, *out.ETag)
		}
		d := md5.Sum(p)
		sum.Write(d[:])
		done = append(done, types.CompletedPart{PartNumber: &n, ETag: out.ETag})
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &b, Key: &key, UploadId: cr.UploadId})
	if err != nil || len(lp.Parts) != 3 || *lp.Parts[1].Size != int64(len(parts[1])) {
		t.Fatalf("list parts: %v", err)
	}
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b})
	if err != nil || len(lu.Uploads) != 1 || *lu.Uploads[0].UploadId != *cr.UploadId {
		t.Fatalf("list uploads: %v", err)
	}
	// wrong order and wrong ETag are refused
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{done[1], done[0]}}}); code(err) != "InvalidPartOrder" {
		t.Fatalf("parts out of order: %v", err)
	}
	badPart := done[0]
	badPart.ETag = aws.String(`"00000000000000000000000000000000"`)
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{badPart}}}); code(err) != "InvalidPart" {
		t.Fatalf("wrong etag: %v", err)
	}
	co, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"` + hex.EncodeToString(sum.Sum(nil)) + `-3"`; *co.ETag != want {
		t.Fatalf("multipart etag %s, want %s", *co.ETag, want)
	}
	// a retried completion (its reply lost) answers the same
	co2, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil || *co2.ETag != *co.ETag {
		t.Fatalf("second completion: %v", err)
	}
	all := slices.Concat(parts...)
	got, out := get(t, c, b, key, "")
	if !bytes.Equal(got, all) || *out.ContentType != "video/x-test" {
		t.Fatalf("multipart object: %d bytes (want %d), type %s", len(got), len(all), *out.ContentType)
	}
	got, _ = get(t, c, b, key, fmt.Sprintf("bytes=%d-%d", 5<<20-10, 5<<20+10))
	if !bytes.Equal(got, all[5<<20-10:5<<20+11]) {
		t.Fatal("range across parts")
	}
	// GET and HEAD by part number: each part's bytes, the parts count
	for i, p := range parts {
		n := aws.Int32(int32(i + 1))
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: &key, PartNumber: n})
		if err != nil {
			t.Fatalf("part %d: %v", *n, err)
		}
		body, _ := io.ReadAll(g.Body)
		g.Body.Close()
		if !bytes.Equal(body, p) || aws.ToInt32(g.PartsCount) != 3 || *g.ETag != *co.ETag {
			t.Fatalf("part %d: %d bytes (want %d), parts count %d", *n, len(body), len(p), aws.ToInt32(g.PartsCount))
		}
		hd, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: &key, PartNumber: n})
		if err != nil || *hd.ContentLength != int64(len(p)) || aws.ToInt32(hd.PartsCount) != 3 {
			t.Fatalf("head part %d: %v", *n, err)
		}
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: &key, PartNumber: aws.Int32(4)}); code(err) != "InvalidPart" {
		t.Fatalf("part 4 of 3: %v", err)
	}
	// an object PUT whole is its own part 1
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("single"), Body: strings.NewReader("body")}); err != nil {
		t.Fatal(err)
	}
	if g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("single"), PartNumber: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	} else if body, _ := io.ReadAll(g.Body); string(body) != "body" {
		t.Fatalf("part 1 of a simple object: %q", body)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("single"), PartNumber: aws.Int32(2)}); code(err) != "InvalidPart" {
		t.Fatalf("part 2 of a simple object: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("single")}); err != nil {
		t.Fatal(err)
	}
	// parts adding up past the object size limit (5 TiB; 11 MiB here):
	// EntityTooLarge, and the upload stays, completable with fewer parts
	tooBig := "too/big"
	ub, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &tooBig})
	if err != nil {
		t.Fatal(err)
	}
	var bigParts []types.CompletedPart
	for i := range 3 {
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &tooBig, UploadId: ub.UploadId, PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(parts[0])})
		if err != nil {
			t.Fatal(err)
		}
		bigParts = append(bigParts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &tooBig, UploadId: ub.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: bigParts}}); code(err) != "EntityTooLarge" {
		t.Fatalf("15 MiB of parts under an 11 MiB limit: %v", err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &tooBig, UploadId: ub.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: bigParts[:2]}}); err != nil {
		t.Fatalf("completing with two of the parts: %v", err)
	}
	if got, _ := get(t, c, b, tooBig, ""); !bytes.Equal(got, slices.Concat(parts[0], parts[0])) {
		t.Fatalf("too/big after completing two parts: %d bytes", len(got))
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: &tooBig}); err != nil {
		t.Fatal(err)
	}
	// UploadPartCopy: a range inside the source copies it; one past its
	// end is InvalidRange (a GET's Range would be clamped instead)
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("copy/dst")})
	if err != nil {
		t.Fatal(err)
	}
	src := b + "/" + key
	if pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &b, Key: aws.String("copy/dst"), UploadId: cu.UploadId, PartNumber: aws.Int32(1),
		CopySource: &src, CopySourceRange: aws.String("bytes=10-109")}); err != nil || *pc.CopyPartResult.ETag != md5hex(all[10:110]) {
		t.Fatalf("upload part copy of 100 bytes: %v", err)
	}
	for _, rng := range []string{fmt.Sprintf("bytes=0-%d", len(all)), "bytes=-5", "bytes=5-", "bytes=9-5", "5-9"} {
		if _, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &b, Key: aws.String("copy/dst"), UploadId: cu.UploadId, PartNumber: aws.Int32(2),
			CopySource: &src, CopySourceRange: &rng}); code(err) != "InvalidRange" {
			t.Fatalf("copy range %q (past the end, suffix, open, reversed, no unit): %v", rng, err)
		}
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b, Key: aws.String("copy/dst"), UploadId: cu.UploadId}); err != nil {
		t.Fatal(err)
	}
	// aws-chunked in Content-Encoding describes the request, not the object
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("enc"), Body: strings.NewReader("x"), ContentEncoding: aws.String("gzip, aws-chunked")}); err != nil {
		t.Fatal(err)
	}
	if hd, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("enc")}); err != nil || aws.ToString(hd.ContentEncoding) != "gzip" {
		t.Fatalf("stored Content-Encoding %q (%v), want gzip", aws.ToString(hd.ContentEncoding), err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("enc")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: cr.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("x")}); code(err) != "NoSuchUpload" {
		t.Fatalf("part after complete: %v", err)
	}
	// the replaced part 2 is garbage, and nothing of the object is
	if _, err := f.store.GCProcess(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, c, b, key, ""); !bytes.Equal(got, all) {
		t.Fatal("gc damaged a completed multipart object")
	}
	// too-small part, abort
	cr2, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("small")})
	if err != nil {
		t.Fatal(err)
	}
	var small []types.CompletedPart
	for i := range 2 {
		n := int32(i + 1)
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: aws.String("small"), UploadId: cr2.UploadId, PartNumber: &n, Body: strings.NewReader("tiny")})
		if err != nil {
			t.Fatal(err)
		}
		small = append(small, types.CompletedPart{PartNumber: &n, ETag: out.ETag})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: aws.String("small"), UploadId: cr2.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: small}}); code(err) != "EntityTooSmall" {
		t.Fatalf("small parts: %v", err)
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b, Key: aws.String("small"), UploadId: cr2.UploadId}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &b, Key: aws.String("small"), UploadId: cr2.UploadId}); code(err) != "NoSuchUpload" {
		t.Fatalf("aborted upload: %v", err)
	}
	if n, err := f.store.GCProcess(ctx, true); err != nil || n != 2 {
		t.Fatalf("gc after abort removed %d, err %v; want the 2 parts", n, err)
	}
	// an upload in progress does not keep its bucket: deleting the bucket
	// aborts it (as S3 does)
	cr3, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("pending")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: aws.String("pending"), UploadId: cr3.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("part")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: &key}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &b}); err != nil {
		t.Fatalf("delete a bucket with an upload in progress: %v", err)
	}
	// the pending upload's one stripe, and the deleted object's 5+6+1
	// stripes of 1 MiB
	if n, err := f.store.GCProcess(ctx, true); err != nil || n != 1+12 {
		t.Fatalf("gc after the bucket's deletion removed %d, err %v; want 13", n, err)
	}
}

// TestIndexCrashBetweenPhases leaves a prepared operation without its
// completion (the gateway died between them) and checks that `bucket
// check --fix` completes it from the head, or cancels it and collects its
// tails if the head was never written.
func TestIndexlessAndCheck(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	nb := "noindex"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &nb, CreateBucketConfiguration: &types.CreateBucketConfiguration{
		LocationConstraint: types.BucketLocationConstraint("default:indexless")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &nb, Key: aws.String("a"), Body: strings.NewReader("hello")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, c, nb, "a", ""); string(got) != "hello" {
		t.Fatal("indexless get")
	}
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &nb}); code(err) != "NotImplemented" {
		t.Fatalf("listing an indexless bucket: %v", err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &nb}); code(err) != "BucketNotEmpty" {
		t.Fatalf("delete non-empty indexless bucket: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &nb, Key: aws.String("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &nb}); err != nil {
		t.Fatal(err)
	}
}

// TestIndexCrashBetweenPhases stops PUTs where a killed gateway would: after
// the tails (prepared, no head) and after the head (no completion), and a
// DELETE after removing the head. The first leaves the old version
// readable and listed; the second's object is listed at once, from its
// head, while its record is pending (a completion is sent after the
// request is answered, so this is also what a listing sees before it
// lands); the deleted key is not listed although its entry remains.
// `bucket check --fix` completes the second from its head, cancels the
// first, queueing its tails for GC, and drops the deleted key's entry.
func TestIndexCrashBetweenPhases(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, IndexShards: 2})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "crash"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"old", "doomed"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: strings.NewReader("version 1")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	f.store.SetFailpoint("before-head")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("old"), Body: bytes.NewReader(randBytes(r, 3*tStripe))}); err == nil {
		t.Fatal("PUT through the failpoint succeeded")
	}
	f.store.SetFailpoint("before-complete")
	fresh := randBytes(r, tStripe+1)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("fresh"), Body: bytes.NewReader(fresh)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("doomed")}); err != nil {
		t.Fatal(err)
	}
	f.store.SetFailpoint("")
	if got, _ := get(t, c, b, "old", ""); string(got) != "version 1" {
		t.Fatalf("the interrupted PUT changed the old version: %q", got)
	}
	want := map[string][]byte{"old": []byte("version 1"), "fresh": fresh}
	checkListing(t, c, b, want)
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.store.Stats(ctx, bk); err != nil || st.Pending != 3 || st.Objects != 2 {
		t.Fatalf("stats before the fix: %+v %v; want 3 pending and the index's 2 entries (old, doomed)", st, err)
	}
	rep, err := f.store.CheckBucket(ctx, bk, false, true)
	if err != nil || rep.Pending != 3 || rep.Completed != 0 {
		t.Fatalf("check without fix: %+v %v", rep, err)
	}
	rep, err = f.store.CheckBucket(ctx, bk, true, true)
	if err != nil || rep.Pending != 3 || rep.Completed != 1 || rep.Abandoned != 2 || rep.StaleEntries != 0 {
		t.Fatalf("check --fix: %+v %v", rep, err)
	}
	checkListing(t, c, b, want)
	if n, err := f.store.GCProcess(ctx, true); err != nil || n != 3 {
		t.Fatalf("gc of the abandoned PUT's tails removed %d, err %v; want its 3 stripes", n, err)
	}
	if st, err := f.store.Stats(ctx, bk); err != nil || st.Pending != 0 || st.Objects != 2 {
		t.Fatalf("stats after the fix: %+v %v", st, err)
	}
}

// TestChunkSizeShardWrites reproduces the tuning experiment of the Ceph
// guides: a 32 MiB PUT into a 4+2 erasure-coded data pool costs 384 shard
// writes of 128 KiB with a 512 KiB rgw_max_chunk_size, and 48 of 1 MiB
// with 4 MiB (counted by the OSDs' shard_w counters). A chunk size that
// is not a power of two (3 MiB: a write of 3 MiB and one of 1 MiB per
// 4 MiB stripe) keeps its writes to that size though its buffers are
// larger (bufpool's classes).
func TestChunkSizeShardWrites(t *testing.T) {
	for _, tc := range []struct {
		chunk        int64
		writes, each uint64
	}{{512 << 10, 384, 128 << 10}, {4 << 20, 48, 1 << 20}, {3 << 20, 96, 512 << 10}} {
		t.Run(fmt.Sprint(tc.chunk>>10, "K"), func(t *testing.T) {
			pools := rgw.DefaultPools
			pools.Data = "ec42"
			var conn *client.Conn
			f := startGatewayN(t, 6, rgw.Options{Pools: pools, StripeSize: 4 << 20, ChunkSize: tc.chunk}, func(ctx context.Context, c *client.Conn) {
				conn = c
				if _, err := c.MonCommand(ctx, "osd erasure-code-profile set", map[string]string{"name": "p42", "args": "k=4 m=2 crush-failure-domain=osd"}); err != nil {
					t.Fatal(err)
				}
				if _, err := c.MonCommand(ctx, "pool create", map[string]string{"name": "ec42", "type": "erasure", "erasure_code_profile": "p42"}); err != nil {
					t.Fatal(err)
				}
			})
			ctx := context.Background()
			cl := f.s3(f.admin)
			// indexless: the counters count every pool's writes, and only
			// the data pool's are the experiment's
			b := "chunks"
			if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b, CreateBucketConfiguration: &types.CreateBucketConfiguration{
				LocationConstraint: types.BucketLocationConstraint("default:indexless")}}); err != nil {
				t.Fatal(err)
			}
			shardWrites := func() (n, bytes uint64) {
				for id := range int32(6) {
					st, err := conn.OSDStats(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					n += st.Perf.ShardW
					bytes += st.Perf.ShardWBytes
				}
				return n, bytes
			}
			n0, b0 := shardWrites()
			data := randBytes(rand.New(rand.NewPCG(9, 9)), 32<<20)
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("video"), Body: bytes.NewReader(data)}); err != nil {
				t.Fatal(err)
			}
			n1, b1 := shardWrites()
			if n1-n0 != tc.writes || (b1-b0)/(n1-n0) != tc.each {
				t.Fatalf("chunk %d: %d shard writes averaging %d bytes; want %d of %d", tc.chunk, n1-n0, (b1-b0)/max(1, n1-n0), tc.writes, tc.each)
			}
			if got, _ := get(t, cl, b, "video", ""); !bytes.Equal(got, data) {
				t.Fatal("read back differs")
			}
		})
	}
}

// TestReshardOnline splits a bucket's index range while writers keep
// PUTting and deleting sequential keys: no write fails or waits for the
// reshard, and afterwards the listing is exactly the model's, served from
// two ranges.
func TestReshardOnline(t *testing.T) {
	rgw.SetSettle(300 * time.Millisecond)
	t.Cleanup(func() { rgw.SetSettle(7 * time.Second) })
	f := startGateway(t, rgw.Options{IndexShards: 3, RangeShards: 3})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "growing"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	model := map[string][]byte{}
	put := func(k string) error {
		v := []byte("value of " + k)
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &k, Body: bytes.NewReader(v)})
		if err == nil {
			mu.Lock()
			model[k] = v
			mu.Unlock()
		}
		return err
	}
	for i := range 200 {
		if err := put(fmt.Sprintf("k%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				k := fmt.Sprintf("k%05d", 200+w*100000+i)
				if err := put(k); err != nil {
					errs <- fmt.Errorf("put %s during the reshard: %w", k, err)
					return
				}
				if i%5 == 4 { // delete one of ours
					d := fmt.Sprintf("k%05d", 200+w*100000+i-2)
					if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: &d}); err != nil {
						errs <- fmt.Errorf("delete %s during the reshard: %w", d, err)
						return
					}
					mu.Lock()
					delete(model, d)
					mu.Unlock()
				}
			}
		}()
	}
	var out bytes.Buffer
	err := f.store.SplitRange(ctx, b, "", &out)
	close(stop)
	wg.Wait()
	for range 4 {
		if e := <-errs; e != nil {
			t.Error(e)
		}
	}
	if err != nil {
		t.Fatalf("reshard: %v\n%s", err, out.String())
	}
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(bk.Index.Ranges); n != 2 {
		t.Fatalf("after one split the index has %d ranges\n%s", n, out.String())
	}
	t.Logf("%d keys after the reshard\n%s", len(model), out.String())
	checkListing(t, c, b, model)
	st, err := f.store.Stats(ctx, bk)
	if err != nil || st.Objects != int64(len(model)) || st.Pending != 0 {
		t.Fatalf("stats after the reshard: %+v (model %d keys) %v", st, len(model), err)
	}
}

// TestTwoGateways runs two gateways, each with its own Store (and
// caches), on one cluster: what one does the other sees at once, and a
// bucket deleted through one refuses writes through the other even while
// the other still has it cached.
func TestTwoGateways(t *testing.T) {
	f := startGateway(t, rgw.Options{IndexShards: 2})
	ctx := context.Background()
	st2, err := rgw.OpenStore(ctx, f.conn, rgw.Options{IndexShards: 2})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gateway.NewServer(st2).Serve(sctx, ln, "", "") }()
	t.Cleanup(func() { stop(); <-done })
	g2 := &fixture{t: t, store: st2, conn: f.conn, url: "http://" + ln.Addr().String(), admin: f.admin}
	a, b := f.s3(f.admin), g2.s3(f.admin)
	bucket := "shared"
	if _, err := a.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("from A")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, b, bucket, "k", ""); string(got) != "from A" {
		t.Fatalf("gateway B reads %q", got)
	}
	if _, err := b.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("from B")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, a, bucket, "k", ""); string(got) != "from B" {
		t.Fatalf("gateway A reads %q after B's overwrite", got)
	}
	checkListing(t, a, bucket, map[string][]byte{"k": []byte("from B")})
	// A has the bucket cached; B deletes it
	if _, err := b.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("late"), Body: strings.NewReader("x")}); code(err) != "NoSuchBucket" {
		t.Fatalf("PUT through a gateway that cached a deleted bucket: %v, want NoSuchBucket", err)
	}
}

// TestReshardResumes stops a reshard where a killed resharder would —
// after publishing the split (writers on both sides), then after switching
// to the halves (old shards not yet removed) — and checks that running it
// again finishes the job: writes made in between are listed, and no shard
// object is left behind or missing.
func TestReshardResumes(t *testing.T) {
	rgw.SetSettle(100 * time.Millisecond)
	t.Cleanup(func() { rgw.SetSettle(7 * time.Second) })
	f := startGateway(t, rgw.Options{IndexShards: 2, RangeShards: 2})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "resumed"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	model := map[string][]byte{}
	put := func(from, to int) {
		for i := from; i < to; i++ {
			k := fmt.Sprintf("k%04d", i)
			v := []byte("value " + k)
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &k, Body: bytes.NewReader(v)}); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		}
	}
	put(0, 60)
	var out bytes.Buffer
	f.store.SetFailpoint("reshard-after-begin")
	if err := f.store.SplitRange(ctx, b, "k0030", &out); err == nil {
		t.Fatal("reshard passed its failpoint")
	}
	f.store.SetFailpoint("")
	put(60, 80) // written to the old range and a half
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k0005")}); err != nil {
		t.Fatal(err)
	}
	delete(model, "k0005")
	checkListing(t, c, b, model)
	if err := f.store.SplitRange(ctx, b, "", &out); err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(bk.Index.Ranges); n != 2 || bk.Index.Ranges[1].Start != "k0030" {
		t.Fatalf("after the resumed split: %+v\n%s", bk.Index.Ranges, out.String())
	}
	checkListing(t, c, b, model)
	// second split, interrupted after the switch
	f.store.SetFailpoint("reshard-after-switch")
	if err := f.store.SplitRange(ctx, b, "k0060", &out); err == nil {
		t.Fatal("reshard passed its failpoint")
	}
	f.store.SetFailpoint("")
	put(80, 90)
	checkListing(t, c, b, model)
	if err := f.store.SplitRange(ctx, b, "", &out); err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	if bk, err = f.store.GetBucket(ctx, b); err != nil {
		t.Fatal(err)
	}
	if len(bk.Index.Ranges) != 3 || len(bk.Index.Retired) != 0 {
		t.Fatalf("after the second split: %d ranges, %d retired\n%s", len(bk.Index.Ranges), len(bk.Index.Retired), out.String())
	}
	// exactly the layout's shard objects exist in the index pool
	idx, err := f.conn.Pool(ctx, rgw.DefaultPools.Index)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	if err := idx.List(ctx, func(n string) bool {
		if strings.HasPrefix(n, ".dir."+bk.ID+".") {
			have = append(have, n)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	want := bk.ShardObjects()
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Fatalf("index shard objects:\n have %q\n want %q", have, want)
	}
	checkListing(t, c, b, model)
	st, err := f.store.Stats(ctx, bk)
	if err != nil || st.Objects != int64(len(model)) {
		t.Fatalf("stats: %+v, model %d: %v", st, len(model), err)
	}
}

// TestMultipartCompleteCrash stops a completion where a killed gateway
// would — the object written, the upload's state not yet removed — and
// checks that aborting the leftover upload (what an operator or a
// lifecycle rule would do) leaves the object whole after GC.
func TestMultipartCompleteCrash(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: 1 << 20, ChunkSize: 256 << 10})
	ctx := context.Background()
	c := f.s3(f.admin)
	b, key := "mpcrash", "obj"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	parts := [][]byte{randBytes(r, 5<<20), randBytes(r, 777)}
	var done []types.CompletedPart
	for i, p := range parts {
		n := int32(i + 1)
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: cr.UploadId, PartNumber: &n, Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: &n, ETag: out.ETag})
	}
	f.store.SetFailpoint("complete-before-cleanup")
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	f.store.SetFailpoint("")
	all := slices.Concat(parts...)
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b})
	if err != nil || len(lu.Uploads) != 1 {
		t.Fatalf("the interrupted completion should leave its upload listed: %v", err)
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b, Key: &key, UploadId: cr.UploadId}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.GCProcess(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, c, b, key, ""); !bytes.Equal(got, all) {
		t.Fatal("aborting the leftover upload of a completed object damaged the object")
	}
}

// TestDynamicReshard: index completions past MaxObjsPerShard queue the
// bucket; a reshard pass splits its fullest range (online, as `shoal
// bucket reshard`), after which the listing and stats are whole; a bucket
// whose lock another gateway holds stays queued.
func TestDynamicReshard(t *testing.T) {
	f := startGateway(t, rgw.Options{IndexShards: 2, RangeShards: 2, MaxObjsPerShard: 30})
	rgw.SetSettle(100 * time.Millisecond) // one Store: its cache is dropped at each change
	t.Cleanup(func() { rgw.SetSettle(7 * time.Second) })
	ctx := context.Background()
	b, err := f.store.CreateBucket(ctx, "growing", "tester", "", "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	put := func(n int) {
		for i := len(want); len(want) < n; i++ {
			key := fmt.Sprintf("logs/%05d", i)
			if _, err := f.store.PutObject(ctx, b, key, rgw.PutInput{Body: strings.NewReader("x"), Size: 1, Owner: "tester"}); err != nil {
				t.Fatal(err)
			}
			want[key] = true
		}
	}
	put(40) // 2 shards of ~20: under the limit
	// the completions, which queue the bucket, land after the PUTs are
	// answered
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if q := f.store.ReshardQueued(); len(q) != 0 {
		t.Fatalf("queued %v with 40 entries in 2 shards of limit 30", q)
	}
	put(120)
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if q := f.store.ReshardQueued(); len(q) != 1 || q[0] != "growing" {
		t.Fatalf("queued %v after 120 entries in 2 shards of limit 30", q)
	}
	var progress strings.Builder
	n, err := f.store.ReshardPass(ctx, &progress)
	if err != nil || n != 1 {
		t.Fatalf("reshard pass: %d split, %v\n%s", n, err, progress.String())
	}
	nb, err := f.store.GetBucket(ctx, "growing")
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.store.Stats(ctx, nb)
	if err != nil || st.Ranges != 2 || st.Objects != int64(len(want)) {
		t.Fatalf("after the pass: %+v %v, want 2 ranges and %d objects", st, err, len(want))
	}
	var keys []string
	after := ""
	for {
		l, err := f.store.List(ctx, nb, "", "", after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range l.Entries {
			keys = append(keys, e.Key)
		}
		if !l.Truncated {
			break
		}
		after = l.NextMarker
	}
	if len(keys) != len(want) || !sort.StringsAreSorted(keys) {
		t.Fatalf("listing after the split: %d keys (sorted %v), want %d", len(keys), sort.StringsAreSorted(keys), len(want))
	}
	for _, k := range keys {
		if !want[k] {
			t.Fatalf("listing has %q, never written", k)
		}
	}
	// another gateway's unexpired lock: the bucket stays queued
	put(400)
	logPool, err := f.conn.Pool(ctx, rgw.DefaultPools.Log)
	if err != nil {
		t.Fatal(err)
	}
	lock, _ := json.Marshal(map[string]any{"owner": "other", "expires": time.Now().Add(time.Hour)})
	if err := logPool.WriteFull(ctx, "reshard_lock."+nb.ID, lock); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.ReshardPass(ctx, io.Discard); err != nil || n != 0 {
		t.Fatalf("pass under another gateway's lock: %d split, %v", n, err)
	}
	if q := f.store.ReshardQueued(); len(q) != 1 {
		t.Fatalf("queue under another's lock: %v", q)
	}
	// a lock whose holder died (expired) is taken over, and released after
	lock, _ = json.Marshal(map[string]any{"owner": "dead", "expires": time.Now().Add(-time.Minute)})
	if err := logPool.WriteFull(ctx, "reshard_lock."+nb.ID, lock); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.ReshardPass(ctx, io.Discard); err != nil || n != 1 {
		t.Fatalf("pass over an expired lock: %d split, %v", n, err)
	}
	if _, err := logPool.Stat(ctx, "reshard_lock."+nb.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("the lock stays after the split: %v", err)
	}
}

// TestIndexBatching: index updates that queue behind a call in flight to
// their shard go together in the next call. The first call to a
// one-shard bucket is held while 24 PUTs (four of them to one key) queue
// their prepares (a few may ride in the held call itself); once released,
// every PUT succeeds, one call carries at least half of the prepares, and
// the index agrees with the data: every key listed once with the bytes
// its GET returns (the key written four times with the head that won), no
// pending record left once the completions sent after the answers land,
// the stats exact.
func TestIndexBatching(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, IndexShards: 1, RangeShards: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := f.s3(f.admin)
	b := "batched"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	release := f.store.HoldIndexCalls()
	r := rand.New(rand.NewPCG(7, 8))
	const n = 24
	bodies := make([][]byte, n)
	keys := make([]string, n)
	for i := range n {
		bodies[i] = randBytes(r, 1+r.IntN(3*tChunk))
		keys[i] = fmt.Sprintf("k%02d", i)
		if i >= n-4 {
			keys[i] = "same"
		}
	}
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &keys[i], Body: bytes.NewReader(bodies[i])})
			errs <- err
		}()
	}
	for f.store.IndexWaiting() < n { // every prepare in the held call or behind it
		select {
		case <-ctx.Done():
			t.Fatalf("only %d index updates queued", f.store.IndexWaiting())
		case <-time.After(time.Millisecond):
		}
	}
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := f.store.Flush(ctx); err != nil { // the completions sent after the PUTs returned
		t.Fatal(err)
	}
	calls, updates, most := f.store.IndexBatches()
	if updates != 2*n || most < n/2 || calls > n+2 {
		t.Fatalf("%d index calls carried %d updates (at most %d in one); want %d updates, one call of at least half the %d prepares", calls, updates, most, 2*n, n)
	}
	want := map[string][]byte{}
	for i := range n - 4 {
		want[keys[i]] = bodies[i]
	}
	same, _ := get(t, c, b, "same", "")
	if !slices.ContainsFunc(bodies[n-4:], func(x []byte) bool { return bytes.Equal(x, same) }) {
		t.Fatal("GET of the key written four times returned none of its versions")
	}
	want["same"] = same
	checkListing(t, c, b, want)
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.store.Stats(ctx, bk); err != nil || st.Pending != 0 || st.Objects != n-3 {
		t.Fatalf("stats %+v %v, want %d objects and nothing pending", st, err, n-3)
	}
}

// TestMetrics: the gateway's Prometheus metrics count requests by method,
// target and status, their bytes, and the bucket index calls.
func TestMetrics(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "metered"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(fmt.Sprint("k", i)), Body: strings.NewReader("12345")}); err != nil {
			t.Fatal(err)
		}
	}
	get(t, c, b, "k1", "")
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("nope")}); code(err) != "NoSuchKey" {
		t.Fatalf("GET of a missing key: %v", err)
	}
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(f.metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	values := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if name, v, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			values[name], _ = strconv.ParseFloat(v, 64)
		}
	}
	for name, want := range map[string]float64{
		`shoal_rgw_requests_total{code="200",method="PUT",target="bucket"}`: 1,
		`shoal_rgw_requests_total{code="200",method="PUT",target="object"}`: 3,
		`shoal_rgw_requests_total{code="200",method="GET",target="object"}`: 1,
		`shoal_rgw_requests_total{code="404",method="GET",target="object"}`: 1,
		`shoal_rgw_request_seconds_count{method="PUT",target="object"}`:     3,
		`shoal_rgw_received_bytes_total`:                                    15,
		`shoal_rgw_index_updates_total`:                                     6,
		`shoal_rgw_index_completions_in_flight`:                             0,
		`ceph_rgw_req`:                                                      6,
		`ceph_rgw_failed_req`:                                               1,
		`ceph_rgw_put`:                                                      3,
		`ceph_rgw_put_b`:                                                    15,
		`ceph_rgw_get`:                                                      2,
		`ceph_rgw_put_initial_lat_count`:                                    3,
		`ceph_rgw_get_initial_lat_count`:                                    2,
	} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if values["shoal_rgw_sent_bytes_total"] < 5 || values["shoal_rgw_index_calls_total"] < 1 {
		t.Errorf("sent bytes %v, index calls %v", values["shoal_rgw_sent_bytes_total"], values["shoal_rgw_index_calls_total"])
	}
}

// anon sends an unsigned request and returns its status and body.
func anon(t *testing.T, method, url string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
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

// TestACL: canned ACLs, grant headers and AccessControlPolicy documents on
// buckets and objects decide who reads, writes and changes what —
// anonymous requests included — and GetBucketAcl/GetObjectAcl show them
// with the users' display names.
func TestACL(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c, o := f.s3(f.admin), f.s3(f.other)
	other, err := f.store.GetUser(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CreateUser(ctx, "reader", "Rea Der", "rea@example.com", rgw.Key{}); err != nil {
		t.Fatal(err)
	}
	// private by default: the owner's FULL_CONTROL, nobody else anything
	priv := "private-bucket"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &priv}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &priv, Key: aws.String("k"), Body: strings.NewReader("data")}); err != nil {
		t.Fatal(err)
	}
	acl, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: &priv})
	if err != nil || *acl.Owner.ID != "tester" || *acl.Owner.DisplayName != "tester" || len(acl.Grants) != 1 ||
		acl.Grants[0].Permission != types.PermissionFullControl || *acl.Grants[0].Grantee.ID != "tester" {
		t.Fatalf("default bucket ACL: %+v %v", acl, err)
	}
	for _, try := range []struct {
		what string
		err  error
	}{
		{"GET", func() error {
			_, err := o.GetObject(ctx, &s3.GetObjectInput{Bucket: &priv, Key: aws.String("k")})
			return err
		}()},
		{"PUT", func() error {
			_, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: &priv, Key: aws.String("k2"), Body: strings.NewReader("x")})
			return err
		}()},
		{"list", func() error { _, err := o.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &priv}); return err }()},
		{"GetBucketAcl", func() error { _, err := o.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: &priv}); return err }()},
	} {
		if code(try.err) != "AccessDenied" {
			t.Fatalf("another user's %s of a private bucket: %v", try.what, try.err)
		}
	}
	if st, _ := anon(t, "GET", f.url+"/"+priv+"/k", ""); st != 403 {
		t.Fatalf("anonymous GET of a private object: %d", st)
	}
	if st, body := anon(t, "GET", f.url+"/no-such-bucket/k", ""); st != 404 || !strings.Contains(body, "NoSuchBucket") {
		t.Fatalf("anonymous GET in a missing bucket: %d %s", st, body)
	}
	if st, body := anon(t, "GET", f.url+"/", ""); st != 200 || strings.Contains(body, "<Bucket>") {
		t.Fatalf("anonymous ListBuckets: %d %s", st, body)
	}
	if st, _ := anon(t, "PUT", f.url+"/anon-bucket", ""); st != 403 {
		t.Fatalf("anonymous CreateBucket: %d", st)
	}

	// public-read bucket and object: anyone lists and reads, nobody else writes
	pub := "public-bucket"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &pub, ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &pub, Key: aws.String("open"), Body: strings.NewReader("hello"), ACL: types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &pub, Key: aws.String("closed"), Body: strings.NewReader("hidden")}); err != nil {
		t.Fatal(err)
	}
	if st, body := anon(t, "GET", f.url+"/"+pub+"/open", ""); st != 200 || body != "hello" {
		t.Fatalf("anonymous GET of a public-read object: %d %q", st, body)
	}
	if st, _ := anon(t, "GET", f.url+"/"+pub+"/closed", ""); st != 403 {
		t.Fatalf("anonymous GET of a private object in a public-read bucket: %d", st)
	}
	if st, body := anon(t, "GET", f.url+"/"+pub, ""); st != 200 || !strings.Contains(body, "<Key>open</Key>") {
		t.Fatalf("anonymous listing of a public-read bucket: %d %s", st, body)
	}
	if st, _ := anon(t, "PUT", f.url+"/"+pub+"/new", "x"); st != 403 {
		t.Fatalf("anonymous PUT into a public-read bucket: %d", st)
	}
	if got, _ := get(t, o, pub, "open", ""); string(got) != "hello" {
		t.Fatal("another user's GET of a public-read object")
	}
	oacl, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: &pub, Key: aws.String("open")})
	// group grants first (as RGW answers)
	if err != nil || len(oacl.Grants) != 2 || oacl.Grants[0].Grantee.Type != types.TypeGroup ||
		*oacl.Grants[0].Grantee.URI != rgw.GroupAllUsers || oacl.Grants[0].Permission != types.PermissionRead ||
		*oacl.Grants[1].Grantee.ID != "tester" {
		t.Fatalf("public-read object ACL: %+v %v", oacl, err)
	}
	// re-creating one's bucket with another ACL is refused (as RGW)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &pub}); code(err) != "BucketAlreadyExists" {
		t.Fatalf("re-creating a public-read bucket as private: %v", err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &pub, ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatalf("re-creating a bucket with its ACL: %v", err)
	}
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &pub, ExpectedBucketOwner: aws.String("other")}); code(err) != "AccessDenied" {
		t.Fatalf("listing with the wrong expected bucket owner: %v", err)
	}

	// public-read-write: anyone writes
	rw := "rw-bucket"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &rw, ACL: types.BucketCannedACLPublicReadWrite}); err != nil {
		t.Fatal(err)
	}
	if st, body := anon(t, "PUT", f.url+"/"+rw+"/anon-object", "by nobody"); st != 200 {
		t.Fatalf("anonymous PUT into a public-read-write bucket: %d %s", st, body)
	}

	// grants to a user: by header on an object, by document on a bucket
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &priv, Key: aws.String("shared"), Body: strings.NewReader("for other"),
		GrantRead: aws.String(`id="other"`)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, o, priv, "shared", ""); string(got) != "for other" {
		t.Fatal("a READ grant by id did not let the user read")
	}
	if _, err := o.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: &priv, Key: aws.String("shared"), ACL: types.ObjectCannedACLPublicRead}); code(err) != "AccessDenied" {
		t.Fatalf("a READ grantee changed the ACL: %v", err)
	}
	full := types.PermissionFullControl
	policy := &types.AccessControlPolicy{Owner: &types.Owner{ID: aws.String("tester")}, Grants: []types.Grant{
		{Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String("tester")}, Permission: full},
		{Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String(other.ID)}, Permission: types.PermissionWrite},
		{Grantee: &types.Grantee{Type: types.TypeAmazonCustomerByEmail, EmailAddress: aws.String("rea@example.com")}, Permission: types.PermissionReadAcp},
		{Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String("reader")}, Permission: types.PermissionRead},
	}}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &priv, AccessControlPolicy: policy}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.PutObject(ctx, &s3.PutObjectInput{Bucket: &priv, Key: aws.String("from-other"), Body: strings.NewReader("x")}); err != nil {
		t.Fatalf("a WRITE grantee's PUT: %v", err)
	}
	if _, err := o.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &priv}); code(err) != "AccessDenied" {
		t.Fatalf("a WRITE grantee listed: %v", err)
	}
	acl, err = c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: &priv})
	// the e-mail grant shows as the user it resolved to (as RGW)
	if err != nil || len(acl.Grants) != 4 || *acl.Grants[1].Grantee.ID != "other" || acl.Grants[1].Permission != types.PermissionWrite ||
		*acl.Grants[2].Grantee.ID != "reader" || acl.Grants[2].Permission != types.PermissionReadAcp || *acl.Grants[3].Grantee.DisplayName != "Rea Der" {
		t.Fatalf("bucket ACL after PutBucketAcl: %+v %v", acl, err)
	}
	// bad input: unknown canned ACL, unknown grantee, canned and grants together
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &priv, Key: aws.String("x"), Body: strings.NewReader("x"), ACL: "world-writable"}); code(err) != "InvalidArgument" {
		t.Fatalf("unknown canned ACL: %v", err)
	}
	if _, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: &priv, Key: aws.String("k"), GrantRead: aws.String(`id="nobody"`)}); code(err) != "InvalidArgument" {
		t.Fatalf("grant to an unknown user: %v", err)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &priv, ACL: types.BucketCannedACLPrivate, GrantRead: aws.String(`id="other"`)}); code(err) != "InvalidRequest" {
		t.Fatalf("canned ACL and grants together: %v", err)
	}
	// no grants at all: shown as none, and the owner keeps control
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: &priv, AccessControlPolicy: &types.AccessControlPolicy{Owner: &types.Owner{ID: aws.String("tester")}}}); err != nil {
		t.Fatal(err)
	}
	if acl, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: &priv}); err != nil || len(acl.Grants) != 0 {
		t.Fatalf("bucket ACL with every grant revoked: %+v %v", acl, err)
	}
	// the owner keeps control whatever the grants say
	if _, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: &priv, Key: aws.String("k"), AccessControlPolicy: &types.AccessControlPolicy{Owner: &types.Owner{ID: aws.String("tester")}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(t, c, priv, "k", ""); string(got) != "data" {
		t.Fatal("an owner with no grants lost its object")
	}
}

// signed sends a SigV4-signed request (unsigned payload) with k's keys and
// returns its status and body.
func (f *fixture) signed(t *testing.T, k rgw.Key, method, path string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	return f.signedPayload(t, k, method, path, hdr, body, "UNSIGNED-PAYLOAD")
}

// signedPayload is signed with x-amz-content-sha256 payload (a hex
// SHA-256, UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, …).
func (f *fixture) signedPayload(t *testing.T, k rgw.Key, method, path string, hdr map[string]string, body, payload string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for h, v := range hdr {
		req.Header[http.CanonicalHeaderKey(h)] = []string{v}
	}
	req.Header.Set("X-Amz-Content-Sha256", payload)
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: k.AccessKey, SecretAccessKey: k.SecretKey},
		req, payload, "s3", "default", time.Now()); err != nil {
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

// TestS3Details: behaviours clients and Ceph's s3-tests rely on — an
// empty continuation token lists from the start and is echoed; RGW's
// allow-unordered refuses a delimiter; an empty Content-MD5 is
// InvalidDigest; a part listed twice in a row in a completion counts
// once, the later entry; ?torrent is NoSuchKey.
func TestS3Details(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: 1 << 20, ChunkSize: 256 << 10})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "details"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b/c", "d"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: strings.NewReader(k)}); err != nil {
			t.Fatal(err)
		}
	}
	st, body := f.signed(t, f.admin, "GET", "/"+b+"?list-type=2&continuation-token=", nil, "")
	if st != 200 || !strings.Contains(body, "<ContinuationToken></ContinuationToken>") || !strings.Contains(body, "<Key>a</Key>") || strings.Count(body, "<Key>") != 3 {
		t.Fatalf("empty continuation token: %d %s", st, body)
	}
	if st, body := f.signed(t, f.admin, "GET", "/"+b+"?allow-unordered=true&delimiter=%2F", nil, ""); st != 400 || !strings.Contains(body, "InvalidArgument") {
		t.Fatalf("allow-unordered with a delimiter: %d %s", st, body)
	}
	if st, body := f.signed(t, f.admin, "GET", "/"+b+"?allow-unordered=true", nil, ""); st != 200 || strings.Count(body, "<Key>") != 3 {
		t.Fatalf("allow-unordered listing: %d %s", st, body)
	}
	if st, body := f.signed(t, f.admin, "PUT", "/"+b+"/e", map[string]string{"Content-MD5": ""}, "x"); st != 400 || !strings.Contains(body, "InvalidDigest") {
		t.Fatalf("empty Content-MD5: %d %s", st, body)
	}
	if st, _ := anon(t, "OPTIONS", f.url+"/"+b+"/a", ""); st != 400 { // a preflight without Origin
		t.Fatalf("OPTIONS: %d", st)
	}
	if st, body := f.signed(t, f.admin, "GET", "/"+b+"/a?torrent", nil, ""); st != 404 || !strings.Contains(body, "NoSuchKey") {
		t.Fatalf("torrent: %d %s", st, body)
	}
	// a PUT without a length (Transfer-Encoding: chunked), small and past
	// the head's chunk
	for _, n := range []int{10, 600 << 10} {
		data := randBytes(rand.New(rand.NewPCG(uint64(n), 1)), n)
		req, _ := http.NewRequest("PUT", f.url+"/"+b+"/chunked", io.NopCloser(bytes.NewReader(data))) // no length: chunked
		req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
		if err := signer.SignHTTP(ctx, aws.Credentials{AccessKeyID: f.admin.AccessKey, SecretAccessKey: f.admin.SecretKey}, req, "UNSIGNED-PAYLOAD", "s3", "default", time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("chunked PUT of %d bytes: %d", n, resp.StatusCode)
		}
		if got, _ := get(t, c, b, "chunked", ""); !bytes.Equal(got, data) {
			t.Fatalf("chunked PUT of %d bytes read back as %d bytes", n, len(got))
		}
	}
	// part 1 uploaded twice; the completion names both, the later last
	key := "twice"
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	var etags []string
	for _, data := range []string{"first", "second"} {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: cr.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		etags = append(etags, *up.ETag)
	}
	parts := []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: &etags[0]}, {PartNumber: aws.Int32(1), ETag: &etags[1]}}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatalf("completion naming part 1 twice: %v", err)
	}
	if got, _ := get(t, c, b, key, ""); string(got) != "second" {
		t.Fatalf("object %q, want the part uploaded last", got)
	}
}

// postForm sends a browser-style POST upload (fields in order, then the
// file) to bucket and returns the response.
func postForm(t *testing.T, url string, fields [][2]string, filename, data string) *http.Response {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range fields {
		w.WriteField(f[0], f[1])
	}
	fw, _ := w.CreateFormFile("file", filename)
	io.WriteString(fw, data)
	w.Close()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Post(url, w.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// postPolicy is a base64 policy document expiring in d with conditions.
func postPolicy(d time.Duration, conds ...any) string {
	b, _ := json.Marshal(map[string]any{"expiration": time.Now().Add(d).UTC().Format("2006-01-02T15:04:05Z"), "conditions": conds})
	return base64.StdEncoding.EncodeToString(b)
}

func sigV2Policy(secret, policy string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(policy))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestPostObject: browser-based POST uploads — anonymous into a bucket
// that grants AllUsers WRITE, signed with a policy (SigV2 and SigV4)
// whose conditions every field must meet, ${filename}, metadata, the
// success status and redirect, the length range and a SHA-256 checksum
// enforced while the file streams (nothing is stored when they fail).
func TestPostObject(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: 256 << 10, ChunkSize: 64 << 10})
	ctx := context.Background()
	c := f.s3(f.admin)
	pub, priv := "post-public", "post-private"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &pub, ACL: types.BucketCannedACLPublicReadWrite}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &priv}); err != nil {
		t.Fatal(err)
	}
	status := func(resp *http.Response) int { resp.Body.Close(); return resp.StatusCode }
	// anonymous
	if st := status(postForm(t, f.url+"/"+pub, [][2]string{{"key", "anon.txt"}, {"acl", "public-read"}, {"Content-Type", "text/plain"}}, "x", "by anyone")); st != 204 {
		t.Fatalf("anonymous POST into a public-read-write bucket: %d", st)
	}
	if got, out := get(t, c, pub, "anon.txt", ""); string(got) != "by anyone" || *out.ContentType != "text/plain" {
		t.Fatalf("anonymous POST stored %q (%s)", got, *out.ContentType)
	}
	if st := status(postForm(t, f.url+"/"+priv, [][2]string{{"key", "anon.txt"}}, "x", "no")); st != 403 {
		t.Fatalf("anonymous POST into a private bucket: %d", st)
	}
	// SigV2, with ${filename}, metadata and a 201 answer
	conds := []any{map[string]string{"bucket": priv}, []any{"starts-with", "$key", "up/"}, []any{"starts-with", "$x-amz-meta-color", ""},
		map[string]string{"success_action_status": "201"}, []any{"content-length-range", 1, 1 << 20}}
	pol := postPolicy(time.Hour, conds...)
	signed := func(pol string, extra ...[2]string) [][2]string {
		fs := [][2]string{{"key", "up/${filename}"}, {"AWSAccessKeyId", f.admin.AccessKey}, {"policy", pol},
			{"signature", sigV2Policy(f.admin.SecretKey, pol)}, {"x-amz-meta-Color", "blue"}, {"success_action_status", "201"}}
		return append(fs, extra...)
	}
	resp := postForm(t, f.url+"/"+priv, signed(pol), "photo.jpg", "jpeg bytes")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(body), "<Key>up/photo.jpg</Key>") {
		t.Fatalf("signed POST: %d %s", resp.StatusCode, body)
	}
	if got, out := get(t, c, priv, "up/photo.jpg", ""); string(got) != "jpeg bytes" || out.Metadata["color"] != "blue" {
		t.Fatalf("signed POST stored %q, metadata %v", got, out.Metadata)
	}
	// refusals, each storing nothing
	for _, tc := range []struct {
		what   string
		fields [][2]string
		data   string
		want   int
	}{
		{"expired policy", signed(postPolicy(-time.Minute, conds...)), "x", 403},
		{"wrong signature", append(signed(pol)[:3], [2]string{"signature", sigV2Policy("wrong", pol)}, [2]string{"x-amz-meta-color", "b"}, [2]string{"success_action_status", "201"}), "x", 403},
		{"a field no condition covers", signed(pol, [2]string{"x-amz-meta-size", "xl"}), "x", 403},
		{"a condition not met", append([][2]string{{"key", "elsewhere/x"}}, signed(pol)[1:]...), "x", 403},
		{"over the length range", signed(pol), strings.Repeat("x", 1<<20+1), 400},
		{"under the length range", signed(pol), "", 400},
		{"no key", signed(pol)[1:], "x", 400},
		{"policy without expiration", signed(base64.StdEncoding.EncodeToString([]byte(`{"conditions":[]}`))), "x", 400},
		{"signature missing", [][2]string{{"key", "up/x"}, {"AWSAccessKeyId", f.admin.AccessKey}, {"policy", pol}}, "x", 400},
	} {
		if st := status(postForm(t, f.url+"/"+priv, tc.fields, "refused", tc.data)); st != tc.want {
			t.Errorf("%s: %d, want %d", tc.what, st, tc.want)
		}
	}
	if l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &priv}); err != nil || len(l.Contents) != 1 {
		t.Fatalf("refused POSTs left objects: %v %v", l, err)
	}
	// SigV4, a redirect, a checksum
	date := time.Now().UTC().Format("20060102")
	cred := f.admin.AccessKey + "/" + date + "/default/s3/aws4_request"
	sum := sha256.Sum256([]byte("checked"))
	pol4 := postPolicy(time.Hour, map[string]string{"bucket": pub}, map[string]string{"key": "v4"},
		map[string]string{"x-amz-credential": cred}, map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256"},
		map[string]string{"x-amz-date": date + "T000000Z"}, []any{"starts-with", "$success_action_redirect", "http://"})
	sig := hex.EncodeToString(sigV4Key(f.admin.SecretKey, date, pol4))
	fields := [][2]string{{"key", "v4"}, {"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-credential", cred}, {"x-amz-date", date + "T000000Z"},
		{"policy", pol4}, {"x-amz-signature", sig}, {"success_action_redirect", "http://example.com/done"},
		{"x-amz-checksum-sha256", base64.StdEncoding.EncodeToString(sum[:])}}
	resp = postForm(t, f.url+"/"+pub, fields, "f", "checked")
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || !strings.HasPrefix(loc, "http://example.com/done?bucket="+pub+"&key=v4&etag=%22") {
		t.Fatalf("SigV4 POST with a redirect: %d %q", resp.StatusCode, loc)
	}
	if st := status(postForm(t, f.url+"/"+pub, fields, "f", "changed")); st != 400 {
		t.Fatalf("POST whose file does not match its checksum: %d", st)
	}
	if got, _ := get(t, c, pub, "v4", ""); string(got) != "checked" {
		t.Fatalf("after a refused overwrite: %q", got)
	}
}

// sigV4Key signs a POST policy with SigV4 (region default, service s3).
func sigV4Key(secret, date, policy string) []byte {
	mac := func(key []byte, data string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(data))
		return m.Sum(nil)
	}
	k := mac(mac(mac(mac([]byte("AWS4"+secret), date), "default"), "s3"), "aws4_request")
	return mac(k, policy)
}

// TestTagging: object tags from x-amz-tagging and PutObjectTagging, their
// count on GET and HEAD, the limits (InvalidTag, nothing changed), their
// removal (the object stays), copies with the COPY and REPLACE
// directives, multipart uploads; bucket tags, NoSuchTagSet without them,
// and a DELETE ?tagging that removes the tags and not the bucket.
func TestTagging(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: 1 << 20, ChunkSize: 256 << 10})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "tagged"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("o"), Body: strings.NewReader("data"), Tagging: aws.String("size=x%20l&color=blue")}); err != nil {
		t.Fatal(err)
	}
	tagsOf := func(key string) []types.Tag {
		t.Helper()
		out, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &b, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		return out.TagSet
	}
	same := func(got []types.Tag, want ...string) bool {
		if len(got) != len(want)/2 {
			return false
		}
		for i := range got {
			if *got[i].Key != want[2*i] || *got[i].Value != want[2*i+1] {
				return false
			}
		}
		return true
	}
	if tags := tagsOf("o"); !same(tags, "color", "blue", "size", "x l") { // sorted by key, as RGW
		t.Fatalf("tags from x-amz-tagging: %+v", tags)
	}
	if h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("o")}); err != nil || h.TagCount == nil || *h.TagCount != 2 {
		t.Fatalf("HEAD tag count: %v %v", h.TagCount, err)
	}
	var eleven []types.Tag
	for i := range 11 {
		eleven = append(eleven, types.Tag{Key: aws.String(fmt.Sprint(i)), Value: aws.String("v")})
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &b, Key: aws.String("o"), Tagging: &types.Tagging{TagSet: eleven}}); code(err) != "InvalidTag" {
		t.Fatalf("11 tags: %v", err)
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &b, Key: aws.String("o"), Tagging: &types.Tagging{TagSet: []types.Tag{
		{Key: aws.String(strings.Repeat("k", 129)), Value: aws.String("v")}}}}); code(err) != "InvalidTag" {
		t.Fatalf("a 129-character key: %v", err)
	}
	if tags := tagsOf("o"); !same(tags, "color", "blue", "size", "x l") {
		t.Fatalf("tags after refused changes: %+v", tags)
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &b, Key: aws.String("o"), Tagging: &types.Tagging{TagSet: eleven[:10]}}); err != nil {
		t.Fatal(err)
	}
	if tags := tagsOf("o"); len(tags) != 10 {
		t.Fatalf("10 tags: %+v", tags)
	}
	// copies keep or replace the tags
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("kept"), CopySource: aws.String(b + "/o")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("replaced"), CopySource: aws.String(b + "/o"),
		TaggingDirective: types.TaggingDirectiveReplace, Tagging: aws.String("new=1")}); err != nil {
		t.Fatal(err)
	}
	if len(tagsOf("kept")) != 10 || !same(tagsOf("replaced"), "new", "1") {
		t.Fatal("copied tags")
	}
	if _, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: &b, Key: aws.String("o")}); err != nil {
		t.Fatal(err)
	}
	if tags := tagsOf("o"); len(tags) != 0 {
		t.Fatalf("tags after DeleteObjectTagging: %+v", tags)
	}
	if got, _ := get(t, c, b, "o", ""); string(got) != "data" {
		t.Fatal("DeleteObjectTagging touched the object")
	}
	// a multipart upload's tags go to the object
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("mp"), Tagging: aws.String("Hello=World")})
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: aws.String("mp"), UploadId: cr.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: aws.String("mp"), UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: up.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	if !same(tagsOf("mp"), "Hello", "World") {
		t.Fatal("multipart upload's tags")
	}
	// bucket tags
	if _, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: &b}); code(err) != "NoSuchTagSet" {
		t.Fatalf("bucket without tags: %v", err)
	}
	if _, err := c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: &b, Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("team"), Value: aws.String("storage")}}}}); err != nil {
		t.Fatal(err)
	}
	if bt, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: &b}); err != nil || !same(bt.TagSet, "team", "storage") {
		t.Fatalf("bucket tags: %v %v", bt, err)
	}
	if _, err := c.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &b}); err != nil {
		t.Fatalf("DeleteBucketTagging removed the bucket: %v", err)
	}
	if _, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: &b}); code(err) != "NoSuchTagSet" {
		t.Fatalf("bucket tags after DeleteBucketTagging: %v", err)
	}
}

// headGate serves a body, closing headRead once its first head bytes
// have been read and noting whether anything past them was asked for
// while held is set.
type headGate struct {
	data            []byte
	head, off       int
	headRead        chan struct{}
	held, pastEarly atomic.Bool
}

func (g *headGate) Read(p []byte) (int, error) {
	if g.off >= g.head && g.held.Load() {
		g.pastEarly.Store(true)
	}
	if g.off == len(g.data) {
		return 0, io.EOF
	}
	end := len(g.data)
	if g.off < g.head {
		end = g.head // never past the head in the same read
	}
	n := copy(p, g.data[g.off:end])
	if g.off += n; g.off == g.head {
		close(g.headRead)
	}
	return n, nil
}

// TestPrepareOverlapsHead: a large PUT reads its head from the client
// while its index prepare is in flight, but reads (and writes) nothing
// past the head before the prepare has landed; a PUT whose prepare
// fails returns the prepare's error and leaves no tail object behind.
func TestPrepareOverlapsHead(t *testing.T) {
	const chunk = 1 << 20 // the overlap's threshold (prepareOverlapMin)
	f := startGateway(t, rgw.Options{StripeSize: chunk, ChunkSize: chunk})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := f.s3(f.admin)
	b := "overlap"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	body := randBytes(rand.New(rand.NewPCG(3, 4)), 3*chunk+17)
	g := &headGate{data: body, head: chunk, headRead: make(chan struct{})}
	g.held.Store(true)
	release := f.store.HoldIndexCalls()
	done := make(chan error, 1)
	go func() {
		_, err := f.store.PutObject(ctx, bk, "k", rgw.PutInput{Body: g, Size: int64(len(body)), Owner: bk.Owner})
		done <- err
	}()
	select {
	case <-g.headRead:
	case err := <-done:
		t.Fatalf("PUT returned (%v) with its prepare held", err)
	case <-ctx.Done():
		t.Fatal("the head was not read while the prepare was held")
	}
	g.held.Store(false)
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g.pastEarly.Load() {
		t.Fatal("the body was read past its head before the prepare landed")
	}
	if got, _ := get(t, c, b, "k", ""); !bytes.Equal(got, body) {
		t.Fatal("GET returned other bytes than the PUT's")
	}

	// A prepare that fails: the bucket's index shards are gone.
	idx, err := f.conn.Pool(ctx, rgw.DefaultPools.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, oid := range bk.ShardObjects() {
		if err := idx.Remove(ctx, oid); err != nil {
			t.Fatal(err)
		}
	}
	data, err := f.conn.Pool(ctx, rgw.DefaultPools.Data)
	if err != nil {
		t.Fatal(err)
	}
	objects := func() (n int) {
		if err := data.List(ctx, func(name string) bool {
			if strings.HasPrefix(name, bk.ID+"__shadow_") {
				n++
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := objects()
	_, err = f.store.PutObject(ctx, bk, "k2", rgw.PutInput{Body: bytes.NewReader(body), Size: int64(len(body)), Owner: bk.Owner})
	if !errors.Is(err, s3err.NoSuchBucket) {
		t.Fatalf("PUT with its index gone: %v, want NoSuchBucket", err)
	}
	if after := objects(); after != before {
		t.Fatalf("%d tail objects before the failed PUT, %d after", before, after)
	}
}
