// Package nbd serves block devices (Shoal's images) over the Network
// Block Device protocol, as qemu-nbd and rbd-nbd do, so that fio's nbd
// engine, libnbd's tools (nbdinfo, nbdcopy, nbdfuse), qemu-img and the
// kernel's nbd-client can use them.
//
// It speaks the protocol's fixed newstyle negotiation (the NBD protocol
// document, github.com/NetworkBlockDevice/nbd doc/proto.md): options
// NBD_OPT_EXPORT_NAME, NBD_OPT_GO, NBD_OPT_INFO, NBD_OPT_LIST and
// NBD_OPT_ABORT (others are answered NBD_REP_ERR_UNSUP, so clients fall
// back to simple replies), then the transmission phase: READ, WRITE,
// FLUSH, TRIM, WRITE_ZEROES and DISC, with the FUA flag. Requests run
// concurrently (up to MaxInFlight per connection) and are answered as
// they finish, out of order; a connection may be one of several to an
// export (NBD_FLAG_CAN_MULTI_CONN: a write is acknowledged only once it
// is durable, so every connection sees what any other acknowledged).
//
// Bad input gets the protocol's error and the server goes on: an
// unknown export NBD_REP_ERR_UNKNOWN, a request past the end EINVAL (a
// write ENOSPC), an unknown command EINVAL. A request whose magic is
// wrong means the stream is lost; that connection is closed, the others
// are served on.
package nbd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"sync"

	"github.com/shoal-project/shoal/internal/bufpool"
)

// Device is what an export serves (an rbd.Image): whole-buffer reads and
// writes at byte offsets within Size, discards, zeroing, and flushes.
// ReadAt fills all of p and keeps no reference to it once it returns (p
// is a pooled buffer, reused after the reply is written).
type Device interface {
	ReadAt(ctx context.Context, p []byte, off uint64) error
	WriteAt(ctx context.Context, p []byte, off uint64) error
	Discard(ctx context.Context, off, n uint64) error
	WriteZeroes(ctx context.Context, off, n uint64) error
	Flush(ctx context.Context) error
	Size() uint64
}

// Export is a named device.
type Export struct {
	Name        string
	Description string
	Device      Device
	ReadOnly    bool
}

// MaxInFlight is how many requests of one connection run or wait for
// their reply to be written at once; the connection reads no further
// requests meanwhile.
const MaxInFlight = 64

// MaxRequest is the largest read or write one request may carry (32 MiB,
// qemu-nbd's limit, advertised as the maximum block size): a larger read
// gets EINVAL; a larger write closes the connection (its payload is not
// read, so the stream is lost).
const MaxRequest = 32 << 20

// Protocol constants (doc/proto.md).
const (
	nbdMagic        = 0x4e42444d41474943 // "NBDMAGIC"
	optMagic        = 0x49484156454F5054 // "IHAVEOPT"
	optReplyMagic   = 0x3e889045565a9
	requestMagic    = 0x25609513
	simpleReplyMagc = 0x67446698

	flagFixedNewstyle = 1 << 0
	flagNoZeroes      = 1 << 1

	optExportName = 1
	optAbort      = 2
	optList       = 3
	optInfo       = 6
	optGo         = 7

	repAck        = 1
	repServer     = 2
	repInfo       = 3
	repErrUnsup   = 1<<31 + 1
	repErrInvalid = 1<<31 + 3
	repErrUnknown = 1<<31 + 6

	infoExport    = 0
	infoBlockSize = 3

	tFlagHasFlags     = 1 << 0
	tFlagReadOnly     = 1 << 1
	tFlagSendFlush    = 1 << 2
	tFlagSendFUA      = 1 << 3
	tFlagSendTrim     = 1 << 5
	tFlagWriteZeroes  = 1 << 6
	tFlagCanMultiConn = 1 << 8

	cmdRead        = 0
	cmdWrite       = 1
	cmdDisc        = 2
	cmdFlush       = 3
	cmdTrim        = 4
	cmdWriteZeroes = 6

	cmdFlagFUA = 1 << 0

	errPerm  = 1
	errIO    = 5
	errInval = 22
	errNoSpc = 28
)

// Server serves exports on listeners. Its zero value has no exports.
type Server struct {
	Exports []Export
	Log     *slog.Logger // nil: slog.Default()
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// export finds an export by name; "" is the first (the default export).
func (s *Server) export(name string) (*Export, bool) {
	for i := range s.Exports {
		if s.Exports[i].Name == name || (name == "" && i == 0) {
			return &s.Exports[i], true
		}
	}
	return nil, false
}

// Serve accepts connections on l until ctx ends or l fails, serving each
// on a goroutine of its own; it returns once every connection ended.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-ctx.Done(); l.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("nbd: accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stop := context.AfterFunc(ctx, func() { c.Close() })
			defer stop()
			if err := s.ServeConn(ctx, c); err != nil && ctx.Err() == nil {
				s.log().Warn("nbd connection ended", "remote", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// ServeConn negotiates with one client and serves its requests until it
// disconnects; it closes c.
func (s *Server) ServeConn(ctx context.Context, c net.Conn) error {
	defer c.Close()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	exp, err := s.negotiate(r, w)
	if err != nil || exp == nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	cn := &conn{s: s, exp: exp, r: r, nc: c, inflight: map[uint64]chan struct{}{}}
	return cn.transmit(ctx)
}

// negotiate runs the handshake and option haggling; it returns the
// export the client chose (nil: it aborted).
func (s *Server) negotiate(r *bufio.Reader, w *bufio.Writer) (*Export, error) {
	var hello [18]byte
	binary.BigEndian.PutUint64(hello[0:], nbdMagic)
	binary.BigEndian.PutUint64(hello[8:], optMagic)
	binary.BigEndian.PutUint16(hello[16:], flagFixedNewstyle|flagNoZeroes)
	w.Write(hello[:])
	if err := w.Flush(); err != nil {
		return nil, err
	}
	var cf [4]byte
	if _, err := io.ReadFull(r, cf[:]); err != nil {
		return nil, fmt.Errorf("nbd: client flags: %w", err)
	}
	clientFlags := binary.BigEndian.Uint32(cf[:])
	if clientFlags&flagFixedNewstyle == 0 {
		return nil, errors.New("nbd: the client does not speak fixed newstyle")
	}
	noZeroes := clientFlags&flagNoZeroes != 0
	for {
		var hdr [16]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, fmt.Errorf("nbd: option: %w", err)
		}
		if binary.BigEndian.Uint64(hdr[0:]) != optMagic {
			return nil, errors.New("nbd: bad option magic")
		}
		opt, n := binary.BigEndian.Uint32(hdr[8:]), binary.BigEndian.Uint32(hdr[12:])
		if n > 64<<10 {
			return nil, fmt.Errorf("nbd: option %d of %d bytes", opt, n)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("nbd: option data: %w", err)
		}
		switch opt {
		case optExportName:
			exp, ok := s.export(string(data))
			if !ok {
				return nil, fmt.Errorf("nbd: no export %q", data) // the protocol's answer: close
			}
			var b [10]byte
			binary.BigEndian.PutUint64(b[0:], exp.Device.Size())
			binary.BigEndian.PutUint16(b[8:], transmissionFlags(exp))
			w.Write(b[:])
			if !noZeroes {
				w.Write(make([]byte, 124))
			}
			return exp, w.Flush()
		case optAbort:
			reply(w, opt, repAck, nil)
			return nil, w.Flush()
		case optList:
			if n != 0 {
				reply(w, opt, repErrInvalid, []byte("list takes no data"))
				break
			}
			for _, e := range s.Exports {
				b := binary.BigEndian.AppendUint32(nil, uint32(len(e.Name)))
				b = append(b, e.Name...)
				b = append(b, e.Description...)
				reply(w, opt, repServer, b)
			}
			reply(w, opt, repAck, nil)
		case optInfo, optGo:
			exp, bad := s.infoRequest(data)
			switch {
			case bad != "":
				reply(w, opt, repErrInvalid, []byte(bad))
			case exp == nil:
				reply(w, opt, repErrUnknown, []byte("no such export"))
			default:
				b := binary.BigEndian.AppendUint16(nil, infoExport)
				b = binary.BigEndian.AppendUint64(b, exp.Device.Size())
				b = binary.BigEndian.AppendUint16(b, transmissionFlags(exp))
				reply(w, opt, repInfo, b)
				b = binary.BigEndian.AppendUint16(nil, infoBlockSize)
				b = binary.BigEndian.AppendUint32(b, 1)          // minimum
				b = binary.BigEndian.AppendUint32(b, 4096)       // preferred
				b = binary.BigEndian.AppendUint32(b, MaxRequest) // maximum
				reply(w, opt, repInfo, b)
				reply(w, opt, repAck, nil)
				if opt == optGo {
					return exp, w.Flush()
				}
			}
		default:
			reply(w, opt, repErrUnsup, nil)
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
}

// infoRequest parses NBD_OPT_INFO / NBD_OPT_GO data: the export name and
// the information requests (every client gets export and block size
// information whatever it asks). bad describes malformed data.
func (s *Server) infoRequest(data []byte) (exp *Export, bad string) {
	if len(data) < 6 {
		return nil, "short option"
	}
	n := binary.BigEndian.Uint32(data)
	if uint64(n)+6 > uint64(len(data)) {
		return nil, "name past the option's end"
	}
	name := string(data[4 : 4+n])
	reqs := binary.BigEndian.Uint16(data[4+n:])
	if int(4+n+2)+2*int(reqs) != len(data) {
		return nil, "information requests do not match the option's length"
	}
	e, ok := s.export(name)
	if !ok {
		return nil, ""
	}
	return e, ""
}

func transmissionFlags(e *Export) uint16 {
	f := uint16(tFlagHasFlags | tFlagSendFlush | tFlagSendFUA | tFlagSendTrim | tFlagWriteZeroes | tFlagCanMultiConn)
	if e.ReadOnly {
		f |= tFlagReadOnly
	}
	return f
}

// reply writes an option reply.
func reply(w *bufio.Writer, opt, typ uint32, data []byte) {
	var h [20]byte
	binary.BigEndian.PutUint64(h[0:], optReplyMagic)
	binary.BigEndian.PutUint32(h[8:], opt)
	binary.BigEndian.PutUint32(h[12:], typ)
	binary.BigEndian.PutUint32(h[16:], uint32(len(data)))
	w.Write(h[:])
	w.Write(data)
}

// conn is one client's transmission phase.
type conn struct {
	s     *Server
	exp   *Export
	r     *bufio.Reader
	slots chan struct{} // one per request read and not yet answered (MaxInFlight)

	nc net.Conn // replies go straight to it, those ready together in one writev

	// The replies ready and not yet written, and whether a request's
	// goroutine is writing them (send).
	rmu      sync.Mutex
	replies  []answer
	spare    []answer // the last batch written, reused for the next
	writing  bool
	writeBuf net.Buffers

	mu       sync.Mutex
	seq      uint64
	inflight map[uint64]chan struct{} // writes, trims and zeroes not yet answered
}

// request is one transmission-phase request.
type request struct {
	flags, typ uint16
	handle     uint64
	off        uint64
	length     uint32
	data       []byte // a write's payload
}

// transmit reads requests and runs each on a goroutine of its own, at
// most MaxInFlight at once, until the client disconnects.
func (c *conn) transmit(ctx context.Context) error {
	c.slots = make(chan struct{}, MaxInFlight)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait() // before cancel: requests in flight finish, and are answered
	for {
		var h [28]byte
		if _, err := io.ReadFull(c.r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("nbd: request: %w", err)
		}
		if binary.BigEndian.Uint32(h[0:]) != requestMagic {
			return errors.New("nbd: bad request magic: closing the connection")
		}
		q := request{flags: binary.BigEndian.Uint16(h[4:]), typ: binary.BigEndian.Uint16(h[6:]),
			handle: binary.BigEndian.Uint64(h[8:]), off: binary.BigEndian.Uint64(h[16:]), length: binary.BigEndian.Uint32(h[24:])}
		if q.typ == cmdDisc {
			return nil // the deferred wait lets the requests in flight finish
		}
		if q.typ == cmdWrite {
			if q.length > MaxRequest {
				return fmt.Errorf("nbd: write of %d bytes (at most %d): closing the connection", q.length, MaxRequest)
			}
			q.data = make([]byte, q.length)
			if _, err := io.ReadFull(c.r, q.data); err != nil {
				return fmt.Errorf("nbd: write payload: %w", err)
			}
		}
		var id uint64 // a modifying request's, in the flush tracking
		if q.typ != cmdRead && q.typ != cmdFlush {
			id = c.track()
		}
		var earlier []chan struct{}
		if q.typ == cmdFlush {
			earlier = c.pending()
		}
		c.slots <- struct{}{} // given back once the reply is written (send): a client that reads no replies stops being read
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := c.serve(ctx, q, earlier)
			if id != 0 {
				c.untrack(id) // its work is done: a flush behind it need not wait for its reply
			}
			c.send(a)
		}()
	}
}

// track registers a modifying request in flight; its id is never 0.
func (c *conn) track() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.inflight[c.seq] = make(chan struct{})
	return c.seq
}

// untrack marks request id answered.
func (c *conn) untrack(id uint64) {
	c.mu.Lock()
	ch := c.inflight[id]
	delete(c.inflight, id)
	c.mu.Unlock()
	close(ch)
}

// pending are the modifying requests in flight now, oldest first.
func (c *conn) pending() []chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]uint64, 0, len(c.inflight))
	for k := range c.inflight {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := make([]chan struct{}, len(keys))
	for i, k := range keys {
		out[i] = c.inflight[k]
	}
	return out
}

// serve runs one request and returns its reply. A flush first waits for
// the writes received before it (each is durable once done).
func (c *conn) serve(ctx context.Context, q request, earlier []chan struct{}) answer {
	dev, size := c.exp.Device, c.exp.Device.Size()
	end := q.off + uint64(q.length)
	inRange := end >= q.off && end <= size
	var data []byte
	errno := uint32(0)
	fail := func(code uint32, err error) {
		errno = code
		if err != nil {
			c.s.log().Warn("nbd request failed", "export", c.exp.Name, "type", q.typ, "offset", q.off, "length", q.length, "err", err)
		}
	}
	modifies := q.typ == cmdWrite || q.typ == cmdTrim || q.typ == cmdWriteZeroes
	switch {
	case modifies && c.exp.ReadOnly:
		fail(errPerm, nil)
	case q.typ == cmdRead:
		if !inRange || q.length > MaxRequest {
			fail(errInval, nil)
			break
		}
		data = bufpool.Get(int(q.length)) // back to the pool once the reply is written
		if err := dev.ReadAt(ctx, data, q.off); err != nil {
			fail(errIO, err)
		}
	case modifies && !inRange:
		fail(map[bool]uint32{true: errNoSpc, false: errInval}[q.typ == cmdWrite], nil)
	case q.typ == cmdWrite:
		if err := dev.WriteAt(ctx, q.data, q.off); err != nil {
			fail(errIO, err)
		}
	case q.typ == cmdTrim:
		if err := dev.Discard(ctx, q.off, uint64(q.length)); err != nil {
			fail(errIO, err)
		}
	case q.typ == cmdWriteZeroes:
		if err := dev.WriteZeroes(ctx, q.off, uint64(q.length)); err != nil {
			fail(errIO, err)
		}
	case q.typ == cmdFlush:
		for _, ch := range earlier {
			select {
			case <-ch:
			case <-ctx.Done():
				fail(errIO, ctx.Err())
			}
		}
		if errno == 0 {
			if err := dev.Flush(ctx); err != nil {
				fail(errIO, err)
			}
		}
	default:
		fail(errInval, nil)
	}
	if errno == 0 && modifies && q.flags&cmdFlagFUA != 0 {
		if err := dev.Flush(ctx); err != nil {
			fail(errIO, err)
		}
	}
	r := answer{buf: data}
	binary.BigEndian.PutUint32(r.h[0:], simpleReplyMagc)
	binary.BigEndian.PutUint32(r.h[4:], errno)
	binary.BigEndian.PutUint64(r.h[8:], q.handle)
	if errno == 0 && q.typ == cmdRead {
		r.data = data
	}
	return r
}

// answer is a reply ready to be written: its header, a read's data, and
// the pooled buffer to give back once it is written (or dropped with the
// connection).
type answer struct {
	h    [16]byte
	data []byte
	buf  []byte
}

// send queues r and, unless another request's goroutine is writing
// already (which then writes r too), writes every reply queued, in one
// writev per batch, until none is left: under load one system call
// answers several requests. Each reply written gives back its buffer and
// its request's slot. A failed write closes the connection: a reply lost
// or cut short must not leave the client waiting for it, nor reading the
// next one from its middle.
func (c *conn) send(r answer) {
	c.rmu.Lock()
	c.replies = append(c.replies, r)
	if c.writing {
		c.rmu.Unlock()
		return
	}
	c.writing = true
	for len(c.replies) > 0 {
		batch := c.replies
		c.replies = c.spare[:0]
		c.rmu.Unlock()
		bufs := c.writeBuf[:0]
		for i := range batch {
			bufs = append(bufs, batch[i].h[:])
			if len(batch[i].data) > 0 {
				bufs = append(bufs, batch[i].data)
			}
		}
		c.writeBuf = bufs[:0]
		if _, err := bufs.WriteTo(c.nc); err != nil {
			c.nc.Close()
		}
		clear(c.writeBuf[:cap(c.writeBuf)])
		for i := range batch {
			if batch[i].buf != nil {
				bufpool.Put(batch[i].buf)
			}
			batch[i] = answer{}
			<-c.slots
		}
		c.rmu.Lock()
		c.spare = batch[:0]
	}
	c.writing = false
	c.rmu.Unlock()
}
