package rgw

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/internal/bufpool"
	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/osdop"
)

// MaxObjectSize is the largest single PUT (S3's limit; bigger objects go
// through multipart upload, up to 5 TiB).
const MaxObjectSize = 5 << 30

// stripeWriter writes a stream as a run of tail objects (a segment): each
// RADOS object StripeSize bytes, each write at most ChunkSize bytes, and at
// most WindowSize bytes in flight (RGW's rgw_put_obj_min_window_size).
// Writes to one stripe go one after another (an OSD applies concurrent
// requests to one object in no set order, and an erasure-coded pool
// accepts appends only); different stripes are written concurrently, one
// goroutine per stripe being written, owned by the writer and ended by
// Close.
type stripeWriter struct {
	ctx    context.Context
	s      *Store
	seg    segment
	buf    []byte
	crc    uint32 // crc32c of buf, taken as it is filled (while in cache)
	stripe int    // index of the stripe being filled
	off    int64  // bytes sent to it
	tokens chan struct{}
	sum    bodyMD5         // hashes each chunk as it is sent (nil: none)
	ck     hash.Hash       // the additional checksum's, likewise (checksum.go)
	cur    chan chunkWrite // the current stripe's queue
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

type chunkWrite struct {
	off int64
	c   *chunk
	crc uint32 // crc32c of c.data
}

// chunk is one write's buffer, shared by its stripe's goroutine and the
// body's MD5 (which may hash it later: md5.go); the last to be done with
// it returns it to the pool.
type chunk struct {
	data []byte
	refs atomic.Int32
}

func (c *chunk) release() {
	if c.refs.Add(-1) == 0 {
		bufpool.Put(c.data)
	}
}

// getChunk returns an empty buffer of at least ChunkSize capacity, from
// bufpool (reused across garbage collections); bufpool.Put returns it.
func (s *Store) getChunk() []byte { return bufpool.Get(int(s.opt.ChunkSize))[:0] }

// newStripeWriter starts a segment. Its writes ignore ctx's cancellation
// (a dropped client connection): a write already sent may still land, so
// the writer always waits for every one before the caller removes what
// was written.
func (s *Store) newStripeWriter(ctx context.Context, prefix string, first int) *stripeWriter {
	n := max(1, int(s.opt.WindowSize/s.opt.ChunkSize))
	return &stripeWriter{ctx: context.WithoutCancel(ctx), s: s, seg: segment{Prefix: prefix, First: first}, buf: s.getChunk(), tokens: make(chan struct{}, n)}
}

func (w *stripeWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Write buffers p and sends full chunks.
func (w *stripeWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if err := w.failed(); err != nil {
			return 0, err
		}
		room := min(w.s.opt.ChunkSize-int64(len(w.buf)), w.s.opt.StripeSize-w.off-int64(len(w.buf)))
		k := min(int64(len(p)), room)
		w.buf = append(w.buf, p[:k]...)
		w.crc = crc32c.Update(w.crc, p[:k])
		p = p[k:]
		if int64(len(w.buf)) == w.s.opt.ChunkSize || w.off+int64(len(w.buf)) == w.s.opt.StripeSize {
			if err := w.send(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// ReadFrom fills chunks straight from r until r ends (io.Copy uses it:
// no intermediate buffer between the request body and the chunk), at
// most crc32c.Piece bytes per read, each checksummed while in cache.
func (w *stripeWriter) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if err := w.failed(); err != nil {
			return total, err
		}
		room := min(w.s.opt.ChunkSize-int64(len(w.buf)), w.s.opt.StripeSize-w.off-int64(len(w.buf)), crc32c.Piece)
		n, err := r.Read(w.buf[len(w.buf) : len(w.buf)+int(room)])
		w.crc = crc32c.Update(w.crc, w.buf[len(w.buf):len(w.buf)+n])
		w.buf = w.buf[:len(w.buf)+n]
		total += int64(n)
		if int64(len(w.buf)) == w.s.opt.ChunkSize || w.off+int64(len(w.buf)) == w.s.opt.StripeSize {
			if serr := w.send(); serr != nil {
				return total, serr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// send queues the buffered chunk on its stripe's goroutine once the
// window has room, and adds it to the body's hashes (the MD5 may hash it
// later, holding it until then: md5.go).
func (w *stripeWriter) send() error {
	if len(w.buf) == 0 {
		return nil
	}
	select {
	case w.tokens <- struct{}{}:
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
	c := &chunk{data: w.buf}
	c.refs.Store(1)
	if w.sum != nil {
		c.refs.Add(1)
		w.sum.add(w.buf, c.release)
	}
	if w.ck != nil {
		w.ck.Write(w.buf)
	}
	if w.cur == nil {
		w.cur = make(chan chunkWrite, cap(w.tokens))
		w.wg.Add(1)
		go w.writeStripe(w.seg.oid(w.stripe), w.cur)
	}
	w.cur <- chunkWrite{off: w.off, c: c, crc: w.crc}
	w.seg.Size += int64(len(w.buf))
	w.off += int64(len(w.buf))
	if w.off == w.s.opt.StripeSize {
		close(w.cur)
		w.cur, w.stripe, w.off = nil, w.stripe+1, 0
	}
	w.buf, w.crc = w.s.getChunk(), 0
	return nil
}

// writeStripe writes one stripe's chunks in order.
func (w *stripeWriter) writeStripe(oid string, q <-chan chunkWrite) {
	defer w.wg.Done()
	for c := range q {
		if w.failed() == nil {
			op := osdop.Op{Code: osdop.Write, Off: uint64(c.off), Data: c.c.data}
			if c.off == 0 {
				op.Code, op.Off = osdop.WriteFull, 0
			}
			op.DataSum = crc32c.Sum{CRC: c.crc, Valid: true}
			if _, err := w.s.data.Operate(w.ctx, oid, []osdop.Op{op}); err != nil {
				w.mu.Lock()
				if w.err == nil {
					w.err = fmt.Errorf("write tail %s: %w", oid, err)
				}
				w.mu.Unlock()
			}
		}
		c.c.release()
		<-w.tokens
	}
}

// Close sends what is buffered, flushes the MD5 (the body's last bytes
// are hashed while their writes are under way) and waits for every
// write; it returns the segment written (its Size counts every byte
// sent, so on error the caller can remove every tail that may exist).
func (w *stripeWriter) Close() (segment, error) {
	err := w.failed()
	if err == nil {
		err = w.send()
	}
	if err == nil && w.sum != nil {
		w.sum.flush()
	}
	if w.cur != nil {
		close(w.cur)
		w.cur = nil
	}
	w.wg.Wait()
	bufpool.Put(w.buf)
	w.buf = nil
	if err == nil {
		err = w.failed()
	}
	return w.seg, err
}

// headBuf is an upload's head: the buffer receive reads it into (its
// first bytes) and their crc32c, taken as they arrive.
type headBuf struct {
	data []byte
	sum  uint32
}

// readFrom fills h.data from r like io.ReadFull, crc32c.Piece bytes at a
// time, checksumming each piece as it arrives; it returns the bytes read.
func (h *headBuf) readFrom(r io.Reader) (int, error) {
	h.sum = 0
	for off := 0; off < len(h.data); {
		end := min(off+crc32c.Piece, len(h.data))
		n, err := io.ReadFull(r, h.data[off:end])
		h.sum = crc32c.Update(h.sum, h.data[off:off+n])
		if off += n; err != nil {
			if err == io.EOF && off > 0 {
				err = io.ErrUnexpectedEOF
			}
			return off, err
		}
	}
	return len(h.data), nil
}

// removeTails deletes tail objects now (an upload that failed before its
// head was written: nothing can be reading them).
func (s *Store) removeTails(oids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var cs []*client.Completion
	for _, oid := range oids {
		cs = append(cs, s.data.RemoveAsync(ctx, oid))
		if len(cs) == 32 {
			for _, c := range cs {
				c.Wait()
			}
			cs = cs[:0]
		}
	}
	for _, c := range cs {
		c.Wait()
	}
}

// PutInput describes an upload.
type PutInput struct {
	Body    io.Reader
	Size    int64             // exact byte count of Body
	MD5     []byte            // Content-MD5, if given (BadDigest on mismatch)
	Headers map[string]string // stored response headers
	Meta    map[string]string
	Class   string
	Owner   string
	ACL     ACL       // nil: the owner's FULL_CONTROL
	Tags    []Tag     // x-amz-tagging
	Cond    WriteCond // If-Match, If-None-Match (conditional.go)
	// Checksum is the additional checksum the request names (nil: none;
	// checksum.go): checked, kept and answered.
	Checksum *ChecksumReq
	// Lock is the retention asked for (nil: the bucket's default) and
	// LegalHold the legal hold, in a bucket with object lock.
	Lock      *Retention
	LegalHold bool
	// SSE is the server-side encryption asked for (nil: none; sse.go).
	SSE *SSERequest
}

// PutResult is a completed upload.
type PutResult struct {
	ETag      string
	Mtime     time.Time
	Checksum  *Checksum // the object's additional checksum, if it has one
	VersionID string    // in a versioned bucket, the version made
	SSE       *SSE      // the version's encryption (nil: none)
}

// result is what the write that made version h answers.
func (h *HeadInfo) result() *PutResult {
	return &PutResult{ETag: h.ETag, Mtime: time.Unix(0, h.Mtime), Checksum: h.Checksum, VersionID: h.VersionID, SSE: h.SSE}
}

// prepareOverlapMin is the smallest head (bytes) whose read from the
// client overlaps the index prepare's round trip (see PutObject); a
// smaller one has usually arrived with the request, and its prepare is
// sent first without a goroutine.
const prepareOverlapMin = 1 << 20

// PutObject stores an object: index prepare, tails, head (the commit
// point: it replaces the previous version atomically), the previous
// version's tails to the GC queue, and the index completion in the
// background (see completeAsync). On any failure before
// the head write the tails are removed and the previous version stays.
//
// The prepare of a large object is sent while its head is read from the
// client, whose first ChunkSize bytes take about as long to arrive as
// the prepare takes to land; nothing is written to RADOS before it has
// (receive waits for it).
func (s *Store) PutObject(ctx context.Context, b *Bucket, key string, in PutInput) (*PutResult, error) {
	if in.Size > MaxObjectSize {
		return nil, s3err.EntityTooLarge
	}
	if err := s.checkQuota(ctx, b, max(in.Size, 0), 1); err != nil {
		return nil, err
	}
	tag := NewTag()
	h := &HeadInfo{Tag: tag, Size: in.Size, StripeSize: s.opt.StripeSize, Owner: in.Owner, Headers: in.Headers, Meta: in.Meta, Class: in.Class, ACL: in.ACL, Tags: in.Tags}
	h.HeadSize = s.opt.ChunkSize
	if in.Size >= 0 {
		h.HeadSize = min(in.Size, s.opt.ChunkSize)
	}
	if b.Versioned() {
		h.HeadSize = 0 // a version keeps its bytes in its own tails (versioning.go)
	}
	h.applyLock(b, in.Lock, in.LegalHold)
	body, wantMD5, ckReq := in.Body, in.MD5, in.Checksum
	var enc *encReader
	if in.SSE != nil {
		e, key, err := s.newSSE(ctx, in.SSE)
		if err != nil {
			return nil, err
		}
		if enc, err = encryptBody(in.Body, key, e.IV, in.Checksum, in.MD5 != nil || e.Mode == SSES3); err != nil {
			return nil, err
		}
		h.SSE, body, wantMD5, ckReq = e, enc, nil, nil // the hashes of the plaintext are enc's
	}
	prepared := func() error { return nil }
	if h.HeadSize >= prepareOverlapMin {
		done := make(chan error, 1)
		go func() { done <- s.prepare(ctx, b, key, tag, "put") }() // waited for below, on every path
		prepared = sync.OnceValue(func() error { return <-done })
	} else if err := s.prepare(ctx, b, key, tag, "put"); err != nil {
		return nil, err
	}
	head := &headBuf{data: bufpool.Get(int(h.HeadSize))} // written by commitHead, then free: msgr calls hand buffers back when they return
	defer func() { bufpool.Put(head.data) }()
	seg, etag, cksum, err := s.receive(ctx, body, in.Size, head, shadowPrefix(b.ID, tag), 1, wantMD5, ckReq, prepared)
	if perr := prepared(); perr != nil {
		return nil, perr // receive wrote nothing, and no pending entry was made
	}
	if err == nil && enc != nil {
		var plainMD5 string
		if plainMD5, cksum, err = enc.finish(in.MD5, in.Checksum); err != nil {
			s.removeTails((&HeadInfo{StripeSize: s.opt.StripeSize, Segments: []segment{seg}}).tailOIDs())
		} else if h.SSE.Mode == SSES3 {
			etag = plainMD5 // S3's ETag of an SSE-S3 object; SSE-C's stays the stored bytes' MD5
		}
	}
	if err != nil {
		s.cancel(context.WithoutCancel(ctx), b, key, tag)
		return nil, err
	}
	h.HeadSize, h.Size = int64(len(head.data)), int64(len(head.data))+seg.Size
	if seg.Size > 0 {
		h.Segments = []segment{seg}
	}
	if s.failpoint == "before-head" {
		return nil, errors.New("failpoint before-head")
	}
	h.ETag, h.Checksum = etag, cksum
	return s.commitHead(ctx, b, key, h, head, in.Cond, true)
}

// receive reads exactly size bytes of an upload's body (size < 0: to its
// end, which may cut head.data short): the first len(head.data) into head
// (head may be nil), the rest into a segment of tail objects prefix_first,
// prefix_first+1, … (see stripeWriter). It checks that the
// body ends there and, if wantMD5 is set, matches it (BadDigest), and
// returns the segment (Size 0 if none) and the body's quoted MD5 (its
// ETag). It calls prepared (nil: none) once the head is read and
// before it writes anything, and fails with its error. On error every
// tail it wrote is removed.
func (s *Store) receive(ctx context.Context, body io.Reader, size int64, head *headBuf, prefix string, first int, wantMD5 []byte, ck *ChecksumReq, prepared func() error) (segment, string, *Checksum, error) {
	// The MD5 is taken of whole buffers (the head, then each chunk as
	// the stripe writer sends it), not of each read of the body: the
	// multi-lane hasher wants long writes.
	sum := newMD5(size)
	defer sum.Close()
	ckHash := ck.hash()
	if head == nil {
		head = &headBuf{}
	}
	n, err := head.readFrom(body)
	if size < 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) { // the body ended inside the head
		head.data, err = head.data[:n], nil
		size = int64(n)
	}
	hd := head.data
	if err == nil && prepared != nil {
		err = prepared()
	}
	if err != nil {
		return segment{}, "", nil, s3err.Body(err)
	}
	sum.add(hd, nil)
	if ckHash != nil {
		ckHash.Write(hd)
	}
	var seg segment
	if rest := size - int64(len(hd)); rest > 0 || size < 0 {
		w := s.newStripeWriter(ctx, prefix, first)
		w.sum, w.ck = sum, ckHash
		if size < 0 { // unknown length (Transfer-Encoding: chunked): to the end, within S3's limit
			var m int64
			m, err = io.Copy(w, io.LimitReader(body, MaxObjectSize-int64(len(hd))+1))
			if err == nil && m > MaxObjectSize-int64(len(hd)) {
				err = s3err.EntityTooLarge
			}
		} else {
			_, err = io.CopyN(w, body, rest)
		}
		var cerr error
		seg, cerr = w.Close()
		if err == nil {
			err = cerr
		}
	}
	// The body must end here (a longer body is a client error). Reading
	// its end is what checks a signed payload's hash, an aws-chunked
	// body's last chunk signature and trailer (the gateway's sigv4.go): its error fails
	// the upload.
	if n, rerr := io.Copy(io.Discard, io.LimitReader(body, 1)); err == nil {
		switch {
		case rerr != nil:
			err = rerr
		case n > 0:
			err = s3err.InvalidRequest.With("the body is longer than its Content-Length")
		}
	}
	var digest []byte
	if err == nil { // a failed upload's hash is dropped unfinished (Close)
		digest = sum.Sum(nil)
		if wantMD5 != nil && !bytes.Equal(wantMD5, digest) {
			err = s3err.BadDigest
		}
	}
	var cksum *Checksum
	if err == nil {
		cksum, err = ck.result(ckHash)
	}
	if err != nil {
		s.removeTails((&HeadInfo{StripeSize: s.opt.StripeSize, Segments: []segment{seg}}).tailOIDs())
		return segment{}, "", nil, s3err.Body(err)
	}
	return seg, `"` + hex.EncodeToString(digest) + `"`, cksum, nil
}

// commitHead writes the head object (data's bytes, none if data is nil,
// and HeadInfo) replacing any previous version atomically if cond holds,
// completes the index and queues the previous version's tails for GC.
// On failure it removes the tails (ownTails: they are this write's alone,
// not a multipart upload's parts, which stay with the upload) when the
// head write surely did not happen; after an error that leaves it
// unknown (a timeout), the tails stay: a leak, never a head pointing at
// removed data.
func (s *Store) commitHead(ctx context.Context, b *Bucket, key string, h *HeadInfo, data *headBuf, cond WriteCond, ownTails bool) (*PutResult, error) {
	nb, err := s.recheck(ctx, b)
	if err != nil {
		if ownTails {
			s.removeTails(h.tailOIDs())
		}
		s.cancel(context.WithoutCancel(ctx), b, key, h.Tag)
		return nil, err
	}
	if nb.Versioned() && !b.Versioned() && data != nil && len(data.data) > 0 {
		// the bucket became versioned during the upload, whose first
		// bytes were meant for the head: a version keeps them in tails
		if ownTails {
			s.removeTails(h.tailOIDs())
		}
		s.cancel(context.WithoutCancel(ctx), b, key, h.Tag)
		return nil, s3err.ServiceUnavailable.With("bucket %q became versioned during the upload; send it again", b.Name)
	}
	if b = nb; b.Versioned() {
		return s.linkVersion(ctx, b, key, h, cond, ownTails)
	}
	h.Mtime = time.Now().UnixNano()
	hb, _ := json.Marshal(h)
	oid := HeadOID(b.ID, key)
	// One atomic request creates the head or replaces it, after its
	// first op: reading the version it replaces (absent for a new object:
	// FailOK); with If-None-Match: * an exclusive create; with a
	// condition on the ETag, the guard of the head it checked
	// (conditional.go).
	var rep *osdop.Reply
	var old *HeadInfo
	sure := true // the head is surely not written if the write failed
	write := func(first osdop.Op) (err error) {
		wr := osdop.Op{Code: osdop.WriteFull}
		if data != nil {
			wr.Data, wr.DataSum = data.data, crc32c.Sum{CRC: data.sum, Valid: true}
		}
		rep, err = s.data.Operate(ctx, oid, []osdop.Op{first, wr, {Code: osdop.SetXattr, Name: headAttr, Data: hb}})
		sure = err == nil || refused(err)
		return err
	}
	switch {
	case cond.needsHead():
		err = conditionally(key, func() error {
			first, cur, err := s.guard(ctx, b, key, cond)
			if err != nil {
				return err
			}
			old = cur
			return write(first)
		})
	case cond.IfNoneMatch == "*":
		if err = write(osdop.Op{Code: osdop.Create, Exclusive: true}); errors.Is(err, client.ErrExists) {
			err = s3err.PreconditionFailed
		}
	default:
		err = write(osdop.Op{Code: osdop.GetXattr, Name: headAttr, FailOK: true})
	}
	if err == nil && len(rep.Results[0].Data) > 0 {
		old = &HeadInfo{}
		if json.Unmarshal(rep.Results[0].Data, old) != nil {
			old = nil
		}
	}
	if err != nil {
		if ownTails && sure {
			s.removeTails(h.tailOIDs())
		}
		s.cancel(context.WithoutCancel(ctx), b, key, h.Tag)
		return nil, fmt.Errorf("put %s/%s: head: %w", b.Name, key, err)
	}
	cctx := context.WithoutCancel(ctx) // the head is written: finish the bookkeeping
	if s.failpoint == "before-complete" {
		return h.result(), nil
	}
	if old != nil && old.Tag != h.Tag && old.VersionID == "" {
		// (a version's tails stay: its record in the head object still
		// names them, should a gateway that has not yet seen the bucket
		// become versioned overwrite it)
		s.gcEnqueue(cctx, old)
	}
	s.completeAsync(b, key, h.Tag, rep.Ver, h.entry())
	return h.result(), nil
}

// Owner is the object's owner (its writer).
func (o *Object) Owner() string { return o.Info.Owner }

// UpdateHead changes key's current head metadata with fn (its ACL, its
// tags), atomically with respect to writes of the key: the head is
// rewritten only if it is still the version read.
func (s *Store) UpdateHead(ctx context.Context, b *Bucket, key string, fn func(h *HeadInfo) error) error {
	oid := HeadOID(b.ID, key)
	for attempt := 0; ; attempt++ {
		h, _, ver, _, err := s.HeadAt(ctx, oid, false)
		if errors.Is(err, s3err.NoSuchKey) {
			return s3err.NoSuchKey.With("key %q does not exist", key)
		}
		if err != nil {
			return err
		}
		if err := fn(h); err != nil {
			return err
		}
		hb, _ := json.Marshal(h)
		_, err = s.data.Operate(ctx, oid, []osdop.Op{{Code: osdop.AssertVersion, Ver: ver}, {Code: osdop.SetXattr, Name: headAttr, Data: hb}})
		if (!errors.Is(err, client.ErrNotFound) && !errors.Is(err, osdop.ErrVerNewer) && !errors.Is(err, osdop.ErrVerOlder)) || attempt > 8 {
			return err
		}
	}
}

// Tags are the object's tags.
func (o *Object) Tags() []Tag { return o.Info.Tags }

// Object is an open S3 object version for reading.
type Object struct {
	s    *Store
	b    *Bucket
	Key  string
	Info *HeadInfo
	// block decrypts an encrypted version's bytes (Decrypt sets it)
	block cipher.Block
	head  []byte // the head's data if it was read with the metadata
	// release returns head's buffer (it aliases the reply's); Close calls it
	release func()
}

// Close releases what the object holds of the cluster's replies; o's
// data must not be used after it.
func (o *Object) Close() {
	if o.release != nil {
		o.release()
		o.release, o.head = nil, nil
	}
}

// Size is the object's length in bytes.
func (o *Object) Size() int64 { return o.Info.Size }

// ETag is the object's quoted entity tag: the MD5 of its bytes, or for a
// multipart upload the MD5 of its parts' MD5s with "-N".
func (o *Object) ETag() string { return o.Info.ETag }

// Mtime is when the version was written (the head's commit).
func (o *Object) Mtime() time.Time { return time.Unix(0, o.Info.Mtime) }

// Headers are the stored response headers (Content-Type, Cache-Control, …)
// by canonical name.
func (o *Object) Headers() map[string]string { return o.Info.Headers }

// Meta is the user metadata: x-amz-meta-NAME as lower-case NAME → value.
func (o *Object) Meta() map[string]string { return o.Info.Meta }

// StorageClass is the class the object was stored with ("" or STANDARD,
// …); Shoal stores every class alike.
func (o *Object) StorageClass() string { return o.Info.Class }

// PartsCount is the number of parts of a multipart upload (0 otherwise).
func (o *Object) PartsCount() int { return o.Info.Parts }

// PartRange is the byte range [off, off+n) of part (1-based) of a
// multipart upload as completed; an object PUT whole is its own part 1.
// ok is false for a part the object does not have.
func (o *Object) PartRange(part int) (off, n int64, ok bool) {
	h := o.Info
	if h.Parts == 0 {
		return 0, h.Size, part == 1
	}
	if part < 1 || part > len(h.Segments) || h.Parts != len(h.Segments) {
		return 0, 0, false
	}
	off = h.HeadSize
	for _, g := range h.Segments[:part-1] {
		off += g.Size
	}
	return off, h.Segments[part-1].Size, true
}

// Checksum is the additional Checksum of part (0: the whole object; an
// object PUT whole is its own part 1), nil if it has none.
func (o *Object) Checksum(part int) *Checksum {
	c := o.Info.Checksum
	if c == nil || part == 0 || o.Info.Parts == 0 {
		return c
	}
	if part > len(o.Info.Segments) || o.Info.Segments[part-1].Checksum == "" {
		return nil
	}
	return &Checksum{Alg: c.Alg, Type: c.Type, Value: o.Info.Segments[part-1].Checksum}
}

// OpenObject reads an object's metadata (and, if withData, its head's
// data in the same request, held until Close). s3err.NoSuchKey if absent.
func (s *Store) OpenObject(ctx context.Context, b *Bucket, key string, withData bool) (*Object, error) {
	h, data, _, release, err := s.HeadAt(ctx, HeadOID(b.ID, key), withData)
	if errors.Is(err, s3err.NoSuchKey) {
		return nil, s3err.NoSuchKey.With("key %q does not exist", key)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s/%s: %w", b.Name, key, err)
	}
	return &Object{s: s, b: b, Key: key, Info: h, head: data, release: release}, nil
}

// WriteRange copies [off, off+n) of the object to w, reading ahead up to
// the window size. An error after bytes were written means w got a
// truncated copy (the HTTP layer then drops the connection).
func (o *Object) WriteRange(ctx context.Context, w io.Writer, off, n int64) error {
	s := o.s
	if o.Info.SSE != nil {
		if o.block == nil {
			return fmt.Errorf("get %s/%s: encrypted, and Decrypt was not called", o.b.Name, o.Key)
		}
		w = &decWriter{w: w, block: o.block, h: o.Info, pos: off}
	}
	exts := o.Info.extents(HeadOID(o.b.ID, o.Key), off, n)
	type pending struct {
		c    *client.Completion
		data []byte
		n    int64
	}
	var queue []pending
	inflight := int64(0)
	next := 0
	chunk := s.opt.ChunkSize
	// split extents into reads of at most a chunk
	var reads []extent
	for _, e := range exts {
		for a := e.off; a < e.off+e.len; a += chunk {
			reads = append(reads, extent{e.oid, a, min(chunk, e.off+e.len-a)})
		}
	}
	for len(queue) > 0 || next < len(reads) {
		for next < len(reads) && (len(queue) == 0 || inflight+reads[next].len <= s.opt.WindowSize) {
			r := reads[next]
			next++
			if o.head != nil && r.oid == HeadOID(o.b.ID, o.Key) && r.off+r.len <= int64(len(o.head)) {
				queue = append(queue, pending{data: o.head[r.off : r.off+r.len], n: r.len})
				continue
			}
			queue = append(queue, pending{c: s.data.OperateRefAsync(ctx, r.oid, []osdop.Op{{Code: osdop.Read, Off: uint64(r.off), Len: uint64(r.len)}}), n: r.len})
			inflight += r.len
		}
		p := queue[0]
		queue = queue[1:]
		data := p.data
		if p.c != nil {
			rep, err := p.c.Wait()
			inflight -= p.n
			if err != nil {
				return fmt.Errorf("get %s/%s: %w", o.b.Name, o.Key, err)
			}
			data = rep.Results[0].Data
			if int64(len(data)) != p.n {
				p.c.Release()
				return fmt.Errorf("get %s/%s: short read of a stripe (%d of %d bytes): %w", o.b.Name, o.Key, len(data), p.n, client.ErrCorrupt)
			}
		}
		_, err := w.Write(data)
		if p.c != nil {
			p.c.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// DeleteObject removes key: prepare, remove the head (reading the version
// it removes in the same request), queue its tails for GC, and complete
// in the background (see completeAsync).
// Deleting an absent key succeeds (S3 semantics).
func (s *Store) DeleteObject(ctx context.Context, b *Bucket, key string) error {
	return s.deleteObject(ctx, b, key, 0)
}

// deleteObject is DeleteObject of head version ver only, if ver is not 0
// (osdop.ErrVerOlder or ErrVerNewer if the head is another version).
func (s *Store) deleteObject(ctx context.Context, b *Bucket, key string, ver uint64) error {
	tag := NewTag()
	if err := s.prepare(ctx, b, key, tag, "del"); err != nil {
		return err
	}
	ops := []osdop.Op{{Code: osdop.GetXattr, Name: headAttr}, {Code: osdop.Remove}}
	if ver != 0 {
		ops = append([]osdop.Op{{Code: osdop.AssertVersion, Ver: ver}}, ops...)
	}
	rep, err := s.data.Operate(ctx, HeadOID(b.ID, key), ops)
	if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrNoData) {
		// nothing to remove; clear any stale entry with a newer version
		s.cancel(ctx, b, key, tag)
		return nil
	}
	if err != nil {
		s.cancel(context.WithoutCancel(ctx), b, key, tag)
		return fmt.Errorf("delete %s/%s: %w", b.Name, key, err)
	}
	old := &HeadInfo{}
	if json.Unmarshal(rep.Results[len(ops)-2].Data, old) == nil {
		s.gcEnqueue(context.WithoutCancel(ctx), old)
	}
	if s.failpoint != "before-complete" {
		s.completeAsync(b, key, tag, rep.Ver, nil)
	}
	return nil
}
