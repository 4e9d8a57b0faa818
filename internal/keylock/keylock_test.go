package keylock_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/shoal-project/shoal/internal/keylock"
)

// keys lists the keys tb holds or waits for.
func keys(mu *sync.Mutex, tb *keylock.Table) map[string]bool {
	mu.Lock()
	defer mu.Unlock()
	out := map[string]bool{}
	tb.Each(func(k string) { out[k] = true })
	return out
}

// lockAsync takes key in mode m in a goroutine: the channel is closed once
// it holds the lock, and release gives it back (after it was granted).
func lockAsync(tb *keylock.Table, key string, m keylock.Mode) (granted chan struct{}, release func()) {
	granted = make(chan struct{})
	rel := make(chan func(), 1)
	go func() {
		r := tb.Lock(key, m)
		rel <- r
		close(granted)
	}()
	return granted, func() {
		<-granted
		(<-rel)()
	}
}

func held(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// An exclusive lock keeps out every other holder of its key and no holder
// of another key; reads share with reads and writes with writes, but not
// with each other; a key is listed while held and gone once its last
// holder releases it.
func TestModes(t *testing.T) {
	var mu sync.Mutex
	tb := keylock.New(&mu)
	r1 := tb.Lock("a", keylock.Read)
	r2 := tb.Lock("a", keylock.Read) // shared with r1: does not wait
	other := tb.Lock("b", keylock.Excl)
	if k := keys(&mu, tb); !k["a"] || !k["b"] || len(k) != 2 {
		t.Fatalf("held keys %v, want a and b", k)
	}
	wGot, wRel := lockAsync(tb, "a", keylock.Write)
	r1()
	if held(wGot) {
		t.Fatal("write lock granted while a reader remained")
	}
	r2()
	<-wGot                            // the last reader gone: the writer gets it
	w2 := tb.Lock("a", keylock.Write) // writes share: does not wait
	xGot, xRel := lockAsync(tb, "a", keylock.Excl)
	wRel()
	if held(xGot) {
		t.Fatal("exclusive lock granted while a writer remained")
	}
	w2()
	<-xGot
	xRel()
	other()
	if k := keys(&mu, tb); len(k) != 0 {
		t.Fatalf("keys %v still listed after every release", k)
	}
}

// Waiters are served in arrival order: a reader waiting behind writers
// holds back a writer that comes after it (no starvation of reads by a
// stream of writes), and the readers queued together are granted
// together.
func TestArrivalOrder(t *testing.T) {
	tb := keylock.New(nil)
	w1 := tb.Lock("a", keylock.Write)
	rGot, rRel := lockAsync(tb, "a", keylock.Read)
	waitQueued(t, tb, "a", 1)
	r2Got, r2Rel := lockAsync(tb, "a", keylock.Read)
	waitQueued(t, tb, "a", 2)
	w2Got, w2Rel := lockAsync(tb, "a", keylock.Write)
	waitQueued(t, tb, "a", 3)
	if held(w2Got) {
		t.Fatal("a writer arriving behind a waiting reader joined the writers holding the lock")
	}
	w1()
	<-rGot
	<-r2Got // both readers, granted at once
	if held(w2Got) {
		t.Fatal("writer granted while readers hold the lock")
	}
	rRel()
	r2Rel()
	<-w2Got
	w2Rel()
}

// waitQueued waits until key's lock has n waiters: a test hook, polling
// the table (no sleeps: it yields until the goroutines have queued).
func waitQueued(t *testing.T, tb *keylock.Table, key string, n int) {
	t.Helper()
	for keylock.Waiters(tb, key) < n {
		runtime.Gosched()
	}
}
