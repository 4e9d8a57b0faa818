package memnet

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
)

// TestListenDial: a port is picked, a dial reaches the listener with
// both ends' addresses, bytes flow both ways, Close is EOF at the other
// end; no listener, a taken address or a closed listener are refused.
func TestListenDial(t *testing.T) {
	n := New()
	a, b := n.Host("a"), n.Host("b")
	l, err := a.Listen("a:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Listen(l.Addr().String()); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("listening twice on %s: %v", l.Addr(), err)
	}
	ctx := context.Background()
	accepted := make(chan error, 1)
	go func() {
		s, err := l.Accept()
		if err == nil {
			if s.RemoteAddr().(Addr).Host != "b" || s.LocalAddr().String() != l.Addr().String() {
				err = errors.New("accepted with addresses " + s.LocalAddr().String() + " <- " + s.RemoteAddr().String())
			} else {
				_, err = io.Copy(s, s) // echo until EOF
				s.Close()
			}
		}
		accepted <- err
	}()
	c, err := b.Dial(ctx, l.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo: %q %v", buf, err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if _, err := b.Dial(ctx, "a:1", ""); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial with no listener: %v", err)
	}
	l.Close()
	if _, err := b.Dial(ctx, l.Addr().String(), ""); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial after close: %v", err)
	}
	if _, err := l.Accept(); err == nil {
		t.Fatal("accept after close")
	}
}

// TestPortsWrap: picked ports stay in range and skip those in use once
// the counter wraps; a dial finds a listener however its port is written.
func TestPortsWrap(t *testing.T) {
	n := New()
	h := n.Host("a")
	keep, err := h.Listen("a:10000")
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	n.nextPort, n.nextLocal = 65535, 65535
	for _, want := range []int{65535, 10001} { // 10000 is taken
		l, err := h.Listen("a:0")
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Addr().(Addr).Port; got != want {
			t.Fatalf("picked port %d, want %d", got, want)
		}
		defer l.Close()
	}
	go func() {
		if s, err := keep.Accept(); err == nil {
			s.Close()
		}
	}()
	c, err := n.Host("b").Dial(context.Background(), "a:010000", "")
	if err != nil {
		t.Fatalf("a dial to the listener's port written with a leading zero: %v", err)
	}
	defer c.Close()
	if p := c.LocalAddr().(Addr).Port; p < firstPort || p > 65535 {
		t.Fatalf("a dial's local port %d is out of range", p)
	}
}
