package peering

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/osdmap"
)

// Peering of an erasure-coded PG: the authoritative history is the newest
// that at least k shards hold (newer writes, on fewer shards, cannot be
// decoded and were never acknowledged: they are rolled back); then every
// shard adopts that log with the set of objects its shard lacks, and the
// PG activates (Ceph: doc/dev/osd_internals/erasure_coding/ecbackend.rst,
// PeeringState::choose_acting for EC pools).

// startEC: 1. every shard's info and log, and the backfill targets'.
func (a *Attempt) startEC() []Action {
	iv := &a.c.Interval
	if n := osdmap.Members(iv.Acting); n < a.c.K {
		return a.incomplete(fmt.Sprintf("%d shards reachable, k=%d needed", n, a.c.K))
	}
	var q []Target
	for i, o := range iv.Acting {
		if o != osdmap.NoOSD && o != a.c.Whoami {
			q = append(q, Target{o, iv.Addrs[i]})
		}
	}
	for i, o := range iv.Backfill.OSDs {
		q = append(q, Target{o, iv.Backfill.Addrs[i]})
	}
	return a.ask(q, false, a.gotShards)
}

func (a *Attempt) incomplete(why string) []Action {
	return []Action{Progress{State: Incomplete, Why: why}, Fail{Err: fmt.Errorf("%w: %s", ErrIncomplete, why)}}
}

// gotShards places the answers by position and sets aside the members
// whose copies are of other shards.
func (a *Attempt) gotShards(ms []Member) []Action {
	iv := &a.c.Interval
	a.mem = make([]*Member, len(iv.Acting))
	next := 0
	for i, o := range iv.Acting {
		switch {
		case o == osdmap.NoOSD:
		case o == a.c.Whoami:
			self := a.c.Self
			a.mem[i] = &self
		default:
			m := ms[next]
			a.mem[i] = &m
			next++
		}
	}
	a.tmem = make([]*Member, len(iv.Backfill.OSDs))
	for i := range a.tmem {
		m := ms[next]
		a.tmem[i] = &m
		next++
	}
	// a member whose copy is of another shard (CRUSH moved it to another
	// position) holds nothing of its position's: it counts as empty, and
	// adopts the log as a copy with no history
	reset := func(m *Member, pos int) {
		if m == nil || m.Info.Shard == int32(pos) || (m.Info.LastUpdate == Version{} && len(m.Entries) == 0) {
			return
		}
		a.misplaced = append(a.misplaced, *m)
		*m = Member{ID: m.ID, Addr: m.Addr, Info: Info{Shard: int32(pos)}, Intervals: m.Intervals, Reset: true}
	}
	for i := range a.mem {
		reset(a.mem[i], i)
	}
	for i := range a.tmem {
		reset(a.tmem[i], iv.Backfill.Shards[i])
	}
	// per shard position, the newest history of its acting member and its
	// backfill target (both took every write of that shard)
	a.newest = make([]*Version, len(iv.Acting))
	for i, m := range a.mem {
		if m != nil {
			a.newest[i] = &m.Info.LastUpdate
		}
	}
	for i, m := range a.tmem {
		if p := iv.Backfill.Shards[i]; p < len(a.newest) && (a.newest[p] == nil || a.newest[p].Less(m.Info.LastUpdate)) {
			a.newest[p] = &m.Info.LastUpdate
		}
	}
	for _, v := range a.newest {
		if v != nil {
			a.lus = append(a.lus, *v)
		}
	}
	if len(a.lus) < a.c.K {
		return a.incomplete(fmt.Sprintf("%d shards reachable, k=%d needed", len(a.lus), a.c.K))
	}
	for _, m := range append(slices.Clone(a.mem), a.tmem...) {
		if m != nil {
			a.reached = append(a.reached, *m)
		}
	}
	// shards whose OSD has no history of them (new to the PG, or moved
	// from another position of it): a former member up with that shard,
	// or a member that holds it at another position, keeps it acting, so
	// that its data stays in use — without it the PG may even lack k
	// shards to peer with
	empty := func(i int) bool { return a.mem[i] != nil && a.mem[i].Info.LastUpdate == (Version{}) }
	return a.probeFormers(func() []Action {
		return a.shardsFromFormers(a.misplaced, empty, func(Member) bool { return true }, func(want []int32) []Action {
			if want != nil {
				return []Action{Progress{State: WaitActingChange}, RequestPGTemp{Want: want, Why: "former members keep the shards the up set has no history of", Warning: a.note}}
			}
			acts := a.checkPriorShards(a.reached, a.formers, a.c.K)
			if ended(acts) {
				return acts
			}
			return a.waitLeases(acts, append(slices.Clone(a.reached), a.formers...), a.chooseEC)
		})
	})
}

// probeFormers asks the former members that are up — the strays, and the
// OSDs of the earlier intervals this OSD and the members know of — for
// their copies (those that do not answer are left out), then goes on.
// Their shards count for the earlier intervals they held them in
// (checkPriorShards), and writes they hold block a rollback that would
// undo them (chooseEC): an interval whose members left the acting set
// but are up is not waited for as if they were down (Ceph's GetInfo
// probes the prior set's up OSDs alike).
func (a *Attempt) probeFormers(then func() []Action) []Action {
	var q []Target
	for _, o := range a.formerMembers(a.reached) {
		if !slices.ContainsFunc(a.reached, func(m Member) bool { return m.ID == o }) {
			q = append(q, Target{o, a.c.Map[o].Addr})
		}
	}
	return a.ask(q, true, func(formers []Member) []Action {
		a.formers = formers
		return then()
	})
}

// checkPriorShards is checkPrior for an erasure-coded PG: a former
// member counts for an earlier interval only at the position whose
// shard its copy still holds (a copy reset to another shard no longer
// has that interval's writes), and only with a write in it — an empty
// copy may be one made since, for a later interval — unless no copy
// reached holds any write, members moved to other positions included:
// a write acknowledged in the interval is on k of its shards, so the
// empty copies of its positions answering show it took none (without
// this, an empty PG two of whose shards moved at once stayed down for
// good). An OSD that holds no copy (NoCopy) never counts.
func (a *Attempt) checkPriorShards(reached, formers []Member, need int) []Action {
	written := func(m Member) bool { return m.Info.LastUpdate != (Version{}) }
	none := !slices.ContainsFunc(reached, written) && !slices.ContainsFunc(formers, written) && !slices.ContainsFunc(a.misplaced, written)
	return a.checkPriorWith(reached, need, func(o int32, pos int) bool {
		return slices.ContainsFunc(formers, func(m Member) bool {
			return m.ID == o && int(m.Info.Shard) == pos && (written(m) || none)
		})
	})
}

// chooseEC: 2. the authoritative version, the k-th newest; 3. roll back
// what fewer than k shards hold (a backfill target took every write too).
func (a *Attempt) chooseEC() []Action {
	acts := []Action{Progress{State: GetLog}}
	a.v = kthNewest(a.lus, a.c.K)
	// a member moved to another position still holds its old shard's
	// data: if writes past v are on k shards only counting such copies,
	// rolling back would lose what may have been acknowledged — wait
	// (for a pg_temp that puts them back, or the OSDs that held them)
	var withMoved []Version // per position, as lus
	moved := slices.Clone(a.newest)
	for _, m := range append(slices.Clone(a.misplaced), a.formers...) {
		if p := int(m.Info.Shard); p >= 0 && p < len(moved) && (moved[p] == nil || moved[p].Less(m.Info.LastUpdate)) {
			moved[p] = &m.Info.LastUpdate
		}
	}
	for _, v := range moved {
		if v != nil {
			withMoved = append(withMoved, *v)
		}
	}
	if vm := kthNewest(withMoved, a.c.K); a.v.Less(vm) {
		why := fmt.Sprintf("writes up to %s are on k=%d shards only counting copies outside their positions (%s); waiting for their OSDs to serve them", vm, a.c.K, describeMembers(append(slices.Clone(a.misplaced), a.formers...)))
		// a former member that is up and holds a position's shard newer
		// than the position's own goes back there under a pg_temp (else
		// nothing would ever serve its writes: the PG waited forever in
		// test/e2e TestKillsDuringBackfill once)
		ahead := func(m Member) bool {
			p := int(m.Info.Shard)
			return p >= 0 && p < len(a.newest) && (a.newest[p] == nil || a.newest[p].Less(m.Info.LastUpdate))
		}
		behind := func(i int) bool {
			return slices.ContainsFunc(a.formers, func(m Member) bool { return int(m.Info.Shard) == i && ahead(m) })
		}
		return a.shardsFromFormers(nil, behind, ahead, func(want []int32) []Action {
			if want != nil {
				return append(acts, Progress{State: WaitActingChange}, RequestPGTemp{Want: want, Why: "a former member holds its old position's writes that k shards need"})
			}
			return append(acts, a.incomplete(why)...)
		})
	}
	all := append(slices.Clone(a.mem), a.tmem...)
	auth := -1
	rolled := make([]bool, len(all))
	var back []Target
	for i, m := range all {
		if m == nil {
			continue
		}
		if a.v.Less(m.Info.LastUpdate) {
			rolled[i] = true
			back = append(back, Target{m.ID, m.Addr})
			m.Info.LastUpdate = a.v
			m.Entries = slices.DeleteFunc(slices.Clone(m.Entries), func(e LogEntry) bool { return a.v.Less(e.Ver) })
		}
		// the authority: one not rolled back (its counts stand), this OSD
		// among equals
		if m.Info.LastUpdate == a.v && (auth < 0 || (rolled[auth] && !rolled[i]) || (m.ID == a.c.Whoami && rolled[auth] == rolled[i])) {
			auth = i
		}
	}
	a.auth = *all[auth]
	then := func() []Action {
		if !rolled[auth] {
			return a.planEC()
		}
		// its object and byte counts changed with the rollback: ask again
		return a.ask([]Target{{a.auth.ID, a.auth.Addr}}, false, func(ms []Member) []Action {
			a.auth.Info = ms[0].Info
			return a.planEC()
		})
	}
	if back == nil {
		return append(acts, then()...)
	}
	return a.wait(func(ev Event) []Action {
		if err := done(ev); err != nil {
			return fail(err)
		}
		return then()
	}, append(acts, RollBack{Targets: back, To: a.v})...)
}

// planEC: 4. what each shard lacks in that history; then 5. shards to
// backfill whole in the acting set: former members that hold them
// complete keep serving them; else every shard adopts the history.
func (a *Attempt) planEC() []Action {
	a.auth.Info.LastUpdate = a.v
	var members []Member // this OSD first, the backfill targets last
	for _, m := range a.mem {
		switch {
		case m == nil:
		case m.ID == a.c.Whoami:
			members = append([]Member{*m}, members...)
		default:
			members = append(members, *m)
		}
	}
	for _, m := range a.tmem {
		members = append(members, *m)
	}
	a.all = members
	return a.getMissing(members, members, func() []Action {
		iv := &a.c.Interval
		rec := a.plan
		rec.Shards, rec.K = a.mem, a.c.K
		rec.TargetShards = map[int32]int{}
		for i, o := range iv.Backfill.OSDs {
			rec.TargetShards[o] = iv.Backfill.Shards[i]
		}
		backfill := func(o int32) bool { return o != osdmap.NoOSD && rec.Whole[o] && len(rec.Lacks[o]) > 0 }
		need := func(i int) bool { return backfill(iv.Acting[i]) }
		ok := func(mi Member) bool { return complete(a.auth, mi) }
		return a.shardsFromFormers(nil, need, ok, func(want []int32) []Action {
			if want != nil {
				return []Action{Progress{State: WaitActingChange}, RequestPGTemp{Want: want, Why: "complete shards serve while the up set backfills", Warning: a.note}}
			}
			return a.activate()
		})
	})
}

// shardsFromFormers works out the acting set to ask for as an
// erasure-coded PG's pg_temp, or nil to go on with the acting set, and
// passes it to then: each position i for which need(i) holds gets an OSD
// whose copy is of shard i, has a history and passes ok — a former member
// (up in the map, outside the up set: asked now), or one of misplaced,
// acting members whose copies are of other shards than their positions'
// — and the other positions keep their OSDs. A misplaced member that
// moves to its shard's position leaves its own empty unless another
// fills it: its copy there was of no use, and moved it keeps its shard's
// data in use (reset at its new position, it would lose it). An empty
// position of the acting set (its up OSD is down) takes such an OSD too
// once a pg_temp is asked for: were it left empty, a PG all of whose
// positions moved at once (an erasure-coded merge's last step) would
// keep fewer than k shards of its newest writes acting when an incoming
// OSD dies, and stay incomplete until it returns. Not while a pg_temp
// already holds (backfill targets), not twice in one interval, and not
// below min_size. The former members are those probeFormers reached.
func (a *Attempt) shardsFromFormers(misplaced []Member, need func(i int) bool, ok func(Member) bool, then func([]int32) []Action) []Action {
	iv := &a.c.Interval
	acting := iv.Acting
	if iv.Size == 0 || len(iv.Backfill.OSDs) > 0 || a.c.TempAsked || len(acting) != iv.Size {
		return then(nil)
	}
	needed := false
	for i := range acting {
		needed = needed || need(i) // at an empty position, only behind's holds (a former member ahead)
	}
	if !needed {
		return then(nil)
	}
	cands := slices.Clone(misplaced)
	for _, f := range a.formers {
		if !slices.Contains(iv.Up, f.ID) { // else it has a position of its own
			cands = append(cands, f)
		}
	}
	want, swapped := a.placeShards(cands, need, ok)
	if swapped {
		a.note = "erasure-coded pg's members swapped positions and min_size leaves no room to move them: it stays on its old positions (remapped)"
	}
	return then(want)
}

// placeShards is shardsFromFormers' choice among the candidates; swapped
// reports an acting set in which every up OSD acts at another position
// and none can leave.
func (a *Attempt) placeShards(cands []Member, need func(i int) bool, ok func(Member) bool) (want []int32, swapped bool) {
	iv := &a.c.Interval
	acting, up := iv.Acting, iv.Up
	// the newest copy of a shard first
	slices.SortStableFunc(cands, func(x, y Member) int { return NewestFirst(x.Info.LastUpdate, y.Info.LastUpdate) })
	want = slices.Clone(acting)
	placed := map[int32]bool{}
	for changed := true; changed; { // a vacated position may take another
		changed = false
		for _, c := range cands {
			pos := int(c.Info.Shard)
			if placed[c.ID] || pos < 0 || pos >= len(want) || (acting[pos] != osdmap.NoOSD && !need(pos)) ||
				(want[pos] != acting[pos] && want[pos] != osdmap.NoOSD) || c.Info.LastUpdate == (Version{}) || !ok(c) {
				continue
			}
			if from := slices.Index(want, c.ID); from >= 0 {
				want[from] = osdmap.NoOSD
			}
			want[pos], placed[c.ID], changed = c.ID, true, true
		}
	}
	if slices.Equal(want, acting) || osdmap.Members(want) < iv.MinSize {
		return nil, false
	}
	if !slices.ContainsFunc(up, func(o int32) bool { return o != osdmap.NoOSD && !slices.Contains(want, o) }) {
		// every up OSD acts (members swapped positions; the MONs' pg_upmap
		// prevents this unless the pool's rule has several emits): nothing
		// would be backfilled. One of the moved members leaves, to be
		// backfilled at its up position from the shards that stay, if
		// min_size allows; else the PG stays on its old positions (settling
		// keeps such a pg_temp): an OSD holds one shard of a PG, and taking
		// its new one would leave fewer shards than min_size
		// (only an up member that left its up position for another
		// member's: a former member has none, and one that filled an
		// empty position left nothing of the up set's to backfill)
		moved := false
		for _, c := range cands {
			at := slices.Index(want, c.ID)
			if !placed[c.ID] || at < 0 || !slices.Contains(up, c.ID) || slices.Index(up, c.ID) == at || acting[at] == osdmap.NoOSD {
				continue
			}
			moved = true
			if osdmap.Members(want) > iv.MinSize {
				want[at] = osdmap.NoOSD
				if slices.Equal(want, acting) {
					return nil, false
				}
				return want, false
			}
		}
		return want, moved
	}
	return want, false
}

// kthNewest returns the k-th newest of the versions (sorting a copy
// newest first); the caller has at least k.
func kthNewest(vs []Version, k int) Version {
	vs = slices.Clone(vs)
	slices.SortFunc(vs, NewestFirst)
	return vs[k-1]
}

// describeMembers names members and the shards their copies hold.
func describeMembers(ms []Member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("osd.%d holds shard %d at %s", m.ID, m.Info.Shard, m.Info.LastUpdate)
	}
	return strings.Join(parts, ", ")
}
