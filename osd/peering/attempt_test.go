package peering

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/osdmap"
)

// fakePeers answers an attempt's actions as the OSD would: members'
// answers by OSD, listings, and OSDs that do not answer.
type fakePeers struct {
	members  map[int32]Member
	listings map[int32][]string
	fail     map[int32]bool
	leases   bool // WaitLeases fails (a probe that times out)
}

func ver(e uint32, s uint64) Version { return Version{Epoch: e, Seq: s} }

// logOf is a log of writes seqs from..to at epoch e, object names by seq.
func logOf(e uint32, from, to uint64) []LogEntry { return entries(e, from, to, letter) }

// copyAt is a copy whose log holds writes 1..seq at epoch e.
func copyAt(id int32, e uint32, seq uint64) Member {
	m := Member{ID: id, Addr: fmt.Sprintf("a%d", id), Info: Info{LastUpdate: ver(e, seq)}, Entries: logOf(e, 1, seq)}
	if seq == 0 {
		m.Info.LastUpdate, m.Entries = Version{}, nil
	}
	return m
}

// shardAt is copyAt for an erasure-coded copy of shard pos.
func shardAt(id int32, pos int32, e uint32, seq uint64) Member {
	m := copyAt(id, e, seq)
	m.Info.Shard = pos
	return m
}

func names(ts []Target) string {
	var s []string
	for _, t := range ts {
		s = append(s, fmt.Sprintf("osd.%d", t.OSD))
	}
	return strings.Join(s, " ")
}

// drive runs an attempt to its end against f and returns its trace: one
// line per action that needs an answer or ends the attempt, and the
// Down, Incomplete and WaitActingChange progress.
func drive(t *testing.T, c Config, f fakePeers) []string {
	t.Helper()
	var trace []string
	a := NewAttempt(c)
	acts := a.Start()
	for step := 0; step < 50; step++ {
		var ev Event
		for _, act := range acts {
			switch x := act.(type) {
			case Progress:
				if x.State == Down || x.State == Incomplete || x.State == WaitActingChange {
					trace = append(trace, "state "+x.State.Name())
				}
			case MergePast:
				trace = append(trace, fmt.Sprintf("merge past %v", x.Sets))
			case Query:
				kind := "query"
				if x.Optional {
					kind = "query optional"
				}
				trace = append(trace, kind+" "+names(x.Targets))
				var ms []Member
				for _, q := range x.Targets {
					if f.fail[q.OSD] {
						if x.Optional {
							continue
						}
						trace = append(trace, fmt.Sprintf("fail query osd.%d", q.OSD))
						return trace
					}
					m, ok := f.members[q.OSD]
					if q.OSD == c.Whoami {
						m, ok = c.Self, true
					}
					if !ok {
						t.Fatalf("queried osd.%d, which holds no copy in the test", q.OSD)
					}
					ms = append(ms, m)
				}
				ev = Infos{Members: ms}
			case List:
				trace = append(trace, "list "+names(x.Targets))
				l := map[int32][]string{}
				for _, q := range x.Targets {
					l[q.OSD] = f.listings[q.OSD]
				}
				ev = Listed{Names: l}
			case WaitLeases:
				trace = append(trace, fmt.Sprintf("wait leases %v", x.Prior))
				if f.leases {
					trace = append(trace, "fail leases")
					return trace
				}
				ev = Done{}
			case RollBack:
				trace = append(trace, fmt.Sprintf("rollback %s to %s", names(x.Targets), x.To))
				ev = Done{}
			case SendLogs:
				var s []string
				for _, l := range x.Logs {
					s = append(s, fmt.Sprintf("osd.%d%v", l.To.OSD, l.Missing))
				}
				trace = append(trace, "send logs "+strings.Join(s, " ")+" at "+x.Logs[0].Info.LastUpdate.String())
				ev = Done{}
			case Fail:
				switch {
				case errors.Is(x.Err, ErrDown):
					trace = append(trace, "fail down")
				case errors.Is(x.Err, ErrIncomplete):
					trace = append(trace, "fail incomplete")
				default:
					trace = append(trace, "fail: "+x.Err.Error())
				}
				return trace
			case RequestPGTemp:
				trace = append(trace, fmt.Sprintf("pg_temp %v", x.Want))
				return trace
			case Activate:
				trace = append(trace, describeActivate(x))
				return trace
			}
		}
		acts = a.Step(ev)
	}
	t.Fatal("the attempt did not end in 50 steps")
	return nil
}

// describeActivate: the authority, then each member that lacks objects
// (with "whole" for a backfill), or "clean".
func describeActivate(x Activate) string {
	s := fmt.Sprintf("activate from osd.%d at %s", x.Auth.ID, x.Auth.Info.LastUpdate)
	if x.Plan == nil {
		return s + ": complete"
	}
	for _, o := range slices.Sorted(maps.Keys(x.Plan.Lacks)) {
		if l := x.Plan.Lacks[o]; len(l) > 0 {
			s += fmt.Sprintf(" osd.%d%v", o, slices.Sorted(maps.Keys(l)))
			if x.Plan.Whole[o] {
				s += "whole"
			}
		}
	}
	if x.Plan.Backfill {
		s += " backfill"
	}
	return s
}

// upMap is a map view with OSDs 0..n-1 existing and up, except down.
func upMap(n int, down ...int32) MapView {
	v := make(MapView, n)
	for i := range v {
		v[i] = OSDState{Exists: true, Up: !slices.Contains(down, int32(i)), Addr: fmt.Sprintf("a%d", i)}
	}
	return v
}

func rep3(acting ...int32) Interval {
	iv := Interval{ID: 7, Acting: acting, Up: slices.Clone(acting), Primary: acting[0], Size: 3, MinSize: 2}
	for _, o := range acting {
		iv.Addrs = append(iv.Addrs, fmt.Sprintf("a%d", o))
	}
	return iv
}

func ec21(acting ...int32) Interval {
	iv := rep3(acting...)
	iv.EC = true
	return iv
}

func withBackfill(iv Interval, osds []int32, shards []int) Interval {
	iv.Backfill = Backfill{OSDs: osds, Shards: shards}
	for _, o := range osds {
		iv.Backfill.Addrs = append(iv.Backfill.Addrs, fmt.Sprintf("a%d", o))
	}
	iv.Up = nil
	for _, o := range iv.Acting {
		if !slices.Contains(osds, o) {
			iv.Up = append(iv.Up, o)
		}
	}
	iv.Up = append(iv.Up, osds...)
	return iv
}

func TestAttempt(t *testing.T) {
	divergent := copyAt(1, 5, 7)
	divergent.Entries = append(divergent.Entries, LogEntry{Ver: ver(4, 8), OID: "zz"}, LogEntry{Ver: ver(4, 9), OID: "yy"})
	divergent.Info.LastUpdate = ver(4, 9)
	trimmed := copyAt(0, 5, 30)
	trimmed.Info.LogTail, trimmed.Entries = ver(5, 20), trimmed.Entries[20:]
	trimmed2 := trimmed
	trimmed2.ID = 2
	withMissing := copyAt(1, 5, 10)
	withMissing.Missing = map[string]bool{"c": true}
	withIntervals := copyAt(1, 5, 10)
	withIntervals.Intervals = [][]int32{{3, 4, 1}}
	moved := shardAt(2, 1, 5, 10) // osd.2 acts at position 2 but holds shard 1
	newer := shardAt(2, 2, 5, 12)
	newer.Entries = append(logOf(5, 1, 10), LogEntry{Ver: ver(5, 11), OID: "x"}, LogEntry{Ver: ver(5, 12), OID: "y"})

	for _, tc := range []struct {
		name string
		c    Config
		f    fakePeers
		want []string
	}{
		{
			name: "every copy current",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: copyAt(0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "activate from osd.0 at 5'10: complete"},
		},
		{
			name: "a replica behind",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: copyAt(0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 7), 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "send logs osd.1[i j k] at 5'10", "activate from osd.0 at 5'10 osd.1[i j k]"},
		},
		{
			name: "the primary behind: a replica's log is authoritative",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: copyAt(0, 5, 8)},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 9), 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "send logs osd.0[j k] osd.1[k] at 5'10", "activate from osd.2 at 5'10 osd.0[j k] osd.1[k]"},
		},
		{
			name: "ties go to the primary",
			c:    Config{Whoami: 1, Interval: rep3(1, 0, 2), Map: upMap(3), Self: copyAt(1, 5, 10)},
			f:    fakePeers{members: map[int32]Member{0: copyAt(0, 5, 10), 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.0 osd.2", "activate from osd.1 at 5'10: complete"},
		},
		{
			name: "divergent writes of a deposed primary are recovered over",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: copyAt(0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: divergent, 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "send logs osd.1[i j k yy zz] at 5'10", "activate from osd.0 at 5'10 osd.1[i j k yy zz]"},
		},
		{
			name: "logs that do not overlap: listings, then a pg_temp of the complete copies",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: trimmed},
			f: fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: copyAt(2, 5, 30)},
				listings: map[int32][]string{0: {"a", "b", "q"}, 1: {"a", "z"}}},
			want: []string{"query osd.1 osd.2", "list osd.0 osd.1", "state peering", "pg_temp [0 2]"},
		},
		{
			name: "logs that do not overlap, a pg_temp asked already: backfill",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: trimmed, TempAsked: true},
			f: fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: trimmed2},
				listings: map[int32][]string{0: {"a", "b", "q", "\x00stash1"}, 1: {"a", "z"}}},
			want: []string{"query osd.1 osd.2", "list osd.0 osd.1", "send logs osd.1[a b q z] at 5'30", "activate from osd.0 at 5'30 osd.1[a b q z]whole backfill"},
		},
		{
			name: "logs that do not overlap with min_size 3: no pg_temp below min_size",
			c:    Config{Whoami: 0, Interval: func() Interval { iv := rep3(0, 1, 2); iv.MinSize = 3; return iv }(), Map: upMap(3), Self: trimmed},
			f: fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: trimmed2},
				listings: map[int32][]string{0: {"a"}, 1: {"b"}}},
			want: []string{"query osd.1 osd.2", "list osd.0 osd.1", "send logs osd.1[a b] at 5'30", "activate from osd.0 at 5'30 osd.1[a b]whole backfill"},
		},
		{
			name: "a new empty copy: a former member's complete copy serves in the pg_temp",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(4), Self: copyAt(0, 5, 3), Strays: []int32{3}},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 0, 0), 2: copyAt(2, 5, 3), 3: copyAt(3, 5, 3)}},
			want: []string{"query osd.1 osd.2", "query osd.3", "state peering", "pg_temp [0 2 3]"},
		},
		{
			name: "a member that does not answer fails the attempt",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: copyAt(0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{2: copyAt(2, 5, 10)}, fail: map[int32]bool{1: true}},
			want: []string{"query osd.1 osd.2", "fail query osd.1"},
		},
		{
			name: "a hole in the acting set is not asked",
			c:    Config{Whoami: 0, Interval: rep3(0, osdmap.NoOSD, 2), Map: upMap(3), Self: copyAt(0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{2: copyAt(2, 5, 10)}},
			want: []string{"query osd.2", "activate from osd.0 at 5'10: complete"},
		},
		{
			name: "an earlier interval none of whose OSDs is reachable: down",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(6, 3, 4, 5), Self: copyAt(0, 5, 10), Past: [][]int32{{3, 4, 5}}},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "state down", "fail down"},
		},
		{
			name: "an earlier interval with one OSD up: it is asked, and holds newer writes",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(6, 3, 5), Self: copyAt(0, 5, 10), Past: [][]int32{{3, 4, 5}}},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: copyAt(2, 5, 10), 4: copyAt(4, 5, 12)}},
			want: []string{"query osd.1 osd.2", "query osd.4", "wait leases [3 5]", "send logs osd.0[l m] osd.1[l m] osd.2[l m] at 5'12", "activate from osd.4 at 5'12 osd.0[l m] osd.1[l m] osd.2[l m]"},
		},
		{
			name: "an earlier interval's OSDs lost or removed are not waited for",
			c: Config{Whoami: 0, Interval: rep3(0, 1, 2), Self: copyAt(0, 5, 10), Past: [][]int32{{3, 4, 5}},
				Map: func() MapView {
					v := upMap(6, 3, 4, 5)
					v[3].Lost, v[4].Exists = true, false
					v[5].Lost = true
					return v
				}()},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "wait leases [3 4 5]", "activate from osd.0 at 5'10: complete"},
		},
		{
			name: "a former member that does not answer fails the attempt",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(4), Self: copyAt(0, 5, 10), Strays: []int32{3}},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: copyAt(2, 5, 10)}, fail: map[int32]bool{3: true}},
			want: []string{"query osd.1 osd.2", "query osd.3", "fail query osd.3"},
		},
		{
			name: "a member's earlier interval joins the past and holds peering down",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(6, 3, 4), Self: copyAt(0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: withIntervals, 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "merge past [[3 4 1]]", "wait leases [3 4]", "activate from osd.0 at 5'10: complete"},
		},
		{
			name: "strays that are down are waited for by lease",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(5, 3, 4), Self: copyAt(0, 5, 10), Strays: []int32{4, 3}},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: copyAt(2, 5, 10)}, leases: true},
			want: []string{"query osd.1 osd.2", "wait leases [3 4]", "fail leases"},
		},
		{
			name: "a member that adopted the log with its missing set is not sent it again",
			c:    Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: copyAt(0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: withMissing, 2: copyAt(2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "activate from osd.0 at 5'10 osd.1[c]"},
		},
		{
			name: "a backfill target under a pg_temp is asked and filled whole, no new pg_temp",
			c:    Config{Whoami: 0, Interval: withBackfill(rep3(0, 1, 2), []int32{3}, nil), Map: upMap(4), Self: copyAt(0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: copyAt(1, 5, 10), 2: copyAt(2, 5, 10), 3: copyAt(3, 0, 0)}},
			want: []string{"query osd.1 osd.2 osd.3", "send logs osd.3[b c d e f g h i j k] at 5'10", "activate from osd.0 at 5'10 osd.3[b c d e f g h i j k]whole backfill"},
		},
		{
			name: "erasure-coded: every shard current",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, 2), Map: upMap(3), K: 2, Self: shardAt(0, 0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 2: shardAt(2, 2, 5, 10)}},
			want: []string{"query osd.1 osd.2", "activate from osd.0 at 5'10: complete"},
		},
		{
			name: "erasure-coded: a write on one shard only is rolled back",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, 2), Map: upMap(3), K: 2, Self: shardAt(0, 0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 2: newer}},
			want: []string{"query osd.1 osd.2", "rollback osd.2 to 5'10", "activate from osd.0 at 5'10: complete"},
		},
		{
			name: "erasure-coded: the primary's write on k shards stays, the third shard recovers it",
			c:    Config{Whoami: 2, Interval: ec21(2, 0, 1), Map: upMap(3), K: 2, Self: shardAt(2, 0, 5, 12)},
			f:    fakePeers{members: map[int32]Member{0: shardAt(0, 1, 5, 12), 1: shardAt(1, 2, 5, 10)}},
			want: []string{"query osd.0 osd.1", "send logs osd.1[l m] at 5'12", "activate from osd.2 at 5'12 osd.1[l m]"},
		},
		{
			name: "erasure-coded: fewer than k shards in the acting set",
			c:    Config{Whoami: 0, Interval: ec21(0, osdmap.NoOSD, osdmap.NoOSD), Map: upMap(3), K: 2, Self: shardAt(0, 0, 5, 10)},
			want: []string{"state incomplete", "fail incomplete"},
		},
		{
			name: "erasure-coded: a copy of another shard counts as empty; with k others it is rebuilt",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, 2), Map: upMap(3), K: 2, Self: shardAt(0, 0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 2: moved}},
			want: []string{"query osd.1 osd.2", "send logs osd.2[b c d e f g h i j k] at 5'10", "activate from osd.0 at 5'10 osd.2[b c d e f g h i j k]whole backfill"},
		},
		{
			// (before 2026-12-01 the empty position stayed empty, and the
			// PG incomplete with two shards up)
			name: "erasure-coded: a member's copy of another shard goes to that shard's empty position",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, osdmap.NoOSD), Map: upMap(3), K: 2, Self: shardAt(0, 0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 2, 5, 10)}},
			want: []string{"query osd.1", "state peering", "pg_temp [0 2147483647 1]"},
		},
		{
			// (a review's case: the swapped branch dropped the former
			// member from [0 3 1], leaving [0 NONE 1]: 5'12 on shard 0
			// only, incomplete)
			name: "erasure-coded: a former member fills its position while a member moves to its shard's empty one",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, osdmap.NoOSD), Map: upMap(4), K: 2, Self: shardAt(0, 0, 5, 12), Strays: []int32{3}},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 2, 5, 10), 3: shardAt(3, 1, 5, 12)}},
			want: []string{"query osd.1", "query optional osd.3", "state peering", "pg_temp [0 3 1]"},
		},
		{
			// (test/e2e TestECMergeSameHostSpareKill9: an erasure-coded
			// merge's source took its target's OSDs at every position at
			// once and the one entering at position 0 died; the pg_temp
			// left that position empty, the writes newer than shard 1's
			// were on shards 0 and 2 only, and the PG stayed incomplete)
			name: "erasure-coded: an empty position takes the former member holding its shard, in the pg_temp asked for the others",
			c: Config{Whoami: 4, Interval: Interval{ID: 7, Acting: []int32{osdmap.NoOSD, 4, 2}, Up: []int32{osdmap.NoOSD, 4, 2}, Primary: 4, Size: 3, MinSize: 2, EC: true,
				Addrs: []string{"", "a4", "a2"}}, Map: upMap(6, 1), K: 2, Self: shardAt(4, 1, 0, 0), Past: [][]int32{{5, 3, 0}}},
			f:    fakePeers{members: map[int32]Member{2: shardAt(2, 2, 0, 0), 5: shardAt(5, 0, 5, 12), 3: shardAt(3, 1, 5, 10), 0: shardAt(0, 2, 5, 12)}},
			want: []string{"query osd.2", "query optional osd.0 osd.3 osd.5", "state peering", "pg_temp [5 3 0]"},
		},
		{
			name: "erasure-coded: writes on k shards only counting a moved copy are not rolled back",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, 2), Map: upMap(3), K: 2, Self: shardAt(0, 0, 5, 12)},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 2: shardAt(2, 1, 5, 12)}},
			want: []string{"query osd.1 osd.2", "state incomplete", "fail incomplete"},
		},
		{
			name: "erasure-coded: an empty position keeps its former member's shard in a pg_temp",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, 3), Map: upMap(4), K: 2, Self: shardAt(0, 0, 5, 10), Strays: []int32{2}},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 3: shardAt(3, 2, 0, 0), 2: shardAt(2, 2, 5, 10)}},
			want: []string{"query osd.1 osd.3", "query optional osd.2", "state peering", "pg_temp [0 1 2]"},
		},
		{
			name: "erasure-coded: an empty position whose former member is down is rebuilt",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, 3), Map: upMap(4, 2), K: 2, Self: shardAt(0, 0, 5, 10), Strays: []int32{2}},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 3: shardAt(3, 2, 0, 0)}},
			want: []string{"query osd.1 osd.3", "wait leases [2]", "send logs osd.3[b c d e f g h i j k] at 5'10", "activate from osd.0 at 5'10 osd.3[b c d e f g h i j k]whole backfill"},
		},
		{
			name: "erasure-coded: a former member that does not answer is left out of the pg_temp",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, 3), Map: upMap(4), K: 2, Self: shardAt(0, 0, 5, 10), Strays: []int32{2}},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 3: shardAt(3, 2, 0, 0)}, fail: map[int32]bool{2: true}},
			want: []string{"query osd.1 osd.3", "query optional osd.2", "wait leases [2]", "send logs osd.3[b c d e f g h i j k] at 5'10", "activate from osd.0 at 5'10 osd.3[b c d e f g h i j k]whole backfill"},
		},
		{
			name: "erasure-coded: an earlier interval with fewer than k shards reachable: down",
			c:    Config{Whoami: 0, Interval: ec21(0, 1, 2), Map: upMap(6, 4, 5), K: 2, Self: shardAt(0, 0, 5, 10), Past: [][]int32{{3, 4, 5}}},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 2: shardAt(2, 2, 5, 10)}, fail: map[int32]bool{3: true}},
			want: []string{"query osd.1 osd.2", "query optional osd.3", "state down", "fail down"},
		},
		{
			// (test/e2e TestKillsDuringBackfill once waited forever here)
			name: "erasure-coded: an earlier interval's member that left the acting set but is up is asked, and counts",
			c:    Config{Whoami: 3, Interval: ec21(3, 0, 1), Map: upMap(4), K: 2, Self: shardAt(3, 0, 5, 10), Past: [][]int32{{2, osdmap.NoOSD, 1}}},
			f:    fakePeers{members: map[int32]Member{0: shardAt(0, 1, 5, 10), 1: shardAt(1, 2, 5, 10), 2: shardAt(2, 0, 5, 10)}},
			want: []string{"query osd.0 osd.1", "query optional osd.2", "activate from osd.3 at 5'10: complete"},
		},
		{
			name: "erasure-coded: a former member's copy of another shard does not count for the interval it held",
			c:    Config{Whoami: 3, Interval: ec21(3, 0, 1), Map: upMap(4), K: 2, Self: shardAt(3, 0, 5, 10), Past: [][]int32{{2, osdmap.NoOSD, 1}}},
			f:    fakePeers{members: map[int32]Member{0: shardAt(0, 1, 5, 10), 1: shardAt(1, 2, 5, 10), 2: shardAt(2, 1, 5, 10)}},
			want: []string{"query osd.0 osd.1", "query optional osd.2", "state down", "fail down"},
		},
		{
			// (test/e2e TestKillsDuringBackfill once waited forever here)
			name: "erasure-coded: writes on k shards counting a former member's are not rolled back: it acts at its old position again",
			c:    Config{Whoami: 3, Interval: ec21(3, 0, 1), Map: upMap(4), K: 2, Self: shardAt(3, 0, 5, 10), Past: [][]int32{{2, osdmap.NoOSD, 1}}},
			f:    fakePeers{members: map[int32]Member{0: shardAt(0, 1, 5, 10), 1: shardAt(1, 2, 5, 12), 2: shardAt(2, 0, 5, 12)}},
			want: []string{"query osd.0 osd.1", "query optional osd.2", "state peering", "pg_temp [2 0 1]"},
		},
		{
			name: "erasure-coded: the same with a pg_temp asked for already in the interval: incomplete until the next",
			c:    Config{Whoami: 3, Interval: ec21(3, 0, 1), Map: upMap(4), K: 2, Self: shardAt(3, 0, 5, 10), Past: [][]int32{{2, osdmap.NoOSD, 1}}, TempAsked: true},
			f:    fakePeers{members: map[int32]Member{0: shardAt(0, 1, 5, 10), 1: shardAt(1, 2, 5, 12), 2: shardAt(2, 0, 5, 12)}},
			want: []string{"query osd.0 osd.1", "query optional osd.2", "state incomplete", "fail incomplete"},
		},
		{
			// (test/e2e TestBalancer: a balancer plan moved two shards of an
			// empty 2+1 PG at once, which then stayed down for good)
			name: "erasure-coded: no copy holds a write: former members' empty copies of their shards count for the interval they held",
			c:    Config{Whoami: 5, Interval: ec21(5, 4, 2), Map: upMap(6), K: 2, Self: shardAt(5, 0, 0, 0), Past: [][]int32{{5, 1, 0}}},
			f:    fakePeers{members: map[int32]Member{4: shardAt(4, 1, 0, 0), 2: shardAt(2, 2, 0, 0), 1: shardAt(1, 1, 0, 0), 0: shardAt(0, 2, 0, 0)}},
			want: []string{"query osd.4 osd.2", "query optional osd.0 osd.1", "activate from osd.5 at 0'0: complete"},
		},
		{
			name: "erasure-coded: a copy holds a write: former members' empty copies do not count",
			c:    Config{Whoami: 5, Interval: ec21(5, 4, 2), Map: upMap(6), K: 2, Self: shardAt(5, 0, 5, 10), Past: [][]int32{{5, 1, 0}}},
			f:    fakePeers{members: map[int32]Member{4: shardAt(4, 1, 0, 0), 2: shardAt(2, 2, 0, 0), 1: shardAt(1, 1, 0, 0), 0: shardAt(0, 2, 0, 0)}},
			want: []string{"query osd.4 osd.2", "query optional osd.0 osd.1", "state down", "fail down"},
		},
		{
			// (found by a second reader: osd.1's shard 2 holds 5'10 with
			// osd.3's, which is down; osd.0's copy of shard 0 is empty)
			name: "erasure-coded: a member's copy of another shard is a write: an empty copy does not count for the interval",
			c:    Config{Whoami: 5, Interval: ec21(5, 1, 4), Map: upMap(6, 3), K: 2, Self: shardAt(5, 0, 0, 0), Past: [][]int32{{0, 3, 1}}, TempAsked: true},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 2, 5, 10), 4: shardAt(4, 2, 0, 0), 0: shardAt(0, 0, 0, 0)}},
			want: []string{"query osd.1 osd.4", "query optional osd.0", "state down", "fail down"},
		},
		{
			name: "erasure-coded: an OSD with no copy does not count for the position it held",
			c:    Config{Whoami: 5, Interval: ec21(5, 4, 2), Map: upMap(6), K: 2, Self: shardAt(5, 0, 0, 0), Past: [][]int32{{1, 0, 5}}},
			f: fakePeers{members: map[int32]Member{4: shardAt(4, 1, 0, 0), 2: shardAt(2, 2, 0, 0),
				1: {ID: 1, Addr: "a1", Info: Info{Shard: NoCopy}}, 0: {ID: 0, Addr: "a0", Info: Info{Shard: NoCopy}}}},
			want: []string{"query osd.4 osd.2", "query optional osd.0 osd.1", "state down", "fail down"},
		},
		{
			name: "erasure-coded: a backfill target's shard counts for its position",
			c:    Config{Whoami: 0, Interval: withBackfill(ec21(0, 1, 2), []int32{3}, []int{2}), Map: upMap(4), K: 2, Self: shardAt(0, 0, 5, 10)},
			f:    fakePeers{members: map[int32]Member{1: shardAt(1, 1, 5, 10), 2: shardAt(2, 2, 5, 10), 3: shardAt(3, 2, 5, 10)}},
			want: []string{"query osd.1 osd.2 osd.3", "activate from osd.0 at 5'10: complete"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := drive(t, tc.c, tc.f)
			if !slices.Equal(got, tc.want) {
				t.Errorf("trace:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestAttemptDownReason: the Down state names what it waits for.
func TestAttemptDownReason(t *testing.T) {
	a := NewAttempt(Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(6, 3, 4, 5), Self: copyAt(0, 5, 10), Past: [][]int32{{3, 4, 5}}})
	a.Start()
	acts := a.Step(Infos{Members: []Member{copyAt(1, 5, 10), copyAt(2, 5, 10)}})
	p, ok := acts[0].(Progress)
	if !ok || p.State != Down || !strings.Contains(p.Why, "waiting for osd.3, osd.4, osd.5") {
		t.Fatalf("got %#v", acts)
	}
}

// TestAttemptProtocol: answers of the wrong kind, or after the end, fail
// the attempt instead of going on.
func TestAttemptProtocol(t *testing.T) {
	a := NewAttempt(Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: copyAt(0, 5, 10)})
	a.Start()
	if acts := a.Step(Done{}); !isFail(acts) {
		t.Fatalf("Done answered a query: %#v", acts)
	}
	if acts := a.Step(Infos{}); !isFail(acts) {
		t.Fatalf("a step after the end: %#v", acts)
	}
	a = NewAttempt(Config{Whoami: 0, Interval: rep3(0, 1, 2), Map: upMap(3), Self: copyAt(0, 5, 10)})
	a.Start()
	if acts := a.Step(Infos{Members: []Member{copyAt(1, 5, 10)}}); !isFail(acts) {
		t.Fatalf("one answer to a query of two: %#v", acts)
	}
}

func isFail(acts []Action) bool {
	_, ok := acts[len(acts)-1].(Fail)
	return ok
}
