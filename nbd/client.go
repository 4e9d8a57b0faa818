package nbd

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
)

// Client is a minimal NBD client — fixed newstyle, NBD_OPT_GO, simple
// replies, one request at a time — for tests and tools that drive an
// export from Go (open several for concurrency: exports allow
// multi-conn).
type Client struct {
	mu     sync.Mutex
	c      net.Conn
	r      *bufio.Reader
	size   uint64
	flags  uint16
	handle uint64
}

// Error is a request's failure as the server reported it: an errno
// (EIO 5, EINVAL 22, ENOSPC 28, EPERM 1).
type Error struct{ Errno uint32 }

func (e *Error) Error() string { return fmt.Sprintf("nbd: server error %d", e.Errno) }

// Dial connects to the server at addr ("unix" or "tcp") and selects
// export.
func Dial(network, addr, export string) (*Client, error) {
	c, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	cl := &Client{c: c, r: bufio.NewReader(c)}
	if err := cl.handshake(export); err != nil {
		c.Close()
		return nil, err
	}
	return cl, nil
}

func (cl *Client) handshake(export string) error {
	var hello [18]byte
	if _, err := io.ReadFull(cl.r, hello[:]); err != nil {
		return fmt.Errorf("nbd: greeting: %w", err)
	}
	if binary.BigEndian.Uint64(hello[0:]) != nbdMagic || binary.BigEndian.Uint64(hello[8:]) != optMagic {
		return fmt.Errorf("nbd: not an NBD newstyle server")
	}
	b := binary.BigEndian.AppendUint32(nil, flagFixedNewstyle|flagNoZeroes)
	b = binary.BigEndian.AppendUint64(b, optMagic)
	b = binary.BigEndian.AppendUint32(b, optGo)
	b = binary.BigEndian.AppendUint32(b, uint32(4+len(export)+2))
	b = binary.BigEndian.AppendUint32(b, uint32(len(export)))
	b = append(b, export...)
	b = binary.BigEndian.AppendUint16(b, 0)
	if _, err := cl.c.Write(b); err != nil {
		return err
	}
	for {
		var h [20]byte
		if _, err := io.ReadFull(cl.r, h[:]); err != nil {
			return fmt.Errorf("nbd: option reply: %w", err)
		}
		data := make([]byte, binary.BigEndian.Uint32(h[16:]))
		if _, err := io.ReadFull(cl.r, data); err != nil {
			return fmt.Errorf("nbd: option reply: %w", err)
		}
		switch typ := binary.BigEndian.Uint32(h[12:]); {
		case typ == repAck:
			return nil
		case typ == repInfo && len(data) >= 12 && binary.BigEndian.Uint16(data) == infoExport:
			cl.size, cl.flags = binary.BigEndian.Uint64(data[2:]), binary.BigEndian.Uint16(data[10:])
		case typ&(1<<31) != 0:
			return fmt.Errorf("nbd: export %q refused (%#x): %s", export, typ, data)
		}
	}
}

// Size is the export's size in bytes.
func (cl *Client) Size() uint64 { return cl.size }

// do sends one request and reads its reply into p (reads).
func (cl *Client) do(typ, flags uint16, off uint64, length uint32, payload, p []byte) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.handle++
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 28+len(payload)), requestMagic)
	b = binary.BigEndian.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint64(b, cl.handle)
	b = binary.BigEndian.AppendUint64(b, off)
	b = binary.BigEndian.AppendUint32(b, length)
	if _, err := cl.c.Write(append(b, payload...)); err != nil {
		return err
	}
	var h [16]byte
	if _, err := io.ReadFull(cl.r, h[:]); err != nil {
		return fmt.Errorf("nbd: reply: %w", err)
	}
	if binary.BigEndian.Uint32(h[0:]) != simpleReplyMagc || binary.BigEndian.Uint64(h[8:]) != cl.handle {
		return fmt.Errorf("nbd: reply % x does not answer request %d", h, cl.handle)
	}
	if errno := binary.BigEndian.Uint32(h[4:]); errno != 0 {
		return &Error{Errno: errno}
	}
	if p != nil {
		if _, err := io.ReadFull(cl.r, p); err != nil {
			return fmt.Errorf("nbd: read data: %w", err)
		}
	}
	return nil
}

// ReadAt reads len(p) bytes at off.
func (cl *Client) ReadAt(p []byte, off uint64) error {
	return cl.do(cmdRead, 0, off, uint32(len(p)), nil, p)
}

// WriteAt writes p at off; with fua the reply waits for it to be durable
// (every write here is, once answered).
func (cl *Client) WriteAt(p []byte, off uint64, fua bool) error {
	flags := uint16(0)
	if fua {
		flags = cmdFlagFUA
	}
	return cl.do(cmdWrite, flags, off, uint32(len(p)), p, nil)
}

// Flush returns once every write answered before it is durable.
func (cl *Client) Flush() error { return cl.do(cmdFlush, 0, 0, 0, nil, nil) }

// Close disconnects (NBD_CMD_DISC) and closes the connection.
func (cl *Client) Close() error {
	cl.mu.Lock()
	b := binary.BigEndian.AppendUint32(nil, requestMagic)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, cmdDisc)
	b = append(b, make([]byte, 20)...)
	cl.c.Write(b)
	cl.mu.Unlock()
	return cl.c.Close()
}
