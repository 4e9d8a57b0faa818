package rgw

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Server-side encryption (S3's SSE-C and SSE-S3). The gateway encrypts
// an object's bytes before they leave it and decrypts them after they
// come back: no OSD ever holds them in the clear.
//
//   - Cipher: AES-256 in CTR mode (Go's crypto/aes and crypto/cipher),
//     the counter of byte b of a stream being IV + b/16, so any range
//     decrypts on its own. A simple upload is one stream (head and tails)
//     with the object's IV; each multipart part is a stream of its own
//     with the part's IV (segment.IV). IVs are random (crypto/rand). CTR
//     gives no integrity of its own (RGW's AES-256-CBC neither): the
//     stores' checksums catch decay, not an OSD that rewrites data.
//   - SSE-C: the customer's 32-byte key encrypts; the gateway keeps only
//     its MD5 (to refuse a GET with another key) and forgets the key.
//   - SSE-S3: a random 32-byte data key per object (per upload for a
//     multipart upload) encrypts, kept sealed (AES-256-GCM) by a master
//     key of the cluster: the meta pool's sse.master omap holds them by
//     id, the newest sealing new keys, the older ones still opening the
//     data keys they sealed (RotateMasterKey adds one: `shoal sse
//     rotate-key`). The master keys are in the cluster's meta pool, so
//     they protect data on a lost or stolen OSD device, not from someone
//     who can read the meta pool.
//   - SSE-KMS is refused: no KMS is configured.
//
// The ETag of an SSE-S3 object is the MD5 of its plaintext, as S3's; that
// of an SSE-C object the MD5 of what is stored (S3's is not the
// plaintext's MD5 either). Additional checksums are of the plaintext.

// SSE modes.
const (
	SSEC  = "SSE-C"
	SSES3 = "SSE-S3"
)

// sseMasterOID is the meta pool object whose omap holds the SSE-S3 master
// keys (id → base64 key); "current" names the newest.
const sseMasterOID = "sse.master"

// SSE is an object's (or upload's) encryption, kept in its HeadInfo.
type SSE struct {
	Mode   string `json:"mode"`
	KeyMD5 string `json:"kmd5,omitempty"` // SSE-C: base64 MD5 of the customer key
	Sealed []byte `json:"sealed,omitempty"`
	KeyID  string `json:"kid,omitempty"` // SSE-S3: the master key that sealed the data key
	IV     []byte `json:"iv,omitempty"`  // a simple upload's stream
}

// SSERequest is what a request asks: SSE-S3, or SSE-C with the
// customer's key (checked against its MD5 by the S3 edge).
type SSERequest struct {
	Mode   string
	Key    []byte // SSE-C
	KeyMD5 string // SSE-C, base64
}

// newIV returns a random CTR initial counter block.
func newIV() []byte {
	iv := make([]byte, aes.BlockSize)
	rand.Read(iv)
	return iv
}

// ctrAt returns the CTR keystream of (key, iv) positioned at byte off.
func ctrAt(block cipher.Block, iv []byte, off int64) cipher.Stream {
	ctr := make([]byte, aes.BlockSize)
	copy(ctr, iv)
	// add off/16 to the 128-bit big-endian counter
	lo := binary.BigEndian.Uint64(ctr[8:])
	n := uint64(off / aes.BlockSize)
	sum := lo + n
	binary.BigEndian.PutUint64(ctr[8:], sum)
	if sum < lo {
		binary.BigEndian.PutUint64(ctr[:8], binary.BigEndian.Uint64(ctr[:8])+1)
	}
	st := cipher.NewCTR(block, ctr)
	if skip := int(off % aes.BlockSize); skip > 0 {
		var pad [aes.BlockSize]byte
		st.XORKeyStream(pad[:skip], pad[:skip])
	}
	return st
}

// masterKeys caches the master keys (they only ever grow).
type masterKeys struct {
	mu      sync.Mutex
	keys    map[string][]byte
	current string
}

// loadMasterKeys reads the master keys, creating the first if there is
// none (racing gateways: the first to write it wins, the others read it).
func (s *Store) loadMasterKeys(ctx context.Context) (*masterKeys, error) {
	s.sseKeys.mu.Lock()
	defer s.sseKeys.mu.Unlock()
	if s.sseKeys.current != "" {
		return &s.sseKeys, nil
	}
	for attempt := 0; attempt < 3; attempt++ {
		keys, cur := map[string][]byte{}, ""
		err := omapEach(ctx, s.meta, sseMasterOID, "", "", func(kv client.KV) (bool, error) {
			if kv.Key == "current" {
				cur = string(kv.Value)
			} else if k, err := base64.StdEncoding.DecodeString(string(kv.Value)); err == nil && len(k) == 32 {
				keys[kv.Key] = k
			}
			return true, nil
		})
		if err != nil && !errors.Is(err, client.ErrNotFound) {
			return nil, fmt.Errorf("sse: master keys: %w", err)
		}
		if cur != "" && keys[cur] != nil {
			s.sseKeys.keys, s.sseKeys.current = keys, cur
			return &s.sseKeys, nil
		}
		if err := s.addMasterKey(ctx, true); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("sse: the master key could not be created")
}

// addMasterKey writes a new master key and makes it current; with
// first, only if no key is current yet.
func (s *Store) addMasterKey(ctx context.Context, first bool) error {
	k := make([]byte, 32)
	rand.Read(k)
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	if first {
		// create the object exclusively: one gateway's first key wins
		err := s.meta.Create(ctx, sseMasterOID, true)
		if errors.Is(err, client.ErrExists) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sse: master keys: %w", err)
		}
	}
	return s.meta.OmapSet(ctx, sseMasterOID, []client.KV{{Key: id, Value: []byte(base64.StdEncoding.EncodeToString(k))}, {Key: "current", Value: []byte(id)}})
}

// RotateMasterKey adds a master key that seals new SSE-S3 data keys
// (existing objects keep theirs, opened by the older master keys); it
// returns the new key's id. Gateways see it once they load the keys
// again (at start).
func (s *Store) RotateMasterKey(ctx context.Context) (string, error) {
	if _, err := s.loadMasterKeys(ctx); err != nil {
		return "", err
	}
	if err := s.addMasterKey(ctx, false); err != nil {
		return "", err
	}
	s.sseKeys.mu.Lock()
	s.sseKeys.current = ""
	s.sseKeys.mu.Unlock()
	mk, err := s.loadMasterKeys(ctx)
	if err != nil {
		return "", err
	}
	return mk.current, nil
}

// MasterKeyIDs lists the master key ids, oldest first, and the current one.
func (s *Store) MasterKeyIDs(ctx context.Context) ([]string, string, error) {
	mk, err := s.loadMasterKeys(ctx)
	if err != nil {
		return nil, "", err
	}
	mk.mu.Lock()
	defer mk.mu.Unlock()
	var ids []string
	for id := range mk.keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, mk.current, nil
}

// newSSE sets up the encryption r asks for: the SSE record to keep and
// the data key.
func (s *Store) newSSE(ctx context.Context, r *SSERequest) (*SSE, []byte, error) {
	switch r.Mode {
	case SSEC:
		return &SSE{Mode: SSEC, KeyMD5: r.KeyMD5, IV: newIV()}, r.Key, nil
	case SSES3:
		mk, err := s.loadMasterKeys(ctx)
		if err != nil {
			return nil, nil, err
		}
		mk.mu.Lock()
		id, master := mk.current, mk.keys[mk.current]
		mk.mu.Unlock()
		dk := make([]byte, 32)
		rand.Read(dk)
		sealed, err := seal(master, dk)
		if err != nil {
			return nil, nil, err
		}
		return &SSE{Mode: SSES3, Sealed: sealed, KeyID: id, IV: newIV()}, dk, nil
	}
	return nil, nil, s3err.InvalidArgument.With("unknown server-side encryption %q", r.Mode)
}

// dataKey returns the key that decrypts e's data: the customer's (r,
// checked against e's MD5) or the unsealed SSE-S3 key. An SSE-C object
// read without its key is InvalidRequest, with another key AccessDenied,
// as S3 answers.
func (s *Store) dataKey(ctx context.Context, e *SSE, r *SSERequest) ([]byte, error) {
	switch e.Mode {
	case SSEC:
		if r == nil || r.Mode != SSEC {
			return nil, s3err.InvalidRequest.With("The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.")
		}
		if subtle.ConstantTimeCompare([]byte(r.KeyMD5), []byte(e.KeyMD5)) != 1 {
			return nil, s3err.AccessDenied.With("the customer key is not the one the object was stored with")
		}
		return r.Key, nil
	case SSES3:
		mk, err := s.loadMasterKeys(ctx)
		if err != nil {
			return nil, err
		}
		mk.mu.Lock()
		master := mk.keys[e.KeyID]
		mk.mu.Unlock()
		if master == nil { // rotated by another gateway since this one loaded them
			mk.mu.Lock()
			mk.current = ""
			mk.mu.Unlock()
			if mk, err = s.loadMasterKeys(ctx); err != nil {
				return nil, err
			}
			mk.mu.Lock()
			master = mk.keys[e.KeyID]
			mk.mu.Unlock()
		}
		if master == nil {
			return nil, fmt.Errorf("sse: master key %q is missing", e.KeyID)
		}
		return open(master, e.Sealed)
	}
	return nil, fmt.Errorf("sse: unknown mode %q", e.Mode)
}

// newGCM is AES-256-GCM with key.
func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts a data key with a master key (AES-256-GCM, random nonce
// first).
func seal(master, dk []byte) ([]byte, error) {
	g, err := newGCM(master)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, g.NonceSize())
	rand.Read(nonce)
	return g.Seal(nonce, nonce, dk, nil), nil
}

// open is seal's inverse.
func open(master, sealed []byte) ([]byte, error) {
	g, err := newGCM(master)
	if err != nil {
		return nil, err
	}
	if len(sealed) < g.NonceSize() {
		return nil, errors.New("sse: sealed key too short")
	}
	dk, err := g.Open(nil, sealed[:g.NonceSize()], sealed[g.NonceSize():], nil)
	if err != nil {
		return nil, fmt.Errorf("sse: data key: %w", err)
	}
	return dk, nil
}

// encReader encrypts a body as it is read (one CTR stream from offset
// 0), hashing the plaintext first: its MD5 (ETag, Content-MD5) and the
// additional checksum's hash.
type encReader struct {
	r   io.Reader
	st  cipher.Stream
	md5 hash.Hash // nil: not needed (SSE-C without Content-MD5)
	ck  hash.Hash // nil: none
}

func (e *encReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if n > 0 {
		if e.md5 != nil {
			e.md5.Write(p[:n])
		}
		if e.ck != nil {
			e.ck.Write(p[:n])
		}
		e.st.XORKeyStream(p[:n], p[:n])
	}
	return n, err
}

// encryptBody sets up the encryption of an upload's body: the reader of
// its ciphertext and, once it is read, the plaintext's quoted MD5 (taken
// if plainMD5: SSE-S3's ETag, or a Content-MD5 to check), the checked
// Content-MD5 and the additional checksum (ckReq's).
func encryptBody(body io.Reader, key, iv []byte, ckReq *ChecksumReq, plainMD5 bool) (*encReader, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, s3err.InvalidArgument.With("the encryption key must be 256 bits")
	}
	e := &encReader{r: body, st: ctrAt(block, iv, 0), ck: ckReq.hash()}
	if plainMD5 {
		e.md5 = md5.New()
	}
	return e, nil
}

// finish checks the plaintext's Content-MD5 (wantMD5, nil: none) and
// returns its quoted MD5 and additional checksum.
func (e *encReader) finish(wantMD5 []byte, ckReq *ChecksumReq) (string, *Checksum, error) {
	etag := ""
	if e.md5 != nil {
		sum := e.md5.Sum(nil)
		if wantMD5 != nil && subtle.ConstantTimeCompare(sum, wantMD5) != 1 {
			return "", nil, s3err.BadDigest
		}
		etag = `"` + hex.EncodeToString(sum) + `"`
	}
	ck, err := ckReq.result(e.ck)
	if err != nil {
		return "", nil, err
	}
	return etag, ck, nil
}

// decWriter decrypts what it is written, which is the object's bytes
// from offset pos on, stream by stream (sseStreams).
type decWriter struct {
	w     io.Writer
	block cipher.Block
	h     *HeadInfo
	pos   int64
	buf   []byte
}

func (d *decWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		iv, start, end := d.h.sseStream(d.pos)
		k := min(int64(len(p)), end-d.pos)
		piece := p[:k]
		if cap(d.buf) < len(piece) {
			d.buf = make([]byte, len(piece))
		}
		out := d.buf[:len(piece)]
		ctrAt(d.block, iv, d.pos-start).XORKeyStream(out, piece)
		if _, err := d.w.Write(out); err != nil {
			return n, err
		}
		n += int(k)
		d.pos += k
		p = p[k:]
	}
	return n, nil
}

// sseStream returns the stream holding byte pos of the object: its IV and
// its [start, end) in the object. A simple upload is one stream; each
// multipart part one of its own.
func (h *HeadInfo) sseStream(pos int64) (iv []byte, start, end int64) {
	if h.Parts == 0 {
		return h.SSE.IV, 0, h.Size
	}
	base := h.HeadSize
	for _, g := range h.Segments {
		if pos < base+g.Size {
			return g.IV, base, base + g.Size
		}
		base += g.Size
	}
	return nil, base, h.Size
}

// Decrypt readies an encrypted version's bytes for WriteRange with the
// key r gives (SSE-C) or the version's own (SSE-S3): s3err.InvalidRequest
// if an SSE-C version is read without its key, AccessDenied with another.
// A version stored in the clear ignores r.
func (o *Object) Decrypt(ctx context.Context, r *SSERequest) error {
	if o.Info.SSE == nil {
		return nil
	}
	key, err := o.s.dataKey(ctx, o.Info.SSE, r)
	if err != nil {
		return err
	}
	o.block, err = aes.NewCipher(key)
	return err
}

// Encryption is the version's server-side encryption (nil: none).
func (o *Object) Encryption() *SSE { return o.Info.SSE }

// BucketEncryption is a bucket's default encryption
// (PutBucketEncryption's ApplyServerSideEncryptionByDefault): a write
// that asks for no encryption of its own is encrypted with SSE-S3. The
// one algorithm is AES256; aws:kms is refused while no KMS is configured.
type BucketEncryption struct {
	// BucketKey is the rule's BucketKeyEnabled, kept and answered; it
	// changes nothing, SSE-S3 data keys being per object anyway.
	BucketKey bool `json:"bucket_key,omitempty"`
}

// DefaultSSE is the encryption a write into b gets when it asks for none:
// SSE-S3 under a default encryption rule, else nil.
func (b *Bucket) DefaultSSE() *SSERequest {
	if b == nil || b.Encryption == nil {
		return nil
	}
	return &SSERequest{Mode: SSES3}
}
