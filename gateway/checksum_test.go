package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/shoal-project/shoal/gateway/rgw"
)

func b64sha256(b []byte) string {
	s := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

// TestChecksums: additional checksums are checked, kept and answered —
// every expected value computed here with the standard library from the
// bytes sent.
//
//   - PutObject with a SHA256 value (a header): a wrong value is
//     BadDigest and leaves the previous version; the right one is answered
//     on the PUT, not on a plain HEAD, and on HEAD and GET with
//     ChecksumMode ENABLED (the SDK then checks the body against it), not
//     for a Range; GetObjectAttributes gives it.
//   - CRC64NVME computed by the SDK (aws-chunked trailer) is kept too.
//   - CopyObject gives the copy the source's algorithm.
//   - A SHA256 COMPOSITE multipart upload: parts answer their checksums,
//     ListParts lists them, a completion naming a wrong object checksum is
//     BadDigest and one naming a wrong part checksum InvalidPart; the
//     object's is the digest of the parts' digests with "-3", answered by
//     the completion, HEAD, GetObjectAttributes (with each part's), and a
//     partNumber GET gives that part's.
//   - A CRC32C FULL_OBJECT upload's checksum is the CRC of the whole object.
func TestChecksums(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "sums"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	body := randBytes(r, 3*tStripe+17) // head and tails
	want := b64sha256(body)
	key := aws.String("obj")
	old := []byte("previous version")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: key, Body: bytes.NewReader(old)}); err != nil {
		t.Fatal(err)
	}
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: key, Body: bytes.NewReader(body), ChecksumSHA256: aws.String(b64sha256(old))})
	if code(err) != "BadDigest" {
		t.Fatalf("PUT with a wrong SHA256: %v, want BadDigest", err)
	}
	if got, _ := get(t, c, b, "obj", ""); !bytes.Equal(got, old) {
		t.Fatal("a PUT refused for its checksum changed the object")
	}
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: key, Body: bytes.NewReader(body), ChecksumSHA256: &want})
	if err != nil || aws.ToString(put.ChecksumSHA256) != want {
		t.Fatalf("PUT with its SHA256: %+v %v", put, err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: key})
	if err != nil || head.ChecksumSHA256 != nil {
		t.Fatalf("HEAD without ChecksumMode: %v %v", head.ChecksumSHA256, err)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumSHA256) != want || head.ChecksumType != types.ChecksumTypeFullObject {
		t.Fatalf("HEAD with ChecksumMode: %v %q %v", head.ChecksumSHA256, head.ChecksumType, err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(out.ChecksumSHA256) != want {
		t.Fatalf("GET with ChecksumMode: %v %v", out, err)
	}
	var got bytes.Buffer
	if _, err := got.ReadFrom(out.Body); err != nil || !bytes.Equal(got.Bytes(), body) {
		t.Fatalf("GET body (checked by the SDK against the checksum): %v", err)
	}
	out.Body.Close()
	out, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: key, ChecksumMode: types.ChecksumModeEnabled, Range: aws.String("bytes=0-9")})
	if err != nil || out.ChecksumSHA256 != nil {
		t.Fatalf("ranged GET with ChecksumMode: %v %v", out, err)
	}
	out.Body.Close()
	attrs, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: key, ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesChecksum}})
	if err != nil || attrs.Checksum == nil || aws.ToString(attrs.Checksum.ChecksumSHA256) != want || attrs.Checksum.ChecksumType != types.ChecksumTypeFullObject {
		t.Fatalf("GetObjectAttributes Checksum: %+v %v", attrs, err)
	}

	nvme := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, crc64.Checksum(body, crc64.MakeTable(0x9a6c9329ac4bc9b5))))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("nvme"), Body: bytes.NewReader(body), ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme}); err != nil {
		t.Fatal(err)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("nvme"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumCRC64NVME) != nvme {
		t.Fatalf("CRC64NVME the SDK sent: %v, want %s (%v)", aws.ToString(head.ChecksumCRC64NVME), nvme, err)
	}

	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("copy"), CopySource: aws.String(b + "/obj")})
	if err != nil || aws.ToString(cp.CopyObjectResult.ChecksumSHA256) != want {
		t.Fatalf("CopyObject: %+v %v", cp, err)
	}

	// multipart, SHA256 COMPOSITE
	parts := [][]byte{randBytes(r, rgw.MinPartSize), randBytes(r, rgw.MinPartSize), randBytes(r, 1000)}
	mkey := aws.String("multi")
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: mkey, ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil || up.ChecksumAlgorithm != types.ChecksumAlgorithmSha256 || up.ChecksumType != types.ChecksumTypeComposite {
		t.Fatalf("CreateMultipartUpload: %+v %v", up, err)
	}
	var done []types.CompletedPart
	var cat []byte
	for i, p := range parts {
		s := sha256.Sum256(p)
		cat = append(cat, s[:]...)
		res, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: mkey, UploadId: up.UploadId, PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
		if err != nil || aws.ToString(res.ChecksumSHA256) != b64sha256(p) {
			t.Fatalf("UploadPart %d: %+v %v", i+1, res, err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: res.ETag, ChecksumSHA256: res.ChecksumSHA256})
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &b, Key: mkey, UploadId: up.UploadId})
	if err != nil || len(lp.Parts) != 3 || aws.ToString(lp.Parts[1].ChecksumSHA256) != b64sha256(parts[1]) || lp.ChecksumAlgorithm != types.ChecksumAlgorithmSha256 {
		t.Fatalf("ListParts: %+v %v", lp, err)
	}
	composite := b64sha256(cat) + "-3"
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: mkey, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}, ChecksumSHA256: aws.String(b64sha256(nil) + "-3")})
	if code(err) != "BadDigest" {
		t.Fatalf("completion naming a wrong checksum: %v, want BadDigest", err)
	}
	bad := append([]types.CompletedPart(nil), done...)
	bad[0].ChecksumSHA256 = done[1].ChecksumSHA256
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: mkey, UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: bad}})
	if code(err) != "InvalidPart" {
		t.Fatalf("completion naming a wrong part checksum: %v, want InvalidPart", err)
	}
	bad[0].ChecksumSHA256, bad[0].ChecksumCRC32 = done[0].ChecksumSHA256, aws.String("AAAAAA==")
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: mkey, UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: bad}})
	if code(err) != "InvalidPart" {
		t.Fatalf("completion naming a part checksum of another algorithm: %v, want InvalidPart", err)
	}
	fin, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: mkey, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}, ChecksumSHA256: &composite})
	if err != nil || aws.ToString(fin.ChecksumSHA256) != composite {
		t.Fatalf("CompleteMultipartUpload: %+v %v, want %s", fin, err, composite)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: mkey, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumSHA256) != composite || head.ChecksumType != types.ChecksumTypeComposite {
		t.Fatalf("HEAD of the multipart object: %v %q %v", aws.ToString(head.ChecksumSHA256), head.ChecksumType, err)
	}
	out, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: mkey, PartNumber: aws.Int32(2), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(out.ChecksumSHA256) != b64sha256(parts[1]) {
		t.Fatalf("GET partNumber 2: %v %v", out, err)
	}
	out.Body.Close()
	attrs, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: &b, Key: mkey,
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts}})
	if err != nil || aws.ToString(attrs.Checksum.ChecksumSHA256) != composite || attrs.ObjectParts == nil || len(attrs.ObjectParts.Parts) != 3 ||
		aws.ToString(attrs.ObjectParts.Parts[2].ChecksumSHA256) != b64sha256(parts[2]) {
		t.Fatalf("GetObjectAttributes of the multipart object: %+v %v", attrs, err)
	}

	// multipart, CRC32C FULL_OBJECT: the CRC of the whole object
	up, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: mkey, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c, ChecksumType: types.ChecksumTypeFullObject})
	if err != nil {
		t.Fatal(err)
	}
	done = nil
	for i, p := range parts {
		res, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: mkey, UploadId: up.UploadId, PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: res.ETag, ChecksumCRC32C: res.ChecksumCRC32C})
	}
	fin, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: mkey, UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	whole := crc32.Checksum(bytes.Join(parts, nil), crc32.MakeTable(crc32.Castagnoli))
	if wantCRC := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, whole)); err != nil || aws.ToString(fin.ChecksumCRC32C) != wantCRC || fin.ChecksumType != types.ChecksumTypeFullObject {
		t.Fatalf("CRC32C FULL_OBJECT completion: %v %q %v, want %s", aws.ToString(fin.ChecksumCRC32C), fin.ChecksumType, err, wantCRC)
	}
	if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: mkey, ChecksumAlgorithm: types.ChecksumAlgorithmSha1, ChecksumType: types.ChecksumTypeFullObject}); code(err) != "InvalidRequest" {
		t.Fatalf("SHA1 FULL_OBJECT upload: %v, want InvalidRequest", err)
	}
}

// TestUploadBodyEnd: what is checked as an upload's body ends fails the
// upload and leaves the previous version — an aws-chunked trailer with a
// wrong checksum (BadDigest), an aws-chunked body cut before its last
// chunk (IncompleteBody), a signed payload whose hash is not the body's
// (XAmzContentSHA256Mismatch); a trailer announced on a payload without
// one is InvalidRequest (net/http would hand over an HTTP trailer
// unchecked); the right trailer is kept and answered.
func TestUploadBodyEnd(t *testing.T) {
	f := startGateway(t, rgw.Options{StripeSize: tStripe, ChunkSize: tChunk})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "ends"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	old := []byte("the version before")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("k"), Body: bytes.NewReader(old)}); err != nil {
		t.Fatal(err)
	}
	body := randBytes(rand.New(rand.NewPCG(5, 6)), 2*tStripe+3)
	crc := func(b []byte) string {
		return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)))
	}
	chunked := func(trailer string, cut bool) string {
		var s strings.Builder
		for off := 0; off < len(body); off += 65536 {
			p := body[off:min(off+65536, len(body))]
			fmt.Fprintf(&s, "%x\r\n%s\r\n", len(p), p)
		}
		if !cut {
			s.WriteString("0\r\n" + trailer + "\r\n\r\n")
		}
		return s.String()
	}
	hdr := map[string]string{"Content-Encoding": "aws-chunked", "X-Amz-Decoded-Content-Length": strconv.Itoa(len(body)), "X-Amz-Trailer": "x-amz-checksum-crc32"}
	const trailerPayload = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	for _, tc := range []struct {
		name, body, payload, code string
		hdr                       map[string]string
	}{
		{"wrong trailer", chunked("x-amz-checksum-crc32:"+crc(old), false), trailerPayload, "BadDigest", hdr},
		{"cut before the last chunk", chunked("", true), trailerPayload, "IncompleteBody", hdr},
		{"trailer on a plain payload", string(body), "UNSIGNED-PAYLOAD", "InvalidRequest", map[string]string{"X-Amz-Trailer": "x-amz-checksum-crc32"}},
		{"payload hash of other bytes", string(body), fmt.Sprintf("%x", sha256.Sum256(old)), "XAmzContentSHA256Mismatch", nil},
	} {
		status, resp := f.signedPayload(t, f.admin, http.MethodPut, "/"+b+"/k", tc.hdr, tc.body, tc.payload)
		if status < 400 || !strings.Contains(resp, "<Code>"+tc.code+"</Code>") {
			t.Fatalf("%s: %d %s, want %s", tc.name, status, resp, tc.code)
		}
		if got, _ := get(t, c, b, "k", ""); !bytes.Equal(got, old) {
			t.Fatalf("%s: the refused upload changed the object", tc.name)
		}
	}
	if status, resp := f.signedPayload(t, f.admin, http.MethodPut, "/"+b+"/k", hdr, chunked("x-amz-checksum-crc32:"+crc(body), false), trailerPayload); status != http.StatusOK {
		t.Fatalf("PUT with its trailer: %d %s", status, resp)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("k"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumCRC32) != crc(body) {
		t.Fatalf("HEAD after the trailer PUT: %v %v, want %s", aws.ToString(head.ChecksumCRC32), err, crc(body))
	}
	if got, _ := get(t, c, b, "k", ""); !bytes.Equal(got, body) {
		t.Fatal("the trailer PUT stored other bytes")
	}
}
