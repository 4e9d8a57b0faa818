package mon

import (
	"slices"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/osdmap"
)

// Positional pg_upmap. An erasure-coded PG's positions are shards: the
// OSD at position i holds shard i. When a change of weights or of the
// CRUSH map makes CRUSH reorder a PG's OSDs — the same OSDs, or some of
// them, at other positions — Ceph moves each shard to its new position:
// a backfill of data that was already on the right OSDs, and for a PG
// whose members CRUSH only swaps, one that needs an OSD to hold two
// shards at once (Ceph keeps one collection per shard; Shoal's OSDs
// hold one shard of a PG). Instead the MONs, in the epoch that changes
// CRUSH's choice, give such a PG a pg_upmap (Ceph's explicit mapping,
// OSDMap::pg_upmap) holding exactly CRUSH's OSDs, but with each that
// held a position of the PG's acting set kept there: only the positions
// whose OSD CRUSH really replaced move data, and a swap moves nothing.
// The entry goes when CRUSH's choice changes again and no longer needs
// it. The set of OSDs is CRUSH's, so failure domains and balance are
// CRUSH's; a rule with several take…emit blocks, whose positions differ
// in kind, is left alone.

// positionalUpmaps returns the pg_upmap changes (an empty list removes an
// entry) that next — prev with an incremental applied — needs: for the
// erasure-coded PGs whose CRUSH choice differs between the two, and the
// removal of entries whose PGs no longer exist (pg_num lowered) or whose
// pools the MONs no longer keep entries for (a rule with several emits).
// Only pools whose CRUSH inputs changed are mapped, so an OSD marked up
// or down costs nothing here.
func positionalUpmaps(prev, next *osdmap.Map) map[osdmap.PGID][]int32 {
	changes := map[osdmap.PGID][]int32{}
	for pg := range next.PGUpmap {
		p, err := next.Pool(pg.Pool)
		if err != nil || pg.Seed >= p.PGNum || p.Type != osdmap.PoolErasure || !singleEmit(next.Crush, p.CrushRule) {
			changes[pg] = nil
		}
	}
	osdsChanged := !sameCrushOSDs(prev, next)
	for _, id := range next.PoolIDs() {
		p := next.Pools[id]
		pp, err := prev.Pool(id)
		if p.Type != osdmap.PoolErasure || err != nil || !singleEmit(next.Crush, p.CrushRule) ||
			(!osdsChanged && prev.Crush == next.Crush && pp.Size == p.Size && pp.PGPNum == p.PGPNum && pp.CrushRule == p.CrushRule && pp.Flags == p.Flags) {
			continue
		}
		before, err1 := prev.CrushOSDs(id)
		after, err2 := next.CrushOSDs(id)
		if err1 != nil || err2 != nil {
			continue
		}
		for s := range min(pp.PGNum, p.PGNum) {
			if slices.Equal(before[s], after[s]) {
				continue
			}
			pg := osdmap.PGID{Pool: id, Seed: uint32(s)}
			mp, err := prev.MapPG(pg)
			if err != nil {
				continue
			}
			want := keepWithItems(next, pg, after[s], mp.Acting, mp.Raw)
			cur, has := next.PGUpmap[pg]
			switch {
			case slices.Equal(want, after[s]):
				if has {
					changes[pg] = nil
				}
			case !slices.Equal(cur, want):
				changes[pg] = want
			}
		}
	}
	return changes
}

// keepWithItems is keepPositions for a PG with pg_upmap_items: the OSDs
// kept in place are those of the set the items make of CRUSH's choice
// (each pair that applies to it puts its To where its From is), so that
// an OSD a pair put in the PG keeps its position too; the pg_upmap
// returned holds each such To's From, which the pair then replaces in
// place.
func keepWithItems(m *osdmap.Map, pg osdmap.PGID, chosen, acting, raw []int32) []int32 {
	final := slices.Clone(chosen)
	var live []osdmap.UpmapItem
	for _, it := range m.PGUpmapItems[pg] {
		if it.To < 0 || it.To >= m.MaxOSD() || !m.OSDs[it.To].In() || slices.Contains(final, it.To) {
			continue
		}
		if i := slices.Index(final, it.From); i >= 0 {
			final[i] = it.To
			live = append(live, it)
		}
	}
	want := keepPositions(final, acting, raw)
	for i, o := range want {
		for _, it := range live {
			if it.To == o {
				want[i] = it.From
			}
		}
	}
	return want
}

// sameCrushOSDs reports whether the two maps give CRUSH the same OSDs:
// the same ids, existing and with the same reweights (up and down do
// not matter to CRUSH).
func sameCrushOSDs(a, b *osdmap.Map) bool {
	if len(a.OSDs) != len(b.OSDs) {
		return false
	}
	for i := range a.OSDs {
		if a.OSDs[i].Exists != b.OSDs[i].Exists || a.OSDs[i].Weight != b.OSDs[i].Weight {
			return false
		}
	}
	return true
}

// singleEmit reports whether rule id emits its OSDs in one block, so that
// any order of them satisfies it.
func singleEmit(c *crush.Map, id int) bool {
	r := c.Rule(id)
	if r == nil {
		return false
	}
	emits := 0
	for _, st := range r.Steps {
		if st.Op == crush.OpEmit {
			emits++
		}
	}
	return emits == 1
}

// keepPositions orders the OSDs of chosen (CRUSH's choice, holes as
// osdmap.NoOSD) so that each keeps its position in acting (the PG's
// acting set, which holds the shards), else in raw (its earlier up set
// with down OSDs, whose shards wait on them); the others take their own
// positions in chosen when free, then the free positions in order.
func keepPositions(chosen, acting, raw []int32) []int32 {
	want := make([]int32, len(chosen))
	for i := range want {
		want[i] = osdmap.NoOSD
	}
	placed := map[int32]bool{}
	keep := func(from []int32) {
		for i, o := range from {
			if i < len(want) && want[i] == osdmap.NoOSD && o != osdmap.NoOSD && !placed[o] && slices.Contains(chosen, o) {
				want[i], placed[o] = o, true
			}
		}
	}
	keep(acting)
	keep(raw)
	keep(chosen)
	var rest []int32
	for _, o := range chosen {
		if o != osdmap.NoOSD && !placed[o] {
			rest = append(rest, o)
		}
	}
	for i := range want {
		if want[i] == osdmap.NoOSD && len(rest) > 0 {
			want[i], rest = rest[0], rest[1:]
		}
	}
	return want
}
