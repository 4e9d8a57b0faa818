package msgr

import (
	"bufio"
	"bytes"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// queued is how many bytes wait unread in c's receive queue (SIOCINQ).
func queued(t *testing.T, c net.Conn) int {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil || ierr != nil {
		t.Fatal(err, ierr)
	}
	return n
}

// TestSockReaderTail: a large frame whose sender pauses until the reader
// has taken every byte sent, then sends its last bytes (fewer than
// lowatMin, or between lowatMin and lowatMax), is read whole: the
// reader's low-water mark never asks for more than the frame still has
// to deliver (a mark above it would leave the reader asleep until the
// read deadline). Headers and small frames before and after it are read
// as usual, so the mark is back to one byte after a large frame.
func TestSockReaderTail(t *testing.T) {
	for _, tail := range []int{1, 10_000, 200 << 10, lowatMax + 12345} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		snd, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer snd.Close()
		rcv, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer rcv.Close()
		rcv.SetReadDeadline(time.Now().Add(20 * time.Second))

		payload := make([]byte, 3<<20+100)
		for i := range payload {
			payload[i] = byte(i * 13)
		}
		out := cipherAt(ModeCRC, 0)
		small := encodeFrameMode(out, header{typ: 1, reqID: 1}, []byte("before"))
		large := encodeFrameMode(out, header{typ: 2, reqID: 2}, payload)
		after := encodeFrameMode(out, header{typ: 3, reqID: 3}, []byte("after"))
		type read struct {
			typ uint16
			p   []byte
			err error
		}
		got := make(chan read, 3)
		go func() {
			br, hdr, sr, rin := bufio.NewReaderSize(rcv, 64<<10), make([]byte, headerLen), newSockReader(rcv), in()
			for range 3 {
				h, p, _, err := readFrame(br, hdr, false, sr, rin)
				got <- read{h.typ, p, err}
				if err != nil {
					return
				}
			}
		}()
		if _, err := snd.Write(small); err != nil {
			t.Fatal(err)
		}
		if r := <-got; r.err != nil || r.typ != 1 || string(r.p) != "before" {
			t.Fatalf("tail %d: first frame: %d %q %v", tail, r.typ, r.p, r.err)
		}
		cut := len(large) - tail
		if _, err := snd.Write(large[:cut]); err != nil {
			t.Fatal(err)
		}
		for queued(t, rcv) > 0 { // until the reader has taken all of it and waits for the rest
			runtime.Gosched()
		}
		if _, err := snd.Write(large[cut:]); err != nil {
			t.Fatal(err)
		}
		if r := <-got; r.err != nil || r.typ != 2 || !bytes.Equal(r.p, payload) {
			t.Fatalf("tail %d: large frame: type %d, %d bytes, %v", tail, r.typ, len(r.p), r.err)
		}
		if _, err := snd.Write(after); err != nil {
			t.Fatal(err)
		}
		if r := <-got; r.err != nil || r.typ != 3 || string(r.p) != "after" {
			t.Fatalf("tail %d: the frame after: %d %q %v", tail, r.typ, r.p, r.err)
		}
	}
}
