package gateway

import (
	"net/http"
	"strings"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
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

// checksumAlgOfHeader is the algorithm whose value header (or trailer)
// is name, e.g. x-amz-checksum-crc32c (lower case); nil if none.
func checksumAlgOfHeader(name string) *rgw.ChecksumAlg {
	alg, ok := strings.CutPrefix(name, "x-amz-checksum-")
	if !ok || alg != strings.ToLower(alg) {
		return nil
	}
	return rgw.ChecksumAlgs[strings.ToUpper(alg)]
}

// setHeaders answers c in x-amz-checksum-<alg> and x-amz-checksum-type.
func setChecksumHeaders(c *rgw.Checksum, h http.Header) {
	if c == nil {
		return
	}
	h.Set(rgw.ChecksumAlgs[c.Alg].Header(), c.Value)
	h.Set("x-amz-checksum-type", c.Type)
}

// xml is c as the Checksum* elements of S3's documents.
func checksumXMLOf(c *rgw.Checksum) checksumXML {
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
	for alg := range rgw.ChecksumAlgs {
		if v := *x.field(alg); v != "" {
			out[alg] = v
		}
	}
	return out
}

// checksumRequest reads the checksum r's upload names (nil: none).
func checksumRequest(r *http.Request) (*rgw.ChecksumReq, error) {
	var req *rgw.ChecksumReq
	values := checksumHeaders(r.Header)
	if len(values) > 1 {
		return nil, s3err.InvalidRequest.With("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
	}
	for name, v := range values {
		req = &rgw.ChecksumReq{Alg: rgw.ChecksumAlgs[name], Want: v}
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
			req = &rgw.ChecksumReq{Alg: a, Trailer: func() string { return r.Trailer.Get(key) }}
		}
	}
	named := r.Header.Get("x-amz-sdk-checksum-algorithm")
	if named == "" {
		named = r.Header.Get("x-amz-checksum-algorithm")
	}
	if named != "" {
		a, err := rgw.ChecksumAlgNamed(named)
		switch {
		case err != nil:
			return nil, err
		case req == nil:
			req = &rgw.ChecksumReq{Alg: a}
		case req.Alg != a:
			return nil, s3err.InvalidRequest.With("The algorithm %s does not match the checksum header %s.", named, req.Alg.Header())
		}
	}
	return req, nil
}

// checksumHeaders are the x-amz-checksum-<alg> values of h, by
// algorithm.
func checksumHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for name, a := range rgw.ChecksumAlgs {
		if v := h.Get(a.Header()); v != "" {
			out[name] = v
		}
	}
	return out
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
	a, err := rgw.ChecksumAlgNamed(name)
	if err != nil {
		return "", "", err
	}
	if typ == "" {
		typ = rgw.ChecksumComposite
		if name == "CRC64NVME" {
			typ = rgw.ChecksumFullObject
		}
	}
	if (typ != rgw.ChecksumComposite && typ != rgw.ChecksumFullObject) || (typ == rgw.ChecksumFullObject && a.Poly == 0) || (typ == rgw.ChecksumComposite && name == "CRC64NVME") {
		return "", "", s3err.InvalidRequest.With("The %s checksum type is not supported with %s.", typ, name)
	}
	return name, typ, nil
}
