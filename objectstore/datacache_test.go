package objectstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
)

// countingDevice is a data device on a file that counts reads.
type countingDevice struct {
	f     *os.File
	reads atomic.Int64
}

func newCountingDevice(t *testing.T, size int64) *countingDevice {
	f, err := os.Create(filepath.Join(t.TempDir(), "block"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return &countingDevice{f: f}
}

func (d *countingDevice) ReadAt(p []byte, off int64) (int, error) {
	d.reads.Add(1)
	return d.f.ReadAt(p, off)
}
func (d *countingDevice) WriteAt(p []byte, off int64) (int, error) { return d.f.WriteAt(p, off) }
func (d *countingDevice) Sync() error                              { return d.f.Sync() }
func (d *countingDevice) Close() error                             { return d.f.Close() }

// TestDataCache: data read twice is served from the data cache, not the
// device, from its third read on; after an overwrite, a removal and block reuse
// every read returns the current bytes; bytes changed on the device under
// cached data are still served from the cache by Read and found by
// ReadDevice (deep scrub's read); a store without the cache reads the
// device every time.
func TestDataCache(t *testing.T) {
	dev := newCountingDevice(t, 1<<20)
	s := openStore(t, t.TempDir(), objectstore.Options{Size: 1 << 20, InlineMax: 512, Device: dev})
	defer s.Close()
	apply := func(fn func(*objectstore.Transaction)) {
		t.Helper()
		var txn objectstore.Transaction
		fn(&txn)
		if err := s.Apply(&txn); err != nil {
			t.Fatal(err)
		}
	}
	read := func(oid string, want []byte) int64 {
		t.Helper()
		before := dev.reads.Load()
		got, err := s.Read("c", oid, 0, 0)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read %s: %v (%d bytes, want %d)", oid, err, len(got), len(want))
		}
		return dev.reads.Load() - before
	}
	v1 := bytes.Repeat([]byte("v1"), 32<<10)
	apply(func(t *objectstore.Transaction) { t.CreateCollection("c"); t.Write("c", "a", 0, v1) })
	// the first read only notes the blocks; the second caches them
	for i := range 2 {
		if n := read("a", v1); n == 0 {
			t.Fatalf("read %d did not read the device", i+1)
		}
	}
	if n := read("a", v1); n != 0 {
		t.Fatalf("the third read made %d device reads, want 0 (cached)", n)
	}
	// a window of cached blocks
	if got, err := s.Read("c", "a", 5000, 9000); err != nil || !bytes.Equal(got, v1[5000:14000]) {
		t.Fatalf("window read: %v", err)
	}
	// an overwrite moves the object to new blocks and frees the old ones
	v2 := bytes.Repeat([]byte("v2"), 32<<10)
	apply(func(t *objectstore.Transaction) { t.Write("c", "a", 0, v2) })
	read("a", v2)
	read("a", v2)
	// fill the device through freed blocks again and again: every read
	// must see its object's current bytes, never a freed block's old ones
	for i := range 40 {
		data := bytes.Repeat(fmt.Appendf(nil, "%03d", i), 20<<10+i*100)
		oid := fmt.Sprint("o", i%3)
		apply(func(t *objectstore.Transaction) {
			t.Remove("c", "a")
			t.Write("c", "a", 0, v2)
			t.Truncate("c", oid, 0)
			t.Write("c", oid, 0, data)
		})
		read(oid, data)
		read(oid, data)
		read("a", v2)
	}
	// change the device under the cached blocks of a version written once
	v3 := bytes.Repeat([]byte("v3"), 32<<10)
	apply(func(t *objectstore.Transaction) { t.Write("c", "a", 0, v3) })
	read("a", v3)
	read("a", v3)
	raw := make([]byte, 1<<20)
	if _, err := dev.f.ReadAt(raw, 0); err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, v3[:4096])
	if at < 0 {
		t.Fatal("the object's data is not on the device")
	}
	if _, err := dev.f.WriteAt([]byte{raw[at+100] ^ 0xff}, int64(at+100)); err != nil {
		t.Fatal(err)
	}
	if n := read("a", v3); n != 0 {
		t.Fatalf("a cached read made %d device reads", n)
	}
	if _, err := s.ReadDevice("c", "a", 0, 0); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("ReadDevice of corrupted blocks: %v, want ErrCorrupt", err)
	}

	// without the cache every read goes to the device
	dev2 := newCountingDevice(t, 1<<20)
	s2 := openStore(t, t.TempDir(), objectstore.Options{Size: 1 << 20, InlineMax: 512, Device: dev2, DataCacheSize: -1})
	defer s2.Close()
	var txn objectstore.Transaction
	txn.CreateCollection("c")
	txn.Write("c", "a", 0, v1)
	if err := s2.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		before := dev2.reads.Load()
		if _, err := s2.Read("c", "a", 0, 0); err != nil || dev2.reads.Load() == before {
			t.Fatalf("uncached read: %v, device reads %d", err, dev2.reads.Load()-before)
		}
	}
}

// TestDataCacheConcurrent: readers race writers that keep rewriting
// objects on a device so small that freed blocks are reused at once.
// Every read must return one whole version of its object (each block
// stamped with it), and never one older than the newest whose write had
// returned before the read began — zero-copy reads (ReadVec) too, whose
// parts are looked at only after further reads refilled the cache.
func TestDataCacheConcurrent(t *testing.T) {
	s := openStore(t, t.TempDir(), objectstore.Options{Size: 512 << 10, InlineMax: 512})
	defer s.Close()
	const objs, size = 4, 40 << 10
	var setup objectstore.Transaction
	setup.CreateCollection("c")
	if err := s.Apply(&setup); err != nil {
		t.Fatal(err)
	}
	version := func(v uint32) []byte {
		b := make([]byte, size)
		for i := 0; i < size; i += 4 {
			b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
		return b
	}
	var acked [objs]atomic.Uint32
	writes := 400
	if testing.Short() {
		writes = 100
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	stop := make(chan struct{})
	for w := range 2 { // writers: object w and w+2
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := uint32(1); v <= uint32(writes); v++ {
				o := w + 2*int(v%2)
				var txn objectstore.Transaction
				txn.Write("c", fmt.Sprint(o), 0, version(v))
				if err := s.Apply(&txn); err != nil {
					errs <- err
					return
				}
				acked[o].Store(v)
			}
		}()
	}
	var rwg sync.WaitGroup
	for r := range 4 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				o := rng.IntN(objs)
				floor := acked[o].Load()
				var got []byte
				var err error
				if r%2 == 0 {
					got, err = s.Read("c", fmt.Sprint(o), 0, 0)
				} else {
					// zero-copy: hold the parts (cache buffers) while the
					// writers go on and this reader's next reads refill the
					// cache — possibly the very units — and only then look
					parts, sums, release, verr := s.ReadVec("c", fmt.Sprint(o), 0, 0)
					err = verr
					if err == nil {
						for range 3 {
							s.Read("c", fmt.Sprint(rng.IntN(objs)), 0, 0)
						}
						for i, p := range parts {
							if crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)) != sums[i].CRC {
								errs <- fmt.Errorf("read %d: part %d changed after its checksum was taken", o, i)
								release()
								return
							}
						}
						got = bytes.Join(parts, nil)
						release()
					}
				}
				if errors.Is(err, objectstore.ErrNotFound) && floor == 0 {
					continue
				}
				if err != nil || len(got) != size {
					errs <- fmt.Errorf("read %d: %v (%d bytes)", o, err, len(got))
					return
				}
				v := uint32(got[0]) | uint32(got[1])<<8 | uint32(got[2])<<16 | uint32(got[3])<<24
				if v < floor || !bytes.Equal(got, version(v)) {
					errs <- fmt.Errorf("read %d: version %d (whole: %v), acknowledged %d before the read", o, v, bytes.Equal(got, version(v)), floor)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Fsck(true); err != nil {
		t.Fatal(err)
	}
}

// TestSetCacheSizes: shrinking the caches of a running store evicts the
// data cache down to its new budget and the onode cache to its new size,
// reads still return the stored bytes, and grown again the data cache
// fills again.
func TestSetCacheSizes(t *testing.T) {
	const unit = 64 << 10 // the data cache's unit
	dev := newCountingDevice(t, 64<<20)
	s := openStore(t, t.TempDir(), objectstore.Options{Size: 64 << 20, InlineMax: 512, Device: dev, DataCacheSize: 32 * 16 * unit})
	defer s.Close()
	data := make([]byte, 24<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	var txn objectstore.Transaction
	txn.CreateCollection("c")
	for i := range 8 {
		txn.Write("c", fmt.Sprintf("o%d", i), 0, data[i*3<<20:(i+1)*3<<20])
	}
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	readAll := func() {
		t.Helper()
		for i := range 8 {
			got, err := s.Read("c", fmt.Sprintf("o%d", i), 0, 0)
			if err != nil || !bytes.Equal(got, data[i*3<<20:(i+1)*3<<20]) {
				t.Fatalf("read o%d: %v", i, err)
			}
		}
	}
	readAll() // noted
	readAll() // cached
	full, onodes := s.CacheBytes()
	if full < 16<<20 || onodes == 0 {
		t.Fatalf("after reading 24 MiB: data cache %d bytes, onode cache %d", full, onodes)
	}
	s.SetCacheSizes(16*unit, 0) // one unit per shard; no onodes
	if d, o := s.CacheBytes(); d > 16*unit || o != 0 {
		t.Fatalf("shrunk to %d and 0: data cache %d bytes, onode cache %d", 16*unit, d, o)
	}
	readAll()
	if d, _ := s.CacheBytes(); d > 16*unit {
		t.Fatalf("reads grew the shrunk data cache to %d bytes", d)
	}
	s.SetCacheSizes(32*16*unit, 1<<20)
	readAll()
	readAll()
	if d, o := s.CacheBytes(); d < 16<<20 || o == 0 {
		t.Fatalf("grown again: data cache %d bytes, onode cache %d", d, o)
	}
}
