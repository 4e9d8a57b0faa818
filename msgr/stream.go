package msgr

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// Authenticate runs the handshake on a raw connection — as the accepting
// end when server is set — and returns the connection, now carrying its
// bytes in records protected as the session's mode says (each
// authenticated by a tag, and with ModeSecure encrypted), and the peer's
// entity name; ErrAuth if the handshake fails. It lets other protocols
// (the MONs' raft transport) share the messenger's authentication and
// frame protection over a byte stream of their own. The mode is agreed as
// the messenger's: secure if either end wants it. Reads of an altered,
// injected, dropped or reordered record fail with ErrProtocol.
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

// maxRecord bounds a stream record's payload in bytes (a larger Write is
// split).
const maxRecord = 1 << 20

// secureStream is a byte stream in records: a 4-byte little-endian
// length, then the bytes in the clear and the session's tag over length
// and bytes (ModeCRC: frameCipher.tagOver), or the bytes encrypted and
// their tag, the length being associated data (ModeSecure). Each
// direction numbers its records (the tag's nonce), so a record altered,
// dropped, replayed or reordered fails its tag and the stream errors with
// ErrProtocol from then on.
type secureStream struct {
	net.Conn
	s *session

	wmu  sync.Mutex
	wbuf []byte // ModeSecure: a record being sealed

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
		var err error
		if out := c.s.out; out.mode == ModeSecure {
			c.wbuf = append(append(c.wbuf[:0], hdr[:]...), chunk...)
			c.wbuf = slices.Grow(c.wbuf, tagLen)
			out.seal(hdr[:], c.wbuf[4:4+len(chunk)+tagLen], len(chunk))
			_, err = c.Conn.Write(c.wbuf[:4+len(chunk)+tagLen])
		} else {
			bufs := net.Buffers{hdr[:], chunk, out.tagOver(hdr[:], chunk)}
			_, err = bufs.WriteTo(c.Conn)
		}
		if err != nil {
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

// readRecord reads and verifies the next record into pending.
func (c *secureStream) readRecord() error {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return err
	}
	n := int(binary.LittleEndian.Uint32(hdr[:]))
	if n > maxRecord {
		return fmt.Errorf("%w: stream record of %d bytes (at most %d)", ErrProtocol, n, maxRecord)
	}
	if cap(c.rbuf) < n+tagLen {
		c.rbuf = make([]byte, n+tagLen)
	}
	buf := c.rbuf[:n+tagLen]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return err
	}
	if in := c.s.in; in.mode == ModeSecure {
		p, err := in.open(hdr[:], buf)
		if err != nil {
			return err
		}
		c.pending = p
		return nil
	}
	if err := c.s.in.checkTag(hdr[:], buf[:n], buf[n:]); err != nil {
		return err
	}
	c.pending = buf[:n]
	return nil
}
