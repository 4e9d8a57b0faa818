package rbd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/rbd"
)

// TestObjectMap follows an image's object map (8 objects of 1 MiB)
// through writes, a discard, a snapshot, a second writer, and the
// feature disabled (the map objects go) and enabled again (the map is
// built from the objects): after each, the map is exactly the objects
// that exist, and du counts them without asking the OSDs.
func TestObjectMap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, _, p := clusterConf(t, ctx, false, "")
	_, must, open := harness(ctx, t)
	must(rbd.Create(ctx, p, "img", rbd.Options{Size: 8 << 20, Order: 20}))
	img := open(p, "img", "")
	exact := func(img *rbd.Image, used uint64, what string) {
		t.Helper()
		wrong, stale, err := img.CheckObjectMap(ctx)
		if err != nil || len(wrong)+len(stale) > 0 {
			t.Fatalf("%s: map wrong about %v, stale about %v (%v)", what, wrong, stale, err)
		}
		if u, err := img.Used(ctx); err != nil || u != used {
			t.Fatalf("%s: du %d (%v), want %d", what, u, err, used)
		}
	}
	exact(img, 0, "a new image")
	one := bytes.Repeat([]byte{1}, 4096)
	must(img.WriteAt(ctx, one, 1<<20+5))
	must(img.WriteAt(ctx, one, 5<<20))
	exact(img, 2<<20, "two objects written") // whole objects, as rbd du with fast-diff
	must(img.Discard(ctx, 5<<20, 1<<20))
	exact(img, 1<<20, "one discarded")
	must(img.Discard(ctx, 6<<20, 1<<20)) // absent: nothing sent, nothing marked
	exact(img, 1<<20, "an absent object discarded")

	must(img.SnapCreate(ctx, "s1"))
	must(img.WriteAt(ctx, one, 2<<20))
	exact(open(p, "img", "s1"), 1<<20, "the snapshot")
	exact(img, 2<<20, "written after the snapshot")

	// another client takes the lock and keeps the map
	conn := c.Client(ctx)
	p2, err := conn.Pool(ctx, "rbd")
	must(err)
	other := open(p2, "img", "")
	must(other.WriteAt(ctx, one, 3<<20))
	if !other.LockOwner() || img.LockOwner() {
		t.Fatal("the lock did not move to the second writer")
	}
	exact(img, 3<<20, "a second writer")
	buf := make([]byte, 4096)
	must(img.ReadAt(ctx, buf, 3<<20)) // the first writer's map is gone with the lock
	if !bytes.Equal(buf, one) {
		t.Fatal("a read after another client wrote misses its write")
	}

	// disabled: the maps go; a write untracked; enabled: built anew
	must(other.UpdateFeatures(ctx, clsrbd.FeatureObjectMap, false))
	if f := img.Info().Features; f&(clsrbd.FeatureObjectMap|clsrbd.FeatureFastDiff) != 0 {
		t.Fatalf("features after disabling object-map: %#x", f)
	}
	for _, oid := range []string{clsrbd.ObjectMapPrefix + imgID(ctx, t, p, "img")} {
		if _, err := p.Stat(ctx, oid); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("%s after object-map was disabled: %v", oid, err)
		}
	}
	must(img.WriteAt(ctx, one, 7<<20))
	must(img.SnapCreate(ctx, "s2")) // without a map, as s1's went with the feature
	must(img.UpdateFeatures(ctx, clsrbd.FeatureObjectMap|clsrbd.FeatureFastDiff, true))
	exact(img, 4<<20, "object-map enabled again")
	// removing s1 merges nothing into s2, which has no map: none is made
	// up for it (an all-absent one would make diffs from s2 miss
	// everything), and diffs from s2 ask the OSDs
	must(img.SnapRemove(ctx, "s1"))
	s2map := fmt.Sprintf("%s%s.%016x", clsrbd.ObjectMapPrefix, imgID(ctx, t, p, "img"), img.Snapshots()[0].ID)
	if _, err := p.Stat(ctx, s2map); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("a snapshot older than the map has a map after the one before it was removed: %v", err)
	}
	must(img.WriteAt(ctx, one, 6<<20))
	if exts, err := img.Changed(ctx, "s2"); err != nil || len(exts) != 1 || exts[0].Off != 6<<20 || exts[0].Len != 4096 {
		t.Fatalf("diff from a snapshot without a map: %v %v", exts, err)
	}
	must(other.WriteAt(ctx, one, 4<<20))
	exact(img, 6<<20, "written after it was enabled")
}
