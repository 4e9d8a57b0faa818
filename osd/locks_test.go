package osd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdop"
)

// TestBrokenLockAndBlocklist: a second client finds the lock held, breaks
// it and blocklists the holder, which can then neither write nor read;
// another instance of the same entity is not fenced; once the entry is
// removed the first client writes again.
func TestBrokenLockAndBlocklist(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clA, pA := c.pool(ctx, "data")
	clB := c.Client(ctx)
	pB, err := clB.Pool(ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	if clA.Instance() == clB.Instance() {
		t.Fatalf("two connections share the instance name %s", clA.Instance())
	}
	if err := pA.LockExclusive(ctx, "img", "excl", "a-cookie", "writer A", 0, false); err != nil {
		t.Fatal(err)
	}
	if err := pA.WriteFull(ctx, "img", []byte("from A")); err != nil {
		t.Fatal(err)
	}
	if err := pB.LockExclusive(ctx, "img", "excl", "b-cookie", "writer B", 0, false); !errors.Is(err, osdop.ErrBusy) {
		t.Fatalf("lock held by A: %v, want busy", err)
	}
	info, err := pB.LockInfo(ctx, "img", "excl")
	if err != nil || len(info.Lockers) != 1 || info.Lockers[0].Name != clA.Instance() || info.Lockers[0].Cookie != "a-cookie" {
		t.Fatalf("lock info: %+v, %v", info, err)
	}
	// B fences A, then takes the lock over
	if err := clB.BlocklistAdd(ctx, info.Lockers[0].Name, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := pB.BreakLock(ctx, "img", "excl", info.Lockers[0].Name, info.Lockers[0].Cookie); err != nil {
		t.Fatal(err)
	}
	if err := pB.LockExclusive(ctx, "img", "excl", "b-cookie", "writer B", 0, false); err != nil {
		t.Fatal(err)
	}
	if err := pA.WriteFull(ctx, "img", []byte("late write from A")); !errors.Is(err, client.ErrBlocklisted) {
		t.Fatalf("fenced client's write: %v, want blocklisted", err)
	}
	if _, err := pA.Read(ctx, "img", 0, 0); !errors.Is(err, client.ErrBlocklisted) {
		t.Fatalf("fenced client's read: %v, want blocklisted", err)
	}
	if err := pA.Unlock(ctx, "img", "excl", "a-cookie"); !errors.Is(err, client.ErrBlocklisted) {
		t.Fatalf("fenced client's unlock: %v, want blocklisted", err)
	}
	if got, err := pB.Read(ctx, "img", 0, 0); err != nil || string(got) != "from A" {
		t.Fatalf("after the fence: %q %v", got, err)
	}
	// the same entity, another instance: not fenced
	pC, err := c.Client(ctx).Pool(ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	if err := pC.WriteFull(ctx, "other", []byte("C")); err != nil {
		t.Fatalf("another instance of the entity: %v", err)
	}
	if err := clB.BlocklistRm(ctx, clA.Instance()); err != nil {
		t.Fatal(err)
	}
	if err := clB.BlocklistRm(ctx, clA.Instance()); !errors.Is(err, monc.ErrNotFound) {
		t.Fatalf("removing an absent entry: %v, want not found", err)
	}
	if err := pB.Unlock(ctx, "img", "excl", "b-cookie"); err != nil {
		t.Fatal(err)
	}
	if err := pA.WriteFull(ctx, "img", []byte("A again")); err != nil {
		t.Fatalf("after the entry was removed: %v", err)
	}
	// by address: every client connecting from it (these connect from 127.0.0.1)
	if err := clB.BlocklistAdd(ctx, "127.0.0.1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := pB.WriteFull(ctx, "img", []byte("B")); !errors.Is(err, client.ErrBlocklisted) {
		t.Fatalf("a client from a blocklisted address: %v, want blocklisted", err)
	}
	if err := clB.BlocklistRm(ctx, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyClassMethods: a method registered as a read (lock.get_info)
// runs on the read path — the object's version does not move, as it
// would for a write — and answers on an absent object as the method
// decides; a write method sent as a read is refused.
func TestReadOnlyClassMethods(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, p := c.pool(ctx, "data")
	if err := p.LockExclusive(ctx, "obj", "l", "cookie", "", 0, false); err != nil {
		t.Fatal(err)
	}
	before, err := p.Stat(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if info, err := p.LockInfo(ctx, "obj", "l"); err != nil || len(info.Lockers) != 1 {
			t.Fatalf("lock info: %+v %v", info, err)
		}
	}
	if after, err := p.Stat(ctx, "obj"); err != nil || after.Version != before.Version {
		t.Fatalf("version %d after three reads through a class method, %d before (%v)", after.Version, before.Version, err)
	}
	if _, err := p.Operate(ctx, "obj", []osdop.Op{{Code: osdop.CallRead, Name: "lock.lock", Data: []byte(`{"name":"l"}`)}}); !errors.Is(err, osdop.ErrUnsupported) {
		t.Fatalf("a write method called as a read: %v", err)
	}
}
