package mon_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/balancer"
	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// bootSix boots six OSDs on six hosts and makes a 3-replica pool of 32
// PGs.
func bootSix(t *testing.T) (*mon.State, *osdmap.Pool) {
	s := newState(t)
	for i := 0; i < 6; i++ {
		commit(t, s, mon.OSDBoot{ID: -1, Host: fmt.Sprintf("h%d", i), Addr: fmt.Sprintf("127.0.0.1:68%02d", i), SizeBytes: 1 << 40})
	}
	commit(t, s, mon.PoolCreate{Name: "data", PGNum: 32, PGPNum: 32})
	p, err := s.Map.PoolByName("data")
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// osd pg-upmap-items moves a PG's copy and rm-pg-upmap-items moves it
// back; bad input — unknown PG or OSD, an odd id list, a pair within the
// set, an out target, a target sharing a member's host — is refused and
// changes nothing.
func TestPGUpmapItemsCommand(t *testing.T) {
	s, p := bootSix(t)
	pg := osdmap.PGID{Pool: p.ID, Seed: 3}
	was, _ := s.Map.MapPG(pg)
	var outsider int32 = -1
	for o := int32(0); o < 6 && outsider < 0; o++ {
		if !slices.Contains(was.Up, o) {
			outsider = o
		}
	}
	translate := func(items string) mon.Command {
		c, err := mon.Translate(monc.Command{Prefix: "osd pg-upmap-items", Args: map[string]string{"items": items}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	commit(t, s, translate(fmt.Sprintf("%s=%d,%d", pg, was.Up[1], outsider)))
	now, _ := s.Map.MapPG(pg)
	want := slices.Clone(was.Up)
	want[1] = outsider
	if !slices.Equal(now.Up, want) {
		t.Fatalf("after the move %v, want %v", now.Up, want)
	}
	epoch := s.Map.Epoch
	bad := []string{
		"1.ff=0,1",                                // no such PG
		fmt.Sprintf("%s=%d,9", pg, was.Up[0]),     // no such OSD
		fmt.Sprintf("%s=%d,%d", pg, was.Up[0], 7), // no such OSD either
		fmt.Sprintf("%s=%d,%d", pg, was.Up[0], was.Up[0]),
		fmt.Sprintf("%s=%d,%d,%d,%d", pg, was.Up[0], outsider, was.Up[2], outsider), // two pairs to one OSD
		fmt.Sprintf("%s=%d,%d", pg, outsider, was.Up[0]),                            // applies to nothing: outsider is not in the set
	}
	for _, items := range bad {
		if _, _, err := s.Commit(translate(items)); err == nil {
			t.Errorf("%q accepted", items)
		}
	}
	if _, err := mon.Translate(monc.Command{Prefix: "osd pg-upmap-items", Args: map[string]string{"items": fmt.Sprintf("%s=1,2,3", pg)}}); !errors.Is(err, mon.ErrInvalid) {
		t.Errorf("odd id list: %v", err)
	}
	if s.Map.Epoch != epoch {
		t.Fatalf("refused commands changed the map: epoch %d -> %d", epoch, s.Map.Epoch)
	}
	commit(t, s, mon.OSDMark{IDs: []int32{outsider}, In: f(false)})
	epoch = s.Map.Epoch
	if _, _, err := s.Commit(translate(fmt.Sprintf("%s=%d,%d", pg, was.Up[0], outsider))); !errors.Is(err, mon.ErrInvalid) {
		t.Errorf("a move to an out OSD: %v", err)
	}
	if s.Map.Epoch != epoch {
		t.Fatalf("refused commands changed the map: epoch %d -> %d", epoch, s.Map.Epoch)
	}
	// marking the target out made the entry useless: the MONs dropped it
	if _, ok := s.Map.PGUpmapItems[pg]; ok {
		t.Errorf("entry to an out OSD kept: %v", s.Map.PGUpmapItems[pg])
	}
	commit(t, s, mon.OSDMark{IDs: []int32{outsider}, In: f(true)})
	commit(t, s, translate(fmt.Sprintf("%s=%d,%d", pg, was.Up[1], outsider)))
	commit(t, s, translate(pg.String()+"="))
	if now, _ := s.Map.MapPG(pg); !slices.Equal(now.Up, was.Up) || len(s.Map.PGUpmapItems) != 0 {
		t.Fatalf("after rm-pg-upmap-items %v (%d entries), want %v", now.Up, len(s.Map.PGUpmapItems), was.Up)
	}
}

// Two OSDs on one host: a move that would put two copies there is
// refused; moving a host's OSD away drops the entries it breaks.
func TestPGUpmapItemsFailureDomain(t *testing.T) {
	s := newState(t)
	for i, h := range []string{"a", "a", "b", "c", "d"} {
		commit(t, s, mon.OSDBoot{ID: -1, Host: h, Addr: fmt.Sprintf("127.0.0.1:68%02d", i), SizeBytes: 1 << 40})
	}
	commit(t, s, mon.PoolCreate{Name: "data", PGNum: 16, PGPNum: 16})
	p, _ := s.Map.PoolByName("data")
	for seed := uint32(0); seed < p.PGNum; seed++ {
		pg := osdmap.PGID{Pool: p.ID, Seed: seed}
		mp, _ := s.Map.MapPG(pg)
		onA := slices.IndexFunc(mp.Up, func(o int32) bool { return o <= 1 })
		if onA < 0 || len(mp.Up) != 3 {
			continue
		}
		other := 1 - mp.Up[onA]
		from := mp.Up[(onA+1)%3]
		c := mon.PGUpmapItems{Items: map[osdmap.PGID][]osdmap.UpmapItem{pg: {{From: from, To: other}}}}
		if _, _, err := s.Commit(c); !errors.Is(err, mon.ErrInvalid) {
			t.Fatalf("pg %s %v: a second copy on host a (%d -> %d): %v", pg, mp.Up, from, other, err)
		}
		return
	}
	t.Fatal("no PG with a copy on host a")
}

// BalancerReady waits for down OSDs, backfills and PGs not yet active
// on their acting set.
func TestBalancerReady(t *testing.T) {
	s, p := bootSix(t)
	if why := s.BalancerReady(); why == "" {
		t.Fatal("ready before any PG was active")
	}
	var ivs []monc.PGInterval
	for seed := uint32(0); seed < p.PGNum; seed++ {
		mp, _ := s.Map.MapPG(osdmap.PGID{Pool: p.ID, Seed: seed})
		ivs = append(ivs, monc.PGInterval{PG: osdmap.PGID{Pool: p.ID, Seed: seed}, Epoch: uint32(s.Map.Epoch), Acting: mp.Acting})
	}
	commit(t, s, mon.PGHistoryUpdate{Entries: ivs})
	if why := s.BalancerReady(); why != "" {
		t.Fatalf("not ready with every PG active: %s", why)
	}
	pg := osdmap.PGID{Pool: p.ID, Seed: 0}
	mp, _ := s.Map.MapPG(pg)
	temp := slices.Clone(mp.Acting)
	for o := int32(0); o < 6; o++ {
		if !slices.Contains(mp.Acting, o) {
			temp[2] = o // a backfill source outside the up set
			break
		}
	}
	commit(t, s, mon.PGTemp{Sets: map[osdmap.PGID][]int32{pg: temp}})
	if why := s.BalancerReady(); why == "" {
		t.Error("ready while a PG has a pg_temp")
	}
	commit(t, s, mon.PGTemp{Sets: map[osdmap.PGID][]int32{pg: nil}})
	commit(t, s, mon.OSDMark{IDs: []int32{mp.Acting[0]}, Up: f(false)})
	if why := s.BalancerReady(); why == "" {
		t.Error("ready with an OSD down")
	}
}

// The autoscaler's pool options are set as Ceph names them; bad values —
// not numbers, a floor above the ceiling, a mode other than off, warn or
// on — are refused and change nothing.
func TestPoolAutoscaleOptions(t *testing.T) {
	s, p := bootSix(t)
	for k, v := range map[string]string{"pg_autoscale_mode": "warn", "target_size_ratio": "0.5", "target_size_bytes": "1099511627776",
		"pg_autoscale_bias": "2", "pg_num_min": "16", "pg_num_max": "256", "bulk": "true"} {
		commit(t, s, mon.PoolSet{Name: p.Name, Key: k, Value: v})
	}
	got, _ := s.Map.PoolByName(p.Name)
	want := osdmap.AutoscaleOptions{Mode: "warn", TargetRatio: 0.5, TargetBytes: 1 << 40, Bias: 2, PGNumMin: 16, PGNumMax: 256, Bulk: true}
	if got.Autoscale != want {
		t.Fatalf("options %+v, want %+v", got.Autoscale, want)
	}
	back, err := osdmap.Decode(s.Map.Encode())
	if err != nil || back.Pools[p.ID].Autoscale != want {
		t.Fatalf("after encoding: %+v, %v", back.Pools[p.ID].Autoscale, err)
	}
	epoch := s.Map.Epoch
	for k, v := range map[string]string{"pg_autoscale_mode": "sometimes", "target_size_ratio": "-1", "pg_autoscale_bias": "x",
		"pg_num_min": "512", "pg_num_max": "-3", "bulk": "maybe"} {
		if _, _, err := s.Commit(mon.PoolSet{Name: p.Name, Key: k, Value: v}); !errors.Is(err, mon.ErrInvalid) {
			t.Errorf("%s = %s: %v", k, v, err)
		}
	}
	if s.Map.Epoch != epoch {
		t.Fatalf("refused settings changed the map")
	}
}

// An erasure-coded PG whose shard a pg_upmap_items pair moved keeps it
// there when a CRUSH change reorders its OSDs: every OSD that stays in a
// PG's set stays at its position (the MONs' positional pg_upmap treats a
// pair's To as holding its From's position).
func TestPositionalUpmapWithItems(t *testing.T) {
	s := newState(t)
	for i := range 6 {
		commit(t, s, mon.OSDBoot{ID: -1, Host: fmt.Sprintf("h%d", i), Addr: fmt.Sprintf("127.0.0.1:68%02d", i), SizeBytes: 1 << 40})
	}
	commit(t, s, mon.ECProfileSet{Name: "p21", Args: []string{"k=2", "m=1"}})
	commit(t, s, mon.PoolCreate{Name: "ec", Erasure: true, ECProfile: "p21", PGNum: 64})
	ecp, _ := s.Map.PoolByName("ec")
	plan, err := balancer.Optimize(s.Map, balancer.Options{MaxDeviation: 1})
	if err != nil || len(plan.Changes) == 0 {
		t.Fatalf("plan: %v, %d changes", err, len(plan.Changes))
	}
	commit(t, s, mon.PGUpmapItems{Items: plan.Changes})
	kept := 0
	for round, w := range []float64{2, 0.5, 1.5, 1, 3} {
		items := len(s.Map.PGUpmapItems)
		before, _ := s.Map.PGMappings(ecp.ID)
		commit(t, s, mon.CrushReweight{Name: fmt.Sprintf("osd.%d", round), Weight: w})
		after, _ := s.Map.PGMappings(ecp.ID)
		for seed := range after {
			for i, o := range before[seed].Up {
				if at := slices.Index(after[seed].Up, o); at >= 0 {
					if at != i {
						t.Fatalf("round %d: pg %d.%x: osd.%d moved from position %d to %d: %v -> %v (items %v)", round, ecp.ID, seed, o, i, at, before[seed].Up, after[seed].Up,
							s.Map.PGUpmapItems[osdmap.PGID{Pool: ecp.ID, Seed: uint32(seed)}])
					}
					kept++
				}
			}
		}
		t.Logf("round %d: %d PGs with pg_upmap_items before, %d after; %d with pg_upmap", round, items, len(s.Map.PGUpmapItems), len(s.Map.PGUpmap))
	}
	t.Logf("%d shards kept their OSD and position", kept)
}
