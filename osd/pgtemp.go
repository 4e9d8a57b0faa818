package osd

// pg_temp: while a PG's new up set holds copies that must be
// backfilled whole (an OSD added, or one marked out and replaced), its
// primary asks the MONs for a temporary acting set of the copies that are
// complete — the up set's complete members, then former members'
// complete copies, up to the pool's size — so that those keep serving
// reads and writes and the PG keeps its redundancy meanwhile. The up set's
// other OSDs are then backfill targets: the primary sends them every
// write (as a log entry only, for an object their copy still lacks) and
// fills them in the background; once every copy is complete it clears
// the pg_temp and the up set becomes the acting set. This is Ceph's
// scheme (PeeringState::choose_acting, MOSDPGTemp, backfill_targets); the
// MONs drop entries that no longer serve (mon.staleTemps).

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// errWaitActingChange: peering asked the MONs for a pg_temp and waits for
// the map that carries it (Ceph's WaitActingChange).
var errWaitActingChange = errors.New("waiting for the acting set asked for (pg_temp)")

// pgTempWait is how long peering waits for a pg_temp it asked for before
// it gives up on it and activates with the acting set it has.
const pgTempWait = 5 * time.Second

// pgTempRequests batches the pg_temp changes this OSD's PGs ask for into
// "osd pg-temp" commands: one map epoch for many PGs, as Ceph's
// MOSDPGTemp carries many. A request is dropped when its PG has left the
// interval it was made in.
type pgTempRequests struct {
	mu      sync.Mutex
	pending map[osdmap.PGID]pgTempRequest
	kick    wake // a request is pending
}

type pgTempRequest struct {
	pg   *PG
	iv   uint64
	osds []int32 // empty: clear the entry
}

// request asks for PG pg's acting set to be osds (nil: its up set, which
// clears its pg_temp) for interval iv, and returns errWaitActingChange
// for peering to wait with. It records the ask, so that peering asks once
// per interval.
func (r *pgTempRequests) request(pg *PG, iv uint64, osds []int32) error {
	pg.mu.Lock()
	if pg.ps.Interval.ID == iv {
		pg.ps.TempAsked = iv
	}
	pg.mu.Unlock()
	r.mu.Lock()
	if r.pending == nil {
		r.pending = map[osdmap.PGID]pgTempRequest{}
	}
	r.pending[pg.id] = pgTempRequest{pg: pg, iv: iv, osds: slices.Clone(osds)}
	r.mu.Unlock()
	r.kick.kick()
	return errWaitActingChange
}

// pgTempLoop sends the PGs' pg_temp requests to the MONs until the OSD
// stops, batching those made while one is in flight; a batch that fails
// is retried (requests made since replace its entries).
func (d *OSD) pgTempLoop() {
	defer d.wg.Done()
	r := &d.pgTemp
	for r.kick.gather(d.ctx, 10*time.Millisecond) {
		r.mu.Lock()
		batch := r.pending
		r.pending = nil
		r.mu.Unlock()
		sets := map[osdmap.PGID][]int32{}
		for id, q := range batch {
			if q.pg.intervalNow() == q.iv {
				sets[id] = q.osds
			}
		}
		if len(sets) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		_, err := d.mc.Command(ctx, "osd pg-temp", map[string]string{"pgs": monc.FormatPGTemps(sets)})
		cancel()
		if err == nil {
			d.log.Debug("pg_temp asked", "pgs", len(sets))
			continue
		}
		if d.ctx.Err() != nil {
			return
		}
		d.log.Warn("asking the MONs for pg_temp; retrying", "pgs", len(sets), "err", err)
		r.mu.Lock()
		if r.pending == nil {
			r.pending = map[osdmap.PGID]pgTempRequest{}
		}
		for id, q := range batch {
			if _, newer := r.pending[id]; !newer {
				r.pending[id] = q
			}
		}
		r.mu.Unlock()
		select {
		case <-d.ctx.Done():
			return
		case <-time.After(time.Second):
		}
		r.kick.kick()
	}
}
