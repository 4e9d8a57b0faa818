package mon_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// TestDownOutOnFakeClock: mon_osd_down_out_interval at Ceph's default,
// 600 s, on a fake clock. A down OSD stays in for 599 s, and past 600 s
// while noout is set; with noout cleared the next tick marks it out.
// Each step waits for the leader's tick to have run, not for time.
func TestDownOutOnFakeClock(t *testing.T) {
	fc := clockwork.NewFakeClock()
	c := testcluster.Start(t, testcluster.Options{Clock: fc})
	mc := c.MonClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must := func(prefix string, args map[string]string) monc.Result {
		t.Helper()
		r, err := mc.Command(ctx, prefix, args)
		if err != nil {
			t.Fatalf("%s: %v", prefix, err)
		}
		return r
	}
	// tick advances the fake clock by d and returns once the tick loop
	// ran its pass and waits again (its timer is the MON's only one on
	// the fake clock), with the map as of then
	tick := func(d time.Duration) *osdmap.Map {
		t.Helper()
		fc.Advance(d)
		if err := fc.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := fc.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		m, err := mc.GetMap(ctx, nil, false) // after the pass: any change it made is committed
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	must("osd boot", map[string]string{"id": "-1", "host": "h", "addr": "127.0.0.1:6800", "size": "1099511627776"})
	must("osd down", map[string]string{"ids": "0"})
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	tick(500 * time.Millisecond) // the leader notes osd.0 down
	if m := tick(599 * time.Second); !m.OSDs[0].In() {
		t.Fatal("osd.0 out before mon_osd_down_out_interval")
	}
	must("osd set", map[string]string{"key": "noout"})
	if m := tick(10 * time.Second); !m.OSDs[0].In() {
		t.Fatal("osd.0 marked out while noout is set")
	}
	must("osd unset", map[string]string{"key": "noout"})
	m := tick(500 * time.Millisecond)
	for m.OSDs[0].In() { // the mark-out is committed by the pass; the map may arrive after
		var err error
		if m, err = mc.WaitEpoch(ctx, m, uint32(m.Epoch)+1); err != nil {
			t.Fatal(err)
		}
	}
	if !m.OSDs[0].AutoOut {
		t.Fatalf("epoch %d: osd.0 out, but not marked auto-out", m.Epoch)
	}
}
