package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// sseC returns an SSE-C key's three header values.
func sseC(key []byte) (alg, k, sum *string) {
	m := md5.Sum(key)
	return aws.String("AES256"), aws.String(base64.StdEncoding.EncodeToString(key)), aws.String(base64.StdEncoding.EncodeToString(m[:]))
}

// TestSSE: SSE-S3 and SSE-C objects of sizes around the head, chunk and
// stripe boundaries, and multipart ones, read back whole and by ranges
// (and the data pool holds none of their plaintext); SSE-C refuses reads
// without the key (InvalidRequest) and with another (AccessDenied);
// copies decrypt with the source's key and encrypt with the
// destination's; a rotated master key leaves older objects readable;
// SSE-KMS, malformed keys and SSE-C over plain HTTP (rgw_crypt_require_ssl)
// are refused, storing nothing.
func TestSSE(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "sse"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	key := randBytes(r, 32)
	alg, k64, kmd5 := sseC(key)
	plain := map[string][]byte{}
	for _, n := range []int{0, 100, tChunk + 5, 3*tStripe + 7} {
		for _, mode := range []string{"s3", "c"} {
			name := mode + "-" + strconv.Itoa(n)
			data := randBytes(r, n)
			in := &s3.PutObjectInput{Bucket: &b, Key: &name, Body: bytes.NewReader(data)}
			if mode == "s3" {
				in.ServerSideEncryption = types.ServerSideEncryptionAes256
			} else {
				in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = alg, k64, kmd5
			}
			out, err := c.PutObject(ctx, in)
			if err != nil {
				t.Fatalf("PUT %s: %v", name, err)
			}
			if mode == "s3" && (out.ServerSideEncryption != types.ServerSideEncryptionAes256 || *out.ETag != md5hex(data)) {
				t.Fatalf("PUT %s: encryption %q ETag %s; want AES256 and the plaintext's MD5", name, out.ServerSideEncryption, *out.ETag)
			}
			if mode == "c" && aws.ToString(out.SSECustomerKeyMD5) != *kmd5 {
				t.Fatalf("PUT %s: key MD5 %q", name, aws.ToString(out.SSECustomerKeyMD5))
			}
			plain[name] = data
		}
	}
	get := func(name, rng string, withKey bool) ([]byte, error) {
		in := &s3.GetObjectInput{Bucket: &b, Key: &name}
		if rng != "" {
			in.Range = &rng
		}
		if withKey {
			in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = alg, k64, kmd5
		}
		out, err := c.GetObject(ctx, in)
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	for name, data := range plain {
		withKey := strings.HasPrefix(name, "c-")
		got, err := get(name, "", withKey)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("GET %s: %d bytes, %v; want its %d", name, len(got), err, len(data))
		}
		if len(data) > 40 {
			rgs := [][2]int{{1, 17}, {15, 33}, {len(data) - 20, len(data) - 1}}
			if len(data) > tChunk+40 {
				rgs = append(rgs, [2]int{tChunk - 3, tChunk + 40}, [2]int{tStripe - 5, len(data) - 1})
			}
			for _, rg := range rgs {
				got, err := get(name, "bytes="+strconv.Itoa(rg[0])+"-"+strconv.Itoa(rg[1]), withKey)
				if err != nil || !bytes.Equal(got, data[rg[0]:rg[1]+1]) {
					t.Fatalf("GET %s range %v: %v", name, rg, err)
				}
			}
		}
	}
	// SSE-C without the key, with another
	if _, err := get("c-100", "", false); code(err) != "InvalidRequest" {
		t.Fatalf("GET of an SSE-C object without its key: %v", err)
	}
	other := randBytes(r, 32)
	oa, ok, om := sseC(other)
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("c-100"), SSECustomerAlgorithm: oa, SSECustomerKey: ok, SSECustomerKeyMD5: om}); code(err) != "AccessDenied" {
		t.Fatalf("GET of an SSE-C object with another key: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("c-100")}); !isStatus(err, http.StatusBadRequest) {
		t.Fatalf("HEAD of an SSE-C object without its key: %v", err)
	}
	// copy: SSE-C source → SSE-S3 destination
	big := "c-" + strconv.Itoa(3*tStripe+7)
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("copied"), CopySource: aws.String(b + "/" + big),
		CopySourceSSECustomerAlgorithm: alg, CopySourceSSECustomerKey: k64, CopySourceSSECustomerKeyMD5: kmd5, ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
		t.Fatal(err)
	}
	if got, err := get("copied", "", false); err != nil || !bytes.Equal(got, plain[big]) {
		t.Fatalf("the copy of an SSE-C object as SSE-S3: %v", err)
	}
	// multipart, both modes, read across part boundaries
	for _, mode := range []string{"s3", "c"} {
		name := "mp-" + mode
		cin := &s3.CreateMultipartUploadInput{Bucket: &b, Key: &name}
		if mode == "s3" {
			cin.ServerSideEncryption = types.ServerSideEncryptionAes256
		} else {
			cin.SSECustomerAlgorithm, cin.SSECustomerKey, cin.SSECustomerKeyMD5 = alg, k64, kmd5
		}
		up, err := c.CreateMultipartUpload(ctx, cin)
		if err != nil {
			t.Fatal(err)
		}
		var all []byte
		var parts []types.CompletedPart
		for i := int32(1); i <= 2; i++ {
			data := randBytes(r, 5<<20+int(i)*1000)
			pin := &s3.UploadPartInput{Bucket: &b, Key: &name, UploadId: up.UploadId, PartNumber: aws.Int32(i), Body: bytes.NewReader(data)}
			if mode == "c" {
				pin.SSECustomerAlgorithm, pin.SSECustomerKey, pin.SSECustomerKeyMD5 = alg, k64, kmd5
			}
			p, err := c.UploadPart(ctx, pin)
			if err != nil {
				t.Fatalf("part %d of %s: %v", i, name, err)
			}
			all = append(all, data...)
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(i), ETag: p.ETag})
		}
		if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &name, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
			t.Fatal(err)
		}
		if got, err := get(name, "", mode == "c"); err != nil || !bytes.Equal(got, all) {
			t.Fatalf("GET %s: %v", name, err)
		}
		cut := 5<<20 + 1000
		if got, err := get(name, "bytes="+strconv.Itoa(cut-10)+"-"+strconv.Itoa(cut+10), mode == "c"); err != nil || !bytes.Equal(got, all[cut-10:cut+11]) {
			t.Fatalf("GET %s across its parts: %v", name, err)
		}
		plain[name] = all
	}
	// a rotated master key: new objects sealed by it, old ones readable
	if _, err := f.store.RotateMasterKey(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("after-rotation"), Body: strings.NewReader("new key"), ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
		t.Fatal(err)
	}
	if got, err := get("after-rotation", "", false); err != nil || string(got) != "new key" {
		t.Fatalf("an object sealed by the rotated key: %q %v", got, err)
	}
	if got, err := get("s3-100", "", false); err != nil || !bytes.Equal(got, plain["s3-100"]) {
		t.Fatalf("an object sealed before the rotation: %v", err)
	}
	// refused: SSE-KMS, a key whose MD5 does not match, both kinds
	for _, h := range []map[string]string{
		{"x-amz-server-side-encryption": "aws:kms"},
		{"x-amz-server-side-encryption": "AES128"},
		{"x-amz-server-side-encryption-customer-algorithm": "AES256", "x-amz-server-side-encryption-customer-key": *k64, "x-amz-server-side-encryption-customer-key-md5": *om},
		{"x-amz-server-side-encryption-customer-algorithm": "AES256", "x-amz-server-side-encryption-customer-key": "c2hvcnQ=", "x-amz-server-side-encryption-customer-key-md5": "x"},
		{"x-amz-server-side-encryption": "AES256", "x-amz-server-side-encryption-customer-algorithm": "AES256", "x-amz-server-side-encryption-customer-key": *k64, "x-amz-server-side-encryption-customer-key-md5": *kmd5},
	} {
		if st, body := f.signed(t, f.admin, "PUT", "/"+b+"/refused", h, "secret"); st/100 != 4 && st != 501 {
			t.Fatalf("PUT with %v: %d %s", h, st, body)
		}
	}
	wrong := md5.Sum([]byte("not the body"))
	if st, body := f.signed(t, f.admin, "PUT", "/"+b+"/refused", map[string]string{"content-md5": base64.StdEncoding.EncodeToString(wrong[:]),
		"x-amz-server-side-encryption-customer-algorithm": "AES256", "x-amz-server-side-encryption-customer-key": *k64, "x-amz-server-side-encryption-customer-key-md5": *kmd5}, "secret"); st != 400 || !strings.Contains(body, "BadDigest") {
		t.Fatalf("an SSE-C PUT with a wrong Content-MD5: %d %s", st, body)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("refused")}); !isStatus(err, http.StatusNotFound) {
		t.Fatalf("a refused encrypted PUT stored an object: %v", err)
	}
	f.noPlaintext(t, "", plain)
	// SSE-C over plain HTTP when rgw_crypt_require_ssl holds
	g := startGateway(t, rgw.Options{CryptRequireSSL: true})
	gc := g.s3(g.admin)
	if _, err := gc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("x"), Body: strings.NewReader("x"),
		SSECustomerAlgorithm: alg, SSECustomerKey: k64, SSECustomerKeyMD5: kmd5}); code(err) != "InvalidRequest" {
		t.Fatalf("SSE-C over plain HTTP with rgw_crypt_require_ssl: %v", err)
	}
}

// noPlaintext fails t if any RADOS object of the data pool whose name
// begins with prefix holds 32 bytes from the start, middle or end of one
// of plain's objects (those of 64 bytes or more).
func (f *fixture) noPlaintext(t *testing.T, prefix string, plain map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	data, err := f.conn.Pool(ctx, rgw.DefaultPools.Data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := data.List(ctx, func(n string) bool { names = append(names, n); return true }); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		raw, err := data.Read(ctx, n, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range plain {
			for _, off := range []int{0, len(p) / 2, len(p) - 32} {
				if len(p) >= 64 && off >= 0 && bytes.Contains(raw, p[off:off+32]) {
					t.Fatalf("RADOS object %s holds plaintext of %s at %d", n, name, off)
				}
			}
		}
	}
}

// TestBucketDefaultEncryption: PutBucketEncryption's AES256 rule makes
// every write that asks for no encryption SSE-S3 (PUT, multipart, copy,
// POST), kept out of the data pool in the clear; a write's own SSE-C key
// wins; GET and HEAD answer AES256 and refuse the header on a read;
// DELETE ?encryption stops new writes being encrypted and leaves the old
// readable; bad configurations (malformed XML, two rules, aws:kms, an
// unknown algorithm, a KMS key with AES256) and another user's are
// refused, changing nothing; a log bucket may not be encrypted.
func TestBucketDefaultEncryption(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b, src := "enc", "src"
	for _, n := range []string{b, src} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(n)}); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	plain := map[string][]byte{}
	notFound := func() {
		t.Helper()
		if _, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: &b}); code(err) != "ServerSideEncryptionConfigurationNotFoundError" || !isStatus(err, 404) {
			t.Fatalf("GET ?encryption of a bucket without default encryption: %v", err)
		}
	}
	notFound()
	if _, err := c.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: &b}); err != nil {
		t.Fatalf("DELETE ?encryption of a bucket without one: %v", err)
	}
	// bad configurations
	for _, tc := range []struct{ body, want string }{
		{"<ServerSideEncryptionConfiguration><Rule>", "MalformedXML"},
		{"<ServerSideEncryptionConfiguration></ServerSideEncryptionConfiguration>", "MalformedXML"},
		{"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>", "MalformedXML"},
		{"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>", "NotImplemented"},
		{"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES128</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>", "MalformedXML"},
		{"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>", "InvalidArgument"},
	} {
		if st, body := f.signed(t, f.admin, "PUT", "/"+b+"?encryption", nil, tc.body); !strings.Contains(body, "<Code>"+tc.want+"</Code>") {
			t.Fatalf("PUT ?encryption %s: %d %s; want %s", tc.body, st, body, tc.want)
		}
		notFound()
	}
	rule := &types.ServerSideEncryptionConfiguration{Rules: []types.ServerSideEncryptionRule{{BucketKeyEnabled: aws.Bool(true),
		ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAes256}}}}
	if _, err := f.s3(f.other).PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: &b, ServerSideEncryptionConfiguration: rule}); code(err) != "AccessDenied" {
		t.Fatalf("PUT ?encryption by another user: %v", err)
	}
	notFound()
	// a plaintext source to copy from, written before the rule
	srcData := randBytes(r, 3*tStripe+11)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &src, Key: aws.String("s"), Body: bytes.NewReader(srcData)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: &b, ServerSideEncryptionConfiguration: rule}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: &b})
	if err != nil || len(got.ServerSideEncryptionConfiguration.Rules) != 1 {
		t.Fatalf("GET ?encryption: %+v %v", got, err)
	}
	if gr := got.ServerSideEncryptionConfiguration.Rules[0]; gr.ApplyServerSideEncryptionByDefault.SSEAlgorithm != types.ServerSideEncryptionAes256 || !aws.ToBool(gr.BucketKeyEnabled) {
		t.Fatalf("GET ?encryption: %+v", gr)
	}
	// PUT with no encryption header
	for _, n := range []int{100, 3*tStripe + 7} {
		name := "put-" + strconv.Itoa(n)
		data := randBytes(r, n)
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &name, Body: bytes.NewReader(data)})
		if err != nil || out.ServerSideEncryption != types.ServerSideEncryptionAes256 {
			t.Fatalf("PUT %s into a default-encrypted bucket: %v, encryption %q", name, err, out.ServerSideEncryption)
		}
		plain[name] = data
	}
	// copy
	if out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("copied"), CopySource: aws.String(src + "/s")}); err != nil || out.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatalf("copy into a default-encrypted bucket: %v", err)
	}
	plain["copied"] = srcData
	// multipart
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("mp")})
	if err != nil || up.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatalf("CreateMultipartUpload into a default-encrypted bucket: %v", err)
	}
	var all []byte
	var parts []types.CompletedPart
	for i := int32(1); i <= 2; i++ {
		data := randBytes(r, 5<<20+int(i))
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: aws.String("mp"), UploadId: up.UploadId, PartNumber: aws.Int32(i), Body: bytes.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, data...)
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(i), ETag: p.ETag})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: aws.String("mp"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	plain["mp"] = all
	// POST, signed with a policy
	pol := postPolicy(time.Hour, map[string]string{"bucket": b}, []any{"starts-with", "$key", ""})
	postData := randBytes(r, 4096)
	resp := postForm(t, f.url+"/"+b, [][2]string{{"key", "posted"}, {"AWSAccessKeyId", f.admin.AccessKey}, {"policy", pol},
		{"signature", sigV2Policy(f.admin.SecretKey, pol)}}, "f", string(postData))
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("x-amz-server-side-encryption") != "AES256" {
		t.Fatalf("POST into a default-encrypted bucket: %d, encryption %q", resp.StatusCode, resp.Header.Get("x-amz-server-side-encryption"))
	}
	plain["posted"] = postData
	// POST's own field, into the bucket without a default: AES256 encrypts,
	// another algorithm and SSE-C's fields are refused, storing nothing
	for i, tc := range []struct {
		field [2]string
		want  int
	}{
		{[2]string{"x-amz-server-side-encryption", "AES256"}, 204},
		{[2]string{"x-amz-server-side-encryption", "AES128"}, 400},
		{[2]string{"x-amz-server-side-encryption-customer-algorithm", "AES256"}, 501},
	} {
		spol := postPolicy(time.Hour, map[string]string{"bucket": src}, []any{"starts-with", "$key", ""}, []any{"starts-with", "$" + tc.field[0], ""})
		resp := postForm(t, f.url+"/"+src, [][2]string{{"key", "posted-" + strconv.Itoa(i)}, {"AWSAccessKeyId", f.admin.AccessKey}, {"policy", spol},
			{"signature", sigV2Policy(f.admin.SecretKey, spol)}, tc.field}, "f", "posted with a field")
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("POST with %v: %d, want %d", tc.field, resp.StatusCode, tc.want)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &src, Key: aws.String("posted-" + strconv.Itoa(i))})
		if tc.want == 204 && (err != nil || h.ServerSideEncryption != types.ServerSideEncryptionAes256) {
			t.Fatalf("POST with %v: HEAD %v, encryption %q", tc.field, err, h.ServerSideEncryption)
		}
		if tc.want != 204 && !isStatus(err, http.StatusNotFound) {
			t.Fatalf("a refused POST with %v stored an object: %v", tc.field, err)
		}
	}
	// SSE-C asked for: the customer's key, not the default
	alg, k64, kmd5 := sseC(randBytes(r, 32))
	if out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("customer"), Body: strings.NewReader("customer's"),
		SSECustomerAlgorithm: alg, SSECustomerKey: k64, SSECustomerKeyMD5: kmd5}); err != nil || out.ServerSideEncryption != "" || aws.ToString(out.SSECustomerKeyMD5) != *kmd5 {
		t.Fatalf("an SSE-C PUT into a default-encrypted bucket: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("customer")}); code(err) != "InvalidRequest" {
		t.Fatalf("GET of an SSE-C object in a default-encrypted bucket without its key: %v", err)
	}
	check := func() {
		t.Helper()
		for name, data := range plain {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: &name})
			if err != nil {
				t.Fatalf("GET %s: %v", name, err)
			}
			body, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil || !bytes.Equal(body, data) || out.ServerSideEncryption != types.ServerSideEncryptionAes256 {
				t.Fatalf("GET %s: %d bytes, %v, encryption %q; want its %d, AES256", name, len(body), err, out.ServerSideEncryption, len(data))
			}
		}
	}
	check()
	eb, err := f.store.LookupBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	f.noPlaintext(t, eb.ID, plain) // the source bucket holds the copy's plaintext
	// a read that sends x-amz-server-side-encryption
	if st, body := f.signed(t, f.admin, "HEAD", "/"+b+"/put-100", map[string]string{"x-amz-server-side-encryption": "AES256"}, ""); st != 400 {
		t.Fatalf("HEAD with x-amz-server-side-encryption: %d %s", st, body)
	}
	// a log bucket may not be encrypted; one that gains default
	// encryption after logging was set up gets its log objects encrypted
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &src, BucketLoggingStatus: &types.BucketLoggingStatus{
		LoggingEnabled: &types.LoggingEnabled{TargetBucket: &b, TargetPrefix: aws.String("log/")}}}); code(err) != "InvalidArgument" {
		t.Fatalf("logging into a default-encrypted bucket: %v", err)
	}
	logs := "logs"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &logs}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &logs, Policy: aws.String(logPolicy(logs, "log/*", src, "tester"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketLogging(ctx, &s3.PutBucketLoggingInput{Bucket: &src, BucketLoggingStatus: &types.BucketLoggingStatus{
		LoggingEnabled: &types.LoggingEnabled{TargetBucket: &logs, TargetPrefix: aws.String("log/")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: &logs, ServerSideEncryptionConfiguration: rule}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &src, Key: aws.String("s")}); err != nil {
		t.Fatal(err)
	}
	st, body := f.signed(t, f.admin, http.MethodPost, "/"+src+"?logging", nil, "")
	var flushed struct {
		Key string `xml:"FlushedLoggingObject"`
	}
	if st != 200 || xml.Unmarshal([]byte(body), &flushed) != nil || flushed.Key == "" {
		t.Fatalf("flush: %d %s", st, body)
	}
	if h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &logs, Key: &flushed.Key}); err != nil || h.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatalf("a log object in a bucket given default encryption later: %v", err)
	}
	// DELETE: new writes plain, old ones still readable
	if _, err := c.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	notFound()
	if out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("after"), Body: strings.NewReader("plain")}); err != nil || out.ServerSideEncryption != "" {
		t.Fatalf("PUT after DELETE ?encryption: %v, encryption %q", err, out.ServerSideEncryption)
	}
	check()
	// a copy onto itself is legal when it asks for encryption, and
	// encrypts the object in place
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("after"), CopySource: aws.String(b + "/after")}); code(err) != "InvalidRequest" {
		t.Fatalf("a copy onto itself changing nothing: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("after"), CopySource: aws.String(b + "/after"),
		ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
		t.Fatalf("a copy onto itself asking for SSE-S3: %v", err)
	}
	plain["after"] = []byte("plain")
	check()
}
