// Package crc32c is the CRC-32C (Castagnoli) checksum every layer of
// Shoal uses — messenger frames, the object store's 4 KiB block
// checksums, scrub digests — with Combine, which gives the checksum of
// a concatenation from the checksums of its parts without reading
// them: a sender whose data already carries verified block checksums
// (an OSD answering a read) derives the frame's checksum from them
// instead of a pass over the bytes.
package crc32c

import (
	"hash"
	"hash/crc32"
)

var table = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the crc32c of b (hash/crc32 with the Castagnoli table;
// RFC 3720, appendix B.4).
func Checksum(b []byte) uint32 { return crc32.Checksum(b, table) }

// New returns a streaming crc32c hash.
func New() hash.Hash32 { return crc32.New(table) }

// Update is the crc32c of the bytes crc covers followed by b.
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, table, b) }

// Sum is a checksum that may be unknown: a known one (Valid) lets its
// user skip computing it.
type Sum struct {
	CRC   uint32 // the crc32c, when Valid
	Valid bool   // CRC is known; the zero Sum is unknown
}

// poly is the Castagnoli polynomial, bit-reversed as hash/crc32 uses it
// (bit 31 is the coefficient of x^0).
const poly = 0x82f63b78

// multModP is a·b modulo the polynomial, both in the reflected
// representation (the method of zlib's crc32_combine, Mark Adler).
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2n[k] is x^(2^k) modulo the polynomial.
var x2n = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// shift is x^(8n) modulo the polynomial: the operator that appending n
// bytes applies to a checksum register.
func shift(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2n[k&31], p)
		}
	}
	return p
}

// Combine returns the crc32c of A followed by B, given crcA = crc32c(A),
// crcB = crc32c(B) and lenB = len(B) (≥ 0). Its cost is logarithmic in
// lenB, independent of the data; a run of equal lengths is cheaper with
// a Combiner.
func Combine(crcA, crcB uint32, lenB int64) uint32 {
	return multModP(shift(lenB), crcA) ^ crcB
}

// Combiner appends checksums of parts of one fixed length (4 KiB
// blocks) at four table lookups each: multiplying by a constant is
// linear, so it is tabulated per byte of the register.
type Combiner struct{ t *[4][256]uint32 }

// NewCombiner returns a Combiner for parts of n bytes (4 KiB of tables).
func NewCombiner(n int64) Combiner {
	op := shift(n)
	t := new([4][256]uint32)
	for j := range t {
		for v := range t[j] {
			t[j][v] = multModP(op, uint32(v)<<(8*j))
		}
	}
	return Combiner{t}
}

// Append is Combine(crc, part, n) for the Combiner's length n.
func (c Combiner) Append(crc, part uint32) uint32 {
	t := c.t
	return t[0][crc&0xff] ^ t[1][crc>>8&0xff] ^ t[2][crc>>16&0xff] ^ t[3][crc>>24] ^ part
}

// Piece is how much of a stream to read before checksumming it (bytes):
// a multiple of Block (so block sums line up with the stream's start),
// small enough that a read's copy is still in the core's L2 cache when
// the checksum reads it back. One read from a loopback socket can return
// several MiB, which a checksum taken after the read would read back
// from memory. msgr reads payloads, and the gateway request bodies, this
// way.
const Piece = 256 << 10

// Block is the length of the blocks whose checksums BlockSums gives and
// FromBlocks takes: the object store's 4 KiB block.
const Block = 4096

var blocks = NewCombiner(Block)

// BlockSums appends to dst the crc32c of each whole Block of data (a
// partial last block has none) and returns it.
func BlockSums(dst []uint32, data []byte) []uint32 {
	for off := 0; off+Block <= len(data); off += Block {
		dst = append(dst, Checksum(data[off:off+Block]))
	}
	return dst
}

// FromBlocks is the crc32c of data given sums, the checksums of its
// whole Blocks (at least len(data)/Block of them): each costs a few
// nanoseconds, and only a partial last block is read.
func FromBlocks(sums []uint32, data []byte) uint32 {
	n := len(data) / Block
	var crc uint32
	for _, s := range sums[:n] {
		crc = blocks.Append(crc, s)
	}
	return Update(crc, data[n*Block:])
}
