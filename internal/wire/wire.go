// Package wire is the versioned binary encoding of Shoal's maps and
// messages (op requests, peer messages, MON replies): little-endian fixed-width integers, length-prefixed strings,
// and sections that carry their own version, oldest compatible version and
// length, so that a newer writer can append fields an older reader skips.
//
// Section layout: version u8, compat u8, length u32, then length bytes. A
// reader that knows versions up to V accepts a section whose compat ≤ V,
// reads the fields it knows, and skips the rest. This is the scheme of
// Ceph's ENCODE_START/DECODE_START (src/include/encoding.h).
//
// A Decoder never panics and never allocates more than the input could
// hold: every length is checked against the bytes remaining. Its first
// error sticks; callers check Err once at the end.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/shoal-project/shoal/internal/crc32c"
)

// ErrCorrupt marks undecodable input: truncated, oversized lengths or a
// section newer than the reader understands.
var ErrCorrupt = errors.New("corrupt encoding")

// Encoder appends to a byte slice — or, made by NewVecEncoder, builds the
// encoding as parts to be written with one vectored write, large blobs
// referenced rather than copied.
type Encoder struct {
	buf []byte
	// vector mode: parts before buf (encoded bytes and referenced blobs),
	// their start offsets, and the blob size from which a blob is a part
	parts  [][]byte
	starts []int
	done   int
	min    int
}

// Bytes returns the encoding so far (not for a vector encoder: Parts).
func (e *Encoder) Bytes() []byte {
	if e.min > 0 {
		panic("wire: Bytes of a vector encoder")
	}
	return e.buf
}

// NewVecEncoder returns an encoder whose blobs of at least min bytes are
// not copied but become parts of their own: Parts returns the encoding as
// slices to write in order. The blobs must not change until the parts are
// written.
func NewVecEncoder(min int) *Encoder {
	return &Encoder{buf: make([]byte, 0, 256), min: max(min, 1)}
}

// Parts returns a vector encoder's encoding: slices whose concatenation
// is what an Encoder would have appended.
func (e *Encoder) Parts() [][]byte {
	if e.min == 0 {
		return [][]byte{e.buf}
	}
	return append(e.parts, e.buf)
}

// Offset is the number of bytes encoded so far.
func (e *Encoder) Offset() int { return e.done + len(e.buf) }

// part appends b as a part of its own after the bytes encoded so far.
func (e *Encoder) part(b []byte) {
	e.starts = append(e.starts, e.done, e.done+len(e.buf))
	e.parts = append(e.parts, e.buf, b)
	e.done += len(e.buf) + len(b)
	e.buf = make([]byte, 0, 256)
}

// raw appends b, as a part of its own if it is large in vector mode.
func (e *Encoder) raw(b []byte) {
	if e.min > 0 && len(b) >= e.min {
		e.part(b)
		return
	}
	e.buf = append(e.buf, b...)
}

// BlockAlign is the alignment AlignedBlob gives large blobs: the device
// block size of O_DIRECT I/O.
const BlockAlign = 4096

// alignedMin is the blob size from which AlignedBlob pads.
const alignedMin = 8 << 10

// AlignedBlob appends a u32 length, a u32 pad count, that many zero
// bytes, and b, padded so that a blob of at least 8 KiB starts at a
// multiple of BlockAlign from the encoding's start. A receiver that reads
// the encoding into page-aligned memory can then hand the blob to an
// O_DIRECT write without copying it into an aligned buffer.
func (e *Encoder) AlignedBlob(b []byte) { e.AlignedBlobVec([][]byte{b}) }

var zeros [BlockAlign]byte

// AlignedBlobVec appends the concatenation of parts as AlignedBlob would
// append it, each large part referenced in vector mode.
func (e *Encoder) AlignedBlobVec(parts [][]byte) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	e.U32(uint32(n))
	pad := 0
	if n >= alignedMin {
		pad = (BlockAlign - (e.Offset()+4)%BlockAlign) % BlockAlign
	}
	e.U32(uint32(pad))
	e.buf = append(e.buf, zeros[:pad]...)
	for _, p := range parts {
		e.raw(p)
	}
}

// PartSums returns, for the parts Parts returns, the known checksums of
// those that are referenced blobs: data[i] (whose checksum is sums[i], if
// Valid), the blobs' parts in the order they were encoded, matched by
// address and length; the other parts' are unknown. It returns nil if
// none is known. (For msgr.Message.ReplyVecThen, which then checksums
// only the rest.)
func (e *Encoder) PartSums(parts, data [][]byte, sums []crc32c.Sum) []crc32c.Sum {
	var out []crc32c.Sum
	j := 0
	for i, v := range data {
		if e.min == 0 || len(v) < e.min || i >= len(sums) { // copied, not referenced
			continue
		}
		for ; j < len(parts); j++ {
			if p := parts[j]; len(p) == len(v) && &p[0] == &v[0] {
				break
			}
		}
		if j == len(parts) {
			return out
		}
		if sums[i].Valid {
			if out == nil {
				out = make([]crc32c.Sum, len(parts))
			}
			out[j] = sums[i]
		}
		j++
	}
	return out
}

// AlignedBlobRef reads what AlignedBlob wrote, without copying.
func (d *Decoder) AlignedBlobRef() []byte {
	n := int(d.U32())
	pad := d.U32()
	if pad >= BlockAlign {
		d.Fail("blob padding %d", pad)
		return nil
	}
	d.take(int(pad))
	return d.take(n)
}

// U8 appends one byte.
func (e *Encoder) U8(v uint8) { e.buf = append(e.buf, v) }

// Bool appends 0 or 1.
func (e *Encoder) Bool(v bool) {
	if v {
		e.U8(1)
	} else {
		e.U8(0)
	}
}

// U32 appends a little-endian uint32.
func (e *Encoder) U32(v uint32) { e.buf = binary.LittleEndian.AppendUint32(e.buf, v) }

// I32 appends a little-endian int32.
func (e *Encoder) I32(v int32) { e.U32(uint32(v)) }

// U64 appends a little-endian uint64.
func (e *Encoder) U64(v uint64) { e.buf = binary.LittleEndian.AppendUint64(e.buf, v) }

// I64 appends a little-endian int64.
func (e *Encoder) I64(v int64) { e.U64(uint64(v)) }

// String appends a u32 length and the bytes.
func (e *Encoder) String(s string) {
	e.U32(uint32(len(s)))
	e.buf = append(e.buf, s...)
}

// Blob appends a u32 length and the bytes (a vector encoder references
// large ones).
func (e *Encoder) Blob(b []byte) {
	e.U32(uint32(len(b)))
	e.raw(b)
}

// BlobVec appends the concatenation of parts as one blob (what Blob of
// it would append), each large part referenced in vector mode.
func (e *Encoder) BlobVec(parts [][]byte) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	e.U32(uint32(n))
	for _, p := range parts {
		e.raw(p)
	}
}

// Begin opens a section; End(mark) closes it by writing its length.
func (e *Encoder) Begin(version, compat uint8) int {
	e.U8(version)
	e.U8(compat)
	e.U32(0)
	return e.Offset()
}

// End closes the section opened by Begin.
func (e *Encoder) End(mark int) {
	n := uint32(e.Offset() - mark)
	at := mark - 4
	if at >= e.done {
		binary.LittleEndian.PutUint32(e.buf[at-e.done:], n)
		return
	}
	// the length field is in an encoded part before the current buffer
	// (never in a referenced blob, which holds no field)
	for i := len(e.starts) - 1; i >= 0; i-- {
		if e.starts[i] <= at {
			binary.LittleEndian.PutUint32(e.parts[i][at-e.starts[i]:], n)
			return
		}
	}
}

// Decoder reads what an Encoder wrote.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder reads b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Err returns the first error met, wrapping ErrCorrupt.
func (d *Decoder) Err() error { return d.err }

// Fail records err (wrapped in ErrCorrupt) unless an error is already set.
func (d *Decoder) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", ErrCorrupt, fmt.Sprintf(format, args...), d.off)
	}
}

// Remaining is the count of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || d.Remaining() < n {
		d.Fail("truncated: need %d bytes, have %d", n, d.Remaining())
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// U8 reads one byte.
func (d *Decoder) U8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

// Bool reads a byte that must be 0 or 1.
func (d *Decoder) Bool() bool {
	v := d.U8()
	if v > 1 {
		d.Fail("bool %d", v)
	}
	return v == 1
}

// U32 reads a little-endian uint32.
func (d *Decoder) U32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// I32 reads a little-endian int32.
func (d *Decoder) I32() int32 { return int32(d.U32()) }

// U64 reads a little-endian uint64.
func (d *Decoder) U64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// I64 reads a little-endian int64.
func (d *Decoder) I64() int64 { return int64(d.U64()) }

// String reads a length-prefixed string.
func (d *Decoder) String() string { return string(d.take(int(d.U32()))) }

// Blob reads a length-prefixed byte string (a copy).
func (d *Decoder) Blob() []byte {
	b := d.take(int(d.U32()))
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// Count reads a u32 element count and checks that count elements of at
// least minSize bytes each could still follow, so a corrupt count cannot
// trigger a huge allocation.
func (d *Decoder) Count(minSize int) int {
	n := d.U32()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if uint64(n)*uint64(minSize) > uint64(d.Remaining()) || n > math.MaxInt32 {
		d.Fail("count %d exceeds the %d bytes left", n, d.Remaining())
		return 0
	}
	return int(n)
}

// Begin opens a section written by Encoder.Begin. It fails if the section
// needs a reader newer than supported. It returns the section's version and
// the offset at which it ends, for End.
func (d *Decoder) Begin(what string, supported uint8) (version uint8, end int) {
	version = d.U8()
	compat := d.U8()
	n := int(d.U32())
	if d.err != nil {
		return 0, d.off
	}
	if compat > supported {
		d.Fail("%s: encoding needs a reader of version %d, this one is %d", what, compat, supported)
		return 0, d.off
	}
	if n > d.Remaining() {
		d.Fail("%s: section of %d bytes, %d left", what, n, d.Remaining())
		return 0, d.off
	}
	return version, d.off + n
}

// End skips whatever a newer writer appended to the section, and fails if
// the fields read overran it.
func (d *Decoder) End(what string, end int) {
	if d.err != nil {
		return
	}
	if d.off > end {
		d.Fail("%s: fields overrun the section end", what)
		return
	}
	d.off = end
}

// NewEncoder appends to buf (which may be a reused buffer's [:0]).
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// BlobRef reads a length-prefixed byte string without copying: the result
// aliases the decoder's input.
func (d *Decoder) BlobRef() []byte { return d.take(int(d.U32())) }

// Strings appends a u32 count and each string.
func (e *Encoder) Strings(ss []string) {
	e.U32(uint32(len(ss)))
	for _, s := range ss {
		e.String(s)
	}
}

// Strings reads what Encoder.Strings wrote (nil for none).
func (d *Decoder) Strings() []string {
	n := d.Count(4)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.String()
	}
	return out
}
