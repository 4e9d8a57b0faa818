package msgr_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/msgr/faultnet"
	"github.com/shoal-project/shoal/msgr/memnet"
)

// TestMemnetRoundTrips: the messenger runs over the in-memory network as
// over TCP — authentication, multiplexed calls, a 4 MiB payload (read in
// pieces, checksummed) — and a client of another host is seen from it.
func TestMemnetRoundTrips(t *testing.T) {
	n := memnet.New()
	skr := keyring(t, "osd.0")
	srv, err := msgr.Listen("10.0.0.1:0", skr, echo, msgr.Config{Transport: n.Host("10.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := msgr.Dial(srv.Addr(), msgr.Keyring{Name: "client.admin", Key: skr.Key}, msgr.Config{Transport: n.Host("10.0.0.2")})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	big := bytes.Repeat([]byte("0123456789abcdef"), 256<<10)
	for _, p := range [][]byte{[]byte("hello"), big} {
		r, err := c.Call(ctx, 7, p)
		if err != nil {
			t.Fatal(err)
		}
		if want := append([]byte("client.admin:7:"), p...); !bytes.Equal(r.Payload, want) {
			t.Fatalf("reply of %d bytes differs", len(r.Payload))
		}
		r.Release()
	}
	// a wrong key is refused here as over TCP
	bad := msgr.Dial(srv.Addr(), keyring(t, "client.admin"), msgr.Config{Transport: n.Host("10.0.0.3")})
	defer bad.Close()
	if _, err := bad.Call(ctx, 7, nil); !errors.Is(err, msgr.ErrAuth) {
		t.Fatalf("a client with another key: %v, want ErrAuth", err)
	}
}

// TestFaultnetPartition: across a partitioned link a call times out and
// a new connection cannot be made; healed, calls go through again on
// the same client, and other links never stopped.
func TestFaultnetPartition(t *testing.T) {
	n, f := memnet.New(), faultnet.New()
	skr := keyring(t, "osd.0")
	ckr := msgr.Keyring{Name: "client.admin", Key: skr.Key}
	srv, err := msgr.Listen("10.0.0.1:0", skr, echo, msgr.Config{Transport: f.Wrap(n.Host("10.0.0.1"), "10.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cut := msgr.Dial(srv.Addr(), ckr, msgr.Config{Transport: f.Wrap(n.Host("10.0.0.2"), "10.0.0.2"), DialTimeout: 200 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	defer cut.Close()
	other := msgr.Dial(srv.Addr(), ckr, msgr.Config{Transport: f.Wrap(n.Host("10.0.0.3"), "10.0.0.3")})
	defer other.Close()
	call := func(c *msgr.Client, within time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		r, err := c.Call(ctx, 1, []byte("x"))
		if err == nil {
			r.Release()
		}
		return err
	}
	if err := call(cut, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	f.Partition("10.0.0.1", "10.0.0.2")
	if err := call(cut, 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call across a partition: %v, want the caller's deadline", err)
	}
	if err := call(other, 5*time.Second); err != nil {
		t.Fatalf("a call on another link during the partition: %v", err)
	}
	f.Reset("10.0.0.1", "10.0.0.2") // the connection is dropped; a new dial hangs at the cut
	if err := call(cut, 300*time.Millisecond); err == nil {
		t.Fatal("a call across a partition after a reset succeeded")
	}
	f.Heal()
	var err2 error
	for range 50 { // the client redials after its backoff
		if err2 = call(cut, 5*time.Second); err2 == nil {
			break
		}
	}
	if err2 != nil {
		t.Fatalf("after healing: %v", err2)
	}
}

// TestFaultnetDelay: a delayed link's calls take at least the delay each
// way; a reset drops the connection, and the next call reconnects.
func TestFaultnetDelay(t *testing.T) {
	n, f := memnet.New(), faultnet.New()
	skr := keyring(t, "osd.0")
	srv, err := msgr.Listen("10.0.0.1:0", skr, echo, msgr.Config{Transport: f.Wrap(n.Host("10.0.0.1"), "10.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := msgr.Dial(srv.Addr(), msgr.Keyring{Name: "client.admin", Key: skr.Key}, msgr.Config{Transport: f.Wrap(n.Host("10.0.0.2"), "10.0.0.2"), MaxBackoff: 50 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	f.Delay("10.0.0.2", "10.0.0.1", 30*time.Millisecond, 40*time.Millisecond)
	start := time.Now()
	if _, err := c.Call(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 60*time.Millisecond { // a write each way, 30 ms at least each
		t.Fatalf("a call on a link delayed 30-40 ms each way took %v", took)
	}
	f.Heal()
	f.Reset("10.0.0.1", "10.0.0.2")
	var err2 error
	for range 50 {
		if _, err2 = c.Call(ctx, 1, nil); err2 == nil {
			break
		}
		if !errors.Is(err2, msgr.ErrConnReset) {
			t.Fatalf("after a reset: %v, want ErrConnReset until it reconnects", err2)
		}
	}
	if err2 != nil {
		t.Fatal(err2)
	}
}
