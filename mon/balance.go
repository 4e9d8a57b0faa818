package mon

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/balancer"
	"github.com/shoal-project/shoal/osdmap"
)

// PGUpmapItems sets PGs' pg_upmap_items (`shoal osd pg-upmap-items`, a
// balancer plan) or, with an empty list, removes them (`shoal osd
// rm-pg-upmap-items`), all in one epoch. Each PG must exist and each
// OSD named exist and be in; a pair must change an OSD into another, and
// no OSD may appear twice as a pair's source or twice as a target; every
// pair must apply (its first OSD in the PG's set when its turn comes, its
// second not); the PG's resulting placement must keep its rule's
// failure domains (balancer.Check). Any failure is ErrInvalid or ErrNotFound and changes
// nothing.
type PGUpmapItems struct {
	Items map[osdmap.PGID][]osdmap.UpmapItem
}

// Apply implements Command.
func (c PGUpmapItems) Apply(s *State) (*osdmap.Incremental, string, error) {
	if len(c.Items) == 0 {
		return nil, "", fmt.Errorf("osd pg-upmap-items: %w: no PGs", ErrInvalid)
	}
	m := s.Map
	set, removed := 0, 0
	for pg, items := range c.Items {
		p, err := m.Pool(pg.Pool)
		if err != nil || pg.Seed >= p.PGNum {
			return nil, "", fmt.Errorf("osd pg-upmap-items: pg %s: %w", pg, ErrNotFound)
		}
		if len(items) == 0 {
			if _, ok := m.PGUpmapItems[pg]; ok {
				removed++
			}
			continue
		}
		set++
		var froms, tos []int32
		for _, it := range items {
			for _, o := range []int32{it.From, it.To} {
				if o < 0 || o >= m.MaxOSD() || !m.OSDs[o].Exists {
					return nil, "", fmt.Errorf("osd pg-upmap-items: pg %s: osd.%d: %w", pg, o, ErrNotFound)
				}
			}
			if !m.OSDs[it.To].In() {
				return nil, "", fmt.Errorf("osd pg-upmap-items: pg %s: %w: osd.%d is out", pg, ErrInvalid, it.To)
			}
			if it.From == it.To || slices.Contains(froms, it.From) || slices.Contains(tos, it.To) {
				return nil, "", fmt.Errorf("osd pg-upmap-items: pg %s: %w: pairs %v: each must move a different OSD to a different one", pg, ErrInvalid, items)
			}
			froms, tos = append(froms, it.From), append(tos, it.To)
		}
	}
	inc := s.next()
	inc.NewPGUpmapItems = maps.Clone(c.Items) // Commit adds the entries it cleans
	next, err := m.Apply(inc)
	if err != nil {
		return nil, "", fmt.Errorf("osd pg-upmap-items: %w: %v", ErrInvalid, err)
	}
	for pg, items := range c.Items {
		if len(items) == 0 {
			continue
		}
		if live, _ := next.LiveUpmapItems(pg); len(live) < len(items) {
			mp, _ := m.MapPG(pg)
			return nil, "", fmt.Errorf("osd pg-upmap-items: pg %s: %w: of pairs %v only %v apply to its set %v (each needs its first OSD in the set and its second not)", pg, ErrInvalid, items, live, mp.Raw)
		}
		if err := balancer.Check(next, pg); err != nil {
			return nil, "", fmt.Errorf("osd pg-upmap-items: %w: %v", ErrInvalid, err)
		}
	}
	return inc, fmt.Sprintf("set pg_upmap_items of %d PG(s), removed %d", set, removed), nil
}

// cleanUpmapItems returns the pg_upmap_items changes next needs
// (balancer.Clean: entries removed or trimmed to the pairs that apply)
// when inc changed what they depend on: CRUSH, OSDs, pools or upmaps.
func cleanUpmapItems(inc *osdmap.Incremental, next *osdmap.Map) map[osdmap.PGID][]osdmap.UpmapItem {
	if len(next.PGUpmapItems) == 0 || (inc.NewCrush == nil && len(inc.NewOSDs) == 0 && len(inc.NewPools) == 0 &&
		len(inc.OldPools) == 0 && inc.NewMaxOSD == 0 && len(inc.NewPGUpmap) == 0 && len(inc.NewPGUpmapItems) == 0) {
		return nil
	}
	return balancer.Clean(next)
}

// BalancerReady reports why the automatic balancer should not move PGs
// now ("" when it may), from what the MONs know: an OSD that is in but
// down (its PGs are degraded), a pg_temp (a PG backfilling), or a PG
// whose recorded active set is not its acting set now (one still
// peering since the last change, or never active) — Ceph's balancer
// waits for the same: no PG inactive, and misplaced objects under
// target_max_misplaced_ratio before a new round.
func (s *State) BalancerReady() string {
	m := s.Map
	for id, o := range m.OSDs {
		if o.Exists && o.In() && !o.Up {
			return fmt.Sprintf("osd.%d is down", id)
		}
	}
	if len(m.PGTemp) > 0 {
		return fmt.Sprintf("%d PG(s) backfilling (pg_temp)", len(m.PGTemp))
	}
	if n, _, some := s.MovingPGs(); n > 0 {
		return fmt.Sprintf("%d PG(s) not active and recovered on their acting set yet (%s)", n, strings.Join(some, " "))
	}
	return ""
}

// autoscaleKeys are the pool options of the PG autoscaler (`shoal pool
// set|get`), as Ceph names them.
var autoscaleKeys = []string{"pg_autoscale_mode", "target_size_ratio", "target_size_bytes", "pg_autoscale_bias", "pg_num_min", "pg_num_max", "bulk"}

// setAutoscale returns p with the autoscaler option key set to value
// (ok false: key is not one of them).
func setAutoscale(p *osdmap.Pool, key, value string) (np *osdmap.Pool, ok bool, err error) {
	if !slices.Contains(autoscaleKeys, key) {
		return nil, false, nil
	}
	cp := *p
	a := &cp.Autoscale
	f := func() float64 {
		v, perr := strconv.ParseFloat(value, 64)
		if perr != nil {
			err = fmt.Errorf("not a number")
		}
		return v
	}
	u := func(bits int) uint64 {
		v, perr := strconv.ParseUint(value, 10, bits)
		if perr != nil {
			err = fmt.Errorf("not a whole number")
		}
		return v
	}
	switch key {
	case "pg_autoscale_mode":
		a.Mode = value
	case "target_size_ratio":
		a.TargetRatio = f()
	case "target_size_bytes":
		a.TargetBytes = u(64)
	case "pg_autoscale_bias":
		a.Bias = f()
	case "pg_num_min":
		a.PGNumMin = uint32(u(32))
	case "pg_num_max":
		a.PGNumMax = uint32(u(32))
	case "bulk":
		a.Bulk, err = strconv.ParseBool(value)
	}
	return &cp, true, err
}
