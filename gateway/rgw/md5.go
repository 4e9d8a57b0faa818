package rgw

import (
	"crypto/md5"
	"hash"
	"slices"
	"sync"
	"time"
	_ "unsafe" // go:linkname, below

	"github.com/klauspost/cpuid/v2"
	md5simd "github.com/minio/md5-simd"
)

// simdMD5Min is the smallest body (bytes) whose MD5 goes to the shared
// multi-lane hasher: below it, or of unknown length, crypto/md5 is
// cheaper (a lane's set-up and its hand-offs cost more than they save
// on a short stream; measured with 64 KiB to 4 MiB bodies).
const simdMD5Min = 8 << 20

// md5SIMDWide is minio/md5-simd's switch between its kernels: 16 lanes
// in AVX-512 registers when the CPU has AVX512F and AVX512DQ (set by its
// init, read at each pass), else two runs of 8 lanes in AVX2 registers.
// v1.1.2, the latest release, has no option for it (later commits add
// one, unreleased); this package's init resets it where wide512 says.
//
//go:linkname md5SIMDWide github.com/minio/md5-simd.hasAVX512
var md5SIMDWide bool

// md5SIMDWideAtInit is md5SIMDWide as md5-simd's init left it (a test
// checks that the link above still reaches the library's variable).
var md5SIMDWideAtInit = md5SIMDWide

func init() {
	if md5SIMDWide && !wide512() {
		md5SIMDWide = false
	}
}

// wide512 reports whether the CPU runs 512-bit vector instructions at
// full width. AMD's Zen 4 (family 19h) splits each into two 256-bit
// halves, and there md5-simd's AVX-512 pass (16 lanes of 32 KiB: 189 µs)
// costs 2.8 times its AVX2 pass (8 lanes: 67 µs), so the AVX2 kernel
// wins at every number of lanes: four 32 MiB streams hashed at once
// took 866 MB/s per core of CPU with AVX-512 and 1,414 MB/s with AVX2
// (crypto/md5: 780). Measured on this project's 2-core AMD EPYC VM
// (docs/PERFORMANCE.md); Intel's AVX-512 and Zen 5's are full width.
func wide512() bool {
	return !(cpuid.CPU.VendorID == cpuid.AMD && cpuid.CPU.Family == 0x19)
}

// bodyMD5 is the MD5 of an upload's body (its ETag), fed whole buffers
// in order.
type bodyMD5 interface {
	// add appends p to the hashed stream. p must not change until done
	// is called (nil: the caller keeps p unchanged until Sum or Close);
	// done is called exactly once, from any goroutine and before Sum
	// returns, when p is hashed or, by Close, dropped. done must not call
	// into the hash (it may run under its lock).
	add(p []byte, done func())
	// flush says nothing more will be added: what is queued is hashed
	// now, with any other bodies' queued bytes but without waiting for
	// more (so that Sum, later, finds it done).
	flush()
	// Sum returns the MD5 of everything added, appended to b.
	Sum(b []byte) []byte
	// Close releases the hash; buffers not yet hashed are dropped (their
	// done called) once any hashing under way ends.
	Close()
}

// newMD5 returns the hash for a body of size bytes (< 0: unknown); the
// caller Closes it when done.
func newMD5(size int64) bodyMD5 {
	if size >= simdMD5Min && md5SIMD {
		return md5Batch().open()
	}
	return stdMD5{md5.New()}
}

// md5SIMD reports whether md5-simd has vector code here (amd64 with
// AVX2). Without it its hashers are crypto/md5's, hashing inside Write,
// and the feeder would hash every body on one goroutine.
var md5SIMD = cpuid.CPU.Supports(cpuid.AVX2)

// stdMD5 hashes each buffer as it is added, with crypto/md5.
type stdMD5 struct{ hash.Hash }

func (h stdMD5) add(p []byte, done func()) {
	h.Write(p)
	if done != nil {
		done()
	}
}

func (stdMD5) flush() {}

func (stdMD5) Close() {}

// laneWait is how long (at most) bodies wait for other bodies' buffers
// before they are hashed alone, counted from when the first of them
// began to wait: a backstop for bodies whose neighbours stall; they
// normally send within one chunk's time.
const laneWait = 100 * time.Millisecond

// laneQueueMax is how many buffers (chunks of rgw_max_chunk_size) a body
// holds unhashed before they are hashed whatever its neighbours do; add
// waits while a body holds one more, which bounds the memory a body
// holds beyond its write window.
const laneQueueMax = 3

// laneMin is the fewest bodies the feeder hashes together unless one
// must go alone (below it, md5-simd hashes each stream with its scalar
// code anyway).
const laneMin = 3

// laneStep is what the feeder gives each body's hasher per round: one
// of md5-simd's internal blocks (32 KiB), so no body's channel to the
// hasher (3 blocks deep) fills before every body has a block queued.
const laneStep = 32 << 10

// laneLanes is the most streams md5-simd hashes in one pass.
const laneLanes = 16

// laneRetire is how many hashers an md5-simd server gives out before
// the batch starts a new one: v1.1.2's server never forgets a closed
// hasher (minio/md5-simd#27, fixed after the release) and walks them all
// at each pass, so it would slow down for as long as the process lives
// (measured by a reviewer: 200 passes of 32 KiB took 10.7 ms on a fresh
// server, 452 ms after 20,000 hashers). A retired server is closed once
// its last hasher is.
const laneRetire = 64

// laneBatch runs the MD5s of large bodies in minio/md5-simd's shared
// multi-lane hasher, which hashes up to 16 streams in one pass (AVX-512,
// or two runs of 8 at once with AVX2). A pass costs
// about the same whether one lane or all carry data, and md5-simd falls
// back to one scalar lane per stream below three, so the saving depends
// on how many bodies are hashed in the same passes. Hashed as each chunk
// arrived, from each upload's goroutine, four concurrent 32 MiB PUTs
// rarely overlapped and the MD5 cost half the gateway's CPU.
//
// So a body's buffers queue here, and one goroutine, the feeder, hashes
// the queued bodies together, giving each hasher laneStep bytes in turn:
// the hasher finds a block of every body waiting at each pass. The
// feeder starts once every open body has a buffer queued, and hashes
// while at least laneMin of them (or every open body, if fewer) still
// have bytes; the rest wait for the next batch. A body is hashed
// whatever its neighbours do (urgent) when it needs its sum, holds more
// than laneQueueMax buffers, or has waited laneWait (see there). One
// batch per process, started on first use and living as long as the
// process, like crypto's own tables; the feeder runs while there is work
// for it, and md5-simd's servers are replaced as laneRetire says.
type laneBatch struct {
	newServer func() md5simd.Server
	mu        sync.Mutex
	srv       *laneServer // the server new bodies hash on
	idle      *sync.Cond  // broadcast when the feeder lets a body go
	bodies    int         // bodies open
	feeding   []*laneMD5  // bodies the feeder is hashing
	ready     []*laneMD5  // bodies with bytes queued, waiting for a batch
	feeder    bool        // the feeder goroutine runs
	timer     *time.Timer // makes ready bodies urgent after laneWait (armed, or its callback due, while ready is not empty)
	armed     bool        // timer is armed
}

// laneServer is one md5-simd server and the count of its hashers.
type laneServer struct {
	md5simd.Server
	given, open int // hashers given out, and not yet closed
}

var md5Batch = sync.OnceValue(func() *laneBatch {
	return newLaneBatch(func() md5simd.Server { return md5simd.NewServer() })
})

// newLaneBatch returns a batch hashing on servers newServer makes.
func newLaneBatch(newServer func() md5simd.Server) *laneBatch {
	b := &laneBatch{newServer: newServer}
	b.idle = sync.NewCond(&b.mu)
	b.timer = time.AfterFunc(time.Hour, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.armed = false
		for _, h := range b.ready {
			h.urgent = true
		}
		b.runLocked()
	})
	b.timer.Stop()
	return b
}

// laneMD5 is one body's hash in a laneBatch.
type laneMD5 struct {
	b   *laneBatch
	h   md5simd.Hasher
	srv *laneServer
	// guarded by b.mu
	queue   []queued // added, not yet hashed, in order
	off     int      // bytes of queue[0] hashed
	feeding bool     // in b.feeding
	urgent  bool     // hash it even alone
	closed  bool
}

type queued struct {
	p    []byte
	done func()
}

func (q queued) release() {
	if q.done != nil {
		q.done()
	}
}

// open starts a body's hash on the current server (replacing it after
// laneRetire hashers); the caller Closes it.
func (b *laneBatch) open() *laneMD5 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil || b.srv.given == laneRetire {
		if b.srv != nil && b.srv.open == 0 {
			b.srv.Close()
		}
		b.srv = &laneServer{Server: b.newServer()}
	}
	b.srv.given++
	b.srv.open++
	b.bodies++
	return &laneMD5{b: b, h: b.srv.NewHash(), srv: b.srv}
}

// runLocked hands every ready body to the feeder, starting it if need be.
func (b *laneBatch) runLocked() {
	for _, h := range b.ready {
		h.feeding = true
		b.feeding = append(b.feeding, h)
	}
	clear(b.ready)
	b.ready = b.ready[:0]
	if b.armed {
		b.timer.Stop()
		b.armed = false
	}
	if len(b.feeding) > 0 && !b.feeder {
		b.feeder = true
		go b.feed()
	}
}

// readyLocked puts h (not feeding, with bytes queued) in the batch that
// waits, and starts it if every open body now has bytes to hash or h is
// urgent.
func (b *laneBatch) readyLocked(h *laneMD5) {
	if !slices.Contains(b.ready, h) {
		b.ready = append(b.ready, h)
	}
	if h.urgent || b.allHaveBytesLocked() {
		b.runLocked()
	} else {
		b.armLocked()
	}
}

// allHaveBytesLocked reports whether every open body (up to a pass's
// lanes) has bytes queued, waiting or being hashed.
func (b *laneBatch) allHaveBytesLocked() bool {
	return len(b.ready)+len(b.feeding) >= min(b.bodies, laneLanes)
}

// armLocked starts the laneWait timer for the waiting bodies, unless it
// runs already.
func (b *laneBatch) armLocked() {
	if len(b.ready) > 0 && !b.armed {
		b.timer.Reset(laneWait)
		b.armed = true
	}
}

func (h *laneMD5) add(p []byte, done func()) {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	h.queue = append(h.queue, queued{p, done})
	if len(h.queue) > laneQueueMax {
		h.urgent = true
	}
	if !h.feeding {
		b.readyLocked(h)
	}
	// urgent, so fed until its queue is empty: wait for room
	for len(h.queue) > laneQueueMax+1 {
		b.idle.Wait()
	}
}

// feed hashes the feeding bodies' queues, laneStep bytes of each body in
// turn, until none is left that should go on.
func (b *laneBatch) feed() {
	type step struct {
		h *laneMD5
		p []byte
	}
	var steps []step
	for {
		b.mu.Lock()
		for _, s := range steps { // the last round's, now hashed
			h := s.h
			h.off += len(s.p)
			if h.off == len(h.queue[0].p) {
				h.pop()
				b.idle.Broadcast() // room in its queue
			}
		}
		steps = steps[:0]
		kept := b.feeding[:0]
		for _, h := range b.feeding {
			for len(h.queue) > 0 && h.off == len(h.queue[0].p) { // empty buffers
				h.pop()
			}
			if len(h.queue) == 0 || h.closed {
				h.feeding, h.urgent = false, false
				b.idle.Broadcast()
				continue
			}
			kept = append(kept, h)
		}
		clear(b.feeding[len(kept):])
		b.feeding = kept
		if len(b.ready) > 0 && b.allHaveBytesLocked() {
			b.runLocked() // those waiting join
		}
		if n := len(b.feeding); n < min(laneMin, b.bodies) {
			// too few to share passes: all but the urgent wait for others
			// (no broadcast: Sum and add wait only for urgent bodies,
			// Close for a closed one, which left above)
			kept = b.feeding[:0]
			for _, h := range b.feeding {
				if h.urgent {
					kept = append(kept, h)
					continue
				}
				h.feeding = false
				b.ready = append(b.ready, h)
			}
			clear(b.feeding[len(kept):])
			b.feeding = kept
			b.armLocked()
		}
		for _, h := range b.feeding {
			q := h.queue[0].p
			steps = append(steps, step{h, q[h.off:min(len(q), h.off+laneStep)]})
		}
		if len(steps) == 0 {
			b.feeder = false
		}
		b.mu.Unlock()
		if len(steps) == 0 {
			return
		}
		for _, s := range steps {
			s.h.h.Write(s.p)
		}
	}
}

// flush makes h urgent if it has bytes queued, starting a batch of
// every ready body, h's among them, so that they share the passes.
func (h *laneMD5) flush() {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	h.flushLocked()
}

func (h *laneMD5) flushLocked() {
	if len(h.queue) > 0 {
		h.urgent = true
		if !h.feeding {
			h.b.readyLocked(h)
		}
	}
}

// Sum waits until h's queue is hashed (flush).
func (h *laneMD5) Sum(in []byte) []byte {
	b := h.b
	b.mu.Lock()
	h.flushLocked()
	for h.feeding {
		b.idle.Wait()
	}
	b.mu.Unlock()
	return h.h.Sum(in)
}

func (h *laneMD5) Close() {
	b := h.b
	b.mu.Lock()
	if h.closed {
		b.mu.Unlock()
		return
	}
	h.closed = true
	for h.feeding { // the feeder lets it go after its current step
		b.idle.Wait()
	}
	b.ready = slices.DeleteFunc(b.ready, func(r *laneMD5) bool { return r == h })
	drop := h.queue
	h.queue = nil
	b.bodies--
	h.srv.open--
	retired := h.srv != b.srv && h.srv.open == 0
	if len(b.ready) > 0 && b.allHaveBytesLocked() {
		b.runLocked() // the others were waiting for this one
	}
	b.mu.Unlock()
	for _, q := range drop {
		q.release()
	}
	h.h.Close()
	if retired {
		h.srv.Close()
	}
}

// pop drops h's first buffer, hashed.
func (h *laneMD5) pop() {
	h.queue[0].release()
	h.queue[0] = queued{}
	h.queue, h.off = h.queue[1:], 0
}
