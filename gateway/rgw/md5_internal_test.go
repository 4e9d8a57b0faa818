package rgw

import (
	"bytes"
	"crypto/md5"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/cpuid/v2"
	md5simd "github.com/minio/md5-simd"
)

// TestLaneMD5: bodies hashed side by side in one batch get crypto/md5's
// digest; each buffer's done is called exactly once, after the buffer is
// hashed (the test scribbles over a buffer once its done is called).
func TestLaneMD5(t *testing.T) {
	b := newLaneBatch(func() md5simd.Server { return md5simd.NewServer() })
	t.Cleanup(func() { b.srv.Close() })
	const bodies = 12
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			h := b.open()
			defer h.Close()
			want := md5.New()
			var dones atomic.Int32
			chunks := 1 + rng.IntN(12)
			for range chunks {
				p := make([]byte, rng.IntN(300<<10)) // any length, 0 and odd ones too
				for j := range p {
					p[j] = byte(rng.Uint32())
				}
				want.Write(p)
				var once atomic.Bool
				h.add(p, func() {
					if once.Swap(true) {
						t.Errorf("body %d: done called twice", i)
					}
					dones.Add(1)
					clear(p) // hashed already: changing it now must not matter
				})
				if rng.IntN(3) == 0 {
					runtime.Gosched()
				}
			}
			got := h.Sum(nil)
			if !bytes.Equal(got, want.Sum(nil)) {
				t.Errorf("body %d: md5 %x, want %x", i, got, want.Sum(nil))
			}
			if n := dones.Load(); n != int32(chunks) {
				t.Errorf("body %d: %d of %d buffers done after Sum", i, n, chunks)
			}
		})
	}
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bodies != 0 || len(b.feeding) != 0 || len(b.ready) != 0 {
		t.Fatalf("after every Close: %d bodies open, %d hashing, %d ready", b.bodies, len(b.feeding), len(b.ready))
	}
}

// TestLaneMD5Waits: a buffer waits for the other open bodies' buffers,
// and is hashed after laneWait if none come; Close drops what is queued.
func TestLaneMD5Waits(t *testing.T) {
	b := newLaneBatch(func() md5simd.Server { return md5simd.NewServer() })
	t.Cleanup(func() { b.srv.Close() })
	idle := b.open() // open, never sends: the other body waits for it
	busy := b.open()
	done := make(chan struct{})
	start := time.Now()
	busy.add(make([]byte, 64<<10), func() { close(done) })
	b.mu.Lock()
	if len(b.ready) != 1 || len(b.feeding) != 0 {
		t.Errorf("with another body open: %d ready, %d hashing; want it to wait", len(b.ready), len(b.feeding))
	}
	b.mu.Unlock()
	select {
	case <-done:
		if d := time.Since(start); d < laneWait {
			t.Errorf("hashed after %v, before laneWait", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting buffer was never hashed")
	}
	// a second buffer of each body: the batch runs once both are ready
	var hashed sync.WaitGroup
	hashed.Add(2)
	busy.add(make([]byte, 64<<10), hashed.Done)
	idle.add(make([]byte, 64<<10), hashed.Done)
	hashed.Wait()
	// Close drops what is queued, calling done
	dropped := make(chan struct{})
	idle.add(make([]byte, 64<<10), func() { close(dropped) })
	idle.Close()
	<-dropped
	busy.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bodies != 0 || len(b.feeding) != 0 {
		t.Fatalf("after Close: %d bodies open, %d hashing", b.bodies, len(b.feeding))
	}
}

// TestLaneMD5Flush: a flushed body's buffers go to the feeder at once,
// without waiting for the other open bodies' (or laneWait).
func TestLaneMD5Flush(t *testing.T) {
	b := newLaneBatch(func() md5simd.Server { return md5simd.NewServer() })
	t.Cleanup(func() { b.srv.Close() })
	idle := b.open() // open, never sends
	defer idle.Close()
	h := b.open()
	defer h.Close()
	want := md5.New()
	p := bytes.Repeat([]byte{7}, 64<<10)
	want.Write(p)
	done := make(chan struct{})
	h.add(p, func() { close(done) })
	h.flush()
	b.mu.Lock()
	handed := h.feeding || len(h.queue) == 0
	b.mu.Unlock()
	if !handed {
		t.Fatal("after flush the body's buffer still waits for the other body")
	}
	<-done
	if got := h.Sum(nil); !bytes.Equal(got, want.Sum(nil)) {
		t.Fatalf("md5 %x, want %x", got, want.Sum(nil))
	}
}

// TestLaneMD5Bounded: a body whose neighbours send nothing holds at most
// laneQueueMax+1 buffers unhashed (add waits), and its MD5 is right.
func TestLaneMD5Bounded(t *testing.T) {
	b := newLaneBatch(func() md5simd.Server { return md5simd.NewServer() })
	t.Cleanup(func() { b.srv.Close() })
	idle := b.open()
	defer idle.Close()
	h := b.open()
	defer h.Close()
	want := md5.New()
	for i := range 40 {
		p := bytes.Repeat([]byte{byte(i)}, 256<<10)
		want.Write(p)
		h.add(p, nil)
		b.mu.Lock()
		n := len(h.queue)
		b.mu.Unlock()
		if n > laneQueueMax+1 {
			t.Fatalf("after %d buffers: %d unhashed, want at most %d", i+1, n, laneQueueMax+1)
		}
	}
	if got := h.Sum(nil); !bytes.Equal(got, want.Sum(nil)) {
		t.Fatalf("md5 %x, want %x", got, want.Sum(nil))
	}
}

// TestLaneMD5Retires: the batch moves to a new md5-simd server every
// laneRetire hashers (v1.1.2's server keeps every hasher it gave out),
// and closes a retired one when its last hasher closes.
func TestLaneMD5Retires(t *testing.T) {
	var servers []*countedServer
	b := newLaneBatch(func() md5simd.Server {
		s := &countedServer{Server: md5simd.NewServer()}
		servers = append(servers, s)
		return s
	})
	t.Cleanup(func() { b.srv.Close() })
	hash := func(h *laneMD5) {
		h.add([]byte("abc"), nil)
		if got, want := h.Sum(nil), md5.Sum([]byte("abc")); !bytes.Equal(got, want[:]) {
			t.Fatalf("md5 %x, want %x", got, want)
		}
	}
	long := b.open() // spans the first retirement
	for range laneRetire - 1 {
		h := b.open()
		hash(h)
		h.Close()
	}
	next := b.open() // the second server's first
	hash(next)
	if len(servers) != 2 || servers[0].closed.Load() {
		t.Fatalf("after %d hashers: %d servers, first closed %v; want 2, the first open (a hasher is)", laneRetire+1, len(servers), servers[0].closed.Load())
	}
	hash(long)
	long.Close()
	if !servers[0].closed.Load() {
		t.Fatal("a retired server stayed open after its last hasher closed")
	}
	next.Close()
	if servers[1].closed.Load() {
		t.Fatal("the current server was closed")
	}
}

type countedServer struct {
	md5simd.Server
	closed atomic.Bool
}

func (s *countedServer) Close() {
	s.closed.Store(true)
	s.Server.Close()
}

// BenchmarkBodyMD5 hashes 4 bodies of 8 chunks of 4 MiB whose chunks
// arrive 4-20 ms apart, as four 32 MiB PUTs' chunks reach the gateway:
// "direct" hashes each chunk on arrival in the shared multi-lane hasher
// (the gateway before laneBatch), "batch" through laneBatch, "std" with
// crypto/md5. cpu-ms/op is the process's CPU time (user + system).
func BenchmarkBodyMD5(b *testing.B) {
	chunk := make([]byte, 4<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	lanes := md5simd.NewServer()
	gap := 16
	if testing.Short() {
		gap = 0
	}
	run := func(b *testing.B, open func() bodyMD5) {
		var r0, r1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		for i := 0; b.Loop(); i++ {
			var wg sync.WaitGroup
			for s := range 4 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(i), uint64(s)))
					h := open()
					defer h.Close()
					for range 8 {
						if gap > 0 {
							time.Sleep(time.Duration(gap/4+rng.IntN(gap)) * time.Millisecond) // the next chunk arrives
						}
						h.add(chunk, nil)
					}
					h.Sum(nil)
				})
			}
			wg.Wait()
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	}
	b.Run("std", func(b *testing.B) { run(b, func() bodyMD5 { return stdMD5{md5.New()} }) })
	b.Run("direct", func(b *testing.B) { run(b, func() bodyMD5 { return directMD5{lanes.NewHash()} }) })
	batch := func(b *testing.B) {
		lb := newLaneBatch(func() md5simd.Server { return md5simd.NewServer() })
		run(b, func() bodyMD5 { return lb.open() })
		if lb.srv != nil { // made by the first open
			lb.srv.Close()
		}
	}
	b.Run("batch", batch)  // md5-simd's kernel as wide512 chose it
	if md5SIMDWideAtInit { // this CPU has AVX-512: both kernels, whatever wide512 says
		was := md5SIMDWide
		defer func() { md5SIMDWide = was }()
		md5SIMDWide = true
		b.Run("batch-avx512", batch)
		md5SIMDWide = false
		b.Run("batch-avx2", batch)
	}
}

// directMD5 hashes each buffer as it is added, in the multi-lane hasher.
type directMD5 struct{ md5simd.Hasher }

func (h directMD5) add(p []byte, done func()) { h.Write(p) }

func (directMD5) flush() {}

// TestMD5KernelSwitch: the go:linkname in md5.go reaches md5-simd's
// variable (a broken link would leave a variable of our own, false,
// and the choice of kernel would silently do nothing).
func TestMD5KernelSwitch(t *testing.T) {
	if !cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ) {
		t.Skip("no AVX-512 here: md5-simd's init leaves its switch false either way")
	}
	if !md5SIMDWideAtInit {
		t.Fatal("md5-simd's AVX-512 switch read false on a CPU with AVX-512: the go:linkname no longer reaches it")
	}
	if md5SIMDWide != wide512() {
		t.Fatalf("switch %v, want %v", md5SIMDWide, wide512())
	}
}
