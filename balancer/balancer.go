// Package balancer evens out how many PGs each OSD holds with
// pg_upmap_items, as Ceph's balancer module in upmap mode
// (src/pybind/mgr/balancer, OSDMap::calc_pg_upmaps): CRUSH's pseudo-random
// placement leaves some OSDs with far more PGs than their weight's share
// (max/mean 1.64 on a 360-OSD map with 4,096 PGs), and the fullest OSD
// bounds a cluster's usable capacity and its busiest disk.
//
// It is pure: a map in, pg_upmap_items changes out (Plan), no I/O. The
// MONs' leader runs it when `shoal balancer on` is set; `shoal balancer
// optimize` and `execute` run it by hand.
//
// # Method
//
// Each pool is balanced on its own, as Ceph's balancer does since
// Nautilus. An OSD's target is its share of the pool's PG copies by
// weight: target(o) = copies × w(o) / Σw, with w its CRUSH weight under
// the rule's root (device class included) times its reweight, over the
// OSDs that are in — but never more than the pool's PG count (one copy
// of each PG), the excess shared among the others. Its deviation is its count of the pool's PG copies
// minus its target. Until every deviation is within ±MaxDeviation (or
// MaxMoves PGs are changed), the OSD most above its target gives one PG
// copy to the OSD most below it that may take it: one not already in the
// PG, under the rule's root, and in a failure domain (the rule's
// chooseleaf type) no other member of the PG is in. A move is made only
// when the two deviations differ by more than one, so each move lowers
// the sum of squared deviations and the search ends. A copy moved back to
// the OSD CRUSH chose removes the pair instead of adding one, so entries
// stay as few as the moves need.
//
// Only rules of one take, one choose (or chooseleaf) and one emit are
// balanced — every rule Shoal makes; a pool with another rule is left
// alone and reported.
package balancer

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/osdmap"
)

// ErrRule means a pool's CRUSH rule has a shape the balancer does not
// handle (not one take, one choose and one emit).
var ErrRule = errors.New("rule not balanced: want one take, one choose or chooseleaf, one emit")

// Options bound an optimization.
type Options struct {
	// Pools limits the optimization to these pool ids; empty: all pools.
	Pools []int64
	// MaxDeviation is how many PG copies an OSD may hold above or below
	// its target (Ceph's upmap_max_deviation; Shoal's default, 1).
	MaxDeviation float64
	// MaxMoves bounds the PGs a plan changes (Ceph's
	// upmap_max_optimizations); 0: no bound.
	MaxMoves int
}

// Plan is an optimization's result.
type Plan struct {
	// Epoch is the map epoch the plan was computed on.
	Epoch osdmap.Epoch
	// Changes are the pg_upmap_items to set; an empty list removes a PG's
	// entry.
	Changes map[osdmap.PGID][]osdmap.UpmapItem
	// Skipped lists the pools left alone and why.
	Skipped []string
}

// domainMap is a rule's view of the OSDs: each device under its root
// with its weight there and its failure domain.
type domainMap struct {
	weight map[int32]float64 // CRUSH weight under the root, times reweight; in OSDs only
	domain map[int32]int32   // failure-domain bucket id (the device itself for type osd)
}

// ruleDomains analyses a simple rule.
func ruleDomains(m *osdmap.Map, ruleID int) (*domainMap, error) {
	c := m.Crush
	r := c.Rule(ruleID)
	if r == nil {
		return nil, fmt.Errorf("rule %d: no such rule", ruleID)
	}
	var take, domainType int32
	takes, chooses, emits := 0, 0, 0
	for _, st := range r.Steps {
		switch st.Op {
		case crush.OpTake:
			take = st.Arg1
			takes++
		case crush.OpChooseLeafFirstN, crush.OpChooseLeafIndep:
			domainType = st.Arg2
			chooses++
		case crush.OpChooseFirstN, crush.OpChooseIndep:
			if st.Arg2 != 0 {
				return nil, fmt.Errorf("rule %s: %w", r.Name, ErrRule)
			}
			domainType = 0
			chooses++
		case crush.OpEmit:
			emits++
		}
	}
	if takes != 1 || chooses != 1 || emits != 1 {
		return nil, fmt.Errorf("rule %s: %w", r.Name, ErrRule)
	}
	d := &domainMap{weight: map[int32]float64{}, domain: map[int32]int32{}}
	var walk func(id, dom int32)
	walk = func(id, dom int32) {
		b := c.Bucket(id)
		if b == nil {
			return
		}
		if domainType != 0 && b.Type == domainType {
			dom = id
		}
		for i, it := range b.Items {
			if it < 0 {
				walk(it, dom)
				continue
			}
			if it >= m.MaxOSD() || !m.OSDs[it].Exists || !m.OSDs[it].In() || b.ItemWeights[i] == 0 {
				continue
			}
			d.weight[it] = float64(b.ItemWeights[i]) / crush.WeightOne * float64(m.OSDs[it].Weight) / osdmap.WeightIn
			if domainType == 0 {
				d.domain[it] = it
			} else {
				d.domain[it] = dom
			}
		}
	}
	if take >= 0 { // a rule that takes a device directly
		return nil, fmt.Errorf("rule %s: %w", r.Name, ErrRule)
	}
	walk(take, take)
	return d, nil
}

// allowed reports whether to may replace from in members under d: to is
// eligible, not a member, and no other member shares its failure domain.
func (d *domainMap) allowed(members []int32, from, to int32) bool {
	if _, ok := d.weight[to]; !ok || slices.Contains(members, to) {
		return false
	}
	for _, o := range members {
		if o != from && o != osdmap.NoOSD && d.domain[o] == d.domain[to] {
			if _, known := d.domain[o]; known {
				return false
			}
		}
	}
	return true
}

// poolState is one pool's placement while it is balanced.
type poolState struct {
	pool    int64
	d       *domainMap
	members map[osdmap.PGID][]int32 // current raw placement
	items   map[osdmap.PGID][]osdmap.UpmapItem
	count   map[int32]int
	target  map[int32]float64
	pgs     map[int32][]osdmap.PGID // OSD → PGs holding it, in seed order
}

func newPoolState(m *osdmap.Map, id int64) (*poolState, error) {
	p, err := m.Pool(id)
	if err != nil {
		return nil, err
	}
	d, err := ruleDomains(m, p.CrushRule)
	if err != nil {
		return nil, err
	}
	ps := &poolState{pool: id, d: d, members: map[osdmap.PGID][]int32{}, items: map[osdmap.PGID][]osdmap.UpmapItem{},
		count: map[int32]int{}, target: map[int32]float64{}, pgs: map[int32][]osdmap.PGID{}}
	copies := 0
	for s := uint32(0); s < p.PGNum; s++ {
		pg := osdmap.PGID{Pool: id, Seed: s}
		mp, err := m.MapPG(pg)
		if err != nil {
			return nil, err
		}
		ps.members[pg] = mp.Raw
		// pairs that no longer apply are dropped when the PG changes
		if ps.items[pg], err = m.LiveUpmapItems(pg); err != nil {
			return nil, err
		}
		for _, o := range mp.Raw {
			if _, ok := d.weight[o]; ok {
				ps.count[o]++
				ps.pgs[o] = append(ps.pgs[o], pg)
				copies++
			}
		}
	}
	ps.target = targets(d.weight, float64(copies), float64(p.PGNum))
	return ps, nil
}

// targets shares copies among OSDs by weight, none above capacity (an
// OSD holds at most one copy of each PG): an OSD whose share would pass
// it gets exactly capacity, and the rest is shared again among the others
// (water-filling), so that a heavy OSD's unreachable share does not leave
// the others looking overfull.
func targets(weight map[int32]float64, copies, capacity float64) map[int32]float64 {
	t := make(map[int32]float64, len(weight))
	open := maps.Clone(weight)
	for len(open) > 0 {
		total := 0.0
		for _, w := range open {
			total += w
		}
		if total == 0 {
			break
		}
		capped := false
		for o, w := range open {
			if share := copies * w / total; share > capacity {
				t[o], copies, capped = capacity, copies-capacity, true
				delete(open, o)
			}
		}
		if !capped {
			for o, w := range open {
				t[o] = copies * w / total
			}
			break
		}
	}
	return t
}

func (ps *poolState) deviation(o int32) float64 { return float64(ps.count[o]) - ps.target[o] }

// osdsByDeviation returns the pool's OSDs, most above target first (ties
// by id, so plans are deterministic).
func (ps *poolState) osdsByDeviation() []int32 {
	osds := make([]int32, 0, len(ps.target))
	for o := range ps.target {
		osds = append(osds, o)
	}
	sort.Slice(osds, func(i, j int) bool {
		di, dj := ps.deviation(osds[i]), ps.deviation(osds[j])
		if di != dj {
			return di > dj
		}
		return osds[i] < osds[j]
	})
	return osds
}

// orderable reports whether moving pg's copy from over to under keeps its
// items expressible in Ceph's order (each pair applies to the set the
// ones before it left): under must not be a member CRUSH chose that an
// earlier pair moved away, unless the move returns it there.
func (ps *poolState) orderable(pg osdmap.PGID, from, to int32) bool {
	for _, it := range ps.items[pg] {
		if it.From == to {
			return it.To == from
		}
	}
	return true
}

// move replaces from by to in pg's placement and its items.
func (ps *poolState) move(pg osdmap.PGID, from, to int32) {
	mem := ps.members[pg]
	mem[slices.Index(mem, from)] = to
	items := ps.items[pg]
	if i := slices.IndexFunc(items, func(it osdmap.UpmapItem) bool { return it.To == from }); i >= 0 {
		if items[i].From == to { // back where CRUSH put it
			items = slices.Delete(items, i, i+1)
		} else {
			items[i].To = to
		}
	} else {
		items = append(items, osdmap.UpmapItem{From: from, To: to})
	}
	ps.items[pg] = items
	ps.count[from]--
	ps.count[to]++
	ps.pgs[from] = slices.DeleteFunc(ps.pgs[from], func(p osdmap.PGID) bool { return p == pg })
	ps.pgs[to] = append(ps.pgs[to], pg)
}

// step makes one move, the most useful one allowed, and returns the PG
// it changed; false when the pool is balanced or nothing may move.
func (ps *poolState) step(maxDev float64) (osdmap.PGID, bool) {
	order := ps.osdsByDeviation()
	if len(order) < 2 || (ps.deviation(order[0]) <= maxDev && ps.deviation(order[len(order)-1]) >= -maxDev) {
		return osdmap.PGID{}, false
	}
	for _, over := range order {
		dOver := ps.deviation(over)
		if dOver <= 0 {
			break
		}
		for i := len(order) - 1; i >= 0; i-- {
			under := order[i]
			dUnder := ps.deviation(under)
			if dUnder >= 0 || dOver-dUnder <= 1 {
				break
			}
			if dOver <= maxDev && dUnder >= -maxDev {
				break
			}
			for _, pg := range ps.pgs[over] {
				if ps.d.allowed(ps.members[pg], over, under) && ps.orderable(pg, over, under) {
					ps.move(pg, over, under)
					return pg, true
				}
			}
		}
	}
	return osdmap.PGID{}, false
}

// Optimize computes a plan for m under o. Pools whose rule it cannot
// balance are listed in Plan.Skipped; an unknown pool in o.Pools is an
// error (osdmap.ErrNoPool).
func Optimize(m *osdmap.Map, o Options) (*Plan, error) {
	plan := &Plan{Epoch: m.Epoch, Changes: map[osdmap.PGID][]osdmap.UpmapItem{}}
	pools := o.Pools
	if len(pools) == 0 {
		pools = m.PoolIDs()
	}
	for _, id := range pools {
		ps, err := newPoolState(m, id)
		if errors.Is(err, ErrRule) {
			plan.Skipped = append(plan.Skipped, fmt.Sprintf("pool %d: %v", id, err))
			continue
		}
		if err != nil {
			return nil, err
		}
		changed := map[osdmap.PGID]bool{}
		for o.MaxMoves == 0 || len(plan.Changes)+len(changed) < o.MaxMoves {
			pg, ok := ps.step(o.MaxDeviation)
			if !ok {
				break
			}
			changed[pg] = true
		}
		for pg := range changed {
			if !slices.Equal(ps.items[pg], m.PGUpmapItems[pg]) {
				plan.Changes[pg] = ps.items[pg]
			}
		}
	}
	dropRefused(m, plan)
	return plan, nil
}

// dropRefused leaves out of plan the PGs whose new pairs would not all
// apply or would break their rule once applied — those the MONs refuse
// (a PG whose pg_upmap is itself refused, for one): a plan is committed
// whole or not at all, so one such PG would stop every round.
func dropRefused(m *osdmap.Map, plan *Plan) {
	inc := &osdmap.Incremental{Epoch: m.Epoch + 1}
	plan.Apply(inc)
	next, err := m.Apply(inc)
	if err != nil {
		clear(plan.Changes)
		return
	}
	for pg, items := range plan.Changes {
		if len(items) == 0 {
			continue
		}
		if live, err := next.LiveUpmapItems(pg); err != nil || len(live) != len(items) || Check(next, pg) != nil {
			delete(plan.Changes, pg)
		}
	}
}

// Apply returns the incremental change a plan makes: its pg_upmap_items.
func (p *Plan) Apply(inc *osdmap.Incremental) {
	if inc.NewPGUpmapItems == nil {
		inc.NewPGUpmapItems = map[osdmap.PGID][]osdmap.UpmapItem{}
	}
	for pg, items := range p.Changes {
		inc.NewPGUpmapItems[pg] = items
	}
}

// PoolScore is how evenly a pool's PG copies sit on its OSDs.
type PoolScore struct {
	Pool   int64   `json:"pool"`
	Name   string  `json:"pool_name"`
	OSDs   int     `json:"osds"`
	Copies int     `json:"pg_copies"`
	Min    int     `json:"min_pgs"`
	Max    int     `json:"max_pgs"`
	Mean   float64 `json:"mean_pgs"`
	// MaxDeviation is the largest |count − target| of any OSD, in PG copies.
	MaxDeviation float64 `json:"max_deviation"`
	// MaxOverMean is the highest count/target ratio: 1 is perfect balance
	// (the figure Ceph's docs quote as max/mean for equal weights).
	MaxOverMean float64 `json:"max_over_target"`
	// StdDev is the standard deviation of count − target.
	StdDev  float64 `json:"stddev"`
	Skipped string  `json:"skipped,omitempty"`
}

// Eval scores each pool of m (or of pools).
func Eval(m *osdmap.Map, pools []int64) ([]PoolScore, error) {
	if len(pools) == 0 {
		pools = m.PoolIDs()
	}
	var out []PoolScore
	for _, id := range pools {
		p, err := m.Pool(id)
		if err != nil {
			return nil, err
		}
		sc := PoolScore{Pool: id, Name: p.Name}
		ps, err := newPoolState(m, id)
		if errors.Is(err, ErrRule) {
			sc.Skipped = err.Error()
			out = append(out, sc)
			continue
		}
		if err != nil {
			return nil, err
		}
		sc.OSDs, sc.Min = len(ps.target), math.MaxInt
		sum2 := 0.0
		for o, t := range ps.target {
			c := ps.count[o]
			sc.Copies += c
			sc.Min, sc.Max = min(sc.Min, c), max(sc.Max, c)
			dev := float64(c) - t
			sc.MaxDeviation = max(sc.MaxDeviation, math.Abs(dev))
			if t > 0 {
				sc.MaxOverMean = max(sc.MaxOverMean, float64(c)/t)
			}
			sum2 += dev * dev
		}
		if sc.OSDs > 0 {
			sc.Mean = float64(sc.Copies) / float64(sc.OSDs)
			sc.StdDev = math.Sqrt(sum2 / float64(sc.OSDs))
		} else {
			sc.Min = 0
		}
		out = append(out, sc)
	}
	return out, nil
}

// Check reports whether a PG's placement, its pg_upmap_items applied,
// keeps its rule: no two members in one failure domain and every member
// under the rule's root. A pool whose rule the balancer does not handle
// passes (ErrRule is not returned: nothing to check against).
func Check(m *osdmap.Map, pg osdmap.PGID) error {
	return check(m, pg, map[int]*domainMap{})
}

// check is Check with the rules' analyses kept in rules.
func check(m *osdmap.Map, pg osdmap.PGID, rules map[int]*domainMap) error {
	p, err := m.Pool(pg.Pool)
	if err != nil {
		return err
	}
	if pg.Seed >= p.PGNum {
		return fmt.Errorf("pg %s: pool %s has %d PGs", pg, p.Name, p.PGNum)
	}
	d, seen := rules[p.CrushRule]
	if !seen {
		d, err = ruleDomains(m, p.CrushRule)
		if err != nil && !errors.Is(err, ErrRule) {
			return err
		}
		rules[p.CrushRule] = d
	}
	if d == nil {
		return nil
	}
	mp, err := m.MapPG(pg)
	if err != nil {
		return err
	}
	taken := map[int32]int32{}
	for _, o := range mp.Raw {
		if o == osdmap.NoOSD {
			continue
		}
		dom, ok := d.domain[o]
		if !ok {
			return fmt.Errorf("pg %s: osd.%d is out or not under rule %d's root", pg, o, p.CrushRule)
		}
		if other, dup := taken[dom]; dup {
			return fmt.Errorf("pg %s: osd.%d and osd.%d share the failure domain %s", pg, other, o, m.Crush.ItemName(dom))
		}
		taken[dom] = o
	}
	return nil
}

// Clean returns the changes the pg_upmap_items entries of m need (Ceph's
// OSDMap::clean_pg_upmaps): an entry is removed (an empty list) when its
// PG no longer exists, it names OSDs that no longer exist, none of its
// pairs applies, or the placement breaks its rule (after a CRUSH
// change); an entry some of whose pairs no longer apply keeps only the
// others.
func Clean(m *osdmap.Map) map[osdmap.PGID][]osdmap.UpmapItem {
	out := map[osdmap.PGID][]osdmap.UpmapItem{}
	rules := map[int]*domainMap{}
	for pg, items := range m.PGUpmapItems {
		p, err := m.Pool(pg.Pool)
		if err != nil || pg.Seed >= p.PGNum {
			out[pg] = nil
			continue
		}
		gone := false
		for _, it := range items {
			gone = gone || !exists(m, it.From) || !exists(m, it.To)
		}
		if gone {
			out[pg] = nil
			continue
		}
		live, err := m.LiveUpmapItems(pg)
		switch {
		case err != nil || len(live) == 0 || check(m, pg, rules) != nil:
			out[pg] = nil
		case len(live) < len(items):
			out[pg] = live
		}
	}
	return out
}

func exists(m *osdmap.Map, o int32) bool {
	return o >= 0 && o < m.MaxOSD() && m.OSDs[o].Exists
}

// ErrNoSpare: ShardOrderStep found no step that keeps the PG's rule.
var ErrNoSpare = errors.New("no spare OSD")

// ShardOrderStep returns the next placement of an erasure-coded PG of
// rule placed on have (its OSDs by shard position, no holes) toward
// want, the same size. An OSD holds one shard of a PG at a time, so no
// OSD may change position in one step: every position whose OSD in want
// is not in the placement takes it, together, except those whose new
// OSD would share a failure domain with another of the next placement
// (an OSD still to leave is there; those wait for a later step). When no
// position can (the positions form cycles), the first OSD that changes
// position moves instead to a spare, which frees it for its position in
// want: preferably in a failure domain no OSD of have or want is in
// (Spare), else in one no other OSD of have is in — usually the leaving
// OSD's own, as when the PG spans every failure domain (4+2 on six
// hosts); that spare then leaves in the same step as the OSD sharing its
// domain enters. A cycle of L positions takes L+1 steps: L+1 backfills
// through a spare of a domain of its own, 2L through spares of the
// cycle's own domains (whose last step backfills all L positions at
// once, served meanwhile by the spares under the PG's pg_temp, as a
// replicated remap is). spare is the OSD used that way, or NoOSD; next is have when
// have is want. The error is ErrNoSpare when no step keeps the rule: no
// OSD qualifies as a spare, or the rule is not one the balancer reads
// (ErrRule: its failure domains unknown, no OSD can be checked). The MONs
// step an erasure-coded merge's source this way (mon's mergeShardStep).
func ShardOrderStep(m *osdmap.Map, rule int, have, want []int32) (next []int32, spare int32, err error) {
	if slices.Equal(have, want) {
		return slices.Clone(have), osdmap.NoOSD, nil
	}
	d, err := ruleDomains(m, rule)
	if err != nil {
		return nil, osdmap.NoOSD, fmt.Errorf("%w: %v", ErrNoSpare, err)
	}
	next = slices.Clone(have)
	for i := range have {
		if next[i] != want[i] && !slices.Contains(have, want[i]) {
			next[i] = want[i]
		}
	}
	for i := d.clash(have, next); i >= 0; i = d.clash(have, next) {
		next[i] = have[i] // waits for the OSD sharing its domain to leave
	}
	if !slices.Equal(next, have) {
		return next, osdmap.NoOSD, nil
	}
	j := slices.IndexFunc(have, func(o int32) bool { i := slices.Index(want, o); return i >= 0 && have[i] != o })
	if j < 0 {
		return nil, osdmap.NoOSD, fmt.Errorf("%w: no position of %v can take its OSD of %v without two in one failure domain", ErrNoSpare, have, want)
	}
	// the OSD moved out stays in the PG (at another position, later)
	members := slices.Concat(have, want)
	spare, ok := Spare(m, rule, members, osdmap.NoOSD, members)
	if !ok {
		spare, ok = Spare(m, rule, have, have[j], members)
	}
	if !ok {
		return nil, osdmap.NoOSD, fmt.Errorf("%w: no up, in OSD outside both PGs in a failure domain no other OSD of %v is in, to move osd.%d's shard %d through", ErrNoSpare, have, have[j], j)
	}
	next[j] = spare
	return next, spare, nil
}

// clash returns a position of next whose OSD differs from have's and
// is not under the rule's root or shares a failure domain with another
// OSD of next, or -1 when there is none.
func (d *domainMap) clash(have, next []int32) int {
	for i, o := range next {
		if o == have[i] {
			continue
		}
		dom := d.domain[o]
		if _, ok := d.weight[o]; !ok {
			return i
		}
		for k, p := range next {
			if k != i && p != osdmap.NoOSD {
				if pd, known := d.domain[p]; known && pd == dom {
					return i
				}
			}
		}
	}
	return -1
}

// MergeStep is the next step of an erasure-coded merge's source PG
// toward its target's shard order (NextMergeStep): from the source's up
// set Have to Next, toward the target's up set Want; Spare is the OSD a
// shard moves through, or NoOSD.
type MergeStep struct {
	Have, Want, Next []int32
	Spare            int32
}

// NextMergeStep is ShardOrderStep for erasure-coded pool p's merge of PG
// source into its target (osdmap.MergeTarget). whole is false, with no
// step, while either PG's up set has a hole: the merge then waits for
// its PGs, not for positions. Errors: the PGs' mapping errors, and
// ShardOrderStep's (ErrNoSpare). The MONs take each step (mon's
// mergeShardStep); health warns when there is none (status,
// POOL_MERGE_BLOCKED).
func NextMergeStep(m *osdmap.Map, p *osdmap.Pool, source uint32) (st MergeStep, whole bool, err error) {
	sm, err := m.MapPG(osdmap.PGID{Pool: p.ID, Seed: source})
	if err != nil {
		return st, false, err
	}
	dm, err := m.MapPG(osdmap.PGID{Pool: p.ID, Seed: osdmap.MergeTarget(source, source)})
	if err != nil {
		return st, false, err
	}
	if osdmap.Members(sm.Up) != p.Size || osdmap.Members(dm.Up) != p.Size {
		return st, false, nil
	}
	st.Have, st.Want = sm.Up, dm.Up
	st.Next, st.Spare, err = ShardOrderStep(m, p.CrushRule, st.Have, st.Want)
	return st, true, err
}

// Spare picks an OSD to stand in for from among members, a PG's
// placement under rule (from may be NoOSD: an OSD to add): up, in and
// under the rule's root, neither a member nor in avoid, and in a failure
// domain no member other than from is in; of those, the one of most
// weight (then the lowest id). False when none does, and for a rule the
// balancer does not analyse (ErrRule: its failure domains unknown). The
// MONs use it to move an erasure-coded PG's shard through another OSD
// when two of its OSDs must trade positions (mon's merge steps).
func Spare(m *osdmap.Map, rule int, members []int32, from int32, avoid []int32) (int32, bool) {
	d, err := ruleDomains(m, rule)
	if err != nil {
		return osdmap.NoOSD, false
	}
	best, bestW := osdmap.NoOSD, -1.0
	for o := range m.MaxOSD() {
		info := m.OSDs[o]
		if !info.Exists || !info.Up || !info.In() || slices.Contains(avoid, o) || !d.allowed(members, from, o) {
			continue
		}
		if w := d.weight[o]; w > bestW {
			best, bestW = o, w
		}
	}
	return best, best != osdmap.NoOSD
}
