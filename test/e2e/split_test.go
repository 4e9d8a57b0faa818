package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/osdmap"
)

// TestSplitSurvivesKill9: a pool of 4 PGs holding 6,000 objects grows to
// 32 PGs under writers and readers; osd.1 is killed with SIGKILL as soon
// as its log shows its first split (its other PGs still to split, their
// transactions in flight) and started again. The cluster returns to
// HEALTH_OK with pgp_num at 32; every acknowledged write reads back whole
// (no read during it saw an older or torn version), and each PG counts
// the objects a listing finds in it.
func TestSplitSurvivesKill9(t *testing.T) {
	c := up(t, "--osds", "3", "--set", "target_max_misplaced_ratio=0.3")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := c.connect(ctx)
	if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "split", "size": "3", "pg_num": "4"}); err != nil {
		t.Fatal(err)
	}
	p, err := conn.Pool(ctx, "split")
	if err != nil {
		t.Fatal(err)
	}
	prefill(ctx, t, p, 6000)
	l := startLoad(ctx, t, p, 4, 2, 50)
	l.waitOps(ctx, 200, "before the split")

	// kill osd.1 once it has split one PG
	k := c.killOnLog(ctx, "osd.1", "split pg")
	c.must("pool", "set", "split", "pg_num", "32")
	splitBefore := k.wait(t) // osd.1's splits logged when it was killed
	l.waitOps(ctx, 300, "with osd.1 killed mid-split")
	c.up() // starts osd.1 again: it splits what it had not
	waitMap(ctx, t, conn, "pgp_num 32", func(m *osdmap.Map) bool {
		pool, err := m.Pool(p.ID())
		return err == nil && pool.PGPNum == 32
	})
	l.waitOps(ctx, 300, "after pgp_num followed")
	c.verifyAfterLoad(ctx, conn, p, l, 6000, "after the split and the kill")
	// osd.1 holds all 4 PGs: the kill came before it split them all
	after := k.count() - splitBefore
	t.Logf("osd.1 split %d PGs before the kill, %d after its restart", splitBefore, after)
	if after == 0 {
		t.Fatal("osd.1 split every PG before it was killed: the kill did not interrupt the split")
	}
}

// prefillContent is what prefill writes to pre-i.
func prefillContent(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("pre-%d|", i)), 200+i%400)
}

// prefill writes objects pre-0 … pre-(n-1) (prefillContent) to p from
// 16 writers.
func prefill(ctx context.Context, t *testing.T, p *client.Pool, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if err := p.WriteFull(ctx, fmt.Sprintf("pre-%d", i), prefillContent(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// verifyPrefill reads back every object prefill wrote.
func verifyPrefill(ctx context.Context, t *testing.T, p *client.Pool, n int) {
	t.Helper()
	for i := range n {
		oid := fmt.Sprintf("pre-%d", i)
		if got, err := p.Read(ctx, oid, 0, 0); err != nil || !bytes.Equal(got, prefillContent(i)) {
			t.Fatalf("%s: %v (%d bytes)", oid, err, len(got))
		}
	}
}

// verifyAfterLoad stops load l on pool p, whose first prefilled objects
// prefill wrote, and checks the cluster once it is HEALTH_OK and clean:
// every acknowledged write reads back whole (no read during the load saw
// an older or torn version), the prefill is intact, and each PG counts
// the objects a listing finds in it.
func (c *tcluster) verifyAfterLoad(ctx context.Context, conn *client.Conn, p *client.Pool, l *load, prefilled int, when string) {
	t := c.t
	t.Helper()
	l.finish()
	c.waitHealth("HEALTH_OK", 90*time.Second)
	c.waitClean(90 * time.Second)
	l.verify(ctx, when)
	verifyPrefill(ctx, t, p, prefilled)
	n, wrong := c.poolObjects(ctx, conn, p)
	if len(wrong) > 0 || n != prefilled+len(l.acked) {
		t.Fatalf("%s: pgs count %d objects (want %d): %v", when, n, prefilled+len(l.acked), wrong)
	}
}

// logKill kills a daemon with SIGKILL as soon as its log shows a line
// (killOnLog), and counts that line's occurrences since it started.
type logKill struct {
	path   string
	seen   int // the log's length when it started
	needle []byte
	killed chan struct{}
	before int // occurrences when the daemon was killed
}

// killOnLog watches daemon's log (polling every 2 ms) and kills it with
// SIGKILL at the first new line holding needle.
func (c *tcluster) killOnLog(ctx context.Context, daemon, needle string) *logKill {
	k := &logKill{path: filepath.Join(c.data, "log", daemon+".log"), needle: []byte(needle), killed: make(chan struct{})}
	b, _ := os.ReadFile(k.path)
	k.seen = len(b)
	go func() {
		defer close(k.killed)
		for ctx.Err() == nil {
			if k.count() > 0 {
				c.kill9(daemon)
				k.before = k.count()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return k
}

// wait waits for the kill and returns how many lines with the needle the
// log held then; it fails the test if the line never came.
func (k *logKill) wait(t *testing.T) int {
	t.Helper()
	<-k.killed
	if k.before == 0 {
		t.Fatalf("%s never logged %q", filepath.Base(k.path), k.needle)
	}
	return k.before
}

// count is how many lines with the needle the log gained since it
// started.
func (k *logKill) count() int {
	b, _ := os.ReadFile(k.path)
	if len(b) < k.seen {
		return 0
	}
	return bytes.Count(b[k.seen:], k.needle)
}
