package peering

import (
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/shoal-project/shoal/osdmap"
)

// Backfill is a PG's backfill targets: the up set's OSDs outside the
// acting set, which a pg_temp keeps serving while they are filled
// (Ceph's backfill_targets), with their addresses and, on an
// erasure-coded PG, the shard each is filled with (nil otherwise).
type Backfill struct {
	OSDs   []int32
	Addrs  []string
	Shards []int
}

// Interval is one PG interval as an OSD sees it: a span of map epochs in
// which the PG's acting set, its members' instances, its up set, its
// backfill targets, the pool's size and min_size and the PG's split bits stay the same (Ceph's
// past_interval boundaries, PastIntervals::check_new_interval).
//
// ID identifies the interval in peer messages: a digest of everything
// that defines it, so that two OSDs agree on it even when one skipped the
// maps between (an OSD installs the newest map it is sent, not every
// epoch, so the epoch an interval began — Ceph's same_interval_since — is
// not known alike everywhere). SameIntervalSince is that epoch as this
// OSD saw it: recorded at the MONs and shown, never compared.
type Interval struct {
	ID                uint64       // IntervalID's digest
	SameIntervalSince osdmap.Epoch // the epoch this OSD first saw it in
	Acting            []int32      // by position; osdmap.NoOSD for a hole
	Addrs             []string     // of the acting set's members, with their nonces
	Up                []int32      // CRUSH's choice, down OSDs removed
	Backfill          Backfill     // the up set's OSDs outside the acting set (BackfillTargets)
	Primary           int32        // the acting primary; -1 for none
	// Size and MinSize are the pool's (0 and 0: the pool is gone, or the
	// PG is no longer mapped to this OSD).
	Size, MinSize int
	EC            bool // an erasure-coded pool: positions are shards
}

// NewInterval builds the interval of mapping mp of PG seed of pool (nil:
// the pool is gone) in map m, as seen in epoch since.
func NewInterval(m *osdmap.Map, pool *osdmap.Pool, seed uint32, mp osdmap.Mapping, since osdmap.Epoch) Interval {
	iv := Interval{SameIntervalSince: since, Acting: slices.Clone(mp.Acting), Up: slices.Clone(mp.Up), Primary: mp.ActingPrimary}
	iv.Addrs = make([]string, len(mp.Acting))
	for i, o := range mp.Acting {
		if o >= 0 && o < m.MaxOSD() {
			iv.Addrs[i] = m.OSDs[o].BackAddr()
		}
	}
	if pool != nil {
		iv.Size, iv.MinSize, iv.EC = pool.Size, pool.MinSize, pool.Type == osdmap.PoolErasure
		iv.Backfill = BackfillTargets(m, pool, mp)
	}
	upFrom := func(o int32) osdmap.Epoch {
		if o >= 0 && o < m.MaxOSD() {
			return m.OSDs[o].UpFrom
		}
		return 0
	}
	iv.ID = IntervalID(iv.Acting, iv.Addrs, iv.Backfill, iv.Up, upFrom, pool, seed)
	return iv
}

// IntervalID digests what defines an interval: the acting set, each
// member's instance and the epoch it last came up (up_from: an OSD marked
// down and up again at the same address, in maps a peer may have skipped,
// still ends the interval), the backfill targets', the up set (as in
// Ceph: a pg_temp that no longer serves is cleared once the up set
// changes), the pool's size and min_size and PG seed's split bits (a
// split: Ceph's PastIntervals::is_new_interval asks pg_t::is_split), any
// change of which makes a new interval that must peer. FNV-1a, 64 bits.
func IntervalID(acting []int32, addrs []string, bf Backfill, up []int32, upFrom func(int32) osdmap.Epoch, pool *osdmap.Pool, seed uint32) uint64 {
	h := fnv.New64a()
	if pool != nil {
		fmt.Fprintf(h, "%d/%d/%d;", pool.Size, pool.MinSize, osdmap.SplitBits(seed, pool.PGNum))
	}
	fmt.Fprintf(h, "up%v;", up)
	for i, o := range acting {
		fmt.Fprintf(h, "%d@%s#%d,", o, addrs[i], upFrom(o))
	}
	if len(bf.OSDs) > 0 {
		fmt.Fprint(h, ";backfill:")
		for i, o := range bf.OSDs {
			fmt.Fprintf(h, "%d@%s#%d", o, bf.Addrs[i], upFrom(o))
			if bf.Shards != nil {
				fmt.Fprintf(h, "s%d", bf.Shards[i])
			}
			fmt.Fprint(h, ",")
		}
	}
	return h.Sum64()
}

// BackfillTargets are the up set's OSDs outside the acting set, which a
// pg_temp keeps serving while they backfill, with their addresses. On an
// erasure-coded PG a target is filled with the shard of its up position,
// where the acting set's OSD differs; an OSD that also acts (for another
// shard: one copy of the PG per OSD) is not a target, its shard is
// rebuilt once the pg_temp goes.
func BackfillTargets(m *osdmap.Map, pool *osdmap.Pool, mp osdmap.Mapping) Backfill {
	var bf Backfill
	if pool == nil {
		return bf
	}
	ec := !pool.CanShiftOSDs()
	for i, o := range mp.Up {
		if o < 0 || o >= m.MaxOSD() || slices.Contains(mp.Acting, o) {
			continue
		}
		bf.OSDs = append(bf.OSDs, o)
		bf.Addrs = append(bf.Addrs, m.OSDs[o].BackAddr())
		if ec {
			bf.Shards = append(bf.Shards, i)
		}
	}
	return bf
}

// Writers are the OSDs that take every write of the interval — the acting
// set (with its holes), then the backfill targets — and their addresses.
func (iv *Interval) Writers() ([]int32, []string) {
	return append(slices.Clone(iv.Acting), iv.Backfill.OSDs...), append(slices.Clone(iv.Addrs), iv.Backfill.Addrs...)
}

// PriorSet is what peering must hear from of the interval once it ends,
// if it may have taken writes: its writers. On an erasure-coded PG they
// are by position: the acting set, then, with backfill targets, a second
// row of the pool's size holding each target at its shard's position
// (NoOSD elsewhere) — a target holds the same shard as the acting member
// beside it, and the prior-set check counts shards, not OSDs.
func (iv *Interval) PriorSet() []int32 {
	if !iv.EC {
		w, _ := iv.Writers()
		return w
	}
	prior := slices.Clone(iv.Acting)
	if len(iv.Backfill.OSDs) > 0 {
		row := make([]int32, len(iv.Acting))
		for i := range row {
			row[i] = osdmap.NoOSD
		}
		for i, o := range iv.Backfill.OSDs {
			if p := iv.Backfill.Shards[i]; p < len(row) {
				row[p] = o
			}
		}
		prior = append(prior, row...)
	}
	return prior
}

// Undersized reports whether the acting set has fewer members than the
// pool's size.
func (iv *Interval) Undersized() bool {
	return iv.Size > 0 && osdmap.Members(iv.Acting) < iv.Size
}

// TempServes reports whether a pg_temp without backfill targets still
// serves: the acting set holds every OSD of the up set and more (the up
// set lacks OSDs that are down: the pg_temp keeps their complete copies),
// or, on an erasure-coded PG, holds them at other positions (swapped: the
// pg_temp keeps shards where their OSDs hold them). A replicated pg_temp
// that only reorders the up set does not.
func (iv *Interval) TempServes() bool {
	for _, o := range iv.Up {
		if o != osdmap.NoOSD && !slices.Contains(iv.Acting, o) {
			return false
		}
	}
	return iv.EC || osdmap.Members(iv.Acting) > osdmap.Members(iv.Up)
}

// Remapped reports whether, once every copy is complete, the pg_temp
// must go so the up set takes over: there are backfill targets, or the
// acting set differs from the up set without the pg_temp serving.
func (iv *Interval) Remapped() bool {
	return len(iv.Backfill.OSDs) > 0 || (!slices.Equal(iv.Acting, iv.Up) && !iv.TempServes())
}
