package msgr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"testing"

	"github.com/shoal-project/shoal/internal/bufpool"
)

// testKey is the session key of the frames these tests make.
var testKey = bytes.Repeat([]byte{7}, 32)

// cipherAt is one direction's protection in mode m at sequence number seq.
func cipherAt(m Mode, seq uint64) *frameCipher {
	fc, err := newFrameCipher(testKey, m)
	if err != nil {
		panic(err)
	}
	fc.seq = seq
	return fc
}

// encodeFrameMode is the next frame of the session direction out, as a
// connection's writer makes it.
func encodeFrameMode(out *frameCipher, h header, payload []byte) []byte {
	return encodeOut(out, &outFrame{h: h, payload: payload})
}

// encodeOut is frame f, the next of the session direction out.
func encodeOut(fc *frameCipher, f *outFrame) []byte {
	c := &conn{sess: &session{out: fc}}
	bufs, scratch := c.appendFrame(nil, nil, f)
	var out []byte
	for _, b := range bufs {
		out = append(out, b...)
	}
	for _, b := range scratch {
		bufpool.Put(b)
	}
	return out
}

// encodeFrame is the first frame of a ModeCRC session.
func encodeFrame(h header, payload []byte) []byte {
	return encodeFrameMode(cipherAt(ModeCRC, 0), h, payload)
}

// in is the receiving side of encodeFrame's session, at its first frame.
func in() *frameCipher { return cipherAt(ModeCRC, 0) }

// Frames round-trip; any damage to header or payload is caught by its
// checksum, never delivered.
func TestFrameChecksums(t *testing.T) {
	f := encodeFrame(header{flags: flagReply, typ: 7, reqID: 42, epoch: 9}, []byte("payload bytes"))
	h, p, _, err := readFrame(bytes.NewReader(f), make([]byte, headerLen), false, nil, in())
	if err != nil || h.typ != 7 || h.reqID != 42 || h.epoch != 9 || string(p) != "payload bytes" {
		t.Fatalf("round trip: %+v %q %v", h, p, err)
	}
	for i := range f {
		bad := append([]byte(nil), f...)
		bad[i] ^= 0x10
		if _, _, _, err := readFrame(bytes.NewReader(bad), make([]byte, headerLen), i%2 == 0, nil, in()); !errors.Is(err, ErrProtocol) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("flipped byte %d delivered: %v", i, err)
		}
	}
}

// The checksum field carries the payload's crc32c only when the sender
// knows it (else flagNoCRC and 0: the tag authenticates the payload); a
// known checksum that is not the bytes' — data changed after its
// checksum was taken — is refused though the tag verifies.
func TestFrameChecksumOnlyWhenKnown(t *testing.T) {
	payload := []byte("payload bytes")
	f := encodeFrame(header{typ: 1}, payload)
	if f[5]&flagNoCRC == 0 || binary.LittleEndian.Uint32(f[headerLen+len(payload):]) != 0 {
		t.Fatalf("a frame whose sender has no checksum: flags %#x, checksum field %08x", f[5], binary.LittleEndian.Uint32(f[headerLen+len(payload):]))
	}
	if _, p, _, err := readFrame(bytes.NewReader(f), make([]byte, headerLen), false, nil, in()); err != nil || string(p) != string(payload) {
		t.Fatalf("without a checksum: %q %v", p, err)
	}
	sum := crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli))
	f = encodeOut(cipherAt(ModeCRC, 0), &outFrame{h: header{typ: 1}, payload: payload, sum: sum, hasSum: true})
	if f[5]&flagNoCRC != 0 || binary.LittleEndian.Uint32(f[headerLen+len(payload):]) != sum {
		t.Fatalf("a frame with its sender's checksum: flags %#x, checksum field %08x, want %08x", f[5], binary.LittleEndian.Uint32(f[headerLen+len(payload):]), sum)
	}
	for _, keep := range []bool{false, true} {
		if _, _, _, err := readFrame(bytes.NewReader(f), make([]byte, headerLen), keep, nil, in()); err != nil {
			t.Fatalf("with the checksum (keepSums %v): %v", keep, err)
		}
	}
	f = encodeOut(cipherAt(ModeCRC, 0), &outFrame{h: header{typ: 1}, payload: payload, sum: sum ^ 1, hasSum: true})
	if _, _, _, err := readFrame(bytes.NewReader(f), make([]byte, headerLen), false, nil, in()); !errors.Is(err, ErrProtocol) {
		t.Fatalf("a checksum that is not the payload's: %v", err)
	}
}

// A large payload is checked block by block: the reader keeps each whole
// 4 KiB block's crc32c, and damage anywhere — a whole block, the partial
// last one, the trailing checksum — is still caught.
func TestFrameBlockSums(t *testing.T) {
	payload := make([]byte, 50*4096+123)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	f := encodeFrame(header{typ: 3, reqID: 1}, payload)
	if _, _, sums, err := readFrame(bytes.NewReader(f), make([]byte, headerLen), false, nil, in()); err != nil || sums != nil {
		t.Fatalf("without keepSums: %d sums, %v", len(sums), err)
	}
	_, p, sums, err := readFrame(bytes.NewReader(f), make([]byte, headerLen), true, nil, in())
	if err != nil || !bytes.Equal(p, payload) {
		t.Fatalf("round trip: %v", err)
	}
	if len(sums) != 50 {
		t.Fatalf("%d block sums, want 50", len(sums))
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	for i, s := range sums {
		if want := crc32.Checksum(payload[i*4096:(i+1)*4096], tab); s != want {
			t.Fatalf("block %d: sum %08x, want %08x", i, s, want)
		}
	}
	m := &Message{Payload: p, sums: sums}
	if got := m.BlockSums(p[8192 : 8192+3*4096+5]); len(got) != 3 || got[0] != sums[2] {
		t.Fatalf("BlockSums of blocks 2-4 and a bit: %v", got)
	}
	if got := m.BlockSums(p[100:20000]); got != nil {
		t.Fatalf("BlockSums of an unaligned slice: %v", got)
	}
	if got := m.BlockSums(make([]byte, 8192)); got != nil {
		t.Fatalf("BlockSums of another buffer: %v", got)
	}
	for _, i := range []int{headerLen, headerLen + 4096*17 + 99, headerLen + len(payload) - 1, len(f) - 1} {
		bad := append([]byte(nil), f...)
		bad[i] ^= 0x01
		if _, _, _, err := readFrame(bytes.NewReader(bad), make([]byte, headerLen), true, nil, in()); !errors.Is(err, ErrProtocol) {
			t.Fatalf("flipped byte %d delivered: %v", i, err)
		}
	}
}

// A payload sent in parts is authenticated segment by segment where its
// parts lie: whatever the parts' sizes (empty, smaller than a segment,
// straddling segment boundaries), no part is copied into a buffer of the
// payload's size, the reader gets the payload back, and every layout that
// takes the same segment size (64 KiB for one or two parts, 4 KiB for
// many: segmentFor) makes the same frame byte for byte, so segments
// follow the payload, not the parts. A byte changed anywhere, or two
// equal-sized segments swapped, fails the frame's tag, in both sizes.
func TestFramePartsSegments(t *testing.T) {
	payload := make([]byte, 5*segLen+4096*5+77)
	for i := range payload {
		payload[i] = byte(i*31 + i>>9)
	}
	if segmentFor([][]byte{payload[:4096], payload[4096 : 2*4096], payload[2*4096 : 4*segLen]}, 4*segLen) != segLen {
		t.Fatalf("a payload of 4 segments in parts takes small segments")
	}
	layouts := []struct {
		name  string
		sizes []int // part sizes, the rest in a last part
		small bool  // segmentFor picks smallSegLen
	}{
		{"one part", nil, false},
		{"header then data", []int{96}, false},
		{"stripe units", []int{4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096}, true},
		{"empty parts", []int{0, 10, 0, segLen - 10, 0, 0}, true},
		{"across two segments", []int{segLen - 1, segLen + 2}, true},
		{"exactly segments", []int{segLen, segLen, segLen, segLen, segLen}, true},
		{"tiny then very large", []int{1, 2, 3, 2*segLen + 5}, true},
		{"units behind a header", []int{100, 4096, 4096, 4096, 4095, 4097, 4096}, true},
	}
	want := map[bool][]byte{}
	for _, l := range layouts {
		var parts [][]byte
		rest := payload
		for _, n := range l.sizes {
			parts, rest = append(parts, rest[:n]), rest[n:]
		}
		parts = append(parts, rest)
		if got := segmentFor(parts, len(payload)) == smallSegLen; got != l.small {
			t.Fatalf("%s: small segments %t, want %t", l.name, got, l.small)
		}
		c := &conn{sess: &session{out: cipherAt(ModeCRC, 0)}}
		bufs, scratch := c.appendFrame(nil, nil, &outFrame{h: header{typ: 4, reqID: 9}, parts: parts})
		if len(scratch) != 0 {
			t.Fatalf("%s: %d pooled buffers: the payload was gathered", l.name, len(scratch))
		}
		var f []byte
		for _, b := range bufs {
			f = append(f, b...)
		}
		if got := f[5]&flagSmallSegs != 0; got != l.small {
			t.Fatalf("%s: flagSmallSegs %t, want %t", l.name, got, l.small)
		}
		if w, ok := want[l.small]; !ok {
			want[l.small] = f
		} else if !bytes.Equal(f, w) {
			t.Fatalf("%s: the frame differs from another layout's with the same segment size", l.name)
		}
		if _, p, _, err := readFrame(bytes.NewReader(f), make([]byte, headerLen), false, nil, in()); err != nil || !bytes.Equal(p, payload) {
			t.Fatalf("%s: round trip: %v", l.name, err)
		}
	}
	if !bytes.Equal(want[false], encodeFrame(header{typ: 4, reqID: 9}, payload)) {
		t.Fatalf("the frame of one part differs from the frame of the payload")
	}
	for small, f := range want {
		for _, i := range []int{5, headerLen, headerLen + smallSegLen, headerLen + segLen - 1, headerLen + segLen, headerLen + 2*segLen + 4096, headerLen + len(payload) - 1} {
			bad := append([]byte(nil), f...)
			bad[i] ^= 0x08
			if _, _, _, err := readFrame(bytes.NewReader(bad), make([]byte, headerLen), false, nil, in()); !errors.Is(err, ErrProtocol) {
				t.Fatalf("small %t: flipped byte %d delivered: %v", small, i, err)
			}
		}
		seg := segLen
		if small {
			seg = smallSegLen
		}
		swapped := append([]byte(nil), f...)
		copy(swapped[headerLen:], f[headerLen+seg:headerLen+2*seg])
		copy(swapped[headerLen+seg:], f[headerLen:headerLen+seg])
		if _, _, _, err := readFrame(bytes.NewReader(swapped), make([]byte, headerLen), false, nil, in()); !errors.Is(err, ErrProtocol) {
			t.Fatalf("small %t: segments 0 and 1 swapped delivered: %v", small, err)
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(encodeFrame(header{typ: 1, reqID: 1}, []byte("x")))
	f.Add([]byte("SHM1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, _, err := readFrame(bytes.NewReader(b), make([]byte, headerLen), len(b)%2 == 0, nil, in())
		if err == nil && (int(h.length) != len(p) || len(b) < headerLen+len(p)+4+tagLen) {
			t.Fatalf("accepted a frame longer than its input")
		}
	})
}

// TestSendAfterCloseReleased: frames sent to a connection that has closed
// and whose writer has drained its queue are released (their sent channel
// closed), whichever case send's select picks; a caller whose context
// ends waits for that release and once hung on it.
func TestSendAfterCloseReleased(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := newConn(a, &session{peer: "test", out: cipherAt(ModeCRC, 0), in: in()}, 0)
	done := make(chan struct{})
	go func() { c.writer(); close(done) }()
	c.close(errors.New("test"))
	<-done // the writer drained and returned
	for i := range 1000 {
		f := &outFrame{sent: make(chan struct{})}
		if c.send(f) != nil { // refused: the caller does not wait for it
			continue
		}
		select {
		case <-f.sent:
		default:
			t.Fatalf("frame %d sent after close was never released", i)
		}
	}
}
