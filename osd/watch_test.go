package osd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/osdop"
)

// watcherOf is a client watching an object: the notifications it got.
type watcherOf struct {
	conn *client.Conn
	w    *client.Watch
	mu   sync.Mutex
	got  []client.Notification
	errs []error
}

func watchObject(ctx context.Context, t *testing.T, conn *client.Conn, oid, reply string, timeout time.Duration) *watcherOf {
	t.Helper()
	p, err := conn.Pool(ctx, "data")
	if err != nil {
		t.Fatal(err)
	}
	wo := &watcherOf{conn: conn}
	wo.w, err = p.Watch(ctx, oid, timeout, func(n client.Notification) []byte {
		wo.mu.Lock()
		wo.got = append(wo.got, n)
		wo.mu.Unlock()
		return []byte(reply)
	}, func(err error) {
		wo.mu.Lock()
		wo.errs = append(wo.errs, err)
		wo.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return wo
}

func (wo *watcherOf) payloads() []string {
	wo.mu.Lock()
	defer wo.mu.Unlock()
	var out []string
	for _, n := range wo.got {
		out = append(out, string(n.Payload))
	}
	return out
}

// acked returns the replies of a notify result by instance.
func acked(r *osdop.NotifyResult) map[string]string {
	out := map[string]string{}
	for _, a := range r.Acks {
		out[a.Instance] = string(a.Reply)
	}
	return out
}

// TestWatchNotify: a notify reaches every watcher and returns their
// replies; a watcher whose client died is reported as timed out, then
// its watch expires; after the primary of the object fails, the watchers
// poll the new one and the next notify reaches them all again; a
// blocklisted client's watch is dropped; a notify on a missing object
// fails.
func TestWatchNotify(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, p := c.pool(ctx, "data")
	if err := p.WriteFull(ctx, "obj", []byte("watched")); err != nil {
		t.Fatal(err)
	}
	// no watcher yet: answered at once, with nobody in it
	if r, err := p.Notify(ctx, "obj", []byte("nobody"), 30*time.Second); err != nil || len(r.Acks)+len(r.Timeouts) != 0 {
		t.Fatalf("notify without watchers: %+v, %v", r, err)
	}
	w1 := watchObject(ctx, t, c.Client(ctx), "obj", "one", 0)
	w2 := watchObject(ctx, t, c.Client(ctx), "obj", "two", 0)
	deadConn, err := client.Connect(ctx, client.Config{MonAddrs: c.MonAddrs, Keyring: testcluster.Key})
	if err != nil {
		t.Fatal(err)
	}
	w3 := watchObject(ctx, t, deadConn, "obj", "three", 2*time.Second)
	ws, err := p.ListWatchers(ctx, "obj")
	if err != nil || len(ws) != 3 {
		t.Fatalf("watchers: %+v, %v", ws, err)
	}
	deadConn.Close() // the third watcher's client dies: no poll, no ack

	r, err := p.Notify(ctx, "obj", []byte("first"), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a := acked(r); len(a) != 2 || a[w1.conn.Instance()] != "one" || a[w2.conn.Instance()] != "two" {
		t.Fatalf("acks %v", a)
	}
	if len(r.Timeouts) != 1 || r.Timeouts[0].Instance != deadConn.Instance() || r.Timeouts[0].Cookie != w3.w.Cookie() {
		t.Fatalf("timeouts %v, want the dead watcher %s", r.Timeouts, deadConn.Instance())
	}
	eventually(ctx, t, func() bool {
		ws, err := p.ListWatchers(ctx, "obj")
		return err == nil && len(ws) == 2
	}, func() string {
		ws, err := p.ListWatchers(ctx, "obj")
		return fmt.Sprintf("watchers after the timeout: %+v %v", ws, err)
	})

	// the primary fails: the watchers find the new one
	om, err := cl.Map().ObjectToPG(p.ID(), "obj", "")
	if err != nil {
		t.Fatal(err)
	}
	mp, err := cl.Map().MapPG(om)
	if err != nil {
		t.Fatal(err)
	}
	c.stop(ctx, cl, mp.ActingPrimary)
	r, err = p.Notify(ctx, "obj", []byte("second"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a := acked(r); len(a) != 2 || len(r.Timeouts) != 0 {
		t.Fatalf("after osd.%d failed: acks %v, timeouts %v", mp.ActingPrimary, a, r.Timeouts)
	}
	for i, w := range []*watcherOf{w1, w2} {
		if got := w.payloads(); !slices.Equal(got, []string{"first", "second"}) {
			t.Fatalf("watcher %d got %q", i+1, got)
		}
		w.mu.Lock()
		notifier := w.got[0].Notifier
		w.mu.Unlock()
		if notifier != cl.Instance() {
			t.Fatalf("notifier %q, want %q", notifier, cl.Instance())
		}
	}

	// a blocklisted client's watch is dropped
	if err := cl.BlocklistAdd(ctx, w2.conn.Instance(), time.Hour); err != nil {
		t.Fatal(err)
	}
	r, err = p.Notify(ctx, "obj", []byte("third"), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a := acked(r); len(a) != 1 || a[w1.conn.Instance()] != "one" {
		t.Fatalf("with the second watcher blocklisted: acks %v, timeouts %v", a, r.Timeouts)
	}
	eventually(ctx, t, func() bool {
		w2.mu.Lock()
		defer w2.mu.Unlock()
		return len(w2.errs) > 0 && errors.Is(w2.errs[len(w2.errs)-1], osdop.ErrBlocklisted)
	}, func() string { return fmt.Sprintf("blocklisted watcher's errors: %v", w2.errs) })

	if _, err := p.Notify(ctx, "missing", []byte("x"), time.Second); !errors.Is(err, osdop.ErrNotFound) {
		t.Fatalf("notify on a missing object: %v", err)
	}
	if err := w1.w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ws, err := p.ListWatchers(ctx, "obj"); err != nil || slices.ContainsFunc(ws, func(w osdop.WatcherInfo) bool { return w.Instance == w1.conn.Instance() }) {
		t.Fatalf("after unwatch: %+v %v", ws, err)
	}
}

// TestEmptyRequest: a request with no ops is answered (with no results)
// and leaves the primary serving.
func TestEmptyRequest(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, p := c.pool(ctx, "data")
	if rep, err := p.Operate(ctx, "x", nil); err != nil || len(rep.Results) != 0 {
		t.Fatalf("no ops: %+v, %v", rep, err)
	}
	if err := p.WriteFull(ctx, "x", []byte("after")); err != nil {
		t.Fatal(err)
	}
}
