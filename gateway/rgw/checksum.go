package rgw

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/internal/crc32c"
)

// ChecksumAlg is one of S3's checksum algorithms.
type ChecksumAlg struct {
	Name  string // as S3 spells it: CRC32, CRC32C, CRC64NVME, SHA1, SHA256
	New   func() hash.Hash
	Poly  uint64 // CRCs: the reflected polynomial (full-object combining); 0 for digests
	Width uint   // CRCs: bits
}

// ChecksumAlgs by name; the CRCs' polynomials are in hash/crc32 and
// crc64NVME's form.
var ChecksumAlgs = map[string]*ChecksumAlg{
	"CRC32":     {Name: "CRC32", New: func() hash.Hash { return crc32.NewIEEE() }, Poly: crc32.IEEE, Width: 32},
	"CRC32C":    {Name: "CRC32C", New: func() hash.Hash { return crc32c.New() }, Poly: crc32.Castagnoli, Width: 32},
	"CRC64NVME": {Name: "CRC64NVME", New: func() hash.Hash { return crc64.New(crc64NVMETable) }, Poly: crc64NVME, Width: 64},
	"SHA1":      {Name: "SHA1", New: sha1.New},
	"SHA256":    {Name: "SHA256", New: sha256.New},
}

// crc64NVME is CRC-64/NVME's polynomial, reflected (initial value and
// final xor all ones, as hash/crc64 computes with its table).
const crc64NVME = 0x9a6c9329ac4bc9b5

var crc64NVMETable = crc64.MakeTable(crc64NVME)

// ChecksumAlgNamed is the algorithm S3 calls name (any case);
// InvalidRequest if there is none.
func ChecksumAlgNamed(name string) (*ChecksumAlg, error) {
	if a := ChecksumAlgs[strings.ToUpper(name)]; a != nil {
		return a, nil
	}
	return nil, s3err.InvalidRequest.With("Checksum algorithm %q is not supported (CRC32, CRC32C, CRC64NVME, SHA1 or SHA256).", name)
}

// Checksum types: of the whole object's bytes, or of a multipart
// object's parts' checksums.
const (
	ChecksumFullObject = "FULL_OBJECT"
	ChecksumComposite  = "COMPOSITE"
)

// Checksum is an object's or a part's additional checksum.
type Checksum struct {
	Alg   string `json:"alg"`  // a ChecksumAlgs name
	Type  string `json:"type"` // checksumFullObject or checksumComposite
	Value string `json:"v"`    // base64 of the big-endian digest; a composite one ends in "-N"
}

// ChecksumReq is the checksum an upload's request asks for.
type ChecksumReq struct {
	Alg  *ChecksumAlg
	Want string // the value its header gave ("": none)
	// Trailer, when the value comes in the aws-chunked Trailer, reads it
	// once the body has ended (the gateway's sigv4.go has checked it: no hash here)
	Trailer func() string
}

// hash is the hash receive feeds the body to (nil: the value comes in
// the trailer, already checked).
func (c *ChecksumReq) hash() hash.Hash {
	if c == nil || c.Trailer != nil {
		return nil
	}
	return c.Alg.New()
}

// result checks the body's digest h (nil for a trailer's value) against
// the value the request gave and returns the body's checksum; BadDigest
// if they differ.
func (c *ChecksumReq) result(h hash.Hash) (*Checksum, error) {
	if c == nil {
		return nil, nil
	}
	sum := &Checksum{Alg: c.Alg.Name, Type: ChecksumFullObject}
	if h == nil {
		if sum.Value = c.Trailer(); sum.Value == "" { // the gateway's sigv4.go fails a body without it: a safeguard
			return nil, s3err.IncompleteBody.With("The aws-chunked body lacks the trailing %s.", c.Alg.Header())
		}
	} else {
		sum.Value = base64.StdEncoding.EncodeToString(h.Sum(nil))
	}
	if c.Want != "" && c.Want != sum.Value {
		return nil, s3err.BadDigest.With("The %s you specified did not match the calculated checksum.", c.Alg.Header())
	}
	return sum, nil
}

// multipartChecksum is a completed upload's checksum of type typ from its
// parts' checksums (base64) and sizes; nil if a part has none.
func multipartChecksum(alg, typ string, sums []string, sizes []int64) *Checksum {
	a := ChecksumAlgs[alg]
	if a == nil {
		return nil
	}
	h := a.New()
	var crc uint64
	for i, s := range sums {
		d, err := base64.StdEncoding.DecodeString(s)
		if s == "" || err != nil {
			return nil
		}
		if typ == ChecksumComposite {
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
			crc = crcCombine(a.Poly, a.Width, crc, part, sizes[i])
		}
	}
	if typ == ChecksumComposite {
		return &Checksum{Alg: alg, Type: typ, Value: base64.StdEncoding.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(sums))}
	}
	d := binary.BigEndian.AppendUint64(nil, crc)[8-a.Width/8:]
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

// Header is the algorithm's value Header, e.g. x-amz-checksum-crc32c.
func (a *ChecksumAlg) Header() string { return "x-amz-checksum-" + strings.ToLower(a.Name) }
