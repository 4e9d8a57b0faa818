package rbd_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/rbd"
)

// TestExclusiveLock runs the exclusive lock between clients of their
// own (connections, as processes would be): the first writer takes it;
// a second writer asks for it and gets it, the first releasing; two
// writers taking turns lose no write and leave one holder; a holder
// that vanished without releasing (its watch expires: 2 s here) is
// blocklisted and its lock broken; an administrator's lock (rbd lock
// add) makes writes fail with ErrBusy instead of being broken; and with
// the feature disabled (after object-map, which needs it) the holder
// lets the lock go and writers write without it.
func TestExclusiveLock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, _, p := clusterConf(t, ctx, false, "osd_client_watch_timeout = 2")
	_, must, _ := harness(ctx, t)
	must(rbd.Create(ctx, p, "img", rbd.Options{Size: 8 << 20, Order: 20}))
	// openAs opens the image through a connection of its own
	openAs := func() (*client.Conn, *rbd.Image) {
		t.Helper()
		conn := c.Client(ctx)
		pool, err := conn.Pool(ctx, "rbd")
		must(err)
		img, err := rbd.Open(ctx, pool, "img", "")
		must(err)
		return conn, img
	}
	lockers := func() []string {
		t.Helper()
		in, err := p.LockInfo(ctx, clsrbd.HeaderObjectPrefix+imgID(ctx, t, p, "img"), rbd.LockName)
		if errors.Is(err, client.ErrNotFound) {
			return nil
		}
		must(err)
		var out []string
		for _, l := range in.Lockers {
			out = append(out, l.Name+" "+l.Cookie)
		}
		return out
	}
	connA, a := openAs()
	connB, b := openAs()
	if f := a.Info().Features; f != rbd.DefaultFeatures {
		t.Fatalf("a new image's features %#x, want %#x", f, rbd.DefaultFeatures)
	}
	if a.LockOwner() || len(lockers()) != 0 {
		t.Fatalf("the lock is held before any write: %v", lockers())
	}
	// reads need no lock; the first write takes it
	must(a.ReadAt(ctx, make([]byte, 10), 0))
	if a.LockOwner() {
		t.Fatal("a read took the lock")
	}
	must(a.WriteAt(ctx, []byte("from a"), 0))
	if l := lockers(); !a.LockOwner() || len(l) != 1 || !strings.HasPrefix(l[0], connA.Instance()+" auto ") {
		t.Fatalf("after a's write: owner %v, lockers %v", a.LockOwner(), l)
	}
	// b asks and gets it; a released it
	must(b.WriteAt(ctx, []byte("from b"), 4096))
	if l := lockers(); a.LockOwner() || !b.LockOwner() || len(l) != 1 || !strings.HasPrefix(l[0], connB.Instance()+" ") {
		t.Fatalf("after b's write: a %v, b %v, lockers %v", a.LockOwner(), b.LockOwner(), l)
	}

	// both write at once, in turns; nothing is lost
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, img := range []*rbd.Image{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 40 {
				block := uint64(2+n*2+i) * 4096
				if errs[i] = img.WriteAt(ctx, bytes.Repeat([]byte{byte(i + 1)}, 4096), block); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	must(errors.Join(errs...))
	got := make([]byte, 82*4096)
	must(a.ReadAt(ctx, got, 0))
	if !bytes.HasPrefix(got, []byte("from a")) || !bytes.HasPrefix(got[4096:], []byte("from b")) {
		t.Fatal("the first two writes are gone")
	}
	for n := range 80 {
		if want := bytes.Repeat([]byte{byte(n%2 + 1)}, 4096); !bytes.Equal(got[(2+n)*4096:(3+n)*4096], want) {
			t.Fatalf("block %d lost its write", 2+n)
		}
	}
	if l := lockers(); len(l) != 1 || a.LockOwner() == b.LockOwner() {
		t.Fatalf("after turns: a %v, b %v, lockers %v", a.LockOwner(), b.LockOwner(), l)
	}

	// a holder that vanishes without releasing: its lock is broken once
	// its watch expires, and it is blocklisted
	connD, d := openAs()
	must(d.WriteAt(ctx, []byte("from d"), 0))
	connD.Close() // no unlock, no unwatch: as a killed process
	must(a.WriteAt(ctx, []byte("after d"), 0))
	if l := lockers(); !a.LockOwner() || len(l) != 1 || !strings.HasPrefix(l[0], connA.Instance()+" ") {
		t.Fatalf("after d vanished: lockers %v", l)
	}
	if err := p.Conn().RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.Conn().Map().InstanceBlocklisted(connD.Instance(), time.Now()) {
		t.Fatalf("%s, whose lock was broken, is not blocklisted", connD.Instance())
	}

	// an administrator's lock is not broken
	must(a.Close(ctx))
	must(p.LockExclusive(ctx, clsrbd.HeaderObjectPrefix+imgID(ctx, t, p, "img"), rbd.LockName, "mylock", "", 0, false))
	if err := b.WriteAt(ctx, []byte("x"), 0); !errors.Is(err, rbd.ErrBusy) {
		t.Fatalf("a write while rbd lock add holds the lock: %v", err)
	}
	must(p.Unlock(ctx, clsrbd.HeaderObjectPrefix+imgID(ctx, t, p, "img"), rbd.LockName, "mylock"))

	// the feature off: the holder releases; writes need no lock
	must(b.WriteAt(ctx, []byte("b again"), 0))
	if !b.LockOwner() {
		t.Fatal("b does not hold the lock after writing")
	}
	_, e := openAs()
	if err := e.UpdateFeatures(ctx, clsrbd.FeatureExclusiveLock, false); !errors.Is(err, rbd.ErrInvalid) {
		t.Fatalf("exclusive-lock disabled under object-map: %v", err)
	}
	must(e.UpdateFeatures(ctx, clsrbd.FeatureObjectMap, false)) // and fast-diff with it
	must(e.UpdateFeatures(ctx, clsrbd.FeatureExclusiveLock, false))
	if b.LockOwner() || len(lockers()) != 0 {
		t.Fatalf("with exclusive-lock disabled: b %v, lockers %v", b.LockOwner(), lockers())
	}
	must(e.WriteAt(ctx, []byte("e"), 0))
	must(b.WriteAt(ctx, []byte("b"), 1))
	if e.LockOwner() || b.LockOwner() || len(lockers()) != 0 {
		t.Fatalf("writes without the feature took the lock: %v", lockers())
	}
	if err := e.UpdateFeatures(ctx, clsrbd.FeatureObjectMap, true); !errors.Is(err, rbd.ErrInvalid) {
		t.Fatalf("object-map without exclusive-lock: %v", err)
	}
	if err := e.UpdateFeatures(ctx, clsrbd.FeatureStriping, false); !errors.Is(err, rbd.ErrInvalid) {
		t.Fatalf("disable striping: %v", err)
	}
	must(e.UpdateFeatures(ctx, clsrbd.FeatureExclusiveLock, true))
	must(e.WriteAt(ctx, []byte("e"), 0))
	if !e.LockOwner() {
		t.Fatal("with exclusive-lock enabled again, a write did not take it")
	}
}

// imgID is image name's id.
func imgID(ctx context.Context, t *testing.T, p *client.Pool, name string) string {
	t.Helper()
	b, err := p.Read(ctx, clsrbd.IDObjectPrefix+name, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
