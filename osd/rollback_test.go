package osd

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdmap"
)

// TestRollback: a shard's writes after a version are undone from their
// stashes, newest first (an object the writes created disappears); writes
// the primary rolled forward are refused.
func TestRollback(t *testing.T) {
	st := objectstore.NewMemStore()
	d := &OSD{store: st, log: slog.Default()}
	c := objectstore.Coll("1.0")
	var setup objectstore.Transaction
	setup.CreateCollection(c)
	setup.CreateCollection(metaColl)
	if err := st.Apply(&setup); err != nil {
		t.Fatal(err)
	}
	pg := newPG(d, osdmap.PGID{Pool: 1}, c, newPGLog())
	pg.interval = 7
	apply := func(seq uint64, oid, data string) { // as handleRepOp applies a shard's write
		e := LogEntry{Ver: Version{1, seq}, Op: logModify, OID: oid}
		tx := &objectstore.Transaction{}
		_, err := st.Stat(c, oid)
		pg.stash(tx, &e, err == nil)
		tx.WriteFull(c, oid, []byte(data))
		pg.log.add(tx, c, e, 10, 20)
		if err := st.Apply(tx); err != nil {
			t.Fatal(err)
		}
	}
	read := func(oid string) string {
		b, err := st.Read(c, oid, 0, 0)
		if errors.Is(err, objectstore.ErrNotFound) {
			return "<none>"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	apply(1, "a", "a1")
	apply(2, "b", "b1")
	apply(3, "a", "a2")
	apply(4, "c", "c1")
	apply(5, "a", "a3")
	if err := pg.rollback(7, Version{1, 2}); err != nil {
		t.Fatal(err)
	}
	if a, b, cc := read("a"), read("b"), read("c"); a != "a1" || b != "b1" || cc != "<none>" {
		t.Fatalf("after rollback to 1'2: a=%s b=%s c=%s, want a1 b1 <none>", a, b, cc)
	}
	names, _ := st.List(c, "", 100)
	if strings.Join(names, ",") != "a,b" {
		t.Fatalf("objects after rollback: %q (stashes must be gone)", names)
	}
	if pg.log.info.LastUpdate != (Version{1, 2}) || len(pg.log.entries) != 2 {
		t.Fatalf("log after rollback: %v, %d entries", pg.log.info.LastUpdate, len(pg.log.entries))
	}
	// reloaded from the store, the log says the same
	l, err := loadPGLog(st, c)
	if err != nil || l.info.LastUpdate != (Version{1, 2}) || len(l.entries) != 2 {
		t.Fatalf("stored log: %+v %v", l, err)
	}
	// rolled forward: on every shard, never undone
	apply(3, "b", "b2")
	var tx objectstore.Transaction
	pg.rollForward(&tx, 3)
	if err := st.Apply(&tx); err != nil {
		t.Fatal(err)
	}
	if names, _ := st.List(c, "", 100); strings.Join(names, ",") != "a,b" {
		t.Fatalf("objects after roll forward: %q", names)
	}
	if err := pg.rollback(7, Version{1, 2}); err == nil || !strings.Contains(err.Error(), "rolled forward") {
		t.Fatalf("rollback of a rolled-forward write: %v", err)
	}
	if read("b") != "b2" {
		t.Fatalf("b = %s after a refused rollback", read("b"))
	}
}
