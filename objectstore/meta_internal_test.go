package objectstore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"testing"
)

// TestValueSeparation: a store made before value separation (inline 4 KiB
// objects' bytes inside Pebble's sstables) is upgraded when opened and
// reads back whole; objects written after keep their bytes in blob files,
// not in the sstables; a full compaction (CompactMeta) and a reopen lose
// nothing.
func TestValueSeparation(t *testing.T) {
	dir := t.TempDir()
	const c = Coll("1.0")
	rng := rand.New(rand.NewSource(1)) // incompressible
	want := map[string][]byte{}
	write := func(s *BlockStore, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			var tx Transaction
			if i == 0 {
				tx.CreateCollection(c)
			}
			b := make([]byte, 4096)
			rng.Read(b)
			name := fmt.Sprint("obj-", i)
			tx.WriteFull(c, name, b)
			want[name] = b
			if err := s.Apply(&tx); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(s *BlockStore, when string) {
		t.Helper()
		for name, b := range want {
			got, err := s.Read(c, name, 0, 0)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%s: read %s: %d bytes, %v; want the %d written", when, name, len(got), err, len(b))
			}
		}
	}
	open := func(legacy bool) *BlockStore {
		t.Helper()
		// no onode cache: every read goes to Pebble
		s, err := Open(Options{Dir: dir, Size: 64 << 20, OnodeCacheSize: -1, legacyMeta: legacy})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	s := open(true)
	write(s, 0, 1000)
	if err := s.FlushMeta(); err != nil {
		t.Fatal(err)
	}
	if m := s.MetaStats(); m.BlobBytes != 0 || m.SSTBytes < 1000*4096 {
		t.Fatalf("before value separation: %+v, want the 4 KiB values in sstables", m)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(false)
	if v := s.db.FormatMajorVersion(); v != metaFormat {
		t.Fatalf("reopened store's format %s, want %s", v, metaFormat)
	}
	check(s, "after the upgrade")
	write(s, 1000, 3000)
	if err := s.FlushMeta(); err != nil {
		t.Fatal(err)
	}
	m := s.MetaStats()
	if m.BlobBytes < 2000*4096 {
		t.Fatalf("after 2,000 new 4 KiB objects: %+v, want their values in blob files", m)
	}
	if m.SSTBytes > 1500*4096 { // the 1,000 old values and the new keys
		t.Fatalf("after 2,000 new 4 KiB objects: %+v, want their values outside the sstables", m)
	}
	check(s, "after the flush")
	if err := s.CompactMeta(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := s.MetaStats(); m.ReadAmp > 2 || m.Compactions == 0 {
		t.Fatalf("after a full compaction: %+v", m)
	}
	check(s, "after a full compaction")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.MetaStats() != (MetaStats{}) {
		t.Fatal("a closed store reports statistics")
	}
	if err := s.FlushMeta(); err == nil {
		t.Fatal("FlushMeta on a closed store succeeded")
	}

	s = open(false)
	defer s.Close()
	check(s, "after a reopen")
}
