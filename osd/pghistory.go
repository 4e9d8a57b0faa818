package osd

// The PGs' history at the MONs (mon/pghistory.go): before a primary's
// acting set first serves — its members hold the authoritative log — the
// primary records it there, and a new primary reads a PG's record before
// it chooses a history, so that an interval only OSDs now down or
// restarted saw still holds peering back (Ceph derives the same from the
// map history and up_thru).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-project/shoal/monc"
)

// historyRecords batches the interval records this OSD's PGs make into
// "pg history" commands, in the order they were made.
type historyRecords struct {
	mu      sync.Mutex
	pending []historyRecord
	kick    wake // records are pending
}

type historyRecord struct {
	iv   monc.PGInterval
	done chan historyResult // capacity 1
}

type historyResult struct {
	epoch uint32 // the MONs' map epoch when the record was committed
	err   error
}

// add queues a record; the returned channel gets its outcome.
func (h *historyRecords) add(iv monc.PGInterval) chan historyResult {
	done := make(chan historyResult, 1)
	h.mu.Lock()
	h.pending = append(h.pending, historyRecord{iv: iv, done: done})
	h.mu.Unlock()
	h.kick.kick()
	return done
}

// historyLoop sends the queued records until the OSD stops. A failed
// batch's waiters get the error (their peering retries).
func (d *OSD) historyLoop() {
	defer d.wg.Done()
	h := &d.history
	for h.kick.gather(d.ctx, 2*time.Millisecond) {
		h.mu.Lock()
		batch := h.pending
		h.pending = nil
		h.mu.Unlock()
		if len(batch) == 0 { // sent with an earlier kick's batch
			continue
		}
		ivs := make([]monc.PGInterval, len(batch))
		for i, r := range batch {
			ivs[i] = r.iv
		}
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		r, err := d.mc.Command(ctx, "pg history", monc.PGHistoryArgs(ivs))
		cancel()
		if err != nil {
			d.log.Warn("recording pg intervals at the MONs", "records", len(ivs), "err", err)
		}
		for _, rec := range batch {
			rec.done <- historyResult{epoch: r.Epoch, err: err}
		}
	}
}

// recordInterval records at the MONs that the PG's acting set of interval
// iv is about to serve, recovering (objects still to copy onto some
// member) or not, unless it already did, and returns once the record is
// committed and this OSD has the map the MONs had then — so that a map
// change the record did not see has reached this PG (and ended iv) before
// it serves.
func (pg *PG) recordInterval(ctx context.Context, iv uint64, recovering bool) error {
	return pg.record(ctx, iv, recovering, nil)
}

// record is recordInterval; with still set, the record is made only if
// still() holds (under pg.mu) once it is this PG's turn to record —
// otherwise it returns context.Canceled. One record of a PG is made at a
// time, in the order they were asked for, so a later word on an interval
// (peering again in it) never lands before an earlier one; while one is
// made pg.recorded is zero, so a record whose outcome is unknown (failed,
// or abandoned while queued) is made again next time.
func (pg *PG) record(ctx context.Context, iv uint64, recovering bool, still func() bool) error {
	d := pg.osd
	select {
	case pg.recordSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-pg.recordSem }()
	pg.mu.Lock()
	if pg.ps.Interval.ID != iv || (still != nil && !still()) {
		pg.mu.Unlock()
		return context.Canceled
	}
	rec := monc.PGInterval{PG: pg.id, Epoch: uint32(pg.ps.Interval.SameIntervalSince), Acting: pg.ps.Interval.PriorSet(), Recovering: recovering} // with the backfill targets, which log every write too
	if pg.recorded.Epoch == rec.Epoch && slices.Equal(pg.recorded.Acting, rec.Acting) && pg.recorded.Recovering == recovering {
		pg.mu.Unlock()
		return nil
	}
	pg.recorded = monc.PGInterval{}
	pg.mu.Unlock()
	var res historyResult
	select {
	case res = <-d.history.add(rec): // (sent even if abandoned: the batches keep their order)
	case <-ctx.Done():
		return ctx.Err()
	}
	if res.err != nil {
		return fmt.Errorf("pg %s: recording acting set %v at the MONs: %w", pg.id, rec.Acting, res.err)
	}
	d.waitEpoch(ctx, res.epoch)
	if m, _ := d.curMap(); uint32(m.Epoch) < res.epoch {
		return fmt.Errorf("pg %s: waiting for map %d", pg.id, res.epoch)
	}
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.Interval.ID != iv {
		return context.Canceled
	}
	pg.recorded = rec
	return nil
}

// recordRecovered records at the MONs that interval iv has recovered
// (settled): until it does, the MONs count the PG's data as moving if
// it was recorded recovering. It records only while the PG is still
// active in iv with no recovery to do — a peering run begun since (the
// same interval, peered again) has the word. A failed record is tried
// again, at most every 2 s, until it lands, iv ends or the PG peers
// again.
func (pg *PG) recordRecovered(iv uint64) {
	d := pg.osd
	still := func() bool { return pg.rec == nil && pg.ps.State.IsActive() }
	for try := 0; ; try++ {
		if try > 0 {
			select {
			case <-d.ctx.Done():
				return
			case <-d.clock.After(2 * time.Second):
			}
		}
		err := pg.record(d.ctx, iv, false, still)
		if err == nil || errors.Is(err, context.Canceled) || d.ctx.Err() != nil {
			return
		}
		d.log.Warn("recording the end of a recovery at the MONs", "pg", pg.id, "err", err)
	}
}

// loadHistory adds the PG's intervals recorded at the MONs to those this
// OSD knows (pg.ps.Past), asking as of this OSD's current map.
func (pg *PG) loadHistory(ctx context.Context) error {
	d := pg.osd
	m, _ := d.curMap()
	r, err := d.mc.Command(ctx, "pg history get", map[string]string{"pgid": pg.id.String(), "epoch": strconv.FormatUint(uint64(m.Epoch), 10)})
	if err != nil {
		return fmt.Errorf("pg %s: reading its history at the MONs: %w", pg.id, err)
	}
	var h []monc.PGInterval
	if err := json.Unmarshal(r.Data, &h); err != nil {
		return fmt.Errorf("pg %s: history from the MONs: %w", pg.id, err)
	}
	sets := make([][]int32, len(h))
	for i, iv := range h {
		sets[i] = iv.Acting
	}
	pg.mu.Lock()
	pg.ps.AddPast(sets)
	pg.mu.Unlock()
	return nil
}
