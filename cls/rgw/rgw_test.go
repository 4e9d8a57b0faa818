package rgw

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/omap"
)

// memShard is a cls.Object over an omap in memory with the OSD's
// semantics: reads see the object as it was before the call, writes are
// applied in order when the call succeeds (commit).
type memShard struct {
	exists bool
	omap   map[string][]byte
	writes []func(map[string][]byte)
}

func newShard() *memShard { return &memShard{exists: true, omap: map[string][]byte{}} }

func (m *memShard) Exists() bool                            { return m.exists }
func (m *memShard) Size() uint64                            { return 0 }
func (m *memShard) Read(off, length uint64) ([]byte, error) { return nil, nil }
func (m *memShard) GetXattr(string) ([]byte, error)         { return nil, cls.ErrNotFound }
func (m *memShard) Xattrs() []string                        { return nil }
func (m *memShard) Caller() string                          { return "" }
func (m *memShard) Now() time.Time                          { return time.Time{} }
func (m *memShard) OmapGet(keys []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, k := range keys {
		if v, ok := m.omap[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}
func (m *memShard) OmapList(startAfter, prefix string, max int) ([]omap.KV, bool, error) {
	var kvs []omap.KV
	for _, k := range slices.Sorted(maps.Keys(m.omap)) {
		if k > startAfter && strings.HasPrefix(k, prefix) {
			if len(kvs) == max {
				return kvs, true, nil
			}
			kvs = append(kvs, omap.KV{Key: k, Value: m.omap[k]})
		}
	}
	return kvs, false, nil
}
func (m *memShard) Write(uint64, []byte)    {}
func (m *memShard) WriteFull([]byte)        {}
func (m *memShard) SetXattr(string, []byte) {}
func (m *memShard) Remove()                 {}
func (m *memShard) OmapSet(kvs []omap.KV) {
	kvs = slices.Clone(kvs)
	m.writes = append(m.writes, func(o map[string][]byte) {
		for _, kv := range kvs {
			o[kv.Key] = kv.Value
		}
	})
}
func (m *memShard) OmapRm(keys []string) {
	keys = slices.Clone(keys)
	m.writes = append(m.writes, func(o map[string][]byte) {
		for _, k := range keys {
			delete(o, k)
		}
	})
}

// call runs method on the shard as the OSD does: its writes apply only if
// it succeeds.
func (m *memShard) call(t *testing.T, method string, in any) ([]byte, error) {
	t.Helper()
	fn, ok := cls.Lookup("rgw." + method)
	if !ok {
		t.Fatalf("rgw.%s not registered", method)
	}
	b, _ := json.Marshal(in)
	m.writes = nil
	out, err := fn(m, b)
	if err == nil {
		for _, w := range m.writes {
			w(m.omap)
		}
	}
	m.writes = nil
	return out, err
}

func (m *memShard) entry(t *testing.T, key string) *Entry {
	t.Helper()
	b, ok := m.omap[key]
	if !ok {
		return nil
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("entry %q: %v", key, err)
	}
	return &e
}

func (m *memShard) stats(t *testing.T) Stats {
	t.Helper()
	var st Stats
	if b, ok := m.omap[StatsKey]; ok {
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// TestBatch: one rgw.batch call applies prepares, cancels and completions
// as the single-update methods would, in order: of two completions of one
// key the newer version wins whichever comes first, and the stats count
// each listed entry once.
func TestBatch(t *testing.T) {
	m := newShard()
	if _, err := m.call(t, "batch", BatchIn{Prepares: []PrepareIn{
		{Key: "a", Tag: "t1", Op: "put"}, {Key: "a", Tag: "t2", Op: "put"},
		{Key: "b", Tag: "t3", Op: "put"}, {Key: "b", Tag: "t4", Op: "put"}, {Key: "c", Tag: "t5", Op: "put"},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{PendingKey("a", "t1"), PendingKey("a", "t2"), PendingKey("c", "t5")} {
		if _, ok := m.omap[k]; !ok {
			t.Fatalf("pending %q not recorded", k)
		}
	}
	// a: the newer completion first; b: the older first; c: cancelled
	out, err := m.call(t, "batch", BatchIn{
		Completes: []CompleteIn{
			{Key: "a", Tag: "t2", Ver: 20, Entry: &Entry{Size: 2}}, {Key: "a", Tag: "t1", Ver: 10, Entry: &Entry{Size: 1}},
			{Key: "b", Tag: "t3", Ver: 30, Entry: &Entry{Size: 3}}, {Key: "b", Tag: "t4", Ver: 40, Entry: &Entry{Size: 4}},
		},
		Cancels: []CancelIn{{Key: "c", Tag: "t5"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var bo BatchOut
	if err := json.Unmarshal(out, &bo); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bo.Applied, []bool{true, false, true, true}) || bo.Objects != 2 {
		t.Fatalf("batch out %+v, want applied [true false true true], 2 objects", bo)
	}
	if e := m.entry(t, "a"); e == nil || e.Ver != 20 || e.Tag != "t2" || e.Size != 2 {
		t.Fatalf("a: %+v, want version 20", e)
	}
	if e := m.entry(t, "b"); e == nil || e.Ver != 40 || e.Size != 4 {
		t.Fatalf("b: %+v, want version 40", e)
	}
	if st := m.stats(t); st != (Stats{Objects: 2, Bytes: 6}) {
		t.Fatalf("stats %+v, want 2 objects of 6 bytes", st)
	}
	kvs, _, _ := m.OmapList("", PendingPrefix, 100)
	if len(kvs) != 0 {
		t.Fatalf("pending records left: %v", kvs)
	}

	// a delete and a put of one key in one batch: the newer wins
	if _, err := m.call(t, "batch", BatchIn{Completes: []CompleteIn{
		{Key: "a", Tag: "d1", Ver: 50}, {Key: "a", Tag: "t6", Ver: 45, Entry: &Entry{Size: 9}},
		{Key: "b", Tag: "t7", Ver: 60, Entry: &Entry{Size: 7}}, {Key: "b", Tag: "d2", Ver: 70},
	}}); err != nil {
		t.Fatal(err)
	}
	if m.entry(t, "a") != nil || m.entry(t, "b") != nil {
		t.Fatal("deleted keys still listed")
	}
	if _, ok := m.omap[TombstonePrefix+"a"]; !ok {
		t.Fatal("no tombstone for a")
	}
	if st := m.stats(t); st != (Stats{}) {
		t.Fatalf("stats %+v after deleting everything", st)
	}
}

// TestBatchAllOrNothing: a malformed update fails the whole call and a
// missing shard (bucket deleted) is ErrNotFound; neither writes anything.
func TestBatchAllOrNothing(t *testing.T) {
	m := newShard()
	_, err := m.call(t, "batch", BatchIn{Prepares: []PrepareIn{{Key: "a", Tag: "t", Op: "put"}},
		Completes: []CompleteIn{{Key: "b", Ver: 1}}})
	if !errors.Is(err, cls.ErrInvalid) || len(m.omap) != 0 {
		t.Fatalf("malformed completion: %v, omap %v", err, m.omap)
	}
	m.exists = false
	if _, err := m.call(t, "batch", BatchIn{Prepares: []PrepareIn{{Key: "a", Tag: "t", Op: "put"}}}); !errors.Is(err, cls.ErrNotFound) || len(m.omap) != 0 {
		t.Fatalf("missing shard: %v, omap %v", err, m.omap)
	}
}

// TestSingleMethods: rgw.prepare, rgw.complete, rgw.cancel and
// rgw.complete_batch keep their answers.
func TestSingleMethods(t *testing.T) {
	m := newShard()
	if _, err := m.call(t, "prepare", PrepareIn{Key: "k", Tag: "t", Op: "put"}); err != nil {
		t.Fatal(err)
	}
	out, err := m.call(t, "complete", CompleteIn{Key: "k", Tag: "t", Ver: 3, Entry: &Entry{Size: 5}})
	var co CompleteOut
	if err != nil || json.Unmarshal(out, &co) != nil || !co.Applied || co.Objects != 1 {
		t.Fatalf("complete: %s %v", out, err)
	}
	out, err = m.call(t, "complete", CompleteIn{Key: "k", Tag: "old", Ver: 2, Entry: &Entry{Size: 1}})
	if err != nil || json.Unmarshal(out, &co) != nil || co.Applied || co.Objects != 1 {
		t.Fatalf("stale complete: %s %v", out, err)
	}
	if _, err := m.call(t, "prepare", PrepareIn{Key: "k", Tag: "u", Op: "del"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.call(t, "cancel", CancelIn{Key: "k", Tag: "u"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.omap[PendingKey("k", "u")]; ok {
		t.Fatal("cancel left the pending record")
	}
	out, err = m.call(t, "complete_batch", []CompleteIn{{Key: "x", Tag: "1", Ver: 9, Entry: &Entry{}}, {Key: "k", Tag: "2", Ver: 1, Entry: &Entry{}}})
	var cb CompleteBatchOut
	if err != nil || json.Unmarshal(out, &cb) != nil || cb.Applied != 1 {
		t.Fatalf("complete_batch: %s %v", out, err)
	}
	if _, err := m.call(t, "prepare", PrepareIn{Key: "k", Tag: "t", Op: "rename"}); !errors.Is(err, cls.ErrInvalid) {
		t.Fatalf("prepare with a bad op: %v", err)
	}
}

// TestCompleteVersions: a key's versions record is replaced whole by a
// newer completion only, in or across batches; an empty list stays as a
// tombstone an older completion cannot overwrite; a reshard's copy
// (VersionsOnly) leaves the entry alone; and none of it counts in the
// shard's stats.
func TestCompleteVersions(t *testing.T) {
	m := newShard()
	rec := func() *Versions {
		b, ok := m.omap[VersionsPrefix+"k"]
		if !ok {
			return nil
		}
		var v Versions
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return &v
	}
	v2 := &Versions{List: []Version{{ID: "b", Size: 2}, {ID: "a", Size: 1}}}
	v1 := &Versions{List: []Version{{ID: "a", Size: 1}}}
	if _, err := m.call(t, "batch", BatchIn{Completes: []CompleteIn{
		{Key: "k", Tag: "t2", Ver: 20, Entry: &Entry{Size: 2}, Versions: v2},
		{Key: "k", Tag: "t1", Ver: 10, Entry: &Entry{Size: 1}, Versions: v1},
	}}); err != nil {
		t.Fatal(err)
	}
	if r := rec(); r == nil || r.Ver != 20 || len(r.List) != 2 || r.List[0].ID != "b" {
		t.Fatalf("versions after out-of-order completions: %+v; want version 20's two", r)
	}
	if _, err := m.call(t, "complete", CompleteIn{Key: "k", Tag: "t1", Ver: 10, Versions: v1}); err != nil {
		t.Fatal(err)
	}
	if r := rec(); r.Ver != 20 {
		t.Fatalf("an older completion replaced the record: %+v", r)
	}
	// every version removed: an empty record at 30, then a late 25
	if _, err := m.call(t, "complete", CompleteIn{Key: "k", Tag: "d", Ver: 30, Versions: &Versions{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.call(t, "complete", CompleteIn{Key: "k", Tag: "t3", Ver: 25, Entry: &Entry{Size: 3}, Versions: v1}); err != nil {
		t.Fatal(err)
	}
	if r := rec(); r == nil || r.Ver != 30 || len(r.List) != 0 || m.entry(t, "k") != nil {
		t.Fatalf("after removing every version: record %+v, entry %+v; want an empty record at 30 and no entry", r, m.entry(t, "k"))
	}
	if st := m.stats(t); st.Objects != 0 {
		t.Fatalf("stats %+v count versions", st)
	}
	// a reshard's copy of a newer record leaves the entry
	if _, err := m.call(t, "complete", CompleteIn{Key: "j", Tag: "t", Ver: 40, Entry: &Entry{Size: 4}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.call(t, "complete", CompleteIn{Key: "j", Tag: "reshard", Ver: 41, Versions: v1, VersionsOnly: true}); err != nil {
		t.Fatal(err)
	}
	if e := m.entry(t, "j"); e == nil || e.Ver != 40 {
		t.Fatalf("a versions-only completion changed the entry: %+v", e)
	}
}
