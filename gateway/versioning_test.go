package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// modelVersion is what the test expects of one version.
type modelVersion struct {
	id     string
	data   []byte // nil: a delete marker
	marker bool
}

// versionModel is S3's versioning semantics for one bucket, kept by the
// test: per key, its versions newest first.
type versionModel map[string][]modelVersion

// replaceNull drops key's null version (a Suspended write replaces it).
func (m versionModel) replaceNull(key string) {
	var kept []modelVersion
	for _, v := range m[key] {
		if v.id != "null" {
			kept = append(kept, v)
		}
	}
	m[key] = kept
}

func (m versionModel) add(key string, v modelVersion) {
	if v.id == "null" {
		m.replaceNull(key)
	}
	m[key] = append([]modelVersion{v}, m[key]...)
}

func (m versionModel) remove(key, id string) {
	var kept []modelVersion
	for _, v := range m[key] {
		if v.id != id {
			kept = append(kept, v)
		}
	}
	m[key] = kept
}

func enableVersioning(t *testing.T, c *s3.Client, bucket string, status types.BucketVersioningStatus) {
	t.Helper()
	if _, err := c.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: &bucket,
		VersioningConfiguration: &types.VersioningConfiguration{Status: status}}); err != nil {
		t.Fatalf("versioning %s: %v", status, err)
	}
}

// allVersions lists every version of the bucket through pages of size
// page, checking the markers S3 clients page with.
func allVersions(t *testing.T, c *s3.Client, bucket string, page int32) (vs []types.ObjectVersion, dms []types.DeleteMarkerEntry, order []string) {
	t.Helper()
	in := &s3.ListObjectVersionsInput{Bucket: &bucket, MaxKeys: aws.Int32(page)}
	for {
		out, err := c.ListObjectVersions(context.Background(), in)
		if err != nil {
			t.Fatalf("list versions: %v", err)
		}
		n := len(out.Versions) + len(out.DeleteMarkers)
		if n > int(page) {
			t.Fatalf("a page of %d holds %d versions", page, n)
		}
		vs, dms = append(vs, out.Versions...), append(dms, out.DeleteMarkers...)
		// the page's rows in the order S3 shows them: by key, newest first
		// (markers and versions each keep it; merge them by the stamp)
		rows := map[string]bool{}
		for _, v := range out.Versions {
			rows[*v.Key+"\x00"+*v.VersionId] = true
		}
		for _, d := range out.DeleteMarkers {
			rows[*d.Key+"\x00"+*d.VersionId] = true
		}
		for r := range rows {
			order = append(order, r)
		}
		if !aws.ToBool(out.IsTruncated) {
			return
		}
		if out.NextKeyMarker == nil {
			t.Fatal("a truncated page without NextKeyMarker")
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
}

// checkModel compares the bucket with the model: GET of each key's
// current version and of every version by id, ListObjectVersions (pages
// of 1 and of 1000) and ListObjects.
func checkModel(t *testing.T, c *s3.Client, bucket string, m versionModel) {
	t.Helper()
	ctx := context.Background()
	want := map[string][]byte{}
	wantRows := map[string]modelVersion{}
	for k, vs := range m {
		if len(vs) > 0 && !vs[0].marker {
			want[k] = vs[0].data
		}
		for i, v := range vs {
			wantRows[k+"\x00"+v.id] = v
			if v.marker {
				_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String(k), VersionId: aws.String(v.id)})
				if !isStatus(err, http.StatusMethodNotAllowed) || deleteMarkerHeader(err) != "true" {
					t.Fatalf("GET of delete marker %s/%s: %v (x-amz-delete-marker %q); want 405 with the header", k, v.id, err, deleteMarkerHeader(err))
				}
				continue
			}
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String(k), VersionId: aws.String(v.id)})
			if err != nil {
				t.Fatalf("GET %s version %d (%s): %v", k, i, v.id, err)
			}
			got, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if !bytes.Equal(got, v.data) || aws.ToString(out.VersionId) != v.id {
				t.Fatalf("GET %s version %s: %d bytes, version %q; want %d bytes", k, v.id, len(got), aws.ToString(out.VersionId), len(v.data))
			}
		}
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String(k)})
		switch {
		case len(vs) == 0:
			if code(err) != "NoSuchKey" {
				t.Fatalf("GET %s without versions: %v", k, err)
			}
		case vs[0].marker:
			if code(err) != "NoSuchKey" || deleteMarkerHeader(err) != "true" {
				t.Fatalf("GET %s behind a delete marker: %v (header %q)", k, err, deleteMarkerHeader(err))
			}
		case err != nil:
			t.Fatalf("GET %s: %v", k, err)
		}
	}
	checkListing(t, c, bucket, want)
	for _, page := range []int32{1, 3, 1000} {
		vs, dms, _ := allVersions(t, c, bucket, page)
		if len(vs)+len(dms) != len(wantRows) {
			t.Fatalf("pages of %d: %d versions and %d delete markers; want %d rows", page, len(vs), len(dms), len(wantRows))
		}
		for _, v := range vs {
			w, ok := wantRows[*v.Key+"\x00"+*v.VersionId]
			if !ok || w.marker || aws.ToInt64(v.Size) != int64(len(w.data)) || *v.ETag != md5hex(w.data) {
				t.Fatalf("listed version %s/%s (size %d) is not the model's", *v.Key, *v.VersionId, aws.ToInt64(v.Size))
			}
			if latest := m[*v.Key][0].id == *v.VersionId; aws.ToBool(v.IsLatest) != latest {
				t.Fatalf("version %s/%s IsLatest %v; want %v", *v.Key, *v.VersionId, aws.ToBool(v.IsLatest), latest)
			}
		}
		for _, d := range dms {
			if w, ok := wantRows[*d.Key+"\x00"+*d.VersionId]; !ok || !w.marker {
				t.Fatalf("listed delete marker %s/%s is not the model's", *d.Key, *d.VersionId)
			}
		}
	}
	// the newest-first order within each key
	out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, v := range out.Versions {
		got[*v.Key] = append(got[*v.Key], *v.VersionId)
	}
	for k, vs := range m {
		var ids []string
		for _, v := range vs {
			if !v.marker {
				ids = append(ids, v.id)
			}
		}
		if fmt.Sprint(ids) != fmt.Sprint(got[k]) {
			t.Fatalf("versions of %s listed %v; want newest first %v", k, got[k], ids)
		}
	}
}

// deleteMarkerHeader is the x-amz-delete-marker of a failed request.
func deleteMarkerHeader(err error) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get("x-amz-delete-marker")
	}
	return ""
}

// TestVersioning runs random PUTs, DELETEs of keys and of versions, and
// status changes (Enabled, Suspended) on a bucket whose first objects
// predate versioning, checking every version, the listings and GETs
// against S3's semantics kept by the test after each step.
func TestVersioning(t *testing.T) {
	rgw.SetSettle(50 * time.Millisecond)
	t.Cleanup(func() { rgw.SetSettle(7 * time.Second) })
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, IndexShards: 3})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "versions"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	m := versionModel{}
	keys := []string{"a", "b/c", "b/d", "e", "_x"}
	// objects from before versioning: each is its key's null version
	for _, k := range keys[:3] {
		data := randBytes(r, r.IntN(2*tChunk))
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
		m.add(k, modelVersion{id: "null", data: data})
	}
	out, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &b})
	if err != nil || out.Status != "" {
		t.Fatalf("versioning of a new bucket: %q %v; want none", out.Status, err)
	}
	enableVersioning(t, c, b, types.BucketVersioningStatusEnabled)
	if out, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &b}); err != nil || out.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("versioning after enabling: %q %v", out.Status, err)
	}
	status := types.BucketVersioningStatusEnabled
	checkModel(t, c, b, m)
	for step := range 120 {
		k := keys[r.IntN(len(keys))]
		switch op := r.IntN(10); {
		case op < 4: // PUT
			data := randBytes(r, r.IntN(3*tStripe))
			res, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: bytes.NewReader(data)})
			if err != nil {
				t.Fatalf("step %d: put %s: %v", step, k, err)
			}
			id := aws.ToString(res.VersionId)
			if status == types.BucketVersioningStatusSuspended {
				if id != "" {
					t.Fatalf("step %d: put while Suspended answered version %q; want none (the null version, as RGW)", step, id)
				}
				id = "null"
			} else if id == "" || id == "null" {
				t.Fatalf("step %d: put while Enabled made version %q", step, id)
			}
			m.add(k, modelVersion{id: id, data: data})
		case op < 6: // DELETE of the key: a delete marker
			res, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String(k)})
			if err != nil {
				t.Fatalf("step %d: delete %s: %v", step, k, err)
			}
			if !aws.ToBool(res.DeleteMarker) || aws.ToString(res.VersionId) == "" {
				t.Fatalf("step %d: delete %s: marker %v version %q", step, k, aws.ToBool(res.DeleteMarker), aws.ToString(res.VersionId))
			}
			m.add(k, modelVersion{id: *res.VersionId, marker: true})
		case op < 9: // DELETE of a version, any, or one that is not there
			id := "0123456789abcdefABCDEF0123456789"
			wasMarker := false
			if vs := m[k]; len(vs) > 0 && r.IntN(8) > 0 {
				v := vs[r.IntN(len(vs))]
				id, wasMarker = v.id, v.marker
			}
			res, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String(k), VersionId: aws.String(id)})
			if err != nil {
				t.Fatalf("step %d: delete %s version %s: %v", step, k, id, err)
			}
			if aws.ToString(res.VersionId) != id || aws.ToBool(res.DeleteMarker) != wasMarker {
				t.Fatalf("step %d: delete %s version %s answered version %q marker %v", step, k, id, aws.ToString(res.VersionId), aws.ToBool(res.DeleteMarker))
			}
			m.remove(k, id)
		default:
			status = types.BucketVersioningStatusSuspended
			if r.IntN(2) == 0 {
				status = types.BucketVersioningStatusEnabled
			}
			enableVersioning(t, c, b, status)
		}
		if step%10 == 9 {
			checkModel(t, c, b, m)
		}
	}
	checkModel(t, c, b, m)
	// a bucket keeps its versions: not empty until every one is removed
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &b}); code(err) != "BucketNotEmpty" {
		t.Fatalf("delete of a bucket with versions: %v", err)
	}
	for k, vs := range m {
		for _, v := range vs {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String(k), VersionId: aws.String(v.id)}); err != nil {
				t.Fatal(err)
			}
		}
		delete(m, k)
	}
	checkModel(t, c, b, m)
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &b}); err != nil {
		t.Fatalf("delete of the emptied bucket: %v", err)
	}
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// every removed version's tails went to GC: none is left behind
	if _, err := f.store.GCProcess(ctx, true); err != nil {
		t.Fatal(err)
	}
	var left []string
	data, err := f.conn.Pool(ctx, rgw.DefaultPools.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := data.List(ctx, func(n string) bool { left = append(left, n); return true }); err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("data pool objects left after every version was removed: %v", left)
	}
}

// TestVersioningRequests: versions through the other requests that name
// them — copy from a version, tags and ACLs of a version, multi-object
// delete of versions and markers, HEAD — and bad input answered with S3's
// errors, changing nothing.
func TestVersioningRequests(t *testing.T) {
	rgw.SetSettle(50 * time.Millisecond)
	t.Cleanup(func() { rgw.SetSettle(7 * time.Second) })
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "vreq"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"<VersioningConfiguration", `<VersioningConfiguration><Status>Sometimes</Status></VersioningConfiguration>`} {
		if st, resp := f.signed(t, f.admin, "PUT", "/"+b+"?versioning", nil, body); st != http.StatusBadRequest || !strings.Contains(resp, "MalformedXML") {
			t.Fatalf("versioning body %q: %d %s; want MalformedXML", body, st, resp)
		}
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s3(f.other).PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}}); code(err) != "AccessDenied" {
		t.Fatalf("versioning set by another user: %v", err)
	}
	var ids []string
	for i := range 3 {
		res, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: strings.NewReader(fmt.Sprintf("body %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, *res.VersionId)
	}
	// unknown and malformed version ids
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: aws.String("nosuchversion")}); code(err) != "NoSuchVersion" {
		t.Fatalf("GET of an unknown version: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: aws.String(strings.Repeat("v", 200))}); code(err) != "InvalidArgument" {
		t.Fatalf("GET of an overlong version id: %v", err)
	}
	if _, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &b, VersionIdMarker: aws.String(ids[0])}); code(err) != "InvalidArgument" {
		t.Fatalf("a version-id marker without a key marker: %v", err)
	}
	// HEAD of a version
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: aws.String(ids[1])})
	if err != nil || aws.ToString(h.VersionId) != ids[1] || aws.ToInt64(h.ContentLength) != int64(len("body 1")) {
		t.Fatalf("HEAD of version 1: %v %v", h, err)
	}
	// copy from an old version: a new version with its bytes
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("copy"), CopySource: aws.String(b + "/k?versionId=" + ids[0])})
	if err != nil || aws.ToString(cp.CopySourceVersionId) != ids[0] || aws.ToString(cp.VersionId) == "" {
		t.Fatalf("copy of version 0: %+v %v", cp, err)
	}
	if got, _ := get(t, c, b, "copy", ""); string(got) != "body 0" {
		t.Fatalf("copy of version 0 reads %q", got)
	}
	// tags of one version, not the others
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: &b, Key: aws.String("k"), VersionId: aws.String(ids[0]),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("old"), Value: aws.String("yes")}}}}); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &b, Key: aws.String("k"), VersionId: aws.String(id)})
		if err != nil || (len(tg.TagSet) == 1) != (i == 0) {
			t.Fatalf("tags of version %d: %v %v", i, tg, err)
		}
	}
	// multi-object delete: a version, a marker made, a marker removed
	del, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), VersionId: aws.String(ids[1])}, {Key: aws.String("copy")}}}})
	if err != nil || len(del.Deleted) != 2 || len(del.Errors) != 0 {
		t.Fatalf("multi-delete: %+v %v", del, err)
	}
	var marker string
	for _, d := range del.Deleted {
		switch *d.Key {
		case "k":
			if aws.ToString(d.VersionId) != ids[1] || aws.ToBool(d.DeleteMarker) {
				t.Fatalf("multi-delete of version 1 answered %+v", d)
			}
		case "copy":
			if !aws.ToBool(d.DeleteMarker) || aws.ToString(d.DeleteMarkerVersionId) == "" {
				t.Fatalf("multi-delete of copy answered %+v", d)
			}
			marker = *d.DeleteMarkerVersionId
		}
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("copy")}); !isStatus(err, http.StatusNotFound) || deleteMarkerHeader(err) != "true" {
		t.Fatalf("HEAD behind a delete marker: %v", err)
	}
	del, err = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("copy"), VersionId: aws.String(marker)}}}})
	if err != nil || len(del.Deleted) != 1 || !aws.ToBool(del.Deleted[0].DeleteMarker) {
		t.Fatalf("multi-delete of the marker: %+v %v", del, err)
	}
	if got, _ := get(t, c, b, "copy", ""); string(got) != "body 0" {
		t.Fatalf("copy after its marker went reads %q", got)
	}
	// conditional DELETEs of a key: none there, deleted already; behind a
	// delete marker, If-Match "*" holds and an ETag does not
	for _, cond := range []string{"*", `"0123456789abcdef0123456789abcdef"`} {
		if st, body := f.signed(t, f.admin, "DELETE", "/"+b+"/nokey", map[string]string{"If-Match": cond}, ""); st != http.StatusNoContent {
			t.Fatalf("DELETE If-Match %s of a missing key: %d %s", cond, st, body)
		}
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("marked"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("marked")}); err != nil {
		t.Fatal(err)
	}
	if st, body := f.signed(t, f.admin, "DELETE", "/"+b+"/marked", map[string]string{"If-Match": `"0123456789abcdef0123456789abcdef"`}, ""); st != http.StatusPreconditionFailed {
		t.Fatalf("DELETE If-Match an ETag behind a delete marker: %d %s; want 412", st, body)
	}
	if st, body := f.signed(t, f.admin, "DELETE", "/"+b+"/marked", map[string]string{"If-Match": "*"}, ""); st != http.StatusNoContent {
		t.Fatalf("DELETE If-Match * behind a delete marker: %d %s", st, body)
	}
	if got, _ := get(t, c, b, "k", ""); string(got) != "body 2" {
		t.Fatalf("k after removing version 1 reads %q", got)
	}
}

// TestVersioningCrashBetweenPhases: versioned writes whose index
// completion never lands (the gateway died after the head object's
// change) still list right, and CheckBucket --fix completes them, with
// the versions record; a versioned PUT stopped before its link leaves the
// versions as they were and its tails to GC.
func TestVersioningCrashBetweenPhases(t *testing.T) {
	rgw.SetSettle(50 * time.Millisecond)
	t.Cleanup(func() { rgw.SetSettle(7 * time.Second) })
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, IndexShards: 2})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "vcrash"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	enableVersioning(t, c, b, types.BucketVersioningStatusEnabled)
	m := versionModel{}
	put := func(k, body string) string {
		res, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		m.add(k, modelVersion{id: *res.VersionId, data: []byte(body)})
		return *res.VersionId
	}
	first := put("k", "one")
	put("gone", "soon a marker")
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	f.store.SetFailpoint("before-head")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: bytes.NewReader(randBytes(r, 3*tStripe))}); err == nil {
		t.Fatal("PUT through the failpoint succeeded")
	}
	f.store.SetFailpoint("before-complete")
	put("k", "two")
	res, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("gone")})
	if err != nil {
		t.Fatal(err)
	}
	m.add("gone", modelVersion{id: *res.VersionId, marker: true})
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: &first}); err != nil {
		t.Fatal(err)
	}
	m.remove("k", first)
	f.store.SetFailpoint("")
	checkModel(t, c, b, m)
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := f.store.CheckBucket(ctx, bk, true, true)
	if err != nil || rep.Pending != 4 || rep.Completed != 3 || rep.Abandoned != 1 {
		t.Fatalf("check --fix: %+v %v; want 4 pending: 3 completed, the stopped PUT abandoned", rep, err)
	}
	checkModel(t, c, b, m)
	if n, err := f.store.GCProcess(ctx, true); err != nil || n != 3+1 {
		t.Fatalf("gc removed %d objects, err %v; want the stopped PUT's 3 stripes and the tail of the removed version", n, err)
	}
	if st, err := f.store.Stats(ctx, bk); err != nil || st.Pending != 0 {
		t.Fatalf("stats after the fix: %+v %v", st, err)
	}
}

// TestObjectLock: a bucket created with object lock is versioned for
// good; retention (explicit, default from the configuration) and legal
// holds refuse the removal of a version — COMPLIANCE and holds for
// everyone, GOVERNANCE unless bypassed — in DELETE and DeleteObjects,
// while a DELETE of the key still adds a delete marker; retention
// lengthens freely and shortens only as S3 allows; bad configurations
// and headers get S3's errors and change nothing.
func TestObjectLock(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "locked"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b, ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &b}); err != nil || v.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("versioning of a bucket created with object lock: %q %v", v.Status, err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: &b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}}); code(err) != "InvalidBucketState" {
		t.Fatalf("suspending a locked bucket's versioning: %v", err)
	}
	if _, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String("nolock")}); code(err) != "NoSuchBucket" {
		t.Fatalf("lock configuration of a missing bucket: %v", err)
	}
	conf := func(mode types.ObjectLockRetentionMode, days, years int32) *types.ObjectLockConfiguration {
		r := &types.DefaultRetention{Mode: mode}
		if days != 0 {
			r.Days = aws.Int32(days)
		}
		if years != 0 {
			r.Years = aws.Int32(years)
		}
		return &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled, Rule: &types.ObjectLockRule{DefaultRetention: r}}
	}
	for _, bad := range []struct {
		c    *types.ObjectLockConfiguration
		want string
	}{{conf(types.ObjectLockRetentionModeGovernance, 1, 1), "MalformedXML"}, {conf("governance", 1, 0), "MalformedXML"},
		{conf(types.ObjectLockRetentionModeGovernance, -1, 0), "InvalidRetentionPeriod"}} {
		if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: &b, ObjectLockConfiguration: bad.c}); code(err) != bad.want {
			t.Fatalf("lock configuration %+v: %v; want %s", bad.c.Rule.DefaultRetention, err, bad.want)
		}
	}
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: &b, ObjectLockConfiguration: conf(types.ObjectLockRetentionModeGovernance, 1, 0)}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: &b})
	if err != nil || got.ObjectLockConfiguration.Rule.DefaultRetention.Mode != types.ObjectLockRetentionModeGovernance || aws.ToInt32(got.ObjectLockConfiguration.Rule.DefaultRetention.Days) != 1 {
		t.Fatalf("lock configuration read back: %+v %v", got, err)
	}
	// the default retention: a day of GOVERNANCE
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: strings.NewReader("kept")})
	if err != nil {
		t.Fatal(err)
	}
	v1 := *put.VersionId
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("k")})
	if err != nil || h.ObjectLockMode != types.ObjectLockModeGovernance || time.Until(aws.ToTime(h.ObjectLockRetainUntilDate)) < 23*time.Hour {
		t.Fatalf("HEAD of a version under the default retention: mode %q until %v, %v", h.ObjectLockMode, h.ObjectLockRetainUntilDate, err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1}); code(err) != "AccessDenied" {
		t.Fatalf("removing a GOVERNANCE-locked version: %v", err)
	}
	// a delete marker is always allowed; the version stays readable
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k")}); err != nil {
		t.Fatalf("a delete marker over a locked version: %v", err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1})
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	// COMPLIANCE: no bypass, shortening refused, lengthening allowed
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	put2, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("c"), Body: strings.NewReader("compliant"),
		ObjectLockMode: types.ObjectLockModeCompliance, ObjectLockRetainUntilDate: &until})
	if err != nil {
		t.Fatal(err)
	}
	v2 := *put2.VersionId
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("c"), VersionId: &v2, BypassGovernanceRetention: aws.Bool(true)}); code(err) != "AccessDenied" {
		t.Fatalf("removing a COMPLIANCE-locked version with bypass: %v", err)
	}
	shorter, longer := until.Add(-time.Hour), until.Add(time.Hour)
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: &b, Key: aws.String("c"), BypassGovernanceRetention: aws.Bool(true),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: &shorter}}); code(err) != "AccessDenied" {
		t.Fatalf("shortening a COMPLIANCE retention: %v", err)
	}
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: &b, Key: aws.String("c"),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: &longer}}); err != nil {
		t.Fatalf("lengthening a COMPLIANCE retention: %v", err)
	}
	if r, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: &b, Key: aws.String("c")}); err != nil || !aws.ToTime(r.Retention.RetainUntilDate).Equal(longer) {
		t.Fatalf("retention read back: %+v %v; want until %v", r, err, longer)
	}
	// GOVERNANCE shortened only with bypass, then removed with bypass
	soon := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1,
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: &soon}}); code(err) != "AccessDenied" {
		t.Fatalf("shortening a GOVERNANCE retention without bypass: %v", err)
	}
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1, BypassGovernanceRetention: aws.Bool(true),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeGovernance, RetainUntilDate: &soon}}); err != nil {
		t.Fatalf("shortening a GOVERNANCE retention with bypass: %v", err)
	}
	// a legal hold refuses even the bypass; multi-delete answers per key
	if _, err := c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1,
		LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOn}}); err != nil {
		t.Fatal(err)
	}
	del, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, BypassGovernanceRetention: aws.Bool(true), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), VersionId: &v1}, {Key: aws.String("c"), VersionId: &v2}}}})
	if err != nil || len(del.Errors) != 2 || len(del.Deleted) != 0 || aws.ToString(del.Errors[0].Code) != "AccessDenied" || aws.ToString(del.Errors[0].VersionId) != v1 {
		t.Fatalf("multi-delete of a held and a COMPLIANCE version: %+v %v", del, err)
	}
	if _, err := c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1,
		LegalHold: &types.ObjectLockLegalHold{Status: "MAYBE"}}); code(err) != "MalformedXML" {
		t.Fatalf("legal hold status MAYBE: %v", err)
	}
	if _, err := c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1,
		LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOff}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k"), VersionId: &v1, BypassGovernanceRetention: aws.Bool(true)}); err != nil {
		t.Fatalf("removing a GOVERNANCE version with bypass, hold off: %v", err)
	}
	// bad retention input, and lock requests on a bucket without lock
	past := time.Now().Add(-time.Hour)
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: &b, Key: aws.String("c"),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: &past}}); code(err) != "InvalidArgument" {
		t.Fatalf("retention in the past: %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("half"), Body: strings.NewReader("x"), ObjectLockMode: types.ObjectLockModeGovernance}); code(err) != "InvalidArgument" {
		t.Fatalf("a lock mode without a date: %v", err)
	}
	plain := "plain"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &plain}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &plain, Key: aws.String("x"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: &plain, Key: aws.String("x")}); code(err) != "InvalidRequest" {
		t.Fatalf("retention in a bucket without lock: %v", err)
	}
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: &plain, ObjectLockConfiguration: conf(types.ObjectLockRetentionModeGovernance, 1, 0)}); code(err) != "InvalidBucketState" {
		t.Fatalf("lock configuration on an unversioned bucket: %v", err)
	}
	if _, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: &plain}); code(err) != "ObjectLockConfigurationNotFoundError" {
		t.Fatalf("lock configuration of a bucket without: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("c"), VersionId: &v2}); err != nil {
		t.Fatalf("the COMPLIANCE version after all that: %v", err)
	}
}

// TestVersioningStaleAndRetried: cases a second reader found. A
// multipart completion retried after its upload's cleanup was lost links
// no second version sharing the first's tails; removing a noncurrent
// version leaves the key's entry naming the current version (bucket check
// finds nothing stale, lifecycle still expires it); and writes holding a
// bucket read before versioning was enabled (a long upload, a lifecycle
// pass) read it again rather than overwrite or remove a head with
// versions.
func TestVersioningStaleAndRetried(t *testing.T) {
	rgw.SetSettle(50 * time.Millisecond)
	t.Cleanup(func() { rgw.SetSettle(7 * time.Second) })
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk, IndexShards: 2, LCDebugInterval: time.Millisecond})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "vstale"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: strings.NewReader("original")}); err != nil {
		t.Fatal(err)
	}
	stale, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	enableVersioning(t, c, b, types.BucketVersioningStatusEnabled)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: strings.NewReader("v1")}); err != nil {
		t.Fatal(err)
	}
	rgw.AgeBucket(stale, time.Minute)
	late := []byte("a late unversioned PUT")
	if _, err := f.store.PutObject(ctx, stale, "k", rgw.PutInput{Body: bytes.NewReader(late), Size: int64(len(late)), Owner: stale.Owner}); !errors.Is(err, s3err.ServiceUnavailable) {
		t.Fatalf("a PUT holding the unversioned bucket: %v; want ServiceUnavailable, the head untouched", err)
	}
	if _, err := f.store.DeleteVersion(ctx, stale, "k", "", stale.Owner, rgw.DeleteCond{}); err != nil {
		t.Fatal(err)
	}
	if got := readVersion(t, c, b, "k", "null"); string(got) != "original" {
		t.Fatalf("the null version after stale writes reads %q", got)
	}
	vs, dms, _ := allVersions(t, c, b, 100)
	if len(vs) != 2 || len(dms) != 1 {
		t.Fatalf("after a stale PUT and DELETE: %d versions, %d delete markers; want the 2 versions under a marker", len(vs), len(dms))
	}
	// a multipart completion retried after a lost cleanup: one version
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("m")})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 300<<10)
	p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: aws.String("m"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	cin := &s3.CompleteMultipartUploadInput{Bucket: &b, Key: aws.String("m"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p.ETag}}}}
	f.store.SetFailpoint("complete-before-cleanup")
	r1, err := c.CompleteMultipartUpload(ctx, cin)
	if err != nil {
		t.Fatal(err)
	}
	f.store.SetFailpoint("")
	r2, err := c.CompleteMultipartUpload(ctx, cin)
	if err != nil || aws.ToString(r2.VersionId) != aws.ToString(r1.VersionId) {
		t.Fatalf("retried completion: version %q (first %q), %v; want the same version", aws.ToString(r2.VersionId), aws.ToString(r1.VersionId), err)
	}
	// a noncurrent version removed: the entry still names the current one
	r3, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("m"), Body: strings.NewReader("newer")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("m"), VersionId: r1.VersionId}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := f.store.CheckBucket(ctx, bk, false, true); err != nil || rep.StaleEntries != 0 {
		t.Fatalf("bucket check after removing a noncurrent version: %+v %v", rep, err)
	}
	// lifecycle expiration of the current version: a delete marker
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: &b, LifecycleConfiguration: &types.BucketLifecycleConfiguration{
		Rules: []types.LifecycleRule{{ID: aws.String("x"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("m")}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)}}}}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := f.store.LCProcess(ctx, true, io.Discard); err != nil {
			t.Fatal(err)
		}
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("m")})
		if deleteMarkerHeader(err) == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lifecycle did not expire m (current %s) in 10 s: HEAD %v", aws.ToString(r3.VersionId), err)
		}
	}
	if got := readVersion(t, c, b, "m", *r3.VersionId); string(got) != "newer" {
		t.Fatalf("the expired version reads %q", got)
	}
}

// readVersion reads version vid of key.
func readVersion(t *testing.T, c *s3.Client, bucket, key, vid string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key, VersionId: &vid})
	if err != nil {
		t.Fatalf("GET %s version %s: %v", key, vid, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVersioningECDataPool: versions on an erasure-coded data pool
// (without overwrites), which takes xattrs and full writes but not
// truncation: a plain object becomes the null version, versions are
// added and the inline null version removed and replaced.
func TestVersioningECDataPool(t *testing.T) {
	rgw.SetSettle(50 * time.Millisecond)
	t.Cleanup(func() { rgw.SetSettle(7 * time.Second) })
	pools := rgw.DefaultPools
	pools.Data = "ec21"
	f := startGatewayN(t, 3, rgw.Options{Pools: pools, StripeSize: tStripe, ChunkSize: tChunk}, func(ctx context.Context, c *client.Conn) {
		if _, err := c.MonCommand(ctx, "osd erasure-code-profile set", map[string]string{"name": "p21", "args": "k=2 m=1 crush-failure-domain=osd"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.MonCommand(ctx, "pool create", map[string]string{"name": "ec21", "type": "erasure", "erasure_code_profile": "p21"}); err != nil {
			t.Fatal(err)
		}
	})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "ecversions"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	m := versionModel{}
	for _, k := range []string{"a", "b"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: strings.NewReader("plain " + k)}); err != nil {
			t.Fatal(err)
		}
		m.add(k, modelVersion{id: "null", data: []byte("plain " + k)})
	}
	enableVersioning(t, c, b, types.BucketVersioningStatusEnabled)
	for i, k := range []string{"a", "b", "a"} {
		body := fmt.Sprintf("version %d of %s", i, k)
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		m.add(k, modelVersion{id: *out.VersionId, data: []byte(body)})
	}
	// the inline null version of a, removed; b's, replaced while Suspended
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("a"), VersionId: aws.String("null")}); err != nil {
		t.Fatalf("removing an inline null version on an EC pool: %v", err)
	}
	m.remove("a", "null")
	enableVersioning(t, c, b, types.BucketVersioningStatusSuspended)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("b"), Body: strings.NewReader("new null")}); err != nil {
		t.Fatalf("replacing the null version on an EC pool: %v", err)
	}
	m.add("b", modelVersion{id: "null", data: []byte("new null")})
	checkModel(t, c, b, m)
}
