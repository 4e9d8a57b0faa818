package osd_test

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/internal/snapmodel"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd"
	"github.com/shoal-project/shoal/osdop"
)

// TestSelfManagedSnapshots runs random writes, truncates, removals, snap
// creations and removals and rollbacks against a model on three OSDs on
// block stores, reading every object at every snap along the way; one
// OSD misses part of it and catches up (its clones come with their
// heads), then serves everything alone.
func TestSelfManagedSnapshots(t *testing.T) {
	r := newSnapRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := dataPool(ctx, t, r.a)
	m, run := snapRun(ctx, t, p, 600_000)
	run(150)
	m.Check(ctx, t, p, "all up")
	r.down(ctx, cl, 2)
	run(100)
	m.Check(ctx, t, p, "osd.2 down")
	r.up(2)
	waitClean(ctx, t, cl, p.ID())
	r.down(ctx, cl, 0)
	r.down(ctx, cl, 1)
	if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": "data", "key": "min_size", "value": "1"}); err != nil {
		t.Fatal(err)
	}
	m.Check(ctx, t, p, "osd.2 alone after catching up")
	r.up(0)
	r.up(1)
	waitClean(ctx, t, cl, p.ID())
	checkUsage(ctx, t, cl, p, m, "with snapshots")
	// trimming: every snap removed, every clone goes and its blocks with it
	m.RemoveAllSnaps(ctx, t, p)
	waitClean(ctx, t, cl, p.ID()) // snaptrim_wait, snaptrim, then clean
	m.CheckNoClones(ctx, t, p)
	m.Check(ctx, t, p, "after trimming")
	checkUsage(ctx, t, cl, p, m, "after trimming")
	checkNoSnapLeft(t, r.stores)
	for i, s := range r.stores { // and their blocks went with them
		if blocks, _ := s.SharedBlocks(); blocks != 0 {
			t.Fatalf("osd.%d: %d blocks still shared after every clone was trimmed", i, blocks)
		}
	}
	t.Logf("steps: %v", m.Steps)
}

// snapRig is three OSDs on block stores under one MON, for the snapshot
// model's tests; they stop when the test ends.
type snapRig struct {
	a      string // the MON's address
	start  func(dir, extraConf string, dataCache int64) (*osd.OSD, *objectstore.BlockStore)
	dirs   []string
	osds   []*osd.OSD
	stores []*objectstore.BlockStore
	t      *testing.T
}

func newSnapRig(t *testing.T) *snapRig {
	r := &snapRig{t: t, dirs: []string{t.TempDir(), t.TempDir(), t.TempDir()}, osds: make([]*osd.OSD, 3), stores: make([]*objectstore.BlockStore, 3)}
	r.a, r.start = blockMonWith(t)
	for i := range r.osds {
		r.up(i)
	}
	t.Cleanup(func() {
		for _, o := range r.osds {
			o.Close()
		}
	})
	return r
}

// add starts one more OSD on a store of its own (the next id).
func (r *snapRig) add() {
	r.dirs = append(r.dirs, r.t.TempDir())
	r.osds, r.stores = append(r.osds, nil), append(r.stores, nil)
	r.up(len(r.osds) - 1)
}

// up starts osd.i on its store.
func (r *snapRig) up(i int) { r.osds[i], r.stores[i] = r.start(r.dirs[i], "", 0) }

// down stops osd.i and marks it down.
func (r *snapRig) down(ctx context.Context, cl *client.Conn, i int) {
	r.osds[i].Close()
	if _, err := cl.MonCommand(ctx, "osd down", map[string]string{"ids": strconv.Itoa(i)}); err != nil {
		r.t.Fatal(err)
	}
}

// snapRun is a snapshot model of 8 objects of up to maxSize bytes on p,
// seeded by the process id (logged), and the function that runs n of its
// random steps.
func snapRun(ctx context.Context, t *testing.T, p *client.Pool, maxSize int) (*snapmodel.Model, func(n int)) {
	seed := int64(os.Getpid())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	m := snapmodel.New(8, maxSize)
	return m, func(n int) {
		for range n {
			m.Step(ctx, t, rng, p)
		}
	}
}

// TestSnapshotErrors: bad snapshot requests fail with a clear error and
// change nothing.
func TestSnapshotErrors(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, p := c.pool(ctx, "data")
	if err := p.WriteFull(ctx, "x", []byte("head")); err != nil {
		t.Fatal(err)
	}
	id, err := p.SelfManagedSnapCreate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := p.WithSnapContext(id, []uint64{id})
	if err := w.WriteFull(ctx, "x", []byte("after")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		err  error
		want error
	}{
		{"write at a snap", p.AtSnap(id).WriteFull(ctx, "x", []byte("no")), osdop.ErrReadOnly},
		{"read at an unknown snap", func() error { _, err := p.AtSnap(id+5).Read(ctx, "x", 0, 0); return err }(), osdop.ErrNotFound},
		{"rollback to an unknown snap", p.Rollback(ctx, "x", id+5), osdop.ErrNotFound},
		{"snap context newer than the pool's", p.WithSnapContext(id+5, []uint64{id + 5}).WriteFull(ctx, "x", []byte("no")), osdop.ErrInvalid},
		{"snaps out of order", p.WithSnapContext(id, []uint64{1, id}).WriteFull(ctx, "x", []byte("no")), osdop.ErrInvalid},
		{"pool snapshot in a self-managed pool", p.SnapCreate(ctx, "s"), nil},
	} {
		if c.want == nil {
			if c.err == nil {
				t.Fatalf("%s: accepted", c.what)
			}
			continue
		}
		if !errors.Is(c.err, c.want) {
			t.Fatalf("%s: %v, want %v", c.what, c.err, c.want)
		}
	}
	if err := p.SelfManagedSnapRemove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := p.Rollback(ctx, "x", id); !errors.Is(err, osdop.ErrNotFound) {
		t.Fatalf("rollback to a removed snap: %v", err)
	}
	if got, err := p.Read(ctx, "x", 0, 0); err != nil || string(got) != "after" {
		t.Fatalf("after the refused requests: %q %v", got, err)
	}
}

// checkUsage compares the pool's statistics (its PGs' as their primaries
// report them) with what the model says they should count.
func checkUsage(ctx context.Context, t *testing.T, cl *client.Conn, p *client.Pool, m *snapmodel.Model, stage string) {
	t.Helper()
	wantObjects, wantBytes := m.Usage(ctx, t, p)
	var objects, bytes int64
	for o := range cl.Map().OSDs {
		st, err := cl.OSDStats(ctx, int32(o))
		if err != nil {
			t.Fatal(err)
		}
		for _, pg := range st.PGs {
			if strings.HasPrefix(pg.PGID, strconv.FormatInt(p.ID(), 10)+".") {
				objects, bytes = objects+pg.Objects, bytes+pg.Bytes
			}
		}
	}
	if objects != wantObjects || bytes != wantBytes {
		t.Fatalf("%s: pool statistics count %d objects, %d bytes; want %d, %d", stage, objects, bytes, wantObjects, wantBytes)
	}
}
