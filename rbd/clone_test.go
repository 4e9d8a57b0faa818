package rbd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/rbd"
)

// TestClones runs layering on three layouts (the clone's; the parent is
// always plain): a protected snapshot cloned into the parent's pool and
// another, random writes, discards, resizes and snapshots on a clone
// checked against a model, a clone of a clone, copy-up by two writers at
// once, flatten, and the rules that keep a parent while clones need it.
func TestClones(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  rbd.Options
		ec   bool
	}{
		{"plain", rbd.Options{Features: clsrbd.FeatureLayering}, false}, // no exclusive lock: copy-ups race
		{"striped", rbd.Options{Order: 20, StripeUnit: 64 << 10, StripeCount: 4}, false},
		{"ec-data-pool", rbd.Options{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cl, p := cluster(t, ctx, tc.ec)
			if _, err := cl.MonCommand(ctx, "pool create", map[string]string{"name": "rbd2", "size": "3", "pg_num": "8"}); err != nil {
				t.Fatal(err)
			}
			if tc.ec {
				if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": "ecdata", "key": "allow_ec_overwrites", "value": "true"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := cl.RefreshMap(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.ec {
				dp, err := cl.Pool(ctx, "ecdata")
				if err != nil {
					t.Fatal(err)
				}
				tc.opt.DataPool = dp
			}
			p2, err := cl.Pool(ctx, "rbd2")
			if err != nil {
				t.Fatal(err)
			}
			runClones(ctx, t, p, p2, tc.opt)
		})
	}
}

func runClones(ctx context.Context, t *testing.T, p, p2 *client.Pool, opt rbd.Options) {
	rng, must, open := harness(ctx, t)
	// the parent: 2 MiB objects, 9 MiB and a bit, random data in places
	const size = 9<<20 + 12345
	must(rbd.Create(ctx, p, "base", rbd.Options{Size: size, Order: 21}))
	base := open(p, "base", "")
	want := make([]byte, size)
	for range 12 {
		off := rng.Intn(size)
		buf := make([]byte, min(size-off, 1+rng.Intn(1<<20)))
		rng.Read(buf)
		must(base.WriteAt(ctx, buf, uint64(off)))
		copy(want[off:], buf)
	}
	must(base.SnapCreate(ctx, "s1"))
	s1 := open(p, "base", "s1")
	if err := rbd.Clone(ctx, s1, p, "c1", opt); !errors.Is(err, rbd.ErrInvalid) {
		t.Fatalf("clone of an unprotected snapshot: %v", err)
	}
	if err := rbd.Clone(ctx, base, p, "c1", opt); !errors.Is(err, rbd.ErrInvalid) {
		t.Fatalf("clone of an image's head: %v", err)
	}
	must(base.SnapProtect(ctx, "s1", true))
	must(rbd.Clone(ctx, s1, p, "c1", opt))
	must(rbd.Clone(ctx, s1, p2, "c2", opt))
	// the parent changes after the snapshot: no clone sees it
	must(base.WriteAt(ctx, bytes.Repeat([]byte{9}, 3<<20), 1<<20))

	c1, c2 := open(p, "c1", ""), open(p2, "c2", "")
	in := c1.Info()
	if in.Parent == nil || *in.Parent != (rbd.ParentInfo{Pool: p.Name(), Image: "base", Snap: "s1", Overlap: size}) || in.Size != size {
		t.Fatalf("clone info: size %d, parent %+v", in.Size, in.Parent)
	}
	if u, err := c1.Used(ctx); err != nil || u != 0 {
		t.Fatalf("a new clone uses %d bytes (%v)", u, err)
	}
	check(ctx, t, rng, c1, want, "new clone")
	check(ctx, t, rng, c2, want, "new clone in another pool")
	if kids, err := s1.Children(ctx); err != nil || fmt.Sprint(kids) != fmt.Sprintf("[%s/c1 %s/c2]", p.Name(), p2.Name()) {
		t.Fatalf("children: %v %v", kids, err)
	}
	if err := base.SnapProtect(ctx, "s1", false); !errors.Is(err, rbd.ErrBusy) {
		t.Fatalf("unprotect with clones: %v", err)
	}
	if err := base.SnapRemove(ctx, "s1"); !errors.Is(err, rbd.ErrBusy) {
		t.Fatalf("snap rm with clones: %v", err)
	}

	// two writers copy up the same objects at once: both writes land
	other := open(p, "c1", "")
	m := model{head: slices.Clone(want), snaps: map[string][]byte{}}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, img := range []*rbd.Image{c1, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range uint64(4) {
				if errs[i] = img.WriteAt(ctx, bytes.Repeat([]byte{byte(i + 1)}, 100), obj<<21+uint64(i)*4096); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	must(errors.Join(errs...))
	for obj := range 4 {
		for i := range 2 {
			copy(m.head[obj<<21+i*4096:], bytes.Repeat([]byte{byte(i + 1)}, 100))
		}
	}
	check(ctx, t, rng, c1, m.head, "after concurrent copy-ups")

	// random changes to the clone, with snapshots of it
	for step := range 60 {
		size := uint64(len(m.head))
		switch k := rng.Intn(20); {
		case k < 8:
			off := uint64(rng.Int63n(int64(size)))
			buf := make([]byte, min(size-off, 1+uint64(rng.Intn(1<<20))))
			rng.Read(buf)
			must(c1.WriteAt(ctx, buf, off))
			copy(m.head[off:], buf)
		case k < 12:
			off := uint64(rng.Int63n(int64(size)))
			n := min(size-off, 1+uint64(rng.Intn(5<<20)))
			must(c1.Discard(ctx, off, n))
			clear(m.head[off : off+n])
		case k < 14:
			next := uint64(4<<20 + rng.Intn(10<<20))
			must(c1.Resize(ctx, next, true))
			grown := make([]byte, next)
			copy(grown, m.head)
			m.head = grown
		case k < 16:
			name := fmt.Sprintf("cs%d", step)
			must(c1.SnapCreate(ctx, name))
			m.snaps[name] = slices.Clone(m.head)
		case k < 17 && len(m.snaps) > 0:
			name := anySnap(rng, m.snaps)
			must(c1.SnapRollback(ctx, name))
			m.head = slices.Clone(m.snaps[name])
		default:
			check(ctx, t, rng, c1, m.head, fmt.Sprintf("clone, step %d", step))
		}
	}
	check(ctx, t, rng, c1, m.head, "clone")
	if c1.Info().Features&clsrbd.FeatureObjectMap != 0 {
		checkMap(ctx, t, c1, "clone")
	}
	check(ctx, t, rng, c2, want, "the other clone, untouched")
	check(ctx, t, rng, s1, want, "the parent's snapshot, under clones")
	for name, w := range m.snaps {
		check(ctx, t, rng, open(p, "c1", name), w, "clone snapshot "+name)
	}

	// a clone of the clone reads through two parents
	must(c1.SnapCreate(ctx, "mid"))
	m.snaps["mid"] = slices.Clone(m.head)
	must(c1.SnapProtect(ctx, "mid", true))
	mid := open(p, "c1", "mid")
	must(rbd.Clone(ctx, mid, p2, "c3", rbd.Options{}))
	c3 := open(p2, "c3", "")
	check(ctx, t, rng, c3, m.snaps["mid"], "clone of a clone")
	must(c3.WriteAt(ctx, []byte("grandchild"), 5))
	c3want := slices.Clone(m.snaps["mid"])
	copy(c3want[5:], "grandchild")

	// flatten: the head leaves the parent, its snapshots do not
	var last atomic.Uint64
	must(c1.Flatten(ctx, func(done, total uint64) { last.Store(total) }))
	if last.Load() == 0 || c1.Info().Parent != nil || other.Info().Parent != nil {
		t.Fatalf("after flatten: progress total %d, parent %+v, another client's view %+v", last.Load(), c1.Info().Parent, other.Info().Parent)
	}
	check(ctx, t, rng, c1, m.head, "flattened clone")
	check(ctx, t, rng, c3, c3want, "clone of a flattened clone's snapshot")
	if kids, err := s1.Children(ctx); err != nil || len(kids) != 2 {
		t.Fatalf("children after a flatten that left snapshots: %v %v", kids, err)
	}
	if err := c1.SnapRollback(ctx, "mid"); !errors.Is(err, rbd.ErrInvalid) {
		t.Fatalf("rollback of a flattened clone to a snapshot before: %v", err)
	}
	if err := c1.Flatten(ctx, nil); !errors.Is(err, rbd.ErrInvalid) {
		t.Fatalf("flatten of an image that is not a clone: %v", err)
	}

	// tear down in the order the rules allow: c3, mid, the other
	// snapshots of c1 (c1 leaves s1's children), c2, then s1
	if err := c1.SnapProtect(ctx, "mid", false); !errors.Is(err, rbd.ErrBusy) {
		t.Fatalf("unprotect of a snapshot of a flattened clone, with a clone: %v", err)
	}
	c3.Close(ctx)
	must(rbd.Remove(ctx, p2, "c3"))
	must(c1.SnapProtect(ctx, "mid", false))
	for _, s := range c1.Snapshots() {
		must(c1.SnapRemove(ctx, s.Name))
	}
	if kids, err := s1.Children(ctx); err != nil || fmt.Sprint(kids) != fmt.Sprintf("[%s/c2]", p2.Name()) {
		t.Fatalf("children once the flattened clone's snapshots are gone: %v %v", kids, err)
	}
	c2.Close(ctx)
	must(rbd.Remove(ctx, p2, "c2"))
	must(base.SnapProtect(ctx, "s1", false))
	must(base.SnapRemove(ctx, "s1"))
	check(ctx, t, rng, c1, m.head, "flattened clone after its parent's snapshot is gone")
}
