package gateway

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cls/rgw"
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
	stripe int   // index of the stripe being filled
	off    int64 // bytes sent to it
	tokens chan struct{}
	cur    chan chunkWrite // the current stripe's queue
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

type chunkWrite struct {
	off  int64
	data []byte
}

var chunkPool sync.Pool // *[]byte of ChunkSize capacity

func (s *Store) getChunk() []byte {
	if p, ok := chunkPool.Get().(*[]byte); ok && int64(cap(*p)) >= s.opt.ChunkSize {
		return (*p)[:0]
	}
	return make([]byte, 0, s.opt.ChunkSize)
}

func putChunk(b []byte) { chunkPool.Put(&b) }

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
		room := min(int64(cap(w.buf)-len(w.buf)), w.s.opt.StripeSize-w.off-int64(len(w.buf)))
		k := min(int64(len(p)), room)
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if int64(len(w.buf)) == w.s.opt.ChunkSize || w.off+int64(len(w.buf)) == w.s.opt.StripeSize {
			if err := w.send(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// send queues the buffered chunk on its stripe's goroutine once the
// window has room.
func (w *stripeWriter) send() error {
	if len(w.buf) == 0 {
		return nil
	}
	select {
	case w.tokens <- struct{}{}:
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
	if w.cur == nil {
		w.cur = make(chan chunkWrite, cap(w.tokens))
		w.wg.Add(1)
		go w.writeStripe(w.seg.oid(w.stripe), w.cur)
	}
	w.cur <- chunkWrite{off: w.off, data: w.buf}
	w.seg.Size += int64(len(w.buf))
	w.off += int64(len(w.buf))
	if w.off == w.s.opt.StripeSize {
		close(w.cur)
		w.cur, w.stripe, w.off = nil, w.stripe+1, 0
	}
	w.buf = w.s.getChunk()
	return nil
}

// writeStripe writes one stripe's chunks in order.
func (w *stripeWriter) writeStripe(oid string, q <-chan chunkWrite) {
	defer w.wg.Done()
	for c := range q {
		if w.failed() == nil {
			op := osdop.Op{Code: osdop.Write, Off: uint64(c.off), Data: c.data}
			if c.off == 0 {
				op = osdop.Op{Code: osdop.WriteFull, Data: c.data}
			}
			if _, err := w.s.data.Operate(w.ctx, oid, []osdop.Op{op}); err != nil {
				w.mu.Lock()
				if w.err == nil {
					w.err = fmt.Errorf("write tail %s: %w", oid, err)
				}
				w.mu.Unlock()
			}
		}
		putChunk(c.data)
		<-w.tokens
	}
}

// Close sends what is buffered and waits for every write; it returns the
// segment written (its Size counts every byte sent, so on error the
// caller can remove every tail that may exist).
func (w *stripeWriter) Close() (segment, error) {
	err := w.failed()
	if err == nil {
		err = w.send()
	}
	if w.cur != nil {
		close(w.cur)
		w.cur = nil
	}
	w.wg.Wait()
	putChunk(w.buf)
	w.buf = nil
	if err == nil {
		err = w.failed()
	}
	return w.seg, err
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
	Body        io.Reader
	Size        int64             // exact byte count of Body
	MD5         []byte            // Content-MD5, if given (BadDigest on mismatch)
	Headers     map[string]string // stored response headers
	Meta        map[string]string
	Class       string
	Owner       string
	IfNoneMatch bool // If-None-Match: * (PreconditionFailed if the key exists)
}

// PutResult is a completed upload.
type PutResult struct {
	ETag  string
	Mtime time.Time
}

// PutObject stores an object: index prepare, tails, head (the commit
// point: it replaces the previous version atomically), index complete,
// and the previous version's tails to the GC queue. On any failure before
// the head write the tails are removed and the previous version stays.
func (s *Store) PutObject(ctx context.Context, b *Bucket, key string, in PutInput) (*PutResult, error) {
	if in.Size > MaxObjectSize {
		return nil, ErrEntityTooLarge
	}
	tag := newTag()
	if err := s.prepare(ctx, b, key, tag, "put"); err != nil {
		return nil, err
	}
	h := &headInfo{Tag: tag, Size: in.Size, StripeSize: s.opt.StripeSize, Owner: in.Owner, Headers: in.Headers, Meta: in.Meta, Class: in.Class}
	sum := md5.New()
	body := io.TeeReader(in.Body, sum)
	h.HeadSize = min(in.Size, s.opt.ChunkSize)
	head := make([]byte, h.HeadSize)
	fail := func(err error, tails []string) (*PutResult, error) {
		if len(tails) > 0 {
			s.removeTails(tails)
		}
		s.cancel(context.WithoutCancel(ctx), b, key, tag)
		return nil, err
	}
	if _, err := io.ReadFull(body, head); err != nil {
		return fail(bodyErr(err), nil)
	}
	if rest := in.Size - h.HeadSize; rest > 0 {
		w := s.newStripeWriter(ctx, shadowPrefix(b.ID, tag), 1)
		_, err := io.CopyN(w, body, rest)
		seg, cerr := w.Close()
		h.Segments = []segment{seg}
		if err == nil {
			err = cerr
		}
		if err != nil {
			return fail(bodyErr(err), h.tailOIDs())
		}
	}
	// the body must end here (a longer body is a client error)
	if n, _ := io.Copy(io.Discard, io.LimitReader(body, 1)); n > 0 {
		return fail(ErrInvalidRequest.with("the body is longer than its Content-Length"), h.tailOIDs())
	}
	digest := sum.Sum(nil)
	if in.MD5 != nil && !equalBytes(in.MD5, digest) {
		return fail(ErrBadDigest, h.tailOIDs())
	}
	if s.failpoint == "before-head" {
		return nil, errors.New("failpoint before-head")
	}
	h.ETag = `"` + hex.EncodeToString(digest) + `"`
	return s.commitHead(ctx, b, key, h, head, in.IfNoneMatch)
}

func equalBytes(a, b []byte) bool { return string(a) == string(b) }

// bodyErr maps a failure reading the request body to the S3 error.
func bodyErr(err error) error {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return ErrIncompleteBody
	}
	return err
}

// commitHead writes the head object (data and headInfo) replacing any
// previous version atomically, completes the index and queues the
// previous version's tails for GC.
func (s *Store) commitHead(ctx context.Context, b *Bucket, key string, h *headInfo, data []byte, ifNoneMatch bool) (*PutResult, error) {
	h.Mtime = time.Now().UnixNano()
	hb, _ := json.Marshal(h)
	oid := headOID(b.ID, key)
	write := []osdop.Op{{Code: osdop.WriteFull, Data: data}, {Code: osdop.SetXattr, Name: headAttr, Data: hb}}
	var rep *osdop.Reply
	var old *headInfo
	var err error
	// try as a new object first; if it exists, replace it reading the
	// version it replaces in the same atomic request
	for attempt := 0; ; attempt++ {
		rep, err = s.data.Operate(ctx, oid, append([]osdop.Op{{Code: osdop.Create, Exclusive: true}}, write...))
		if !errors.Is(err, client.ErrExists) {
			break
		}
		if ifNoneMatch {
			err = ErrPreconditionFailed
			break
		}
		rep, err = s.data.Operate(ctx, oid, append([]osdop.Op{{Code: osdop.GetXattr, Name: headAttr}}, write...))
		if !errors.Is(err, client.ErrNotFound) || attempt > 8 {
			if err == nil {
				old = &headInfo{}
				if json.Unmarshal(rep.Results[0].Data, old) != nil {
					old = nil
				}
			}
			break
		}
	}
	if err != nil {
		s.removeTails(h.tailOIDs())
		s.cancel(context.WithoutCancel(ctx), b, key, h.Tag)
		return nil, fmt.Errorf("put %s/%s: head: %w", b.Name, key, err)
	}
	cctx := context.WithoutCancel(ctx) // the head is written: finish the bookkeeping
	if s.failpoint == "before-complete" {
		return &PutResult{ETag: h.ETag, Mtime: time.Unix(0, h.Mtime)}, nil
	}
	if old != nil && old.Tag != h.Tag {
		s.gcEnqueue(cctx, old)
	}
	e := &rgw.Entry{Size: h.Size, Mtime: h.Mtime, ETag: h.ETag, Owner: h.Owner, StorageClass: h.Class, ContentType: h.Headers["Content-Type"]}
	if err := s.complete(cctx, b, key, h.Tag, rep.Ver, e); err != nil {
		s.opt.Logger.Warn("index complete failed; `shoal bucket check --fix` resolves it", "bucket", b.Name, "key", key, "err", err)
	}
	return &PutResult{ETag: h.ETag, Mtime: time.Unix(0, h.Mtime)}, nil
}

// Object is an open S3 object version for reading.
type Object struct {
	s    *Store
	b    *Bucket
	key  string
	info *headInfo
	head []byte // the head's data if it was read with the metadata
}

// Size, ETag, Mtime and the stored headers of the object.
func (o *Object) Size() int64                { return o.info.Size }
func (o *Object) ETag() string               { return o.info.ETag }
func (o *Object) Mtime() time.Time           { return time.Unix(0, o.info.Mtime) }
func (o *Object) Headers() map[string]string { return o.info.Headers }
func (o *Object) Meta() map[string]string    { return o.info.Meta }
func (o *Object) StorageClass() string       { return o.info.Class }
func (o *Object) PartsCount() int            { return o.info.Parts }

// OpenObject reads an object's metadata (and, if withData, its head's
// data in the same request). ErrNoSuchKey if absent.
func (s *Store) OpenObject(ctx context.Context, b *Bucket, key string, withData bool) (*Object, error) {
	ops := []osdop.Op{{Code: osdop.GetXattr, Name: headAttr}}
	if withData {
		ops = append(ops, osdop.Op{Code: osdop.Read})
	}
	rep, err := s.data.Operate(ctx, headOID(b.ID, key), ops)
	if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrNoData) {
		return nil, ErrNoSuchKey.with("key %q does not exist", key)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s/%s: %w", b.Name, key, err)
	}
	o := &Object{s: s, b: b, key: key, info: &headInfo{}}
	if err := json.Unmarshal(rep.Results[0].Data, o.info); err != nil {
		return nil, fmt.Errorf("get %s/%s: head metadata: %w", b.Name, key, err)
	}
	if withData {
		o.head = rep.Results[1].Data
	}
	return o, nil
}

// WriteRange copies [off, off+n) of the object to w, reading ahead up to
// the window size. An error after bytes were written means w got a
// truncated copy (the HTTP layer then drops the connection).
func (o *Object) WriteRange(ctx context.Context, w io.Writer, off, n int64) error {
	s := o.s
	exts := o.info.extents(headOID(o.b.ID, o.key), off, n)
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
			if o.head != nil && r.oid == headOID(o.b.ID, o.key) && r.off+r.len <= int64(len(o.head)) {
				queue = append(queue, pending{data: o.head[r.off : r.off+r.len], n: r.len})
				continue
			}
			queue = append(queue, pending{c: s.data.ReadAsync(ctx, r.oid, uint64(r.off), uint64(r.len)), n: r.len})
			inflight += r.len
		}
		p := queue[0]
		queue = queue[1:]
		data := p.data
		if p.c != nil {
			rep, err := p.c.Wait()
			inflight -= p.n
			if err != nil {
				return fmt.Errorf("get %s/%s: %w", o.b.Name, o.key, err)
			}
			data = rep.Results[0].Data
			if int64(len(data)) != p.n {
				return fmt.Errorf("get %s/%s: short read of a stripe (%d of %d bytes): %w", o.b.Name, o.key, len(data), p.n, client.ErrCorrupt)
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// DeleteObject removes key: prepare, remove the head (reading the version
// it removes in the same request), complete, queue its tails for GC.
// Deleting an absent key succeeds (S3 semantics).
func (s *Store) DeleteObject(ctx context.Context, b *Bucket, key string) error {
	tag := newTag()
	if err := s.prepare(ctx, b, key, tag, "del"); err != nil {
		return err
	}
	rep, err := s.data.Operate(ctx, headOID(b.ID, key), []osdop.Op{{Code: osdop.GetXattr, Name: headAttr}, {Code: osdop.Remove}})
	if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrNoData) {
		// nothing to remove; clear any stale entry with a newer version
		s.cancel(ctx, b, key, tag)
		return nil
	}
	if err != nil {
		s.cancel(context.WithoutCancel(ctx), b, key, tag)
		return fmt.Errorf("delete %s/%s: %w", b.Name, key, err)
	}
	cctx := context.WithoutCancel(ctx)
	old := &headInfo{}
	if json.Unmarshal(rep.Results[0].Data, old) == nil {
		s.gcEnqueue(cctx, old)
	}
	return s.complete(cctx, b, key, tag, rep.Ver, nil)
}

// headRead is the op list that reads a head's metadata.
func headRead() []osdop.Op { return []osdop.Op{{Code: osdop.GetXattr, Name: headAttr}} }
