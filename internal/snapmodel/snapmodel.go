// Package snapmodel is a test model of a pool with self-managed
// snapshots: random changes applied both to a real pool (through
// client.Pool) and to an in-memory model of every object at the head and
// at every live snap, and a check that reads everything back. The OSD's
// in-process tests and the end-to-end tests (real daemons, kill -9) share
// it.
package snapmodel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/osdop"
)

// Model is what the pool's objects should hold: the heads (nil: absent)
// and, for every live snap, the heads as they were when it was taken.
type Model struct {
	Objects int // objects o0 … o(Objects-1)
	MaxSize int // the largest size a write or truncate makes, in bytes
	head    map[string][]byte
	snaps   map[uint64]map[string][]byte
	seq     uint64   // the newest snap id allocated
	live    []uint64 // live snap ids, newest first
	gone    []uint64 // removed snap ids
	// Steps counts the changes applied, by kind.
	Steps map[string]int
}

// New is a model of an empty pool of objects objects of up to maxSize
// bytes.
func New(objects, maxSize int) *Model {
	return &Model{Objects: objects, MaxSize: maxSize, head: map[string][]byte{}, snaps: map[uint64]map[string][]byte{}, Steps: map[string]int{}}
}

func (m *Model) take(id uint64) {
	m.snaps[id], m.seq = maps(m.head), id
	m.live = append([]uint64{id}, m.live...)
}

func maps(h map[string][]byte) map[string][]byte {
	at := make(map[string][]byte, len(h))
	for k, v := range h {
		at[k] = v
	}
	return at
}

// Check reads every object at the head and at every live snap, and reads
// at every removed snap (which must fail with osdop.ErrNotFound),
// through p.
func (m *Model) Check(ctx context.Context, t testing.TB, p *client.Pool, stage string) {
	t.Helper()
	verify := func(p *client.Pool, want map[string][]byte, at string) {
		t.Helper()
		for i := range m.Objects {
			oid := "o" + strconv.Itoa(i)
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

// Step applies one random change to the pool and the model: a write,
// overwrite, truncate or removal of an object, a snap taken or removed,
// or a rollback. Writes carry the model's SnapContext.
func (m *Model) Step(ctx context.Context, t testing.TB, rng *rand.Rand, p *client.Pool) {
	t.Helper()
	oid := "o" + strconv.Itoa(rng.Intn(m.Objects))
	w := p.WithSnapContext(m.seq, m.live)
	cur := m.head[oid]
	var err error
	var kind string
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
		m.Steps["snap create"]++
		return
	case k < 3 && len(m.live) > 0:
		id := m.live[rng.Intn(len(m.live))]
		if err := p.SelfManagedSnapRemove(ctx, id); err != nil {
			t.Fatal(err)
		}
		m.live = slices.DeleteFunc(m.live, func(s uint64) bool { return s == id })
		delete(m.snaps, id)
		m.gone = append(m.gone, id)
		m.Steps["snap remove"]++
		return
	case k < 4 && len(m.live) > 0:
		id := m.live[rng.Intn(len(m.live))]
		kind, err = "rollback", w.Rollback(ctx, oid, id)
		if cur == nil && m.snaps[id][oid] == nil && errors.Is(err, osdop.ErrNotFound) {
			err = nil // absent then and now: nothing to roll back
		}
		m.head[oid] = m.snaps[id][oid]
	case k < 6:
		if cur == nil {
			return
		}
		kind, err = "remove", w.Remove(ctx, oid)
		m.head[oid] = nil
	case k < 8:
		n := uint64(rng.Intn(m.MaxSize / 2))
		kind, err = "truncate", w.Truncate(ctx, oid, n)
		next := make([]byte, n)
		copy(next, cur)
		m.head[oid] = next
	case k < 11:
		data := make([]byte, 1+rng.Intn(m.MaxSize))
		rng.Read(data)
		kind, err = "writefull", w.WriteFull(ctx, oid, data)
		m.head[oid] = data
	default:
		off := uint64(rng.Intn(m.MaxSize * 2 / 3))
		data := make([]byte, 1+rng.Intn(70_000))
		rng.Read(data)
		kind, err = "write", w.Write(ctx, oid, data, off)
		next := make([]byte, max(uint64(len(cur)), off+uint64(len(data))))
		copy(next, cur)
		copy(next[off:], data)
		m.head[oid] = next
	}
	if err != nil {
		t.Fatalf("%s %s: %v", kind, oid, err)
	}
	m.Steps[kind]++
}

// RemoveAllSnaps removes every live snap, as the pool's trimmer will
// then remove every clone.
func (m *Model) RemoveAllSnaps(ctx context.Context, t testing.TB, p *client.Pool) {
	t.Helper()
	for _, id := range m.live {
		if err := p.SelfManagedSnapRemove(ctx, id); err != nil {
			t.Fatal(err)
		}
		delete(m.snaps, id)
		m.gone = append(m.gone, id)
	}
	m.live = nil
}

// CheckNoClones fails unless no object has a clone left, and an object
// removed at the head is gone (not kept as a whiteout): what trimming
// every snap leaves.
func (m *Model) CheckNoClones(ctx context.Context, t testing.TB, p *client.Pool) {
	t.Helper()
	for i := range m.Objects {
		oid := "o" + strconv.Itoa(i)
		ss, err := p.ListSnaps(ctx, oid)
		if m.head[oid] == nil {
			if !errors.Is(err, osdop.ErrNotFound) {
				t.Fatalf("%s, removed, after trimming: %+v, %v", oid, ss, err)
			}
			continue
		}
		if err != nil || len(ss.Clones) != 0 || !ss.HeadExists {
			t.Fatalf("%s after trimming: %+v, %v", oid, ss, err)
		}
	}
}

// Usage is what the pool's statistics should count: every head and
// clone as an object, and the heads' bytes plus the bytes each clone
// does not share with the next newer clone or the head (Ceph's num_bytes
// with clones), the clones as the OSDs list them.
func (m *Model) Usage(ctx context.Context, t testing.TB, p *client.Pool) (objects, bytes int64) {
	t.Helper()
	for i := range m.Objects {
		oid := "o" + strconv.Itoa(i)
		if h := m.head[oid]; h != nil {
			objects, bytes = objects+1, bytes+int64(len(h))
		}
		ss, err := p.ListSnaps(ctx, oid)
		if errors.Is(err, osdop.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ss.Clones {
			shared := uint64(0)
			for _, x := range c.Overlap {
				shared += x.Len
			}
			objects, bytes = objects+1, bytes+int64(c.Size-shared)
		}
	}
	return objects, bytes
}
