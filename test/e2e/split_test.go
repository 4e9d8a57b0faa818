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
	content := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("pre-%d|", i)), 200+i%400) }
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 6000; i += 16 {
				if err := p.WriteFull(ctx, fmt.Sprintf("pre-%d", i), content(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l := startLoad(ctx, t, p, 4, 2, 50)
	l.waitOps(ctx, 200, "before the split")

	// kill osd.1 once it has split one PG
	logPath := filepath.Join(c.data, "log", "osd.1.log")
	seen, _ := os.ReadFile(logPath)
	killed := make(chan struct{})
	splitBefore := 0 // osd.1's splits logged when it was killed
	go func() {
		defer close(killed)
		for ctx.Err() == nil {
			b, _ := os.ReadFile(logPath)
			if len(b) > len(seen) && bytes.Contains(b[len(seen):], []byte("split pg")) {
				c.kill9("osd.1")
				b, _ = os.ReadFile(logPath)
				splitBefore = bytes.Count(b[len(seen):], []byte("split pg"))
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	c.must("pool", "set", "split", "pg_num", "32")
	<-killed
	if ctx.Err() != nil {
		t.Fatal("osd.1 never logged a split")
	}
	l.waitOps(ctx, 300, "with osd.1 killed mid-split")
	c.up() // starts osd.1 again: it splits what it had not
	waitMap(ctx, t, conn, "pgp_num 32", func(m *osdmap.Map) bool {
		pool, err := m.Pool(p.ID())
		return err == nil && pool.PGPNum == 32
	})
	l.waitOps(ctx, 300, "after pgp_num followed")
	l.finish()
	c.waitHealth("HEALTH_OK", 90*time.Second)
	c.waitClean(90 * time.Second)
	l.verify(ctx, "after the split and the kill")
	for i := range 6000 {
		oid := fmt.Sprintf("pre-%d", i)
		if got, err := p.Read(ctx, oid, 0, 0); err != nil || !bytes.Equal(got, content(i)) {
			t.Fatalf("%s: %v (%d bytes)", oid, err, len(got))
		}
	}
	n, wrong := c.poolObjects(ctx, conn, p)
	if len(wrong) > 0 || n != 6000+len(l.acked) {
		t.Fatalf("pgs count %d objects (want %d): %v", n, 6000+len(l.acked), wrong)
	}
	// osd.1 holds all 4 PGs: the kill came before it split them all
	b, _ := os.ReadFile(logPath)
	after := bytes.Count(b[len(seen):], []byte("split pg")) - splitBefore
	t.Logf("osd.1 split %d PGs before the kill, %d after its restart", splitBefore, after)
	if after == 0 {
		t.Fatal("osd.1 split every PG before it was killed: the kill did not interrupt the split")
	}
}
