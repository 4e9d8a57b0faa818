package objectstore

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"unsafe"
)

// alignedBlocks returns n blocks of block-aligned memory.
func alignedBlocks(n int) []byte {
	b := make([]byte, (n+1)*BlockSize)
	skip := (BlockSize - int(uintptr(unsafe.Pointer(&b[0]))%BlockSize)) % BlockSize
	return b[skip : skip+n*BlockSize]
}

// TestFileDeviceWriteVecAt: aligned buffers (direct) interleaved with
// unaligned ones (bounced), then more aligned ones in a row than one
// pwritev takes, land back to back at the offset given, and nothing
// else changes.
func TestFileDeviceWriteVecAt(t *testing.T) {
	const size = 16 << 20
	dev, err := openFileDevice(filepath.Join(t.TempDir(), "block"), size)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if dev.(fileDevice).direct == nil {
		t.Log("no O_DIRECT on this filesystem: buffered writes only")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var bufs [][]byte
	var want []byte
	for i := range maxIOV + 100 {
		n := 1 + i%3
		var b []byte
		if i < 40 && i%7 == 3 { // unaligned memory (then more aligned buffers in a row than one pwritev takes)
			b = make([]byte, n*BlockSize+1)[1:]
		} else {
			b = alignedBlocks(n)
		}
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	const off = 3 * BlockSize
	if err := dev.(vecWriter).WriteVecAt(bufs, off); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if _, err := dev.(fileDevice).f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[off:off+len(want)], want) {
		t.Fatal("the device holds other bytes than were written")
	}
	if bytes.ContainsFunc(got[:off], func(r rune) bool { return r != 0 }) || bytes.ContainsFunc(got[off+len(want):], func(r rune) bool { return r != 0 }) {
		t.Fatal("bytes outside the write changed")
	}
}

// callDevice records how a device was written.
type callDevice struct {
	data  []byte
	calls []int // blocks per call
}

func (d *callDevice) ReadAt(p []byte, off int64) (int, error) {
	return copy(p, d.data[off:]), nil
}
func (d *callDevice) WriteAt(p []byte, off int64) (int, error) {
	d.calls = append(d.calls, len(p)/BlockSize)
	return copy(d.data[off:], p), nil
}
func (d *callDevice) WriteVecAt(bufs [][]byte, off int64) error {
	n := 0
	for _, b := range bufs {
		n += copy(d.data[off+int64(n):], b)
	}
	d.calls = append(d.calls, n/BlockSize)
	return nil
}
func (d *callDevice) Sync() error  { return nil }
func (d *callDevice) Close() error { return nil }

// TestWriteRuns: a group's pieces, given out of order, are written where
// they belong, with one call per stretch of adjacent blocks.
func TestWriteRuns(t *testing.T) {
	dev := &callDevice{data: make([]byte, 64*BlockSize)}
	// stretches: blocks 2-6 (pieces 2, 3-4, 5-6), 10 alone, 20-21 (20, 21)
	pieces := []pendingWrite{
		{21, blocks(1, 'g')}, {3, blocks(2, 'b')}, {10, blocks(1, 'e')},
		{2, blocks(1, 'a')}, {20, blocks(1, 'f')}, {5, blocks(2, 'c')},
	}
	if err := writeRuns(dev, pieces); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 64*BlockSize)
	for _, p := range pieces {
		copy(want[p.phys*BlockSize:], p.data)
	}
	if !bytes.Equal(dev.data, want) {
		t.Fatal("the device holds other bytes than the pieces")
	}
	if got := dev.calls; len(got) != 3 || got[0] != 5 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("blocks per write call %v, want [5 1 2]", got)
	}
}

// TestSkipWritten: after a short vectored write the rest starts at the
// first byte not written, within a buffer or at the next one.
func TestSkipWritten(t *testing.T) {
	a, b, c := []byte("abc"), []byte("defg"), []byte("h")
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "abcdefgh"}, {2, "cdefgh"}, {3, "defgh"}, {5, "fgh"}, {7, "h"}, {8, ""}} {
		got := skipWritten([][]byte{a, b, c}, tc.n)
		if s := string(bytes.Join(got, nil)); s != tc.want || (len(got) > 0 && len(got[0]) == 0) {
			t.Errorf("skip %d: %q (%d buffers), want %q with no empty first buffer", tc.n, s, len(got), tc.want)
		}
	}
}

// TestUnfreed: the pieces a group writes are exactly its written blocks
// that it did not free again, each with its own bytes; checked block by
// block against random groups (the map the committer kept before).
func TestUnfreed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 500; round++ {
		// writes: disjoint runs in a shuffled order, each block's byte its number
		var writes []pendingWrite
		for at := uint64(rng.IntN(3)); at < 200; {
			n := uint64(1 + rng.IntN(8))
			data := make([]byte, n*BlockSize)
			for i := range n {
				data[i*BlockSize] = byte(at + i)
			}
			writes = append(writes, pendingWrite{at, data})
			at += n + uint64(rng.IntN(3))
		}
		rng.Shuffle(len(writes), func(i, j int) { writes[i], writes[j] = writes[j], writes[i] })
		// freed: disjoint runs anywhere, some inside writes, some across their edges
		var freed []run
		for at := uint64(rng.IntN(10)); at < 210; {
			n := uint64(1 + rng.IntN(6))
			freed = append(freed, run{at, n})
			at += n + uint64(rng.IntN(12))
		}
		rng.Shuffle(len(freed), func(i, j int) { freed[i], freed[j] = freed[j], freed[i] })
		want := map[uint64]bool{}
		for _, w := range writes {
			for i := range uint64(len(w.data)) / BlockSize {
				want[w.phys+i] = true
			}
		}
		for _, f := range freed {
			for b := f.start; b < f.start+f.n; b++ {
				delete(want, b)
			}
		}
		got := map[uint64]bool{}
		for _, p := range unfreed(writes, freed) {
			if len(p.data) == 0 || len(p.data)%BlockSize != 0 {
				t.Fatalf("round %d: piece at %d of %d bytes", round, p.phys, len(p.data))
			}
			for i := range uint64(len(p.data)) / BlockSize {
				b := p.phys + i
				if got[b] {
					t.Fatalf("round %d: block %d written twice", round, b)
				}
				got[b] = true
				if p.data[i*BlockSize] != byte(b) {
					t.Fatalf("round %d: block %d carries block %d's bytes", round, b, p.data[i*BlockSize])
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("round %d: writes %d blocks, want %d (freed %v)", round, len(got), len(want), freed)
		}
	}
}
