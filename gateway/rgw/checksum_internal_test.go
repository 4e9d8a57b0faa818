package rgw

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"hash/crc64"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestMultipartChecksum: a FULL_OBJECT checksum combined from the parts'
// CRCs and lengths is the CRC of the whole object, computed directly by
// the standard library, for each CRC and for parts of lengths 0, 1 and
// odd sizes; a COMPOSITE one is the digest of the parts' digests
// followed by "-N"; a part without a checksum gives none.
func TestMultipartChecksum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b64 := base64.StdEncoding.EncodeToString
	crcs := map[string]func([]byte) []byte{
		"CRC32": func(b []byte) []byte { return binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)) },
		"CRC32C": func(b []byte) []byte {
			return binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
		},
		"CRC64NVME": func(b []byte) []byte {
			return binary.BigEndian.AppendUint64(nil, crc64.Checksum(b, crc64.MakeTable(0x9a6c9329ac4bc9b5)))
		},
	}
	digests := map[string]func([]byte) []byte{
		"SHA1":   func(b []byte) []byte { s := sha1.Sum(b); return s[:] },
		"SHA256": func(b []byte) []byte { s := sha256.Sum256(b); return s[:] },
		"CRC32":  crcs["CRC32"],
	}
	for _, sizes := range [][]int64{{1}, {0, 7}, {5 << 20, 5 << 20, 12345}, {4097, 1, 0, 65536, 3}} {
		var whole []byte
		var parts [][]byte
		for _, n := range sizes {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			parts, whole = append(parts, p), append(whole, p...)
		}
		for alg, f := range crcs {
			var sums []string
			for _, p := range parts {
				sums = append(sums, b64(f(p)))
			}
			got := multipartChecksum(alg, ChecksumFullObject, sums, sizes)
			if want := b64(f(whole)); got == nil || got.Value != want || got.Type != ChecksumFullObject {
				t.Fatalf("%s of parts %v: %+v, want %s", alg, sizes, got, want)
			}
		}
		for alg, f := range digests {
			var sums []string
			var cat []byte
			for _, p := range parts {
				d := f(p)
				sums, cat = append(sums, b64(d)), append(cat, d...)
			}
			got := multipartChecksum(alg, ChecksumComposite, sums, sizes)
			if want := b64(f(cat)) + "-" + strconv.Itoa(len(parts)); got == nil || got.Value != want {
				t.Fatalf("composite %s of parts %v: %+v, want %s", alg, sizes, got, want)
			}
			sums[len(sums)-1] = ""
			if got := multipartChecksum(alg, ChecksumComposite, sums, sizes); got != nil {
				t.Fatalf("composite %s with a part lacking its checksum: %+v, want none", alg, got)
			}
		}
	}
}
