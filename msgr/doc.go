// Package msgr is Shoal's messenger: authenticated, multiplexed request and
// reply over TCP between clients, OSDs and MONs (the role of Ceph's
// messenger, msgr2).
//
// # Protocol
//
// A connection starts with a handshake in which both ends prove knowledge
// of the entity's key from their keyring (HMAC-SHA256 over fresh nonces
// from both sides; the key never crosses the wire), so an unauthenticated
// peer — or an impostor server — is refused with ErrAuth before any
// message. Both ends then derive the session's keys from the entity key,
// the nonces, the names and the mode (HKDF-SHA256), one per direction, and
// exchange frames: a 32-byte header (magic, version, flags, message type,
// request id, the sender's OSD map epoch, payload length, a crc32c of the
// header), the payload, and in ModeCRC its crc32c (or 0 with flagNoCRC
// when the sender has no checksum for it) and an AES-GCM tag over all
// three (the payload by 64 or 4 KiB segments, frameCipher.crcTag) — in
// ModeSecure the payload encrypted and its tag. A tag's nonce counts the
// tags made in its direction, so an altered, injected,
// dropped, reordered or replayed frame fails, as does a corrupt one: the
// connection closes (ErrProtocol) and nothing is delivered. Sessions live
// Config.SessionTTL: a client then moves new requests to a new connection
// (new keys) and closes the old once answered. The reader of a large payload checks it 4 KiB block by
// block and keeps the blocks' checksums (Message.BlockSums) for a receiver
// that stores the data; a sender that already knows a part's checksum
// gives it (Checksum's known, ReplyVecThen's sums) and the frame's is
// combined from it instead of computed. The frame format is versioned; layers above define message
// types and payload encodings.
//
// # Client
//
// One Client per peer is shared by every goroutine: requests are
// multiplexed by id on one connection, replies may come in any order. Each
// Call honours its context (deadline or cancellation); a connection that
// breaks fails its calls with ErrConnReset (the request may or may not have
// run: the caller decides whether to resend) and the next Call reconnects,
// waiting 50 ms, 100 ms, … up to Config.MaxBackoff between attempts. The
// bytes of requests sent and not yet answered are bounded by
// Config.InflightBytes (Ceph's objecter_inflight_op_bytes, default 100 MiB):
// a Call that would exceed it waits, so a fast producer cannot queue
// unbounded memory.
//
// # Buffers and copies
//
// A payload is written with one vectored write (header, payload, checksum,
// tag) straight from the caller's buffer — batched with whatever else is
// queued on the connection — and read into a pooled, size-classed buffer
// that the receiver returns with Message.Release. A 4 MiB write therefore
// costs, in ModeCRC, one copy into the kernel and one out of it, and no
// steady-state allocation; a payload given in parts (CallVec, ReplyVec) is
// written from its parts too (a segment across a part boundary is copied
// into a segment-sized scratch for its tag; a large payload in many small
// parts, such as an EC read's 4 KiB stripe units, goes in 4 KiB segments
// so that few do), and ModeSecure encrypts a copy.
// A payload of 256 KiB or more is read straight from the socket in pieces
// checksummed while in cache, with a receive low-water mark (SO_RCVLOWAT)
// of what the frame still has to deliver, up to 1 MiB: the reader is
// woken once per MiB queued rather than per arriving segment (sockReader).
//
// # Server
//
// Listen accepts connections, authenticates them and runs the Handler for
// each request concurrently; a handler error reaches the caller as a
// *RemoteError carrying a code the layers above define. Close drops every
// connection at once (as a crash would), cancels the handlers' context and
// waits for all goroutines.
package msgr
