package osd

import (
	"reflect"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
)

func name(s uint64) string { return string(rune('a' + s%26)) }

func TestPGLogTrimAndReload(t *testing.T) {
	s := objectstore.NewMemStore()
	var t0 objectstore.Transaction
	t0.CreateCollection(metaColl)
	t0.CreateCollection("1.0")
	if err := s.Apply(&t0); err != nil {
		t.Fatal(err)
	}
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
