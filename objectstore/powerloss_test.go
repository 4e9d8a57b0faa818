package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	randv2 "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/shoal-project/shoal/objectstore"
)

// crasher cuts power at the n-th sync of either the data device or the
// metadata filesystem: it snapshots both as a power loss would leave them
// (synced bytes, plus a random part of the unsynced ones). What the store
// does afterwards cannot reach the snapshots, so later I/O simply succeeds
// (Pebble treats a failing WAL as fatal) and the writers stop.
type crasher struct {
	mu       sync.Mutex
	n        int
	where    string // the sync being counted: "device" or "fs FILE"
	at       string // where the power was cut
	crashed  bool
	rng      *rand.Rand
	fs       *vfs.MemFS
	dev      *memDevice
	fsAfter  *vfs.MemFS
	devAfter *memDevice
}

func (c *crasher) event(where string) error {
	c.mu.Lock()
	c.where = where
	defer c.mu.Unlock()
	if c.crashed {
		return nil
	}
	c.n--
	if c.n > 0 {
		return nil
	}
	c.crashed = true
	c.at = c.where
	pct := c.rng.Intn(101)
	c.fsAfter = c.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: randv2.New(randv2.NewPCG(uint64(c.rng.Int63()), 1))})
	c.devAfter = c.dev.crashClone(c.rng, pct)
	return nil
}

// memDevice is a Device in memory that remembers which blocks were synced.
type memDevice struct {
	mu     sync.Mutex
	cur    []byte
	synced []byte
	dirty  map[int64]bool // block numbers written since the last sync
	c      *crasher
}

func newMemDevice(size int) *memDevice {
	return &memDevice{cur: make([]byte, size), synced: make([]byte, size), dirty: map[int64]bool{}}
}

func (d *memDevice) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return copy(p, d.cur[off:]), nil
}

func (d *memDevice) WriteAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(d.cur[off:], p)
	for b := off / objectstore.BlockSize; b <= (off+int64(len(p))-1)/objectstore.BlockSize; b++ {
		d.dirty[b] = true
	}
	return len(p), nil
}

// WriteVecAt makes the store write a commit group's adjacent runs in one
// call, as it does on a file.
func (d *memDevice) WriteVecAt(bufs [][]byte, off int64) error {
	for _, b := range bufs {
		d.WriteAt(b, off)
		off += int64(len(b))
	}
	return nil
}

func (d *memDevice) Sync() error {
	if d.c != nil {
		if err := d.c.event("device"); err != nil {
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	copy(d.synced, d.cur)
	d.dirty = map[int64]bool{}
	return nil
}

func (d *memDevice) Close() error { return nil }

// crashClone is what the device holds after power loss: synced blocks, and
// each unsynced block with probability pct%.
func (d *memDevice) crashClone(rng *rand.Rand, pct int) *memDevice {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := newMemDevice(len(d.cur))
	copy(n.cur, d.synced)
	for b := range d.dirty {
		if rng.Intn(100) < pct {
			copy(n.cur[b*objectstore.BlockSize:(b+1)*objectstore.BlockSize], d.cur[b*objectstore.BlockSize:])
		}
	}
	copy(n.synced, n.cur)
	return n
}

func (c *crasher) crashedNow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// syncFS makes every file sync of the metadata store a crash point.
type syncFS struct {
	vfs.FS
	c *crasher
}

type syncFile struct {
	vfs.File
	c    *crasher
	name string
}

func (f syncFile) Sync() error {
	if err := f.c.event("fs " + f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f syncFile) SyncData() error { return f.Sync() }

func (f syncFile) SyncTo(length int64) (bool, error) {
	if err := f.Sync(); err != nil {
		return false, err
	}
	return true, nil
}

func (s syncFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := s.FS.Create(name, cat)
	if err != nil {
		return nil, err
	}
	return syncFile{f, s.c, name}, nil
}

func (s syncFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := s.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil {
		return nil, err
	}
	return syncFile{f, s.c, newname}, nil
}

func (s syncFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := s.FS.OpenReadWrite(name, cat, opts...)
	if err != nil {
		return nil, err
	}
	return syncFile{f, s.c, name}, nil
}

// TestPowerLoss cuts power at a random sync of the data device or the
// metadata log while four writers run, then restarts from what a power
// loss leaves (synced bytes plus a random part of the rest). Every
// acknowledged transaction must be there, whole; the in-flight one may or
// may not be; the allocation bitmap must match the data exactly.
func TestPowerLoss(t *testing.T) {
	seed := int64(os.Getpid())
	if v := os.Getenv("SHOAL_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	rng := rand.New(rand.NewSource(seed))
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for round := 0; round < rounds; round++ {
		fs := vfs.NewCrashableMem()
		dev := newMemDevice(64 << 20)
		c := &crasher{n: 5 + rng.Intn(120), rng: rand.New(rand.NewSource(rng.Int63())), fs: fs, dev: dev}
		dev.c = c
		s, err := objectstore.Open(objectstore.Options{Dir: "store", FS: syncFS{fs, c}, Device: dev, Size: 64 << 20, InlineMax: 8192})
		if err != nil {
			t.Fatalf("seed %d round %d: open: %v", seed, round, err)
		}
		var setup objectstore.Transaction
		setup.CreateCollection(crashColl)
		if err := s.Apply(&setup); err != nil {
			t.Fatalf("seed %d round %d: %v", seed, round, err)
		}
		var mu sync.Mutex
		want := map[string]*objState{}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				wrng := rand.New(rand.NewSource(int64(g) + seed))
				for v := 1; !c.crashedNow(); v++ {
					name := crashName(fmt.Sprintf("g%d-", g), wrng.Intn(6))
					var txn objectstore.Transaction
					mu.Lock()
					st := want[name]
					if st == nil {
						st = &objState{}
						want[name] = st
					}
					if wrng.Intn(6) == 0 && st.acked > 0 {
						txn.Remove(crashColl, name)
						st.inflight = 0
					} else {
						crashWrite(&txn, name, v)
						st.inflight = v
					}
					mu.Unlock()
					if err := s.Apply(&txn); err != nil {
						t.Errorf("apply: %v", err)
						return
					}
					if c.crashedNow() {
						return // acknowledged after the cut: may or may not have made it
					}
					mu.Lock()
					st.acked = st.inflight
					mu.Unlock()
					var err error
					switch {
					case g == 0 && v%8 == 0:
						// a memtable flush now and then: the cut may fall
						// in one, and values then live in blob files
						err = s.FlushMeta()
					case g == 1 && v%16 == 0:
						err = s.CompactMeta(context.Background()) // or in a full compaction
					}
					if err != nil && !c.crashedNow() {
						t.Errorf("flush or compaction: %v", err)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		s.Close()
		if c.fsAfter == nil {
			t.Fatalf("seed %d round %d: no crash happened", seed, round)
		}
		s2, err := objectstore.Open(objectstore.Options{Dir: "store", FS: c.fsAfter, Device: c.devAfter})
		if err != nil {
			t.Fatalf("seed %d round %d: reopen after power loss: %v", seed, round, err)
		}
		if err := s2.Fsck(true); err != nil {
			t.Fatalf("seed %d round %d: %v", seed, round, err)
		}
		for name, st := range want {
			got := 0
			if data, err := s2.Read(crashColl, name, 0, 0); err == nil {
				a, _ := s2.GetAttr(crashColl, name, "v")
				got, _ = strconv.Atoi(string(a))
				if err := crashOmapAgrees(s2, name, a); err != nil {
					t.Fatalf("seed %d round %d: %v", seed, round, err)
				}
				if !bytes.Equal(data, versionData(name, got)) {
					t.Fatalf("seed %d round %d: %s: data is not version %s's", seed, round, name, a)
				}
			} else if !errors.Is(err, objectstore.ErrNotFound) {
				t.Fatalf("seed %d round %d: %s: %v", seed, round, name, err)
			}
			if got != st.acked && got != st.inflight {
				names, lerr := s2.List(crashColl, "", 0)
				t.Fatalf("seed %d round %d: %s at version %d; acknowledged %d, in flight %d (crash at sync of %s; objects %q %v)", seed, round, name, got, st.acked, st.inflight, c.at, names, lerr)
			}
		}
		s2.Close()
	}
}
