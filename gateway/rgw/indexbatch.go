package rgw

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/shoal-project/shoal/client"
	clsrgw "github.com/shoal-project/shoal/cls/rgw"
)

// indexBatcher coalesces bucket index updates per shard object, as a
// store's group commit does: at most one rgw.batch call per shard is in
// flight, and the updates that arrive meanwhile wait and go together in
// the next call. Alone, an update goes at once; under load one replicated
// write to the shard carries the prepares, completions and cancels of
// many requests, so the index costs less than two writes per PUT. Each
// caller still waits for the call that carries its update, so a prepare
// is durable before the caller writes data and a completion before it
// answers — the two-phase protocol is unchanged.
//
// A run of calls to one shard is sent by one goroutine, started by the
// update that found the shard idle and ended when no update is waiting;
// each call ends when every caller waiting for it has given up (their
// contexts) or when the client answers.
type indexBatcher struct {
	pool   *client.Pool
	mu     sync.Mutex
	shards map[string][]*indexUpdate // shard → updates waiting; present while a sender runs

	calls, updates atomic.Int64 // rgw.batch calls sent and the updates they carried
	maxBatch       atomic.Int64 // the most updates one call carried
	inCalls        int64        // updates in calls in flight (under mu)

	beforeCall func() // tests: runs before each call is sent
}

// indexUpdate is one caller's update of one shard: exactly one of
// prepare, complete and cancel.
type indexUpdate struct {
	ctx      context.Context
	prepare  *clsrgw.PrepareIn
	complete *clsrgw.CompleteIn
	cancel   *clsrgw.CancelIn

	done    chan struct{} // closed once out and err are set
	applied bool          // a completion changed the listing
	objects int64         // the shard's entries after the call
	err     error
}

func newIndexBatcher(pool *client.Pool) *indexBatcher {
	return &indexBatcher{pool: pool, shards: map[string][]*indexUpdate{}}
}

// do applies u to shard oid, returning once the call that carried it
// answered or ctx ended (the update may then still be applied, as any
// request whose answer was lost).
func (b *indexBatcher) do(ctx context.Context, oid string, u *indexUpdate) error {
	u.ctx, u.done = ctx, make(chan struct{})
	b.mu.Lock()
	q, busy := b.shards[oid]
	b.shards[oid] = append(q, u)
	b.mu.Unlock()
	if !busy {
		go b.send(oid)
	}
	select {
	case <-u.done:
		return u.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waiting counts the updates waiting for a call or for the answer to
// the call carrying them.
func (b *indexBatcher) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := int(b.inCalls)
	for _, q := range b.shards {
		n += len(q)
	}
	return n
}

// send sends the updates waiting for shard oid, one call at a time, until
// none is left.
func (b *indexBatcher) send(oid string) {
	for {
		b.mu.Lock()
		q := b.shards[oid]
		if len(q) == 0 {
			delete(b.shards, oid)
			b.mu.Unlock()
			return
		}
		b.shards[oid] = nil // present: a sender runs
		b.inCalls += int64(len(q))
		b.mu.Unlock()
		b.call(oid, q)
		b.mu.Lock()
		b.inCalls -= int64(len(q))
		b.mu.Unlock()
	}
}

// call sends one rgw.batch with the updates of q whose callers still wait.
func (b *indexBatcher) call(oid string, q []*indexUpdate) {
	var in clsrgw.BatchIn
	var live []*indexUpdate
	var completes []*indexUpdate
	for _, u := range q {
		if u.ctx.Err() != nil { // its caller has gone: nothing waits for it
			u.err = u.ctx.Err()
			close(u.done)
			continue
		}
		live = append(live, u)
		switch {
		case u.prepare != nil:
			in.Prepares = append(in.Prepares, *u.prepare)
		case u.complete != nil:
			in.Completes = append(in.Completes, *u.complete)
			completes = append(completes, u)
		case u.cancel != nil:
			in.Cancels = append(in.Cancels, *u.cancel)
		}
	}
	if len(live) == 0 {
		return
	}
	// the call lasts while any of its callers waits
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := atomic.Int64{}
	left.Store(int64(len(live)))
	for _, u := range live {
		stop := context.AfterFunc(u.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	if b.beforeCall != nil {
		b.beforeCall()
	}
	body, _ := json.Marshal(&in)
	b.calls.Add(1)
	b.updates.Add(int64(len(live)))
	for n := int64(len(live)); ; {
		m := b.maxBatch.Load()
		if n <= m || b.maxBatch.CompareAndSwap(m, n) {
			break
		}
	}
	raw, err := b.pool.Exec(ctx, oid, "rgw.batch", body)
	var out clsrgw.BatchOut
	if err == nil {
		if jerr := json.Unmarshal(raw, &out); jerr != nil || len(out.Applied) != len(completes) {
			err = fmt.Errorf("index shard %s: rgw.batch answered %q: %v", oid, raw, jerr)
		}
	}
	for i, u := range completes {
		if err == nil {
			u.applied = out.Applied[i]
		}
	}
	for _, u := range live {
		u.err, u.objects = err, out.Objects
		close(u.done)
	}
}

// IndexCounters reports the bucket index calls sent (rgw.batch; each
// carries one or more updates), the updates they carried, and the index
// completions sent after their requests were answered, not yet applied.
func (s *Store) IndexCounters() (calls, updates int64, completionsInFlight int) {
	return s.batch.calls.Load(), s.batch.updates.Load(), len(s.asyncSlots)
}
