package osd_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osdmap"
)

// pgObjects is, per PG of pool, the objects its primary reports.
func pgObjects(ctx context.Context, t *testing.T, cl *client.Conn, pool int64) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, pg := range pgStatsOf(ctx, t, cl, pool) {
		out[pg.PGID] = pg.Objects
	}
	return out
}

// splitPool connects a client and creates the 3-replica pool "p" of
// pgNum PGs.
func (c *cluster) splitPool(ctx context.Context, pgNum int) (*client.Conn, *client.Pool) {
	c.t.Helper()
	cl := c.Client(ctx)
	if _, err := cl.MonCommand(ctx, "pool create", map[string]string{"name": "p", "size": "3", "pg_num": strconv.Itoa(pgNum)}); err != nil {
		c.t.Fatal(err)
	}
	p, err := cl.Pool(ctx, "p")
	if err != nil {
		c.t.Fatal(err)
	}
	return cl, p
}

// splitUnderLoad grows pool p from its pg_num to pgNum while a writer
// overwrites some of model's objects, then checks every object against
// model (the last acknowledged bytes), each PG's object count against
// the objects the map sends to it, and that the listing names every
// object once; then it lets pgp_num follow (the MONs' steps) and checks
// again. objects says how many objects (clones included) the pool holds
// once the writer overwrote the objects written.
func splitUnderLoad(ctx context.Context, t *testing.T, cl *client.Conn, p *client.Pool, model map[string][]byte, pgNum int,
	objects func(written map[string]bool) int64, check func(stage string)) {
	t.Helper()
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	writes, written := 0, map[string]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(2, 2))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			oid := fmt.Sprintf("o%d", rng.IntN(40))
			data := []byte(fmt.Sprintf("%s written %d times under load", oid, i))
			if err := p.WriteFull(ctx, oid, data); err != nil {
				t.Errorf("write %s during the split: %v", oid, err)
				return
			}
			mu.Lock()
			model[oid] = data
			writes++
			written[oid] = true
			mu.Unlock()
		}
	}()
	if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": p.Name(), "key": "pg_num", "value": strconv.Itoa(pgNum)}); err != nil {
		t.Fatal(err)
	}
	waitClean(ctx, t, cl, p.ID())
	close(stop)
	wg.Wait()
	t.Logf("%d writes during the split", writes)
	if writes == 0 {
		t.Fatal("no write ran during the split")
	}
	total := objects(written)
	verify := func(stage string) {
		t.Helper()
		waitClean(ctx, t, cl, p.ID())
		verifyModel(ctx, t, p, model, stage)
		check(stage)
		var names []string
		if err := p.List(ctx, func(n string) bool { names = append(names, n); return true }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		want := make([]string, 0, len(model))
		for oid := range model {
			want = append(want, oid)
		}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Fatalf("%s: listing has %d names, want %d", stage, len(names), len(want))
		}
		m := cl.Map()
		per := objectsPerPG(t, m, p.ID(), model)
		got := pgObjects(ctx, t, cl, p.ID())
		sum := int64(0)
		for seed := range uint32(pgNum) {
			pg := osdmap.PGID{Pool: p.ID(), Seed: seed}.String()
			if _, ok := got[pg]; !ok {
				t.Fatalf("%s: pg %s not reported", stage, pg)
			}
			sum += got[pg]
			if per[seed] == 0 && got[pg] != 0 {
				t.Fatalf("%s: pg %s reports %d objects, none map to it", stage, pg, got[pg])
			}
		}
		if sum != total {
			t.Fatalf("%s: the PGs count %d objects, want %d", stage, sum, total)
		}
	}
	verify("after the split")
	pool, _ := cl.Map().Pool(p.ID())
	if pool.PGNum != uint32(pgNum) {
		t.Fatalf("pg_num %d", pool.PGNum)
	}
	eventually(ctx, t, func() bool {
		_ = cl.RefreshMap(ctx)
		pool, _ := cl.Map().Pool(p.ID())
		return pool.PGPNum == uint32(pgNum)
	}, func() string {
		pool, _ := cl.Map().Pool(p.ID())
		return fmt.Sprintf("pgp_num %d, target %d", pool.PGPNum, pool.PGPNumTarget)
	})
	verify("after pgp_num followed")
}

// TestPGSplit: a 3-replica pool of 8 PGs holding objects inline and on
// the device, with xattrs, omap entries and clones of a pool snapshot,
// grows to 32 PGs under a writer: every object keeps its last
// acknowledged bytes, xattr, omap and snapshot, each PG counts the
// objects the map sends to it (clones included), the listing names each object once, and pgp_num follows to
// 32, moving children to their own OSDs, with all of it still true.
func TestPGSplit(t *testing.T) {
	c := startClusterWith(t, 4, "target_max_misplaced_ratio = 0.5\n")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.splitPool(ctx, 8)
	model := map[string][]byte{}
	for i := range 120 {
		oid := fmt.Sprintf("o%d", i)
		data := bytes.Repeat([]byte{byte(i)}, 100+i*700) // up to 84 KB: inline and on the device
		putModel(ctx, t, p, model, oid, data)
		if err := p.SetXattr(ctx, oid, "who", []byte(oid)); err != nil {
			t.Fatal(err)
		}
		if err := p.OmapSet(ctx, oid, []omap.KV{{Key: "k", Value: []byte(oid)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.SnapCreate(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	snap, err := p.SnapLookup("s1")
	if err != nil {
		t.Fatal(err)
	}
	snapped := map[string][]byte{}
	for i := 80; i < 120; i++ { // clones of o80–o119
		oid := fmt.Sprintf("o%d", i)
		snapped[oid] = model[oid]
		putModel(ctx, t, p, model, oid, []byte("after the snapshot "+oid))
	}
	// 120 heads, the 40 clones of o80–o119, and one clone of each of
	// o0–o39 the writer overwrote (the snapshot's first write to it)
	heads := func(w map[string]bool) int64 { return int64(120 + 40 + len(w)) }
	splitUnderLoad(ctx, t, cl, p, model, 32, heads, func(stage string) {
		for i := range 120 {
			oid := fmt.Sprintf("o%d", i)
			if v, err := p.GetXattr(ctx, oid, "who"); err != nil || string(v) != oid {
				t.Fatalf("%s: %s xattr %q %v", stage, oid, v, err)
			}
			if kvs, err := p.OmapGet(ctx, oid, []string{"k"}); err != nil || len(kvs) != 1 || string(kvs[0].Value) != oid {
				t.Fatalf("%s: %s omap %v %v", stage, oid, kvs, err)
			}
		}
		at := p.AtSnap(snap)
		for oid, want := range snapped {
			if got, err := at.Read(ctx, oid, 0, 0); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %s at the snapshot: %d bytes %v, want %d", stage, oid, len(got), err, len(want))
			}
		}
	})
}

// TestECPGSplit: an erasure-coded 2+1 pool of 4 PGs grows to 6 under a
// writer — PGs 0 and 1 split, 2 and 3 do not (and keep their interval) —
// its shards' objects and rollback state moving with the PGs.
func TestECPGSplit(t *testing.T) {
	c := startClusterWith(t, 4, "target_max_misplaced_ratio = 0.5\n")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.ecPool(ctx, "ec21", 2, 1, 4096, 4)
	model := map[string][]byte{}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 80 {
		putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), randBytes(rng, 1+rng.IntN(40000)))
	}
	splitUnderLoad(ctx, t, cl, p, model, 6, func(map[string]bool) int64 { return 80 }, func(string) {})
}

// TestPGSplitWhileDown: an OSD down while its pool splits (8 → 16 PGs)
// and the children take writes splits its stale copies when it comes
// back, and recovery brings the children's writes to it: every object
// reads back, the PGs go clean, and its store holds the children's
// objects in their own collections.
func TestPGSplitWhileDown(t *testing.T) {
	c := startCluster(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.splitPool(ctx, 8)
	model := map[string][]byte{}
	for i := range 100 {
		putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), []byte(fmt.Sprintf("first o%d", i)))
	}
	waitClean(ctx, t, cl, p.ID())
	c.stop(ctx, cl, 3)
	c.poolSet(ctx, cl, "p", "pg_num", "16")
	for i := range 100 {
		if i%2 == 0 {
			putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), []byte(fmt.Sprintf("second o%d, after the split", i)))
		}
	}
	c.RestartOSD(3)
	waitClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, "after osd.3 came back")
	// osd.3's own copies: each object it holds is in the collection of
	// the PG the map sends it to
	m := cl.Map()
	st := c.Stores[3]
	colls, err := st.Collections()
	if err != nil {
		t.Fatal(err)
	}
	held, kids := 0, 0
	for _, coll := range colls {
		pg, err := osdmap.ParsePGID(string(coll))
		if err != nil || pg.Pool != p.ID() {
			continue
		}
		if pg.Seed >= 8 {
			kids++
		}
		names, err := st.List(coll, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			want, _ := m.ObjectToPG(p.ID(), n, "")
			if want != pg {
				t.Fatalf("osd.3 holds %s in %s, the map sends it to %s", n, pg, want)
			}
			if got, err := st.Read(coll, n, 0, 0); err != nil || !bytes.Equal(got, model[n]) {
				t.Fatalf("osd.3's copy of %s: %q %v", n, got, err)
			}
			held++
		}
	}
	if kids == 0 || held == 0 {
		t.Fatalf("osd.3 holds %d child collections, %d objects", kids, held)
	}
	t.Logf("osd.3 holds %d objects, %d child PG copies", held, kids)
}
