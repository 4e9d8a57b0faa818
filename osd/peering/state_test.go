package peering

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/osdmap"
)

// mapping is an interval for the machine tests: acting (primary first),
// up, an ID that tells intervals apart, size 3 and min_size 2.
func mapping(id uint64, acting []int32, up ...int32) Interval {
	iv := rep3(acting...)
	iv.ID = id
	if up != nil {
		iv.Up = up
	}
	for _, o := range acting {
		if o != osdmap.NoOSD {
			iv.Primary = o
			break
		}
	}
	return iv
}

// TestMachineAdvMap runs maps through one OSD's machine and checks the
// state, whether it peers, and the past intervals and strays it keeps.
func TestMachineAdvMap(t *testing.T) {
	type step struct {
		iv      Interval
		in      bool
		prev    []int32
		state   State
		peer    bool
		changed bool
		past    string
		strays  string
	}
	ecBackfill := withBackfill(ec21(0, 1, 2), []int32{3}, []int{2})
	ecBackfill.ID = 9
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first map, primary: peers; the previous acting set is the past", []step{
			{iv: mapping(1, []int32{0, 1, 2}), in: true, prev: []int32{0, 1, 3}, state: GetInfo, peer: true, changed: true, past: "[[0 1 3]]", strays: "[3]"},
		}},
		{"first map, replica", []step{
			{iv: mapping(1, []int32{1, 0, 2}), in: true, state: ReplicaActive, changed: true, past: "[]", strays: "[]"},
		}},
		{"first map, not a member: stray", []step{
			{iv: mapping(1, []int32{1, 2, 3}), in: false, state: Stray, changed: true, past: "[]", strays: "[]"},
		}},
		{"below min_size: peered, no peering", []step{
			{iv: mapping(1, []int32{0, osdmap.NoOSD, osdmap.NoOSD}), in: true, state: Peered, changed: true, past: "[]", strays: "[]"},
		}},
		{"the same interval again changes nothing", []step{
			{iv: mapping(1, []int32{0, 1, 2}), in: true, state: GetInfo, peer: true, changed: true, past: "[]", strays: "[]"},
			{iv: mapping(1, []int32{0, 1, 2}), in: true, state: GetInfo, past: "[]", strays: "[]"},
		}},
		{"interval change mid-peering: the old acting set joins the past, the departed member is a stray", []step{
			{iv: mapping(1, []int32{0, 1, 2}), in: true, state: GetInfo, peer: true, changed: true, past: "[]", strays: "[]"},
			{iv: mapping(2, []int32{0, 1, 3}), in: true, state: GetInfo, peer: true, changed: true, past: "[[0 1 2]]", strays: "[2]"},
		}},
		{"a stray that returns to the acting set is no longer a stray", []step{
			{iv: mapping(1, []int32{0, 1, 2}), in: true, state: GetInfo, peer: true, changed: true, past: "[]", strays: "[]"},
			{iv: mapping(2, []int32{0, 1, 3}), in: true, state: GetInfo, peer: true, changed: true, past: "[[0 1 2]]", strays: "[2]"},
			{iv: mapping(3, []int32{0, 1, 2}), in: true, state: GetInfo, peer: true, changed: true, past: "[[0 1 2] [0 1 3]]", strays: "[3]"},
		}},
		{"an interval below min_size took no writes: not in the past", []step{
			{iv: mapping(1, []int32{0, osdmap.NoOSD, osdmap.NoOSD}), in: true, state: Peered, changed: true, past: "[]", strays: "[]"},
			{iv: mapping(2, []int32{0, 1, osdmap.NoOSD}), in: true, state: GetInfo, peer: true, changed: true, past: "[]", strays: "[]"},
		}},
		{"losing the primary role mid-peering: replica", []step{
			{iv: mapping(1, []int32{0, 1, 2}), in: true, state: GetInfo, peer: true, changed: true, past: "[]", strays: "[]"},
			{iv: mapping(2, []int32{1, 0, 2}), in: true, state: ReplicaActive, changed: true, past: "[[0 1 2]]", strays: "[]"},
		}},
		// a stray applies every map: the interval it is not in joins its
		// past, which it reports to the primary's query
		{"leaving the PG: stray, and back as the primary", []step{
			{iv: mapping(1, []int32{1, 0, 2}), in: true, state: ReplicaActive, changed: true, past: "[]", strays: "[]"},
			{iv: mapping(2, []int32{1, 3, 2}), in: false, state: Stray, changed: true, past: "[[1 0 2]]", strays: "[0]"},
			{iv: mapping(2, []int32{1, 3, 2}), in: false, state: Stray, changed: true, past: "[[1 0 2] [1 3 2]]", strays: "[0]"},
			{iv: mapping(3, []int32{0, 3, 2}), in: true, state: GetInfo, peer: true, changed: true, past: "[[1 0 2] [1 3 2]]", strays: "[1]"},
		}},
		{"an erasure-coded interval's prior set holds its backfill target at its shard's position", []step{
			{iv: ecBackfill, in: true, state: GetInfo, peer: true, changed: true, past: "[]", strays: "[]"},
			{iv: func() Interval { iv := ec21(0, 1, 3); iv.ID = 10; return iv }(), in: true, state: GetInfo, peer: true, changed: true,
				past: fmt.Sprintf("[[0 1 2 %d %d 3]]", osdmap.NoOSD, osdmap.NoOSD), strays: "[2]"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Machine{Whoami: 0}
			for i, s := range tc.steps {
				changed, peer := m.AdvMap(s.iv, s.in, s.prev)
				past, strays := fmt.Sprint(m.Past), fmt.Sprint(m.Strays)
				if m.Past == nil {
					past = "[]"
				}
				if m.Strays == nil {
					strays = "[]"
				}
				if changed != s.changed || peer != s.peer || m.State != s.state || past != s.past || strays != s.strays {
					t.Errorf("step %d: changed %v peer %v state %v past %s strays %s; want %v %v %v %s %s",
						i, changed, peer, m.State, past, strays, s.changed, s.peer, s.state, s.past, s.strays)
				}
			}
		})
	}
}

// TestTempAskedOncePerInterval: a pg_temp asked for in an interval holds
// the ask while the interval does, and is forgotten once the map moves
// the PG on — also when it comes back to an interval of the same digest
// (its set, the pg_temp, cleared: TestECPGMergeShardOrder once stayed
// incomplete there, the writes of the last moment on a former member).
func TestTempAskedOncePerInterval(t *testing.T) {
	m := Machine{Whoami: 0}
	a := mapping(1, []int32{0, 1, 2})
	m.AdvMap(a, true, nil)
	m.TempAsked = a.ID
	if changed, _ := m.AdvMap(a, true, nil); changed || m.TempAsked != a.ID {
		t.Fatalf("the same interval: changed %v, TempAsked %d", changed, m.TempAsked)
	}
	m.AdvMap(mapping(2, []int32{3, 1, 2}), true, nil)
	if m.TempAsked != 0 {
		t.Fatalf("another interval keeps the ask: %d", m.TempAsked)
	}
	m.AdvMap(a, true, nil)
	if m.TempAsked != 0 {
		t.Fatalf("back in the first interval's set: TempAsked %d", m.TempAsked)
	}
}

// TestMachineLifecycle: repeer, progress (Down stays Down), activation,
// recovery and settling, and an interval that ends under them.
func TestMachineLifecycle(t *testing.T) {
	m := Machine{Whoami: 0}
	m.AdvMap(mapping(1, []int32{0, 1, 2}), true, nil)
	if !m.Progress(1, GetLog, "") || m.State != GetLog || m.State.Name() != "peering" {
		t.Fatalf("state %v", m.State)
	}
	if m.Progress(1, GetLog, "") {
		t.Fatal("progress to the same state reported a change")
	}
	if !m.Progress(1, Down, "waiting for osd.5") || m.Progress(1, GetMissing, "") {
		t.Fatal("progress to down, then past it, reported wrongly")
	}
	if m.State != Down || m.DownReason != "waiting for osd.5" || m.State.Name() != "down" {
		t.Fatalf("a later step's progress moved a down PG to %v (%q)", m.State, m.DownReason)
	}
	m.Progress(2, Incomplete, "other interval")
	if m.State != Down {
		t.Fatal("progress of an ended interval applied")
	}
	if m.Activate(2, false, false) {
		t.Fatal("activated in an interval that ended")
	}
	if !m.Activate(1, true, false) || m.State != Recovering || !m.State.IsActive() || m.DownReason != "" {
		t.Fatalf("after activation with recovery: %v %q", m.State, m.DownReason)
	}
	m.Progress(1, GetLog, "")
	if m.State != Recovering {
		t.Fatal("progress applied to an active PG")
	}
	m.Recovered(1)
	if m.State != Clean || m.State.Name() != "active" {
		t.Fatalf("after recovery: %v", m.State)
	}
	if !m.Repeer() || m.State != GetInfo {
		t.Fatalf("repeer of an active primary: %v", m.State)
	}
	if !m.Activate(1, true, true) || m.State != Backfilling {
		t.Fatalf("activation with a backfill: %v", m.State)
	}
	m.AddPast([][]int32{{4, 5, 6}, {4, 5, 6}, {osdmap.NoOSD}})
	if !slices.EqualFunc(m.Past, [][]int32{{4, 5, 6}}, slices.Equal) {
		t.Fatalf("past %v", m.Past)
	}
	if remapped, ok := m.Settled(1); !ok || remapped || m.Past != nil {
		t.Fatalf("settled: remapped %v ok %v past %v", remapped, ok, m.Past)
	}

	// undersized: recovered, not clean; a replica and a peered PG do not
	// repeer
	u := Machine{Whoami: 0}
	u.AdvMap(mapping(1, []int32{0, 1, osdmap.NoOSD}), true, nil)
	u.Activate(1, false, false)
	if u.State != Recovered {
		t.Fatalf("undersized and complete: %v", u.State)
	}
	r := Machine{Whoami: 0}
	r.AdvMap(mapping(1, []int32{1, 0, 2}), true, nil)
	if r.Repeer() {
		t.Fatal("a replica repeered")
	}
	p := Machine{Whoami: 0}
	p.AdvMap(mapping(1, []int32{0, osdmap.NoOSD, osdmap.NoOSD}), true, nil)
	if p.Repeer() || p.State != Peered {
		t.Fatal("a peered PG repeered")
	}
}

// TestIntervalRemapped: when a complete PG's pg_temp must go.
func TestIntervalRemapped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		iv       Interval
		remapped bool
	}{
		{"acting is up", mapping(1, []int32{0, 1, 2}), false},
		{"backfill targets", withBackfill(rep3(0, 1, 2), []int32{3}, nil), true},
		{"a pg_temp that only reorders the up set", mapping(1, []int32{1, 0, 2}, 0, 1, 2), true},
		{"a pg_temp holding more than the up set (its OSDs down)", mapping(1, []int32{0, 1, 2}, 0, 1), false},
		{"an erasure-coded pg_temp with swapped positions", func() Interval {
			iv := ec21(1, 0, 2)
			iv.Up = []int32{0, 1, 2}
			return iv
		}(), false},
		{"a pg_temp missing an up OSD", mapping(1, []int32{0, 1, 3}, 0, 1, 2), true},
	} {
		if got := tc.iv.Remapped(); got != tc.remapped {
			t.Errorf("%s: remapped %v, want %v", tc.name, got, tc.remapped)
		}
	}
}

// TestStateNames: every state has Ceph's path and a reported name.
func TestStateNames(t *testing.T) {
	for s := Stray; s <= Clean; s++ {
		if s.String() == "Unknown" || s.String() == "" || s.Name() == "" {
			t.Errorf("state %d has no name", s)
		}
	}
	if State(200).String() != "Unknown" {
		t.Error("an unknown state has a name")
	}
}
