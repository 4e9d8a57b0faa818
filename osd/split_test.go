package osd_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/objectstore"
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
// the objects the map sends to it and their clones, and that the listing names every
// object once; then it lets pgp_num follow (the MONs' steps) and checks
// again. clones says how many clones an object has once the writer
// overwrote the objects written: each PG must count its objects and
// their clones exactly.
func splitUnderLoad(ctx context.Context, t *testing.T, cl *client.Conn, p *client.Pool, model map[string][]byte, pgNum int,
	clones func(oid string, written map[string]bool) int64, check func(stage string)) {
	t.Helper()
	w := startModelWriter(ctx, t, p, model)
	if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": p.Name(), "key": "pg_num", "value": strconv.Itoa(pgNum)}); err != nil {
		t.Fatal(err)
	}
	waitClean(ctx, t, cl, p.ID())
	written := w.stop(t, "the split")
	verifyResized(ctx, t, cl, p, model, pgNum, func(oid string) int64 { return clones(oid, written) }, check, "after the split")
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
	verifyResized(ctx, t, cl, p, model, pgNum, func(oid string) int64 { return clones(oid, written) }, check, "after pgp_num followed")
}

// modelWriter overwrites objects o0–o39 of a pool, recording each
// acknowledged write in the model, until stopped.
type modelWriter struct {
	mu      sync.Mutex
	stopc   chan struct{}
	wg      sync.WaitGroup
	writes  int
	written map[string]bool
}

func startModelWriter(ctx context.Context, t *testing.T, p *client.Pool, model map[string][]byte) *modelWriter {
	w := &modelWriter{stopc: make(chan struct{}), written: map[string]bool{}}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		rng := rand.New(rand.NewPCG(2, 2))
		for i := 0; ; i++ {
			select {
			case <-w.stopc:
				return
			default:
			}
			oid := fmt.Sprintf("o%d", rng.IntN(40))
			data := []byte(fmt.Sprintf("%s written %d times under load", oid, i))
			if err := p.WriteFull(ctx, oid, data); err != nil {
				t.Errorf("write %s under load: %v", oid, err)
				return
			}
			w.mu.Lock()
			model[oid] = data
			w.writes++
			w.written[oid] = true
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the writer and returns the objects it wrote; it fails the
// test if it wrote none during what.
func (w *modelWriter) stop(t *testing.T, what string) map[string]bool {
	t.Helper()
	close(w.stopc)
	w.wg.Wait()
	t.Logf("%d writes during %s", w.writes, what)
	if w.writes == 0 {
		t.Fatalf("no write ran during %s", what)
	}
	return w.written
}

// verifyResized waits for pool p to be clean, then checks every object
// against model, check(stage), that the listing names each object once,
// and that each of the pool's pgNum PGs counts the objects the map sends
// to it and their clones (clones(oid) each).
func verifyResized(ctx context.Context, t *testing.T, cl *client.Conn, p *client.Pool, model map[string][]byte, pgNum int,
	clones func(oid string) int64, check func(stage string), stage string) {
	t.Helper()
	waitClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, stage)
	check(stage)
	var names []string
	if err := p.List(ctx, func(n string) bool { names = append(names, n); return true }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	all := make([]string, 0, len(model))
	for oid := range model {
		all = append(all, oid)
	}
	slices.Sort(all)
	if !slices.Equal(names, all) {
		t.Fatalf("%s: listing has %d names, want %d", stage, len(names), len(all))
	}
	m := cl.Map()
	want := map[string]int64{} // by PG: heads and clones
	for oid := range model {
		pg, _ := m.ObjectToPG(p.ID(), oid, "")
		want[pg.String()] += 1 + clones(oid)
	}
	got := pgObjects(ctx, t, cl, p.ID())
	for seed := range uint32(pgNum) {
		pg := osdmap.PGID{Pool: p.ID(), Seed: seed}.String()
		if n, ok := got[pg]; !ok || n != want[pg] {
			t.Fatalf("%s: pg %s counts %d objects (reported %t), want %d", stage, pg, n, ok, want[pg])
		}
	}
	if len(got) != pgNum {
		t.Fatalf("%s: %d PGs report, want %d", stage, len(got), pgNum)
	}
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
	clones, check := fillRich(ctx, t, p, model)
	splitUnderLoad(ctx, t, cl, p, model, 32, clones, check)
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
	splitUnderLoad(ctx, t, cl, p, model, 6, func(string, map[string]bool) int64 { return 0 }, func(string) {})
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

// splitFailStore fails every transaction that splits a collection while
// failing is set, as a store that cannot commit would.
type splitFailStore struct {
	objectstore.Store
	failing atomic.Bool
	failed  atomic.Int32
}

func (s *splitFailStore) Apply(t *objectstore.Transaction) error { return <-s.Submit(t) }

func (s *splitFailStore) Submit(t *objectstore.Transaction) <-chan error {
	if s.failing.Load() && len(t.Splits()) > 0 {
		s.failed.Add(1)
		out := make(chan error, 1)
		out <- fmt.Errorf("injected: %w", objectstore.ErrNoSpace)
		return out
	}
	return s.Store.Submit(t)
}

// TestPGSplitFailsThenRetries: an OSD whose store refuses its splits
// keeps its parents whole and in their old interval, makes no child,
// and splits them at a later map once its store commits again; the
// cluster then goes clean with every object intact.
func TestPGSplitFailsThenRetries(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	fs := &splitFailStore{}
	c.Wrap = func(i int, s objectstore.Store) objectstore.Store {
		if i != 0 {
			return s
		}
		fs.Store = s
		return fs
	}
	c.RestartOSD(0)
	cl, p := c.splitPool(ctx, 8)
	model := map[string][]byte{}
	for i := range 60 {
		putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), []byte(fmt.Sprintf("o%d before", i)))
	}
	waitClean(ctx, t, cl, p.ID())
	fs.failing.Store(true)
	c.poolSet(ctx, cl, "p", "pg_num", "16")
	eventually(ctx, t, func() bool { return fs.failed.Load() >= 8 }, func() string {
		return fmt.Sprintf("osd.0 tried %d splits, want its 8 PGs", fs.failed.Load())
	})
	colls, err := fs.Store.Collections()
	if err != nil {
		t.Fatal(err)
	}
	for _, coll := range colls {
		if pg, err := osdmap.ParsePGID(string(coll)); err == nil && pg.Pool == p.ID() && pg.Seed >= 8 {
			t.Fatalf("osd.0 made child %s of a split that failed", pg)
		}
	}
	// the parents on osd.0 (a member of every PG) still hold every object
	pool, _ := cl.Map().Pool(p.ID())
	old := *pool
	old.PGNum = 8
	for oid := range model {
		pg := old.RawPGToPG(osdmap.PGID{Pool: p.ID(), Seed: old.HashKey(oid, "")})
		if _, err := fs.Store.Stat(objectstore.Coll(pg.String()), oid); err != nil {
			t.Fatalf("osd.0's pg %s lost %s while its split failed: %v", pg, oid, err)
		}
	}
	fs.failing.Store(false)
	c.poolSet(ctx, cl, "p", "pgp_num", "8") // any new map: osd.0 tries again
	waitClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, "after the retried split")
	colls, _ = fs.Store.Collections()
	kids := 0
	for _, coll := range colls {
		if pg, err := osdmap.ParsePGID(string(coll)); err == nil && pg.Pool == p.ID() && pg.Seed >= 8 {
			kids++
		}
	}
	if kids != 8 {
		t.Fatalf("osd.0 holds %d children after the retry, want 8", kids)
	}
}

// fillRich writes o0–o119 to p and model (100 B to 84 KB: inline and on
// the device), each with an xattr and an omap entry, takes pool snapshot
// s1 and overwrites o80–o119 after it. It returns how many clones an
// object has once a writer (startModelWriter, objects o0–o39) overwrote
// those in written, and the check that every xattr, omap entry and
// snapshot read reads back.
func fillRich(ctx context.Context, t *testing.T, p *client.Pool, model map[string][]byte) (clones func(oid string, written map[string]bool) int64, check func(stage string)) {
	t.Helper()
	for i := range 120 {
		oid := fmt.Sprintf("o%d", i)
		putModel(ctx, t, p, model, oid, bytes.Repeat([]byte{byte(i)}, 100+i*700))
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
	// one clone each of o80–o119 and of the objects of o0–o39 the writer
	// overwrote (the snapshot's first write to it)
	clones = func(oid string, w map[string]bool) int64 {
		if _, ok := snapped[oid]; ok || w[oid] {
			return 1
		}
		return 0
	}
	check = func(stage string) {
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
	}
	return clones, check
}
