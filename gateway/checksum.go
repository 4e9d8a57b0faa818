package gateway

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/internal/crc32c"
)

// Additional checksums (the S3 user guide, "Checking object integrity in
// Amazon S3"). An upload may name one of CRC32, CRC32C, CRC64NVME, SHA1
// and SHA256, with its value in an x-amz-checksum-<alg> header or in the
// aws-chunked trailer (sigv4.go checks a trailer's value as the body
// ends), or with x-amz-sdk-checksum-algorithm alone (the gateway
// computes it). The gateway checks the value (BadDigest), keeps it in the
// object's head, answers it on the PUT, and returns it from GET and HEAD
// when asked (x-amz-checksum-mode: ENABLED; not for a Range, a part's own
// for partNumber) and from GetObjectAttributes.
//
// A multipart upload names its algorithm and type at creation
// (x-amz-checksum-algorithm, x-amz-checksum-type): each part is checked
// and kept as a PUT's body is (with the upload's algorithm if the part
// names none), and the completed object's checksum is, for COMPOSITE,
// the algorithm's digest of the parts' binary digests followed by "-N",
// and for FULL_OBJECT (CRCs only) the CRC of the whole object, combined
// from the parts' CRCs and lengths without reading them. A part listed
// in CompleteMultipartUpload with a checksum that is not the stored one,
// or of another algorithm, is InvalidPart; an x-amz-checksum-<alg> header on the completion that
// is not the object's checksum is BadDigest. An object whose parts were
// copied (UploadPartCopy keeps no checksum) gets none.

// checksumAlg is one of S3's checksum algorithms.
type checksumAlg struct {
	name  string // as S3 spells it: CRC32, CRC32C, CRC64NVME, SHA1, SHA256
	new   func() hash.Hash
	poly  uint64 // CRCs: the reflected polynomial (full-object combining); 0 for digests
	width uint   // CRCs: bits
}

// header is the algorithm's value header, e.g. x-amz-checksum-crc32c.
func (a *checksumAlg) header() string { return "x-amz-checksum-" + strings.ToLower(a.name) }

// checksumAlgs by name; the CRCs' polynomials are in hash/crc32 and
// crc64NVME's form.
var checksumAlgs = map[string]*checksumAlg{
	"CRC32":     {name: "CRC32", new: func() hash.Hash { return crc32.NewIEEE() }, poly: crc32.IEEE, width: 32},
	"CRC32C":    {name: "CRC32C", new: func() hash.Hash { return crc32c.New() }, poly: crc32.Castagnoli, width: 32},
	"CRC64NVME": {name: "CRC64NVME", new: func() hash.Hash { return crc64.New(crc64NVMETable) }, poly: crc64NVME, width: 64},
	"SHA1":      {name: "SHA1", new: sha1.New},
	"SHA256":    {name: "SHA256", new: sha256.New},
}

// crc64NVME is CRC-64/NVME's polynomial, reflected (initial value and
// final xor all ones, as hash/crc64 computes with its table).
const crc64NVME = 0x9a6c9329ac4bc9b5

var crc64NVMETable = crc64.MakeTable(crc64NVME)

// checksumAlgNamed is the algorithm S3 calls name (any case);
// InvalidRequest if there is none.
func checksumAlgNamed(name string) (*checksumAlg, error) {
	if a := checksumAlgs[strings.ToUpper(name)]; a != nil {
		return a, nil
	}
	return nil, s3err.InvalidRequest.With("Checksum algorithm %q is not supported (CRC32, CRC32C, CRC64NVME, SHA1 or SHA256).", name)
}

// checksumAlgOfHeader is the algorithm whose value header (or trailer)
// is name, e.g. x-amz-checksum-crc32c (lower case); nil if none.
func checksumAlgOfHeader(name string) *checksumAlg {
	alg, ok := strings.CutPrefix(name, "x-amz-checksum-")
	if !ok || alg != strings.ToLower(alg) {
		return nil
	}
	return checksumAlgs[strings.ToUpper(alg)]
}

// Checksum types: of the whole object's bytes, or of a multipart
// object's parts' checksums.
const (
	checksumFullObject = "FULL_OBJECT"
	checksumComposite  = "COMPOSITE"
)

// Checksum is an object's or a part's additional checksum.
type Checksum struct {
	Alg   string `json:"alg"`  // a checksumAlgs name
	Type  string `json:"type"` // checksumFullObject or checksumComposite
	Value string `json:"v"`    // base64 of the big-endian digest; a composite one ends in "-N"
}

// setHeaders answers c in x-amz-checksum-<alg> and x-amz-checksum-type.
func (c *Checksum) setHeaders(h http.Header) {
	if c == nil {
		return
	}
	h.Set(checksumAlgs[c.Alg].header(), c.Value)
	h.Set("x-amz-checksum-type", c.Type)
}

// xml is c as the Checksum* elements of S3's documents.
func (c *Checksum) xml() checksumXML {
	var x checksumXML
	if c == nil {
		return x
	}
	if f := x.field(c.Alg); f != nil {
		*f = c.Value
	}
	x.Type = c.Type
	return x
}

// checksumXML holds the Checksum* elements of a document (embedded, so
// they sit beside its other elements).
type checksumXML struct {
	CRC32     string `xml:"ChecksumCRC32,omitempty"`
	CRC32C    string `xml:"ChecksumCRC32C,omitempty"`
	CRC64NVME string `xml:"ChecksumCRC64NVME,omitempty"`
	SHA1      string `xml:"ChecksumSHA1,omitempty"`
	SHA256    string `xml:"ChecksumSHA256,omitempty"`
	Type      string `xml:"ChecksumType,omitempty"`
}

// field is the element of algorithm alg (nil for no such algorithm).
func (x *checksumXML) field(alg string) *string {
	return map[string]*string{"CRC32": &x.CRC32, "CRC32C": &x.CRC32C, "CRC64NVME": &x.CRC64NVME, "SHA1": &x.SHA1, "SHA256": &x.SHA256}[alg]
}

// values are the checksums the document gives, by algorithm.
func (x checksumXML) values() map[string]string {
	out := map[string]string{}
	for alg := range checksumAlgs {
		if v := *x.field(alg); v != "" {
			out[alg] = v
		}
	}
	return out
}

// ChecksumReq is the checksum an upload's request asks for.
type ChecksumReq struct {
	alg  *checksumAlg
	want string // the value its header gave ("": none)
	// trailer, when the value comes in the aws-chunked trailer, reads it
	// once the body has ended (sigv4.go has checked it: no hash here)
	trailer func() string
}

// checksumRequest reads the checksum r's upload names (nil: none).
func checksumRequest(r *http.Request) (*ChecksumReq, error) {
	var req *ChecksumReq
	values := checksumHeaders(r.Header)
	if len(values) > 1 {
		return nil, s3err.InvalidRequest.With("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
	}
	for name, v := range values {
		req = &ChecksumReq{alg: checksumAlgs[name], want: v}
	}
	for _, v := range r.Header.Values("X-Amz-Trailer") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if !strings.HasPrefix(name, "x-amz-checksum-") {
				continue
			}
			// only an aws-chunked trailer is checked (sigv4.go); an HTTP
			// trailer of another payload would be taken unchecked
			if p := r.Header.Get("X-Amz-Content-Sha256"); p != sigStreamingPayloadTrailer && p != sigStreamingUnsignedTrailer {
				return nil, s3err.InvalidRequest.With("x-amz-trailer %s needs an aws-chunked payload with a trailer (x-amz-content-sha256 STREAMING-…-TRAILER).", name)
			}
			a := checksumAlgOfHeader(name)
			if a == nil {
				return nil, s3err.InvalidRequest.With("The checksum trailer %q is not supported.", name)
			}
			if req != nil {
				return nil, s3err.InvalidRequest.With("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
			}
			key := http.CanonicalHeaderKey(name)
			req = &ChecksumReq{alg: a, trailer: func() string { return r.Trailer.Get(key) }}
		}
	}
	named := r.Header.Get("x-amz-sdk-checksum-algorithm")
	if named == "" {
		named = r.Header.Get("x-amz-checksum-algorithm")
	}
	if named != "" {
		a, err := checksumAlgNamed(named)
		switch {
		case err != nil:
			return nil, err
		case req == nil:
			req = &ChecksumReq{alg: a}
		case req.alg != a:
			return nil, s3err.InvalidRequest.With("The algorithm %s does not match the checksum header %s.", named, req.alg.header())
		}
	}
	return req, nil
}

// checksumHeaders are the x-amz-checksum-<alg> values of h, by
// algorithm.
func checksumHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for name, a := range checksumAlgs {
		if v := h.Get(a.header()); v != "" {
			out[name] = v
		}
	}
	return out
}

// hash is the hash receive feeds the body to (nil: the value comes in
// the trailer, already checked).
func (c *ChecksumReq) hash() hash.Hash {
	if c == nil || c.trailer != nil {
		return nil
	}
	return c.alg.new()
}

// result checks the body's digest h (nil for a trailer's value) against
// the value the request gave and returns the body's checksum; BadDigest
// if they differ.
func (c *ChecksumReq) result(h hash.Hash) (*Checksum, error) {
	if c == nil {
		return nil, nil
	}
	sum := &Checksum{Alg: c.alg.name, Type: checksumFullObject}
	if h == nil {
		if sum.Value = c.trailer(); sum.Value == "" { // sigv4.go fails a body without it: a safeguard
			return nil, s3err.IncompleteBody.With("The aws-chunked body lacks the trailing %s.", c.alg.header())
		}
	} else {
		sum.Value = base64.StdEncoding.EncodeToString(h.Sum(nil))
	}
	if c.want != "" && c.want != sum.Value {
		return nil, s3err.BadDigest.With("The %s you specified did not match the calculated checksum.", c.alg.header())
	}
	return sum, nil
}

// uploadChecksum validates CreateMultipartUpload's x-amz-checksum-algorithm
// and x-amz-checksum-type: the upload's algorithm and type ("" when it
// names none). SHA digests can only be COMPOSITE and CRC64NVME only
// FULL_OBJECT; a CRC32 or CRC32C upload is COMPOSITE unless it asks.
func uploadChecksum(h http.Header) (alg, typ string, err error) {
	name, typ := strings.ToUpper(h.Get("x-amz-checksum-algorithm")), strings.ToUpper(h.Get("x-amz-checksum-type"))
	if name == "" {
		if typ != "" {
			return "", "", s3err.InvalidRequest.With("x-amz-checksum-type needs x-amz-checksum-algorithm.")
		}
		return "", "", nil
	}
	a, err := checksumAlgNamed(name)
	if err != nil {
		return "", "", err
	}
	if typ == "" {
		typ = checksumComposite
		if name == "CRC64NVME" {
			typ = checksumFullObject
		}
	}
	if (typ != checksumComposite && typ != checksumFullObject) || (typ == checksumFullObject && a.poly == 0) || (typ == checksumComposite && name == "CRC64NVME") {
		return "", "", s3err.InvalidRequest.With("The %s checksum type is not supported with %s.", typ, name)
	}
	return name, typ, nil
}

// multipartChecksum is a completed upload's checksum of type typ from its
// parts' checksums (base64) and sizes; nil if a part has none.
func multipartChecksum(alg, typ string, sums []string, sizes []int64) *Checksum {
	a := checksumAlgs[alg]
	if a == nil {
		return nil
	}
	h := a.new()
	var crc uint64
	for i, s := range sums {
		d, err := base64.StdEncoding.DecodeString(s)
		if s == "" || err != nil {
			return nil
		}
		if typ == checksumComposite {
			h.Write(d)
			continue
		}
		var part uint64
		for _, b := range d {
			part = part<<8 | uint64(b)
		}
		if i == 0 {
			crc = part
		} else {
			crc = crcCombine(a.poly, a.width, crc, part, sizes[i])
		}
	}
	if typ == checksumComposite {
		return &Checksum{Alg: alg, Type: typ, Value: base64.StdEncoding.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(sums))}
	}
	d := binary.BigEndian.AppendUint64(nil, crc)[8-a.width/8:]
	return &Checksum{Alg: alg, Type: typ, Value: base64.StdEncoding.EncodeToString(d)}
}

// crcCombine is the CRC of A followed by B from crcA, crcB and len(B),
// for a reflected CRC of width bits (32 or 64) with polynomial poly
// (reflected), initial value and final xor all ones: zlib's
// crc32_combine method (Mark Adler), generalised to 64 bits —
// crc(AB) = crcA·x^(8·lenB) mod P ⊕ crcB.
func crcCombine(poly uint64, width uint, crcA, crcB uint64, lenB int64) uint64 {
	top := uint64(1) << (width - 1) // x^0 in the reflected representation
	mult := func(a, b uint64) uint64 {
		var p uint64
		for m := top; m != 0; m >>= 1 {
			if a&m != 0 {
				p ^= b
			}
			if b&1 != 0 {
				b = b>>1 ^ poly
			} else {
				b >>= 1
			}
		}
		return p
	}
	op, sq := top, top>>1 // x^0; x^(2^k), from x^1
	for k := 0; k < 3; k++ {
		sq = mult(sq, sq) // x^8 = x^(2^3): one byte
	}
	for n := lenB; n != 0; n >>= 1 {
		if n&1 != 0 {
			op = mult(sq, op)
		}
		sq = mult(sq, sq)
	}
	return mult(op, crcA) ^ crcB
}
