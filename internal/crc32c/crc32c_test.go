package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestCombine: the combined checksum of two parts equals hash/crc32's
// checksum of their concatenation, for empty, short, block-sized and odd
// lengths on both sides.
func TestCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	lens := []int{0, 1, 3, 63, 64, 4095, 4096, 4097, 65536 + 17, 1 << 20}
	for _, la := range lens {
		for _, lb := range lens {
			a, b := make([]byte, la), make([]byte, lb)
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			want := crc32.Checksum(append(append([]byte(nil), a...), b...), castagnoli)
			if got := Combine(Checksum(a), Checksum(b), int64(lb)); got != want {
				t.Fatalf("Combine over %d+%d bytes: %08x, want %08x", la, lb, got, want)
			}
			if got := Update(Checksum(a), b); got != want {
				t.Fatalf("Update over %d+%d bytes: %08x, want %08x", la, lb, got, want)
			}
		}
	}
}

// TestCombiner: appending the checksums of 4 KiB blocks one by one gives
// the checksum of the whole run.
func TestCombiner(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 37*4096)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	c := NewCombiner(4096)
	crc := Checksum(data[:100]) // a prefix of another length first
	for off := 100; off+4096 <= len(data); off += 4096 {
		crc = c.Append(crc, Checksum(data[off:off+4096]))
		if want := Checksum(data[:off+4096]); crc != want {
			t.Fatalf("after %d bytes: %08x, want %08x", off+4096, crc, want)
		}
	}
}

// TestFromBlocks: the checksum combined from block checksums (with the
// partial tail read) equals the data's, for lengths around block edges.
func TestFromBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 9*Block+100)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, n := range []int{0, 1, Block - 1, Block, Block + 1, 3 * Block, 9*Block + 100} {
		sums := BlockSums(nil, data[:n])
		if len(sums) != n/Block {
			t.Fatalf("%d bytes: %d block sums", n, len(sums))
		}
		if got, want := FromBlocks(sums, data[:n]), Checksum(data[:n]); got != want {
			t.Fatalf("%d bytes: %08x, want %08x", n, got, want)
		}
	}
}

func BenchmarkCombiner4K(b *testing.B) {
	c := NewCombiner(4096)
	crc := uint32(1)
	for i := 0; i < b.N; i++ {
		crc = c.Append(crc, uint32(i))
	}
	sink = crc
}

var sink uint32

func BenchmarkChecksum4K(b *testing.B) {
	buf := make([]byte, 4096)
	b.SetBytes(4096)
	for i := 0; i < b.N; i++ {
		sink = Checksum(buf)
	}
}
