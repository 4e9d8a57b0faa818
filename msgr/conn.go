package msgr

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/shoal-project/shoal/internal/bufpool"
	"github.com/shoal-project/shoal/internal/crc32c"
)

// ErrConnReset means the connection broke before a reply came: the request
// may or may not have been executed.
var ErrConnReset = errors.New("msgr: connection reset")

// ErrClosed means the client or server was closed.
var ErrClosed = errors.New("msgr: closed")

type outFrame struct {
	h       header
	payload []byte
	parts   [][]byte     // if set, the payload is their concatenation (written from them: they must not change until sent is closed)
	sums    []crc32c.Sum // checksums of parts known to the sender (index by part; may be short)
	sum     uint32       // the payload's checksum, if hasSum (else, ModeCRC and no sums, the frame goes without: flagNoCRC)
	hasSum  bool
	sent    chan struct{} // closed once written (or dropped with the connection)
}

// conn is one authenticated TCP connection with its reader and writer
// goroutines; both stop when the connection closes.
type conn struct {
	nc           net.Conn
	peer         string
	sess         *session // the frame protection: sess.out the writer's, sess.in the reader's
	sendq        chan *outFrame
	closed       chan struct{}
	once         sync.Once
	mu           sync.Mutex
	err          error
	writeTimeout time.Duration
}

func newConn(nc net.Conn, sess *session, writeTimeout time.Duration) *conn {
	return &conn{nc: nc, peer: sess.peer, sess: sess, sendq: make(chan *outFrame, 256), closed: make(chan struct{}), writeTimeout: writeTimeout}
}

func (c *conn) close(err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.closed)
		c.nc.Close()
	})
}

func (c *conn) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// send queues a frame; it fails if the connection is closed. A frame
// that lands in the queue as the connection closes (select picks either
// ready case) may come after the writer's last drain: it is released
// here, so that its sender does not wait for it forever.
func (c *conn) send(f *outFrame) error {
	select {
	case c.sendq <- f:
		select {
		case <-c.closed:
			c.drain()
		default:
		}
		return nil
	case <-c.closed:
		return fmt.Errorf("%w: to %s: %v", ErrConnReset, c.peer, c.cause())
	}
}

// writer writes queued frames, batching whatever is waiting into one
// vectored write; payloads are written from the caller's buffer.
func (c *conn) writer() {
	var bufs net.Buffers
	var batch []*outFrame
	var scratch [][]byte // pooled buffers of this batch's frames, given back once written
	for {
		var f *outFrame
		select {
		case f = <-c.sendq:
		case <-c.closed:
			c.drain()
			return
		}
		batch = append(batch[:0], f)
	more:
		for len(batch) < 64 {
			select {
			case f := <-c.sendq:
				batch = append(batch, f)
			default:
				break more
			}
		}
		bufs = bufs[:0]
		scratch = scratch[:0]
		for _, f := range batch {
			bufs, scratch = c.appendFrame(bufs, scratch, f)
		}
		if c.writeTimeout > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
		}
		_, err := bufs.WriteTo(c.nc)
		for _, b := range scratch {
			bufpool.Put(b)
		}
		for _, f := range batch {
			if f.sent != nil {
				close(f.sent)
			}
		}
		if err != nil {
			c.close(fmt.Errorf("write to %s: %w", c.peer, err))
			c.drain()
			return
		}
	}
}

// appendFrame appends f's wire form to bufs, protected as the session's
// mode says: header, payload, checksum and tag (ModeCRC), or header,
// ciphertext and tag (ModeSecure). ModeCRC writes the payload from the
// caller's buffers, parts and all (its tag is made segment by segment,
// frameCipher.addPartSegs: only segments across parts are copied, into a
// segment-sized scratch); ModeSecure encrypts a copy, in a pooled buffer
// appended to scratch.
func (c *conn) appendFrame(bufs net.Buffers, scratch [][]byte, f *outFrame) (net.Buffers, [][]byte) {
	fc := c.sess.out
	parts := f.parts
	if parts == nil {
		parts = [][]byte{f.payload}
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	// header, checksum and tag share one small buffer
	frame := make([]byte, headerLen+4+tagLen)
	hdr := frame[:headerLen]
	f.h.length = uint32(n)
	if fc.mode == ModeSecure {
		b := bufpool.Get(n + tagLen) // sealed in place
		scratch = append(scratch, b)
		off := 0
		for _, p := range parts {
			off += copy(b[off:], p)
		}
		f.h.put(hdr)
		bufs = append(bufs, hdr)
		return append(bufs, fc.seal(hdr, b, n)), scratch
	}
	// The payload's crc32c goes along when the sender has checksums for
	// it — data with its stored checksums, which the receiver checks end
	// to end (the parts without one, headers, are checksummed here).
	// Otherwise the frame goes without: the tag authenticates the
	// payload, and a checksum computed just for the frame would be a pass
	// over it for nothing.
	crc := f.sum
	switch {
	case f.hasSum:
	case f.parts != nil && slices.ContainsFunc(f.sums, func(s crc32c.Sum) bool { return s.Valid }):
		crc = 0
		for i, p := range f.parts {
			if i < len(f.sums) && f.sums[i].Valid {
				crc = crc32c.Combine(crc, f.sums[i].CRC, int64(len(p)))
			} else {
				crc = crc32c.Update(crc, p)
			}
		}
	default:
		crc = 0
		f.h.flags |= flagNoCRC
	}
	seg := segmentFor(parts, n)
	if seg == smallSegLen {
		f.h.flags |= flagSmallSegs
	}
	f.h.put(hdr)
	bufs = append(bufs, hdr)
	fc.resetSegs()
	fc.addPartSegs(parts, seg)
	binary.LittleEndian.PutUint32(frame[headerLen:], crc)
	copy(frame[headerLen+4:], fc.crcTag(hdr, crc))
	for _, p := range parts {
		if len(p) > 0 {
			bufs = append(bufs, p)
		}
	}
	return append(bufs, frame[headerLen:]), scratch
}

// drain releases senders of frames that will never be written.
func (c *conn) drain() {
	for {
		select {
		case f := <-c.sendq:
			if f.sent != nil {
				close(f.sent)
			}
		default:
			return
		}
	}
}

// reader calls deliver for every frame until the connection fails; with
// keepSums it keeps the block checksums of large payloads (readFrame).
func (c *conn) reader(keepSums bool, deliver func(h header, payload []byte, sums []uint32)) {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	hdr := make([]byte, headerLen)
	sr := newSockReader(c.nc)
	for {
		h, payload, sums, err := readFrame(br, hdr, keepSums, sr, c.sess.in)
		if err != nil {
			c.close(fmt.Errorf("read from %s: %w", c.peer, err))
			return
		}
		deliver(h, payload, sums)
	}
}

// Message is a received request or reply. Payload stays valid until
// Release; a handler must copy what it keeps beyond its return.
type Message struct {
	Type  uint16
	Epoch uint32 // the sender's OSD map epoch
	From  string // the peer's authenticated entity name
	// FromIP is the peer's network address without the port, on a
	// server (for an IP blocklist); empty on a client.
	FromIP  string
	Payload []byte
	buf     []byte
	sums    []uint32     // crc32c of Payload's whole 4 KiB blocks, if the reader kept them
	vec     [][]byte     // the reply ReplyVec set
	vecSums []crc32c.Sum // ReplyVecThen's known checksums
	vecDone func()       // ReplyVecThen's done
}

// ReplyVec makes the reply to m the concatenation of parts, written to the
// connection in one vectored write without being copied into one buffer;
// the handler then returns (nil, nil). The parts must not change until the
// reply is written (the server holds m's payload buffer until then too,
// so parts may alias it). For replies that carry large data (reads).
func (m *Message) ReplyVec(parts [][]byte) { m.vec = parts }

// ReplyVecThen is ReplyVec, calling done once the reply is written (or
// dropped with its connection): the parts are no longer used then, so
// buffers they live in can be reused. sums (nil, or one per part up to
// some index) are the checksums of parts the handler already knows: the
// frame's checksum is combined from them instead of computed over those
// parts (an OSD's read data, whose checksums come from the store's block
// checksums, so the reader verifies the bytes against what was stored).
func (m *Message) ReplyVecThen(parts [][]byte, sums []crc32c.Sum, done func()) {
	m.vec, m.vecSums, m.vecDone = parts, sums, done
}

// BlockSums returns the crc32c of each whole 4 KiB block of b, which
// must lie in m's Payload starting a multiple of 4 KiB from its start,
// as the reader computed them checking the frame: a receiver that stores
// b in 4 KiB blocks (an OSD writing an object's data) takes them instead
// of a second pass over the bytes. It returns nil if the reader did not
// keep them (a small payload) or b is not such a slice.
func (m *Message) BlockSums(b []byte) []uint32 {
	if len(m.sums) == 0 || len(b) < crc32c.Block {
		return nil
	}
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(m.Payload))))
	if off < 0 || off%crc32c.Block != 0 || off+len(b) > len(m.Payload) {
		return nil
	}
	first := off / crc32c.Block
	return m.sums[first : first+len(b)/crc32c.Block]
}

// Release returns the payload's buffer for reuse; the message must not be
// used afterwards.
func (m *Message) Release() {
	if m != nil && m.buf != nil {
		bufpool.Put(m.buf)
		m.buf, m.Payload, m.sums = nil, nil, nil
	}
}

// RemoteError is an error the peer's handler returned, with its code.
type RemoteError struct {
	Code int32
	Msg  string
}

func (e *RemoteError) Error() string { return fmt.Sprintf("remote error %d: %s", e.Code, e.Msg) }

func encodeError(err error) []byte {
	code, msg := int32(-1), err.Error()
	var re *RemoteError
	if errors.As(err, &re) {
		code, msg = re.Code, re.Msg
	}
	return append(binary.LittleEndian.AppendUint32(nil, uint32(code)), msg...)
}

func decodeError(p []byte) error {
	if len(p) < 4 {
		return &RemoteError{Code: -1, Msg: "malformed error reply"}
	}
	return &RemoteError{Code: int32(binary.LittleEndian.Uint32(p)), Msg: string(p[4:])}
}
