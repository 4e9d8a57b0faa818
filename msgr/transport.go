package msgr

import (
	"context"
	"net"
)

// Transport makes the connections the messenger runs over: a Client
// dials through it and a Server listens through it. TCP is the default;
// tests use an in-memory network (msgr/memnet) and its faulty twin
// (msgr/faultnet) to cut, slow or reset links in-process. The messenger
// needs only an ordered, reliable byte stream with deadlines (net.Conn);
// it turns on TCP's own options (no delay, the receive low-water mark)
// only when the connection is a *net.TCPConn.
type Transport interface {
	// Dial connects to addr ("host:port"). source, when not empty, is the
	// local host to connect from (Config.SourceIP).
	Dial(ctx context.Context, addr, source string) (net.Conn, error)
	// Listen listens on addr ("host:0" picks a port).
	Listen(addr string) (net.Listener, error)
}

// TCP is the default Transport: real sockets.
type TCP struct{}

// Dial connects with net.Dialer from source, if set.
func (TCP) Dial(ctx context.Context, addr, source string) (net.Conn, error) {
	var d net.Dialer
	if ip := net.ParseIP(source); ip != nil {
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	return d.DialContext(ctx, "tcp", addr)
}

// Listen listens on a TCP address.
func (TCP) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

func (c Config) transport() Transport {
	if c.Transport != nil {
		return c.Transport
	}
	return TCP{}
}
