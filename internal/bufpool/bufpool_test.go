package bufpool

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestGetPut: buffers have the length asked for, a power-of-two capacity
// from 4 KiB, page alignment from 8 KiB, and come back from the pool.
func TestGetPut(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 4097, 8192, 100000, 4 << 20} {
		b := Get(n)
		if len(b) != n || cap(b) < 4096 || cap(b)&(cap(b)-1) != 0 {
			t.Fatalf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
		if cap(b) >= 8192 && uintptr(unsafe.Pointer(&b[:1][0]))%4096 != 0 {
			t.Fatalf("Get(%d): not page-aligned", n)
		}
		Put(b)
	}
	if b := Get(200 << 20); len(b) != 200<<20 {
		t.Fatal("a huge buffer")
	}
	Put(make([]byte, 5000)) // not from Get: ignored
}

// TestKeptAcrossGC: a large buffer put back is the next one of its class
// handed out, even after garbage collections (which empty sync.Pools);
// small ones are not kept; nor is more than KeepMax in all.
func TestKeptAcrossGC(t *testing.T) {
	b := Get(4 << 20)
	p := &b[:1][0]
	Put(b)
	runtime.GC()
	runtime.GC()
	if c := Get(4<<20 - 100); &c[:1][0] != p {
		t.Fatal("a 4 MiB buffer was not kept across garbage collections")
	} else {
		Put(c)
	}

	var held [][]byte
	for range KeepMax/(8<<20) + 2 {
		held = append(held, Get(8<<20))
	}
	for _, h := range held {
		Put(h)
	}
	kept.Lock()
	n, bytes := len(kept.bufs[class(8<<20)]), kept.bytes
	kept.Unlock()
	if bytes > KeepMax || n == 0 {
		t.Fatalf("kept %d buffers of 8 MiB, %d bytes in all (most %d)", n, bytes, KeepMax)
	}
	for range n {
		Get(8 << 20) // drain, for other tests
	}

	s := Get(64 << 10)
	Put(s)
	kept.Lock()
	small := len(kept.bufs[class(64<<10)])
	kept.Unlock()
	if small != 0 {
		t.Fatal("a 64 KiB buffer was kept")
	}
}
