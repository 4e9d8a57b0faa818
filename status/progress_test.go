package status_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/osdop"
	"github.com/shoal-project/shoal/status"
)

func TestProgress(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ago := func(s int) time.Time { return now.Add(-time.Duration(s) * time.Second) }
	pgs := []osdop.PGStats{
		{PGID: "1.0", State: "active+clean", Objects: 10},
		// backfill: 30 of 40 copies left after 20 s, and 0 of 20 after 5 s
		{PGID: "1.1", State: "active+remapped+backfilling", RecoveryTotal: 40, ToRecover: 30, RecoveryStart: ago(20)},
		{PGID: "1.2", State: "active+remapped+backfill_wait", RecoveryTotal: 20, ToRecover: 20, RecoveryStart: ago(5)},
		// recovery: nothing done yet
		{PGID: "1.3", State: "active+undersized+degraded+recovery_wait", RecoveryTotal: 8, ToRecover: 8, RecoveryStart: ago(3)},
		// scrub: 25 of 100 objects in 10 s
		{PGID: "1.4", State: "active+clean+scrubbing+deep", Objects: 100, ScrubObjects: 25, ScrubStart: ago(10)},
		// recovered, not yet reported clean: no plan left
		{PGID: "1.5", State: "active+recovering", ToRecover: 0},
	}
	got := status.Progress(pgs, now)
	want := []status.Event{
		{Kind: "recovery", PGs: 1, Done: 0, Total: 8, Progress: 0, Elapsed: 3, Remaining: -1},
		// 10 of 60 done in 20 s: 50 left at that rate
		{Kind: "backfill", PGs: 2, Done: 10, Total: 60, Progress: 10.0 / 60, Elapsed: 20, Remaining: 100},
		{Kind: "scrub", PGs: 1, Done: 25, Total: 100, Progress: 0.25, Elapsed: 10, Remaining: 30},
	}
	if len(got) != len(want) {
		t.Fatalf("events: got %+v, want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		g.Message = ""
		if g != w {
			t.Errorf("event %d: got %+v, want %+v", i, g, w)
		}
	}
	if len(status.Progress(pgs[:1], now)) != 0 {
		t.Error("a clean PG makes an event")
	}

	// `shoal status` shows them with a bar
	s := &status.Status{Health: status.OK, PGStates: map[string]int{}, Progress: got}
	var b bytes.Buffer
	s.Text(&b)
	out := b.String()
	for _, want := range []string{"progress:", "(0/2 pgs done, 10/60, 20s elapsed)", "[====....", "(remaining: 1m40s)", "(remaining: unknown)"} {
		if !strings.Contains(out, want) {
			t.Errorf("status text lacks %q:\n%s", want, out)
		}
	}
}

// TestTracker: across samples, a PG that finished stays in its event as
// done, one planned again keeps its larger total, and the event ends when
// no PG of its kind is left; the next one starts afresh.
func TestTracker(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	bf := func(pgid string, total, left int64, start time.Time) osdop.PGStats {
		return osdop.PGStats{PGID: pgid, State: "active+remapped+backfilling", RecoveryTotal: total, ToRecover: left, RecoveryStart: start}
	}
	var tr status.Tracker
	steps := []struct {
		now             time.Time
		pgs             []osdop.PGStats
		pgsIn, finished int
		done, total     int64
		elapsed         float64
		none            bool
	}{
		{now: at(10), pgs: []osdop.PGStats{bf("1.0", 40, 30, at(0)), bf("1.1", 20, 20, at(0))}, pgsIn: 2, done: 10, total: 60, elapsed: 10},
		// 1.0 finished (clean: no longer reported with a plan)
		{now: at(20), pgs: []osdop.PGStats{{PGID: "1.0", State: "active+clean"}, bf("1.1", 20, 10, at(0))}, pgsIn: 2, finished: 1, done: 50, total: 60, elapsed: 20},
		// 1.1 re-peered (a new interval): its new plan lacks 10 of them
		{now: at(30), pgs: []osdop.PGStats{bf("1.1", 10, 10, at(25))}, pgsIn: 2, finished: 1, done: 50, total: 60, elapsed: 30},
		{now: at(40), pgs: nil, none: true},
		// a new event: only what it has to do
		{now: at(50), pgs: []osdop.PGStats{bf("1.2", 5, 4, at(45))}, pgsIn: 1, done: 1, total: 5, elapsed: 5},
	}
	for i, st := range steps {
		evs := tr.Update(st.pgs, st.now)
		if st.none {
			if len(evs) != 0 {
				t.Errorf("step %d: events %+v, want none", i, evs)
			}
			continue
		}
		if len(evs) != 1 {
			t.Fatalf("step %d: events %+v, want one", i, evs)
		}
		e := evs[0]
		if e.Kind != "backfill" || e.PGs != st.pgsIn || e.Finished != st.finished || e.Done != st.done || e.Total != st.total || e.Elapsed != st.elapsed {
			t.Errorf("step %d: %+v, want %d pgs (%d done), %d/%d, %.0fs elapsed", i, e, st.pgsIn, st.finished, st.done, st.total, st.elapsed)
		}
	}
}
