package rgw

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/shoal-project/shoal/internal/crc32c"
)

// pieceReader hands out its data in reads of at most step bytes and
// fails a read asked for more than max bytes (0: any).
type pieceReader struct {
	data      []byte
	step, max int
	asked     int // the largest read asked for
}

func (r *pieceReader) Read(p []byte) (int, error) {
	r.asked = max(r.asked, len(p))
	if r.max > 0 && len(p) > r.max {
		return 0, errors.New("read larger than a piece")
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func randomBytes(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rand.Uint32())
	}
	return p
}

// TestHeadReadFrom: the head is read in pieces of crc32c.Piece bytes, its
// checksum is its bytes', and a short body ends it as io.ReadFull would.
func TestHeadReadFrom(t *testing.T) {
	body := randomBytes(crc32c.Piece*3 + 1000)
	for _, tc := range []struct {
		name    string
		head    int // bytes of head buffer
		body    int // bytes of body
		wantN   int
		wantErr error
	}{
		{"whole", len(body), len(body), len(body), nil},
		{"body longer", crc32c.Piece + 7, len(body), crc32c.Piece + 7, nil},
		{"body ends inside", len(body), crc32c.Piece*2 + 5, crc32c.Piece*2 + 5, io.ErrUnexpectedEOF},
		{"body ends at a piece", len(body), crc32c.Piece, crc32c.Piece, io.ErrUnexpectedEOF},
		{"empty body", len(body), 0, 0, io.EOF},
		{"empty head", 0, len(body), 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &pieceReader{data: body[:tc.body], step: 100 << 10, max: crc32c.Piece}
			h := &headBuf{data: make([]byte, tc.head)}
			n, err := h.readFrom(r)
			if n != tc.wantN || err != tc.wantErr {
				t.Fatalf("readFrom = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
			if !bytes.Equal(h.data[:n], body[:n]) {
				t.Fatal("head bytes differ from the body's")
			}
			if want := crc32c.Checksum(body[:n]); h.sum != want {
				t.Fatalf("sum %08x, want %08x (crc32c of the %d bytes read)", h.sum, want, n)
			}
		})
	}
}

// TestStripeReadFromPieces: a tail chunk is filled by reads of at most
// crc32c.Piece bytes, and its crc32c is the chunk's.
func TestStripeReadFromPieces(t *testing.T) {
	const chunk = 4 << 20
	body := randomBytes(chunk - 12345) // less than a chunk: nothing is sent
	w := &stripeWriter{s: &Store{opt: Options{ChunkSize: chunk, StripeSize: chunk}}, buf: make([]byte, 0, chunk)}
	r := &pieceReader{data: body, step: chunk, max: crc32c.Piece}
	n, err := w.ReadFrom(r)
	if err != nil || n != int64(len(body)) {
		t.Fatalf("ReadFrom = %d, %v; want %d, nil", n, err, len(body))
	}
	if r.asked != crc32c.Piece {
		t.Fatalf("largest read %d bytes, want %d", r.asked, crc32c.Piece)
	}
	if !bytes.Equal(w.buf, body) || w.crc != crc32c.Checksum(body) {
		t.Fatal("chunk or its crc32c differ from the body's")
	}
}
