package osd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/shoal-project/shoal/internal/testcluster"
)

// TestScheduledScrubOnFakeClock: with osd_scrub_min_interval at Ceph's
// default (a day), no PG is scrubbed while the cluster's clock stands
// still; once it has moved a day on, every PG's primary scrubs it, one
// at a time (osd_max_scrubs 1), as the scrub scheduler's ticks come —
// a day of a real cluster, in seconds.
func TestScheduledScrubOnFakeClock(t *testing.T) {
	fc := clockwork.NewFakeClock()
	c := &cluster{Cluster: testcluster.Start(t, testcluster.Options{OSDs: 3, Clock: fc,
		// the MONs' report timeout would mark the OSDs down a day on (their
		// beacons run on the fake clock too); scrubs start whatever the load
		Conf: osdConf + "mon_osd_report_timeout = 0\nosd_scrub_load_threshold = 1000\n"}), t: t}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, p := c.pool(ctx, "data")
	for i := range 40 {
		if err := p.WriteFull(ctx, fmt.Sprintf("o%d", i), []byte(strings.Repeat("x", 100+i))); err != nil {
			t.Fatal(err)
		}
	}
	waitClean(ctx, t, cl, p.ID())
	// the last scrub of each PG, by its primary (a PG is new: stamped now)
	lastScrubs := func() map[string]time.Time {
		out := map[string]time.Time{}
		for i := range c.OSDs {
			st, err := cl.OSDStats(ctx, int32(i))
			if err != nil {
				t.Fatal(err)
			}
			for _, pg := range st.PGs {
				if strings.HasPrefix(pg.PGID, fmt.Sprintf("%d.", p.ID())) {
					out[pg.PGID] = pg.LastScrub
				}
			}
		}
		return out
	}
	before := lastScrubs()
	m := cl.Map()
	if pool, _ := m.Pool(p.ID()); len(before) != int(pool.PGNum) {
		t.Fatalf("%d pgs reported, want %d", len(before), pool.PGNum)
	}
	fc.Advance(time.Hour)
	for pg, last := range lastScrubs() {
		if !last.Equal(before[pg]) {
			t.Fatalf("pg %s scrubbed an hour after its last scrub (osd_scrub_min_interval is a day)", pg)
		}
	}
	fc.Advance(24 * time.Hour)
	for {
		after, scrubbed := lastScrubs(), 0
		for pg, last := range after {
			if last.After(before[pg]) {
				scrubbed++
			}
		}
		if scrubbed == len(before) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d pgs scrubbed a day on", scrubbed, len(before))
		}
		fc.Advance(time.Second) // the scheduler's next tick: the next PG
	}
}
