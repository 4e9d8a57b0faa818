package status_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
	"github.com/shoal-project/shoal/status"
)

// TestOSDDF: PG counts follow the acting sets, %USE and VAR the reported
// space, and an OSD that sent no stats shows none.
func TestOSDDF(t *testing.T) {
	c, err := crush.Simple(crush.SimpleSpec{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := mon.NewState("fsid", c)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(cmd mon.Command) {
		if _, _, err := s.Commit(cmd); err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
	}
	for i, h := range []string{"a", "b", "c", "d"} {
		commit(mon.OSDBoot{ID: -1, Host: h, Addr: "127.0.0.1:680" + string(rune('0'+i)), SizeBytes: 1 << 40, Class: "hdd"})
	}
	commit(mon.ConfigSet{Who: "global", Option: "osd_pool_default_pg_num", Value: "64"})
	commit(mon.PoolCreate{Name: "data"})
	m := s.Map
	stats := []osdop.Stats{{ID: 0, Total: 1000, Used: 100}, {ID: 1, Total: 1000, Used: 300}, {ID: 2, Total: 2000, Used: 200}}
	rows, avg := status.OSDDF(m, stats)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	if want := 100 * 600.0 / 4000; math.Abs(avg-want) > 1e-9 {
		t.Fatalf("cluster %%USE %.3f, want %.3f", avg, want)
	}
	// the PG counts are the acting sets' (3 replicas of 64 PGs)
	want := map[int32]int{}
	p, _ := m.PoolByName("data")
	for seed := uint32(0); seed < p.PGNum; seed++ {
		mp, _ := m.MapPG(osdmap.PGID{Pool: p.ID, Seed: seed})
		for _, o := range mp.Acting {
			want[o]++
		}
	}
	total := 0
	for _, r := range rows {
		total += r.PGs
		if r.PGs != want[r.ID] || r.Class != "hdd" || r.Weight != 1 || r.Reweight != 1 || !r.Up {
			t.Fatalf("osd.%d: %+v, want %d PGs, class hdd, weight 1", r.ID, r, want[r.ID])
		}
	}
	if total != 3*64 {
		t.Fatalf("%d PG placements, want 192", total)
	}
	if r := rows[1]; r.UsePct != 30 || math.Abs(r.Var-2) > 1e-9 || r.AvailKB != 700 {
		t.Fatalf("osd.1: %+v, want 30%% used, VAR 2, 700 KiB free", r)
	}
	if r := rows[3]; r.SizeKB != 0 || r.Var != 0 {
		t.Fatalf("osd.3 sent no stats: %+v", r)
	}
	var out bytes.Buffer
	status.OSDDFText(&out, rows, avg)
	if !strings.Contains(out.String(), "MIN/MAX VAR: 0.00/2.00") || !strings.Contains(out.String(), "TOTAL") {
		t.Fatalf("text:\n%s", out.String())
	}
}
