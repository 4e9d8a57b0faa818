package objectstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
)

// splitTarget sends objects whose name ends in an odd digit to "1.1" and
// in 2 or 6 to "1.2"; the index's entries go by the same rule on the
// name after their "/".
func splitTarget(oid string) objectstore.Coll {
	if oid == "" {
		return ""
	}
	switch oid[len(oid)-1] {
	case '1', '3', '5', '7', '9':
		return "1.1"
	case '2', '6':
		return "1.2"
	}
	return ""
}

func splitKey(key string) objectstore.Coll {
	_, head, _ := strings.Cut(key, "/")
	return splitTarget(head)
}

// fill writes the parent's objects (inline and on-device data, attrs,
// omap, a clone sharing blocks) and its index to s; with to set (the
// expected state after the split) each goes where the split sends it
// instead.
func fill(t *testing.T, s objectstore.Store, to func(string) objectstore.Coll) {
	t.Helper()
	var tx objectstore.Transaction
	colls := []objectstore.Coll{"1.0"}
	if to != nil {
		colls = append(colls, "1.1", "1.2")
	}
	for _, c := range colls {
		tx.CreateCollection(c)
	}
	where := func(oid string) objectstore.Coll {
		if to != nil && to(oid) != "" {
			return to(oid)
		}
		return "1.0"
	}
	for i := range 10 {
		oid := fmt.Sprintf("obj%d", i)
		c := where(oid)
		tx.WriteFull(c, oid, bytes.Repeat([]byte{byte('a' + i)}, 1000+i*9000)) // 1 KB inline to 82 KB on the device
		tx.SetAttr(c, oid, "v", []byte(oid))
		if i%3 == 0 {
			tx.OmapSet(c, oid, []omap.KV{{Key: "k" + oid, Value: []byte(oid)}})
		}
	}
	tx.Clone(where("obj9"), "obj9", "\x00cl9")
	for i := range 10 {
		key := fmt.Sprintf("%04d/obj%d", i, i)
		c := "1.0"
		if to != nil && splitKey(key) != "" {
			c = string(splitKey(key))
		}
		tx.OmapSet(objectstore.Coll(c), "\x00index", []omap.KV{{Key: key, Value: []byte{byte(i)}}})
	}
	if err := s.Apply(&tx); err != nil {
		t.Fatal(err)
	}
}

// TestSplitCollection splits a collection into two children in both
// stores and checks each against the state built directly where the
// split sends every object (data, attrs, omap, index entries); then that
// a transaction naming a moved object fails and changes nothing, that
// objects that stayed still take writes, that the split survives a
// reopen, and that a split into a missing child fails whole.
func TestSplitCollection(t *testing.T) {
	want := objectstore.NewMemStore()
	fill(t, want, func(oid string) objectstore.Coll {
		if oid == "\x00cl9" {
			return "" // Target sees the clone's full name: it stays
		}
		return splitTarget(oid)
	})
	dir := t.TempDir()
	stores := map[string]objectstore.Store{"memstore": objectstore.NewMemStore(), "blockstore": openStore(t, dir, objectstore.Options{Size: 16 << 20})}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			fill(t, s, nil)
			var bad objectstore.Transaction
			bad.CreateCollection("1.1")
			bad.SplitCollection("1.0", &objectstore.Split{Children: []objectstore.Coll{"1.1", "1.2"}, Target: splitTarget})
			if err := s.Apply(&bad); !errors.Is(err, objectstore.ErrNotFound) {
				t.Fatalf("split into a missing child: %v, want ErrNotFound", err)
			}
			if cs, _ := s.Collections(); len(cs) != 1 {
				t.Fatalf("failed split left collections %v", cs)
			}
			var tx objectstore.Transaction
			tx.CreateCollection("1.1")
			tx.CreateCollection("1.2")
			tx.SplitCollection("1.0", &objectstore.Split{Children: []objectstore.Coll{"1.1", "1.2"}, Target: splitTarget,
				Indexes: []string{"\x00index"}, KeyTarget: splitKey})
			if err := s.Apply(&tx); err != nil {
				t.Fatal(err)
			}
			sameState(t, s, want)
			// a write to a moved object through the parent: refused, and
			// nothing of its transaction applied
			var stale objectstore.Transaction
			stale.WriteFull("1.0", "obj0", []byte("stays"))
			stale.WriteFull("1.0", "obj3", []byte("built before the split"))
			if err := s.Apply(&stale); !errors.Is(err, objectstore.ErrInvalid) {
				t.Fatalf("write to a moved object: %v, want ErrInvalid", err)
			}
			var staleKey objectstore.Transaction
			staleKey.OmapSet("1.0", "\x00index", []omap.KV{{Key: "0099/x5"}})
			if err := s.Apply(&staleKey); !errors.Is(err, objectstore.ErrInvalid) {
				t.Fatalf("index entry of a moved object: %v, want ErrInvalid", err)
			}
			sameState(t, s, want)
			var ok objectstore.Transaction
			ok.WriteFull("1.0", "obj0", []byte("stays"))
			ok.OmapSet("1.0", "\x00index", []omap.KV{{Key: "0099/x4"}})
			ok.WriteFull("1.1", "obj3", []byte("in its child"))
			if err := s.Apply(&ok); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Read("1.1", "obj3", 0, 0); err != nil || string(got) != "in its child" {
				t.Fatalf("child's obj3: %q %v", got, err)
			}
		})
	}
	bs := stores["blockstore"].(*objectstore.BlockStore)
	if err := bs.Close(); err != nil {
		t.Fatal(err)
	}
	bs = openStore(t, dir, objectstore.Options{})
	defer bs.Close()
	if got, err := bs.Read("1.1", "obj3", 0, 0); err != nil || string(got) != "in its child" {
		t.Fatalf("after reopen, child's obj3: %q %v", got, err)
	}
	if got, err := bs.Read("1.2", "obj6", 0, 0); err != nil || !bytes.Equal(got, bytes.Repeat([]byte{'g'}, 1000+6*9000)) {
		t.Fatalf("after reopen, obj6: %d bytes %v", len(got), err)
	}
	if _, err := bs.Stat("1.0", "obj6"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("after reopen, obj6 still in the parent: %v", err)
	}
	if err := bs.Fsck(true); err != nil {
		t.Fatal(err)
	}
}

// TestMergeCollections merges two collections into a third that holds
// objects of its own — a PG merge (osd/merge.go): a split of each source
// toward the target that moves every object and index entry, then the
// sources' emptied index objects removed, then the sources in a
// transaction of their own — in both stores, and checks the result
// against the state built directly in one collection (data, attrs, omap,
// a clone, the index's entries), and that it survives a reopen and Fsck.
func TestMergeCollections(t *testing.T) {
	want := objectstore.NewMemStore()
	fill(t, want, nil)
	all := func(oid string) objectstore.Coll {
		if oid == "\x00index" {
			return ""
		}
		return "1.0"
	}
	dir := t.TempDir()
	stores := map[string]objectstore.Store{"memstore": objectstore.NewMemStore(), "blockstore": openStore(t, dir, objectstore.Options{Size: 16 << 20})}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			fill(t, s, func(oid string) objectstore.Coll {
				if oid == "\x00cl9" {
					return splitTarget("obj9")
				}
				return splitTarget(oid)
			})
			var tx objectstore.Transaction
			for _, src := range []objectstore.Coll{"1.1", "1.2"} {
				tx.SplitCollection(src, &objectstore.Split{Children: []objectstore.Coll{"1.0"}, Target: all,
					Indexes: []string{"\x00index"}, KeyTarget: func(string) objectstore.Coll { return "1.0" }})
			}
			for _, src := range []objectstore.Coll{"1.1", "1.2"} {
				tx.Remove(src, "\x00index")
			}
			if err := s.Apply(&tx); err != nil {
				t.Fatal(err)
			}
			var rm objectstore.Transaction
			rm.RemoveCollection("1.1")
			rm.RemoveCollection("1.2")
			if err := s.Apply(&rm); err != nil {
				t.Fatal(err)
			}
			sameState(t, s, want)
		})
	}
	bs := stores["blockstore"].(*objectstore.BlockStore)
	if err := bs.Close(); err != nil {
		t.Fatal(err)
	}
	bs = openStore(t, dir, objectstore.Options{})
	defer bs.Close()
	sameState(t, bs, want)
	if err := bs.Fsck(true); err != nil {
		t.Fatal(err)
	}
}
