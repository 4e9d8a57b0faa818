package keylock_test

import (
	"sync"
	"testing"

	"github.com/shoal-project/shoal/internal/keylock"
)

// An exclusive lock keeps out both kinds of holder of its key and no
// holder of another key; shared locks are held together; a key is listed
// while held and gone once its last holder releases it.
func TestTable(t *testing.T) {
	var mu sync.Mutex
	tb := keylock.New(&mu)
	keys := func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]bool{}
		tb.Each(func(k string) { out[k] = true })
		return out
	}
	r1 := tb.Lock("a", true)
	r2 := tb.Lock("a", true) // shared with r1: does not wait
	other := tb.Lock("b", false)
	if k := keys(); !k["a"] || !k["b"] || len(k) != 2 {
		t.Fatalf("held keys %v, want a and b", k)
	}
	got := make(chan struct{})
	go func() {
		tb.Lock("a", false)()
		close(got)
	}()
	r1()
	select {
	case <-got:
		t.Fatal("exclusive lock taken while a shared holder remained")
	default:
	}
	r2()
	<-got // the last shared holder gone: the writer gets it
	other()
	if k := keys(); len(k) != 0 {
		t.Fatalf("keys %v still listed after every release", k)
	}
}
