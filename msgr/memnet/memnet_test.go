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
