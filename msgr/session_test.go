package msgr_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/msgr/faultnet"
	"github.com/shoal-project/shoal/msgr/memnet"
)

// sessionPair is a server on host 10.0.0.1 (mode srvMode, handler h) and a
// client on 10.0.0.2 (mode cliMode) over memnet, through faultnet.
func sessionPair(t *testing.T, srvMode, cliMode msgr.Mode, ttl time.Duration, h msgr.Handler) (*faultnet.Net, *msgr.Client) {
	t.Helper()
	n, f := memnet.New(), faultnet.New()
	skr := keyring(t, "osd.0")
	srv, err := msgr.Listen("10.0.0.1:0", skr, h, msgr.Config{Transport: f.Wrap(n.Host("10.0.0.1"), "10.0.0.1"), Mode: srvMode, SessionTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := msgr.Dial(srv.Addr(), msgr.Keyring{Name: "client.admin", Key: skr.Key},
		msgr.Config{Transport: f.Wrap(n.Host("10.0.0.2"), "10.0.0.2"), Mode: cliMode, SessionTTL: ttl, MaxBackoff: 100 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return f, c
}

var marker = []byte("MARKER-0123456789-PAYLOAD")

// payloadWith is a payload of n bytes holding marker at offset 100.
func payloadWith(n int) []byte {
	p := bytes.Repeat([]byte{'.'}, n)
	copy(p[100:], marker)
	return p
}

// Every mode pair works, small and large payloads, plain and vectored
// replies; secure, asked by either end, never shows a payload on the wire.
func TestSessionModes(t *testing.T) {
	for _, tc := range []struct{ srv, cli msgr.Mode }{{msgr.ModeCRC, msgr.ModeCRC}, {msgr.ModeSecure, msgr.ModeCRC}, {msgr.ModeCRC, msgr.ModeSecure}, {msgr.ModeSecure, msgr.ModeSecure}} {
		for _, h := range []msgr.Handler{echo, echoVec} {
			f, c := sessionPair(t, tc.srv, tc.cli, 0, h)
			var seen atomic.Bool
			f.Tamper("10.0.0.1", "10.0.0.2", func(p []byte) []byte {
				if bytes.Contains(p, marker) {
					seen.Store(true)
				}
				return p
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			for _, n := range []int{200, 4 << 20} {
				p := payloadWith(n)
				r, err := c.Call(ctx, 7, p)
				if err != nil {
					t.Fatalf("%v/%v: call: %v", tc.srv, tc.cli, err)
				}
				if want := append([]byte("client.admin:7:"), p...); !bytes.Equal(r.Payload, want) {
					t.Fatalf("%v/%v: reply of %d bytes differs", tc.srv, tc.cli, len(r.Payload))
				}
				r.Release()
			}
			cancel()
			if secure := tc.srv == msgr.ModeSecure || tc.cli == msgr.ModeSecure; seen.Load() == secure {
				t.Fatalf("server %v, client %v: payload seen on the wire: %v", tc.srv, tc.cli, seen.Load())
			}
		}
	}
}

// An attacker on the path who changes a payload and fixes its crc32c —
// all a checksum ever stopped — is caught in crc mode by the frame's tag;
// in secure mode a changed ciphertext byte is caught; a repeated frame is
// caught in both. The handler never sees the altered request, and the
// client's next call, on a new connection, goes through.
func TestSessionTampering(t *testing.T) {
	for _, mode := range []msgr.Mode{msgr.ModeCRC, msgr.ModeSecure} {
		for _, attack := range []string{"alter", "replay"} {
			var mu sync.Mutex
			var got [][]byte
			f, c := sessionPair(t, mode, mode, 0, func(ctx context.Context, m *msgr.Message) ([]byte, error) {
				mu.Lock()
				got = append(got, append([]byte(nil), m.Payload...))
				mu.Unlock()
				return []byte("ok"), nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if r, err := c.Call(ctx, 7, []byte("first")); err != nil { // the session is up
				t.Fatal(err)
			} else {
				r.Release()
			}
			p := payloadWith(1000)
			var fixCRC atomic.Int64 // crc mode: the crc to write over the next trailer, +1
			var lastFrame []byte    // replay: the last request frame (header, payload, trailer)
			capturing := false
			var tampered atomic.Bool
			f.Tamper("10.0.0.1", "10.0.0.2", func(b []byte) []byte {
				header := len(b) == 32 && bytes.HasPrefix(b, []byte("SHM1"))
				switch {
				case attack == "replay" && header && b[5]&1 == 0 && binary.LittleEndian.Uint16(b[6:]) == 7 && lastFrame != nil && !tampered.Load():
					tampered.Store(true)
					return append(append([]byte(nil), lastFrame...), b...) // the last request again, then this one
				case attack == "replay" && header:
					capturing = b[5]&1 == 0 // a request's frame, not a reply's
					if capturing {
						lastFrame = append(lastFrame[:0], b...)
					}
				case attack == "replay":
					if capturing {
						lastFrame = append(lastFrame, b...)
					}
				case mode == msgr.ModeCRC && bytes.Contains(b, marker) && !tampered.Load():
					tampered.Store(true)
					b[bytes.Index(b, marker)] = 'X'
					fixCRC.Store(int64(crc32c.Checksum(b)) + 1)
				case mode == msgr.ModeCRC && fixCRC.Load() != 0 && len(b) == 4+16:
					binary.LittleEndian.PutUint32(b, uint32(fixCRC.Load()-1))
					fixCRC.Store(0)
				case mode == msgr.ModeSecure && len(b) > 1000 && !tampered.Load():
					tampered.Store(true)
					b[500] ^= 1
				}
				return b
			})
			if attack == "replay" {
				// a frame to repeat, then the one it is slipped in before
				if r, err := c.Call(ctx, 8, []byte("once")); err != nil {
					t.Fatal(err)
				} else {
					r.Release()
				}
			}
			_, err := c.Call(ctx, 7, p)
			if !tampered.Load() {
				t.Fatalf("%v %s: the attack never happened", mode, attack)
			}
			if !errors.Is(err, msgr.ErrConnReset) {
				t.Fatalf("%v %s: call through the attacker: %v, want ErrConnReset", mode, attack, err)
			}
			f.Tamper("10.0.0.1", "10.0.0.2", nil)
			if r, err := c.Call(ctx, 7, []byte("after")); err != nil {
				t.Fatalf("%v %s: next call: %v", mode, attack, err)
			} else {
				r.Release()
			}
			cancel()
			mu.Lock()
			for _, g := range got {
				if bytes.Contains(g, []byte("MARKER")) && !bytes.Equal(g, p) || bytes.Contains(g, []byte("XARKER")) {
					t.Fatalf("%v %s: the handler saw an altered request", mode, attack)
				}
			}
			if n := bytes.Count(bytes.Join(got, []byte{0}), []byte("once")); n > 1 {
				t.Fatalf("%v %s: a replayed request ran %d times", mode, attack, n)
			}
			mu.Unlock()
		}
	}
}

// Sessions past their TTL are replaced without failing a call: new
// requests go on a new connection (new keys), the old one closes once
// its replies are in.
func TestSessionTTL(t *testing.T) {
	var dials atomic.Int32
	f, c := sessionPair(t, msgr.ModeCRC, msgr.ModeCRC, 50*time.Millisecond, func(ctx context.Context, m *msgr.Message) ([]byte, error) {
		time.Sleep(time.Duration(len(m.Payload)) * time.Millisecond) // some calls span a rotation
		return append([]byte(nil), m.Payload...), nil
	})
	f.Tamper("10.0.0.1", "10.0.0.2", func(b []byte) []byte {
		if bytes.Contains(b, []byte("SHOAL-HELLO")) {
			dials.Add(1)
		}
		return b
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				p := bytes.Repeat([]byte{byte(g)}, 1+(i+g)%20)
				r, err := c.Call(ctx, 7, p)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(r.Payload, p) {
					errs <- errors.New("wrong reply")
				}
				r.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a call across session rotations: %v", err)
	}
	if n := dials.Load(); n < 3 {
		t.Fatalf("%d handshakes in a run of many TTLs, want the session rotated", n)
	}
}
