package msgr_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/msgr/faultnet"
	"github.com/shoal-project/shoal/msgr/memnet"
)

// streamPair authenticates a byte stream from 10.0.0.2 (the client, mode
// cliMode) to 10.0.0.1 (srvMode) over memnet through faultnet, and
// returns both ends and the peers' names.
func streamPair(t *testing.T, srvMode, cliMode msgr.Mode) (f *faultnet.Net, cli, srv net.Conn) {
	t.Helper()
	n := memnet.New()
	f = faultnet.New()
	kr := keyring(t, "mon.a")
	ln, err := f.Wrap(n.Host("10.0.0.1"), "10.0.0.1").Listen("10.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	type accepted struct {
		c   net.Conn
		who string
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			ch <- accepted{err: err}
			return
		}
		c, who, err := msgr.Authenticate(nc, kr, true, srvMode, 5*time.Second)
		ch <- accepted{c, who, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := f.Wrap(n.Host("10.0.0.2"), "10.0.0.2").Dial(ctx, "10.0.0.1:1", "")
	if err != nil {
		t.Fatal(err)
	}
	cli, who, err := msgr.Authenticate(nc, msgr.Keyring{Name: "mon.b", Key: kr.Key}, false, cliMode, 5*time.Second)
	if err != nil || who != "mon.a" {
		t.Fatalf("client: %q %v", who, err)
	}
	a := <-ch
	if a.err != nil || a.who != "mon.b" {
		t.Fatalf("server: %q %v", a.who, a.err)
	}
	t.Cleanup(func() { cli.Close(); a.c.Close() })
	return f, cli, a.c
}

// An authenticated stream carries bytes both ways in records (a write
// larger than a record is split); secure, asked by either end, never
// shows them on the wire; crc mode does, but tagged.
func TestAuthenticatedStream(t *testing.T) {
	for _, modes := range [][2]msgr.Mode{{msgr.ModeCRC, msgr.ModeCRC}, {msgr.ModeSecure, msgr.ModeCRC}, {msgr.ModeCRC, msgr.ModeSecure}} {
		f, cli, srv := streamPair(t, modes[0], modes[1])
		var seen atomic.Bool
		f.Tamper("10.0.0.2", "10.0.0.1", func(b []byte) []byte {
			if bytes.Contains(b, marker) {
				seen.Store(true)
			}
			return b
		})
		big := payloadWith(3 << 20) // three records and more
		go func() { cli.Write(big); cli.Write([]byte("tail")) }()
		got := make([]byte, len(big)+4)
		if _, err := io.ReadFull(srv, got); err != nil {
			t.Fatalf("%v: %v", modes, err)
		}
		if !bytes.Equal(got[:len(big)], big) || string(got[len(big):]) != "tail" {
			t.Fatalf("%v: the stream changed the bytes", modes)
		}
		go srv.Write([]byte("reply"))
		r := make([]byte, 5)
		if _, err := io.ReadFull(cli, r); err != nil || string(r) != "reply" {
			t.Fatalf("%v: reply %q %v", modes, r, err)
		}
		secure := modes[0] == msgr.ModeSecure || modes[1] == msgr.ModeSecure
		if seen.Load() == secure {
			t.Fatalf("%v: bytes in the clear on the wire: %v", modes, seen.Load())
		}
	}
}

// A record altered on the wire, in either mode, is refused (ErrProtocol)
// and the stream gives nothing more.
func TestAuthenticatedStreamTampering(t *testing.T) {
	for _, mode := range []msgr.Mode{msgr.ModeCRC, msgr.ModeSecure} {
		f, cli, srv := streamPair(t, mode, mode)
		var tampered atomic.Bool
		f.Tamper("10.0.0.2", "10.0.0.1", func(b []byte) []byte {
			if len(b) > 1000 && !tampered.Load() {
				tampered.Store(true)
				b[500] ^= 1
			}
			return b
		})
		go func() { cli.Write(payloadWith(2000)); cli.Write([]byte("after")) }()
		buf := make([]byte, 4096)
		_, err := io.ReadFull(srv, buf[:2000])
		if !errors.Is(err, msgr.ErrProtocol) || !tampered.Load() {
			t.Fatalf("%v: altered record read: %v (tampered %v)", mode, err, tampered.Load())
		}
		if n, err := srv.Read(buf); n != 0 || !errors.Is(err, msgr.ErrProtocol) {
			t.Fatalf("%v: after the altered record: %d bytes, %v", mode, n, err)
		}
	}
}
