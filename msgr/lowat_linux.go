package msgr

import (
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sockReader reads large payloads straight from a TCP connection's socket
// with a receive low-water mark (SO_RCVLOWAT, socket(7)): while it waits
// for more of a frame, the kernel wakes it only once mark bytes are
// queued, instead of at each arriving segment (64 KiB on loopback): the
// whole machine's context switches per 32 MiB PUT fell by about a tenth
// (docs/PERFORMANCE.md). The mark never exceeds what the frame still has
// to deliver, so a reader never waits for bytes the sender will not send;
// the kernel also wakes it when its receive window or buffer fills
// (tcp_epollin_ready in Linux's net/ipv4/tcp.c).
type sockReader struct {
	rc   syscall.RawConn // the connection's descriptor
	mark int             // the mark set on the socket (1: the kernel's default)
}

// newSockReader returns the reader for nc, or nil where nc is not a TCP
// connection.
func newSockReader(nc net.Conn) *sockReader {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &sockReader{rc: rc, mark: 1}
}

// lowatMax is the most bytes a reader waits to have queued before it is
// woken: a few of readFrame's pieces (crc32c.Piece), which it then reads
// without waiting. lowatMin is the least worth setting a mark for.
const (
	lowatMax = 1 << 20
	lowatMin = 64 << 10
)

// readFull fills p from the socket, more being how many bytes of the frame
// follow p (all of them sent or still to be sent by the peer). Before each
// wait it sets the mark to what is still to come, within lowatMax (1 below
// lowatMin). Errors are the connection's (a deadline, a reset), or
// io.ErrUnexpectedEOF if it ends first.
func (s *sockReader) readFull(p []byte, more int) error {
	got := 0
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		for got < len(p) {
			n, err := unix.Read(int(fd), p[got:])
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				need := len(p) - got + more
				if need < lowatMin {
					need = 1
				}
				s.setMark(int(fd), min(need, lowatMax))
				return false // wait until readable
			case err != nil:
				rerr = err
				return true
			case n == 0:
				rerr = io.ErrUnexpectedEOF
				return true
			}
			got += n
		}
		return true
	})
	if err == nil {
		err = rerr
	}
	return err
}

// setMark sets the socket's low-water mark. A mark the kernel refuses is
// not retried: reads are then woken as without one.
func (s *sockReader) setMark(fd, n int) {
	if n == s.mark {
		return
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT, n) == nil {
		s.mark = n
	}
}

// reset sets the mark back to 1, before reads of the next frame's header
// through the connection's buffered reader.
func (s *sockReader) reset() {
	if s.mark == 1 {
		return
	}
	s.rc.Control(func(fd uintptr) { s.setMark(int(fd), 1) })
}
