package msgr

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"

	"io"

	"github.com/shoal-project/shoal/internal/bufpool"
	"github.com/shoal-project/shoal/internal/crc32c"
)

// Frame layout (little-endian), protocol version 2. A 32-byte header:
//
//	magic   [4]byte "SHM1"
//	version u8      protocol version of this frame
//	flags   u8      flagReply, flagError
//	type    u16     message type (defined by the layers above)
//	reqID   u64     matches a reply to its request
//	epoch   u32     the sender's OSD map epoch
//	length  u32     payload bytes
//	hcrc    u32     crc32c of the 28 bytes before it
//
// then, in a crc session (Mode), the payload, its crc32c (u32; 0 with
// flagNoCRC) and a 16-byte AES-GCM tag over header, checksum and the
// payload's segments (frameCipher.crcTag); in a secure session, the
// payload encrypted and its tag (the header is the associated data). A
// tag's nonce counts the tags made in its direction of the session, so a
// frame verifies nowhere else. A reply
// carries the request's reqID; an error reply's payload is a code (i32)
// and a message.
const (
	headerLen    = 32
	frameVersion = 2 // 2: a crc session's tag covers the payload's segment tags (64 or 4 KiB)
	flagReply    = 1 << 0
	flagError    = 1 << 1
	// flagNoCRC: a crc session's frame whose checksum field is 0, not
	// the payload's crc32c — the sender did not know it, and the tag
	// authenticates the payload anyway.
	flagNoCRC = 1 << 2
	// flagSmallSegs: a crc session's frame whose payload is authenticated
	// in segments of smallSegLen bytes rather than segLen (segmentFor).
	flagSmallSegs = 1 << 3
	// MaxPayload bounds one message (an object write of up to 64 MiB plus
	// its op encoding).
	MaxPayload = 96 << 20
)

var frameMagic = [4]byte{'S', 'H', 'M', '1'}

// ErrProtocol marks a malformed or corrupt frame: the connection is closed.
var ErrProtocol = errors.New("msgr: protocol error")

type header struct {
	flags  uint8
	typ    uint16
	reqID  uint64
	epoch  uint32
	length uint32
}

func (h *header) put(b []byte) {
	copy(b[0:4], frameMagic[:])
	b[4] = frameVersion
	b[5] = h.flags
	binary.LittleEndian.PutUint16(b[6:], h.typ)
	binary.LittleEndian.PutUint64(b[8:], h.reqID)
	binary.LittleEndian.PutUint32(b[16:], h.epoch)
	binary.LittleEndian.PutUint32(b[20:], h.length)
	binary.LittleEndian.PutUint32(b[24:], 0)
	binary.LittleEndian.PutUint32(b[28:], crc32c.Checksum(b[:28]))
}

func parseHeader(b []byte) (header, error) {
	if [4]byte(b[0:4]) != frameMagic {
		return header{}, fmt.Errorf("%w: bad magic %q", ErrProtocol, b[0:4])
	}
	if got, want := crc32c.Checksum(b[:28]), binary.LittleEndian.Uint32(b[28:]); got != want {
		return header{}, fmt.Errorf("%w: header checksum %08x, want %08x", ErrProtocol, got, want)
	}
	if b[4] != frameVersion {
		return header{}, fmt.Errorf("%w: frame version %d, this end speaks %d", ErrProtocol, b[4], frameVersion)
	}
	h := header{flags: b[5], typ: binary.LittleEndian.Uint16(b[6:]), reqID: binary.LittleEndian.Uint64(b[8:]),
		epoch: binary.LittleEndian.Uint32(b[16:]), length: binary.LittleEndian.Uint32(b[20:])}
	if h.length > MaxPayload {
		return header{}, fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrProtocol, h.length, MaxPayload)
	}
	return h, nil
}

// blockSumsMin is the payload size from which readFrame keeps the
// checksums of the payload's 4 KiB blocks (see Message.BlockSums).
const blockSumsMin = 64 << 10

// sockReadMin is the smallest payload (bytes) readFrame reads straight
// from the socket with a receive low-water mark (sockReader): a 64 KiB
// PUT's arrives in one or two segments, and a mark set and reset for it
// would only add system calls.
const sockReadMin = 256 << 10

// readFrame reads one frame and checks it with fc, the session's
// protection of this direction: the payload is read into a pooled buffer
// the caller must release with bufpool.Put. ModeCRC: the payload's
// crc32c unless the sender gave none (flagNoCRC), then the tag over
// header, checksum field and payload segments (each segment's tag taken
// as it is read); with keepSums, a payload of
// blockSumsMin bytes or more is checksummed block by block: sums holds
// the crc32c of each of its whole 4 KiB blocks (from its start),
// combined into the frame's checksum (a server's requests: data an OSD
// stores). ModeSecure: the ciphertext is decrypted and verified in
// place, and the block checksums, if kept, taken from the plaintext. With
// sr (nil: none) and r the connection's bufio.Reader, a payload of
// sockReadMin bytes or more is read straight from the socket once r's
// buffered bytes are used (sockReader).
func readFrame(r io.Reader, hdr []byte, keepSums bool, sr *sockReader, fc *frameCipher) (h header, payload []byte, sums []uint32, err error) {
	if _, err := io.ReadFull(r, hdr[:headerLen]); err != nil {
		return header{}, nil, nil, err
	}
	h, err = parseHeader(hdr[:headerLen])
	if err != nil {
		return header{}, nil, nil, err
	}
	trailer := 4 + tagLen
	if fc.mode == ModeSecure {
		trailer = tagLen
	}
	buf := bufpool.Get(int(h.length) + trailer)
	payload = buf[:h.length]
	fill := func(p []byte, more int) error { // more: bytes of the frame after p
		_, err := io.ReadFull(r, p)
		return err
	}
	if br, ok := r.(*bufio.Reader); ok && sr != nil && len(payload) >= sockReadMin {
		fill = func(p []byte, more int) error {
			n, _ := br.Read(p[:min(len(p), br.Buffered())]) // no system call
			if n == len(p) {
				return nil
			}
			return sr.readFull(p[n:], more)
		}
		defer sr.reset()
	}
	fail := func(err error) (header, []byte, []uint32, error) {
		bufpool.Put(buf)
		return header{}, nil, nil, err
	}
	if fc.mode == ModeSecure {
		for off := 0; off < len(buf[:int(h.length)+trailer]); {
			end := min(off+crc32c.Piece, int(h.length)+trailer)
			if err := fill(buf[off:end], int(h.length)+trailer-end); err != nil {
				return fail(err)
			}
			off = end
		}
		if _, err := fc.open(hdr[:headerLen], buf[:int(h.length)+trailer]); err != nil {
			return fail(err)
		}
		if keepSums && len(payload) >= blockSumsMin {
			sums = crc32c.BlockSums(make([]uint32, 0, len(payload)/crc32c.Block), payload)
		}
		return h, payload, sums, nil
	}
	if keepSums && len(payload) >= blockSumsMin {
		sums = make([]uint32, 0, len(payload)/crc32c.Block)
	}
	// Read and checksum piece by piece: each piece is checksummed while
	// the read's copy has left it in the CPU's cache, instead of one pass
	// over the whole payload from memory afterwards. A frame without a
	// checksum (flagNoCRC) is checksummed only for the block sums kept:
	// the tag authenticates it.
	check := h.flags&flagNoCRC == 0
	var got uint32
	seg := segLen
	if h.flags&flagSmallSegs != 0 {
		seg = smallSegLen
	}
	fc.resetSegs()
	for off := 0; off < len(payload); {
		end := min(off+crc32c.Piece, len(payload))
		if err := fill(payload[off:end], len(buf)-end); err != nil {
			return fail(err)
		}
		if sums != nil {
			sums = crc32c.BlockSums(sums, payload[off:end])
		} else if check {
			got = crc32c.Update(got, payload[off:end])
		}
		for s := off; s < end; s += seg { // off is a multiple of seg
			fc.addSeg(payload[s:min(s+seg, end)])
		}
		off = end
	}
	if err := fill(buf[h.length:], 0); err != nil {
		return fail(err)
	}
	want := binary.LittleEndian.Uint32(buf[h.length:])
	if check {
		if sums != nil {
			got = crc32c.FromBlocks(sums, payload)
		}
		if got != want {
			return fail(fmt.Errorf("%w: payload checksum %08x, want %08x", ErrProtocol, got, want))
		}
	}
	if err := fc.checkCRCTag(hdr[:headerLen], want, buf[int(h.length)+4:int(h.length)+trailer]); err != nil {
		return fail(err)
	}
	return h, payload, sums, nil
}
