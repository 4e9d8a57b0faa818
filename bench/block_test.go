package bench

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// memDevice is a Device in memory that counts what it was asked.
type memDevice struct {
	mu            sync.Mutex
	data          []byte
	reads, writes int
	offsets       map[uint64]int
}

func (d *memDevice) Size() uint64 { return uint64(len(d.data)) }
func (d *memDevice) ReadAt(_ context.Context, p []byte, off uint64) error {
	return d.io(p, off, false)
}
func (d *memDevice) WriteAt(_ context.Context, p []byte, off uint64) error {
	return d.io(p, off, true)
}
func (d *memDevice) io(p []byte, off uint64, write bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off+uint64(len(p)) > uint64(len(d.data)) {
		return fmt.Errorf("I/O of %d at %d past the end", len(p), off)
	}
	if write {
		d.writes++
		copy(d.data[off:], p)
	} else {
		d.reads++
		copy(p, d.data[off:])
	}
	d.offsets[off]++
	return nil
}

// TestRunBlock: the loop moves exactly --io-total bytes in --io-size
// I/Os within the device, a sequential run touches every position in
// turn, the read mix is honoured at its ends, and rbd bench's header
// and summary are printed.
func TestRunBlock(t *testing.T) {
	for _, c := range []struct {
		typ, pattern string
		mix          int
	}{
		{"write", "seq", 0}, {"read", "rand", 0}, {"readwrite", "rand", 100}, {"readwrite", "rand", 0},
	} {
		d := &memDevice{data: make([]byte, 64<<10), offsets: map[uint64]int{}}
		var out bytes.Buffer
		r, err := RunBlock(context.Background(), d, BlockOptions{IOType: c.typ, IOSize: 4096, Threads: 4, Total: 256 << 10, Pattern: c.pattern, RWMixRead: c.mix}, &out)
		if err != nil {
			t.Fatalf("%s %s: %v", c.typ, c.pattern, err)
		}
		if r.Ops != 64 || d.reads+d.writes != 64 || r.Bytes != 256<<10 {
			t.Fatalf("%s %s: %d ops (%d reads, %d writes), %d bytes; want 64 I/Os of 4 KiB", c.typ, c.pattern, r.Ops, d.reads, d.writes, r.Bytes)
		}
		wantReads := map[string]int{"write": 0, "read": 64}[c.typ]
		if c.typ == "readwrite" {
			wantReads = 64 * c.mix / 100
		}
		if d.reads != wantReads || int(r.ReadOps) != wantReads {
			t.Fatalf("%s mix %d: %d reads, want %d", c.typ, c.mix, d.reads, wantReads)
		}
		if c.pattern == "seq" { // 16 positions, each 4 times
			for off := uint64(0); off < 64<<10; off += 4096 {
				if d.offsets[off] != 4 {
					t.Fatalf("seq: offset %d done %d times, want 4", off, d.offsets[off])
				}
			}
		}
		if !strings.HasPrefix(out.String(), fmt.Sprintf("bench  type %s io_size 4096 io_threads 4 bytes 262144 pattern ", c.typ)) || !strings.Contains(out.String(), "elapsed: ") {
			t.Fatalf("output:\n%s", out.String())
		}
	}
	d := &memDevice{data: make([]byte, 4096), offsets: map[uint64]int{}}
	for _, o := range []BlockOptions{{IOType: "copy"}, {IOType: "read", Pattern: "zigzag"}, {IOType: "read", IOSize: 8192}, {IOType: "readwrite", RWMixRead: 101}} {
		if _, err := RunBlock(context.Background(), d, o, &bytes.Buffer{}); err == nil {
			t.Fatalf("%+v accepted", o)
		}
	}
}
