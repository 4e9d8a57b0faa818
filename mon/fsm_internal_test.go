package mon

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// newTestState is a new cluster's state.
func newTestState(t *testing.T) *State {
	t.Helper()
	c, err := crush.Simple(crush.SimpleSpec{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewState("fsid", c)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A snapshot keeps every entity's key and caps, an entity without caps
// staying without; one written before caps existed (keys alone) restores
// with the default caps of each entity's type.
func TestSnapshotAuth(t *testing.T) {
	st := newTestState(t)
	key := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	for _, cmd := range []Command{
		AuthAdd{Entity: "client.bob", Key: key, Caps: map[string]string{"mon": "allow r", "osd": "allow rw pool=a"}},
		AuthAdd{Entity: "client.none", Key: key},
	} {
		if _, _, err := st.Commit(cmd); err != nil {
			t.Fatal(err)
		}
	}
	restore := func(b []byte) *fsm {
		t.Helper()
		f := newFSM(nil)
		if err := f.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
			t.Fatal(err)
		}
		return f
	}
	snap, err := newFSM(st).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got := restore(snap.(snapshot)).authDB(); !reflect.DeepEqual(got, st.Auth) {
		t.Fatalf("restored %v, want %v", got, st.Auth)
	}

	// the pre-caps form: map, config, then auth as entity → key
	legacy, _ := json.Marshal(map[string]string{"client.admin": key, "osd.3": key, "client.old": key})
	e := wire.NewEncoder(nil)
	e.Blob(st.Map.Encode())
	e.Blob([]byte("{}"))
	e.Blob(legacy)
	want := map[string]monc.AuthEntry{
		"client.admin": {Key: key, Caps: map[string]string{"mon": "allow *", "osd": "allow *"}},
		"osd.3":        {Key: key, Caps: map[string]string{"mon": "profile osd", "osd": "allow *"}},
		"client.old":   {Key: key, Caps: map[string]string{}},
	}
	if got := restore(e.Bytes()).authDB(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored pre-caps snapshot %v, want %v", got, want)
	}
}

// The MON map is raft's committed configuration with its log index, and
// a snapshot keeps it.
func TestSnapshotMonMap(t *testing.T) {
	st := newTestState(t)
	f := newFSM(st)
	_, changed := f.view()
	f.StoreConfiguration(7, raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: "127.0.0.1:6791", Address: "127.0.0.1:6792"},
		{Suffrage: raft.Nonvoter, ID: "127.0.0.1:6789", Address: "127.0.0.1:6790"},
	}})
	select {
	case <-changed:
	default:
		t.Fatal("a new MON map did not wake the map subscribers")
	}
	want := monc.MonMap{Epoch: 7, Mons: []monc.MonInfo{{Addr: "127.0.0.1:6789"}, {Addr: "127.0.0.1:6791", Voter: true}}}
	if got := f.monMap(); !reflect.DeepEqual(got, want) {
		t.Fatalf("MON map %+v, want %+v", got, want)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	g := newFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snap.(snapshot)))); err != nil {
		t.Fatal(err)
	}
	if got := g.monMap(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored MON map %+v, want %+v", got, want)
	}
}

// A shard a pg_upmap_items pair moved stays where it is when CRUSH
// reorders the PG (a second reader's case): CRUSH [1 2 3] with the pair
// 2→7 served [1 7 3]; CRUSH's choice becomes [2 4 1]; keeping osd.1 at 0
// and osd.7 (the pair's To, for osd.2) at 1 gives the pg_upmap [1 2 4],
// which the pair makes [1 7 4] — one shard moves (3's, to osd.4), not
// two.
func TestKeepWithItems(t *testing.T) {
	inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: 8, NewOSDs: map[int32]osdmap.OSD{},
		NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{{Pool: 1, Seed: 0}: {{From: 2, To: 7}}}}
	for i := int32(0); i < 8; i++ {
		inc.NewOSDs[i] = osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn}
	}
	c, err := crush.Simple(crush.SimpleSpec{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := osdmap.New("f", c).Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	got := keepWithItems(m, osdmap.PGID{Pool: 1, Seed: 0}, []int32{2, 4, 1}, []int32{1, 7, 3}, []int32{1, 7, 3})
	if !slices.Equal(got, []int32{1, 2, 4}) {
		t.Fatalf("pg_upmap %v, want [1 2 4]", got)
	}
}
