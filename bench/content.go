package bench

import (
	"encoding/binary"
	"hash/fnv"
)

// Object content. rados bench writes "I'm the %16dth op!" followed by
// padding, so it can only check a few bytes per object; here every byte is
// a function of the run's prefix, the object index and the object size, so
// that seq and rand verify all of it without a copy of what was written.
//
// The content is a sequence of little-endian 64-bit words, the last one cut
// to the object size:
//
//	word 0: contentMagic ("SHOALBEN")
//	word 1: object index
//	word 2: object size
//	word k: scramble(seed + k*golden) for k >= 3, seed derived from the
//	        prefix, index and size with mix
//
// Generating or checking a word costs an addition, a shift and an xor, so
// it runs at memory speed (see BenchmarkFill4M and BenchmarkCheck4M).

const (
	contentMagic = 0x4e45424c414f4853 // "SHOALBEN" little-endian
	golden       = 0x9e3779b97f4a7c15
	headerWords  = 3
)

// mix is the splitmix64 finaliser.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// prefixSeed hashes an object prefix (FNV-1a 64).
func prefixSeed(prefix string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(prefix))
	return h.Sum64()
}

// content describes the expected bytes of one object.
type content struct {
	index uint64
	size  uint64
	seed  uint64
}

func newContent(pseed uint64, index, size int) content {
	return content{
		index: uint64(index),
		size:  uint64(size),
		seed:  mix(pseed ^ mix(uint64(index)+golden) ^ mix(uint64(size)*0xc2b2ae3d27d4eb4f)),
	}
}

func (c content) word(k int) uint64 {
	switch k {
	case 0:
		return contentMagic
	case 1:
		return c.index
	case 2:
		return c.size
	}
	return scramble(c.seed + uint64(k)*golden)
}

// scramble makes the high bits of a Weyl sequence reach the low bytes. The
// body words x_k = seed + k*golden are all distinct within an object and,
// with seeds from mix, across objects; one addition, shift and xor per word
// keeps generation and checking at memory speed.
func scramble(x uint64) uint64 { return x ^ x>>29 }

// fill writes the object's content into buf, whose length must be the
// object size.
func (c content) fill(buf []byte) {
	k := 0
	for ; k < headerWords && 8*k+8 <= len(buf); k++ {
		binary.LittleEndian.PutUint64(buf[8*k:], c.word(k))
	}
	x := c.seed + uint64(k)*golden
	b := buf[8*k:]
	g := uint64(golden)
	for len(b) >= 32 {
		binary.LittleEndian.PutUint64(b[:8], scramble(x))
		binary.LittleEndian.PutUint64(b[8:16], scramble(x+g))
		binary.LittleEndian.PutUint64(b[16:24], scramble(x+2*g))
		binary.LittleEndian.PutUint64(b[24:32], scramble(x+3*g))
		x += 4 * g
		b = b[32:]
		k += 4
	}
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b[:8], scramble(x))
		x += golden
		b = b[8:]
		k++
	}
	if len(b) != 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], c.word(k))
		copy(b, w[:])
	}
}

// check returns the offset of the first byte of data that differs from the
// object's content, len(data) if data is shorter than the object, or -1 if
// data is exactly the content.
func (c content) check(data []byte) int {
	if off := c.checkAt(0, data); off >= 0 {
		return off
	}
	if len(data) < int(c.size) {
		return len(data)
	}
	return -1
}

// checkAt checks data as the object's bytes from off (a multiple of 8)
// on: it returns the offset in the object of the first byte that differs
// (bytes past the object's end differ), or -1. A reader checks an object
// piece by piece as it arrives, each piece while it is still in the CPU's
// cache.
func (c content) checkAt(off int, data []byte) int {
	n := min(len(data), max(int(c.size)-off, 0))
	k := off / 8
	b := data[:n]
	for ; k < headerWords && len(b) >= 8; k++ {
		if got, want := binary.LittleEndian.Uint64(b), c.word(k); got != want {
			return 8*k + firstDiff(got, want)
		}
		b = b[8:]
	}
	x := c.seed + uint64(k)*golden
	// four words a step, their differences or-ed (a mismatch is then
	// located word by word below): about twice the speed of one a step
	g := uint64(golden)
	for len(b) >= 32 {
		// (^ and | bind alike in Go: the parentheses matter)
		d := (binary.LittleEndian.Uint64(b) ^ scramble(x)) |
			(binary.LittleEndian.Uint64(b[8:]) ^ scramble(x+g)) |
			(binary.LittleEndian.Uint64(b[16:]) ^ scramble(x+2*g)) |
			(binary.LittleEndian.Uint64(b[24:]) ^ scramble(x+3*g))
		if d != 0 {
			break
		}
		x += 4 * g
		b = b[32:]
		k += 4
	}
	for len(b) >= 8 {
		if got, want := binary.LittleEndian.Uint64(b), scramble(x); got != want {
			return 8*k + firstDiff(got, want)
		}
		x += golden
		b = b[8:]
		k++
	}
	if len(b) != 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], c.word(k))
		for i := range b {
			if b[i] != w[i] {
				return 8*k + i
			}
		}
	}
	if len(data) > n {
		return off + n
	}
	return -1
}

// firstDiff returns the index of the first differing byte of two distinct
// little-endian words.
func firstDiff(a, b uint64) int {
	x := a ^ b
	i := 0
	for x&0xff == 0 {
		x >>= 8
		i++
	}
	return i
}
