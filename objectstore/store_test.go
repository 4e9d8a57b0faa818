package objectstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
)

func openStore(t testing.TB, dir string, opts objectstore.Options) *objectstore.BlockStore {
	t.Helper()
	opts.Dir = dir
	s, err := objectstore.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// randomTxn builds a transaction of 1–4 operations over a few objects in
// two collections, with offsets and lengths around block and inline
// boundaries.
func randomTxn(rng *rand.Rand) *objectstore.Transaction {
	colls := []objectstore.Coll{"1.0", "1.1"}
	objs := []string{"a", "b", "c", "obj\x00with/odd bytes"}
	sizes := []uint64{0, 1, 100, 1023, 1024, 1025, 4095, 4096, 4097, 8192, 12000, 20000, 70000}
	var t objectstore.Transaction
	for n := 1 + rng.Intn(4); n > 0; n-- {
		c, o := colls[rng.Intn(len(colls))], objs[rng.Intn(len(objs))]
		off, ln := sizes[rng.Intn(len(sizes))], sizes[rng.Intn(len(sizes))]
		switch k := rng.Intn(20); {
		case k < 6:
			data := make([]byte, ln)
			rng.Read(data)
			t.Write(c, o, off, data)
		case k < 7:
			data := make([]byte, ln)
			rng.Read(data)
			t.WriteFull(c, o, data)
		case k < 8:
			t.Zero(c, o, off, ln)
		case k < 9:
			t.Truncate(c, o, off)
		case k < 10:
			t.Remove(c, o)
		case k < 11:
			t.SetAttr(c, o, fmt.Sprintf("attr%d", rng.Intn(3)), []byte(fmt.Sprint(rng.Int())))
		case k < 12:
			t.RmAttr(c, o, fmt.Sprintf("attr%d", rng.Intn(3)))
		case k < 14:
			t.OmapSet(c, o, []omap.KV{{Key: fmt.Sprintf("k%02d", rng.Intn(20)), Value: []byte(fmt.Sprint(rng.Int()))}})
		case k < 15:
			t.OmapRm(c, o, []string{fmt.Sprintf("k%02d", rng.Intn(20))})
		case k < 16:
			t.OmapClear(c, o)
		case k < 17:
			t.Clone(c, o, objs[rng.Intn(len(objs))])
		case k < 18:
			t.StashForRollback(c, o, objs[rng.Intn(len(objs))], off)
		case k < 19:
			t.Touch(c, o)
		default:
			if rng.Intn(2) == 0 {
				t.CreateCollection(colls[rng.Intn(len(colls))])
			} else {
				t.RemoveCollection(colls[rng.Intn(len(colls))])
			}
		}
	}
	return &t
}

var sentinels = []error{objectstore.ErrNotFound, objectstore.ErrExists, objectstore.ErrNotEmpty, objectstore.ErrNoSpace, objectstore.ErrInvalid}

func errClass(err error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// sameState compares every collection, object, attribute and omap entry.
func sameState(t *testing.T, got, want objectstore.Store) {
	t.Helper()
	gc, err1 := got.Collections()
	wc, err2 := want.Collections()
	if err1 != nil || err2 != nil || fmt.Sprint(gc) != fmt.Sprint(wc) {
		t.Fatalf("collections %v (%v), want %v (%v)", gc, err1, wc, err2)
	}
	for _, c := range wc {
		gn, _ := got.List(c, "", 0)
		wn, _ := want.List(c, "", 0)
		if fmt.Sprintf("%q", gn) != fmt.Sprintf("%q", wn) {
			t.Fatalf("%s: objects %q, want %q", c, gn, wn)
		}
		for _, o := range wn {
			gd, err := got.Read(c, o, 0, 0)
			wd, _ := want.Read(c, o, 0, 0)
			if err != nil || !bytes.Equal(gd, wd) {
				t.Fatalf("%s/%q: data differs (%d vs %d bytes, err %v)", c, o, len(gd), len(wd), err)
			}
			// the same as parts (cache references, pooled buffers,
			// shared zeros for holes), each with the crc32c derived from
			// the stored block checksums equal to its bytes': whole, in a
			// window across blocks, and in block-aligned windows
			if bs, ok := got.(*objectstore.BlockStore); ok {
				n := uint64(len(wd))
				for _, w := range [][2]uint64{{0, 0}, {n / 3, n / 2}, {4096, 8192}, {8192, 0}, {4095, 4098}} {
					if w[0] >= n && n > 0 {
						continue
					}
					parts, sums, release, err := bs.ReadVec(c, o, w[0], w[1])
					ww, _ := want.Read(c, o, w[0], w[1])
					if err != nil || !bytes.Equal(bytes.Join(parts, nil), ww) {
						t.Fatalf("%s/%q: vector read %d+%d differs (%d parts, err %v)", c, o, w[0], w[1], len(parts), err)
					}
					if len(sums) != len(parts) {
						t.Fatalf("%s/%q: %d sums for %d parts", c, o, len(sums), len(parts))
					}
					for i, p := range parts {
						if want := crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)); !sums[i].Valid || sums[i].CRC != want {
							t.Fatalf("%s/%q: vector read %d+%d part %d (%d bytes): sum %+v, its crc32c %08x", c, o, w[0], w[1], i, len(p), sums[i], want)
						}
					}
					release()
				}
			}
			// a window read across blocks
			if len(wd) > 10 {
				off, n := uint64(len(wd)/3), uint64(len(wd)/2)
				gw, err := got.Read(c, o, off, n)
				ww, _ := want.Read(c, o, off, n)
				if err != nil || !bytes.Equal(gw, ww) {
					t.Fatalf("%s/%q: window %d+%d differs (err %v)", c, o, off, n, err)
				}
			}
			ga, _ := got.Attrs(c, o)
			wa, _ := want.Attrs(c, o)
			if fmt.Sprint(ga) != fmt.Sprint(wa) {
				t.Fatalf("%s/%q: attrs %v, want %v", c, o, ga, wa)
			}
			gk, _, _ := got.OmapList(c, o, "", "", 0)
			wk, _, _ := want.OmapList(c, o, "", "", 0)
			if fmt.Sprint(gk) != fmt.Sprint(wk) {
				t.Fatalf("%s/%q: omap %v, want %v", c, o, gk, wk)
			}
		}
	}
}

// TestDifferential applies random transactions to BlockStore and MemStore
// and demands the same outcome and the same state, reopening the
// BlockStore now and then and checking its allocator with Fsck. One at a
// time, each transaction commits alone; grouped, up to six are submitted
// before any is waited for, so that they share commit groups and each
// must see what the ones before it in its group did (objects whose
// onodes the cache holds from the reads between steps included).
func TestDifferential(t *testing.T) {
	t.Run("one at a time", func(t *testing.T) { differential(t, 1, 4<<20) })
	t.Run("grouped", func(t *testing.T) { differential(t, 6, 16<<20) })
}

func differential(t *testing.T, burst int, size int64) {
	seed := int64(os.Getpid())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	opts := objectstore.Options{Size: size, InlineMax: 1024}
	bs := openStore(t, dir, opts)
	defer func() { bs.Close() }()
	ms := objectstore.NewMemStore()
	var setup objectstore.Transaction
	setup.CreateCollection("1.0")
	setup.CreateCollection("1.1")
	for _, s := range []objectstore.Store{bs, ms} {
		if err := s.Apply(&setup); err != nil {
			t.Fatal(err)
		}
	}
	steps := 3000
	if testing.Short() {
		steps = 600
	}
	var groups, txns uint64 // of the stores closed so far
	for i := 0; i < steps; {
		n := 1 + rng.Intn(burst)
		done := make([]<-chan error, n)
		want := make([]error, n)
		for j := range done {
			txn := randomTxn(rng)
			done[j], want[j] = bs.Submit(txn), ms.Apply(txn)
		}
		for j, ch := range done {
			e1, e2 := <-ch, want[j]
			if errClass(e1) != errClass(e2) {
				t.Fatalf("step %d: blockstore %v, memstore %v", i+j, e1, e2)
			}
		}
		for range n {
			if i%100 == 99 {
				sameState(t, bs, ms)
				if err := bs.Fsck(true); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if i%500 == 499 {
				g, n := bs.CommitStats()
				groups, txns = groups+g, txns+n
				if err := bs.Close(); err != nil {
					t.Fatal(err)
				}
				bs = openStore(t, dir, opts)
				sameState(t, bs, ms)
			}
			i++
		}
	}
	if burst > 1 && groups >= txns {
		t.Errorf("%d transactions in %d commit groups: none shared a group", txns, groups)
	}
	t.Logf("%d transactions in %d commit groups", txns, groups)
}

func TestErrorsAndLimits(t *testing.T) {
	s := openStore(t, t.TempDir(), objectstore.Options{Size: 1 << 20})
	defer s.Close()
	apply := func(f func(*objectstore.Transaction)) error {
		var txn objectstore.Transaction
		f(&txn)
		return s.Apply(&txn)
	}
	if err := apply(func(t *objectstore.Transaction) { t.Write("nope", "x", 0, []byte("a")) }); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("write to missing collection: %v", err)
	}
	if err := apply(func(t *objectstore.Transaction) { t.CreateCollection("c") }); err != nil {
		t.Fatal(err)
	}
	if err := apply(func(t *objectstore.Transaction) { t.CreateCollection("c") }); !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("create twice: %v", err)
	}
	if err := apply(func(t *objectstore.Transaction) { t.Write("c", strings.Repeat("n", objectstore.MaxNameLen+1), 0, nil) }); !errors.Is(err, objectstore.ErrInvalid) {
		t.Fatalf("long name: %v", err)
	}
	if err := apply(func(t *objectstore.Transaction) { t.Write("c", "x", objectstore.MaxObjectEnd, []byte("ab")) }); !errors.Is(err, objectstore.ErrInvalid) {
		t.Fatalf("beyond the object limit: %v", err)
	}
	// a failing op rolls back the whole transaction
	err := apply(func(t *objectstore.Transaction) {
		t.Write("c", "x", 0, []byte("hello"))
		t.SetAttr("c", "x", "a", []byte("1"))
		t.Remove("c", "missing")
	})
	if !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("remove missing: %v", err)
	}
	if _, err := s.Stat("c", "x"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("partial transaction visible: %v", err)
	}
	if err := apply(func(t *objectstore.Transaction) { t.Write("c", "x", 0, []byte("hello")) }); err != nil {
		t.Fatal(err)
	}
	if err := apply(func(t *objectstore.Transaction) { t.RemoveCollection("c") }); !errors.Is(err, objectstore.ErrNotEmpty) {
		t.Fatalf("remove non-empty collection: %v", err)
	}
	if err := apply(func(t *objectstore.Transaction) { t.Remove("c", "x"); t.RemoveCollection("c") }); err != nil {
		t.Fatalf("remove last object and collection together: %v", err)
	}
}

// A full device refuses the transaction that does not fit, applies none of
// it, keeps everything stored readable, and accepts writes again once space
// is freed.
func TestNoSpace(t *testing.T) {
	s := openStore(t, t.TempDir(), objectstore.Options{Size: 1 << 20, InlineMax: 512})
	defer s.Close()
	var setup objectstore.Transaction
	setup.CreateCollection("c")
	if err := s.Apply(&setup); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{7}, 100<<10)
	var n int
	for ; ; n++ {
		var txn objectstore.Transaction
		txn.Write("c", fmt.Sprint(n), 0, chunk)
		txn.SetAttr("c", "marker", "n", []byte(fmt.Sprint(n)))
		err := s.Apply(&txn)
		if errors.Is(err, objectstore.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n > 20 {
			t.Fatal("1 MiB device never filled")
		}
	}
	if _, err := s.Stat("c", fmt.Sprint(n)); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("refused write left object %d: %v", n, err)
	}
	if v, err := s.GetAttr("c", "marker", "n"); err != nil || string(v) != fmt.Sprint(n-1) {
		t.Fatalf("refused transaction's attr applied: %q %v", v, err)
	}
	for i := 0; i < n; i++ {
		if d, err := s.Read("c", fmt.Sprint(i), 0, 0); err != nil || !bytes.Equal(d, chunk) {
			t.Fatalf("object %d unreadable when full: %v", i, err)
		}
	}
	var rm objectstore.Transaction
	rm.Remove("c", "0")
	if err := s.Apply(&rm); err != nil {
		t.Fatal(err)
	}
	var again objectstore.Transaction
	again.Write("c", "again", 0, chunk)
	if err := s.Apply(&again); err != nil {
		t.Fatalf("write after freeing space: %v", err)
	}
	if err := s.Fsck(true); err != nil {
		t.Fatal(err)
	}
}

// A block changed on disk is detected on read: an error, never the bytes.
func TestCorruptionDetected(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, objectstore.Options{Size: 1 << 20, InlineMax: 512})
	var txn objectstore.Transaction
	txn.CreateCollection("c")
	data := bytes.Repeat([]byte("shoal"), 4000)
	txn.Write("c", "x", 0, data)
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	s.Close()
	f, err := os.OpenFile(filepath.Join(dir, "block"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// find the data and flip one byte of its third block
	raw := make([]byte, 1<<20)
	if _, err := f.ReadAt(raw, 0); err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, data[:4096])
	if at < 0 {
		t.Fatal("data not found on the device")
	}
	if _, err := f.WriteAt([]byte{raw[at+9000] ^ 0xff}, int64(at+9000)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s = openStore(t, dir, objectstore.Options{})
	defer s.Close()
	if _, err := s.Read("c", "x", 0, 0); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("read of corrupted object: %v, want ErrCorrupt", err)
	}
	if d, err := s.Read("c", "x", 0, 4096); err != nil || !bytes.Equal(d, data[:4096]) {
		t.Fatalf("intact first block: %v", err)
	}
	if err := s.Fsck(true); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("deep fsck: %v, want ErrCorrupt", err)
	}
}

// WriteSums: block checksums the caller gives (a message reader's) are
// the ones stored — the data reads back with them, and a wrong one is a
// read error, never accepted bytes; a partial last block's is computed;
// DataSum gives a write's checksum from them. Data cache disabled, so
// that every read goes to the device and its checks.
func TestWriteSums(t *testing.T) {
	s := openStore(t, t.TempDir(), objectstore.Options{Size: 4 << 20, InlineMax: 512, DataCacheSize: -1})
	defer s.Close()
	data := make([]byte, 5*4096+77)
	for i := range data {
		data[i] = byte(i * 13)
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	sums := make([]uint32, 5)
	for i := range sums {
		sums[i] = crc32.Checksum(data[i*4096:(i+1)*4096], tab)
	}
	var txn objectstore.Transaction
	txn.CreateCollection("c")
	txn.WriteSums("c", "good", 0, data, sums)
	if got := txn.DataSum(data); !got.Valid || got.CRC != crc32.Checksum(data, tab) {
		t.Fatalf("DataSum %+v, want %08x", got, crc32.Checksum(data, tab))
	}
	if got := txn.DataSum(data[:len(data)-1]); got.Valid {
		t.Fatal("DataSum of another slice is known")
	}
	wrong := append([]uint32(nil), sums...)
	wrong[3] ^= 1
	txn.WriteSums("c", "bad", 8192, data, wrong)
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Read("c", "good", 0, 0); err != nil || !bytes.Equal(d, data) {
		t.Fatalf("read with given sums: %v", err)
	}
	if _, err := s.Read("c", "bad", 0, 0); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("read of data stored with a wrong block sum: %v, want ErrCorrupt", err)
	}
	if d, err := s.Read("c", "bad", 8192, 3*4096); err != nil || !bytes.Equal(d, data[:3*4096]) {
		t.Fatalf("the blocks whose sums were right: %v", err)
	}
}

// The metadata and its write-ahead log can live on other devices.
func TestSeparateDBAndWAL(t *testing.T) {
	root := t.TempDir()
	opts := objectstore.Options{DBDir: filepath.Join(root, "ssd-db"), WALDir: filepath.Join(root, "nvme-wal"), Size: 1 << 20}
	s := openStore(t, filepath.Join(root, "hdd"), opts)
	var txn objectstore.Transaction
	txn.CreateCollection("c")
	txn.Write("c", "x", 0, []byte("on the fast device"))
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	s.Close()
	wals, _ := filepath.Glob(filepath.Join(root, "nvme-wal", "*.log"))
	ssts, _ := filepath.Glob(filepath.Join(root, "ssd-db", "MANIFEST-*"))
	if len(wals) == 0 || len(ssts) == 0 {
		t.Fatalf("WAL files %v, DB files %v", wals, ssts)
	}
	if _, err := os.Stat(filepath.Join(root, "hdd", "db")); !os.IsNotExist(err) {
		t.Fatalf("metadata also in the data dir: %v", err)
	}
	s = openStore(t, filepath.Join(root, "hdd"), opts)
	defer s.Close()
	if d, err := s.Read("c", "x", 0, 0); err != nil || string(d) != "on the fast device" {
		t.Fatalf("after reopen: %q %v", d, err)
	}
}

func TestTransactionEncodeRoundTrip(t *testing.T) {
	var tx objectstore.Transaction
	tx.CreateCollection("1.0")
	tx.Write("1.0", "a", 5, []byte("hello"))
	tx.OmapSet("1.0", "a", []omap.KV{{Key: "k", Value: []byte("v")}, {Key: "k2"}})
	tx.OmapRm("1.0", "a", []string{"x", "y"})
	tx.SetAttr("1.0", "a", "_v", []byte{1, 2})
	tx.Clone("1.0", "a", "b")
	tx.Truncate("1.0", "b", 3)
	e := wire.NewEncoder(nil)
	tx.Encode(e)
	got, err := objectstore.DecodeTransaction(wire.NewDecoder(e.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	a, b := objectstore.NewMemStore(), objectstore.NewMemStore()
	if err := a.Apply(&tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(got); err != nil {
		t.Fatal(err)
	}
	for _, oid := range []string{"a", "b"} {
		da, _ := a.Read("1.0", oid, 0, 0)
		db, _ := b.Read("1.0", oid, 0, 0)
		if string(da) != string(db) {
			t.Fatalf("%s: %q != %q", oid, da, db)
		}
		oa, _, _ := a.OmapList("1.0", oid, "", "", 100)
		ob, _, _ := b.OmapList("1.0", oid, "", "", 100)
		if fmt.Sprint(oa) != fmt.Sprint(ob) {
			t.Fatalf("%s omap: %v != %v", oid, oa, ob)
		}
	}
	bad := e.Bytes()
	if _, err := objectstore.DecodeTransaction(wire.NewDecoder(bad[:len(bad)-3])); err == nil {
		t.Fatal("truncated transaction decoded")
	}
}

// TestCloneSharesBlocks: a clone of a 4 MiB object costs no data blocks,
// a 4 KiB overwrite of the source afterwards costs one, each object reads
// its own bytes, and the blocks come back as each owner lets go — across
// a reopen (the reference table is persisted).
func TestCloneSharesBlocks(t *testing.T) {
	dir := t.TempDir()
	opts := objectstore.Options{Size: 64 << 20}
	s := openStore(t, dir, opts)
	defer func() { s.Close() }()
	used := func() uint64 {
		t.Helper()
		st, err := s.StatFS()
		if err != nil {
			t.Fatal(err)
		}
		return st.Used
	}
	apply := func(f func(tx *objectstore.Transaction)) {
		t.Helper()
		var tx objectstore.Transaction
		f(&tx)
		if err := s.Apply(&tx); err != nil {
			t.Fatal(err)
		}
		if err := s.Fsck(true); err != nil {
			t.Fatal(err)
		}
	}
	const c = objectstore.Coll("1.0")
	head := make([]byte, 4<<20)
	rand.New(rand.NewSource(1)).Read(head)
	apply(func(tx *objectstore.Transaction) { tx.CreateCollection(c); tx.WriteFull(c, "head", head) })
	base := used()
	apply(func(tx *objectstore.Transaction) { tx.Clone(c, "head", "clone") })
	if got := used(); got != base {
		t.Fatalf("clone of a 4 MiB object: %d bytes used, want %d (no data copied)", got, base)
	}
	over := bytes.Repeat([]byte{0xab}, 4096)
	apply(func(tx *objectstore.Transaction) { tx.Write(c, "head", 8192, over) })
	if got := used(); got != base+4096 {
		t.Fatalf("4 KiB overwrite after a clone: %d bytes used, want %d", got, base+4096)
	}
	if blocks, extra := s.SharedBlocks(); blocks != 1023 || extra != 1023 {
		t.Fatalf("shared blocks %d (extra references %d), want 1023 each", blocks, extra)
	}
	newHead := slices.Clone(head)
	copy(newHead[8192:], over)
	check := func(oid string, want []byte) {
		t.Helper()
		if got, err := s.Read(c, oid, 0, 0); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, err %v: not its data", oid, len(got), err)
		}
	}
	check("head", newHead)
	check("clone", head)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, opts)
	check("clone", head)
	apply(func(tx *objectstore.Transaction) { tx.Remove(c, "head") })
	check("clone", head)
	if got := used(); got != base {
		t.Fatalf("after removing the head: %d bytes used, want %d (the clone's)", got, base)
	}
	if blocks, _ := s.SharedBlocks(); blocks != 0 {
		t.Fatalf("%d blocks still shared with one owner left", blocks)
	}
	apply(func(tx *objectstore.Transaction) { tx.Remove(c, "clone") })
	if got := used(); got != 0 {
		t.Fatalf("after removing both: %d bytes used", got)
	}
}

// TestStatFSCountsMetadata: small objects live in the metadata store, so
// 2,000 of 4 KiB (random bytes: the store compresses) use no data block
// but show in Meta (what an OSD's fill level counts), at least their size.
func TestStatFSCountsMetadata(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, objectstore.Options{Size: 256 << 20})
	var tx objectstore.Transaction
	tx.CreateCollection("1.0")
	rng := rand.New(rand.NewSource(7)) // incompressible
	for i := range 2000 {
		b := make([]byte, 4096)
		rng.Read(b)
		tx.WriteFull("1.0", fmt.Sprint("small-", i), b)
	}
	if err := s.Apply(&tx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, objectstore.Options{})
	defer s.Close()
	st, err := s.StatFS()
	if err != nil {
		t.Fatal(err)
	}
	if st.Used != 0 || st.Meta < 2000*4096 {
		t.Fatalf("2,000 inline objects of 4 KiB: data %d bytes, metadata %d bytes (want 0 and at least %d)", st.Used, st.Meta, 2000*4096)
	}
}
