package osd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// TestRollback: a shard's writes after a version are undone from their
// stashes, newest first (an object the writes created disappears); writes
// the primary rolled forward are refused.
func TestRollback(t *testing.T) {
	pg := rollbackPG(t)
	st, c := pg.osd.store, pg.coll
	apply := func(seq uint64, oid, data string) { // as handleRepOp applies a shard's write
		var w objectstore.Transaction
		w.WriteFull(c, oid, []byte(data))
		w.SetAttr(c, oid, attrECSize, binary.LittleEndian.AppendUint64(nil, uint64(len(data))))
		applyShardWrite(t, pg, seq, oid, &w)
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
	pg.log.info.Objects, pg.log.info.Bytes = 3, 6 // a, b, c of 2 bytes each
	if err := pg.rollback(7, Version{Epoch: 1, Seq: 2}); err != nil {
		t.Fatal(err)
	}
	if pg.log.info.Objects != 2 || pg.log.info.Bytes != 4 { // c gone, a back to a1
		t.Fatalf("after rollback: %d objects, %d bytes; want 2, 4", pg.log.info.Objects, pg.log.info.Bytes)
	}
	if a, b, cc := read("a"), read("b"), read("c"); a != "a1" || b != "b1" || cc != "<none>" {
		t.Fatalf("after rollback to 1'2: a=%s b=%s c=%s, want a1 b1 <none>", a, b, cc)
	}
	names, _ := st.List(c, "", 100)
	if strings.Join(names, ",") != "a,b" {
		t.Fatalf("objects after rollback: %q (stashes must be gone)", names)
	}
	if pg.log.info.LastUpdate != (Version{Epoch: 1, Seq: 2}) || len(pg.log.entries) != 2 {
		t.Fatalf("log after rollback: %v, %d entries", pg.log.info.LastUpdate, len(pg.log.entries))
	}
	// reloaded from the store, the log says the same
	l, err := loadPGLog(st, c)
	if err != nil || l.info.LastUpdate != (Version{Epoch: 1, Seq: 2}) || len(l.entries) != 2 {
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
	if err := pg.rollback(7, Version{Epoch: 1, Seq: 2}); err == nil || !strings.Contains(err.Error(), "rolled forward") {
		t.Fatalf("rollback of a rolled-forward write: %v", err)
	}
	if read("b") != "b2" {
		t.Fatalf("b = %s after a refused rollback", read("b"))
	}
}

// rollbackPG is an erasure-coded shard's PG on a MemStore, interval 7.
func rollbackPG(t *testing.T) *PG {
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
	pg.ps.Interval.ID = 7
	return pg
}

// applyShardWrite applies write w to oid as entry 1'seq, as handleRepOp
// applies a shard's write: stash, write, log entry.
func applyShardWrite(t *testing.T, pg *PG, seq uint64, oid string, w *objectstore.Transaction) {
	t.Helper()
	e := LogEntry{Ver: Version{Epoch: 1, Seq: seq}, Op: logModify, OID: oid}
	tx := &objectstore.Transaction{}
	_, err := pg.osd.store.Stat(pg.coll, oid)
	pg.stash(tx, &e, err == nil, w)
	tx.Append(w)
	pg.log.add(tx, pg.coll, e, 10, 20)
	if err := pg.osd.store.Apply(tx); err != nil {
		t.Fatal(err)
	}
}

// TestRollbackAppends: appends stash only the object's metadata (no copy
// of the data written so far) and roll back by truncating and restoring
// attributes, interleaved with an overwrite that stashes a full copy.
func TestRollbackAppends(t *testing.T) {
	pg := rollbackPG(t)
	st, c := pg.osd.store, pg.coll
	write := func(seq uint64, data string, appending bool, attrs ...string) {
		var w objectstore.Transaction
		if appending {
			s, err := st.Stat(c, "x")
			if err != nil {
				t.Fatal(err)
			}
			w.Write(c, "x", s.Size, []byte(data))
		} else {
			w.WriteFull(c, "x", []byte(data))
		}
		for i := 0; i+1 < len(attrs); i += 2 {
			w.SetAttr(c, "x", attrs[i], []byte(attrs[i+1]))
		}
		applyShardWrite(t, pg, seq, "x", &w)
	}
	write(1, "base", false, "v", "1")
	write(2, "+a", true, "v", "2", "extra", "new")
	write(3, "+b", true, "v", "3")
	write(4, "over", false, "v", "4")
	write(5, "+c", true, "v", "5")
	for seq, meta := range map[uint64]bool{2: true, 3: true, 4: false, 5: true} {
		a, err := st.Attrs(c, stashName(seq))
		if _, ok := a[objectstore.StashMetaAttr]; err != nil || ok != meta {
			t.Fatalf("stash of 1'%d: metadata-only %v, want %v (%v)", seq, ok, meta, err)
		}
	}
	check := func(want string, attrs map[string]string) {
		t.Helper()
		b, err := st.Read(c, "x", 0, 0)
		got, _ := st.Attrs(c, "x")
		if err != nil || string(b) != want || len(got) != len(attrs) {
			t.Fatalf("x = %q %v (attrs %q), want %q %v", b, err, got, want, attrs)
		}
		for k, v := range attrs {
			if string(got[k]) != v {
				t.Fatalf("x attr %s = %q, want %q", k, got[k], v)
			}
		}
	}
	check("over+c", map[string]string{"v": "5", "extra": "new"})
	if err := pg.rollback(7, Version{Epoch: 1, Seq: 3}); err != nil {
		t.Fatal(err)
	}
	check("base+a+b", map[string]string{"v": "3", "extra": "new"})
	if err := pg.rollback(7, Version{Epoch: 1, Seq: 1}); err != nil {
		t.Fatal(err)
	}
	check("base", map[string]string{"v": "1"})
	if names, _ := st.List(c, "", 100); strings.Join(names, ",") != "x" {
		t.Fatalf("objects after rollback: %q (stashes must be gone)", names)
	}
}

// TestAdoptLogDropsStashes: a shard that adopts an authoritative log
// keeps the stashes of the writes that log still carries (they may yet be
// rolled back) and removes those of its divergent writes; a copy of
// another shard removes all of its stashes. Before, both stayed for the
// PG's life on the OSD.
func TestAdoptLogDropsStashes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shard int      // the shard this OSD holds when adopting (its copy is shard 0)
		want  []string // objects left, stashes named by stashName
	}{
		{"same shard", 0, []string{"a", "b", stashName(3), stashName(4)}},
		{"another shard", 1, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := rollbackPG(t)
			pg.ps.Interval.EC = true
			st, c := pg.osd.store, pg.coll
			// 1'1, 1'2 create a and b; 1'3 … 1'6 overwrite them, each
			// stashing what it replaces
			for seq, oid := range []string{"a", "b", "a", "b", "a", "b"} {
				var w objectstore.Transaction
				w.WriteFull(c, oid, []byte(fmt.Sprint(oid, seq)))
				applyShardWrite(t, pg, uint64(seq+1), oid, &w)
			}
			if names, _ := st.List(c, "", 100); len(names) != 2+4 {
				t.Fatalf("before adopting: %q, want a, b and four stashes", names)
			}
			pg.shard = tc.shard
			// the authoritative log: 1'1 … 1'4 as here, then 2'5 (this
			// copy's 1'5 and 1'6 diverged)
			auth := append(slices.Clone(pg.log.entries[:4]), LogEntry{Ver: Version{Epoch: 2, Seq: 5}, Op: logModify, OID: "a"})
			for i := range auth {
				auth[i].Stash = false // the primary's entries say nothing of this copy's stashes
			}
			info := pg.log.info
			info.LastUpdate = Version{Epoch: 2, Seq: 5}
			if err := pg.adoptLog(7, info, auth, []string{"a", "b"}); err != nil {
				t.Fatal(err)
			}
			names, _ := st.List(c, "", 100)
			slices.Sort(names)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(names, want) {
				t.Fatalf("objects after adopting the log: %q, want %q", names, want)
			}
		})
	}
}

// TestRollbackSnapshots: an erasure-coded shard's writes that make,
// trim and keep clones (a snapshot's first write, a trim, a removal that
// leaves a whiteout) roll back with the clones: a clone a write made goes,
// a clone it trimmed comes back with its data and its snap mapper keys.
func TestRollbackSnapshots(t *testing.T) {
	pg := rollbackPG(t)
	pg.ps.Interval.EC = true
	st, c := pg.osd.store, pg.coll
	write := func(seq uint64, build func(o *opexec.Object, w *objectstore.Transaction)) {
		t.Helper()
		o, err := opexec.Load(st, c, "h")
		if err != nil {
			t.Fatal(err)
		}
		if err := o.LoadSnapSet(); err != nil {
			t.Fatal(err)
		}
		var w objectstore.Transaction
		build(o, &w)
		applyShardWrite(t, pg, seq, "h", &w)
	}
	put := func(o *opexec.Object, w *objectstore.Transaction, snapc opexec.SnapContext, data string) {
		ss := opexec.MakeWriteable(o, w, snapc)
		w.WriteFull(c, "h", []byte(data))
		w.SetAttr(c, "h", attrECSize, binary.LittleEndian.AppendUint64(nil, uint64(len(data))))
		if ss != nil {
			ss.Written(0, ^uint64(0))
		}
		opexec.FinishSnaps(o, w, ss, true)
	}
	write(1, func(o *opexec.Object, w *objectstore.Transaction) { put(o, w, opexec.SnapContext{}, "v1") })
	write(2, func(o *opexec.Object, w *objectstore.Transaction) { // snap 1 taken: h is cloned
		put(o, w, opexec.SnapContext{Seq: 1, Snaps: []uint64{1}}, "v2")
	})
	write(3, func(o *opexec.Object, w *objectstore.Transaction) { // snap 1 removed: its clone trimmed
		x, err := opexec.Prepare(o, []osdop.Op{{Code: osdop.TrimSnaps, Data: opexec.EncodeSnapIDs([]uint64{1})}}, 0, opexec.SnapContext{})
		if err != nil {
			t.Fatal(err)
		}
		w.Append(x.T)
	})
	write(4, func(o *opexec.Object, w *objectstore.Transaction) { // snap 2 taken, h removed: a whiteout
		ss := opexec.MakeWriteable(o, w, opexec.SnapContext{Seq: 2, Snaps: []uint64{2}})
		w.Remove(c, "h")
		ss.Written(0, ^uint64(0))
		opexec.FinishSnaps(o, w, ss, false)
	})
	clone1, clone2 := opexec.CloneOID("h", 1), opexec.CloneOID("h", 2)
	state := func() string { // the objects, each with its data, and the snap mapper's keys
		t.Helper()
		names, _ := st.List(c, "", 100)
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, stashPrefix) { // of the writes not rolled back
				continue
			}
			if n == opexec.SnapMapperOID {
				kvs, _, _ := st.OmapList(c, n, "", "", 100)
				for _, kv := range kvs {
					out = append(out, "key "+kv.Key)
				}
				continue
			}
			b, _ := st.Read(c, n, 0, 0)
			name := map[string]string{"h": "h", clone1: "clone1", clone2: "clone2"}[n]
			if name == "" {
				name = fmt.Sprintf("%q", n)
			}
			if _, err := st.GetAttr(c, n, opexec.AttrWhiteout); err == nil {
				name += "(whiteout)"
			}
			out = append(out, name+"="+string(b))
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	key := func(snap uint64) string { return "key " + opexec.SnapMapperKey(snap, "h") }
	for _, step := range []struct {
		to   uint64
		want string
	}{
		{3, "h=v2"},
		{2, "clone1=v1 h=v2 " + key(1)},
		{1, "h=v1"},
	} {
		if err := pg.rollback(7, Version{Epoch: 1, Seq: step.to}); err != nil {
			t.Fatal(err)
		}
		if got := state(); got != step.want {
			t.Fatalf("rolled back to 1'%d: %s, want %s", step.to, got, step.want)
		}
	}
}
