package msgr_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/msgr"
)

func keyring(t testing.TB, name string) msgr.Keyring {
	t.Helper()
	k, err := msgr.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return msgr.Keyring{Name: name, Key: k}
}

func echo(ctx context.Context, m *msgr.Message) ([]byte, error) {
	return append([]byte(fmt.Sprintf("%s:%d:", m.From, m.Type)), m.Payload...), nil
}

func listen(t testing.TB, kr msgr.Keyring, h msgr.Handler, addr string) *msgr.Server {
	t.Helper()
	s, err := msgr.Listen(addr, kr, h, msgr.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// echoVec answers as echo, as a vectored reply whose parts alias the
// request's buffer (which the server must keep until they are written).
func echoVec(ctx context.Context, m *msgr.Message) ([]byte, error) {
	p := m.Payload
	m.ReplyVec([][]byte{[]byte(fmt.Sprintf("%s:%d:", m.From, m.Type)), p[:len(p)/3], p[len(p)/3 : len(p)/2], {}, p[len(p)/2:]})
	return nil, nil
}

// echoVecSums answers as echoVec, giving the checksums of the second and
// fourth parts (ReplyVecThen's sums: the frame's checksum is combined
// from them, not computed over those parts).
func echoVecSums(ctx context.Context, m *msgr.Message) ([]byte, error) {
	p := m.Payload
	parts := [][]byte{[]byte(fmt.Sprintf("%s:%d:", m.From, m.Type)), p[:len(p)/3], p[len(p)/3 : len(p)/2], {}, p[len(p)/2:]}
	m.ReplyVecThen(parts, []crc32c.Sum{{}, {CRC: crc32c.Checksum(parts[1]), Valid: true}, {}, {}, {CRC: crc32c.Checksum(parts[4]), Valid: true}}, nil)
	return nil, nil
}

// Vectored replies with checksums given for some parts arrive whole.
func TestVectoredRepliesWithSums(t *testing.T) { roundTrips(t, echoVecSums, false) }

// A part whose given checksum is not its bytes' (data that changed after
// its checksum was taken) fails the frame's check at the receiver: the
// call fails, its payload is never delivered.
func TestVectoredReplyWrongSum(t *testing.T) {
	skr := keyring(t, "osd.0")
	srv := listen(t, skr, func(ctx context.Context, m *msgr.Message) ([]byte, error) {
		data := bytes.Repeat([]byte("x"), 8192)
		sum := crc32c.Checksum(data)
		data[100] = 'y'
		m.ReplyVecThen([][]byte{[]byte("head"), data}, []crc32c.Sum{{}, {CRC: sum, Valid: true}}, nil)
		return nil, nil
	}, "127.0.0.1:0")
	c := msgr.Dial(srv.Addr(), msgr.Keyring{Name: "client.admin", Key: skr.Key}, msgr.Config{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Call(ctx, 1, []byte("read"))
	if err == nil {
		t.Fatalf("a reply with a wrong part checksum was delivered (%d bytes)", len(r.Payload))
	}
	// the connection is dropped (ErrConnReset, which callers retry),
	// saying why
	if !errors.Is(err, msgr.ErrConnReset) || !strings.Contains(err.Error(), "payload checksum") {
		t.Fatalf("a reply with a wrong part checksum: %v, want ErrConnReset for the payload checksum", err)
	}
}

// Many goroutines share one client; every reply matches its request.
func TestMultiplexedRoundTrips(t *testing.T) { roundTrips(t, echo, false) }

// The same with vectored replies (msgr.Message.ReplyVec): the peer gets the
// concatenation, checksummed, and no part is overwritten before it is sent.
// Requests too (msgr.Client.CallVec), with vectored replies.
func TestVectoredReplies(t *testing.T) { roundTrips(t, echoVec, true) }

func roundTrips(t *testing.T, h msgr.Handler, vecReq bool) {
	skr := keyring(t, "osd.0")
	srv := listen(t, skr, h, "127.0.0.1:0")
	c := msgr.Dial(srv.Addr(), msgr.Keyring{Name: "client.admin", Key: skr.Key}, msgr.Config{})
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 20; i++ {
				p := make([]byte, rng.Intn(300<<10))
				rng.Read(p)
				typ := uint16(rng.Intn(100))
				var r *msgr.Message
				var err error
				if vecReq {
					r, err = c.CallVec(context.Background(), typ, [][]byte{p[:len(p)/2], nil, p[len(p)/2:]})
				} else {
					r, err = c.Call(context.Background(), typ, p)
				}
				if err != nil {
					errs <- err
					return
				}
				want := append([]byte(fmt.Sprintf("client.admin:%d:", typ)), p...)
				if !bytes.Equal(r.Payload, want) || r.From != "osd.0" {
					errs <- fmt.Errorf("goroutine %d call %d: wrong reply (%d bytes from %s)", g, i, len(r.Payload), r.From)
					return
				}
				r.Release()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("4MiB"), 1<<20)
	r, err := c.Call(context.Background(), 1, big)
	if err != nil || !bytes.HasSuffix(r.Payload, big) {
		t.Fatalf("4 MiB round trip: %v", err)
	}
	r.Release()
}

// A peer without the cluster key is refused, in both directions, with a
// clear error; garbage instead of a handshake is dropped.
func TestAuthentication(t *testing.T) {
	skr := keyring(t, "mon.a")
	srv := listen(t, skr, echo, "127.0.0.1:0")
	intruder := msgr.Dial(srv.Addr(), keyring(t, "client.evil"), msgr.Config{})
	defer intruder.Close()
	if _, err := intruder.Call(context.Background(), 1, []byte("x")); !errors.Is(err, msgr.ErrAuth) {
		t.Fatalf("client with the wrong key: %v, want ErrAuth", err)
	}
	impostor := listen(t, keyring(t, "mon.fake"), echo, "127.0.0.1:0")
	victim := msgr.Dial(impostor.Addr(), msgr.Keyring{Name: "client.admin", Key: skr.Key}, msgr.Config{})
	defer victim.Close()
	if _, err := victim.Call(context.Background(), 1, []byte("secret")); !errors.Is(err, msgr.ErrAuth) {
		t.Fatalf("server with the wrong key: %v, want ErrAuth", err)
	}
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	// closed by the server: EOF, or a reset since our bytes went unread
	var ne net.Error
	if _, err := io.ReadAll(nc); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("garbage peer: connection left open: %v", err)
	}
}

// TestServerDiesMidHandshake: a server that hangs up during the handshake
// (killed) is a broken connection, which callers retry — not an
// authentication failure, which they report as a wrong key.
func TestServerDiesMidHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			nc.Read(make([]byte, 64)) // the client's hello, then gone
			nc.Close()
		}
	}()
	c := msgr.Dial(ln.Addr().String(), keyring(t, "client.admin"), msgr.Config{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, 1, []byte("x")); errors.Is(err, msgr.ErrAuth) || !errors.Is(err, msgr.ErrConnReset) {
		t.Fatalf("server gone mid-handshake: %v, want ErrConnReset, not ErrAuth", err)
	}
}

// TestPerEntityKeys: a server with a key lookup admits each entity with
// its own key (or its type's) and refuses unknown entities and wrong keys.
func TestPerEntityKeys(t *testing.T) {
	keys := map[string][]byte{"client.bob": keyring(t, "x").Key, "osd.": keyring(t, "x").Key}
	skr := keyring(t, "mon.a")
	skr.Lookup = msgr.KeyLookup(func(n string) ([]byte, bool) { k, ok := keys[n]; return k, ok })
	srv := listen(t, skr, echo, "127.0.0.1:0")
	for _, tc := range []struct {
		kr msgr.Keyring
		ok bool
	}{
		{msgr.Keyring{Name: "client.bob", Key: keys["client.bob"]}, true},
		{msgr.Keyring{Name: "osd.7", Key: keys["osd."]}, true},             // the type's key
		{msgr.Keyring{Name: "client.eve", Key: keys["client.bob"]}, false}, // unknown entity
		{msgr.Keyring{Name: "osd.7", Key: keys["client.bob"]}, false},      // wrong key
	} {
		c := msgr.Dial(srv.Addr(), tc.kr, msgr.Config{})
		rep, err := c.Call(context.Background(), 1, []byte("x"))
		c.Close()
		if tc.ok && err != nil {
			t.Fatalf("%s: %v", tc.kr.Name, err)
		}
		if !tc.ok && !errors.Is(err, msgr.ErrAuth) {
			t.Fatalf("%s: %v, want ErrAuth", tc.kr.Name, err)
		}
		rep.Release()
	}
}

func TestRemoteErrorAndDeadline(t *testing.T) {
	kr := keyring(t, "osd.1")
	release := make(chan struct{})
	srv := listen(t, kr, func(ctx context.Context, m *msgr.Message) ([]byte, error) {
		switch m.Type {
		case 1:
			return nil, &msgr.RemoteError{Code: 2, Msg: "no such object"}
		case 2:
			select {
			case <-release:
			case <-ctx.Done():
			}
			return []byte("late"), nil
		}
		return nil, errors.New("plain failure")
	}, "127.0.0.1:0")
	c := msgr.Dial(srv.Addr(), kr, msgr.Config{})
	defer c.Close()
	var re *msgr.RemoteError
	if _, err := c.Call(context.Background(), 1, nil); !errors.As(err, &re) || re.Code != 2 || re.Msg != "no such object" {
		t.Fatalf("remote error: %v", err)
	}
	if _, err := c.Call(context.Background(), 3, nil); !errors.As(err, &re) || re.Code != -1 || re.Msg != "plain failure" {
		t.Fatalf("plain error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := c.Call(ctx, 2, []byte("wait")); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	close(release)
	// the late reply is dropped; the connection keeps serving
	if r, err := c.Call(context.Background(), 2, nil); err != nil || string(r.Payload) != "late" {
		t.Fatalf("after a cancelled call: %v", err)
	}
}

// Requests beyond the in-flight byte budget wait until replies free it.
func TestBackpressure(t *testing.T) {
	kr := keyring(t, "osd.2")
	var received atomic.Int32
	arrived := make(chan struct{}, 8)
	gate := make(chan struct{})
	srv := listen(t, kr, func(ctx context.Context, m *msgr.Message) ([]byte, error) {
		received.Add(1)
		arrived <- struct{}{}
		<-gate
		return nil, nil
	}, "127.0.0.1:0")
	c := msgr.Dial(srv.Addr(), kr, msgr.Config{InflightBytes: 1000})
	defer c.Close()
	first := make(chan error)
	go func() { _, err := c.Call(context.Background(), 1, make([]byte, 600)); first <- err }()
	<-arrived
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, 1, make([]byte, 600)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second call over budget: %v, want it to wait", err)
	}
	if n := received.Load(); n != 1 {
		t.Fatalf("server received %d requests while the budget was spent", n)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), 1, make([]byte, 600)); err != nil {
		t.Fatalf("after the budget freed: %v", err)
	}
}

// A broken connection fails calls in flight with ErrConnReset; the next
// call reconnects (here to a restarted server on the same address).
func TestReconnect(t *testing.T) {
	kr := keyring(t, "osd.3")
	started := make(chan struct{}, 1)
	srv, err := msgr.Listen("127.0.0.1:0", kr, func(ctx context.Context, m *msgr.Message) ([]byte, error) {
		if m.Type == 9 {
			started <- struct{}{}
			<-ctx.Done()
		}
		return []byte("one"), nil
	}, msgr.Config{})
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr()
	c := msgr.Dial(addr, kr, msgr.Config{MaxBackoff: 100 * time.Millisecond})
	defer c.Close()
	inflight := make(chan error)
	go func() { _, err := c.Call(context.Background(), 9, nil); inflight <- err }()
	<-started
	srv.Close()
	if err := <-inflight; !errors.Is(err, msgr.ErrConnReset) {
		t.Fatalf("call in flight when the server closed: %v, want ErrConnReset", err)
	}
	srv2 := listen(t, kr, func(ctx context.Context, m *msgr.Message) ([]byte, error) { return []byte("two"), nil }, addr)
	_ = srv2
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r, err := c.Call(ctx, 1, nil)
		if err == nil {
			if string(r.Payload) != "two" {
				t.Fatalf("reply %q from the restarted server", r.Payload)
			}
			return
		}
		if !errors.Is(err, msgr.ErrConnReset) {
			t.Fatalf("reconnect: %v", err)
		}
	}
}

func TestKeyringFile(t *testing.T) {
	k, _ := msgr.NewKey()
	path := t.TempDir() + "/keyring"
	caps := map[string]string{"mon": `allow r, allow command "osd blocklist add"`, "osd": "allow r; allow rw pool=a # not a comment"}
	if err := msgr.WriteKeyring(path, map[string]msgr.KeyringEntry{"client.admin": {Key: k}, "osd.0": {Key: k}, "client.x": {Key: k, Caps: caps}}); err != nil {
		t.Fatal(err)
	}
	all, err := msgr.ReadKeyring(path)
	if err != nil || len(all) != 3 || !bytes.Equal(all["client.x"].Key, k) || !reflect.DeepEqual(all["client.x"].Caps, caps) || all["osd.0"].Caps != nil {
		t.Fatalf("read back %+v, %v", all, err)
	}
	kr, err := msgr.LoadKeyring(path, "osd.0")
	if err != nil || !bytes.Equal(kr.Key, k) || kr.Name != "osd.0" {
		t.Fatalf("load: %v", err)
	}
	if _, err := msgr.LoadKeyring(path, "osd.9"); err == nil {
		t.Fatal("missing entity accepted")
	}
}

// A call to a port nobody listens on fails with ErrConnReset wrapping
// ECONNREFUSED (what OSDs' fast failure reports branch on), also while
// the client backs off before dialling again.
func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := msgr.Dial(addr, keyring(t, "client.admin"), msgr.Config{MaxBackoff: time.Second})
	defer c.Close()
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := c.Call(ctx, 1, nil)
		cancel()
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("call %d to a closed port: %v, want ECONNREFUSED", i, err)
		}
	}
}
