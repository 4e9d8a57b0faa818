package bufpool

import (
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
