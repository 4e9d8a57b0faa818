package bench

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"io"
)

// Object content. rados bench writes "I'm the %16dth op!" followed by
// padding, so it can only check a few bytes per object; here every byte is
// a function of the run's prefix, the object index and the object size, so
// that seq and rand verify all of it without a copy of what was written.
//
// An object is a sequence of 4 KiB blocks, the last one cut to the object
// size. Block b starts with a tag word (little-endian 64 bits) unique to
// the object and the block, and goes on with 4088 bytes of a fixed
// pseudorandom table, from an offset the tag chooses:
//
//	block 0:  contentMagic ("SHOALBEN"), object index, object size (three
//	          words), then table[start(0)+16:]
//	block b:  tag(b) = mix(seed + (b+1)*golden), then table[start(b):]
//	          where start(b) = 8*(tag(b) mod tableWords)
//
// with seed derived from the prefix, index and size with mix. A block
// misplaced within an object or taken from another object has another tag,
// and any shift or change of bytes within a block meets different table
// bytes. Generating a block is one word and one copy from a table that
// stays in the CPU's cache, and checking it one word and one bytes.Equal
// against it, so both run at the speed of memcpy and memcmp (see
// BenchmarkFill4M and BenchmarkCheck4M): a load generator sharing the
// machine with the daemons it measures leaves them that much more CPU.

const (
	contentMagic = 0x4e45424c414f4853 // "SHOALBEN" little-endian
	golden       = 0x9e3779b97f4a7c15
	headerWords  = 3
	blockBytes   = 4096
	tableWords   = 8 << 10 // 64 KiB of offsets a block's body may start at
)

// table holds the bytes blocks' bodies are cut from: tableWords words of
// the splitmix64 sequence, and one block's body more so that any start
// has a whole body after it.
var table = func() []byte {
	t := make([]byte, 8*tableWords+blockBytes)
	x := uint64(0x5348_4f41_4c54_4142) // any constant: the table is part of the format
	for i := 0; i+8 <= len(t); i += 8 {
		x += golden
		binary.LittleEndian.PutUint64(t[i:], mix(x))
	}
	return t
}()

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

// block returns block b's head — its first word(s), as bytes — and the
// table bytes its body is cut from (the block is head followed by body,
// both cut to the block's length).
func (c content) block(b uint64, head *[8 * headerWords]byte) ([]byte, []byte) {
	tag := mix(c.seed + (b+1)*golden)
	body := table[8*(tag%tableWords):]
	if b == 0 {
		binary.LittleEndian.PutUint64(head[0:], contentMagic)
		binary.LittleEndian.PutUint64(head[8:], c.index)
		binary.LittleEndian.PutUint64(head[16:], c.size)
		return head[:], body[16:]
	}
	binary.LittleEndian.PutUint64(head[0:], tag)
	return head[:8], body
}

// fill writes the object's content into buf, whose length must be the
// object size.
func (c content) fill(buf []byte) { c.fillAt(0, buf) }

// fillAt writes the object's bytes [off, off+len(buf)) into buf, which
// must end within the object.
func (c content) fillAt(off int, buf []byte) {
	var h [8 * headerWords]byte
	for i := 0; i < len(buf); {
		i += copy(buf[i:], c.piece(off+i, len(buf)-i, &h))
	}
}

// piece returns the object's bytes from off on, at most n and not past
// the block off is in: a slice of that block's head (written into h) or
// of the table. fillAt copies pieces and checkAt compares them.
func (c content) piece(off, n int, h *[8 * headerWords]byte) []byte {
	rel := off % blockBytes
	head, body := c.block(uint64(off/blockBytes), h)
	n = min(n, blockBytes-rel)
	if rel < len(head) {
		return head[rel:min(len(head), rel+n)]
	}
	return body[rel-len(head):][:n]
}

// reader returns the object's content as a stream, generated as it is
// read: a PUT's body costs one pass over buffers that stay in the CPU's
// cache instead of filling an object-sized buffer and copying it out.
func (c content) reader() io.Reader { return &contentReader{c: c} }

type contentReader struct {
	c   content
	off int
}

func (r *contentReader) Read(p []byte) (int, error) {
	n := min(len(p), int(r.c.size)-r.off)
	if n <= 0 {
		return 0, io.EOF
	}
	r.c.fillAt(r.off, p[:n])
	r.off += n
	return n, nil
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

// checkAt checks data as the object's bytes from off on: it returns the
// offset in the object of the first byte that differs (bytes past the
// object's end differ), or -1. A reader checks an object piece by piece as
// it arrives, each piece while it is still in the CPU's cache.
func (c content) checkAt(off int, data []byte) int {
	n := min(len(data), max(int(c.size)-off, 0))
	var h [8 * headerWords]byte
	for i := 0; i < n; {
		want := c.piece(off+i, n-i, &h)
		if got := data[i : i+len(want)]; !bytes.Equal(got, want) {
			return off + i + firstDiff(got, want)
		}
		i += len(want)
	}
	if len(data) > n {
		return off + n
	}
	return -1
}

// firstDiff returns the index of the first byte where a and b (of equal
// length) differ, or -1.
func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
