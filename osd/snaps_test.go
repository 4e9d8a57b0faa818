package osd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/osd"
	"github.com/shoal-project/shoal/osdop"
)

// snapModel is what a pool's objects should hold: the heads (nil:
// absent) and, for every live snap, the heads as they were when it was
// taken.
type snapModel struct {
	head  map[string][]byte
	snaps map[uint64]map[string][]byte
	seq   uint64   // newest snap id allocated
	live  []uint64 // live snap ids, newest first
	gone  []uint64 // removed snap ids
}

func (m *snapModel) take(id uint64) {
	at := map[string][]byte{}
	for k, v := range m.head {
		at[k] = v
	}
	m.snaps[id], m.seq = at, id
	m.live = append([]uint64{id}, m.live...)
}

// check reads every object at the head and at every live snap, and
// every removed snap, through p.
func (m *snapModel) check(ctx context.Context, t *testing.T, p *client.Pool, stage string) {
	t.Helper()
	verify := func(p *client.Pool, want map[string][]byte, at string) {
		t.Helper()
		for oid := range m.head {
			got, err := p.Read(ctx, oid, 0, 0)
			if w := want[oid]; w == nil {
				if !errors.Is(err, osdop.ErrNotFound) {
					t.Fatalf("%s: %s at %s: %v (%d bytes), want not found", stage, oid, at, err, len(got))
				}
			} else if err != nil || !bytes.Equal(got, w) {
				t.Fatalf("%s: %s at %s: %v (%d bytes, want %d)", stage, oid, at, err, len(got), len(w))
			}
		}
	}
	verify(p, m.head, "head")
	for id, at := range m.snaps {
		verify(p.AtSnap(id), at, fmt.Sprintf("snap %d", id))
	}
	for _, id := range m.gone {
		if _, err := p.AtSnap(id).Read(ctx, "o0", 0, 0); !errors.Is(err, osdop.ErrNotFound) {
			t.Fatalf("%s: read at removed snap %d: %v", stage, id, err)
		}
	}
}

// step applies one random change to the pool and the model: a write,
// overwrite, append, truncate or removal of an object, a snap taken or
// removed, or a rollback.
func (m *snapModel) step(ctx context.Context, t *testing.T, rng *rand.Rand, p *client.Pool) {
	t.Helper()
	oid := "o" + strconv.Itoa(rng.Intn(8))
	w := p.WithSnapContext(m.seq, m.live)
	cur := m.head[oid]
	var err error
	switch k := rng.Intn(20); {
	case k < 2:
		id, err := p.SelfManagedSnapCreate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if id <= m.seq {
			t.Fatalf("snap id %d after %d", id, m.seq)
		}
		m.take(id)
		return
	case k < 3 && len(m.live) > 0:
		id := m.live[rng.Intn(len(m.live))]
		if err := p.SelfManagedSnapRemove(ctx, id); err != nil {
			t.Fatal(err)
		}
		m.live = slices.DeleteFunc(m.live, func(s uint64) bool { return s == id })
		delete(m.snaps, id)
		m.gone = append(m.gone, id)
		return
	case k < 4 && len(m.live) > 0:
		id := m.live[rng.Intn(len(m.live))]
		err = w.Rollback(ctx, oid, id)
		if cur == nil && m.snaps[id][oid] == nil && errors.Is(err, osdop.ErrNotFound) {
			err = nil // absent then and now: nothing to roll back
		}
		m.head[oid] = m.snaps[id][oid]
	case k < 6:
		if cur == nil {
			return
		}
		err = w.Remove(ctx, oid)
		m.head[oid] = nil
	case k < 8:
		n := uint64(rng.Intn(300_000))
		err = w.Truncate(ctx, oid, n)
		next := make([]byte, n)
		copy(next, cur)
		m.head[oid] = next
	case k < 11:
		data := make([]byte, 1+rng.Intn(600_000))
		rng.Read(data)
		err = w.WriteFull(ctx, oid, data)
		m.head[oid] = data
	default:
		off := uint64(rng.Intn(400_000))
		data := make([]byte, 1+rng.Intn(70_000))
		rng.Read(data)
		err = w.Write(ctx, oid, data, off)
		next := make([]byte, max(uint64(len(cur)), off+uint64(len(data))))
		copy(next, cur)
		copy(next[off:], data)
		m.head[oid] = next
	}
	if err != nil {
		t.Fatalf("%s: %v", oid, err)
	}
}

// TestSelfManagedSnapshots runs random writes, truncates, removals, snap
// creations and removals and rollbacks against a model on three OSDs on
// block stores, reading every object at every snap along the way; one
// OSD misses part of it and catches up (its clones come with their
// heads), then serves everything alone.
func TestSelfManagedSnapshots(t *testing.T) {
	a, start := blockMon(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	osds := []*osd.OSD{start(dirs[0]), start(dirs[1]), start(dirs[2])}
	defer func() {
		for _, o := range osds {
			o.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl, p := dataPool(ctx, t, a)
	seed := int64(os.Getpid())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	m := &snapModel{head: map[string][]byte{}, snaps: map[uint64]map[string][]byte{}}
	run := func(n int) {
		for i := 0; i < n; i++ {
			m.step(ctx, t, rng, p)
		}
	}
	run(150)
	m.check(ctx, t, p, "all up")
	osds[2].Close()
	if _, err := cl.MonCommand(ctx, "osd down", map[string]string{"ids": "2"}); err != nil {
		t.Fatal(err)
	}
	run(100)
	m.check(ctx, t, p, "osd.2 down")
	osds[2] = start(dirs[2])
	waitClean(ctx, t, cl, p.ID())
	for _, i := range []int{0, 1} {
		osds[i].Close()
		if _, err := cl.MonCommand(ctx, "osd down", map[string]string{"ids": strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": "data", "key": "min_size", "value": "1"}); err != nil {
		t.Fatal(err)
	}
	m.check(ctx, t, p, "osd.2 alone after catching up")
	osds[0], osds[1] = start(dirs[0]), start(dirs[1])
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
