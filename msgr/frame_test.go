package msgr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"testing"
)

func encodeFrame(h header, payload []byte) []byte {
	b := make([]byte, headerLen)
	h.length = uint32(len(payload))
	h.put(b)
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
}

// Frames round-trip; any damage to header or payload is caught by its
// checksum, never delivered.
func TestFrameChecksums(t *testing.T) {
	f := encodeFrame(header{flags: flagReply, typ: 7, reqID: 42, epoch: 9}, []byte("payload bytes"))
	h, p, err := readFrame(bytes.NewReader(f), make([]byte, headerLen))
	if err != nil || h.typ != 7 || h.reqID != 42 || h.epoch != 9 || string(p) != "payload bytes" {
		t.Fatalf("round trip: %+v %q %v", h, p, err)
	}
	for i := range f {
		bad := append([]byte(nil), f...)
		bad[i] ^= 0x10
		if _, _, err := readFrame(bytes.NewReader(bad), make([]byte, headerLen)); !errors.Is(err, ErrProtocol) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("flipped byte %d delivered: %v", i, err)
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(encodeFrame(header{typ: 1, reqID: 1}, []byte("x")))
	f.Add([]byte("SHM1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := readFrame(bytes.NewReader(b), make([]byte, headerLen))
		if err == nil && (int(h.length) != len(p) || len(b) < headerLen+len(p)+4) {
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
	c := newConn(a, "test", 0)
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
