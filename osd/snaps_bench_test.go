package osd_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdop"
)

// snapBenchObjects 4 MiB objects are written once per round.
const snapBenchObjects = 64

// prefill writes the benchmark's objects o0 … o(n-1) of size bytes.
func prefill(b *testing.B, p *client.Pool, n, size int) {
	data := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(data)
	for i := range n {
		if err := p.WriteFull(context.Background(), fmt.Sprintf("o%d", i), data); err != nil {
			b.Fatal(err)
		}
	}
}

// overwriteRound writes 4 KiB at a random block of each of the n
// objects of size bytes once, 16 in flight, through w.
func overwriteRound(b *testing.B, w *client.Pool, rng *rand.Rand, n, size int) {
	offs := make([]uint64, n)
	for i := range offs {
		offs[i] = uint64(rng.Intn(size/4096)) * 4096
	}
	data := make([]byte, 4096)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := w.Write(context.Background(), fmt.Sprintf("o%d", i), data, offs[i]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func storeUsed(b *testing.B, stores []*objectstore.BlockStore) uint64 {
	var n uint64
	for _, s := range stores {
		st, err := s.StatFS()
		if err != nil {
			b.Fatal(err)
		}
		n += st.Used
	}
	return n
}

// BenchmarkSnapOverwrite measures 4 KiB random overwrites of 4 MiB
// objects, 16 in flight, in a 3-replica pool (rep3) and in an
// erasure-coded 2+1 pool with overwrites and a 4 KiB stripe unit (ec21),
// without snapshots (head) and right after a snapshot, where every write
// is its object's first since the snap and clones it (after-snap: a new
// self-managed snap before each round over the 64 objects, taken with
// the timer stopped). It reports the data bytes each clone cost on each
// OSD (clone-B/op): the object stores' growth over the clones made, per
// copy or shard.
//
//	go test -run XXX -bench SnapOverwrite -benchtime 2048x ./osd
func BenchmarkSnapOverwrite(b *testing.B) {
	for _, pool := range []string{"rep3", "ec21"} {
		for _, snap := range []bool{false, true} {
			name := pool + "/head"
			if snap {
				name = pool + "/after-snap"
			}
			b.Run(name, func(b *testing.B) {
				p, stores, cl := benchClusterConn(b)
				if pool == "ec21" {
					p = ec21Pool(context.Background(), b, cl, "ec21", 32, 0)
				}
				prefill(b, p, snapBenchObjects, 4<<20)
				rng := rand.New(rand.NewSource(2))
				w := p
				var seq uint64
				var live []uint64
				before := storeUsed(b, stores)
				rounds := (b.N + snapBenchObjects - 1) / snapBenchObjects
				b.ResetTimer()
				for range rounds {
					if snap {
						b.StopTimer()
						id, err := p.SelfManagedSnapCreate(context.Background())
						if err != nil {
							b.Fatal(err)
						}
						seq, live = id, append([]uint64{id}, live...)
						w = p.WithSnapContext(seq, live)
						b.StartTimer()
					}
					overwriteRound(b, w, rng, snapBenchObjects, 4<<20)
				}
				b.StopTimer()
				writes := float64(rounds * snapBenchObjects)
				b.ReportMetric(float64(b.Elapsed().Microseconds())/writes, "µs/write")
				if snap {
					grown := float64(storeUsed(b, stores) - before)
					b.ReportMetric(grown/writes/float64(len(stores)), "clone-B/op")
				}
			})
		}
	}
}

// snapTrimObjects 64 KiB objects get a clone each per BenchmarkSnapTrim
// iteration.
const snapTrimObjects = 1024

// BenchmarkSnapTrim measures how fast the snap trimmers of the three
// OSDs remove clones: each iteration takes a snap, overwrites 4 KiB of
// each of 1,024 64 KiB objects (a clone each; timer stopped), then
// removes the snap and waits until the OSDs' counters say every object
// was trimmed (polling their stats, which are not client I/O: client
// reads would hold the trimmers back, as the I/O scheduler puts clients
// first). Reports objects trimmed per second; afterwards no object has
// a clone and no block is shared.
//
//	go test -run XXX -bench SnapTrim -benchtime 3x ./osd
func BenchmarkSnapTrim(b *testing.B) {
	p, stores, cl := benchClusterConn(b)
	prefill(b, p, snapTrimObjects, 64<<10)
	trimmedTotal := func() uint64 {
		var n uint64
		for i := range stores {
			st, err := cl.OSDStats(context.Background(), int32(i))
			if err != nil {
				b.Fatal(err)
			}
			n += st.Perf.SnapTrimmed
		}
		return n
	}
	rng := rand.New(rand.NewSource(3))
	ctx := context.Background()
	var trimmed time.Duration
	b.ResetTimer()
	for it := range b.N {
		b.StopTimer()
		id, err := p.SelfManagedSnapCreate(ctx)
		if err != nil {
			b.Fatal(err)
		}
		overwriteRound(b, p.WithSnapContext(id, []uint64{id}), rng, snapTrimObjects, 64<<10)
		start := time.Now()
		b.StartTimer()
		if err := p.SelfManagedSnapRemove(ctx, id); err != nil {
			b.Fatal(err)
		}
		for trimmedTotal() < uint64((it+1)*snapTrimObjects) {
			time.Sleep(5 * time.Millisecond)
		}
		trimmed += time.Since(start)
	}
	b.StopTimer()
	if !trimDone(b, p, snapTrimObjects) {
		b.Fatal("clones left after trimming")
	}
	b.ReportMetric(float64(b.N*snapTrimObjects)/trimmed.Seconds(), "objects/s")
	for i, s := range stores {
		if blocks, _ := s.SharedBlocks(); blocks != 0 {
			b.Fatalf("osd.%d: %d blocks shared after trimming", i, blocks)
		}
	}
}

// trimDone reports whether none of the n objects has a clone left.
func trimDone(b *testing.B, p *client.Pool, n int) bool {
	for i := range n {
		ss, err := p.ListSnaps(context.Background(), fmt.Sprintf("o%d", i))
		if err != nil && !strings.Contains(err.Error(), osdop.ErrNotFound.Error()) {
			b.Fatal(err)
		}
		if ss != nil && len(ss.Clones) > 0 {
			return false
		}
	}
	return true
}

// BenchmarkSnapTrimClientLatency measures 4 KiB client writes (16 in
// flight, to 64 objects of their own) while nothing else runs (idle) and
// while the trimmers remove 1,024 clones (trimming: the snap is removed
// just before the timer starts). Reports the writes' median and 99th
// percentile latency and, while trimming, the objects trimmed meanwhile
// per second of the run.
//
//	go test -run XXX -bench SnapTrimClientLatency -benchtime 4000x ./osd
func BenchmarkSnapTrimClientLatency(b *testing.B) {
	for _, trim := range []bool{false, true} {
		name := "idle"
		if trim {
			name = "trimming"
		}
		b.Run(name, func(b *testing.B) {
			p, _, cl := benchClusterConn(b)
			ctx := context.Background()
			prefill(b, p, snapTrimObjects, 64<<10)
			trimmedTotal := func() uint64 {
				var n uint64
				for i := range 3 {
					st, err := cl.OSDStats(ctx, int32(i))
					if err != nil {
						b.Fatal(err)
					}
					n += st.Perf.SnapTrimmed
				}
				return n
			}
			if trim {
				id, err := p.SelfManagedSnapCreate(ctx)
				if err != nil {
					b.Fatal(err)
				}
				overwriteRound(b, p.WithSnapContext(id, []uint64{id}), rand.New(rand.NewSource(4)), snapTrimObjects, 64<<10)
				if err := p.SelfManagedSnapRemove(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
			before := trimmedTotal()
			lat := make([]time.Duration, b.N)
			next := make(chan int, b.N)
			for i := range b.N {
				next <- i
			}
			close(next)
			data := make([]byte, 4096)
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						t0 := time.Now()
						if err := p.Write(ctx, fmt.Sprintf("client%d", i%64), data, uint64(i%16)*4096); err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(t0)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			if trim {
				b.ReportMetric(float64(trimmedTotal()-before)/b.Elapsed().Seconds(), "trimmed/s")
			}
		})
	}
}
