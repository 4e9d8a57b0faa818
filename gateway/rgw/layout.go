package rgw

import (
	"strconv"
	"strings"
)

// headAttr is the xattr of a head object that holds its HeadInfo.
const headAttr = "rgw.head"

// segment is a run of tail objects: stripe i (from First) is the RADOS
// object Prefix+"_"+i and holds StripeSize bytes (the last one fewer).
type segment struct {
	Prefix string `json:"p"`
	First  int    `json:"f,omitempty"`
	Size   int64  `json:"s"`
	ETag   string `json:"e,omitempty"` // a multipart part's ETag
	// Checksum is a multipart part's additional checksum value (the
	// object's Checksum names the algorithm).
	Checksum string `json:"ck,omitempty"`
	// IV is an encrypted multipart part's CTR initial counter block
	// (sse.go).
	IV []byte `json:"iv,omitempty"`
}

// stripes returns how many tail objects the segment has.
func (g segment) stripes(stripe int64) int {
	return int((g.Size + stripe - 1) / stripe)
}

func (g segment) oid(i int) string { return g.Prefix + "_" + strconv.Itoa(g.First+i) }

// HeadInfo is an S3 object's metadata and manifest, kept in the head
// object's headAttr. Bytes [0, HeadSize) are the head object's data; the
// rest follow in Segments, in order (one for a simple upload, one per
// part for a multipart upload).
type HeadInfo struct {
	Tag        string            `json:"tag"` // the write that made this version (names its tails)
	Size       int64             `json:"size"`
	HeadSize   int64             `json:"hs"`
	StripeSize int64             `json:"ss"`
	Segments   []segment         `json:"segs,omitempty"`
	ETag       string            `json:"etag"` // quoted
	Mtime      int64             `json:"mtime"`
	Owner      string            `json:"owner"`
	Headers    map[string]string `json:"hdr,omitempty"`  // Content-Type and the other stored response headers
	Meta       map[string]string `json:"meta,omitempty"` // x-amz-meta-* (lower-case names without the prefix)
	Class      string            `json:"sc,omitempty"`
	Parts      int               `json:"parts,omitempty"` // multipart: number of parts
	ACL        ACL               `json:"acl"`             // nil: the owner's FULL_CONTROL (acl.go)
	Tags       []Tag             `json:"tags,omitempty"`  // tagging.go
	Checksum   *Checksum         `json:"ck,omitempty"`    // the additional checksum (checksum.go)
	// Versioned buckets (versioning.go): the version's id ("" for a head
	// written without versioning), whether it is a delete marker, and
	// its place in the key's history (larger is newer).
	VersionID    string `json:"vid,omitempty"`
	DeleteMarker bool   `json:"dm,omitempty"`
	Seq          uint64 `json:"seq,omitempty"`
	// Object lock (objectlock.go): the version's retention mode and
	// until when (Unix nanoseconds), and its legal hold.
	LockMode  string `json:"lm,omitempty"`
	LockUntil int64  `json:"lu,omitempty"`
	LegalHold bool   `json:"lh,omitempty"`
	// SSE is the version's server-side encryption (nil: none; sse.go).
	SSE *SSE `json:"sse,omitempty"`
}

// extent is a piece of an S3 object's byte range held by one RADOS object.
type extent struct {
	oid      string
	off, len int64 // within the RADOS object
}

// extents maps [off, off+n) of the object to RADOS objects, in order.
// headOID names the head object.
func (h *HeadInfo) extents(headOID string, off, n int64) []extent {
	var out []extent
	end := off + n
	if off < h.HeadSize {
		e := min(end, h.HeadSize)
		out = append(out, extent{headOID, off, e - off})
	}
	base := h.HeadSize
	for _, g := range h.Segments {
		if base >= end {
			break
		}
		if base+g.Size > off {
			for i := range g.stripes(h.StripeSize) {
				s0 := base + int64(i)*h.StripeSize
				s1 := min(s0+h.StripeSize, base+g.Size)
				if s1 <= off {
					continue
				}
				if s0 >= end {
					break
				}
				a, b := max(s0, off), min(s1, end)
				out = append(out, extent{g.oid(i), a - s0, b - a})
			}
		}
		base += g.Size
	}
	return out
}

// tailOIDs lists every tail object of the version (what GC deletes once
// the version is gone).
func (h *HeadInfo) tailOIDs() []string {
	var out []string
	for _, g := range h.Segments {
		for i := range g.stripes(h.StripeSize) {
			out = append(out, g.oid(i))
		}
	}
	return out
}

// HeadOID names an object's head in the data pool.
func HeadOID(bucketID, key string) string { return bucketID + "_" + key }

// shadowPrefix is the tail prefix of one simple upload (tag: the write;
// "": every simple upload's tails in the bucket).
func shadowPrefix(bucketID, tag string) string { return bucketID + "__shadow_" + tag }

// multipartPrefix begins the name of every object of the bucket's
// multipart uploads: parts' tails (partPrefix) and uploads' records
// (uploadMetaOID).
func multipartPrefix(bucketID string) string { return bucketID + "__multipart_" }

// partPrefix is the tail prefix of one upload of a multipart part.
func partPrefix(bucketID, uploadID string, part int, tag string) string {
	return multipartPrefix(bucketID) + uploadID + "." + strconv.Itoa(part) + "~" + tag
}

// tailName splits a tail object's name into its segment prefix and
// stripe number (segment.oid's inverse).
func tailName(name string) (prefix string, n int, ok bool) {
	i := strings.LastIndexByte(name, '_')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	return name[:i], n, err == nil && n >= 0
}
