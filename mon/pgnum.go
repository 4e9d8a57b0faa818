package mon

// pg_num and pgp_num changes. Raising pg_num splits PGs at once (each
// OSD splits its copies locally when it sees the new map, osd/split.go)
// and sets pgp_num_target; the leader then moves pgp_num toward it in
// steps, so that the children leave their parents' OSDs a few at a time
// — as Ceph's manager does (DaemonServer::adjust_pgs). Lowering pg_num
// sets pg_num_target and lowers pgp_num_target with it; the leader first
// steps pgp_num down (so that each PG to merge maps where its target
// does), then merges one PG at a time, as Ceph: it sets pg_num_pending
// to pg_num-1 once the last PG (the source) and its target are active on
// one full acting set with nothing moving (mergeStart); the OSDs hold
// both PGs' writes and the source's primary reports them clean at their
// versions (MergeReady, Ceph's MOSDPGReadyToMerge); pg_num then drops to
// pg_num_pending with those versions recorded, and each OSD merges its
// copies locally (osd/merge.go). A merge that gets no report within
// mergeReadyTimeout is cancelled and tried again later.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoal-project/shoal/balancer"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// checkPGNum reports why pool p may not have n PGs: none, outside its
// pg_num_min / pg_num_max, or more PG copies per
// in OSD than mon_max_pg_per_osd over all pools (Ceph's
// OSDMonitor::check_pg_num, which counts at least 3 OSDs); the map's own
// bounds (osdmap.MaxPGNum) are checked when the change is applied.
// Errors wrap ErrInvalid.
func (s *State) checkPGNum(p *osdmap.Pool, n uint32) error {
	a := p.Autoscale
	switch {
	case n < 1:
		return fmt.Errorf("%w: a pool has at least 1 PG", ErrInvalid)
	case a.PGNumMax > 0 && n > a.PGNumMax:
		return fmt.Errorf("%w: above the pool's pg_num_max %d", ErrInvalid, a.PGNumMax)
	case a.PGNumMin > 0 && n < a.PGNumMin:
		return fmt.Errorf("%w: below the pool's pg_num_min %d", ErrInvalid, a.PGNumMin)
	}
	in := 0
	for _, o := range s.Map.OSDs {
		if o.Exists && o.In() {
			in++
		}
	}
	copies := uint64(0)
	for _, q := range s.Map.Pools {
		pgs := q.PGNum
		if q.ID == p.ID {
			pgs = n
		}
		copies += uint64(pgs) * uint64(q.Size)
	}
	perOSD := uint64(s.ConfigFor("mon").Int("mon_max_pg_per_osd"))
	if limit := perOSD * uint64(max(in, 3)); copies > limit {
		return fmt.Errorf("%w: %d PG copies in all pools would exceed mon_max_pg_per_osd %d × %d OSDs in (at least 3 counted) = %d",
			ErrInvalid, copies, perOSD, max(in, 3), limit)
	}
	return nil
}

// MovingPGs counts the PGs whose data is moving, as the MONs see it —
// those with a pg_temp (backfilling), whose recorded active set is not
// their acting set now (still peering since the last change), or that
// activated recovering and have not recorded its end (unsettled) — and
// all PGs, and names up to five of the moving ones.
func (s *State) MovingPGs() (moving, total int, some []string) {
	m := s.Map
	for _, id := range m.PoolIDs() {
		mps, err := m.PGMappings(id)
		if err != nil {
			continue
		}
		for seed, mp := range mps {
			total++
			pg := osdmap.PGID{Pool: id, Seed: uint32(seed)}
			if s.unsettled(pg, mp.Acting) != "" {
				moving++
				if len(some) < 5 {
					some = append(some, pg.String())
				}
			}
		}
	}
	return moving, total, some
}

// PGPNumStep returns the pgp_num pool p takes next on its way to its
// pgp_num_target while moving of total PGs are moving and maxRatio is
// target_max_misplaced_ratio, and whether it takes one now: a step moves
// at most the room left under the ratio (at least one PG), as Ceph's
// DaemonServer::adjust_pgs, and none while the ratio is reached.
func PGPNumStep(p *osdmap.Pool, moving, total int, maxRatio float64) (uint32, bool) {
	target := p.PGPTarget()
	if target == p.PGPNum || total == 0 {
		return p.PGPNum, false
	}
	room := maxRatio - float64(moving)/float64(total)
	if room <= 0 && moving > 0 {
		return p.PGPNum, false
	}
	step := uint32(max(1, int(room*float64(p.PGNum))))
	if target > p.PGPNum {
		return min(target, p.PGPNum+step), true
	}
	return max(target, p.PGPNum-min(step, p.PGPNum-1)), true
}

// stepPGPNum, on the leader, moves pools' pgp_num one step toward their
// pgp_num_target (PGPNumStep; every 2 s at most): one "pool set
// pgp_num_actual" command per pool that moves.
func (d *Daemon) stepPGPNum(now time.Time) {
	if d.raft.State() != raft.Leader || now.Sub(d.pgpSteppedAt) < 2*time.Second {
		return
	}
	m, _ := d.fsm.view()
	var pools []*osdmap.Pool
	for _, id := range m.PoolIDs() {
		if p, _ := m.Pool(id); p.PGPMoving() {
			pools = append(pools, p)
		}
	}
	if len(pools) == 0 {
		return
	}
	d.pgpSteppedAt = now
	moving, total, some := d.fsm.movingPGs()
	ratio := d.config().Float("target_max_misplaced_ratio")
	for _, p := range pools {
		next, ok := PGPNumStep(p, moving, total, ratio)
		if !ok {
			d.log.Info("pgp_num step waits: PGs moving", "pool", p.Name, "moving", moving, "of", total, "some", some)
			return
		}
		if d.poolSet(p.Name, "pgp_num_actual", next) != nil {
			return
		}
		moving += int(max(next, p.PGPNum) - min(next, p.PGPNum)) // the next pool's room
	}
}

// mergeStart answers "pool set POOL pg_num_actual N" (the leader's merge
// steps, stepMerge): N = pg_num-1 starts merging the last PG into its
// target by setting pg_num_pending, once pgp_num is at most N and both
// PGs are active on one full acting set of up OSDs, with no pg_temp and
// no data moving (the MONs' view; the source's primary checks that both
// are clean before it reports them ready). Where only pg_upmap or
// pg_upmap_items keep them apart, it gives the source the target's
// instead, and the merge waits for that move. N = pg_num cancels a
// pending merge. Other values are ErrInvalid; a merge that must wait is
// ErrBusy with the reason.
func (s *State) mergeStart(p *osdmap.Pool, n uint32) (*osdmap.Incremental, string, error) {
	np := *p
	inc := s.next()
	inc.NewPools = []*osdmap.Pool{&np}
	_, _, pending := p.MergePending()
	switch {
	case n == p.PGNum && pending:
		np.PGNumPending, np.PendingSince = 0, 0
		return inc, fmt.Sprintf("pool %d: merge of pg %d.%x cancelled", p.ID, p.ID, p.PGNum-1), nil
	case n == p.PGNum:
		return nil, fmt.Sprintf("pool %d: no merge pending", p.ID), nil
	case n+1 != p.PGNum:
		return nil, "", fmt.Errorf("pool %q pg_num_actual %d: %w: a merge lowers pg_num by one (to %d); raise pg_num with pg_num", p.Name, n, ErrInvalid, p.PGNum-1)
	case pending:
		return nil, fmt.Sprintf("pool %d: merge of pg %d.%x pending already", p.ID, p.ID, p.PGNum-1), nil
	case p.PGPNum > n:
		return nil, "", fmt.Errorf("pool %q pg_num_actual %d: %w: pgp_num %d must first be at most %d", p.Name, n, ErrBusy, p.PGPNum, n)
	}
	src := osdmap.PGID{Pool: p.ID, Seed: n}
	dst := osdmap.PGID{Pool: p.ID, Seed: osdmap.MergeTarget(n, n)}
	m := s.Map
	conflict := m.MergeShardConflict(p, n)
	upmapsDiffer := !slices.Equal(m.PGUpmap[src], m.PGUpmap[dst]) || !slices.Equal(m.PGUpmapItems[src], m.PGUpmapItems[dst])
	if p.Type == osdmap.PoolErasure && (conflict != nil || upmapsDiffer) {
		// an erasure-coded source moves one step at a time (an OSD must
		// never be asked for a second shard of it while a backfill runs)
		if why := s.mergeMoveWaits(p, src, dst); why != "" {
			if conflict != nil {
				why = conflict.Error() + "; " + why
			}
			return nil, "", fmt.Errorf("pool %q: merge of pg %s into %s waits: %w: %s", p.Name, src, dst, ErrBusy, why)
		}
	}
	if conflict != nil {
		return s.mergeShardStep(p, src, dst, conflict)
	}
	if upmapsDiffer {
		// the same CRUSH input (pgp_num ≤ n) but other upmaps: move the
		// source to the target's OSDs first
		inc.NewPools = nil
		inc.NewPGUpmap = map[osdmap.PGID][]int32{src: slices.Clone(m.PGUpmap[dst])}
		inc.NewPGUpmapItems = map[osdmap.PGID][]osdmap.UpmapItem{src: slices.Clone(m.PGUpmapItems[dst])}
		return inc, fmt.Sprintf("pool %d: pg %s given the upmaps of pg %s, to merge into it", p.ID, src, dst), nil
	}
	sm, err := m.MapPG(src)
	if err != nil {
		return nil, "", err
	}
	dm, err := m.MapPG(dst)
	if err != nil {
		return nil, "", err
	}
	busy := func(why string, args ...any) (*osdmap.Incremental, string, error) {
		return nil, "", fmt.Errorf("pool %q: merge of pg %s into %s waits: %w: %s", p.Name, src, dst, ErrBusy, fmt.Sprintf(why, args...))
	}
	if !slices.Equal(sm.Acting, dm.Acting) || !slices.Equal(sm.Up, dm.Up) {
		return busy("acting sets %v and %v differ", sm.Acting, dm.Acting)
	}
	if osdmap.Members(sm.Acting) != p.Size || !slices.Equal(sm.Acting, sm.Up) {
		return busy("acting set %v is not the full up set %v", sm.Acting, sm.Up)
	}
	for _, pg := range []osdmap.PGID{src, dst} {
		if why := s.unsettled(pg, sm.Acting); why != "" {
			return busy("%s", why)
		}
	}
	np.PGNumPending, np.PendingSince = n, inc.Epoch
	return inc, fmt.Sprintf("pool %d: merging pg %s into %s (pg_num_pending %d)", p.ID, src, dst, n), nil
}

// mergeShardStep moves an erasure-coded merge's source PG one step
// toward its target's shard order, when an OSD holds one position of the
// source and another of the target (conflict, osdmap.MergeShardConflict;
// usual once pgp_num came down, as positional pg_upmaps keep the
// source's OSDs where they were). A Shoal OSD holds one shard of a PG at
// a time, so two OSDs cannot trade positions in place (Ceph's OSDs keep a
// collection per shard). The step, balancer.NextMergeStep's, becomes the
// source's pg_upmap (its pg_upmap_items dropped); mergeStart takes one
// only once the last has finished (mergeMoveWaits). With none possible
// the merge waits, with the reason. Once no OSD holds two positions,
// mergeStart gives the source the target's upmaps and the merge goes on
// as for a replicated pool.
func (s *State) mergeShardStep(p *osdmap.Pool, src, dst osdmap.PGID, conflict error) (*osdmap.Incremental, string, error) {
	st, whole, err := balancer.NextMergeStep(s.Map, p, src.Seed)
	if err == nil && !whole {
		err = errors.New("an up set has a hole") // mergeMoveWaits let it through: not expected
	}
	if err != nil {
		return nil, "", fmt.Errorf("pool %q: merge of pg %s into %s waits: %w: %v; %v: add an OSD, or raise pg_num back", p.Name, src, dst, ErrBusy, conflict, err)
	}
	how := "to the target's OSDs"
	if st.Spare != osdmap.NoOSD {
		j := slices.Index(st.Next, st.Spare)
		how = fmt.Sprintf("osd.%d's shard %d through osd.%d", st.Have[j], j, st.Spare)
	}
	inc := s.next()
	inc.NewPGUpmap = map[osdmap.PGID][]int32{src: st.Next}
	if len(s.Map.PGUpmapItems[src]) > 0 {
		inc.NewPGUpmapItems = map[osdmap.PGID][]osdmap.UpmapItem{src: nil}
	}
	return inc, fmt.Sprintf("pool %d: pg %s placed on %v (from %v: %s), toward pg %s's shard order %v, to merge into it", p.ID, src, st.Next, st.Have, how, dst, st.Want), nil
}

// mergeMoveWaits says why an erasure-coded merge's source may not be
// moved now ("" when it may): it, or its target, does not serve from its
// full up set, or its data is still moving (unsettled: a pg_temp, not yet
// activated on its acting set since its last move, or recovering there).
func (s *State) mergeMoveWaits(p *osdmap.Pool, src, dst osdmap.PGID) string {
	for _, pg := range []osdmap.PGID{src, dst} {
		mp, err := s.Map.MapPG(pg)
		if err != nil {
			return err.Error()
		}
		if osdmap.Members(mp.Up) != p.Size || !slices.Equal(mp.Acting, mp.Up) {
			return fmt.Sprintf("pg %s serves from %v, not its full up set %v", pg, mp.Acting, mp.Up)
		}
		if pg == src {
			if why := s.unsettled(src, mp.Acting); why != "" {
				return why
			}
		}
	}
	return ""
}

// MergeReady is a source primary's report that a pending merge's source
// PG and its target are clean on one acting set with their writes held,
// at the versions given (Ceph's MOSDPGReadyToMerge): pg_num drops to
// pg_num_pending, with the versions recorded in the pool's Merges for
// every OSD to check its copies against, and the source's pg_temp,
// upmaps and history go. With Ready false the merge is cancelled. A
// report for a merge no longer pending, or made at a map from before the
// merge was set pending (the versions may predate a cancelled merge,
// after which writes went on), changes nothing.
type MergeReady struct {
	Pool                         int64
	Source                       uint32
	Epoch                        osdmap.Epoch // the reporter's map
	SourceVersion, TargetVersion [2]uint64    // epoch, seq
	Ready                        bool
}

// Apply implements Command.
func (c MergeReady) Apply(s *State) (*osdmap.Incremental, string, error) {
	p, err := s.Map.Pool(c.Pool)
	if err != nil {
		return nil, "", fmt.Errorf("pg ready-to-merge: pool %d: %w", c.Pool, ErrNotFound)
	}
	if src, _, ok := p.MergePending(); !ok || src != c.Source {
		return nil, fmt.Sprintf("pg %d.%x: no such merge pending", c.Pool, c.Source), nil
	}
	if c.Epoch < p.PendingSince || c.Epoch > s.Map.Epoch {
		return nil, fmt.Sprintf("pg %d.%x: report of epoch %d, the merge pending since %d: to be made again", c.Pool, c.Source, c.Epoch, p.PendingSince), nil
	}
	np := *p
	inc := s.next()
	inc.NewPools = []*osdmap.Pool{&np}
	if !c.Ready {
		np.PGNumPending, np.PendingSince = 0, 0
		return inc, fmt.Sprintf("pg %d.%x: merge cancelled by its primary", c.Pool, c.Source), nil
	}
	np.PGNum, np.PGNumPending, np.PendingSince = p.PGNumPending, 0, 0
	np.PGPNum, np.PGPNumTarget = min(np.PGPNum, np.PGNum), min(np.PGPTarget(), np.PGNum)
	if np.PGNumTarget >= np.PGNum {
		np.PGNumTarget = 0
	}
	rec := osdmap.MergeMeta{Source: c.Source, Epoch: inc.Epoch, SourceVersion: c.SourceVersion, TargetVersion: c.TargetVersion}
	np.Merges = append(slices.Clone(p.Merges), rec)
	if over := len(np.Merges) - osdmap.MaxMergeRecords; over > 0 {
		np.Merges = np.Merges[over:]
	}
	return inc, fmt.Sprintf("pg %d.%x merged into %d.%x (pg_num %d)", c.Pool, c.Source, c.Pool, osdmap.MergeTarget(c.Source, np.PGNum), np.PGNum), nil
}

// mergeReadyTimeout is how long a pending merge waits for its source
// primary's report before the leader cancels it (the PGs' writes are
// held meanwhile), and how long it then waits before trying again.
const mergeReadyTimeout = 30 * time.Second

// stepMerge, on the leader, moves pools whose pg_num_target is below
// pg_num one merge on (every 2 s at most): it starts the next merge
// (mergeStart, through "pool set pg_num_actual") once pgp_num has come
// down to its target, and cancels a pending merge whose source primary has not
// reported it ready within mergeReadyTimeout.
func (d *Daemon) stepMerge(now time.Time) {
	if d.raft.State() != raft.Leader {
		d.merges = nil
		return
	}
	if now.Sub(d.mergeSteppedAt) < 2*time.Second {
		return
	}
	d.mergeSteppedAt = now
	if d.merges == nil {
		d.merges = map[int64]mergeTimes{}
	}
	m, _ := d.fsm.view()
	for _, id := range m.PoolIDs() {
		p, _ := m.Pool(id)
		mt := d.merges[id]
		_, _, pending := p.MergePending()
		switch {
		case pending && mt.pending.IsZero():
			mt.pending = now
		case pending && now.Sub(mt.pending) > mergeReadyTimeout:
			d.log.Warn("merge not reported ready in time: cancelled, to be tried again", "pool", p.Name, "pg", fmt.Sprintf("%d.%x", id, p.PGNum-1), "after", mergeReadyTimeout)
			d.poolSet(p.Name, "pg_num_actual", p.PGNum)
			mt = mergeTimes{retry: now.Add(mergeReadyTimeout)}
		case pending:
		case p.PGNumTargetOr() >= p.PGNum || p.PGPNum >= p.PGNum || p.PGPMoving() || now.Before(mt.retry):
			mt.pending = time.Time{}
		default:
			mt.pending = time.Time{}
			if err := d.poolSet(p.Name, "pg_num_actual", p.PGNum-1); err == nil || !errors.Is(err, ErrBusy) {
				mt.waiting = time.Time{}
			} else if mt.waiting.IsZero() {
				mt.waiting = now
			} else if now.Sub(mt.waiting) > time.Minute {
				d.log.Warn("merge waits", "pool", p.Name, "why", err)
				mt.waiting = now
			}
		}
		d.merges[id] = mt
	}
}

// mergeTimes is the leader's clock of a pool's merges: since when one is
// pending, when a cancelled one may be tried again, and since when (or,
// once warned, when last warned) the next has been waiting.
type mergeTimes struct{ pending, retry, waiting time.Time }

// poolSet commits "pool set NAME KEY VALUE" for the leader's own steps,
// logging the outcome, and returns the command's error (ErrBusy: it must
// wait).
func (d *Daemon) poolSet(pool, key string, value uint32) error {
	r, err := d.commit(monc.Command{Prefix: "pool set", Args: map[string]string{"name": pool, "key": key, "value": strconv.FormatUint(uint64(value), 10)}})
	switch {
	case err != nil:
		d.log.Warn("pool set", "pool", pool, "key", key, "err", err)
		return err
	case errors.Is(r.err, ErrBusy):
		d.log.Debug("pool set waits", "pool", pool, "key", key, "why", r.err)
	case r.err != nil:
		d.log.Warn("pool set refused", "pool", pool, "key", key, "err", r.err)
	default:
		d.log.Info(r.msg, "pool", pool)
	}
	return r.err
}
