package osd_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdop"
)

// heldStore delays the results of its submitted transactions while
// armed (they still commit): a write stays in flight, logged but not
// reported durable, for as long as the test wants.
type heldStore struct {
	objectstore.Store
	mu      sync.Mutex
	armed   bool
	release chan struct{}
	holding chan struct{} // gets a value when a result is first held
}

func (h *heldStore) Submit(t *objectstore.Transaction) <-chan error {
	h.mu.Lock()
	armed := h.armed
	h.mu.Unlock()
	inner := h.Store.Submit(t)
	if !armed {
		return inner
	}
	select {
	case h.holding <- struct{}{}:
	default:
	}
	out := make(chan error, 1)
	go func() {
		err := <-inner
		<-h.release
		out <- err
	}()
	return out
}

// TestDuplicateAnsweredAfterCommit: a resent write (same client and tid)
// that arrives while the first attempt is logged but not yet committed
// is not acknowledged until that attempt is (a reply before it would
// acknowledge a write a crash could still lose); afterwards the resend
// gets the first attempt's version and the write is applied once.
func TestDuplicateAnsweredAfterCommit(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	release, holding := make(chan struct{}), make(chan struct{}, 1)
	var freeOnce sync.Once
	free := func() { freeOnce.Do(func() { close(release) }) }
	defer free() // a failing test must not leave the OSDs waiting to close
	var stores []*heldStore
	c.Wrap = func(i int, s objectstore.Store) objectstore.Store {
		h := &heldStore{Store: s, release: release, holding: holding}
		stores = append(stores, h)
		return h
	}
	for i := range c.OSDs {
		c.RestartOSD(i)
	}
	cl, p := c.pool(ctx, "dup")
	waitClean(ctx, t, cl, p.ID())
	const oid = "resent"
	m := cl.Map()
	pgid, _ := m.ObjectToPG(p.ID(), oid, "")
	mp, _ := m.MapPG(pgid)
	addr, _, _ := strings.Cut(c.OSDs[mp.ActingPrimary].Addr(), "/")
	req := osdop.Request{Pool: p.ID(), Seed: pgid.Seed, OID: oid, Client: 4242, Tid: 1, Ops: []osdop.Op{{Code: osdop.WriteFull, Data: []byte("once")}}}
	e := wire.NewEncoder(nil)
	req.Encode(e)
	send := func(ctx context.Context) (*osdop.Reply, error) {
		conn := msgr.Dial(addr, testKey, msgr.Config{Epoch: func() uint32 { return uint32(cl.Map().Epoch) }})
		defer conn.Close()
		rep, err := conn.Call(ctx, osdop.MsgOp, e.Bytes())
		if err != nil {
			return nil, err
		}
		defer rep.Release()
		return osdop.DecodeReply(rep.Payload)
	}

	for _, h := range stores {
		h.mu.Lock()
		h.armed = true
		h.mu.Unlock()
	}
	first := make(chan error, 1)
	var firstRep *osdop.Reply
	go func() {
		var err error
		firstRep, err = send(ctx)
		first <- err
	}()
	<-holding // the first attempt is logged and submitted, not committed
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	rep, err := send(dctx)
	dcancel()
	if err == nil {
		t.Fatalf("the resend was acknowledged (version %d) while the first attempt was not yet committed", rep.Ver)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("the resend before the commit: %v", err)
	}
	for _, h := range stores {
		h.mu.Lock()
		h.armed = false
		h.mu.Unlock()
	}
	free()
	if err := <-first; err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	rep, err = send(ctx)
	if err != nil || rep.Ver != firstRep.Ver {
		t.Fatalf("the resend after the commit: %+v, %v; want the first attempt's version %d", rep, err, firstRep.Ver)
	}
	st, err := p.Stat(ctx, oid)
	if err != nil || st.Version != firstRep.Ver {
		t.Fatalf("object version %d (%v), want %d: the write applied more than once", st.Version, err, firstRep.Ver)
	}
}
