package msgr

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/shoal-project/shoal/internal/crc32c"
)

// Mode is how a session protects its frames once the handshake has
// proved both ends (Ceph's msgr2 ms_mode names):
//
//   - ModeCRC: payloads travel in the clear with their crc32c, and every
//     frame — header, payload (by segments) and checksum — carries an
//     AES-GCM authentication tag under the session's key: nobody on the path can
//     alter, inject, drop, reorder or replay a frame unnoticed.
//   - ModeSecure: payloads are also encrypted (AES-256-GCM, the header as
//     associated data).
//
// Either end may ask for secure; the session is secure if either does.
type Mode uint8

// Modes.
const (
	ModeCRC Mode = iota
	ModeSecure
)

// String is the mode's ms_mode name: "crc" or "secure".
func (m Mode) String() string {
	if m == ModeSecure {
		return "secure"
	}
	return "crc"
}

// ParseMode reads ms_mode: "crc" or "secure".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "crc", "":
		return ModeCRC, nil
	case "secure":
		return ModeSecure, nil
	}
	return 0, fmt.Errorf("msgr: ms_mode %q: want crc or secure", s)
}

// SessionConfig reads ms_mode and ms_session_ttl (seconds) into the
// messenger configuration base.
func SessionConfig(base Config, mode string, ttlSeconds float64) (Config, error) {
	m, err := ParseMode(mode)
	if err != nil {
		return base, err
	}
	base.Mode, base.SessionTTL = m, time.Duration(ttlSeconds*float64(time.Second))
	return base, nil
}

// tagLen is the GCM authentication tag's length in bytes.
const tagLen = 16

// sessionKeys derives a session's two keys, one per direction, from the
// entity key both ends proved, the handshake's fresh nonces, both names
// and the mode (HKDF-SHA256, RFC 5869): a new connection gets new keys,
// and the keys of one are worth nothing for another.
func sessionKeys(key, cn, sn []byte, cname, sname string, m Mode) (c2s, s2c []byte, err error) {
	salt := append(append([]byte{}, cn...), sn...)
	info := fmt.Sprintf("shoal-msgr-session v%d %s %s %s", handshakeVers, cname, sname, m)
	k, err := hkdf.Key(sha256.New, key, salt, info, 64)
	if err != nil {
		return nil, nil, err
	}
	return k[:32], k[32:], nil
}

// frameCipher protects one direction of a session: AES-256-GCM under the
// direction's key, with a nonce of a counter of the tags made in that
// direction, so a frame verifies only at its own place in the stream. One
// goroutine uses it (the connection's writer, or its reader).
type frameCipher struct {
	mode   Mode
	aead   cipher.AEAD
	seq    uint64
	nonce  [12]byte
	ad     [headerLen + 4]byte // ModeCRC: the header and checksum the tag covers
	tag    [headerLen + 4 + tagLen]byte
	segs   []byte // ModeCRC: the segment tags of the frame being made or checked
	gather []byte // ModeCRC: a segment across a payload's parts (up to segLen bytes)
}

// segLen is the size of the segments a crc session authenticates a
// frame's payload in (bytes; the last segment of a payload may be
// shorter). A segment that lies within one of the sender's buffers is
// tagged where it lies, and one that crosses a part boundary is first
// copied into a scratch: a payload sent in parts is never gathered into
// a buffer of its own size. A payload in many small parts (an EC read's
// 4 KiB stripe units, data-cache units behind a reply header) goes in
// segments of smallSegLen instead (flagSmallSegs, segmentFor), so that
// few of them cross parts. The receiver computes each segment's tag as it
// reads the segment, while it is in the CPU's cache. crc32c.Piece, the
// receiver's read unit, is a multiple of both sizes.
const (
	segLen      = 64 << 10
	smallSegLen = 4 << 10
)

// readFrame tags segments piece by piece: a piece must hold whole ones.
var (
	_ [0]struct{} = [crc32c.Piece % segLen]struct{}{}
	_ [0]struct{} = [crc32c.Piece % smallSegLen]struct{}{}
)

// segmentFor is the segment size a sender uses for a payload of n bytes
// in parts: smallSegLen when the payload is over 4 segments (256 KiB) and
// its parts' boundaries would make more than about a sixth of its 64 KiB
// segments cross parts (each such segment is copied whole), since a
// 4 KiB segment's tag costs about a sixth more than its share of a
// 64 KiB one's (a throwaway go test -bench of GCM's Seal, one core of
// the 2026-11-30 host: 11.3 against 13.0 GB/s). Payloads up to 256 KiB
// keep 64 KiB segments: their few gathers are small, and an A/B with 4 KiB
// segments for them saw 64 KiB S3 GETs on EC slower once, not repeated
// (docs/perf-log/datapath-2026-11-30.md).
func segmentFor(parts [][]byte, n int) int {
	if len(parts) > 2 && n > 4*segLen && (len(parts)-1)*6*segLen > n {
		return smallSegLen
	}
	return segLen
}

func newFrameCipher(key []byte, m Mode) (*frameCipher, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	return &frameCipher{mode: m, aead: g}, nil
}

// next is the nonce of the next tag.
func (c *frameCipher) next() []byte {
	binary.LittleEndian.PutUint64(c.nonce[4:], c.seq)
	c.seq++
	return c.nonce[:]
}

// ModeCRC's frame tag is a tag over the frame's header and checksum
// field and the tags of its payload's segments, each segment's tag
// being GCM's over that segment (as associated data, nothing encrypted)
// under the next nonce: sender and receiver take the same nonces in the
// same order (segments first, then the frame), and the segment tags
// themselves are not sent. A changed segment changes its tag (GCM's
// authenticator, under a nonce used once), and so fails the frame's tag.
// The calls, in order: resetSegs, addSeg for each segment (or
// addPartSegs), then crcTag or checkCRCTag.

// resetSegs starts a frame's segment tags. A list grown by a very large
// frame (more than 4,096 segments: 16 MiB in 4 KiB ones) is not kept, so
// an idle connection holds at most 64 KiB of them.
func (c *frameCipher) resetSegs() {
	if cap(c.segs) > 4096*tagLen {
		c.segs = nil
	}
	c.segs = c.segs[:0]
}

// addSeg adds the tag of the next segment, seg.
func (c *frameCipher) addSeg(seg []byte) {
	c.segs = c.aead.Seal(c.segs, c.next(), nil, seg)
}

// addPartSegs adds the tags of the segments of size seg (segLen or
// smallSegLen) of the concatenation of parts: a segment within one part
// where it lies, one across parts gathered first (at most seg bytes
// copied per part boundary).
func (c *frameCipher) addPartSegs(parts [][]byte, seg int) {
	n := 0 // bytes left to tag
	for _, p := range parts {
		n += len(p)
	}
	fill := 0 // bytes gathered of the segment being made
	for _, p := range parts {
		for len(p) > 0 {
			if fill == 0 {
				if k := min(seg, n); len(p) >= k {
					c.addSeg(p[:k])
					p, n = p[k:], n-k
					continue
				}
				if c.gather == nil {
					c.gather = make([]byte, segLen)
				}
			}
			k := copy(c.gather[fill:min(seg, fill+n)], p)
			p, n, fill = p[k:], n-k, fill+k
			if fill == seg || n == 0 {
				c.addSeg(c.gather[:fill])
				fill = 0
			}
		}
	}
}

// crcTag is ModeCRC's tag of a frame, over its header, checksum field
// and the segment tags added since resetSegs.
func (c *frameCipher) crcTag(hdr []byte, crc uint32) []byte {
	copy(c.ad[:headerLen], hdr)
	binary.LittleEndian.PutUint32(c.ad[headerLen:], crc)
	return c.tagOver(c.ad[:], c.segs)
}

// checkCRCTag verifies a received ModeCRC tag (after the payload's
// segments were added).
func (c *frameCipher) checkCRCTag(hdr []byte, crc uint32, tag []byte) error {
	return checkEqual(c.crcTag(hdr, crc), tag)
}

// tagOver is the tag authenticating small (at most headerLen+4 bytes: a
// header) and payload without encrypting them: GCM over the payload as
// associated data and small as the message, whose ciphertext is not sent
// (the receiver computes the same and compares tags, so the tag covers
// both). payload must be contiguous.
func (c *frameCipher) tagOver(small, payload []byte) []byte {
	out := c.aead.Seal(c.tag[:0], c.next(), small, payload)
	return out[len(out)-tagLen:]
}

// checkTag verifies a tag made by tagOver.
func (c *frameCipher) checkTag(small, payload, tag []byte) error {
	return checkEqual(c.tagOver(small, payload), tag)
}

// checkEqual compares a computed tag with a received one in constant
// time: ErrProtocol if they differ.
func checkEqual(want, got []byte) error {
	if subtle.ConstantTimeCompare(want, got) != 1 {
		return fmt.Errorf("%w: frame authentication failed (altered, injected or out of order)", ErrProtocol)
	}
	return nil
}

// seal encrypts buf[:n] in place (ModeSecure) and appends the tag:
// buf must have room for n+tagLen bytes.
func (c *frameCipher) seal(hdr, buf []byte, n int) []byte {
	return c.aead.Seal(buf[:0], c.next(), buf[:n], hdr)
}

// open decrypts and verifies buf (ciphertext and tag) in place.
func (c *frameCipher) open(hdr, buf []byte) ([]byte, error) {
	p, err := c.aead.Open(buf[:0], c.next(), buf, hdr)
	if err != nil {
		return nil, fmt.Errorf("%w: frame authentication failed (altered, injected or out of order)", ErrProtocol)
	}
	return p, nil
}
