package peering

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/osdmap"
)

// Errors an attempt ends with (Fail).
var (
	// ErrDown: an earlier interval that may have accepted writes has too
	// few OSDs among those reached; the PG waits for them (Ceph's Down).
	ErrDown = errors.New("pg down")
	// ErrIncomplete: an erasure-coded PG has fewer than k shards to choose
	// a history from (Ceph's Incomplete).
	ErrIncomplete = errors.New("pg incomplete")
)

// OSDState is what peering needs of one OSD in the map it peers with.
type OSDState struct {
	Exists, Up, Lost bool   // in the map; marked up; declared lost (shoal osd lost)
	Addr             string // its cluster address
}

// MapView is the OSD map as peering sees it: OSDState by OSD id.
type MapView []OSDState

// MapViewOf reads a MapView off an OSD map.
func MapViewOf(m *osdmap.Map) MapView {
	v := make(MapView, m.MaxOSD())
	for i := range v {
		o := m.OSDs[i]
		v[i] = OSDState{Exists: o.Exists, Up: o.Up, Lost: o.Lost, Addr: o.BackAddr()}
	}
	return v
}

func (v MapView) up(o int32) bool { return o >= 0 && int(o) < len(v) && v[o].Up }

// Config is what an attempt starts from: the PG's machine as it stands
// (after the MONs' record of its history joined Past), the map it peers
// with, and this OSD's own copy.
type Config struct {
	Whoami    int32     // this OSD, the primary
	Interval  Interval  // the interval peered
	Past      [][]int32 // Machine.Past, the MONs' record joined
	Strays    []int32   // Machine.Strays
	TempAsked bool      // a pg_temp was asked for in this interval already
	Map       MapView   // the map the members answer with, or a newer one
	K         int       // an erasure-coded pool's data shards (0: replicated)
	Self      Member    // this OSD's own copy
}

// Action is what an attempt asks its OSD to do next. Step returns a list
// of them: zero or more that need no answer (Progress, MergePast) and a
// last one that needs an event back (Query, List, WaitLeases, RollBack,
// SendLogs) or ends the attempt (Fail, RequestPGTemp, Activate).
type Action interface{ action() }

// Event is what the OSD feeds an attempt: the answer to its last action.
type Event interface{ event() }

// Progress is the news that the attempt reached a state.
type Progress struct {
	State State  // GetLog … WaitActingChange, Down or Incomplete
	Why   string // what a Down or Incomplete PG waits for
}

// MergePast asks that prior sets learnt from members' answers join the
// machine's Past (Machine.AddPast): acting sets by position, NoOSD for
// holes.
type MergePast struct{ Sets [][]int32 }

// Query asks each OSD, in order, for its info, log, past intervals and
// missing set (this OSD answers from its own copy). Answer: Infos, in
// the same order. If one fails, the attempt fails with its error —
// unless Optional, when the OSDs that did not answer are left out.
type Query struct {
	Targets  []Target
	Optional bool
	Former   bool // former members (for the error's wording)
}

// List asks for the objects of each OSD's copy (a backfill: logs that do
// not overlap). Answer: Listed.
type List struct{ Targets []Target }

// WaitLeases asks to wait until no OSD of Prior that is not in Reached can
// still serve reads under a read lease (the OSD's lease protocol; it
// needs clocks). Answer: Done.
type WaitLeases struct{ Prior, Reached []int32 }

// RollBack has an erasure-coded PG's members roll their copies back to To
// (writes past it are on fewer than k shards). Answer: Done.
type RollBack struct {
	Targets []Target
	To      Version
}

// LogTo is one member's new log: the authoritative info and entries, and
// the objects its copy lacks in them (sorted).
type LogTo struct {
	To      Target
	Info    Info
	Entries []LogEntry
	Missing []string
}

// SendLogs has every member listed adopt its log (this OSD included: it
// adopts locally), in order. Answer: Done.
type SendLogs struct{ Logs []LogTo }

// Fail ends the attempt with Err (ErrDown, ErrIncomplete or another);
// the OSD retries.
type Fail struct{ Err error }

// RequestPGTemp ends the attempt: the OSD asks the MONs for Want as the
// PG's acting set and waits for the map that carries it. Warning, if
// set, is something an operator should hear of (the OSD logs it).
type RequestPGTemp struct {
	Want    []int32
	Why     string
	Warning string
}

// Activate ends the attempt: the OSD records the interval at the MONs
// (WaitUpThru), makes the PG active with Plan as its recovery (nil:
// every copy complete; the PG is then settled), from Auth's history.
type Activate struct {
	Auth Member
	Plan *Plan
}

// Infos answers Query.
type Infos struct{ Members []Member }

// Listed answers List: object names by OSD.
type Listed struct{ Names map[int32][]string }

// Done answers WaitLeases, RollBack and SendLogs.
type Done struct{}

func (Progress) action()      {}
func (MergePast) action()     {}
func (Query) action()         {}
func (List) action()          {}
func (WaitLeases) action()    {}
func (RollBack) action()      {}
func (SendLogs) action()      {}
func (Fail) action()          {}
func (RequestPGTemp) action() {}
func (Activate) action()      {}
func (Infos) event()          {}
func (Listed) event()         {}
func (Done) event()           {}

// Attempt is one peering attempt of a PG's primary in one interval
// (Ceph's Peering state with its GetInfo, GetLog and GetMissing steps):
// it brings the acting set to one history and plans recovery. It does no
// I/O: Start and Step return what to do, and the OSD feeds back what came
// of it. An attempt is used by one goroutine; the interval ending
// abandons it.
type Attempt struct {
	c    Config
	next func(Event) []Action // the step waiting for the answer to the last action
	// the acting members (this OSD first), backfill targets last; all
	// adds former members (replicated; erasure-coded: the members)
	members, all []Member
	listed       map[int32][]string
	// erasure-coded: members by position, backfill targets in the order
	// of Interval.Backfill, and members whose copies are of other shards
	mem, tmem []*Member
	misplaced []Member
	formers   []Member // former members that answered (erasure-coded: probeFormers)
	newest    []*Version
	lus       []Version
	reached   []Member
	v         Version
	auth      Member
	plan      *Plan
	note      string // for the pg_temp request's reason
}

// NewAttempt starts an attempt from c.
func NewAttempt(c Config) *Attempt {
	return &Attempt{c: c, listed: map[int32][]string{}}
}

// Start returns the attempt's first actions.
func (a *Attempt) Start() []Action {
	if a.c.K > 0 {
		return a.startEC()
	}
	return a.start()
}

// Step feeds the answer to the last action and returns the next actions.
// An event of the wrong kind fails the attempt.
func (a *Attempt) Step(ev Event) []Action {
	if a.next == nil {
		return fail(fmt.Errorf("peering: event %T after the attempt ended", ev))
	}
	next := a.next
	a.next = nil
	return next(ev)
}

func fail(err error) []Action { return []Action{Fail{Err: err}} }

// ended reports whether acts end the attempt with a Fail.
func ended(acts []Action) bool {
	if len(acts) == 0 {
		return false
	}
	_, ok := acts[len(acts)-1].(Fail)
	return ok
}

// wait returns acts, the last of which awaits an answer that then goes
// to then.
func (a *Attempt) wait(then func(Event) []Action, acts ...Action) []Action {
	a.next = then
	return acts
}

// infos checks that ev answers a Query and returns its members.
func infos(ev Event) ([]Member, error) {
	in, ok := ev.(Infos)
	if !ok {
		return nil, fmt.Errorf("peering: %T does not answer a query", ev)
	}
	return in.Members, nil
}

func done(ev Event) error {
	if _, ok := ev.(Done); !ok {
		return fmt.Errorf("peering: %T is not Done", ev)
	}
	return nil
}

// ---- replicated PGs ----

// start: 1. every writer's info, log and missing set: the acting set's,
// then the backfill targets'.
func (a *Attempt) start() []Action {
	a.members = []Member{a.c.Self}
	var q []Target
	writers, addrs := a.c.Interval.Writers()
	for i, o := range writers {
		if o != a.c.Whoami && o != osdmap.NoOSD {
			q = append(q, Target{o, addrs[i]})
		}
	}
	return a.ask(q, false, a.gotWriters)
}

// ask queries q (answering at once with no members when q is empty).
func (a *Attempt) ask(q []Target, optional bool, then func([]Member) []Action) []Action {
	if len(q) == 0 {
		return then(nil)
	}
	return a.wait(func(ev Event) []Action {
		ms, err := infos(ev)
		if err != nil {
			return fail(err)
		}
		if !optional && len(ms) != len(q) {
			return fail(fmt.Errorf("peering: %d answers to a query of %d OSDs", len(ms), len(q)))
		}
		return then(ms)
	}, Query{Targets: q, Optional: optional})
}

// gotWriters: earlier members that are up may hold newer writes (the PG
// moved), or the only copies of objects the acting set lacks.
func (a *Attempt) gotWriters(ms []Member) []Action {
	a.members = append(a.members, ms...)
	var q []Target
	for _, o := range a.formerMembers(a.members) {
		q = append(q, Target{o, a.c.Map[o].Addr})
	}
	if len(q) == 0 {
		return a.gotFormers(nil)
	}
	return a.wait(func(ev Event) []Action {
		ms, err := infos(ev)
		if err != nil {
			return fail(err)
		}
		return a.gotFormers(ms)
	}, Query{Targets: q, Former: true})
}

// gotFormers: 2. the authoritative history — the newest last_update
// (ties: ours) — once every earlier interval that may have taken writes
// is heard from.
func (a *Attempt) gotFormers(others []Member) []Action {
	a.all = append(slices.Clone(a.members), others...)
	acts := a.checkPrior(a.all, 1)
	if ended(acts) {
		return acts
	}
	return a.waitLeases(acts, a.all, func() []Action {
		acts := []Action{Progress{State: GetLog}}
		auth := 0
		for i, m := range a.all {
			if a.all[auth].Info.LastUpdate.Less(m.Info.LastUpdate) {
				auth = i
			}
		}
		a.auth = a.all[auth]
		return append(acts, a.getMissing(a.members, a.all, a.afterPlan)...)
	})
}

// afterPlan: 5. copies to backfill in the acting set: complete ones keep
// serving under a pg_temp; else every member adopts the history.
func (a *Attempt) afterPlan() []Action {
	if want := a.wantActing(); want != nil {
		return []Action{Progress{State: WaitActingChange}, RequestPGTemp{Want: want, Why: "complete copies serve while the up set backfills"}}
	}
	return a.activate()
}

// formerMembers lists the OSDs outside the acting set that are up in the
// map and may hold a copy of the PG: strays, and the members of the
// earlier intervals this OSD and the reached members know of.
func (a *Attempt) formerMembers(reached []Member) []int32 {
	past := slices.Clone(a.c.Strays)
	for _, mi := range reached {
		for _, s := range mi.Intervals {
			past = append(past, s...)
		}
	}
	for _, s := range a.c.Past {
		past = append(past, s...)
	}
	slices.Sort(past)
	return slices.DeleteFunc(slices.Compact(past), func(o int32) bool {
		return !a.c.Map.up(o) || slices.Contains(a.c.Interval.Acting, o)
	})
}

// checkPrior refuses to choose a history while an earlier interval that
// may have accepted writes has fewer than need OSDs among the reached
// members (replicated: 1, every member of an interval holds its
// acknowledged writes; erasure-coded: k, to rebuild them): the PG is
// down until they return, rather than serve or roll back to an older
// history (Ceph's PriorSet "down"); an erasure-coded interval's need
// counts shards (a backfill target and the acting member of its shard
// are one). OSDs declared lost (`shoal osd lost`) and removed ones are
// not waited for. The members' intervals join the attempt's past first,
// and the machine's through MergePast.
func (a *Attempt) checkPrior(reached []Member, need int) []Action {
	return a.checkPriorWith(reached, need, func(int32, int) bool { return false })
}

// checkPriorWith is checkPrior where also counts OSD o at position pos of
// an earlier interval as reached.
func (a *Attempt) checkPriorWith(reached []Member, need int, also func(o int32, pos int) bool) []Action {
	var learnt [][]int32
	for _, m := range reached {
		for _, s := range m.Intervals {
			if !slices.ContainsFunc(a.c.Past, func(p []int32) bool { return slices.Equal(p, s) }) {
				a.c.Past = append(a.c.Past, s)
				learnt = append(learnt, s)
			}
		}
	}
	var acts []Action
	if learnt != nil {
		acts = append(acts, MergePast{Sets: learnt})
	}
	// an erasure-coded PG's prior sets are by position: it counts the
	// shards reached, not the OSDs
	position := func(j int) int { return j }
	if a.c.Interval.EC && a.c.Interval.Size > 0 {
		position = func(j int) int { return j % a.c.Interval.Size }
	}
	for _, acting := range a.c.Past {
		reachedAt := map[int]bool{} // positions (replicated: entries) reached
		var missing []string
		for j, o := range acting {
			if o == osdmap.NoOSD {
				continue
			}
			if slices.ContainsFunc(reached, func(m Member) bool { return m.ID == o }) || also(o, position(j)) {
				reachedAt[position(j)] = true
			} else if int(o) < len(a.c.Map) && a.c.Map[o].Exists && !a.c.Map[o].Lost { // a removed OSD is lost
				missing = append(missing, fmt.Sprintf("osd.%d", o))
			}
		}
		if n := len(reachedAt); n < need && len(missing) > 0 { // every OSD not reached is lost: go on without it
			why := fmt.Sprintf("acting set %v of an earlier interval may have accepted writes and %d of its OSDs are reachable (%d needed): waiting for %s",
				acting, n, need, strings.Join(missing, ", "))
			return append(acts, Progress{State: Down, Why: why}, Fail{Err: fmt.Errorf("%w: %s (or shoal osd lost)", ErrDown, why)})
		}
	}
	return acts
}

// waitLeases waits, after acts, for the read leases of the earlier
// intervals' OSDs and the strays that were not reached, then goes on.
func (a *Attempt) waitLeases(acts []Action, reached []Member, then func() []Action) []Action {
	var prior []int32
	for _, s := range a.c.Past {
		prior = append(prior, s...)
	}
	prior = append(prior, a.c.Strays...)
	slices.Sort(prior)
	prior = slices.DeleteFunc(slices.Compact(prior), func(o int32) bool {
		return o < 0 || o == osdmap.NoOSD || o == a.c.Whoami || slices.ContainsFunc(reached, func(m Member) bool { return m.ID == o })
	})
	ids := make([]int32, len(reached))
	for i, m := range reached {
		ids[i] = m.ID
	}
	if len(prior) == 0 {
		return append(acts, then()...)
	}
	return a.wait(func(ev Event) []Action {
		if err := done(ev); err != nil {
			return fail(err)
		}
		return then()
	}, append(acts, WaitLeases{Prior: prior, Reached: ids})...)
}

// getMissing: 3. what each copy lacks in the history of a.auth, listing
// the copies whose logs do not overlap it.
func (a *Attempt) getMissing(members, peers []Member, then func() []Action) []Action {
	rec, need := makePlan(a.auth, members, peers, a.listed)
	if need == nil {
		a.plan = rec
		return append([]Action{Progress{State: GetMissing}}, then()...)
	}
	var q []Target
	for _, o := range need {
		q = append(q, a.target(o))
	}
	return a.wait(func(ev Event) []Action {
		l, ok := ev.(Listed)
		if !ok {
			return fail(fmt.Errorf("peering: %T does not answer a listing", ev))
		}
		for _, o := range need {
			names, ok := l.Names[o]
			if !ok {
				return fail(fmt.Errorf("peering: no listing of osd.%d", o))
			}
			a.listed[o] = names
		}
		return a.getMissing(members, peers, then)
	}, Progress{State: GetMissing}, List{Targets: q})
}

// target is the address of an OSD peering heard from.
func (a *Attempt) target(o int32) Target {
	for _, ms := range [][]Member{a.all, a.members, a.reached} {
		for _, m := range ms {
			if m.ID == o {
				return Target{o, m.Addr}
			}
		}
	}
	if int(o) < len(a.c.Map) {
		return Target{o, a.c.Map[o].Addr}
	}
	return Target{OSD: o}
}

// wantActing returns the acting set to ask the MONs for as a pg_temp, or
// nil to go on with the one the map gives: when a member of an acting set
// that is its up set would be backfilled, the members whose copies are
// complete keep serving, with former members' complete copies (in the
// plan's peers) up to the pool's size. Not while a pg_temp already holds
// (backfill targets), not twice in one interval, and not when fewer than
// min_size complete copies are reachable.
func (a *Attempt) wantActing() []int32 {
	iv, rec := &a.c.Interval, a.plan
	if iv.EC || iv.Size == 0 || len(iv.Backfill.OSDs) > 0 || a.c.TempAsked {
		return nil
	}
	backfill := func(o int32) bool { return rec.Whole[o] && len(rec.Lacks[o]) > 0 }
	if !slices.ContainsFunc(iv.Acting, backfill) {
		return nil
	}
	var want []int32
	for _, o := range iv.Acting {
		if o != osdmap.NoOSD && !backfill(o) {
			want = append(want, o)
		}
	}
	for _, p := range rec.Peers {
		if len(want) >= iv.Size {
			break
		}
		if !slices.Contains(iv.Acting, p.ID) && !slices.Contains(want, p.ID) && !backfill(p.ID) {
			want = append(want, p.ID)
		}
	}
	if len(want) < iv.MinSize || slices.Equal(want, iv.Acting) {
		return nil
	}
	return want
}

// activate: 4. every member that does not hold the authoritative log with
// its missing set already adopts it; then the PG activates.
func (a *Attempt) activate() []Action {
	var logs []LogTo
	for _, m := range a.plan.Members {
		lacks := a.plan.Lacks[m.ID]
		if !m.Reset && m.Info.LastUpdate == a.auth.Info.LastUpdate && len(m.Entries) == len(a.auth.Entries) && m.Info.Objects == a.auth.Info.Objects && maps.Equal(m.Missing, lacks) {
			continue
		}
		logs = append(logs, LogTo{To: Target{m.ID, m.Addr}, Info: a.auth.Info, Entries: a.auth.Entries, Missing: slices.Sorted(maps.Keys(lacks))})
	}
	finish := func() []Action {
		plan := a.plan
		if plan.Count() == 0 {
			plan = nil
		}
		return []Action{Progress{State: WaitUpThru}, Activate{Auth: a.auth, Plan: plan}}
	}
	if len(logs) == 0 {
		return finish()
	}
	return a.wait(func(ev Event) []Action {
		if err := done(ev); err != nil {
			return fail(err)
		}
		return finish()
	}, SendLogs{Logs: logs})
}
