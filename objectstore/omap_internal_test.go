package objectstore

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// rangeDeletions flushes s's memtable and counts the range deletions in
// its sstables.
func rangeDeletions(t *testing.T, s *BlockStore) uint64 {
	t.Helper()
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, l := range levels {
		for _, f := range l {
			n += f.Properties.NumRangeDeletions
		}
	}
	return n
}

// TestRemoveWithoutOmap checks that removing an object writes a range
// deletion for its omap keys only if it had some: the onode knows.
func TestRemoveWithoutOmap(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const c = Coll("1.0")
	var txn Transaction
	txn.CreateCollection(c)
	for i := range 10 {
		txn.WriteFull(c, fmt.Sprint("plain-", i), []byte("data"))
	}
	for i := range 3 {
		txn.WriteFull(c, fmt.Sprint("omap-", i), []byte("data"))
		txn.OmapSet(c, fmt.Sprint("omap-", i), []KV{{Key: "k", Value: []byte("v")}})
	}
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	before := rangeDeletions(t, s)
	txn = Transaction{}
	for i := range 10 {
		txn.Remove(c, fmt.Sprint("plain-", i))
	}
	for i := range 3 {
		txn.Remove(c, fmt.Sprint("omap-", i))
	}
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	if got := rangeDeletions(t, s) - before; got != 3 {
		t.Fatalf("removing 10 objects without omap keys and 3 with: %d range deletions, want 3", got)
	}
	if err := s.Fsck(false); err != nil {
		t.Fatal(err)
	}
}

// TestRemoveVersion1Onode checks that an onode written before onodes
// recorded their omap state (encoding version 1) still has its omap keys
// removed with it.
func TestRemoveVersion1Onode(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const c, oid = Coll("1.0"), "old"
	var txn Transaction
	txn.CreateCollection(c)
	txn.WriteFull(c, oid, []byte("data"))
	txn.OmapSet(c, oid, []KV{{Key: "k1", Value: []byte("v1")}, {Key: "k2", Value: []byte("v2")}})
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	// Rewrite the onode as version 1 wrote it: no omap state after the
	// extents.
	v, closer, err := s.db.Get(onodeKey(c, oid))
	if err != nil {
		t.Fatal(err)
	}
	v1 := append([]byte(nil), v[:len(v)-1]...)
	closer.Close()
	if v1[0] != 2 {
		t.Fatalf("onode encoded as version %d, want 2", v1[0])
	}
	v1[0] = 1
	binary.LittleEndian.PutUint32(v1[2:], binary.LittleEndian.Uint32(v1[2:])-1)
	if o, err := decodeOnode(v1); err != nil || o.Omap != omapUnknown {
		t.Fatalf("version 1 onode decodes as %+v, %v; want omap state unknown", o, err)
	}
	if err := s.db.Set(onodeKey(c, oid), v1, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // drops the onode cache
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir, Size: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	txn = Transaction{}
	txn.Remove(c, oid)
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	txn = Transaction{}
	txn.WriteFull(c, oid, []byte("new"))
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	if kvs, _, err := s.OmapList(c, oid, "", "", 0); err != nil || len(kvs) != 0 {
		t.Fatalf("omap of the object made again after its removal: %v, %v; want none", kvs, err)
	}
	if err := s.Fsck(false); err != nil {
		t.Fatal(err)
	}
}
