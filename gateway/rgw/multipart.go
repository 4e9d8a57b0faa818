package rgw

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrgw "github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/osdop"
)

// Multipart limits (S3: "Amazon S3 multipart upload limits").
const (
	MaxParts = 10000
	// MaxMultipartSize is S3's limit on an object made by multipart upload.
	MaxMultipartSize = 5 << 40
	MinPartSize      = 5 << 20
	MaxPartSize      = 5 << 30
)

// uploadsSuffix names a bucket's list of multipart uploads in progress
// (non-EC pool omap: key + "\x00" + upload id → "").
const uploadsSuffix = ".uploads"

// Upload is a multipart upload in progress.
type Upload struct {
	Key       string            `json:"key"`
	UploadID  string            `json:"upload_id"`
	Initiated time.Time         `json:"initiated"`
	Owner     string            `json:"owner"`               // the completed object's (the gateway's ownership.go)
	Initiator string            `json:"initiator,omitempty"` // who created the upload ("": Owner)
	Headers   map[string]string `json:"hdr,omitempty"`
	Meta      map[string]string `json:"meta,omitempty"`
	Class     string            `json:"sc,omitempty"`
	ACL       ACL               `json:"acl"`            // the completed object's
	Tags      []Tag             `json:"tags,omitempty"` // the completed object's
	// ChecksumAlg and ChecksumType are the additional checksum the
	// upload asked for ("": none; checksum.go).
	ChecksumAlg  string `json:"ck_alg,omitempty"`
	ChecksumType string `json:"ck_type,omitempty"`
	// Lock and LegalHold are the completed version's (objectlock.go).
	Lock      *Retention `json:"lock,omitempty"`
	LegalHold bool       `json:"hold,omitempty"`
	// SSE is the upload's encryption (sse.go): its parts are encrypted
	// with its key, each with an IV of its own. SSEReq asks for it at
	// CreateUpload.
	SSE    *SSE        `json:"sse,omitempty"`
	SSEReq *SSERequest `json:"-"`
}

// InitiatedBy is who created the upload.
func (u *Upload) InitiatedBy() string {
	if u.Initiator != "" {
		return u.Initiator
	}
	return u.Owner
}

// Part is an uploaded part.
type Part struct {
	Num      int       `json:"num"`
	Size     int64     `json:"size"`
	ETag     string    `json:"etag"`
	Mtime    time.Time `json:"mtime"`
	Seg      segment   `json:"seg"`
	Checksum *Checksum `json:"ck,omitempty"` // the part's additional checksum (checksum.go)
}

func uploadMetaOID(bucketID, uploadID string) string {
	return multipartPrefix(bucketID) + uploadID + ".meta"
}

func partKey(n int) string { return fmt.Sprintf("part.%05d", n) }

// newUploadID returns a random upload id, "2~" and a tag, as RGW's look:
// an id that began with '-' (one tag in 64) was taken for an option by
// command-line clients (`aws s3api upload-part --upload-id -Xy…` fails).
func newUploadID() string { return "2~" + NewTag() }

// validUploadID reports whether a client's upload id can name an upload's
// objects: not empty, and no '.' (which ends the id in their names:
// ID.meta, ID.PART~TAG), '/' or NUL.
func validUploadID(id string) bool { return id != "" && !strings.ContainsAny(id, "./\x00") }

// CreateUpload starts a multipart upload.
func (s *Store) CreateUpload(ctx context.Context, b *Bucket, key string, u Upload) (*Upload, error) {
	u.Key, u.UploadID, u.Initiated = key, newUploadID(), time.Now().UTC()
	if u.SSEReq != nil {
		e, _, err := s.newSSE(ctx, u.SSEReq)
		if err != nil {
			return nil, err
		}
		e.IV = nil // each part has its own
		u.SSE, u.SSEReq = e, nil
	}
	body, _ := json.Marshal(u)
	if err := operate(ctx, s.nonec, uploadMetaOID(b.ID, u.UploadID), []osdop.Op{{Code: osdop.Create, Exclusive: true}, {Code: osdop.WriteFull, Data: body}}); err != nil {
		return nil, fmt.Errorf("create upload %s/%s: %w", b.Name, key, err)
	}
	if err := s.nonec.OmapSet(ctx, b.ID+uploadsSuffix, []client.KV{{Key: key + "\x00" + u.UploadID}}); err != nil {
		return nil, fmt.Errorf("create upload %s/%s: %w", b.Name, key, err)
	}
	return &u, nil
}

// GetUpload reads an upload's state (s3err.NoSuchUpload).
func (s *Store) GetUpload(ctx context.Context, b *Bucket, key, uploadID string) (*Upload, error) {
	if !validUploadID(uploadID) {
		return nil, s3err.NoSuchUpload
	}
	body, err := s.nonec.Read(ctx, uploadMetaOID(b.ID, uploadID), 0, 0)
	if errors.Is(err, client.ErrNotFound) {
		return nil, s3err.NoSuchUpload
	}
	if err != nil {
		return nil, fmt.Errorf("upload %s: %w", uploadID, err)
	}
	u := &Upload{}
	if err := json.Unmarshal(body, u); err != nil {
		return nil, fmt.Errorf("upload %s: %w", uploadID, err)
	}
	if u.Key != key {
		return nil, s3err.NoSuchUpload
	}
	return u, nil
}

// UploadPart stores part num of upload u (GetUpload) from body (size
// bytes) and returns it. A part uploaded again replaces the earlier one
// (whose tails go to GC).
//
// ck is the checksum the request names (checksumRequest; nil: none).
// When the upload has an algorithm the part keeps its checksum: ck's
// (InvalidRequest if of another algorithm), else one computed with the
// upload's.
func (s *Store) UploadPart(ctx context.Context, b *Bucket, u *Upload, num int, body io.Reader, size int64, wantMD5 []byte, ck *ChecksumReq, sse *SSERequest) (*Part, error) {
	if num < 1 || num > MaxParts {
		return nil, s3err.InvalidArgument.With("Part number must be an integer between 1 and %d, inclusive", MaxParts)
	}
	if size > MaxPartSize {
		return nil, s3err.EntityTooLarge
	}
	if u.ChecksumAlg != "" {
		switch {
		case ck == nil:
			ck = &ChecksumReq{Alg: ChecksumAlgs[u.ChecksumAlg]}
		case ck.Alg.Name != u.ChecksumAlg:
			return nil, s3err.InvalidRequest.With("The upload's checksum algorithm is %s; this part's is %s.", u.ChecksumAlg, ck.Alg.Name)
		}
	}
	uploadID := u.UploadID
	tag := NewTag()
	var enc *encReader
	var iv []byte
	plainMD5, plainCk := wantMD5, ck
	switch {
	case u.SSE != nil:
		key, err := s.dataKey(ctx, u.SSE, sse)
		if err != nil {
			return nil, err
		}
		iv = newIV()
		if enc, err = encryptBody(body, key, iv, ck, wantMD5 != nil || u.SSE.Mode == SSES3); err != nil {
			return nil, err
		}
		body, wantMD5, ck = enc, nil, nil
	case sse != nil && sse.Mode == SSEC:
		return nil, s3err.InvalidRequest.With("the multipart upload was not created with SSE-C")
	}
	seg, etag, cksum, err := s.receive(ctx, body, size, nil, partPrefix(b.ID, uploadID, num, tag), 0, wantMD5, ck, nil)
	if err != nil {
		return nil, err
	}
	if enc != nil {
		var pm string
		if pm, cksum, err = enc.finish(plainMD5, plainCk); err != nil {
			s.removeTails((&HeadInfo{StripeSize: s.opt.StripeSize, Segments: []segment{seg}}).tailOIDs())
			return nil, err
		}
		if u.SSE.Mode == SSES3 {
			etag = pm
		}
		seg.IV = iv
	}
	seg.ETag = etag
	if cksum != nil && u.ChecksumAlg != "" {
		seg.Checksum = cksum.Value
		cksum.Type = u.ChecksumType
	}
	h := &HeadInfo{StripeSize: s.opt.StripeSize, Segments: []segment{seg}}
	p := Part{Num: num, Size: size, ETag: etag, Mtime: time.Now().UTC(), Seg: seg, Checksum: cksum}
	pv, _ := json.Marshal(p)
	in, _ := json.Marshal(clsrgw.SwapIn{Key: partKey(num), Value: pv})
	old, err := s.nonec.Exec(ctx, uploadMetaOID(b.ID, uploadID), "rgw.omap_swap", in)
	if err != nil {
		s.removeTails(h.tailOIDs())
		if errors.Is(err, client.ErrNotFound) {
			return nil, s3err.NoSuchUpload
		}
		return nil, fmt.Errorf("upload part %d: %w", num, err)
	}
	if len(old) > 0 {
		var op Part
		if json.Unmarshal(old, &op) == nil {
			s.gcAdd(context.WithoutCancel(ctx), &GCEntry{Tag: tag + ".replaced", StripeSize: s.opt.StripeSize, Segments: []segment{op.Seg}})
		}
	}
	return &p, nil
}

// ListParts returns up to max parts after part number marker, and
// whether more exist.
func (s *Store) ListParts(ctx context.Context, b *Bucket, key, uploadID string, marker, max int) ([]Part, bool, error) {
	if _, err := s.GetUpload(ctx, b, key, uploadID); err != nil {
		return nil, false, err
	}
	after := ""
	if marker > 0 {
		after = partKey(marker)
	}
	kvs, more, err := s.nonec.OmapList(ctx, uploadMetaOID(b.ID, uploadID), after, "part.", max)
	if err != nil {
		return nil, false, fmt.Errorf("list parts: %w", err)
	}
	out := make([]Part, 0, len(kvs))
	for _, kv := range kvs {
		var p Part
		if err := json.Unmarshal(kv.Value, &p); err != nil {
			return nil, false, fmt.Errorf("list parts: %q: %w", kv.Key, err)
		}
		out = append(out, p)
	}
	return out, more, nil
}

func (s *Store) allParts(ctx context.Context, b *Bucket, key, uploadID string) (map[int]Part, error) {
	all := map[int]Part{}
	marker := 0
	for {
		ps, more, err := s.ListParts(ctx, b, key, uploadID, marker, 1000)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			all[p.Num] = p
			marker = p.Num
		}
		if !more || len(ps) == 0 {
			return all, nil
		}
	}
}

// CompletePart names a part in CompleteMultipartUpload's list.
type CompletePart struct {
	Num  int
	ETag string
	// Checksums are the part's additional checksums the request gives,
	// by algorithm (checksum.go).
	Checksums map[string]string
}

// CompleteUpload assembles the listed parts into the object (ETag: the
// MD5 of the parts' binary MD5s, "-" and the part count), removes the
// upload and queues unused parts for GC.
//
// Completing an upload again after it succeeded answers as the first time
// did (S3 does: a client retrying a completion whose reply it lost must
// not see NoSuchUpload), as long as the object is still that upload.
//
// sums are the object's checksums the request gives, by algorithm: the
// upload's must be the one computed (BadDigest). A part's checksum
// must be the stored one, and of the upload's algorithm, if it has one
// (InvalidPart). cond (If-Match, If-None-Match) is checked against the
// key's current object atomically with the head write, as PutObject's
// (conditional.go); a refused completion leaves the upload and its parts
// as they were.
func (s *Store) CompleteUpload(ctx context.Context, b *Bucket, key, uploadID string, list []CompletePart, sums map[string]string, cond WriteCond) (*PutResult, error) {
	// the object already is this upload: a retry of a completion that
	// succeeded (its reply lost) answers as the first did, whatever its
	// condition, which the first attempt's own head may now fail
	done := func() *PutResult {
		if h, _, herr := s.readHead(ctx, b, key); herr == nil && h.Tag == uploadID && h.Parts == len(list) {
			return h.result()
		}
		return nil
	}
	u, err := s.GetUpload(ctx, b, key, uploadID)
	if errors.Is(err, s3err.NoSuchUpload) {
		if res := done(); res != nil {
			return res, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, s3err.MalformedXML.With("You must specify at least one part")
	}
	all, err := s.allParts(ctx, b, key, uploadID)
	if err != nil {
		return nil, err
	}
	// a part number listed twice in a row (a part uploaded again while
	// the first upload was in flight): the later entry stands, as RGW
	list = slices.Clone(list)
	for i := len(list) - 1; i > 0; i-- {
		if list[i].Num == list[i-1].Num {
			list = slices.Delete(list, i-1, i)
		}
	}
	h := &HeadInfo{Tag: uploadID, StripeSize: s.opt.StripeSize, Owner: u.Owner, Headers: u.Headers, Meta: u.Meta, Class: u.Class, Parts: len(list), ACL: u.ACL, Tags: u.Tags}
	h.applyLock(b, u.Lock, u.LegalHold)
	if u.SSE != nil {
		e := *u.SSE
		h.SSE = &e
	}
	sum := md5.New()
	var ckSums []string
	var sizes []int64
	used := map[int]bool{}
	for i, cp := range list {
		if i > 0 && cp.Num <= list[i-1].Num {
			return nil, s3err.InvalidPartOrder
		}
		p, ok := all[cp.Num]
		if !ok || strings.Trim(cp.ETag, `"`) != strings.Trim(p.ETag, `"`) {
			return nil, s3err.InvalidPart.With("part %d is not uploaded or its ETag is not %s", cp.Num, cp.ETag)
		}
		if i < len(list)-1 && p.Size < MinPartSize {
			return nil, s3err.EntityTooSmall.With("part %d is %d bytes; every part but the last must be at least 5 MiB", cp.Num, p.Size)
		}
		for alg, v := range cp.Checksums {
			switch {
			case u.ChecksumAlg == "": // an upload without an algorithm keeps none (and checks none)
			case alg != u.ChecksumAlg:
				return nil, s3err.InvalidPart.With("part %d names a %s checksum; the upload's algorithm is %q", cp.Num, alg, u.ChecksumAlg)
			case v != p.Seg.Checksum:
				return nil, s3err.InvalidPart.With("part %d's checksum is not %s", cp.Num, v)
			}
		}
		ckSums, sizes = append(ckSums, p.Seg.Checksum), append(sizes, p.Size)
		d, _ := hex.DecodeString(strings.Trim(p.ETag, `"`))
		sum.Write(d)
		h.Segments = append(h.Segments, p.Seg)
		h.Size += p.Size
		used[cp.Num] = true
	}
	if h.Size > s.opt.MaxMultipartSize {
		return nil, s3err.EntityTooLarge.With("the parts add up to %d bytes; an object may have at most %d", h.Size, s.opt.MaxMultipartSize)
	}
	h.ETag = `"` + hex.EncodeToString(sum.Sum(nil)) + "-" + strconv.Itoa(len(list)) + `"`
	h.Checksum = multipartChecksum(u.ChecksumAlg, u.ChecksumType, ckSums, sizes)
	if wantSum := sums[u.ChecksumAlg]; wantSum != "" && (h.Checksum == nil || wantSum != h.Checksum.Value) {
		return nil, s3err.BadDigest.With("The %s checksum you specified did not match the calculated checksum.", u.ChecksumAlg)
	}
	if err := s.checkQuota(ctx, b, h.Size, 1); err != nil {
		return nil, err
	}
	if err := s.prepare(ctx, b, key, uploadID, "put"); err != nil {
		return nil, err
	}
	res, err := s.commitHead(ctx, b, key, h, nil, cond, false)
	if err != nil {
		if cond != (WriteCond{}) && (errors.Is(err, s3err.PreconditionFailed) || errors.Is(err, s3err.NoSuchKey)) {
			if res := done(); res != nil {
				return res, nil
			}
		}
		return nil, err
	}
	if s.failpoint == "complete-before-cleanup" {
		return res, nil // as if the gateway died here
	}
	cctx := context.WithoutCancel(ctx)
	var unused []segment
	for n, p := range all {
		if !used[n] {
			unused = append(unused, p.Seg)
		}
	}
	s.gcAdd(cctx, &GCEntry{Tag: uploadID + ".unused", StripeSize: s.opt.StripeSize, Segments: unused})
	s.removeUpload(cctx, b, key, uploadID)
	return res, nil
}

func (s *Store) removeUpload(ctx context.Context, b *Bucket, key, uploadID string) {
	s.nonec.Remove(ctx, uploadMetaOID(b.ID, uploadID))
	s.nonec.OmapRm(ctx, b.ID+uploadsSuffix, []string{key + "\x00" + uploadID})
}

// AbortUpload discards an upload and queues its parts for GC (unless a
// completion of it won the race: then only unused parts go).
func (s *Store) AbortUpload(ctx context.Context, b *Bucket, key, uploadID string) error {
	all, err := s.allParts(ctx, b, key, uploadID)
	if err != nil {
		return err
	}
	var segs []segment
	for _, p := range all {
		segs = append(segs, p.Seg)
	}
	s.gcAdd(ctx, &GCEntry{Tag: uploadID, Head: HeadOID(b.ID, key), StripeSize: s.opt.StripeSize, Segments: segs})
	s.removeUpload(ctx, b, key, uploadID)
	return nil
}

// ListUploads lists uploads in progress in key order after (keyMarker,
// idMarker) with the prefix; with a delimiter, keys that contain it
// after the prefix are rolled up into common prefixes.
func (s *Store) ListUploads(ctx context.Context, b *Bucket, prefix, keyMarker, idMarker string, max int) ([]Upload, bool, error) {
	after := ""
	if keyMarker != "" {
		after = keyMarker + "\x00" + idMarker
		if idMarker == "" {
			after = keyMarker + "\x00\xff"
		}
	}
	kvs, more, err := s.nonec.OmapList(ctx, b.ID+uploadsSuffix, after, prefix, max)
	if errors.Is(err, client.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("list uploads: %w", err)
	}
	var out []Upload
	for _, kv := range kvs {
		k, id, _ := strings.Cut(kv.Key, "\x00")
		u, err := s.GetUpload(ctx, b, k, id)
		if err != nil {
			if errors.Is(err, s3err.NoSuchUpload) {
				continue // completed or aborted between the two reads
			}
			return nil, false, err
		}
		out = append(out, *u)
	}
	return out, more, nil
}
