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

// TestMergeSurvivesKill9: a pool of 16 PGs holding 3,000 objects shrinks
// to 8 PGs under writers and readers; osd.1 is killed with SIGKILL as
// soon as its log shows its first merge (the other merges still to come:
// they wait for it, as their PGs are no longer clean) and started again,
// when it merges the copies it holds of the PGs merged meanwhile. The
// cluster returns to HEALTH_OK with pg_num 8; every acknowledged write
// reads back whole (no read during it saw an older or torn version), and
// each PG counts the objects a listing finds in it.
func TestMergeSurvivesKill9(t *testing.T) {
	c := up(t, "--osds", "3", "--set", "target_max_misplaced_ratio=0.5")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn := c.connect(ctx)
	if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "merge", "size": "3", "pg_num": "16"}); err != nil {
		t.Fatal(err)
	}
	p, err := conn.Pool(ctx, "merge")
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
			for i := w; i < 3000; i += 16 {
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
	l.waitOps(ctx, 200, "before the merges")

	// kill osd.1 once it has merged one PG
	logPath := filepath.Join(c.data, "log", "osd.1.log")
	seen, _ := os.ReadFile(logPath)
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for ctx.Err() == nil {
			b, _ := os.ReadFile(logPath)
			if len(b) > len(seen) && bytes.Contains(b[len(seen):], []byte("merged pg")) {
				c.kill9("osd.1")
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	c.must("pool", "set", "merge", "pg_num", "8")
	<-killed
	if ctx.Err() != nil {
		t.Fatal("osd.1 never logged a merge")
	}
	l.waitOps(ctx, 200, "with osd.1 killed mid-merges")
	if m := conn.Map(); m != nil {
		if pool, err := m.Pool(p.ID()); err == nil && pool.PGNum == 8 {
			t.Fatal("every merge done with osd.1 down: the kill came too late to test a restart mid-merges")
		}
	}
	c.up() // starts osd.1 again
	waitMap(ctx, t, conn, "pg_num 8", func(m *osdmap.Map) bool {
		pool, err := m.Pool(p.ID())
		return err == nil && pool.PGNum == 8 && pool.PGNumTarget == 0
	})
	l.waitOps(ctx, 200, "after the merges")
	l.finish()
	c.waitHealth("HEALTH_OK", 90*time.Second)
	c.waitClean(90 * time.Second)
	l.verify(ctx, "after the merges and the kill")
	for i := range 3000 {
		oid := fmt.Sprintf("pre-%d", i)
		if got, err := p.Read(ctx, oid, 0, 0); err != nil || !bytes.Equal(got, content(i)) {
			t.Fatalf("%s: %v (%d bytes)", oid, err, len(got))
		}
	}
	n, wrong := c.poolObjects(ctx, conn, p)
	if len(wrong) > 0 || n != 3000+len(l.acked) {
		t.Fatalf("pgs count %d objects (want %d): %v", n, 3000+len(l.acked), wrong)
	}
	b, _ := os.ReadFile(logPath)
	t.Logf("osd.1 logged %d merges", bytes.Count(b[len(seen):], []byte("merged pg")))
}
