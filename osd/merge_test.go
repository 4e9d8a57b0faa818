package osd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdmap"
)

// mergeUnderLoad shrinks pool p to pgNum PGs while a writer overwrites
// some of model's objects: it waits for the MONs' merges (pgp_num first,
// then one PG at a time), then checks as verifyResized, and that no OSD
// keeps a collection of a merged-away PG.
func (c *cluster) mergeUnderLoad(ctx context.Context, cl *client.Conn, p *client.Pool, model map[string][]byte, pgNum int,
	clones func(oid string, written map[string]bool) int64, check func(stage string)) {
	t := c.t
	t.Helper()
	w := startModelWriter(ctx, t, p, model)
	c.poolSet(ctx, cl, p.Name(), "pg_num", strconv.Itoa(pgNum))
	eventually(ctx, t, func() bool {
		_ = cl.RefreshMap(ctx)
		pool, _ := cl.Map().Pool(p.ID())
		return pool.PGNum == uint32(pgNum)
	}, func() string {
		pool, _ := cl.Map().Pool(p.ID())
		return fmt.Sprintf("pg_num %d (pending %d), pgp_num %d, target %d", pool.PGNum, pool.PGNumPending, pool.PGPNum, pool.PGNumTarget)
	})
	waitClean(ctx, t, cl, p.ID())
	written := w.stop(t, "the merges")
	verifyResized(ctx, t, cl, p, model, pgNum, func(oid string) int64 { return clones(oid, written) }, check, "after the merges")
	pool, _ := cl.Map().Pool(p.ID())
	if _, ok := pool.MergeRecord(uint32(pgNum)); pool.PGNumTarget != 0 || pool.PGPNum != uint32(pgNum) || !ok {
		t.Fatalf("after the merges: %+v", pool)
	}
	for i, st := range c.Stores {
		colls, err := st.Collections()
		if err != nil {
			t.Fatal(err)
		}
		for _, coll := range colls {
			if pg, err := osdmap.ParsePGID(string(coll)); err == nil && pg.Pool == p.ID() && pg.Seed >= uint32(pgNum) {
				t.Fatalf("osd.%d keeps collection %s of a merged PG", i, coll)
			}
		}
	}
}

// TestPGMerge: a 3-replica pool of 16 PGs holding objects inline and on
// the device, with xattrs, omap entries and clones of a pool snapshot,
// shrinks to 12 PGs under a writer: every object keeps its last
// acknowledged bytes, xattr, omap and snapshot, each PG counts the
// objects the map sends to it (clones included), the listing names each
// object once, and no OSD keeps the merged PGs' collections.
func TestPGMerge(t *testing.T) {
	c := startClusterWith(t, 4, "target_max_misplaced_ratio = 0.5\n")
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cl, p := c.splitPool(ctx, 16)
	model := map[string][]byte{}
	clones, check := fillRich(ctx, t, p, model)
	c.mergeUnderLoad(ctx, cl, p, model, 12, clones, check)
}

// ecMergePool makes the erasure-coded 2+1 pool "ec21" (failure domain
// osd) of 6 PGs placed as pgpNum, and writes 80 objects of up to 40,000
// random bytes (drawn from seed) into it and into the model it returns.
func ecMergePool(ctx context.Context, t *testing.T, cl *client.Conn, pgpNum string, seed uint64) (*client.Pool, map[string][]byte) {
	t.Helper()
	monDo(ctx, t, cl, "osd erasure-code-profile set", "name", "ec21", "args", "k=2 m=1 stripe_unit=4096 crush-failure-domain=osd")
	monDo(ctx, t, cl, "pool create", "name", "ec21", "type", "erasure", "erasure_code_profile", "ec21", "pg_num", "6", "pgp_num", pgpNum)
	p, err := cl.Pool(ctx, "ec21")
	if err != nil {
		t.Fatal(err)
	}
	model := map[string][]byte{}
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range 80 {
		putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), randBytes(rng, 1+rng.IntN(40000)))
	}
	return p, model
}

// TestECPGMerge: an erasure-coded 2+1 pool of 6 PGs placed as 4
// (pgp_num 4: each source's shards already at its target's positions,
// so no source moves first) shrinks to 4 under a writer (5 merges into
// 1, 4 into 0), its rollback stashes dropped.
func TestECPGMerge(t *testing.T) {
	c := startClusterWith(t, 4, "target_max_misplaced_ratio = 0.5\n")
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cl := c.Client(ctx)
	p, model := ecMergePool(ctx, t, cl, "4", 1)
	c.mergeUnderLoad(ctx, cl, p, model, 4, func(string, map[string]bool) int64 { return 0 }, func(string) {})
}

// TestECPGMergeShardOrder: an erasure-coded 2+1 pool of 6 PGs on 4 OSDs
// shrinks to 4 under a writer with pgp_num coming down first, so
// positional pg_upmaps keep sources' OSDs where they were and some OSD
// holds one shard of a source and another of its target: the MONs move
// such a source through the spare OSD into its target's order, one
// backfill at a time, and the merges complete with every object intact.
func TestECPGMergeShardOrder(t *testing.T) {
	c := startClusterWith(t, 4, "target_max_misplaced_ratio = 0.5\n")
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	cl := c.Client(ctx)
	p, model := ecMergePool(ctx, t, cl, "6", 2)
	// watch the maps for a source placed on an OSD its target does not
	// use: a shard moving through the spare
	watch := c.Client(ctx)
	spared := make(chan bool, 1)
	wctx, stop := context.WithCancel(ctx)
	go func() {
		seen := false
		defer func() { spared <- seen }()
		for wctx.Err() == nil && !seen {
			_ = watch.RefreshMap(wctx)
			m := watch.Map()
			pool, err := m.Pool(p.ID())
			if err != nil {
				return
			}
			for pg, osds := range m.PGUpmap {
				if pg.Pool != p.ID() || pg.Seed < pool.PGPNum {
					continue
				}
				dm, err := m.MapPG(osdmap.PGID{Pool: pg.Pool, Seed: osdmap.MergeTarget(pg.Seed, pg.Seed)})
				for _, o := range osds {
					if err == nil && o != osdmap.NoOSD && !slices.Contains(dm.Up, o) {
						seen = true
					}
				}
			}
			select {
			case <-wctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	c.mergeUnderLoad(ctx, cl, p, model, 4, func(string, map[string]bool) int64 { return 0 }, func(string) {})
	stop()
	if !<-spared {
		t.Fatal("no source moved through the spare OSD: the shard-order steps were not exercised")
	}
}

// TestPGMergeWhileOut: an OSD down and out while its pool merges (8 → 6
// PGs) comes back with copies of the old pg_num: it merges them with an
// empty history (they are not at the recorded versions), and peering
// backfills them: the PGs go clean, every object reads back, and its
// store holds each object in the collection of the PG the map sends it
// to, with the last acknowledged bytes.
func TestPGMergeWhileOut(t *testing.T) {
	c := startClusterWith(t, 4, "target_max_misplaced_ratio = 0.5\n")
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cl, p := c.splitPool(ctx, 8)
	model := map[string][]byte{}
	for i := range 100 {
		putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), []byte(fmt.Sprintf("first o%d", i)))
	}
	waitClean(ctx, t, cl, p.ID())
	c.stop(ctx, cl, 3)
	monDo(ctx, t, cl, "osd out", "ids", "3")
	waitClean(ctx, t, cl, p.ID())
	c.poolSet(ctx, cl, "p", "pg_num", "6")
	eventually(ctx, t, func() bool {
		_ = cl.RefreshMap(ctx)
		pool, _ := cl.Map().Pool(p.ID())
		return pool.PGNum == 6
	}, func() string { return "pg_num still above 6" })
	for i := range 100 {
		if i%2 == 0 {
			putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), []byte(fmt.Sprintf("second o%d, after the merge", i)))
		}
	}
	c.RestartOSD(3)
	monDo(ctx, t, cl, "osd in", "ids", "3")
	waitClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, "after osd.3 came back")
	// osd.3's store holds each object in the collection of the PG the map
	// sends it to, with the last acknowledged bytes, once it has deleted
	// its stray copies (after the PGs are clean: a stray is never served)
	m := cl.Map()
	st := c.Stores[3]
	held, why := 0, ""
	eventually(ctx, t, func() bool {
		held, why = storeMatches(t, st, m, p.ID(), model)
		return why == ""
	}, func() string { return why })
	if held == 0 {
		t.Fatal("osd.3 holds no object of the pool")
	}
	t.Logf("osd.3 holds %d objects", held)
}

// storeMatches checks that st holds each object of pool in the collection
// of the PG m sends it to, with model's bytes, and no collection of a PG
// beyond the pool's pg_num: it returns the objects held, or why not.
func storeMatches(t *testing.T, st objectstore.Store, m *osdmap.Map, pool int64, model map[string][]byte) (int, string) {
	t.Helper()
	p, err := m.Pool(pool)
	if err != nil {
		t.Fatal(err)
	}
	colls, err := st.Collections()
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, coll := range colls {
		pg, err := osdmap.ParsePGID(string(coll))
		if err != nil || pg.Pool != pool {
			continue
		}
		if pg.Seed >= p.PGNum {
			return 0, fmt.Sprintf("the store keeps the collection of merged pg %s", pg)
		}
		names, err := st.List(coll, "", 0)
		if err != nil {
			return 0, fmt.Sprintf("list %s: %v", coll, err)
		}
		for _, n := range names {
			if n[0] == 0 {
				continue // the snap mapper
			}
			want, _ := m.ObjectToPG(pool, n, "")
			if want != pg {
				return 0, fmt.Sprintf("the store holds %s in %s, the map sends it to %s", n, pg, want)
			}
			if got, err := st.Read(coll, n, 0, 0); err != nil || !bytes.Equal(got, model[n]) {
				return 0, fmt.Sprintf("the store's copy of %s in %s: %q %v", n, pg, got, err)
			}
			held++
		}
	}
	return held, ""
}

// TestPGMergeFailsThenRetries: the primary of a merge's target (PG 3 of
// 8; source PG 7), whose store refuses its merges, keeps the source and
// target copies apart and the target out of service until a later map,
// when it merges them. The target took more writes than the source, so
// its unmerged copy would look newest: were it to serve, reads of the
// source's objects would answer "not found". None does; every object
// reads back after the retry and the merged-away collection is gone.
func TestPGMergeFailsThenRetries(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := c.splitPool(ctx, 8)
	m := cl.Map()
	target, _ := m.MapPG(osdmap.PGID{Pool: p.ID(), Seed: 3})
	fs := &splitFailStore{}
	c.Wrap = func(i int, s objectstore.Store) objectstore.Store {
		if i != int(target.ActingPrimary) {
			return s
		}
		fs.Store = s
		return fs
	}
	c.RestartOSD(int(target.ActingPrimary))
	model := map[string][]byte{}
	var inSource []string
	for i := 0; len(inSource) < 5 || i < 60; i++ {
		oid := fmt.Sprintf("o%d", i)
		pg, _ := m.ObjectToPG(p.ID(), oid, "")
		switch {
		case pg.Seed == 7 && len(inSource) < 5:
			inSource = append(inSource, oid)
		case pg.Seed == 7 || i >= 60:
			continue
		}
		putModel(ctx, t, p, model, oid, []byte(fmt.Sprintf("%s before", oid)))
	}
	for i, n := 1000, 0; n < 40; i++ { // the target's log runs ahead of the source's
		oid := fmt.Sprintf("t%d", i)
		if pg, _ := m.ObjectToPG(p.ID(), oid, ""); pg.Seed == 3 {
			putModel(ctx, t, p, model, oid, []byte("in the target"))
			n++
		}
	}
	waitClean(ctx, t, cl, p.ID())
	fs.failing.Store(true)
	c.poolSet(ctx, cl, "p", "pg_num", "7")
	eventually(ctx, t, func() bool { return fs.failed.Load() >= 1 }, func() string { return "the target's primary never tried the merge" })
	if pool, _ := cl.Map().Pool(p.ID()); pool.PGNum != 7 {
		t.Fatalf("pg_num %d after the merge was recorded", pool.PGNum)
	}
	for _, oid := range inSource { // still in the source's collection
		if _, err := fs.Store.Stat(objectstore.Coll(osdmap.PGID{Pool: p.ID(), Seed: 7}.String()), oid); err != nil {
			t.Fatalf("%s on the failing OSD: %v", oid, err)
		}
	}
	// reads of the source's objects wait or fail; none answers "not found"
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	for _, oid := range inSource {
		if got, err := p.Read(short, oid, 0, 0); (err == nil && !bytes.Equal(got, model[oid])) || errors.Is(err, client.ErrNotFound) {
			t.Fatalf("read %s while the merge failed: %q %v", oid, got, err)
		}
	}
	stop()
	fs.failing.Store(false)
	c.poolSet(ctx, cl, "p", "min_size", "2") // any new map: the merge is tried again
	waitClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, "after the retried merge")
	colls, _ := fs.Store.Collections()
	for _, coll := range colls {
		if pg, err := osdmap.ParsePGID(string(coll)); err == nil && pg.Pool == p.ID() && pg.Seed >= 7 {
			t.Fatalf("the failing OSD keeps %s after the retried merge", pg)
		}
	}
}
