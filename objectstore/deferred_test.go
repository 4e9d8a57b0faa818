package objectstore_test

import (
	"bytes"
	"errors"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/shoal-project/shoal/objectstore"
)

// powerCut is what a power loss leaves of fs and dev now: only what was
// synced.
func powerCut(fs *vfs.MemFS, dev *memDevice) (*vfs.MemFS, *memDevice) {
	return fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: nil}), dev.crashClone(rand.New(rand.NewSource(1)), 0)
}

func deferredStore(t *testing.T, fs vfs.FS, dev objectstore.Device, blocks int) *objectstore.BlockStore {
	t.Helper()
	s, err := objectstore.Open(objectstore.Options{Dir: "store", FS: fs, Device: dev, Size: int64(blocks) * objectstore.BlockSize, InlineMax: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func seeded(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// TestDeferredWriteReplay: a small write is acknowledged without a
// device sync (its blocks go into the metadata commit), so a power cut
// right after it loses the device's copy; reopening replays it.
func TestDeferredWriteReplay(t *testing.T) {
	fs, dev := vfs.NewCrashableMem(), newMemDevice(1<<20)
	s := deferredStore(t, fs, dev, 256)
	var setup objectstore.Transaction
	setup.CreateCollection(crashColl)
	if err := s.Apply(&setup); err != nil {
		t.Fatal(err)
	}
	data := seeded(3*objectstore.BlockSize+100, 1)
	var txn objectstore.Transaction
	txn.WriteFull(crashColl, "small", data)
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	if n := s.DeferredWrites(); n != 1 {
		t.Fatalf("deferred writes %d, want 1", n)
	}
	fsAfter, devAfter := powerCut(fs, dev)
	if !bytes.Equal(devAfter.cur, make([]byte, len(devAfter.cur))) {
		t.Fatal("the device's synced state holds data: the write was not deferred")
	}
	s.Close()

	s2 := deferredStore(t, fsAfter, devAfter, 256)
	defer s2.Close()
	got, err := s2.Read(crashColl, "small", 0, 0)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after the power cut: %d bytes, %v; want the %d written", len(got), err, len(data))
	}
	if err := s2.Fsck(true); err != nil {
		t.Fatal(err)
	}
}

// TestDeferredRetiredBeforeReuse: a deferred write's blocks, freed and
// then written by a group that syncs the device, must not be overwritten
// by replaying the old record after a power cut: the syncing group
// retires the records in its own commit.
func TestDeferredRetiredBeforeReuse(t *testing.T) {
	const blocks, big = 64, 17 // a big write is more than DefaultDeferredMax
	fs, dev := vfs.NewCrashableMem(), newMemDevice(blocks*objectstore.BlockSize)
	s := deferredStore(t, fs, dev, blocks)
	var setup objectstore.Transaction
	setup.CreateCollection(crashColl)
	setup.WriteFull(crashColl, "old", seeded(2*objectstore.BlockSize, 2)) // deferred, at the device's first blocks
	if err := s.Apply(&setup); err != nil {
		t.Fatal(err)
	}
	var rm objectstore.Transaction
	rm.Remove(crashColl, "old")
	if err := s.Apply(&rm); err != nil {
		t.Fatal(err)
	}
	// Rewrites of a big object, each to new blocks, sweep the device
	// until one takes the old object's blocks again.
	old := seeded(2*objectstore.BlockSize, 2)
	v := int64(10)
	for ; bytes.Equal(dev.cur[:len(old)], old); v++ {
		if v == 30 {
			t.Fatal("the old object's blocks were never taken again")
		}
		var txn objectstore.Transaction
		txn.WriteFull(crashColl, "big", seeded(big*objectstore.BlockSize, v))
		if err := s.Apply(&txn); err != nil {
			t.Fatalf("rewrite %d: %v", v, err)
		}
	}
	if n := s.DeferredWrites(); n != 1 {
		t.Fatalf("deferred writes %d, want 1", n)
	}
	fsAfter, devAfter := powerCut(fs, dev)
	s.Close()

	s2 := deferredStore(t, fsAfter, devAfter, blocks)
	defer s2.Close()
	got, err := s2.Read(crashColl, "big", 0, 0)
	if err != nil || !bytes.Equal(got, seeded(big*objectstore.BlockSize, v-1)) {
		t.Fatalf("after the power cut: %d bytes, %v; want the big object's last version", len(got), err)
	}
	if err := s2.Fsck(true); err != nil {
		t.Fatal(err)
	}
}

// TestDeferredDisabled: DeferredMax < 0 syncs the device for every group
// with data.
func TestDeferredDisabled(t *testing.T) {
	s, err := objectstore.Open(objectstore.Options{Dir: "store", FS: vfs.NewMem(), Device: newMemDevice(1 << 20), Size: 1 << 20, InlineMax: 1024, DeferredMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var txn objectstore.Transaction
	txn.CreateCollection(crashColl)
	txn.WriteFull(crashColl, "small", seeded(8192, 4))
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	if n := s.DeferredWrites(); n != 0 {
		t.Fatalf("deferred writes %d with DeferredMax -1", n)
	}
}

// gatedDevice holds each write until the test lets it go, once gated.
type gatedDevice struct {
	d       *memDevice
	gated   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedDevice) ReadAt(p []byte, off int64) (int, error) { return g.d.ReadAt(p, off) }
func (g *gatedDevice) Sync() error                             { return g.d.Sync() }
func (g *gatedDevice) Close() error                            { return g.d.Close() }
func (g *gatedDevice) WriteAt(p []byte, off int64) (int, error) {
	if g.gated.Load() {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.d.WriteAt(p, off)
}

// TestDeferredReadDuringCommit: a deferred group's metadata can commit
// before its device write ends; a reader that misses the onode cache
// then must wait for the data, not read blocks not yet written (which
// would fail their checksums).
func TestDeferredReadDuringCommit(t *testing.T) {
	dev := &gatedDevice{d: newMemDevice(1 << 20), entered: make(chan struct{}), release: make(chan struct{})}
	s, err := objectstore.Open(objectstore.Options{Dir: "store", FS: vfs.NewMem(), Device: dev, Size: 1 << 20, InlineMax: 1024, OnodeCacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var setup objectstore.Transaction
	setup.CreateCollection(crashColl)
	if err := s.Apply(&setup); err != nil {
		t.Fatal(err)
	}
	data := seeded(2*objectstore.BlockSize, 5)
	var txn objectstore.Transaction
	txn.WriteFull(crashColl, "new", data)
	dev.gated.Store(true)
	done := s.Submit(&txn)
	<-dev.entered // the deferred write has started, and is held
	for {         // until the commit is visible: the object is listed
		names, err := s.List(crashColl, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 1 {
			break
		}
		runtime.Gosched()
	}
	// The read runs here while the write is held; the device is let go
	// once the read waits for it (or never, if the read returns first).
	var once sync.Once
	let := func() {
		once.Do(func() {
			dev.gated.Store(false)
			close(dev.release)
		})
	}
	stop := make(chan struct{})
	go func() {
		for s.DeferredWaitsForTest() == 0 {
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
		let()
	}()
	b, err := s.Read(crashColl, "new", 0, 0)
	close(stop)
	let()
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("read during the commit: %d bytes, %v; want the %d written", len(b), err, len(data))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// failingDevice fails writes with err while armed.
type failingDevice struct {
	*memDevice
	err   error
	armed atomic.Bool
}

func (f *failingDevice) WriteAt(p []byte, off int64) (int, error) {
	if f.armed.Load() {
		return 0, f.err
	}
	return f.memDevice.WriteAt(p, off)
}

// TestDeferredWriteFailsAfterCommit: a deferred group whose metadata
// committed but whose device write failed (EIO, or ENOSPC from a sparse
// file's full file system) stands: the store stops, answers an error,
// reads of the object fail rather than return unwritten blocks, Close
// keeps the record, and opening the store again writes the data.
func TestDeferredWriteFailsAfterCommit(t *testing.T) {
	for _, werr := range []error{syscall.EIO, syscall.ENOSPC} {
		t.Run(werr.Error(), func(t *testing.T) {
			fs := vfs.NewMem()
			dev := &failingDevice{memDevice: newMemDevice(1 << 20), err: werr}
			open := func(d objectstore.Device) *objectstore.BlockStore {
				s, err := objectstore.Open(objectstore.Options{Dir: "store", FS: fs, Device: d, Size: 1 << 20, InlineMax: 1024})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			s := open(dev)
			a, b := seeded(2*objectstore.BlockSize, 6), seeded(3*objectstore.BlockSize, 7)
			var t1 objectstore.Transaction
			t1.CreateCollection(crashColl)
			t1.WriteFull(crashColl, "a", a) // deferred: a record outstanding
			if err := s.Apply(&t1); err != nil {
				t.Fatal(err)
			}
			dev.armed.Store(true)
			var t2 objectstore.Transaction
			t2.WriteFull(crashColl, "b", b)
			if err := s.Apply(&t2); !errors.Is(err, objectstore.ErrClosed) {
				t.Fatalf("write whose device write failed: %v, want ErrClosed", err)
			}
			dev.armed.Store(false)
			if _, err := s.Read(crashColl, "b", 0, 0); !errors.Is(err, objectstore.ErrClosed) {
				t.Fatalf("read of the unwritten object: %v, want ErrClosed", err)
			}
			var t3 objectstore.Transaction
			t3.WriteFull(crashColl, "c", seeded(100<<10, 8)) // would sync and retire the records
			if err := s.Apply(&t3); !errors.Is(err, objectstore.ErrClosed) {
				t.Fatalf("write after the store stopped: %v, want ErrClosed", err)
			}
			s.Close()

			s2 := open(dev.memDevice)
			defer s2.Close()
			for name, want := range map[string][]byte{"a": a, "b": b} {
				if got, err := s2.Read(crashColl, name, 0, 0); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s after reopening: %d bytes, %v; want the %d written", name, len(got), err, len(want))
				}
			}
			if err := s2.Fsck(true); err != nil {
				t.Fatal(err)
			}
		})
	}
}
