// Package faultnet is the messenger's faulty transport: it wraps another
// msgr.Transport (msgr/memnet in-process, or TCP) and injects faults per
// link — a link being the pair of hosts at its two ends, either way —
// under the test's control. A host is an address's host part: the name a
// dialing process was wrapped with (Wrap) or its dial's source, and on the
// accepting side the connection's addresses, so over TCP hosts must be
// named by their IP addresses.
//
//   - Partition: the link silently drops traffic, as a failed switch
//     port does: dials across it hang until their deadline, and what is
//     written on open connections is held (writers go on until a
//     socket-sized send buffer fills, then wait up to their write
//     deadline) and delivered in order once the link heals, as TCP's
//     retransmissions would deliver it.
//   - Reset: every open connection on the link is closed at once (a
//     dropped connection; both ends see it fail); new dials succeed.
//   - Tamper: what is written on the link passes through the test's
//     function first, as through an attacker on the path who rewrites,
//     drops or repeats bytes.
//   - Delay: what is written on the link arrives a duration drawn
//     uniformly from [min, max] later (writes return at once). Within a
//     connection bytes stay in order (the messenger needs a stream);
//     jitter reorders messages sent on different connections, which is
//     the reordering a real network shows the messenger.
//
// Heal removes every partition, delay and tampering. A Net is safe for concurrent
// use; the faults apply to connections made before and after they are
// set.
package faultnet

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"

	"github.com/shoal-project/shoal/msgr"
)

// Net holds the faults of a set of hosts' links.
type Net struct {
	mu      sync.Mutex
	cut     map[link]bool
	delay   map[link][2]time.Duration
	tamper  map[link]func([]byte) []byte
	conns   map[*conn]struct{}
	changed chan struct{} // closed (and replaced) when a fault is removed
}

// link is a pair of hosts, the smaller first.
type link struct{ a, b string }

func linkOf(a, b string) link {
	if b < a {
		a, b = b, a
	}
	return link{a, b}
}

// New returns a Net with no faults.
func New() *Net {
	return &Net{cut: map[link]bool{}, delay: map[link][2]time.Duration{}, tamper: map[link]func([]byte) []byte{}, conns: map[*conn]struct{}{}, changed: make(chan struct{})}
}

// Wrap returns inner with this Net's faults, for a process on host (the
// host its dials come from unless they name a source).
func (f *Net) Wrap(inner msgr.Transport, host string) msgr.Transport {
	return &transport{f: f, inner: inner, host: host}
}

// Partition cuts the links between a and each of others (both ways).
func (f *Net) Partition(a string, others ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range others {
		f.cut[linkOf(a, o)] = true
	}
}

// Delay makes every write on the link between a and b wait between min
// and max (uniformly drawn per write).
func (f *Net) Delay(a, b string, min, max time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay[linkOf(a, b)] = [2]time.Duration{min, max}
}

// Tamper passes every write on the link between a and b (either way)
// through fn, which gets the written bytes (its own copy) and returns
// what goes on the wire in their place.
func (f *Net) Tamper(a, b string, fn func(p []byte) []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tamper[linkOf(a, b)] = fn
}

// Reset closes every open connection between a and b.
func (f *Net) Reset(a, b string) {
	l := linkOf(a, b)
	f.mu.Lock()
	var drop []*conn
	for c := range f.conns {
		if c.link == l {
			drop = append(drop, c)
		}
	}
	f.mu.Unlock()
	for _, c := range drop {
		c.Close()
	}
}

// Heal removes every partition and delay; stalled writes and dials go on.
func (f *Net) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.cut)
	clear(f.delay)
	clear(f.tamper)
	close(f.changed)
	f.changed = make(chan struct{})
}

// state is the link's faults now, and a channel closed when they are
// next removed.
func (f *Net) state(l link) (cut bool, delay time.Duration, changed chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.delay[l]; ok {
		delay = d[0]
		if d[1] > d[0] {
			delay += rand.N(d[1] - d[0])
		}
	}
	return f.cut[l], delay, f.changed
}

type transport struct {
	f     *Net
	inner msgr.Transport
	host  string
}

// Dial waits while the link to addr's host is cut (until ctx ends), then
// dials through the inner transport.
func (t *transport) Dial(ctx context.Context, addr, source string) (net.Conn, error) {
	if source == "" {
		source = t.host
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	l := linkOf(source, host)
	for {
		cut, _, changed := t.f.state(l)
		if !cut {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, &net.OpError{Op: "dial", Net: "faultnet", Addr: addrOf(addr), Err: ctx.Err()}
		}
	}
	nc, err := t.inner.Dial(ctx, addr, source)
	if err != nil {
		return nil, err
	}
	return t.f.track(nc, l), nil
}

// Listen listens through the inner transport; accepted connections carry
// the link's faults.
func (t *transport) Listen(addr string) (net.Listener, error) {
	ln, err := t.inner.Listen(addr)
	if err != nil {
		return nil, err
	}
	return &listener{Listener: ln, f: t.f}, nil
}

type listener struct {
	net.Listener
	f *Net
}

func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.f.track(nc, linkOf(host(nc.LocalAddr()), host(nc.RemoteAddr()))), nil
}

func host(a net.Addr) string {
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return h
}

func (f *Net) track(nc net.Conn, l link) *conn {
	c := &conn{Conn: nc, f: f, link: l, data: make(chan struct{}, 1), space: make(chan struct{}, 1), closed: make(chan struct{})}
	f.mu.Lock()
	f.conns[c] = struct{}{}
	f.mu.Unlock()
	go c.pump() // owned by c: ends when it closes
	return c
}

// sendBuffer is how many bytes a connection queues before its writer
// waits, as a socket's send buffer: a write across a cut or slow link
// returns at once while the buffer has room.
const sendBuffer = 4 << 20

// conn is a connection on a link. Its writes are queued and delivered by
// pump once the link lets them through (after the link's delay, and not
// while it is cut), in order; a writer waits only while sendBuffer bytes
// are queued, up to its write deadline.
type conn struct {
	net.Conn
	f    *Net
	link link

	mu       sync.Mutex
	queue    []chunk
	queued   int
	deadline time.Time // the write deadline
	err      error     // the delivery's failure: every later write fails with it
	data     chan struct{}
	space    chan struct{}
	once     sync.Once
	closed   chan struct{}
}

type chunk struct {
	b  []byte
	n  int       // the bytes the writer wrote (b may differ: Tamper)
	at time.Time // when the link's delay lets it through
}

func (c *conn) Write(p []byte) (int, error) {
	for {
		c.mu.Lock()
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return 0, err
		}
		if c.queued == 0 || c.queued+len(p) <= sendBuffer {
			_, delay, _ := c.f.state(c.link)
			b := append([]byte(nil), p...)
			c.f.mu.Lock()
			fn := c.f.tamper[c.link]
			c.f.mu.Unlock()
			if fn != nil {
				b = fn(b)
			}
			c.queue = append(c.queue, chunk{b: b, n: len(p), at: time.Now().Add(delay)})
			c.queued += len(p)
			c.mu.Unlock()
			signal(c.data)
			return len(p), nil
		}
		deadline := c.deadline
		c.mu.Unlock()
		if err := c.wait(c.space, deadline); err != nil {
			return 0, err
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wait waits for ch, failing at deadline (zero: none) or when the
// connection closes.
func (c *conn) wait(ch <-chan struct{}, deadline time.Time) error {
	var expire <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-ch:
		return nil
	case <-expire:
		return &net.OpError{Op: "write", Net: "faultnet", Err: os.ErrDeadlineExceeded}
	case <-c.closed:
		return net.ErrClosed
	}
}

// pump delivers the queue in order: each chunk once its delay has passed
// and while the link is not cut.
func (c *conn) pump() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.mu.Unlock()
			if c.wait(c.data, time.Time{}) != nil {
				return
			}
			continue
		}
		ch := c.queue[0]
		c.mu.Unlock()
		if d := time.Until(ch.at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.closed:
				t.Stop()
				return
			}
		}
		for {
			cut, _, changed := c.f.state(c.link)
			if !cut {
				break
			}
			if c.wait(changed, time.Time{}) != nil {
				return
			}
		}
		_, err := c.Conn.Write(ch.b)
		c.mu.Lock()
		c.queue[0] = chunk{} // the sent bytes are not kept by the queue's array
		c.queue = c.queue[1:]
		c.queued -= ch.n
		if err != nil && c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
		signal(c.space)
		if err != nil {
			c.Close()
			return
		}
	}
}

// SetDeadline sets the read deadline on the connection underneath and
// the write deadline here (a writer waits only for buffer space).
func (c *conn) SetDeadline(t time.Time) error {
	c.SetWriteDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline bounds how long a write waits for buffer space.
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return nil
}

// Close closes the connection at once; what is still queued is lost (a
// crash, not a graceful shutdown).
func (c *conn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		if c.err == nil {
			c.err = net.ErrClosed // later writes fail, not queue
		}
		c.mu.Unlock()
		close(c.closed)
		c.f.mu.Lock()
		delete(c.f.conns, c)
		c.f.mu.Unlock()
	})
	return c.Conn.Close()
}

// addrOf is addr as a net.Addr, for errors.
type addrOf string

func (a addrOf) Network() string { return "faultnet" }
func (a addrOf) String() string  { return string(a) }
