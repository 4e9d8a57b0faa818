// Package memnet is an in-memory network for the messenger (a
// msgr.Transport without sockets): hosts listen on "host:port"
// addresses and dial each other over synchronous in-memory pipes
// (net.Pipe), with deadlines, in one process. It lets a whole cluster run
// in a test without ports, and with msgr/faultnet on top, with links cut,
// slowed or reset at will.
//
// A Network is safe for concurrent use. Connections are ordered and
// reliable, like TCP's, but unbuffered: a write returns once the other
// end has read it (net.Pipe), so a write deadline passes where TCP's
// send buffer would have taken the bytes. A Close is seen by the other
// end as io.EOF.
//
// Ports: Listen on port 0 picks a free one in [firstPort, 65535],
// wrapping; a dial's local port only names its end, drawn the same way
// (it may repeat once 55,536 dials have been made, as an OS reuses
// ephemeral ports).
package memnet

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
)

// Network is one in-memory network. The zero value is not usable: use New.
type Network struct {
	mu        sync.Mutex
	listeners map[Addr]*listener
	nextPort  int // the next port Listen tries for port 0
	nextLocal int // the next local port of a dial
}

// firstPort is the first port the network picks.
const firstPort = 10000

// New returns an empty network.
func New() *Network {
	return &Network{listeners: map[Addr]*listener{}, nextPort: firstPort, nextLocal: firstPort}
}

// next returns *p and advances it, wrapping past 65535 to firstPort.
func next(p *int) int {
	v := *p
	if *p++; *p > 65535 {
		*p = firstPort
	}
	return v
}

// Host is a Transport on network n whose connections come from host (a
// name or an IP address: only equality matters) unless a dial names
// another source.
func (n *Network) Host(host string) *Host { return &Host{n: n, name: host} }

// Host is one host's side of a Network: a msgr.Transport.
type Host struct {
	n    *Network
	name string
}

// Addr is an address on the network: a host (any string; only equality
// matters) and a port (0–65535).
type Addr struct {
	Host string
	Port int
}

// Network is "mem".
func (Addr) Network() string { return "mem" }

// String is "host:port" (net.JoinHostPort).
func (a Addr) String() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// Listen listens on addr ("host:0" picks a free port). A host part that
// is empty means this Host's own name.
func (h *Host) Listen(addr string) (net.Listener, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	if host == "" {
		host = h.name
	}
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if port == 0 {
		for range 65536 - firstPort {
			if p := next(&n.nextPort); n.listeners[Addr{host, p}] == nil {
				port = p
				break
			}
		}
		if port == 0 {
			return nil, &net.OpError{Op: "listen", Net: "mem", Addr: Addr{host, 0}, Err: syscall.EADDRINUSE}
		}
	}
	a := Addr{host, port}
	if n.listeners[a] != nil {
		return nil, &net.OpError{Op: "listen", Net: "mem", Addr: a, Err: syscall.EADDRINUSE}
	}
	l := &listener{n: n, addr: a, conns: make(chan net.Conn, 64), done: make(chan struct{})}
	n.listeners[a] = l
	return l, nil
}

// Dial connects to addr from source (empty: this Host) over a new pipe.
// An address nobody listens on is refused (ECONNREFUSED), as TCP's.
func (h *Host) Dial(ctx context.Context, addr, source string) (net.Conn, error) {
	if source == "" {
		source = h.name
	}
	remote, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	n := h.n
	n.mu.Lock()
	l := n.listeners[remote]
	port := next(&n.nextLocal)
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: remote, Err: syscall.ECONNREFUSED}
	}
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: remote, Err: err}
	}
	local := Addr{source, port}
	c, s := net.Pipe()
	client, server := &conn{Conn: c, local: local, remote: remote}, &conn{Conn: s, local: remote, remote: local}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
	default:
		select {
		case l.conns <- server:
			return client, nil
		default: // the backlog is full
		}
	}
	c.Close()
	s.Close()
	return nil, &net.OpError{Op: "dial", Net: "mem", Addr: remote, Err: syscall.ECONNREFUSED}
}

type listener struct {
	n     *Network
	addr  Addr
	mu    sync.Mutex    // orders a dial's hand-over against Close
	conns chan net.Conn // the backlog
	once  sync.Once
	done  chan struct{}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "mem", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close stops accepting; connections already accepted stay open, as
// TCP's do.
func (l *listener) Close() error {
	l.once.Do(func() {
		l.mu.Lock()
		close(l.done)
		l.mu.Unlock()
		l.n.mu.Lock()
		delete(l.n.listeners, l.addr)
		l.n.mu.Unlock()
		for {
			select {
			case c := <-l.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }

// conn is a pipe end with the network's addresses.
type conn struct {
	net.Conn
	local, remote Addr
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

func splitAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("memnet: address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("memnet: address %q: bad port", addr)
	}
	return host, port, nil
}

func parseAddr(addr string) (Addr, error) {
	host, port, err := splitAddr(addr)
	return Addr{host, port}, err
}
