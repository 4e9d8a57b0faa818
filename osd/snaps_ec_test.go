package osd_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdmap"
)

// TestECSelfManagedSnapshots is TestSelfManagedSnapshots on an
// erasure-coded 2+1 pool with overwrites, as an image's data pool uses
// it: random writes, truncates, removals, snaps and rollbacks against a
// model, every object read at every snap; with one shard's OSD down
// (reads decode, clones are made and trimmed on two shards); after it
// rejoins (its head and clone shards rebuilt from the others, checked by
// serving reads with another OSD down); after a backfill to a fourth OSD
// (osd.1 marked out; checked the same way; then a deep scrub of every PG);
// and after every snap is removed (every clone trimmed).
func TestECSelfManagedSnapshots(t *testing.T) {
	r := newSnapRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cl, p := ecSnapPool(ctx, t, r.a)
	m, run := snapRun(ctx, t, p, 300_000)
	down := func(i int) { r.down(ctx, cl, i) }
	run(120)
	m.Check(ctx, t, p, "all up")
	down(2)
	run(80)
	m.Check(ctx, t, p, "osd.2 down")
	r.up(2)
	waitClean(ctx, t, cl, p.ID())
	// osd.2's rebuilt shards now serve every read in place of osd.0's
	down(0)
	m.Check(ctx, t, p, "osd.0 down after osd.2 caught up")
	r.up(0)
	waitClean(ctx, t, cl, p.ID())
	// backfill: a fourth OSD joins and osd.1 is marked out; the shards
	// osd.1 held are copied to osd.3, clones with their heads, then serve
	// in place of osd.0's
	r.add()
	if _, err := cl.MonCommand(ctx, "osd out", map[string]string{"ids": "1"}); err != nil {
		t.Fatal(err)
	}
	waitClean(ctx, t, cl, p.ID())
	down(0)
	m.Check(ctx, t, p, "osd.1 out and backfilled to osd.3, osd.0 down")
	r.up(0)
	waitClean(ctx, t, cl, p.ID())
	checkUsage(ctx, t, cl, p, m, "with snapshots")
	for ps := range cl.Map().Pools[p.ID()].PGNum {
		pgid := osdmap.PGID{Pool: p.ID(), Seed: ps}
		if incs := scrubPG(ctx, t, cl, pgid, "deep-scrub"); len(incs.Inconsistents) != 0 {
			t.Fatalf("deep scrub of %s: %+v", pgid, incs.Inconsistents)
		}
	}
	m.RemoveAllSnaps(ctx, t, p)
	waitClean(ctx, t, cl, p.ID())
	m.CheckNoClones(ctx, t, p)
	m.Check(ctx, t, p, "after trimming")
	checkUsage(ctx, t, cl, p, m, "after trimming")
	// (osd.1, out, deletes its stray copies in the background: not checked)
	checkNoSnapLeft(t, []*objectstore.BlockStore{r.stores[0], r.stores[2], r.stores[3]})
	t.Logf("steps: %v", m.Steps)
}

// ecSnapPool connects a client and creates the 2+1 pool "ecsnap"
// (4 PGs) that takes overwrites and serves with two shards.
func ecSnapPool(ctx context.Context, t *testing.T, a string) (*client.Conn, *client.Pool) {
	t.Helper()
	cl, err := client.Connect(ctx, client.Config{MonAddrs: []string{a}, Keyring: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, ec21Pool(ctx, t, cl, "ecsnap", 4, 2)
}

// ec21Pool creates erasure-coded 2+1 pool name (profile p21: 4 KiB
// stripe unit, OSD failure domain) with pgNum PGs and overwrites
// allowed, serving with minSize shards (0: the default, 3).
func ec21Pool(ctx context.Context, tb testing.TB, cl *client.Conn, name string, pgNum, minSize int) *client.Pool {
	tb.Helper()
	cmds := []struct {
		cmd  string
		args map[string]string
	}{
		{"osd erasure-code-profile set", map[string]string{"name": "p21", "args": "k=2 m=1 stripe_unit=4096 crush-failure-domain=osd"}},
		{"pool create", map[string]string{"name": name, "type": "erasure", "erasure_code_profile": "p21", "pg_num": strconv.Itoa(pgNum)}},
		{"pool set", map[string]string{"name": name, "key": "allow_ec_overwrites", "value": "true"}},
	}
	if minSize > 0 {
		cmds = append(cmds, struct {
			cmd  string
			args map[string]string
		}{"pool set", map[string]string{"name": name, "key": "min_size", "value": strconv.Itoa(minSize)}})
	}
	for _, c := range cmds {
		if _, err := cl.MonCommand(ctx, c.cmd, c.args); err != nil {
			tb.Fatalf("%s: %v", c.cmd, err)
		}
	}
	if err := cl.RefreshMap(ctx); err != nil {
		tb.Fatal(err)
	}
	p, err := cl.Pool(ctx, name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// checkNoSnapLeft fails unless no store holds a clone or a snap mapper
// key. (Blocks may still be shared: an erasure-coded shard keeps its
// newest writes' rollback stashes, clones of their objects, until later
// writes roll them forward.)
func checkNoSnapLeft(t *testing.T, stores []*objectstore.BlockStore) {
	t.Helper()
	for i, s := range stores {
		colls, err := s.Collections()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range colls {
			names, err := s.List(c, "", 100000)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if _, ok := opexec.CloneHead(n); ok {
					t.Fatalf("osd.%d %s: clone %q left after trimming", i, c, n)
				}
			}
			kvs, _, err := s.OmapList(c, opexec.SnapMapperOID, "", "", 10)
			if err != nil && !errors.Is(err, objectstore.ErrNotFound) || len(kvs) != 0 {
				t.Fatalf("osd.%d %s: snap mapper after trimming: %v %v", i, c, kvs, err)
			}
		}
	}
}
