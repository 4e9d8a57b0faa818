package mon_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// TestPGNumSplit: pg_num 32 → 64 on six OSDs keeps pgp_num, aims
// pgp_num_target at 64, and gives each child its parent's pg_temp,
// pg_upmap_items and recorded history, so that every child maps exactly
// as its parent; bad values (no PGs, pgp_num above pg_num, too many PGs
// per OSD, above pg_num_max) are refused and change nothing.
func TestPGNumSplit(t *testing.T) {
	s, p := bootSix(t)
	parent := osdmap.PGID{Pool: p.ID, Seed: 3}
	was, _ := s.Map.MapPG(parent)
	var spare int32 = -1
	for o := int32(0); o < 6 && spare < 0; o++ {
		if !slices.Contains(was.Up, o) {
			spare = o
		}
	}
	commit(t, s, mon.PGUpmapItems{Items: map[osdmap.PGID][]osdmap.UpmapItem{parent: {{From: was.Up[0], To: spare}}}})
	other := osdmap.PGID{Pool: p.ID, Seed: 5}
	om, _ := s.Map.MapPG(other)
	temp := []int32{om.Up[1], om.Up[0], om.Up[2]}
	commit(t, s, mon.PGTemp{Sets: map[osdmap.PGID][]int32{other: temp}})
	mp, _ := s.Map.MapPG(parent)
	commit(t, s, mon.PGHistoryUpdate{Entries: []monc.PGInterval{{PG: parent, Epoch: uint32(s.Map.Epoch), Acting: mp.Acting}}})
	before := s.Map

	for _, bad := range []struct{ key, value string }{
		{"pg_num", "0"},
		{"pg_num", "40000"}, // 40,000 × 3 copies over 6 OSDs
		{"pgp_num", "33"},   // above pg_num
		{"pgp_num", "0"},
		{"pgp_num_actual", "33"},
	} {
		if _, _, err := s.Commit(mon.PoolSet{Name: "data", Key: bad.key, Value: bad.value}); !errors.Is(err, mon.ErrInvalid) {
			t.Fatalf("%s %s: %v, want ErrInvalid", bad.key, bad.value, err)
		}
	}
	commit(t, s, mon.PoolSet{Name: "data", Key: "pg_num_max", Value: "48"})
	if _, _, err := s.Commit(mon.PoolSet{Name: "data", Key: "pg_num", Value: "64"}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("pg_num above pg_num_max: %v", err)
	}
	if s.Map.Epoch != before.Epoch+1 {
		t.Fatalf("refused changes moved the epoch from %d to %d", before.Epoch, s.Map.Epoch)
	}
	commit(t, s, mon.PoolSet{Name: "data", Key: "pg_num_max", Value: "0"})

	commit(t, s, mon.PoolSet{Name: "data", Key: "pg_num", Value: "64"})
	np, _ := s.Map.PoolByName("data")
	if np.PGNum != 64 || np.PGPNum != 32 || np.PGPNumTarget != 64 {
		t.Fatalf("after pg_num 64: pg_num %d pgp_num %d target %d", np.PGNum, np.PGPNum, np.PGPNumTarget)
	}
	// 3's children are 35 (32+3); 5's, 37
	kid := osdmap.PGID{Pool: p.ID, Seed: 35}
	if got := s.Map.PGUpmapItems[kid]; len(got) != 1 || got[0] != (osdmap.UpmapItem{From: was.Up[0], To: spare}) {
		t.Fatalf("child %s upmap items %v", kid, got)
	}
	if got := s.Map.PGTemp[osdmap.PGID{Pool: p.ID, Seed: 37}]; !slices.Equal(got, temp) {
		t.Fatalf("child 1.25 pg_temp %v, want %v", got, temp)
	}
	if h := s.History(kid); len(h) != 1 || h[0].PG != kid || !slices.Equal(h[0].Acting, mp.Acting) {
		t.Fatalf("child history %+v", h)
	}
	for seed := uint32(32); seed < 64; seed++ {
		c, _ := s.Map.MapPG(osdmap.PGID{Pool: p.ID, Seed: seed})
		pp, _ := s.Map.MapPG(osdmap.PGID{Pool: p.ID, Seed: seed - 32})
		if !slices.Equal(c.Acting, pp.Acting) || !slices.Equal(c.Up, pp.Up) || c.ActingPrimary != pp.ActingPrimary {
			t.Fatalf("child %d maps to %v/%v, its parent to %v/%v", seed, c.Up, c.Acting, pp.Up, pp.Acting)
		}
	}
	if _, msg, err := s.Commit(mon.PoolSet{Name: "data", Key: "pg_num", Value: "64"}); err != nil || msg == "" {
		t.Fatalf("pg_num unchanged: %q %v", msg, err)
	}
	commit(t, s, mon.PoolSet{Name: "data", Key: "pgp_num", Value: "48"})
	commit(t, s, mon.PoolSet{Name: "data", Key: "pgp_num_actual", Value: "40"})
	if np, _ := s.Map.PoolByName("data"); np.PGPNum != 40 || np.PGPNumTarget != 48 {
		t.Fatalf("pgp_num %d target %d, want 40 and 48", np.PGPNum, np.PGPNumTarget)
	}
}

// TestPGPNumStep: steps move pgp_num by the room left under the misplaced
// ratio (at least one PG), never past the target, and wait while the
// ratio is reached.
func TestPGPNumStep(t *testing.T) {
	for _, c := range []struct {
		pgp, target   uint32
		moving, total int
		want          uint32
		ok            bool
	}{
		{16, 64, 0, 100, 19, true},  // room 0.05 × 64 PGs = 3
		{16, 64, 3, 100, 17, true},  // room 0.02 × 64 = 1
		{16, 64, 5, 100, 16, false}, // at the ratio: wait
		{62, 64, 0, 100, 64, true},  // not past the target
		{64, 64, 0, 100, 64, false}, // there
		{16, 8, 0, 100, 13, true},   // down too
		{2, 1, 0, 100, 1, true},     // never below 1
		{16, 64, 0, 1000, 19, true}, // room scales with the pool's PGs
	} {
		p := &osdmap.Pool{PGNum: 64, PGPNum: c.pgp, PGPNumTarget: c.target}
		got, ok := mon.PGPNumStep(p, c.moving, c.total, 0.05)
		if got != c.want || ok != c.ok {
			t.Errorf("pgp %d → %d with %d/%d moving: %d %t, want %d %t", c.pgp, c.target, c.moving, c.total, got, ok, c.want, c.ok)
		}
	}
}

// TestPGNumMerge: lowering pg_num 32 → 30 sets pg_num_target and lowers
// pgp_num_target, changing no PG; a merge starts only once pgp_num is low
// enough and both PGs activated on one acting set (a source with other
// upmaps first gets its target's); the source primary's report lowers
// pg_num with the versions recorded and the source's history gone; a
// split waits while a merge is pending; pg_num_actual = pg_num cancels
// one; a report of another PG or an earlier epoch changes nothing; bad
// values are refused and change nothing.
func TestPGNumMerge(t *testing.T) {
	s, p := bootSix(t)
	before := s.Map.Epoch
	for _, bad := range []struct{ key, value string }{
		{"pg_num_actual", "20"}, // more than one PG at once
		{"pg_num_actual", "40"}, // not a merge
	} {
		if _, _, err := s.Commit(mon.PoolSet{Name: "data", Key: bad.key, Value: bad.value}); !errors.Is(err, mon.ErrInvalid) {
			t.Fatalf("%s %s: %v, want ErrInvalid", bad.key, bad.value, err)
		}
	}
	commit(t, s, mon.PoolSet{Name: "data", Key: "pg_num_min", Value: "31"})
	if _, _, err := s.Commit(mon.PoolSet{Name: "data", Key: "pg_num", Value: "30"}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("pg_num below pg_num_min: %v", err)
	}
	commit(t, s, mon.PoolSet{Name: "data", Key: "pg_num_min", Value: "0"})
	if s.Map.Epoch != before+2 {
		t.Fatalf("refused changes moved the epoch from %d to %d", before, s.Map.Epoch)
	}
	commit(t, s, mon.PoolSet{Name: "data", Key: "pg_num", Value: "30"})
	np, _ := s.Map.PoolByName("data")
	if np.PGNum != 32 || np.PGNumTarget != 30 || np.PGPNumTarget != 30 || np.PGPNum != 32 {
		t.Fatalf("after pg_num 30: %+v", np)
	}
	if _, _, err := s.Commit(mon.PoolSet{Name: "data", Key: "pgp_num", Value: "31"}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("pgp_num above pg_num_target: %v", err)
	}
	start := mon.PoolSet{Name: "data", Key: "pg_num_actual", Value: "31"}
	if _, _, err := s.Commit(start); !errors.Is(err, mon.ErrBusy) {
		t.Fatalf("merge with pgp_num 32: %v, want ErrBusy", err)
	}
	commit(t, s, mon.PoolSet{Name: "data", Key: "pgp_num_actual", Value: "30"})
	src, dst := osdmap.PGID{Pool: p.ID, Seed: 31}, osdmap.PGID{Pool: p.ID, Seed: 15}
	sm, _ := s.Map.MapPG(src)
	if dm, _ := s.Map.MapPG(dst); !slices.Equal(sm.Acting, dm.Acting) {
		t.Fatalf("pgp_num 30: source on %v, target on %v", sm.Acting, dm.Acting)
	}
	if _, _, err := s.Commit(start); !errors.Is(err, mon.ErrBusy) {
		t.Fatalf("merge of PGs that never activated: %v, want ErrBusy", err)
	}
	// an upmap on the target only: the source is given it first
	var spare int32 = -1
	for o := int32(0); o < 6 && spare < 0; o++ {
		if !slices.Contains(sm.Up, o) {
			spare = o
		}
	}
	items := []osdmap.UpmapItem{{From: sm.Up[1], To: spare}}
	commit(t, s, mon.PGUpmapItems{Items: map[osdmap.PGID][]osdmap.UpmapItem{dst: items}})
	commit(t, s, start)
	if got := s.Map.PGUpmapItems[src]; !slices.Equal(got, items) {
		t.Fatalf("source upmap items %v, want the target's %v", got, items)
	}
	if np, _ := s.Map.PoolByName("data"); np.PGNumPending != 0 {
		t.Fatal("merge pending before the source moved")
	}
	mp, _ := s.Map.MapPG(dst)
	commit(t, s, mon.PGHistoryUpdate{Entries: []monc.PGInterval{
		{PG: src, Epoch: uint32(s.Map.Epoch), Acting: mp.Acting}, {PG: dst, Epoch: uint32(s.Map.Epoch), Acting: mp.Acting}}})
	commit(t, s, start)
	np, _ = s.Map.PoolByName("data")
	if sd, td, ok := np.MergePending(); !ok || sd != 31 || td != 15 {
		t.Fatalf("pending merge %d -> %d %t (%+v)", sd, td, ok, np)
	}
	if _, _, err := s.Commit(mon.PoolSet{Name: "data", Key: "pg_num", Value: "64"}); !errors.Is(err, mon.ErrBusy) {
		t.Fatalf("split while a merge is pending: %v, want ErrBusy", err)
	}
	// a stale report changes nothing; ready=false cancels
	if inc, _, err := s.Commit(mon.MergeReady{Pool: p.ID, Source: 30, Epoch: s.Map.Epoch, Ready: true}); err != nil || inc != nil {
		t.Fatalf("report for another PG: %v %v", inc, err)
	}
	if inc, _, err := s.Commit(mon.MergeReady{Pool: p.ID, Source: 31, Epoch: s.Map.Epoch - 1, Ready: true}); err != nil || inc != nil {
		t.Fatalf("report of a map from before the merge was pending: %v %v", inc, err)
	}
	commit(t, s, mon.MergeReady{Pool: p.ID, Source: 31, Epoch: s.Map.Epoch, Ready: false})
	if np, _ := s.Map.PoolByName("data"); np.PGNumPending != 0 || np.PGNum != 32 {
		t.Fatalf("cancelled merge: %+v", np)
	}
	commit(t, s, start)
	commit(t, s, mon.PoolSet{Name: "data", Key: "pg_num_actual", Value: "32"}) // the leader's cancel
	if np, _ := s.Map.PoolByName("data"); np.PGNumPending != 0 {
		t.Fatalf("merge not cancelled: %+v", np)
	}
	commit(t, s, start)
	since := s.Map.Epoch
	commit(t, s, mon.PoolCreate{Name: "other", PGNum: 8, PGPNum: 8}) // an epoch on: a report of the map that set it stays good
	rep := mon.MergeReady{Pool: p.ID, Source: 31, Epoch: since, SourceVersion: [2]uint64{40, 7}, TargetVersion: [2]uint64{41, 3}, Ready: true}
	commit(t, s, rep)
	np, _ = s.Map.PoolByName("data")
	want := osdmap.MergeMeta{Source: 31, Epoch: s.Map.Epoch, SourceVersion: rep.SourceVersion, TargetVersion: rep.TargetVersion}
	if got, ok := np.MergeRecord(31); np.PGNum != 31 || np.PGNumPending != 0 || np.PGNumTarget != 30 || !ok || got != want {
		t.Fatalf("after the merge: %+v", np)
	}
	if _, ok := s.Map.PGUpmapItems[src]; ok || len(s.History(src)) != 0 || len(s.History(dst)) != 1 {
		t.Fatalf("the source's upmaps %v or history %v stay, or the target's went", s.Map.PGUpmapItems[src], s.History(src))
	}
	if np.PGPNum != 30 {
		t.Fatalf("pgp_num %d", np.PGPNum)
	}
	// pg_num back up stops merging and splits
	commit(t, s, mon.PoolSet{Name: "data", Key: "pg_num", Value: "32"})
	if np, _ := s.Map.PoolByName("data"); np.PGNum != 32 || np.PGNumTarget != 0 {
		t.Fatalf("after pg_num 32: %+v", np)
	}
}

// ecMergePool makes a 2+1 pool (profile p21) of 16 PGs and brings
// pg_num and pgp_num to 15 at once, so positional pg_upmaps keep PG 15's
// OSDs where they were: its merge into PG 7 is the next one.
func ecMergePool(t *testing.T, s *mon.State, name string) *osdmap.Pool {
	t.Helper()
	commit(t, s, mon.PoolCreate{Name: name, Erasure: true, ECProfile: "p21", PGNum: 16, PGPNum: 16})
	commit(t, s, mon.PoolSet{Name: name, Key: "pg_num", Value: "15"})
	commit(t, s, mon.PoolSet{Name: name, Key: "pgp_num_actual", Value: "15"})
	p, err := s.Map.PoolByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestECMergePositions: on erasure-coded pools (2+1 over six hosts,
// 16 PGs, pgp_num brought to 8 at once, so positional pg_upmaps keep the
// sources' OSDs in place), a merge waits with the reason exactly when an
// OSD would hold one shard of the source and another of its target, and
// goes on to its other checks otherwise; both cases occur over the pools.
func TestECMergePositions(t *testing.T) {
	s, _ := bootSix(t)
	commit(t, s, mon.ECProfileSet{Name: "p21", Args: []string{"k=2", "m=1"}})
	conflicts, agree := 0, 0
	for i := range 8 {
		name := fmt.Sprintf("ec%d", i)
		p := ecMergePool(t, s, name)
		sm, _ := s.Map.MapPG(osdmap.PGID{Pool: p.ID, Seed: 15})
		dm, _ := s.Map.MapPG(osdmap.PGID{Pool: p.ID, Seed: 7})
		want := false
		for i, o := range sm.Acting {
			if j := slices.Index(dm.Acting, o); j >= 0 && j != i {
				want = true
			}
		}
		_, _, err := s.Commit(mon.PoolSet{Name: name, Key: "pg_num_actual", Value: "15"})
		if !errors.Is(err, mon.ErrBusy) {
			t.Fatalf("%s: merge start %v, want ErrBusy (never activated, or positions)", name, err)
		}
		if got := strings.Contains(err.Error(), "holds shard"); got != want {
			t.Fatalf("%s: source %v, target %v: waits for positions %t, want %t (%v)", name, sm.Acting, dm.Acting, got, want, err)
		}
		if want {
			conflicts++
		} else {
			agree++
		}
		if np, _ := s.Map.PoolByName(name); np.PGNumPending != 0 {
			t.Fatalf("%s: merge pending", name)
		}
	}
	t.Logf("%d pools wait for positions, %d do not", conflicts, agree)
	if conflicts == 0 || agree == 0 {
		t.Fatalf("%d pools wait for positions, %d do not: both cases wanted", conflicts, agree)
	}
}

// TestECMergeShardSteps: where an OSD holds one shard of an erasure-coded
// merge's source and another of its target, the MONs move the source
// toward the target's order one backfill at a time — no OSD ever changes
// position within a step, a swap goes through a spare OSD on a host of
// its own, and each step waits for the source to activate on its new
// set and recover there — until the merge itself starts.
func TestECMergeShardSteps(t *testing.T) {
	s, _ := bootSix(t)
	commit(t, s, mon.ECProfileSet{Name: "p21", Args: []string{"k=2", "m=1"}})
	start := func(name string) (*osdmap.Incremental, string, error) {
		return s.Commit(mon.PoolSet{Name: name, Key: "pg_num_actual", Value: "15"})
	}
	host := func(o int32) string { return s.Map.Crush.Ancestor(o, "host") }
	stepped, spared := 0, 0
	for i := range 8 {
		name := fmt.Sprintf("ec%d", i)
		p := ecMergePool(t, s, name)
		src, dst := osdmap.PGID{Pool: p.ID, Seed: 15}, osdmap.PGID{Pool: p.ID, Seed: 7}
		if s.Map.MergeShardConflict(p, 15) == nil {
			continue
		}
		activate := func(recovering bool) {
			sm, _ := s.Map.MapPG(src)
			dm, _ := s.Map.MapPG(dst)
			commit(t, s, mon.PGHistoryUpdate{Entries: []monc.PGInterval{
				{PG: src, Epoch: uint32(s.Map.Epoch), Acting: sm.Acting, Recovering: recovering}, {PG: dst, Epoch: uint32(s.Map.Epoch), Acting: dm.Acting}}})
		}
		activate(false)
		for step := 0; ; step++ {
			if step == 8 { // a swap of two positions takes three, a cycle of three four
				t.Fatalf("%s: no merge after %d steps", name, step)
			}
			before, _ := s.Map.MapPG(src)
			_, msg, err := start(name)
			if err != nil {
				t.Fatalf("%s step %d: %v", name, step, err)
			}
			if np, _ := s.Map.PoolByName(name); np.PGNumPending == 15 {
				if step < 2 || s.Map.MergeShardConflict(np, 15) != nil {
					t.Fatalf("%s: merge started after %d steps, positions %v", name, step, s.Map.MergeShardConflict(np, 15))
				}
				break
			}
			after, _ := s.Map.MapPG(src)
			hosts := map[string]bool{}
			for i, o := range after.Up {
				if j := slices.Index(before.Up, o); j >= 0 && j != i {
					t.Fatalf("%s: osd.%d moves from shard %d to %d in one step (%v to %v)", name, o, j, i, before.Up, after.Up)
				}
				if hosts[host(o)] {
					t.Fatalf("%s: %v puts two shards on %s", name, after.Up, host(o))
				}
				hosts[host(o)] = true
			}
			if strings.Contains(msg, " through osd.") {
				spared++
			}
			stepped++
			// the next step waits for the source to activate on its new
			// set, and then for its primary to record the recovery's end
			// (the same interval again, not recovering)
			if !slices.Equal(before.Up, after.Up) {
				if _, _, err := start(name); !errors.Is(err, mon.ErrBusy) || !strings.Contains(err.Error(), "has not activated") {
					t.Fatalf("%s: step before the source activated: %v", name, err)
				}
				activate(true)
				if _, _, err := start(name); !errors.Is(err, mon.ErrBusy) || !strings.Contains(err.Error(), "is recovering") {
					t.Fatalf("%s: step while the source recovers: %v", name, err)
				}
				if moving, _, _ := s.MovingPGs(); moving == 0 {
					t.Fatalf("%s: a recovering source is not counted as moving", name)
				}
			}
			activate(false)
		}
	}
	if stepped == 0 || spared == 0 {
		t.Fatalf("%d steps, %d through a spare: both wanted", stepped, spared)
	}
}
