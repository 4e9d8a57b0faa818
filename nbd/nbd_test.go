package nbd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// memDevice is a Device in memory. A write to an offset in block holds
// until that offset's channel is closed (to order a flush against it).
type memDevice struct {
	mu      sync.Mutex
	data    []byte
	flushes int
	block   map[uint64]chan struct{}
}

func (d *memDevice) Size() uint64 { return uint64(len(d.data)) }
func (d *memDevice) ReadAt(_ context.Context, p []byte, off uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(p, d.data[off:])
	return nil
}
func (d *memDevice) WriteAt(_ context.Context, p []byte, off uint64) error {
	d.mu.Lock()
	ch := d.block[off]
	d.mu.Unlock()
	if ch != nil {
		<-ch
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(d.data[off:], p)
	return nil
}
func (d *memDevice) Discard(_ context.Context, off, n uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.data[off : off+n])
	return nil
}
func (d *memDevice) WriteZeroes(ctx context.Context, off, n uint64) error {
	return d.Discard(ctx, off, n)
}
func (d *memDevice) Flush(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushes++
	return nil
}

// client is a minimal NBD client, written from the protocol document.
type client struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	size uint64
	tf   uint16
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := &client{t: t, c: c, r: bufio.NewReader(c)}
	var hello [18]byte
	if _, err := io.ReadFull(cl.r, hello[:]); err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint64(hello[0:]) != nbdMagic || binary.BigEndian.Uint64(hello[8:]) != optMagic || binary.BigEndian.Uint16(hello[16:])&flagFixedNewstyle == 0 {
		t.Fatalf("greeting % x", hello)
	}
	c.Write(binary.BigEndian.AppendUint32(nil, flagFixedNewstyle|flagNoZeroes))
	return cl
}

func (cl *client) option(opt uint32, data []byte) {
	b := binary.BigEndian.AppendUint64(nil, optMagic)
	b = binary.BigEndian.AppendUint32(b, opt)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	cl.c.Write(append(b, data...))
}

// optReply reads one option reply: its type and data.
func (cl *client) optReply(opt uint32) (uint32, []byte) {
	cl.t.Helper()
	var h [20]byte
	if _, err := io.ReadFull(cl.r, h[:]); err != nil {
		cl.t.Fatal(err)
	}
	if binary.BigEndian.Uint64(h[0:]) != optReplyMagic || binary.BigEndian.Uint32(h[8:]) != opt {
		cl.t.Fatalf("option reply % x", h)
	}
	data := make([]byte, binary.BigEndian.Uint32(h[16:]))
	io.ReadFull(cl.r, data)
	return binary.BigEndian.Uint32(h[12:]), data
}

func goData(name string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
	b = append(b, name...)
	return binary.BigEndian.AppendUint16(b, 0)
}

// goTo selects export name with NBD_OPT_GO; false if the server refused.
func (cl *client) goTo(name string) bool {
	cl.t.Helper()
	cl.option(optGo, goData(name))
	for {
		typ, data := cl.optReply(optGo)
		switch typ {
		case repInfo:
			if binary.BigEndian.Uint16(data) == infoExport {
				cl.size, cl.tf = binary.BigEndian.Uint64(data[2:]), binary.BigEndian.Uint16(data[10:])
			}
		case repAck:
			return true
		case repErrUnknown:
			return false
		default:
			cl.t.Fatalf("go: reply type %#x", typ)
		}
	}
}

func (cl *client) send(typ, flags uint16, handle, off uint64, length uint32, data []byte) {
	b := binary.BigEndian.AppendUint32(nil, requestMagic)
	b = binary.BigEndian.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint64(b, handle)
	b = binary.BigEndian.AppendUint64(b, off)
	b = binary.BigEndian.AppendUint32(b, length)
	cl.c.Write(append(b, data...))
}

// recv reads one simple reply; reads' data (n bytes) comes with it when
// the handle is in reads.
func (cl *client) recv(reads map[uint64]uint32) (handle uint64, errno uint32, data []byte) {
	cl.t.Helper()
	var h [16]byte
	if _, err := io.ReadFull(cl.r, h[:]); err != nil {
		cl.t.Fatal(err)
	}
	if binary.BigEndian.Uint32(h[0:]) != simpleReplyMagc {
		cl.t.Fatalf("reply % x", h)
	}
	handle, errno = binary.BigEndian.Uint64(h[8:]), binary.BigEndian.Uint32(h[4:])
	if n, ok := reads[handle]; ok && errno == 0 {
		data = make([]byte, n)
		if _, err := io.ReadFull(cl.r, data); err != nil {
			cl.t.Fatal(err)
		}
	}
	return handle, errno, data
}

func serve(t *testing.T, exports ...Export) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Exports: exports}).Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}

// TestNegotiation: LIST names the exports; INFO and GO describe the one
// asked for (size and flags), or answer NBD_REP_ERR_UNKNOWN and go on
// negotiating; an unsupported option gets NBD_REP_ERR_UNSUP; the old
// EXPORT_NAME selects an export too.
func TestNegotiation(t *testing.T) {
	disk := &memDevice{data: make([]byte, 1<<20)}
	addr := serve(t, Export{Name: "disk", Device: disk}, Export{Name: "ro", Device: disk, ReadOnly: true})
	cl := dial(t, addr)
	cl.option(optList, nil)
	var names []string
	for {
		typ, data := cl.optReply(optList)
		if typ == repAck {
			break
		}
		n := binary.BigEndian.Uint32(data)
		names = append(names, string(data[4:4+n]))
	}
	if fmt.Sprint(names) != "[disk ro]" {
		t.Fatalf("list: %v", names)
	}
	cl.option(8, nil) // NBD_OPT_STRUCTURED_REPLY: simple replies only
	if typ, _ := cl.optReply(8); typ != repErrUnsup {
		t.Fatalf("structured reply option: %#x", typ)
	}
	cl.option(optInfo, goData("nope"))
	if typ, _ := cl.optReply(optInfo); typ != repErrUnknown {
		t.Fatalf("info of no export: %#x", typ)
	}
	if cl.goTo("nope") {
		t.Fatal("go to no export accepted")
	}
	if !cl.goTo("ro") || cl.size != 1<<20 || cl.tf&tFlagReadOnly == 0 || cl.tf&tFlagCanMultiConn == 0 {
		t.Fatalf("go ro: size %d flags %#x", cl.size, cl.tf)
	}
	cl.send(cmdWrite, 0, 1, 0, 4, []byte("nope"))
	if _, errno, _ := cl.recv(nil); errno != errPerm {
		t.Fatalf("write to a read-only export: errno %d", errno)
	}
	// the old way in: NBD_OPT_EXPORT_NAME
	old := dial(t, addr)
	old.option(optExportName, []byte("disk"))
	var b [10]byte
	if _, err := io.ReadFull(old.r, b[:]); err != nil || binary.BigEndian.Uint64(b[:]) != 1<<20 {
		t.Fatalf("export name reply % x %v", b, err)
	}
	old.send(cmdRead, 0, 9, 0, 4, nil)
	if h, errno, _ := old.recv(map[uint64]uint32{9: 4}); h != 9 || errno != 0 {
		t.Fatalf("read after export name: %d %d", h, errno)
	}
}

// TestTransmission: writes and reads, trim and write-zeroes, requests
// past the end and unknown commands (their errors, the connection goes
// on), replies out of order, a flush answered only after the write
// received before it, FUA flushing, and a connection with a bad request
// magic closed while another is served on.
func TestTransmission(t *testing.T) {
	disk := &memDevice{data: make([]byte, 1<<20), block: map[uint64]chan struct{}{}}
	release := make(chan struct{})
	disk.block[8192] = release // the write at 8192 waits for release
	addr := serve(t, Export{Name: "disk", Device: disk})
	cl := dial(t, addr)
	if !cl.goTo("disk") {
		t.Fatal("go refused")
	}
	data := bytes.Repeat([]byte("shoal!"), 1000)
	cl.send(cmdWrite, 0, 1, 100, uint32(len(data)), data)
	if h, errno, _ := cl.recv(nil); h != 1 || errno != 0 {
		t.Fatalf("write: handle %d errno %d", h, errno)
	}
	// in flight together: a write held by the device, a flush behind it,
	// a read, requests past the end, an unknown command
	cl.send(cmdWrite, 0, 2, 8192, 4, []byte("slow"))
	cl.send(cmdFlush, 0, 3, 0, 0, nil)
	cl.send(cmdRead, 0, 4, 100, uint32(len(data)), nil)
	cl.send(cmdRead, 0, 5, 1<<20-2, 4, nil)             // past the end
	cl.send(cmdWrite, 0, 6, 1<<20-2, 4, []byte("xxxx")) // past the end
	cl.send(42, 0, 7, 0, 0, nil)                        // no such command
	reads := map[uint64]uint32{4: uint32(len(data)), 5: 4}
	got := map[uint64]uint32{}
	var order []uint64
	recv := func() {
		h, errno, d := cl.recv(reads)
		got[h], order = errno, append(order, h)
		if h == 4 && (errno != 0 || !bytes.Equal(d, data)) {
			t.Fatalf("read back: errno %d", errno)
		}
	}
	for range 4 {
		recv()
	}
	cl.send(cmdTrim, 0, 8, 100, 6, nil)
	recv()
	if got[5] != errInval || got[6] != errNoSpc || got[7] != errInval || got[8] != 0 {
		t.Fatalf("errnos %v", got)
	}
	if _, ok := got[3]; ok {
		t.Fatalf("the flush was answered before the write received before it: order %v", order)
	}
	close(release)
	recv()
	recv()
	if order[len(order)-2] != 2 || order[len(order)-1] != 3 || got[2] != 0 || got[3] != 0 {
		t.Fatalf("slow write then flush: order %v errnos %v", order, got)
	}
	// the trim zeroed what it covered; FUA flushes
	disk.mu.Lock()
	flushes := disk.flushes
	trimmed := bytes.Equal(disk.data[100:106], make([]byte, 6))
	disk.mu.Unlock()
	if !trimmed {
		t.Fatal("trim left data")
	}
	cl.send(cmdWriteZeroes, cmdFlagFUA, 10, 0, 4096, nil)
	if _, errno, _ := cl.recv(nil); errno != 0 {
		t.Fatalf("write zeroes: %d", errno)
	}
	disk.mu.Lock()
	if disk.flushes != flushes+1 {
		t.Fatalf("FUA write-zeroes: %d flushes, want %d", disk.flushes, flushes+1)
	}
	disk.mu.Unlock()
	// a bad magic closes that connection only
	other := dial(t, addr)
	if !other.goTo("disk") {
		t.Fatal("go refused")
	}
	cl.c.Write(make([]byte, 28))
	if _, err := cl.r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after a bad magic the connection is open: %v", err)
	}
	other.send(cmdRead, 0, 1, 8192, 4, nil)
	if _, errno, d := other.recv(map[uint64]uint32{1: 4}); errno != 0 || string(d) != "slow" {
		t.Fatalf("the other connection: %d %q", errno, d)
	}
	other.send(cmdDisc, 0, 2, 0, 0, nil)
	other.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := other.r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("after NBD_CMD_DISC: %v", err)
	}
}

// TestClient: the package's client against its server — an unknown
// export refused, a write read back, a flush, the server's errno on a
// read past the end.
func TestClient(t *testing.T) {
	disk := &memDevice{data: make([]byte, 64<<10)}
	addr := serve(t, Export{Name: "disk", Device: disk})
	if _, err := Dial("tcp", addr, "nope"); err == nil {
		t.Fatal("dial of no export succeeded")
	}
	cl, err := Dial("tcp", addr, "disk")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if cl.Size() != 64<<10 {
		t.Fatalf("size %d", cl.Size())
	}
	if err := cl.WriteAt([]byte("block device"), 4090, true); err != nil {
		t.Fatal(err)
	}
	if err := cl.Flush(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 12)
	if err := cl.ReadAt(got, 4090); err != nil || string(got) != "block device" {
		t.Fatalf("read back %q %v", got, err)
	}
	var e *Error
	if err := cl.ReadAt(got, 64<<10-4); !errors.As(err, &e) || e.Errno != errInval {
		t.Fatalf("read past the end: %v", err)
	}
	if err := cl.ReadAt(got, 0); err != nil {
		t.Fatalf("after an error the connection goes on: %v", err)
	}
}

// gatedDevice holds every read until n have arrived, so that their
// replies are ready together and written in batches.
type gatedDevice struct {
	*memDevice
	n       int
	mu      sync.Mutex
	arrived int
	open    chan struct{}
}

func (d *gatedDevice) ReadAt(ctx context.Context, p []byte, off uint64) error {
	d.mu.Lock()
	d.arrived++
	if d.arrived == d.n {
		close(d.open)
	}
	d.mu.Unlock()
	<-d.open
	return d.memDevice.ReadAt(ctx, p, off)
}

// TestRepliesTogether: reads of many sizes in flight at once, released
// together so that their replies are written in batches from pooled
// buffers: each is answered once, with its own bytes (a buffer returned
// to the pool before its reply was written would show another read's).
func TestRepliesTogether(t *testing.T) {
	const n = 48
	mem := &memDevice{data: make([]byte, 4<<20)}
	for i := range mem.data {
		mem.data[i] = byte(i*7 + i>>12)
	}
	disk := &gatedDevice{memDevice: mem, n: n, open: make(chan struct{})}
	cl := dial(t, serve(t, Export{Name: "disk", Device: disk}))
	if !cl.goTo("disk") {
		t.Fatal("go refused")
	}
	reads := map[uint64]uint32{}
	offs := map[uint64]uint64{}
	for h := uint64(1); h <= n; h++ {
		length := uint32(1 + (h*4099)%(96<<10))
		off := (h * 65537) % (uint64(len(mem.data)) - uint64(length))
		reads[h], offs[h] = length, off
		cl.send(cmdRead, 0, h, off, length, nil)
	}
	cl.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	seen := map[uint64]bool{}
	for range n {
		h, errno, d := cl.recv(reads)
		if errno != 0 || seen[h] || reads[h] == 0 {
			t.Fatalf("reply for handle %d: errno %d, seen before %v", h, errno, seen[h])
		}
		seen[h] = true
		if want := mem.data[offs[h] : offs[h]+uint64(reads[h])]; !bytes.Equal(d, want) {
			t.Fatalf("read %d (%d bytes at %d): other bytes than the device's", h, reads[h], offs[h])
		}
	}
	cl.send(cmdRead, 0, n+1, 10, 5, nil)
	if h, errno, d := cl.recv(map[uint64]uint32{n + 1: 5}); h != n+1 || errno != 0 || !bytes.Equal(d, mem.data[10:15]) {
		t.Fatalf("a read after the batch: handle %d errno %d", h, errno)
	}
}
