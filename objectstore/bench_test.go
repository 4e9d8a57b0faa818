package objectstore_test

import (
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
)

func benchStore(b *testing.B) *objectstore.BlockStore {
	s, err := objectstore.Open(objectstore.Options{Dir: b.TempDir(), Size: 8 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	var txn objectstore.Transaction
	txn.CreateCollection("1.0")
	if err := s.Apply(&txn); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchWrites runs b.N WriteFull transactions of size bytes from 16
// concurrent writers (as 16 client ops in flight), each to a fresh object.
func benchWrites(b *testing.B, s objectstore.Store, size int) {
	data := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(data)
	var n atomic.Int64
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var txn objectstore.Transaction
			txn.WriteFull("1.0", fmt.Sprintf("obj-%d", n.Add(1)), data)
			txn.SetAttr("1.0", fmt.Sprintf("obj-%d", n.Load()), "_", []byte("v1"))
			if err := s.Apply(&txn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "txn/s")
}

// BenchmarkWrite4K: 4 KiB objects (stored inline in the metadata store).
func BenchmarkWrite4K(b *testing.B) { benchWrites(b, benchStore(b), 4<<10) }

// BenchmarkFill4K fills a new store with b.N new 4 KiB objects from 32
// writers (run it with -benchtime 1000000x): how fast a store of small
// objects grows, and what its metadata store holds after — the blob
// files' bytes, the part of them no key refers to (values compactions
// copied; separateValues), and the sstables'.
func BenchmarkFill4K(b *testing.B) {
	s := benchStore(b)
	var next atomic.Int64
	b.SetBytes(4 << 10)
	b.SetParallelism(16) // 32 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewSource(next.Add(1) << 40))
		data := make([]byte, 4<<10)
		for pb.Next() {
			rng.Read(data)
			var txn objectstore.Transaction
			txn.WriteFull("1.0", fmt.Sprintf("obj-%x", rng.Int63()), data)
			if err := s.Apply(&txn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	m := s.MetaStats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "txn/s")
	b.ReportMetric(float64(m.BlobBytes)/1e6, "blob-MB")
	b.ReportMetric(float64(m.BlobGarbageBytes)/1e6, "blob-garbage-MB")
	b.ReportMetric(float64(m.SSTBytes)/1e6, "sst-MB")
}

// BenchmarkWrite64K: 64 KiB objects (on the data device).
func BenchmarkWrite64K(b *testing.B) { benchWrites(b, benchStore(b), 64<<10) }

// BenchmarkWrite4M: 4 MiB objects (on the data device).
func BenchmarkWrite4M(b *testing.B) { benchWrites(b, benchStore(b), 4<<20) }

// BenchmarkCommit4K: one writer, so each 4 KiB (inline) transaction is a
// commit group of its own: ns/op is the latency of one metadata log write
// and sync.
func BenchmarkCommit4K(b *testing.B) {
	s := benchStore(b)
	data := make([]byte, 4<<10)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var txn objectstore.Transaction
		txn.WriteFull("1.0", fmt.Sprint("obj-", i), data)
		if err := s.Apply(&txn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead4M reads whole 4 MiB objects, checksums verified.
func BenchmarkRead4M(b *testing.B) {
	s := benchStore(b)
	data := make([]byte, 4<<20)
	rand.New(rand.NewSource(1)).Read(data)
	for i := 0; i < 64; i++ {
		var txn objectstore.Transaction
		txn.WriteFull("1.0", fmt.Sprint(i), data)
		if err := s.Apply(&txn); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Read("1.0", fmt.Sprint(i%64), 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

var (
	fillOnce  sync.Map // fill count → *objectstore.BlockStore
	fillMutex sync.Mutex
)

// filledStore returns a store holding n small objects (shared across the
// benchmark's runs: filling a million takes a while).
func filledStore(b *testing.B, n int) *objectstore.BlockStore {
	fillMutex.Lock()
	defer fillMutex.Unlock()
	if s, ok := fillOnce.Load(n); ok {
		return s.(*objectstore.BlockStore)
	}
	dir, err := tempDirNoCleanup()
	if err != nil {
		b.Fatal(err)
	}
	s, err := objectstore.Open(objectstore.Options{Dir: dir, Size: 8 << 30})
	if err != nil {
		b.Fatal(err)
	}
	var txn objectstore.Transaction
	txn.CreateCollection("1.0")
	if err := s.Apply(&txn); err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 256)
	for i := 0; i < n; i += 1000 {
		var txn objectstore.Transaction
		for j := i; j < min(n, i+1000); j++ {
			txn.WriteFull("1.0", fmt.Sprintf("fill-%09d", j), val)
		}
		if err := s.Apply(&txn); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.SettleForTest(); err != nil {
		b.Fatal(err)
	}
	fillOnce.Store(n, s)
	return s
}

// BenchmarkScale measures a 4 KiB object write and a stat+read of an
// existing object with 1,000 and 1,000,000 objects in the store: the cost
// per operation must not grow with the object count.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1000, 1_000_000} {
		b.Run(fmt.Sprintf("objects=%d/write4K", n), func(b *testing.B) {
			benchWrites(b, filledStore(b, n), 4<<10)
		})
		// the same 1000 objects in a small and a large store: the cost of
		// the object count alone
		b.Run(fmt.Sprintf("objects=%d/read-hot1000", n), func(b *testing.B) { benchReads(b, filledStore(b, n), 1000) })
		// every object equally likely: the working set grows with the store
		b.Run(fmt.Sprintf("objects=%d/read-random", n), func(b *testing.B) { benchReads(b, filledStore(b, n), n) })
	}
}

// benchReads stats and reads random objects among the first set.
func benchReads(b *testing.B, s objectstore.Store, set int) {
	rng := rand.New(rand.NewSource(2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("fill-%09d", rng.Intn(set))
		if _, err := s.Stat("1.0", name); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Read("1.0", name, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitCollection splits a collection of 10,000 objects (4 KiB
// inline, or 64 KiB on the device) in two, half moving: one op is one
// split, and objects/s is the rate at which it moves objects (their
// metadata: the data stays where it is).
func BenchmarkSplitCollection(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s := benchStore(b)
			data := make([]byte, size)
			rand.New(rand.NewSource(1)).Read(data)
			const objects = 10000
			for i := 0; i < objects; i += 500 {
				var txn objectstore.Transaction
				for j := i; j < i+500; j++ {
					txn.WriteFull("1.0", fmt.Sprintf("obj-%d", j), data)
				}
				if err := s.Apply(&txn); err != nil {
					b.Fatal(err)
				}
			}
			oddTo := func(c objectstore.Coll) func(string) objectstore.Coll { // the odd-numbered half
				return func(oid string) objectstore.Coll {
					if (oid[len(oid)-1]-'0')%2 == 1 {
						return c
					}
					return ""
				}
			}
			b.ResetTimer()
			for i := range b.N {
				// 1.0 → 1.1 on even runs, back on odd ones (the other way a split
				// goes: same work)
				from, to := objectstore.Coll("1.0"), objectstore.Coll("1.1")
				if i%2 == 1 {
					from, to = to, from
				}
				target := oddTo(to)
				var txn objectstore.Transaction
				if i%2 == 0 {
					txn.CreateCollection(to)
				}
				txn.SplitCollection(from, &objectstore.Split{Children: []objectstore.Coll{to}, Target: target})
				if err := s.Apply(&txn); err != nil {
					b.Fatal(err)
				}
				if i%2 == 1 {
					var rm objectstore.Transaction
					rm.RemoveCollection("1.1")
					if err := s.Apply(&rm); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)*objects/2/b.Elapsed().Seconds(), "objects/s")
		})
	}
}
