package msgr

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Authenticate runs the handshake on a raw connection — as the accepting
// end when server is set — and returns the connection protected as the
// session's mode says (SecureStream: every record authenticated, and with
// ModeSecure encrypted) and the peer's entity name, or ErrAuth. It lets
// other protocols (the MONs' raft transport) share the messenger's
// authentication and frame protection over a byte stream of their own.
// The stream takes want as the messenger does: secure if either end asks.
func Authenticate(nc net.Conn, kr Keyring, server bool, want Mode, timeout time.Duration) (net.Conn, string, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	var s *session
	var err error
	if server {
		s, err = serverHandshake(nc, kr, want)
	} else {
		s, err = clientHandshake(nc, kr, want)
	}
	if err != nil {
		return nil, "", err
	}
	return &secureStream{Conn: nc, s: s, r: bufio.NewReaderSize(nc, 64<<10)}, s.peer, nil
}

// maxRecord bounds a stream record's payload (a Write larger is split).
const maxRecord = 1 << 20

// secureStream is a byte stream in records: a 4-byte little-endian
// length, then the bytes in the clear followed by a GCM tag over them
// and the length (ModeCRC), or the bytes encrypted with the tag
// (ModeSecure). Each direction numbers its records (the nonce), so a
// record altered, dropped, replayed or reordered fails the tag and the
// stream errors with ErrProtocol.
type secureStream struct {
	net.Conn
	s *session

	wmu  sync.Mutex
	wbuf []byte

	rmu     sync.Mutex
	r       *bufio.Reader
	pending []byte // a record's plaintext not yet read
	rbuf    []byte
	rerr    error
}

func (c *secureStream) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), maxRecord)]
		var hdr [4]byte
		binary.LittleEndian.PutUint32(hdr[:], uint32(len(chunk)))
		c.wbuf = append(c.wbuf[:0], hdr[:]...)
		if c.s.mode == ModeSecure {
			c.wbuf = c.s.out.aead.Seal(c.wbuf, c.s.out.next(), chunk, hdr[:])
		} else {
			c.wbuf = append(c.wbuf, chunk...)
			c.wbuf = c.s.out.aead.Seal(c.wbuf, c.s.out.next(), nil, c.wbuf)
		}
		if _, err := c.Conn.Write(c.wbuf); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

func (c *secureStream) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.pending) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		c.rerr = c.readRecord()
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// readRecord reads and opens the next record into pending.
func (c *secureStream) readRecord() error {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > maxRecord {
		return fmt.Errorf("%w: stream record of %d bytes (at most %d)", ErrProtocol, n, maxRecord)
	}
	if need := 4 + int(n) + tagLen; cap(c.rbuf) < need {
		c.rbuf = make([]byte, need)
	}
	buf := c.rbuf[:4+int(n)+tagLen]
	copy(buf, hdr[:])
	if _, err := io.ReadFull(c.r, buf[4:]); err != nil {
		return err
	}
	var err error
	if c.s.mode == ModeSecure {
		c.pending, err = c.s.in.aead.Open(buf[4:4], c.s.in.next(), buf[4:], hdr[:])
	} else {
		_, err = c.s.in.aead.Open(nil, c.s.in.next(), buf[4+n:], buf[:4+n])
		c.pending = buf[4 : 4+n]
	}
	if err != nil {
		c.pending = nil
		return fmt.Errorf("%w: stream record authentication failed (altered, injected or out of order)", ErrProtocol)
	}
	return nil
}
