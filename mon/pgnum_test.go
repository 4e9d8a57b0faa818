package mon_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// TestPGNumSplit: pg_num 32 → 64 on six OSDs keeps pgp_num, aims
// pgp_num_target at 64, and gives each child its parent's pg_temp,
// pg_upmap_items and recorded history, so that every child maps exactly
// as its parent; bad values (a merge, pgp_num above pg_num, too many PGs
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
		{"pg_num", "16"},    // a merge
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
