package osd

import (
	"context"
	"reflect"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
)

func entries(epoch uint32, from, to uint64, oid func(uint64) string) []LogEntry {
	var out []LogEntry
	for s := from; s <= to; s++ {
		out = append(out, LogEntry{Ver: Version{epoch, s}, Op: logModify, OID: oid(s)})
	}
	return out
}

func name(s uint64) string { return string(rune('a' + s%26)) }

func TestMissingFromLog(t *testing.T) {
	pg := &PG{}
	ctx := context.Background()
	authE := entries(5, 1, 10, name)
	auth := memberInfo{id: 0, info: Info{LastUpdate: Version{5, 10}}, entries: authE}
	// behind: has up to seq 7
	behind := memberInfo{id: 1, info: Info{LastUpdate: Version{5, 7}}, entries: authE[:7]}
	got, backfill, err := pg.missing(ctx, auth, behind)
	if err != nil || backfill || !reflect.DeepEqual(got, []string{"i", "j", "k"}) {
		t.Fatalf("behind: %v %v %v", got, backfill, err)
	}
	// up to date
	if got, _, _ := pg.missing(ctx, auth, auth); len(got) != 0 {
		t.Fatalf("current member misses %v", got)
	}
	// divergent: a deposed primary wrote seq 8, 9 at epoch 4 that nobody else saw
	div := append(append([]LogEntry(nil), authE[:7]...), LogEntry{Ver: Version{4, 8}, OID: "zz"}, LogEntry{Ver: Version{4, 9}, OID: "yy"})
	dm := memberInfo{id: 2, info: Info{LastUpdate: Version{4, 9}}, entries: div}
	got, backfill, err = pg.missing(ctx, auth, dm)
	if err != nil || backfill || !reflect.DeepEqual(got, []string{"i", "j", "k", "yy", "zz"}) {
		t.Fatalf("divergent: %v %v", got, err)
	}
}

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
		l.add(&tx, "1.0", LogEntry{Ver: Version{1, seq}, OID: name(seq), Client: 9, Tid: seq}, 5, 10)
		if err := s.Apply(&tx); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.entries) > 10 || len(l.entries) < 5 || l.info.LastUpdate != (Version{1, 25}) {
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
	if _, ok := l.since(Version{1, 2}); ok {
		t.Fatal("log claims to cover a trimmed entry")
	}
	if _, dup := l.reqs[[2]uint64{9, 2}]; dup {
		t.Fatal("trimmed request still recognised as a duplicate")
	}
}
