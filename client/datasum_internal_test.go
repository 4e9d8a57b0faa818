package client

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdop"
)

// TestKnownDataSum: a request's frame checksum, with the checksum of an
// op's data given by the op (DataSum) instead of computed, equals the
// checksum of the whole encoded request; an op without one, or whose data
// the encoder copied (below its part size), is computed.
func TestKnownDataSum(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 8<<10) // 128 KiB: its own part
	small := []byte("small data, copied into the encoding")
	for _, tc := range []struct {
		name string
		ops  []osdop.Op
		hits int // parts whose checksum is taken from an op
	}{
		{"big with sum", []osdop.Op{{Code: osdop.WriteFull, Data: big, DataSum: crc32c.Sum{CRC: crc32c.Checksum(big), Valid: true}}}, 1},
		{"big without sum", []osdop.Op{{Code: osdop.WriteFull, Data: big}}, 0},
		{"small with sum", []osdop.Op{{Code: osdop.Write, Off: 4096, Data: small, DataSum: crc32c.Sum{CRC: crc32c.Checksum(small), Valid: true}},
			{Code: osdop.Write, Off: 1 << 20, Data: big, DataSum: crc32c.Sum{CRC: crc32c.Checksum(big), Valid: true}}}, 1},
	} {
		req := osdop.Request{Pool: 1, OID: "obj", Client: 7, Tid: 9, Ops: tc.ops}
		parts := req.EncodeVec(vecRequestMin / 2)
		known := knownDataSum(tc.ops)
		hits := 0
		for _, p := range parts {
			if known(p).Valid {
				hits++
			}
		}
		if hits != tc.hits {
			t.Errorf("%s: %d parts with a known checksum, want %d", tc.name, hits, tc.hits)
		}
		if got, want := msgr.Checksum(parts, known), crc32c.Checksum(bytes.Join(parts, nil)); got != want {
			t.Errorf("%s: frame checksum %#x, want %#x", tc.name, got, want)
		}
		if hasDataSum(tc.ops) != (tc.ops[0].DataSum.Valid) {
			t.Errorf("%s: hasDataSum %v", tc.name, hasDataSum(tc.ops))
		}
	}
}

// TestCheckDataSums: data that changed after its checksum was taken is
// caught before a resend (ErrDataChanged); unchanged data and ops without
// a checksum pass.
func TestCheckDataSums(t *testing.T) {
	data := bytes.Repeat([]byte("abcd"), 1<<15)
	ops := []osdop.Op{{Code: osdop.Write, Data: []byte("no sum")}, {Code: osdop.WriteFull, Data: data, DataSum: crc32c.Sum{CRC: crc32c.Checksum(data), Valid: true}}}
	if err := checkDataSums(ops); err != nil {
		t.Fatalf("unchanged data: %v", err)
	}
	data[1000] ^= 1
	if err := checkDataSums(ops); !errors.Is(err, ErrDataChanged) {
		t.Fatalf("changed data: %v, want ErrDataChanged", err)
	}
}
