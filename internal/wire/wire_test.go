package wire

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/shoal-project/shoal/internal/crc32c"
)

// encodeSample writes every kind of field, two nested sections and blobs
// of several sizes, plain and aligned.
func encodeSample(e *Encoder, blobs [][]byte) {
	outer := e.Begin(2, 1)
	e.U64(7)
	for i, b := range blobs {
		inner := e.Begin(1, 1)
		e.String("blob")
		if i%2 == 0 {
			e.Blob(b)
		} else {
			e.AlignedBlob(b)
		}
		e.Bool(true)
		e.End(inner)
	}
	e.Strings([]string{"a", "bc"})
	e.End(outer)
}

// TestVecEncoder: a vector encoder's parts concatenate to exactly what a
// plain encoder writes — section lengths patched across parts included —
// large blobs are referenced, not copied, and every aligned blob of at
// least 8 KiB starts at a multiple of BlockAlign; the decoder reads it all
// back.
func TestVecEncoder(t *testing.T) {
	var blobs [][]byte
	for i, n := range []int{0, 5, 9000, 100, 70000, 8191, 8192, 3 << 20} {
		blobs = append(blobs, bytes.Repeat([]byte{byte('a' + i)}, n))
	}
	plain := NewEncoder(nil)
	encodeSample(plain, blobs)
	v := NewVecEncoder(4096)
	encodeSample(v, blobs)
	parts := v.Parts()
	if got := bytes.Join(parts, nil); !bytes.Equal(got, plain.Bytes()) {
		t.Fatalf("vector encoding (%d bytes in %d parts) differs from the plain one (%d bytes)", len(got), len(parts), len(plain.Bytes()))
	}
	referenced := 0
	for _, p := range parts {
		for _, b := range blobs {
			if len(p) > 0 && len(b) > 0 && &p[0] == &b[0] {
				referenced++
			}
		}
	}
	if referenced != 5 { // the blobs of at least 4096 bytes
		t.Fatalf("%d blobs referenced, want 5", referenced)
	}
	enc := plain.Bytes()
	d := NewDecoder(enc)
	_, end := d.Begin("outer", 2)
	if d.U64() != 7 {
		t.Fatal("u64")
	}
	for i, b := range blobs {
		_, iend := d.Begin("inner", 1)
		if d.String() != "blob" {
			t.Fatal("string")
		}
		var got []byte
		if i%2 == 0 {
			got = d.BlobRef()
		} else {
			got = d.AlignedBlobRef()
			if off := len(enc) - d.Remaining() - len(got); len(got) >= alignedMin && off%BlockAlign != 0 {
				t.Fatalf("aligned blob %d of %d bytes at offset %d", i, len(got), off)
			}
		}
		if !bytes.Equal(got, b) || !d.Bool() {
			t.Fatalf("blob %d: %d bytes, want %d", i, len(got), len(b))
		}
		d.End("inner", iend)
	}
	if ss := d.Strings(); len(ss) != 2 || ss[1] != "bc" {
		t.Fatalf("strings %q", ss)
	}
	d.End("outer", end)
	if err := d.Err(); err != nil || d.Remaining() != 0 {
		t.Fatalf("decode: %v, %d bytes left", err, d.Remaining())
	}
	// a corrupt pad count is an error, not a panic or a huge skip
	bad := NewEncoder(nil)
	bad.U32(1)
	bad.U32(BlockAlign)
	dd := NewDecoder(append(bad.Bytes(), 0))
	dd.AlignedBlobRef()
	if dd.Err() == nil {
		t.Fatal("a pad of BlockAlign bytes decoded")
	}
}

// TestAlignedBlobVec: a blob given as parts encodes as AlignedBlob of
// their concatenation, in either encoder, its large parts referenced;
// PartSums places each referenced part's known checksum at that part and
// leaves copied parts and encoded bytes unknown.
func TestAlignedBlobVec(t *testing.T) {
	data := [][]byte{bytes.Repeat([]byte("a"), 8192), []byte("small"), bytes.Repeat([]byte("b"), 20000), bytes.Repeat([]byte("c"), 4096)}
	sums := []crc32c.Sum{{CRC: 1, Valid: true}, {CRC: 2, Valid: true}, {}, {CRC: 4, Valid: true}}
	for _, lead := range []int{0, 3, 4095} { // where the blob starts
		plain := NewEncoder(nil)
		plain.buf = append(plain.buf, zeros[:lead]...)
		plain.AlignedBlob(bytes.Join(data, nil))
		v := NewVecEncoder(4096)
		v.buf = append(v.buf, zeros[:lead]...)
		v.AlignedBlobVec(data)
		v.U8(9)
		parts := v.Parts()
		if got := bytes.Join(parts, nil); !bytes.Equal(got, append(plain.Bytes(), 9)) {
			t.Fatalf("lead %d: AlignedBlobVec's %d bytes differ from AlignedBlob's", lead, len(got))
		}
		p := NewEncoder(nil)
		p.buf = append(p.buf, zeros[:lead]...)
		p.AlignedBlobVec(data)
		if !bytes.Equal(p.Bytes(), plain.Bytes()) {
			t.Fatalf("lead %d: a plain encoder's AlignedBlobVec differs", lead)
		}
		ps := v.PartSums(parts, data, sums)
		if len(ps) != len(parts) {
			t.Fatalf("lead %d: %d sums for %d parts", lead, len(ps), len(parts))
		}
		want := map[uintptr]crc32c.Sum{}
		for i, d := range data {
			if len(d) >= 4096 {
				want[uintptr(unsafe.Pointer(&d[0]))] = sums[i]
			}
		}
		found := 0
		for i, part := range parts {
			s, ok := crc32c.Sum{}, false
			if len(part) > 0 {
				s, ok = want[uintptr(unsafe.Pointer(&part[0]))]
			}
			if ok {
				found++
			}
			if ps[i] != s {
				t.Fatalf("lead %d: part %d (%d bytes): sum %+v, want %+v", lead, i, len(part), ps[i], s)
			}
		}
		if found != 3 {
			t.Fatalf("lead %d: %d parts referenced, want 3", lead, found)
		}
	}
	if NewEncoder(nil).PartSums([][]byte{{1}}, data, sums) != nil {
		t.Fatal("a plain encoder's parts have known sums")
	}
}
