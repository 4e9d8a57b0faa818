package osd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/osdop"
)

// TestPartitionInProcess is test/e2e's TestNetworkPartition in one
// process, on the in-memory network with faults (msgr/faultnet): one OSD
// of four loses its links to the other OSDs (not to the MON or the
// client) under a verifying write/read load. Its peers report it, the
// MON marks it down and its PGs go on without it (it flaps until
// osd_max_markdown_count markdowns in osd_max_markdown_period, 10 s here,
// hold it down). No write is acknowledged that the others did not
// commit, and no read returns data other than the last write
// acknowledged before it began. Healed, it is marked up once the period
// allows, the PGs go clean, and every acknowledged write is there.
func TestPartitionInProcess(t *testing.T) {
	c := &cluster{Cluster: testcluster.Start(t, testcluster.Options{OSDs: 4, InMemory: true,
		Conf: osdConf + "osd_max_markdown_count = 3\nosd_max_markdown_period = 10\n"}), t: t}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, p := c.pool(ctx, "data")
	l := startModelLoad(ctx, p, 4)
	defer l.stop()
	l.waitOps(ctx, t, 200, "before the partition")

	c.Net.Partition(testcluster.OSDHost(3), testcluster.OSDHost(0), testcluster.OSDHost(1), testcluster.OSDHost(2))
	testcluster.WaitUp(ctx, t, cl, false, 3)
	l.waitOps(ctx, t, 200, "with osd.3 cut off")
	c.Net.Heal()
	testcluster.WaitUp(ctx, t, cl, true, 3)
	waitClean(ctx, t, cl, p.ID())
	l.waitOps(ctx, t, 200, "after the partition healed")
	model, inflight := l.stop()
	for oid, want := range model {
		got, err := p.Read(ctx, oid, 0, 0)
		if err != nil || !(bytes.Equal(got, want) || bytes.Equal(got, inflight[oid])) {
			t.Fatalf("after the partition: %s: %v (%d bytes, want %d, or %d of a write cut short by the load's end)", oid, err, len(got), len(want), len(inflight[oid]))
		}
	}

	t.Logf("%d verified ops", l.ops)
}

// modelLoad writes and reads objects from several goroutines, each with
// objects of its own, checking every read against the last write
// acknowledged before it began.
type modelLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	model  map[string][]byte
	// inflight holds the write to each object under way when the load
	// stopped, which may or may not have been applied
	inflight map[string][]byte
	ops      int
	err      error
	tick     chan struct{} // an op was verified
}

func startModelLoad(ctx context.Context, p *client.Pool, workers int) *modelLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &modelLoad{cancel: cancel, model: map[string][]byte{}, inflight: map[string][]byte{}, tick: make(chan struct{}, 1)}
	for w := range workers {
		l.wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				oid := fmt.Sprintf("w%d-%d", w, i%20)
				l.mu.Lock()
				acked := l.model[oid]
				l.mu.Unlock()
				var err error
				if i%2 == 0 {
					data := bytes.Repeat([]byte(fmt.Sprintf("%s@%d|", oid, i)), 50+i%7*100)
					err = p.WriteFull(ctx, oid, data)
					l.mu.Lock()
					if err == nil {
						l.model[oid] = data
					} else if ctx.Err() != nil {
						l.inflight[oid] = data
					}
					l.mu.Unlock()
				} else {
					var got []byte
					got, err = p.Read(ctx, oid, 0, 0)
					switch {
					case acked == nil && errors.Is(err, osdop.ErrNotFound):
						err = nil
					case err == nil && !bytes.Equal(got, acked):
						l.fail(fmt.Errorf("read %s: %d bytes, not the %d acknowledged before the read", oid, len(got), len(acked)))
						return
					}
				}
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					l.fail(fmt.Errorf("op on %s: %w", oid, err))
					return
				}
				l.mu.Lock()
				l.ops++
				l.mu.Unlock()
				select {
				case l.tick <- struct{}{}:
				default:
				}
			}
		})
	}
	return l
}

func (l *modelLoad) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// waitOps waits for n more verified ops, failing the test on a wrong read.
func (l *modelLoad) waitOps(ctx context.Context, t *testing.T, n int, stage string) {
	t.Helper()
	l.mu.Lock()
	target := l.ops + n
	l.mu.Unlock()
	for {
		l.mu.Lock()
		ops, err := l.ops, l.err
		l.mu.Unlock()
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		if ops >= target {
			return
		}
		select {
		case <-l.tick:
		case <-ctx.Done():
			t.Fatalf("%s: %d of %d ops", stage, ops-target+n, n)
		}
	}
}

// stop ends the load and returns the acknowledged state, and the writes
// the end cut short.
func (l *modelLoad) stop() (acked, inflight map[string][]byte) {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.model, l.inflight
}
