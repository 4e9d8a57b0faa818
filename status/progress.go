package status

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shoal-project/shoal/osdop"
)

// Event is a long operation under way, as Ceph's progress module shows
// them in `ceph -s`: the PGs recovering degraded objects, the PGs
// backfilling (moving data to new OSDs: rebalancing, a returning or a
// replaced OSD), or the PGs scrubbing. Done and Total count object copies
// (recovery, backfill) or objects (scrub) of the PGs in it, from the
// counters their primaries report (osdop.PGStats RecoveryTotal and
// ToRecover, Objects and ScrubObjects); Elapsed (seconds) runs from the
// earliest of their starts; Remaining (seconds) extrapolates the rate so
// far and is -1 until something is done.
type Event struct {
	Kind      string  `json:"kind"` // recovery, backfill or scrub
	Message   string  `json:"message"`
	PGs       int     `json:"num_pgs"`
	Finished  int     `json:"num_pgs_done"` // of PGs: nothing left to do
	Done      int64   `json:"done"`
	Total     int64   `json:"total"`
	Progress  float64 `json:"progress"` // Done / Total, 0 to 1
	Elapsed   float64 `json:"elapsed_sec"`
	Remaining float64 `json:"remaining_sec"`
}

// Progress computes the events of a cluster's PGs at now from one
// sample: a PG whose state names backfill counts towards backfill, one
// that recovers (or waits to) towards recovery, one scrubbing towards
// scrub. A PG that finished has left its event, so the fraction done
// covers the PGs still at work; a Tracker fed every sample keeps them.
func Progress(pgs []osdop.PGStats, now time.Time) []Event {
	return new(Tracker).Update(pgs, now)
}

// Tracker follows the events across samples, as Ceph's progress module
// does: an event starts when a PG of its kind appears and ends when none
// is left; a PG that leaves it meanwhile (finished, or reported by no
// one) counts as done with what it had to do, and a PG planned again (a
// new interval) keeps the larger total of its plans. The zero value is
// ready; it is not safe for concurrent use.
type Tracker struct {
	events map[string]*tracked
}

type tracked struct {
	start time.Time
	pgs   map[string]pgWork
}

// pgWork is what a PG has to do in an event, and what is left.
type pgWork struct{ total, left int64 }

// eventKinds in the order they are shown, with their messages.
var eventKinds = []struct{ kind, message string }{
	{"recovery", "Recovery: PGs copying objects their degraded members lack"},
	{"backfill", "Backfill: PGs moving data to their new OSDs"},
	{"scrub", "Scrub: PGs comparing their copies"},
}

// Update takes a sample of the PGs (as their primaries report them) at
// now and returns the events under way.
func (t *Tracker) Update(pgs []osdop.PGStats, now time.Time) []Event {
	if t.events == nil {
		t.events = map[string]*tracked{}
	}
	cur := map[string]map[string]pgWork{}
	starts := map[string]time.Time{}
	add := func(kind, pgid string, total, left int64, start time.Time) {
		if cur[kind] == nil {
			cur[kind] = map[string]pgWork{}
			starts[kind] = start
		}
		cur[kind][pgid] = pgWork{total: total, left: min(max(left, 0), total)}
		if start.Before(starts[kind]) {
			starts[kind] = start
		}
	}
	for _, pg := range pgs {
		switch {
		case pg.RecoveryTotal > 0 && strings.Contains(pg.State, "backfill"):
			add("backfill", pg.PGID, pg.RecoveryTotal, pg.ToRecover, pg.RecoveryStart)
		case pg.RecoveryTotal > 0 && strings.Contains(pg.State, "recover"):
			add("recovery", pg.PGID, pg.RecoveryTotal, pg.ToRecover, pg.RecoveryStart)
		}
		if !pg.ScrubStart.IsZero() {
			objects := max(pg.Objects, 0)
			add("scrub", pg.PGID, objects, objects-pg.ScrubObjects, pg.ScrubStart)
		}
	}
	var out []Event
	for _, k := range eventKinds {
		c := cur[k.kind]
		if len(c) == 0 {
			delete(t.events, k.kind)
			continue
		}
		ev := t.events[k.kind]
		if ev == nil {
			ev = &tracked{start: starts[k.kind], pgs: map[string]pgWork{}}
			t.events[k.kind] = ev
		}
		ev.start = minTime(ev.start, starts[k.kind])
		for id, w := range ev.pgs {
			if _, ok := c[id]; !ok {
				ev.pgs[id] = pgWork{total: w.total} // finished
			}
		}
		for id, w := range c {
			if old, ok := ev.pgs[id]; ok && old.total > w.total {
				w.total = old.total
			}
			ev.pgs[id] = w
		}
		e := Event{Kind: k.kind, Message: k.message, PGs: len(ev.pgs), Progress: 1, Remaining: -1}
		for _, w := range ev.pgs {
			e.Done += w.total - w.left
			e.Total += w.total
			if w.left == 0 {
				e.Finished++
			}
		}
		if e.Total > 0 {
			e.Progress = float64(e.Done) / float64(e.Total)
		}
		e.Elapsed = max(now.Sub(ev.start).Seconds(), 0)
		if e.Done > 0 && e.Elapsed > 0 {
			e.Remaining = float64(e.Total-e.Done) * e.Elapsed / float64(e.Done)
		}
		out = append(out, e)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// progressText writes the events as `ceph -s` does: a line each and a
// bar.
func progressText(w io.Writer, events []Event) {
	if len(events) == 0 {
		return
	}
	fmt.Fprintf(w, "\n  progress:\n")
	for _, e := range events {
		eta := "remaining: unknown"
		if e.Remaining >= 0 {
			eta = "remaining: " + secs(e.Remaining)
		}
		fmt.Fprintf(w, "    %s (%d/%d pgs done, %d/%d, %s elapsed)\n", e.Message, e.Finished, e.PGs, e.Done, e.Total, secs(e.Elapsed))
		const width = 28
		n := int(e.Progress * width)
		fmt.Fprintf(w, "      [%s%s] (%s)\n", strings.Repeat("=", n), strings.Repeat(".", width-n), eta)
	}
}

// secs formats seconds as Ceph's progress module does (1m30s).
func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}
