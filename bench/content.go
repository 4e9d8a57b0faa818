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
//	word k: mix(seed + k*golden) for k >= 3, seed derived from the
//	        prefix, index and size
//
// Generating or checking a word costs two multiplications, so a 4 MiB
// object takes well under a millisecond.

const (
	contentMagic = 0x4e45424c414f4853 // "SHOALBEN" little-endian
	golden       = 0x9e3779b97f4a7c15
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
	return mix(c.seed + uint64(k)*golden)
}

// fill writes the object's content into buf, whose length must be the
// object size.
func (c content) fill(buf []byte) {
	n := len(buf) / 8
	for k := 0; k < n; k++ {
		binary.LittleEndian.PutUint64(buf[8*k:], c.word(k))
	}
	if rem := len(buf) % 8; rem != 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], c.word(n))
		copy(buf[8*n:], w[:rem])
	}
}

// check returns the offset of the first byte of data that differs from the
// object's content, len(data) if data is shorter than the object, or -1 if
// data is exactly the content.
func (c content) check(data []byte) int {
	size := int(c.size)
	n := min(len(data), size)
	words := n / 8
	for k := 0; k < words; k++ {
		if binary.LittleEndian.Uint64(data[8*k:]) != c.word(k) {
			return 8*k + firstDiff(binary.LittleEndian.Uint64(data[8*k:]), c.word(k))
		}
	}
	if rem := n % 8; rem != 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], c.word(words))
		for i := 0; i < rem; i++ {
			if data[8*words+i] != w[i] {
				return 8*words + i
			}
		}
	}
	if len(data) != size {
		return n
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
