package msgr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/shoal-project/shoal/internal/bufpool"
)

// Handler serves one request and returns the reply payload, or an error
// the caller receives as *RemoteError (give it a *RemoteError to choose
// the code). The request's payload is valid only until Handler returns.
// Handlers run concurrently; ctx ends when the server closes.
type Handler func(ctx context.Context, m *Message) ([]byte, error)

// Server accepts authenticated connections and serves their requests.
type Server struct {
	ln     net.Listener
	kr     Keyring
	h      Handler
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen starts a server on addr ("127.0.0.1:0" picks a port).
func Listen(addr string, kr Keyring, h Handler, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	ln, err := cfg.transport().Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("msgr: listen on %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{ln: ln, kr: kr, h: h, cfg: cfg, ctx: ctx, cancel: cancel, conns: map[*conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.cfg.Logger.Error("msgr: accept", "addr", s.Addr(), "err", err)
			}
			return
		}
		s.wg.Add(1)
		go s.serve(nc)
	}
}

func (s *Server) serve(nc net.Conn) {
	defer s.wg.Done()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	nc.SetDeadline(time.Now().Add(s.cfg.DialTimeout))
	sess, err := serverHandshake(nc, s.kr, s.cfg.Mode)
	if err != nil {
		s.cfg.Logger.Warn("msgr: refused peer", "remote", nc.RemoteAddr().String(), "err", err)
		nc.Close()
		return
	}
	nc.SetDeadline(time.Time{})
	peer := sess.peer
	c := newConn(nc, sess, s.cfg.WriteTimeout)
	if ttl := s.cfg.SessionTTL; ttl > 0 { // a client retires it after ttl; one that does not is cut off
		t := time.AfterFunc(2*ttl, func() { c.close(errSessionExpired) })
		defer t.Stop()
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	ip := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	var handlers sync.WaitGroup
	s.wg.Add(1)
	go func() { defer s.wg.Done(); c.writer() }()
	c.reader(true, func(h header, payload []byte, sums []uint32) {
		buf := payload[:cap(payload)]
		if h.flags&flagReply != 0 { // servers expect requests only
			bufpool.Put(buf)
			return
		}
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			m := &Message{Type: h.typ, Epoch: h.epoch, From: peer, FromIP: ip, Payload: payload, buf: buf, sums: sums}
			reply, err := s.h(s.ctx, m)
			out := &outFrame{h: header{flags: flagReply, typ: h.typ, reqID: h.reqID, epoch: s.cfg.epoch()}, payload: reply}
			switch {
			case err != nil:
				out.h.flags |= flagError
				out.payload = encodeError(err)
			case m.vec != nil:
				out.parts, out.sums = m.vec, m.vecSums
				for _, p := range out.parts {
					out.h.length += uint32(len(p))
				}
				// the parts may alias the request's buffer: keep it until
				// the writer is done with them
				out.sent = make(chan struct{})
				if c.send(out) == nil {
					// sent is closed once the writer is done with the
					// parts — written, or dropped with the connection
					// (its writer or send drains the queue) — but not
					// when the connection is merely marked closed: the
					// writer may still be sending from them, and they
					// may be a cache's or a pool's buffers
					<-out.sent
				}
				m.Release()
				if m.vecDone != nil {
					m.vecDone()
				}
				return
			}
			m.Release()
			out.h.length = uint32(len(out.payload))
			c.send(out) // a closed connection drops the reply
		}()
	})
	handlers.Wait()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close stops accepting and drops every connection at once (replies not
// yet sent are lost, as in a crash), then cancels the handlers' context
// and waits for all of the server's goroutines.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.close(ErrClosed)
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return err
}
