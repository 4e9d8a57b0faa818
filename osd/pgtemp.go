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
	"maps"
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

// wantActing returns the acting set to ask the MONs for as a pg_temp, or
// nil to go on with the one the map gives (pg.mu not held): when a
// member of an acting set that is its up set would be backfilled (rec),
// the members whose copies are complete keep serving, with former
// members' complete copies (in rec.peers) up to the pool's size. Not for
// erasure-coded PGs, not while a pg_temp already holds (targets), not
// twice in one interval, and not when fewer than min_size complete
// copies are reachable.
func (pg *PG) wantActing(rec *recovery, acting, targets []int32) []int32 {
	pg.mu.Lock()
	pool, isEC, asked := pg.pool, pg.isEC, pg.tempAsked == pg.interval
	pg.mu.Unlock()
	if isEC || pool == nil || !pool.CanShiftOSDs() || len(targets) > 0 || asked {
		return nil
	}
	backfill := func(o int32) bool { return rec.whole[o] && len(rec.lacks[o]) > 0 }
	if !slices.ContainsFunc(acting, backfill) {
		return nil
	}
	var want []int32
	for _, o := range acting {
		if o != osdmap.NoOSD && !backfill(o) {
			want = append(want, o)
		}
	}
	for _, p := range rec.peers {
		if len(want) >= pool.Size {
			break
		}
		if !slices.Contains(acting, p.id) && !slices.Contains(want, p.id) && !backfill(p.id) {
			want = append(want, p.id)
		}
	}
	if len(want) < pool.MinSize || slices.Equal(want, acting) {
		return nil
	}
	return want
}

// wantActingEC is wantActing for an erasure-coded PG, whose positions
// are shards: where an acting member would have its shard rebuilt whole
// (rec), a former member that holds that shard complete in the
// authoritative history a keeps it while the up set's OSD is backfilled,
// so that no shard goes missing while data moves (Ceph keeps an EC PG's
// old shards acting the same way). nil when no position has such a copy.
func (pg *PG) wantActingEC(ctx context.Context, iv uint64, a memberInfo, rec *recovery, acting, targets []int32, m *osdmap.Map, reached []memberInfo) []int32 {
	backfill := func(o int32) bool { return o != osdmap.NoOSD && rec.whole[o] && len(rec.lacks[o]) > 0 }
	return pg.shardsFromFormers(ctx, iv, acting, targets, m, reached, nil, func(i int) bool { return backfill(acting[i]) }, func(mi memberInfo) bool {
		lacks, whole, err := pg.lacks(ctx, a, mi)
		maps.DeleteFunc(lacks, func(oid string, _ bool) bool { return isInternal(oid) })
		return err == nil && !whole && len(lacks) == 0
	})
}

// shardsFromFormers returns the acting set to ask for as an erasure-coded
// PG's pg_temp, or nil to go on with acting: each position i for which
// need(i) holds gets an OSD whose copy is of shard i, has a history and
// passes ok — a former member (up in map m, outside the up set), or one
// of misplaced, acting members whose copies are of other shards than
// their positions' — and the other positions keep their OSDs. A
// misplaced member that moves to its shard's position leaves its own
// empty unless another fills it: its copy there was of no use, and
// moved it keeps its shard's data in use (reset at its new position, it
// would lose it). An empty position of acting stays empty (the up set
// has no OSD for it either). Not while a pg_temp already holds
// (targets), not twice in one interval, and not below min_size. reached
// are the members peering heard from (their earlier intervals name
// former members too).
func (pg *PG) shardsFromFormers(ctx context.Context, iv uint64, acting, targets []int32, m *osdmap.Map, reached, misplaced []memberInfo, need func(i int) bool, ok func(memberInfo) bool) []int32 {
	pg.mu.Lock()
	pool, asked, up, strays := pg.pool, pg.tempAsked == pg.interval, pg.upSet, slices.Clone(pg.strays)
	pg.mu.Unlock()
	if pool == nil || len(targets) > 0 || asked || len(acting) != pool.Size {
		return nil
	}
	needed := false
	for i, o := range acting {
		needed = needed || (o != osdmap.NoOSD && need(i))
	}
	if !needed {
		return nil
	}
	cands := slices.Clone(misplaced)
	for _, o := range pg.formerMembers(m, reached, strays, acting) {
		if slices.Contains(up, o) {
			continue // it has a position of its own
		}
		mi, err := pg.query(ctx, iv, o, m.OSDs[o].BackAddr())
		if err != nil {
			pg.osd.log.Debug("former member not asked for its shard", "pg", pg.id, "osd", o, "err", err)
			continue
		}
		cands = append(cands, mi)
	}
	// the newest copy of a shard first
	slices.SortStableFunc(cands, func(a, b memberInfo) int { return newestFirst(a.info.LastUpdate, b.info.LastUpdate) })
	want := slices.Clone(acting)
	placed := map[int32]bool{}
	for changed := true; changed; { // a vacated position may take another
		changed = false
		for _, c := range cands {
			pos := int(c.info.Shard)
			if placed[c.id] || pos < 0 || pos >= len(want) || acting[pos] == osdmap.NoOSD || !need(pos) ||
				(want[pos] != acting[pos] && want[pos] != osdmap.NoOSD) || c.info.LastUpdate == (Version{}) || !ok(c) {
				continue
			}
			if from := slices.Index(want, c.id); from >= 0 {
				want[from] = osdmap.NoOSD
			}
			want[pos], placed[c.id], changed = c.id, true, true
		}
	}
	if slices.Equal(want, acting) || osdmap.Members(want) < pool.MinSize {
		return nil
	}
	if !slices.ContainsFunc(up, func(o int32) bool { return o != osdmap.NoOSD && !slices.Contains(want, o) }) {
		// every up OSD acts (members swapped positions; the MONs' pg_upmap
		// prevents this unless the pool's rule has several emits): nothing
		// would be backfilled. One of the moved members leaves, to be backfilled at
		// its up position from the shards that stay, if min_size allows;
		// else the PG stays on its old positions (settled keeps such a
		// pg_temp): an OSD holds one shard of a PG, and taking its new one
		// would leave fewer shards than min_size
		for _, c := range cands {
			if at := slices.Index(want, c.id); placed[c.id] && at >= 0 && slices.Index(up, c.id) != at && osdmap.Members(want) > pool.MinSize {
				want[at] = osdmap.NoOSD
				return want
			}
		}
		pg.osd.log.Warn("erasure-coded pg's members swapped positions and min_size leaves no room to move them: it stays on its old positions (remapped)", "pg", pg.id, "up", up, "acting", want, "min_size", pool.MinSize)
	}
	return want
}

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
	if pg.interval == iv {
		pg.tempAsked = iv
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
