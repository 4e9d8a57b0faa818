package mon

// pg_num and pgp_num changes: `pool set pg_num` splits PGs at once (each
// OSD splits its copies locally when it sees the new map, osd/split.go)
// and sets pgp_num_target; the leader then moves pgp_num toward it in
// steps, so that the children leave their parents' OSDs a few at a time
// — as Ceph's manager does (DaemonServer::adjust_pgs). Merging (lowering
// pg_num) is not supported.

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// checkPGNum reports why pool p may not have n PGs: fewer than it has
// (a merge), outside its pg_num_min / pg_num_max, or more PG copies per
// in OSD than mon_max_pg_per_osd over all pools (Ceph's
// OSDMonitor::check_pg_num, which counts at least 3 OSDs); the map's own
// bounds (osdmap.MaxPGNum) are checked when the change is applied.
// Errors wrap ErrInvalid.
func (s *State) checkPGNum(p *osdmap.Pool, n uint32) error {
	a := p.Autoscale
	switch {
	case n < p.PGNum:
		return fmt.Errorf("%w: lowering pg_num from %d merges PGs, which Shoal does not support", ErrInvalid, p.PGNum)
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
// those with a pg_temp (backfilling) or whose recorded active set is not
// their acting set now (still peering since the last change) — and all
// PGs, and names up to five of the moving ones.
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
			_, temp := m.PGTemp[pg]
			h := s.History(pg)
			if temp || len(h) == 0 || !slices.Equal(h[len(h)-1].Acting, mp.Acting) {
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
		r, err := d.commit(monc.Command{Prefix: "pool set", Args: map[string]string{"name": p.Name, "key": "pgp_num_actual", "value": strconv.FormatUint(uint64(next), 10)}})
		if err != nil {
			d.log.Warn("pgp_num step", "pool", p.Name, "err", err)
			return
		}
		if r.err != nil {
			d.log.Warn("pgp_num step refused", "pool", p.Name, "err", r.err)
			return
		}
		d.log.Info("pgp_num step", "pool", p.Name, "pgp_num", next, "target", p.PGPNumTarget)
		moving += int(max(next, p.PGPNum) - min(next, p.PGPNum)) // the next pool's room
	}
}
