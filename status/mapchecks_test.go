package status

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/mon"
)

// OSD_DOWN counts OSDs that are down and in, as Ceph's: once a down OSD is
// out (its data recovered elsewhere) the cluster can be healthy again. An
// erasure-coded pool whose min_size is its size gets a warning saying so,
// and one whose next merge needs an OSD at two shard positions a
// POOL_MERGE_BLOCKED warning — while no spare OSD is there to move a
// shard through (three OSDs in for 2+1 pools); once one boots, the MONs
// can step the merge and the warning goes.
func TestMapChecks(t *testing.T) {
	cm, err := crush.Simple(crush.SimpleSpec{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := mon.NewState("fsid", cm)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(c mon.Command) {
		t.Helper()
		if _, _, err := st.Commit(c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	for i := range 4 {
		commit(mon.OSDBoot{ID: -1, Host: "h", Addr: fmt.Sprintf("127.0.0.1:%d", 6800+i), SizeBytes: 1 << 40})
	}
	commit(mon.ECProfileSet{Name: "p21", Args: []string{"k=2", "m=1", "crush-failure-domain=osd"}})
	commit(mon.PoolCreate{Name: "ec", Erasure: true, ECProfile: "p21"})
	if c := mapChecks(st.Map); len(c) != 0 {
		t.Fatalf("all up, defaults: %+v", c)
	}
	down, out := false, false
	commit(mon.OSDMark{IDs: []int32{3}, Up: &down})
	c := mapChecks(st.Map)
	if len(c) != 1 || c[0].Summary != "1 osds down" {
		t.Fatalf("osd.3 down and in: %+v", c)
	}
	commit(mon.OSDMark{IDs: []int32{3}, In: &out})
	if c := mapChecks(st.Map); len(c) != 0 {
		t.Fatalf("osd.3 down and out: %+v", c)
	}
	commit(mon.PoolSet{Name: "ec", Key: "min_size", Value: "3"})
	c = mapChecks(st.Map)
	if len(c) != 1 || !strings.Contains(c[0].Summary, "stop at the first OSD down") || !strings.Contains(c[0].Detail[0], "pool ec: min_size 3 = size") {
		t.Fatalf("2+1 pool with min_size 3: %+v", c)
	}
	commit(mon.PoolSet{Name: "ec", Key: "min_size", Value: "2"})
	blocked := 0
	for i := range 8 { // as mon.TestECMergePositions: some pools conflict
		name := fmt.Sprintf("m%d", i)
		commit(mon.PoolCreate{Name: name, Erasure: true, ECProfile: "p21", PGNum: 16, PGPNum: 16})
		commit(mon.PoolSet{Name: name, Key: "min_size", Value: "2"})
		commit(mon.PoolSet{Name: name, Key: "pg_num", Value: "15"})
		commit(mon.PoolSet{Name: name, Key: "pgp_num_actual", Value: "15"})
		p, _ := st.Map.PoolByName(name)
		if st.Map.MergeShardConflict(p, 15) != nil {
			blocked++
		}
	}
	c = mapChecks(st.Map)
	switch {
	case blocked == 0:
		t.Fatal("no pool's merge conflicts: the check is not exercised")
	case blocked == 8:
		t.Fatal("every pool's merge conflicts")
	case len(c) != 1 || c[0].Code != "POOL_MERGE_BLOCKED" || len(c[0].Detail) != blocked || !strings.Contains(c[0].Detail[0], "holds shard"):
		t.Fatalf("%d pools blocked: %+v", blocked, c)
	}
	commit(mon.OSDBoot{ID: -1, Host: "h", Addr: "127.0.0.1:6810", SizeBytes: 1 << 40})
	still := 0
	for i := range 8 {
		p, _ := st.Map.PoolByName(fmt.Sprintf("m%d", i))
		if st.Map.MergeShardConflict(p, 15) != nil {
			still++
		}
	}
	if still == 0 {
		t.Fatal("no pool's merge conflicts with osd.4 in: the spare is not exercised")
	}
	for _, c := range mapChecks(st.Map) {
		if c.Code == "POOL_MERGE_BLOCKED" {
			t.Fatalf("%d pools conflict with a spare OSD up: %+v", still, c)
		}
	}
}
