package balancer_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/balancer"
	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/osdmap"
)

// testMap is the 360-OSD map of the placement benchmarks (3 racks × 10
// hosts × 12 OSDs, failure domain host) with a 3-replica pool of 4,096
// PGs, an erasure-coded 4+2 pool of 1,024 PGs, one OSD out, and one host
// whose OSDs weigh twice as much.
func testMap(t testing.TB) *osdmap.Map {
	t.Helper()
	c, err := crush.Simple(crush.SimpleSpec{Racks: 3, HostsPerRack: 10, OSDsPerHost: 12})
	if err != nil {
		t.Fatal(err)
	}
	c = c.Clone()
	for o := int32(0); o < 12; o++ { // the first host's OSDs
		if err := c.AdjustItemWeight(o, 2*crush.WeightOne); err != nil {
			t.Fatal(err)
		}
	}
	inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: 360, NewOSDs: map[int32]osdmap.OSD{},
		NewPools: []*osdmap.Pool{
			{ID: 1, Name: "data", Type: osdmap.PoolReplicated, Size: 3, MinSize: 2, PGNum: 4096, PGPNum: 4096, CrushRule: 0,
				Flags: osdmap.FlagHashPSPool, ObjectHash: osdmap.HashRjenkins},
			{ID: 2, Name: "ec", Type: osdmap.PoolErasure, Size: 6, MinSize: 5, PGNum: 1024, PGPNum: 1024, CrushRule: 1,
				Flags: osdmap.FlagHashPSPool, ObjectHash: osdmap.HashRjenkins, ECProfile: "k4m2"},
		}}
	for i := int32(0); i < 360; i++ {
		inc.NewOSDs[i] = osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}
	}
	inc.NewOSDs[100] = osdmap.OSD{Exists: true, Up: true, Weight: 0, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}
	m, err := osdmap.New("", c).Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func applyPlan(t testing.TB, m *osdmap.Map, p *balancer.Plan) *osdmap.Map {
	t.Helper()
	inc := &osdmap.Incremental{Epoch: m.Epoch + 1}
	p.Apply(inc)
	n, err := m.Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hostOf is the failure domain of an OSD of crush.Simple's map.
func hostOf(m *osdmap.Map, o int32) string { return m.Crush.Ancestor(o, "host") }

// The balancer brings every OSD of both pools within one PG copy of its
// weighted share (counted by osdmap's own distribution, not the
// balancer's), keeps failure domains and erasure-coded positions, and
// moves not many more copies than the least any plan could; a second
// pass finds nothing to do.
func TestBalance360(t *testing.T) {
	m := testMap(t)
	before := map[int64]osdmap.Distribution{}
	for _, pool := range []int64{1, 2} {
		d, err := m.PGDistribution(pool)
		if err != nil {
			t.Fatal(err)
		}
		before[pool] = d
	}
	plan, err := balancer.Optimize(m, balancer.Options{MaxDeviation: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Skipped) > 0 {
		t.Fatalf("skipped: %v", plan.Skipped)
	}
	n := applyPlan(t, m, plan)
	for _, pool := range []int64{1, 2} {
		d, err := n.PGDistribution(pool)
		if err != nil {
			t.Fatal(err)
		}
		b := before[pool]
		// each copy above target+1 needs a move off its OSD, each missing
		// below target-1 one onto it
		over, under, moved := 0, 0, 0
		for o, exp := range b.Expected {
			if c := float64(b.Count[o]); c > exp+1 {
				over += int(math.Ceil(c - (exp + 1)))
			} else if c < exp-1 {
				under += int(math.Ceil(exp - 1 - c))
			}
		}
		least := max(over, under)
		for o, exp := range d.Expected {
			if c := float64(d.Count[o]); c > exp+1 || c < exp-1 {
				t.Errorf("pool %d: osd.%d holds %d PG copies, target %.2f", pool, o, d.Count[o], exp)
			}
		}
		if d.Count[100] != 0 {
			t.Errorf("pool %d: the out osd.100 holds %d PGs", pool, d.Count[100])
		}
		p, _ := n.Pool(pool)
		for s := uint32(0); s < p.PGNum; s++ {
			pg := osdmap.PGID{Pool: pool, Seed: s}
			was, _ := m.MapPG(pg)
			now, _ := n.MapPG(pg)
			hosts := map[string]bool{}
			for i, o := range now.Up {
				if hosts[hostOf(n, o)] {
					t.Fatalf("pg %s: %v puts two copies on host %s", pg, now.Up, hostOf(n, o))
				}
				hosts[hostOf(n, o)] = true
				if o != was.Up[i] {
					moved++
					if p.Type == osdmap.PoolErasure && slices.Contains(now.Up, was.Up[i]) {
						t.Fatalf("pg %s: %v -> %v moved a shard that stays", pg, was.Up, now.Up)
					}
				}
			}
		}
		t.Logf("pool %d: max/mean %.3f -> %.3f, stddev %.2f -> %.2f, %d copies moved (at least %d needed), %d PGs with items",
			pool, b.MaxRatio, d.MaxRatio, b.StdDev, d.StdDev, moved, least, countItems(n, pool))
		if d.MaxRatio > 1.05 {
			t.Errorf("pool %d: max/mean %.3f, want ≤ 1.05", pool, d.MaxRatio)
		}
		if float64(moved) > 1.1*float64(least) {
			t.Errorf("pool %d: %d copies moved, more than 1.1 × the %d needed", pool, moved, least)
		}
	}
	again, err := balancer.Optimize(n, balancer.Options{MaxDeviation: 1})
	if err != nil || len(again.Changes) > 0 {
		t.Fatalf("second pass: %d changes, %v", len(again.Changes), err)
	}
	scores, err := balancer.Eval(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scores {
		if s.MaxDeviation > 1 || s.OSDs != 359 {
			t.Errorf("eval after: %+v", s)
		}
	}
}

func countItems(m *osdmap.Map, pool int64) int {
	n := 0
	for pg := range m.PGUpmapItems {
		if pg.Pool == pool {
			n++
		}
	}
	return n
}

// A bounded plan changes at most MaxMoves PGs, and rounds of bounded
// plans reach the same balance; an OSD reweighted down afterwards is
// brought back within one copy of its smaller share.
func TestBalanceInRounds(t *testing.T) {
	m := testMap(t)
	rounds := 0
	for ; rounds < 1000; rounds++ {
		plan, err := balancer.Optimize(m, balancer.Options{MaxDeviation: 1, MaxMoves: 50, Pools: []int64{1}})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Changes) > 50 {
			t.Fatalf("round %d: %d PGs changed, bound 50", rounds, len(plan.Changes))
		}
		if len(plan.Changes) == 0 {
			break
		}
		m = applyPlan(t, m, plan)
	}
	d, _ := m.PGDistribution(1)
	if d.MaxRatio > 1.05 || rounds < 2 {
		t.Fatalf("after %d rounds: max/mean %.3f", rounds, d.MaxRatio)
	}
	// reweighting an OSD down makes the next plan take copies off it,
	// some of them back to CRUSH's choice
	inc := &osdmap.Incremental{Epoch: m.Epoch + 1, NewOSDs: map[int32]osdmap.OSD{50: {Exists: true, Up: true, Weight: osdmap.WeightIn / 2, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}}}
	m2, err := m.Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := balancer.Optimize(m2, balancer.Options{MaxDeviation: 1, Pools: []int64{1}})
	if err != nil {
		t.Fatal(err)
	}
	m3 := applyPlan(t, m2, plan)
	d3, _ := m3.PGDistribution(1)
	if c, exp := float64(d3.Count[50]), d3.Expected[50]; c > exp+1 {
		t.Errorf("osd.50 at half weight holds %v copies, target %.2f", c, exp)
	}
	t.Logf("%d rounds of 50; after reweighting osd.50: %d PGs changed", rounds, len(plan.Changes))
}

// twoStepMap has a rule of two choose steps (hosts, then an OSD in
// each), whose failure domains the balancer does not read, and a
// 2-replica pool under it on four OSDs of two hosts.
func twoStepMap(t *testing.T) *osdmap.Map {
	t.Helper()
	src := `
device 0 osd.0
device 1 osd.1
device 2 osd.2
device 3 osd.3
type 0 osd
type 1 host
type 2 root
host a { id -2 alg straw2 hash 0 item osd.0 weight 1.0 item osd.1 weight 1.0 }
host b { id -3 alg straw2 hash 0 item osd.2 weight 1.0 item osd.3 weight 1.0 }
root default { id -1 alg straw2 hash 0 item a weight 2.0 item b weight 2.0 }
rule two_steps {
	id 0
	type replicated
	step take default
	step choose firstn 2 type host
	step chooseleaf firstn 1 type osd
	step emit
}
`
	c, err := crush.Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: 4, NewOSDs: map[int32]osdmap.OSD{},
		NewPools: []*osdmap.Pool{{ID: 1, Name: "p", Type: osdmap.PoolReplicated, Size: 2, MinSize: 1, PGNum: 64, PGPNum: 64,
			Flags: osdmap.FlagHashPSPool, ObjectHash: osdmap.HashRjenkins}}}
	for i := int32(0); i < 4; i++ {
		inc.NewOSDs[i] = osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}
	}
	m2, err := osdmap.New("", c).Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	return m2
}

// Pools the balancer cannot handle are named, not touched; unknown pools
// are an error.
func TestBalanceBadInput(t *testing.T) {
	m := testMap(t)
	if _, err := balancer.Optimize(m, balancer.Options{Pools: []int64{9}}); !errors.Is(err, osdmap.ErrNoPool) {
		t.Fatalf("unknown pool: %v", err)
	}
	m2 := twoStepMap(t)
	plan, err := balancer.Optimize(m2, balancer.Options{MaxDeviation: 1})
	if err != nil || len(plan.Changes) != 0 || len(plan.Skipped) != 1 {
		t.Fatalf("two-step rule: %+v, %v", plan, err)
	}
	if _, err := balancer.Eval(m2, []int64{7}); !errors.Is(err, osdmap.ErrNoPool) {
		t.Fatalf("eval of an unknown pool: %v", err)
	}
}

// An OSD whose weight would give it more copies than the pool has PGs
// holds one copy of every PG, and the others share the rest: they end
// within one copy of that share.
func TestBalanceHeavyOSD(t *testing.T) {
	c, err := crush.Simple(crush.SimpleSpec{HostsPerRack: 6, OSDsPerHost: 1})
	if err != nil {
		t.Fatal(err)
	}
	c = c.Clone()
	if err := c.AdjustItemWeight(0, 10*crush.WeightOne); err != nil {
		t.Fatal(err)
	}
	inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: 6, NewOSDs: map[int32]osdmap.OSD{},
		NewPools: []*osdmap.Pool{{ID: 1, Name: "data", Type: osdmap.PoolReplicated, Size: 3, MinSize: 2, PGNum: 64, PGPNum: 64,
			Flags: osdmap.FlagHashPSPool, ObjectHash: osdmap.HashRjenkins}}}
	for i := int32(0); i < 6; i++ {
		inc.NewOSDs[i] = osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}
	}
	m, err := osdmap.New("", c).Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := balancer.Optimize(m, balancer.Options{MaxDeviation: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := applyPlan(t, m, plan)
	d, _ := n.PGDistribution(1)
	if d.Count[0] != 64 {
		t.Errorf("osd.0 (weight 10 of 15) holds %d copies, want one of each of the 64 PGs", d.Count[0])
	}
	for o := int32(1); o < 6; o++ { // the other 128 copies, 25.6 each
		if c := d.Count[o]; c < 25 || c > 26 {
			t.Errorf("osd.%d holds %d copies, want 25 or 26", o, c)
		}
	}
	scores, _ := balancer.Eval(n, nil)
	if scores[0].MaxDeviation > 1 {
		t.Errorf("eval: %+v", scores[0])
	}
}

// Clean removes entries of PGs and OSDs that are gone and entries none of
// whose pairs apply, and trims an entry to the pairs that still apply.
func TestClean(t *testing.T) {
	m := testMap(t)
	pg := osdmap.PGID{Pool: 1, Seed: 7}
	mp, _ := m.MapPG(pg)
	var free []int32 // OSDs on hosts the PG does not use
	for o := int32(0); o < 360 && len(free) < 3; o++ {
		if o != 100 && !slices.ContainsFunc(mp.Up, func(x int32) bool { return hostOf(m, x) == hostOf(m, o) }) &&
			!slices.ContainsFunc(free, func(x int32) bool { return hostOf(m, x) == hostOf(m, o) }) {
			free = append(free, o)
		}
	}
	live := osdmap.UpmapItem{From: mp.Up[1], To: free[0]}
	dead := osdmap.UpmapItem{From: free[1], To: free[2]} // free[1] is not in the set
	gone := osdmap.PGID{Pool: 1, Seed: 5000}             // beyond pg_num
	n, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewPGUpmapItems: map[osdmap.PGID][]osdmap.UpmapItem{
		pg: {live, dead}, {Pool: 1, Seed: 8}: {dead}, gone: {live}}})
	if err != nil {
		t.Fatal(err)
	}
	got := balancer.Clean(n)
	if len(got) != 3 || !slices.Equal(got[pg], []osdmap.UpmapItem{live}) || got[osdmap.PGID{Pool: 1, Seed: 8}] != nil || got[gone] != nil {
		t.Fatalf("Clean: %v", got)
	}
	if _, ok := got[osdmap.PGID{Pool: 1, Seed: 8}]; !ok {
		t.Fatal("an entry whose only pair is dead is kept")
	}
}

// A plan survives its file form, prints as the commands that make it
// (removals too), and a malformed file is an error.
func TestPlanFile(t *testing.T) {
	p := &balancer.Plan{Epoch: 42, Changes: map[osdmap.PGID][]osdmap.UpmapItem{
		{Pool: 2, Seed: 0x1f}: {{From: 4, To: 7}, {From: 1, To: 3}},
		{Pool: 1, Seed: 3}:    {},
	}}
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back balancer.Plan
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if back.Epoch != 42 || len(back.Changes) != 2 || !slices.Equal(back.Changes[osdmap.PGID{Pool: 2, Seed: 0x1f}], p.Changes[osdmap.PGID{Pool: 2, Seed: 0x1f}]) ||
		back.Changes[osdmap.PGID{Pool: 1, Seed: 3}] == nil || len(back.Changes[osdmap.PGID{Pool: 1, Seed: 3}]) != 0 {
		t.Fatalf("round trip: %+v from %s", back, b)
	}
	var out strings.Builder
	if err := back.Commands(&out); err != nil {
		t.Fatal(err)
	}
	if want := "shoal osd rm-pg-upmap-items 1.3\nshoal osd pg-upmap-items 2.1f 4 7 1 3\n"; out.String() != want {
		t.Fatalf("commands:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, bad := range []string{`{`, `{"pg_upmap_items":[{"pgid":"x.1"}]}`} {
		if err := back.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// walkShardOrder takes PG 2.seed of m from have to want by
// ShardOrderStep, failing the test if it takes more than limit steps, a
// step fails, an OSD changes position within a step, or a step puts two
// shards on one host; each sees every step.
func walkShardOrder(t *testing.T, m *osdmap.Map, seed uint32, have, want []int32, limit int, each func(cur, next []int32, spare int32)) {
	t.Helper()
	cur := have
	for steps := 0; !slices.Equal(cur, want); steps++ {
		if steps == limit {
			t.Fatalf("pg 2.%x: %v to %v not done in %d steps (at %v)", seed, have, want, limit, cur)
		}
		next, spare, err := balancer.ShardOrderStep(m, 1, cur, want)
		if err != nil {
			t.Fatal(err)
		}
		hosts := map[string]bool{}
		for i, o := range next {
			if j := slices.Index(cur, o); j >= 0 && j != i {
				t.Fatalf("pg 2.%x: osd.%d moves from position %d to %d in one step (%v to %v)", seed, o, j, i, cur, next)
			}
			if hosts[hostOf(m, o)] {
				t.Fatalf("pg 2.%x: %v puts two shards on host %s (toward %v)", seed, next, hostOf(m, o), want)
			}
			hosts[hostOf(m, o)] = true
		}
		each(cur, next, spare)
		cur = next
	}
}

// cycleSteps is the most steps ShardOrderStep may take from have to
// want. For want an order of have's OSDs, L+1 for each cycle of L ≥ 2
// positions; otherwise each step puts a position in order or takes out
// an OSD that want has at another position, so at most the count of
// both.
func cycleSteps(have, want []int32) int {
	bound, seen := 0, make([]bool, len(have))
	for i := range have {
		if !slices.Contains(have, want[i]) {
			bound = 0
			for i := range have {
				if have[i] != want[i] {
					bound++
				}
				if k := slices.Index(want, have[i]); k >= 0 && k != i {
					bound++
				}
			}
			return bound
		}
	}
	for i := range have {
		l := 0
		for j := i; !seen[j]; j = slices.Index(have, want[j]) {
			seen[j] = true
			l++
		}
		if l > 1 {
			bound += l + 1
		}
	}
	return bound
}

// hostsMap is a map of hosts × perHost OSDs, all up and in (rule 1:
// erasure-coded, failure domain host), OSD o on host o/perHost.
func hostsMap(t *testing.T, hosts, perHost int) *osdmap.Map {
	t.Helper()
	c, err := crush.Simple(crush.SimpleSpec{HostsPerRack: hosts, OSDsPerHost: perHost})
	if err != nil {
		t.Fatal(err)
	}
	n := int32(hosts * perHost)
	inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: n, NewOSDs: map[int32]osdmap.OSD{}}
	for i := range n {
		inc.NewOSDs[i] = osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}
	}
	m, err := osdmap.New("", c).Apply(inc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ShardOrderStep brings an erasure-coded PG's OSDs into any other order
// of the same OSDs without an OSD ever changing position within a step
// (an OSD holds one shard of a PG): a cycle of L positions takes L+1
// steps through a spare, which keeps the rule's failure domains and is
// outside both orders; where the PG spans every failure domain, through
// spares on its own ones. With no OSD to spare it says so.
func TestShardOrderStep(t *testing.T) {
	m := testMap(t)
	rng := rand.New(rand.NewPCG(7, 7))
	spares := 0
	for seed := uint32(0); seed < 64; seed++ {
		mp, err := m.MapPG(osdmap.PGID{Pool: 2, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		have := slices.Clone(mp.Up)
		want := slices.Clone(have)
		rng.Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
		walkShardOrder(t, m, seed, have, want, cycleSteps(have, want), func(cur, next []int32, spare int32) {
			if spare != osdmap.NoOSD {
				spares++
				if slices.Contains(have, spare) || !slices.Contains(next, spare) || !m.OSDs[spare].In() {
					t.Fatalf("pg 2.%x: spare osd.%d (%v to %v)", seed, spare, cur, next)
				}
			}
		})
	}
	if spares == 0 {
		t.Fatal("no order needed a spare")
	}

	// want holds an OSD from outside have (pg_upmap_items' doing) on the
	// host of one of have's OSDs, which it replaces: that host never
	// holds two of the PG's shards on the way
	waited := 0
	for seed := uint32(0); seed < 64; seed++ {
		mp, _ := m.MapPG(osdmap.PGID{Pool: 2, Seed: seed})
		have := slices.Clone(mp.Up)
		want := slices.Clone(have)
		rng.Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
		k := rng.IntN(len(want))
		for o := int32(0); o < m.MaxOSD(); o++ {
			if o != want[k] && hostOf(m, o) == hostOf(m, want[k]) && m.OSDs[o].In() {
				want[k] = o
				break
			}
		}
		walkShardOrder(t, m, seed, have, want, 2*len(have)+2, func(cur, next []int32, _ int32) {
			if next[k] != want[k] && !slices.Contains(cur, want[k]) {
				waited++ // the outside OSD waited for its host to be free
			}
		})
	}
	if waited == 0 {
		t.Fatal("no outside OSD had to wait for its host: the failure-domain check is not exercised")
	}

	// six hosts of three OSDs, 4+2 PGs on all of them (no host of its
	// own for a spare): shards move through spares on the cycles' own
	// hosts, in at most 2L steps per cycle of L, also where want holds
	// other OSDs of the same hosts
	six := hostsMap(t, 6, 3)
	sameHost := 0
	for seed := uint32(0); seed < 64; seed++ {
		have, want := make([]int32, 6), make([]int32, 6)
		for h, i := range rng.Perm(6) {
			have[i] = int32(3*h + rng.IntN(3))
		}
		for h, i := range rng.Perm(6) {
			want[i] = have[slices.IndexFunc(have, func(o int32) bool { return int(o)/3 == h })]
			if rng.IntN(4) == 0 {
				want[i] = int32(3*h + rng.IntN(3))
			}
		}
		walkShardOrder(t, six, seed, have, want, cycleSteps(have, want), func(cur, next []int32, spare int32) {
			if spare == osdmap.NoOSD {
				return
			}
			j := slices.Index(next, spare)
			if slices.Contains(have, spare) || slices.Contains(want, spare) || hostOf(six, spare) != hostOf(six, cur[j]) {
				t.Fatalf("pg 2.%x: spare osd.%d not another OSD of the host it replaces one of (%v to %v, toward %v)", seed, spare, cur, next, want)
			}
			sameHost++
		})
	}
	if sameHost == 0 {
		t.Fatal("no order needed a spare on the PG's own hosts")
	}

	// three hosts, a 2+1 PG on all of them: a swap has no spare
	small := hostsMap(t, 3, 1)
	if _, ok := balancer.Spare(twoStepMap(t), 0, []int32{0, 2}, osdmap.NoOSD, nil); ok {
		t.Error("a spare under a rule whose failure domains the balancer cannot read")
	}
	if _, _, err := balancer.ShardOrderStep(small, 1, []int32{0, 1, 2}, []int32{1, 0, 2}); !errors.Is(err, balancer.ErrNoSpare) {
		t.Fatalf("swap on three OSDs: %v, want ErrNoSpare", err)
	}
	if next, spare, err := balancer.ShardOrderStep(small, 1, []int32{0, 1, 2}, []int32{0, 1, 2}); err != nil || spare != osdmap.NoOSD || !slices.Equal(next, []int32{0, 1, 2}) {
		t.Fatalf("in order already: %v %d %v", next, spare, err)
	}
}
