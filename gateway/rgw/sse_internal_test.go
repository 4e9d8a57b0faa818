package rgw

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"io"
	"testing"
)

// TestCTRAt: the keystream positioned at any offset equals the one-shot
// stream's from that offset, also when the counter's low 64 bits wrap
// (Go's cipher.NewCTR carries into the high half; ctrAt must too).
func TestCTRAt(t *testing.T) {
	block, _ := aes.NewCipher(bytes.Repeat([]byte{7}, 32))
	for _, iv := range [][]byte{
		bytes.Repeat([]byte{1}, 16),
		append(bytes.Repeat([]byte{0}, 8), bytes.Repeat([]byte{0xff}, 8)...), // low half wraps after one block
	} {
		n := 4096
		want := make([]byte, n)
		cipher.NewCTR(block, iv).XORKeyStream(want, want)
		for _, off := range []int{0, 1, 15, 16, 17, 31, 1000, 4095} {
			got := make([]byte, n-off)
			ctrAt(block, iv, int64(off)).XORKeyStream(got, got)
			if !bytes.Equal(got, want[off:]) {
				t.Fatalf("iv %x offset %d: keystream differs from the one-shot stream's", iv, off)
			}
		}
	}
}

// BenchmarkDecWriter: decrypting a 32 MiB object written in 4 MiB
// pieces, as a GET's WriteRange does (bytes per second of plaintext).
func BenchmarkDecWriter(b *testing.B) {
	block, _ := aes.NewCipher(bytes.Repeat([]byte{7}, 32))
	h := &HeadInfo{Size: 32 << 20, SSE: &SSE{Mode: SSES3, IV: make([]byte, 16)}}
	piece := make([]byte, 4<<20)
	b.SetBytes(32 << 20)
	for b.Loop() {
		d := &decWriter{w: io.Discard, block: block, h: h}
		for range 8 {
			d.Write(piece)
		}
	}
}
