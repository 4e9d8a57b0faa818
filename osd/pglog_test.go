package osd

import (
	"reflect"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
)

func name(s uint64) string { return string(rune('a' + s%26)) }

func TestPGLogTrimAndReload(t *testing.T) {
	s := logStore(t)
	l := newPGLog()
	for seq := uint64(1); seq <= 25; seq++ {
		var tx objectstore.Transaction
		l.add(&tx, "1.0", LogEntry{Ver: Version{Epoch: 1, Seq: seq}, OID: name(seq), Client: 9, Tid: seq}, 5, 10)
		if err := s.Apply(&tx); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.entries) > 10 || len(l.entries) < 5 || l.info.LastUpdate != (Version{Epoch: 1, Seq: 25}) {
		t.Fatalf("after trimming: %d entries, last %v", len(l.entries), l.info.LastUpdate)
	}
	back, err := loadPGLog(s, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.entries, l.entries) || back.info != l.info || !reflect.DeepEqual(back.reqs, l.reqs) {
		t.Fatalf("reloaded log differs:\n%+v\n%+v", back, l)
	}
	// the log covers its tail and entries, not what was trimmed
	if _, ok := l.since(l.info.LogTail); !ok {
		t.Fatal("log does not cover its tail")
	}
	if _, ok := l.since(Version{Epoch: 1, Seq: 2}); ok {
		t.Fatal("log claims to cover a trimmed entry")
	}
	if _, dup := l.reqs[[2]uint64{9, 2}]; dup {
		t.Fatal("trimmed request still recognised as a duplicate")
	}
}

// TestPGLogDups: a merged log's dups (requests whose entries a merge
// dropped) are answered by logged beside the log's own requests, survive
// a reload and a log replaced at peering, and go — in memory and in the
// store — at the log's first trim.
func TestPGLogDups(t *testing.T) {
	s := logStore(t)
	l := newPGLog()
	l.info.LastUpdate, l.info.LogTail = Version{Epoch: 3, Seq: 40}, Version{Epoch: 3, Seq: 40}
	l.dups = map[[2]uint64]Version{{7, 1}: {Epoch: 2, Seq: 30}, {8, 5}: {Epoch: 3, Seq: 40}}
	var tx objectstore.Transaction
	l.persistAll(&tx, "1.0")
	if err := s.Apply(&tx); err != nil {
		t.Fatal(err)
	}
	back, err := loadPGLog(s, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.dups, l.dups) {
		t.Fatalf("reloaded dups %v, want %v", back.dups, l.dups)
	}
	if v, ok := back.logged(7, 1); !ok || v != (Version{Epoch: 2, Seq: 30}) {
		t.Fatalf("logged(7, 1) = %v %t", v, ok)
	}
	if _, ok := back.logged(7, 2); ok {
		t.Fatal("a request never logged is a duplicate")
	}
	var rt objectstore.Transaction
	back.replace(&rt, "1.0", back.info, nil, nil)
	if err := s.Apply(&rt); err != nil {
		t.Fatal(err)
	}
	if again, err := loadPGLog(s, "1.0"); err != nil || len(again.dups) != 2 {
		t.Fatalf("after a replaced log: dups %v %v", again.dups, err)
	}
	for seq := uint64(41); seq <= 52; seq++ { // past max 10: the first trim
		var tx objectstore.Transaction
		back.add(&tx, "1.0", LogEntry{Ver: Version{Epoch: 3, Seq: seq}, OID: name(seq), Client: 9, Tid: seq}, 5, 10)
		if err := s.Apply(&tx); err != nil {
			t.Fatal(err)
		}
		if _, ok := back.logged(9, seq); !ok {
			t.Fatalf("request %d not logged", seq)
		}
	}
	if _, ok := back.logged(7, 1); ok || len(back.dups) != 0 {
		t.Fatalf("dups after the log trimmed: %v", back.dups)
	}
	if again, err := loadPGLog(s, "1.0"); err != nil || len(again.dups) != 0 {
		t.Fatalf("dups in the store after the log trimmed: %v %v", again.dups, err)
	}
}

// logStore is a MemStore holding the meta collection and PG 1.0's.
func logStore(t *testing.T) objectstore.Store {
	t.Helper()
	s := objectstore.NewMemStore()
	var tx objectstore.Transaction
	tx.CreateCollection(metaColl)
	tx.CreateCollection("1.0")
	if err := s.Apply(&tx); err != nil {
		t.Fatal(err)
	}
	return s
}
