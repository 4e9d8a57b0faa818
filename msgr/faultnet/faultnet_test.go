package faultnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/shoal-project/shoal/msgr/memnet"
)

// pair connects host b to a listener on host a through f.
func pair(t *testing.T, f *Net) (client, server net.Conn) {
	t.Helper()
	n := memnet.New()
	l, err := f.Wrap(n.Host("a"), "a").Listen("a:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			s = nil
		}
		accepted <- s
	}()
	c, err := f.Wrap(n.Host("b"), "b").Dial(context.Background(), l.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TestPartitionHoldsInOrder: across a cut, writes return but nothing
// arrives; healed, everything arrives, in order.
func TestPartitionHoldsInOrder(t *testing.T) {
	f := New()
	c, s := pair(t, f)
	f.Partition("b", "a")
	for _, p := range []string{"one ", "two ", "three"} {
		if _, err := c.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	s.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := s.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read across a cut: %d bytes, %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := f.Wrap(memnet.New().Host("b"), "b").Dial(ctx, "a:1", ""); err == nil {
		t.Fatal("a dial across a cut succeeded")
	}
	f.Heal()
	s.SetReadDeadline(time.Time{})
	got := make([]byte, len("one two three"))
	if _, err := io.ReadFull(s, got); err != nil || string(got) != "one two three" {
		t.Fatalf("after healing: %q %v", got, err)
	}
}

// TestFullBufferWaitsForDeadline: a writer across a cut waits once the
// send buffer is full, and fails at its write deadline.
func TestFullBufferWaitsForDeadline(t *testing.T) {
	f := New()
	c, _ := pair(t, f)
	f.Partition("a", "b")
	if _, err := c.Write(bytes.Repeat([]byte("x"), sendBuffer)); err != nil {
		t.Fatal(err)
	}
	c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Write([]byte("y")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a write past a full buffer: %v, want the deadline", err)
	}
}

// TestResetClosesBothEnds: a reset link's connections fail at both ends,
// reading and writing.
func TestResetClosesBothEnds(t *testing.T) {
	f := New()
	c, s := pair(t, f)
	f.Reset("a", "b")
	if _, err := s.Read(make([]byte, 1)); err == nil {
		t.Fatal("read on a reset connection succeeded")
	}
	for _, end := range []net.Conn{c, s} {
		if _, err := end.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("a write on a reset connection: %v, want net.ErrClosed", err)
		}
	}
}
