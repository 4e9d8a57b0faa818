package msgr

import (
	"context"
	"errors"
	"fmt"

	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/internal/bufpool"
	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/internal/sem"
)

// Config tunes a Client or Server; zero values mean the defaults.
type Config struct {
	// InflightBytes bounds the request bytes a Client has sent and not
	// yet had answered (Ceph's objecter_inflight_op_bytes); a Call that
	// would exceed it waits. Default 100 MiB.
	InflightBytes int64
	// DialTimeout bounds connecting and authenticating. Default 5 s.
	DialTimeout time.Duration
	// MaxBackoff caps the wait between reconnection attempts, which
	// doubles from 50 ms. Default 5 s.
	MaxBackoff time.Duration
	// WriteTimeout bounds one vectored write. Default 30 s.
	WriteTimeout time.Duration
	// SourceIP, when set, is the local address connections are made from:
	// an OSD dials its peers from the address it listens on, so that its
	// traffic to them leaves on that network (as Ceph's messenger binds
	// the cluster address). Empty: the system's choice.
	SourceIP string
	// Epoch, when set, gives the OSD map epoch stamped on outgoing frames.
	Epoch  func() uint32
	Logger *slog.Logger
	// Transport makes the connections; nil is TCP.
	Transport Transport
	// Mode is the frame protection this end asks for (ms_mode); a
	// session is secure if either end asks (Mode).
	Mode Mode
	// SessionTTL bounds a session key's life (ms_session_ttl, as cephx's
	// ticket TTL): a Client sends no new request on a connection older
	// than this but dials a new one (new nonces, new keys) and closes the
	// old once its replies are in; a Server closes connections older than
	// twice this. 0: no limit.
	SessionTTL time.Duration
}

func (c Config) withDefaults() Config {
	if c.InflightBytes == 0 {
		c.InflightBytes = 100 << 20
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) epoch() uint32 {
	if c.Epoch != nil {
		return c.Epoch()
	}
	return 0
}

// Client is a connection to one peer that many goroutines share: requests
// are multiplexed by id, a broken connection is re-established with
// exponential backoff on the next call, and in-flight request bytes are
// bounded.
type Client struct {
	addr   string
	kr     Keyring
	cfg    Config
	nextID atomic.Uint64
	budget sem.Weighted // bytes of requests in flight, up to cfg.InflightBytes

	mu       sync.Mutex
	cur      *clientConn
	dialing  chan struct{} // closed when the current dial attempt ends
	backoff  time.Duration
	nextDial time.Time
	lastErr  error
	closed   bool
	wg       sync.WaitGroup
}

type result struct {
	msg *Message
	err error
}

type clientConn struct {
	*conn
	born    time.Time
	mu      sync.Mutex
	pending map[uint64]chan result
	retired bool // past the session TTL: takes no new request, closes when pending empties
}

// errSessionExpired closes a connection whose session outlived
// Config.SessionTTL.
var errSessionExpired = errors.New("msgr: session expired (ms_session_ttl)")

// retire stops cc from taking new requests and closes it once the ones
// in flight are answered.
func (cc *clientConn) retire() {
	cc.mu.Lock()
	cc.retired = true
	idle := len(cc.pending) == 0
	if idle {
		cc.pending = nil // a racing call sees it and connects anew
	}
	cc.mu.Unlock()
	if idle {
		cc.close(errSessionExpired)
	}
}

// settled closes a retired connection whose last reply came; cc.mu held.
func (cc *clientConn) settled() bool {
	if cc.retired && len(cc.pending) == 0 && cc.pending != nil {
		cc.pending = nil
		return true
	}
	return false
}

// Dial returns a Client for addr; it connects on first use.
func Dial(addr string, kr Keyring, cfg Config) *Client {
	cfg = cfg.withDefaults()
	return &Client{addr: addr, kr: kr, cfg: cfg}
}

// Addr is the peer's address.
func (c *Client) Addr() string { return c.addr }

// Call sends a request and waits for its reply, the context's end, or the
// connection's failure (ErrConnReset: the request may or may not have run).
// A handler's error arrives as *RemoteError. payload is not copied and must
// not change until Call returns; the reply must be Released.
func (c *Client) Call(ctx context.Context, typ uint16, payload []byte) (*Message, error) {
	return c.call(ctx, typ, payload, nil, nil)
}

// CallVec is Call with the payload given as parts to concatenate (requests
// that carry large data), written from where they lie (in a secure
// session, encrypted into one pooled buffer). The parts must not change
// until CallVec returns.
func (c *Client) CallVec(ctx context.Context, typ uint16, parts [][]byte) (*Message, error) {
	return c.call(ctx, typ, nil, parts, nil)
}

// CallVecSum is CallVec with the payload's checksum already computed
// (Checksum of parts): a sender that sends the same parts to several
// peers — a primary OSD to its replicas — checksums them once.
func (c *Client) CallVecSum(ctx context.Context, typ uint16, parts [][]byte, sum uint32) (*Message, error) {
	return c.call(ctx, typ, nil, parts, &sum)
}

// Checksum is the frame checksum (crc32c) of a payload given as parts.
// known, if not nil, may give a part's checksum (Valid) so that it is
// combined instead of computed over the part: a primary OSD forwarding
// data whose block checksums it holds.
func Checksum(parts [][]byte, known func(p []byte) crc32c.Sum) uint32 {
	var crc uint32
	for _, p := range parts {
		if known != nil {
			if s := known(p); s.Valid {
				crc = crc32c.Combine(crc, s.CRC, int64(len(p)))
				continue
			}
		}
		crc = crc32c.Update(crc, p)
	}
	return crc
}

func (c *Client) call(ctx context.Context, typ uint16, payload []byte, parts [][]byte, sum *uint32) (*Message, error) {
	size := len(payload)
	for _, p := range parts {
		size += len(p)
	}
	if size > MaxPayload {
		return nil, fmt.Errorf("msgr: payload of %d bytes exceeds %d", size, MaxPayload)
	}
	n := int64(size)
	if err := c.budget.Acquire(ctx, n, c.cfg.InflightBytes); err != nil {
		return nil, fmt.Errorf("msgr: waiting for in-flight budget: %w", err)
	}
	defer c.budget.Release(n, c.cfg.InflightBytes)
	id := c.nextID.Add(1)
	ch := make(chan result, 1)
	var cc *clientConn
	for cc == nil {
		var err error
		if cc, err = c.connect(ctx); err != nil {
			return nil, err
		}
		cc.mu.Lock()
		if cc.pending == nil {
			retired := cc.retired
			cc.mu.Unlock()
			if retired { // expired as we took it: take the new one
				cc = nil
				continue
			}
			return nil, fmt.Errorf("%w: to %s: %v", ErrConnReset, c.addr, cc.cause())
		}
		cc.pending[id] = ch
		cc.mu.Unlock()
	}
	f := &outFrame{h: header{typ: typ, reqID: id, epoch: c.cfg.epoch(), length: uint32(size)}, payload: payload, parts: parts, sent: make(chan struct{})}
	if sum != nil {
		f.sum, f.hasSum = *sum, true
	}
	if err := cc.send(f); err != nil {
		cc.forget(id)
		return nil, err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			<-f.sent // a failed connection may still be writing the frame
		}
		return r.msg, r.err
	case <-ctx.Done():
		cc.forget(id)
		<-f.sent // the payload is the caller's again only once written or dropped
		return nil, fmt.Errorf("msgr: call to %s: %w", c.addr, ctx.Err())
	}
}

func (cc *clientConn) forget(id uint64) {
	cc.mu.Lock()
	delete(cc.pending, id)
	done := cc.settled()
	cc.mu.Unlock()
	if done {
		cc.close(errSessionExpired)
	}
}

// connect returns the live connection, dialing (one attempt at a time,
// after the backoff delay) if there is none.
func (c *Client) connect(ctx context.Context) (*clientConn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if c.cur != nil && c.cfg.SessionTTL > 0 && time.Since(c.cur.born) > c.cfg.SessionTTL {
			old := c.cur
			c.cur = nil
			c.mu.Unlock()
			old.retire()
			continue
		}
		if c.cur != nil {
			select {
			case <-c.cur.closed:
				c.cur = nil
			default:
				cc := c.cur
				c.mu.Unlock()
				return cc, nil
			}
		}
		if c.dialing != nil { // someone else is dialing: wait for them
			wait := c.dialing
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("msgr: connect to %s: %w", c.addr, ctx.Err())
			}
		}
		delay := time.Until(c.nextDial)
		done := make(chan struct{})
		c.dialing = done
		c.mu.Unlock()
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				c.finishDial(nil, nil, done)
				return nil, fmt.Errorf("msgr: connect to %s (backing off after: %w): %w", c.addr, c.lastError(), ctx.Err())
			}
		}
		cc, err := c.dial(ctx)
		c.finishDial(cc, err, done)
		if err != nil {
			return nil, err
		}
		return cc, nil
	}
}

func (c *Client) lastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

func (c *Client) finishDial(cc *clientConn, err error, done chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case cc != nil:
		c.cur, c.backoff, c.lastErr = cc, 0, nil
	case err != nil:
		c.backoff = min(max(2*c.backoff, 50*time.Millisecond), c.cfg.MaxBackoff)
		c.nextDial = time.Now().Add(c.backoff)
		c.lastErr = err
	}
	c.dialing = nil
	close(done)
	if c.closed && cc != nil {
		cc.close(ErrClosed)
	}
}

func (c *Client) dial(ctx context.Context) (*clientConn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	nc, err := c.cfg.transport().Dial(dctx, c.addr, c.cfg.SourceIP)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", ErrConnReset, c.addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	nc.SetDeadline(time.Now().Add(c.cfg.DialTimeout))
	sess, err := clientHandshake(nc, c.kr, c.cfg.Mode)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("msgr: connect to %s: %w", c.addr, err)
	}
	nc.SetDeadline(time.Time{})
	cc := &clientConn{conn: newConn(nc, sess, c.cfg.WriteTimeout), born: time.Now(), pending: map[uint64]chan result{}}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		nc.Close()
		return nil, ErrClosed
	}
	c.wg.Add(2)
	c.mu.Unlock()
	go func() { defer c.wg.Done(); cc.writer() }()
	go func() {
		defer c.wg.Done()
		cc.reader(false, cc.deliver)
		cc.failPending()
	}()
	return cc, nil
}

func (cc *clientConn) deliver(h header, payload []byte, _ []uint32) {
	buf := payload[:cap(payload)]
	if h.flags&flagReply == 0 {
		bufpool.Put(buf) // clients serve no requests
		return
	}
	cc.mu.Lock()
	ch := cc.pending[h.reqID]
	delete(cc.pending, h.reqID)
	done := cc.settled()
	cc.mu.Unlock()
	if done {
		defer cc.close(errSessionExpired) // after this reply is handed over
	}
	if ch == nil { // its caller gave up
		bufpool.Put(buf)
		return
	}
	if h.flags&flagError != 0 {
		err := decodeError(payload)
		bufpool.Put(buf)
		ch <- result{err: err}
		return
	}
	ch <- result{msg: &Message{Type: h.typ, Epoch: h.epoch, From: cc.peer, Payload: payload, buf: buf}}
}

// failPending fails every request waiting on this connection.
func (cc *clientConn) failPending() {
	cc.mu.Lock()
	pending := cc.pending
	cc.pending = nil
	cc.mu.Unlock()
	for _, ch := range pending {
		ch <- result{err: fmt.Errorf("%w: to %s: %v", ErrConnReset, cc.peer, cc.cause())}
	}
}

// Close closes the connection and fails calls in flight; it waits for the
// client's goroutines.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	cur := c.cur
	c.cur = nil
	c.mu.Unlock()
	if cur != nil {
		cur.close(ErrClosed)
	}
	c.wg.Wait()
	return nil
}
