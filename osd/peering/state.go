package peering

import (
	"slices"

	"github.com/shoal-project/shoal/osdmap"
)

// State is where a PG stands on one OSD, named as Ceph's PeeringState
// names its states (src/osd/PeeringState.h); String gives the state's
// path in Ceph's hierarchy, Name the word `shoal status` reports.
type State uint8

// The states. An active primary is in one of Started/Primary/Active's
// sub-states Recovering, Backfilling, Recovered or Clean; every one of
// them serves I/O (IsActive). Activation is synchronous here (the
// members adopt the log before the primary activates), so Ceph's
// Activating has no counterpart.
const (
	Stray            State = iota // Started/Stray: not a member of the acting set or the up set (and a PG before its first map)
	ReplicaActive                 // Started/ReplicaActive: a non-primary member
	Peered                        // Started/Primary/Active/Peered: below min_size, no I/O (undersized+peered)
	GetInfo                       // Started/Primary/Peering/GetInfo: asking the members and former members
	GetLog                        // Started/Primary/Peering/GetLog: choosing the authoritative log (EC: rolling back)
	GetMissing                    // Started/Primary/Peering/GetMissing: working out what each copy lacks
	WaitUpThru                    // Started/Primary/Peering/WaitUpThru: the interval is recorded at the MONs before it serves
	Down                          // Started/Primary/Peering/Down: waits for OSDs of an earlier interval
	Incomplete                    // Started/Primary/Peering/Incomplete: too few shards to choose a history
	WaitActingChange              // Started/Primary/WaitActingChange: a pg_temp was asked for
	Recovering                    // Started/Primary/Active/Recovering: serves I/O; copies lacking objects from the logs
	Backfilling                   // Started/Primary/Active/Backfilling: serves I/O; fills copies whose logs did not overlap
	Recovered                     // Started/Primary/Active/Recovered: every acting copy complete, but the acting set short of the pool's size or backfill targets left
	Clean                         // Started/Primary/Active/Clean: every copy complete, the acting set full
)

var statePaths = [...]string{
	Stray:            "Started/Stray",
	ReplicaActive:    "Started/ReplicaActive",
	Peered:           "Started/Primary/Active/Peered",
	GetInfo:          "Started/Primary/Peering/GetInfo",
	GetLog:           "Started/Primary/Peering/GetLog",
	GetMissing:       "Started/Primary/Peering/GetMissing",
	WaitUpThru:       "Started/Primary/Peering/WaitUpThru",
	Down:             "Started/Primary/Peering/Down",
	Incomplete:       "Started/Primary/Peering/Incomplete",
	WaitActingChange: "Started/Primary/WaitActingChange",
	Recovering:       "Started/Primary/Active/Recovering",
	Backfilling:      "Started/Primary/Active/Backfilling",
	Recovered:        "Started/Primary/Active/Recovered",
	Clean:            "Started/Primary/Active/Clean",
}

// String is the state's path in Ceph's state hierarchy.
func (s State) String() string {
	if int(s) < len(statePaths) {
		return statePaths[s]
	}
	return "Unknown"
}

// Name is the PG state word `shoal status` reports for a PG in s before
// the Active qualifiers (clean, degraded, recovering, ...) that the
// primary adds from its recovery plan: peering, down, incomplete, active,
// undersized+peered, replica, stray.
func (s State) Name() string {
	switch s {
	case Stray:
		return "stray"
	case ReplicaActive:
		return "replica"
	case Peered:
		return "undersized+peered"
	case Down:
		return "down"
	case Incomplete:
		return "incomplete"
	case GetInfo, GetLog, GetMissing, WaitUpThru, WaitActingChange:
		return "peering"
	}
	return "active"
}

// IsActive reports whether a PG in s serves client I/O (its primary).
func (s State) IsActive() bool { return s >= Recovering }

// IsPeering reports whether the primary is peering: between a new
// interval (or a repeer) and activation, Down and Incomplete included.
func (s State) IsPeering() bool { return s >= GetInfo && s <= WaitActingChange }

// Machine is one PG's peering state on one OSD, apart from its peering
// attempts (Attempt): the interval it is in, the earlier intervals that
// may have taken writes, the OSDs that may still hold copies, and the
// state. It is pure: the OSD calls its methods under its PG lock and
// carries out what they return.
type Machine struct {
	Whoami   int32    // this OSD's id
	Interval Interval // the interval the PG is in (AdvMap)
	State    State
	// DownReason says what a Down or Incomplete PG waits for; it is
	// empty in every other state.
	DownReason string
	// Past are the prior sets of the intervals since the PG last settled
	// here (every copy complete; that one included) that had min_size
	// members, so may have accepted writes: peering needs to hear from
	// enough of each (Ceph's past_intervals and PriorSet; kept in memory,
	// and at the MONs by the OSD).
	Past [][]int32
	// Strays are OSDs that left the acting set and may still hold a copy —
	// writes the members lack, or the only copies of objects they lack:
	// the primary asks them too when it peers, and tells them to delete
	// their copies once the PG is clean.
	Strays []int32
	// TempAsked is the ID of the interval in which peering asked for a
	// pg_temp: it asks once per interval, until the map moves the PG to
	// another one (AdvMap clears it).
	TempAsked uint64
}

// AdvMap applies a new map's interval of the PG to the machine; in says
// whether this OSD is in the acting set or the up set, prev is the PG's
// acting set in the previous map (used only for a PG new to this OSD:
// its past). It reports whether the interval changed (the OSD then
// cancels any running peering), and whether this OSD now peers as the
// primary (the OSD starts an attempt).
func (m *Machine) AdvMap(iv Interval, in bool, prev []int32) (changed, peer bool) {
	if iv.ID == m.Interval.ID && m.State != Stray {
		return false, false
	}
	// the OSDs that took every write of the interval ending: its acting
	// set and backfill targets (their logs hold all of them)
	old, _ := m.Interval.Writers()
	prior := m.Interval.PriorSet()
	acted := osdmap.Members(m.Interval.Acting)
	if m.Interval.ID == 0 {
		old, prior, acted = prev, prev, osdmap.Members(prev)
	}
	for _, o := range old {
		if o >= 0 && !slices.Contains(iv.Acting, o) && !slices.Contains(m.Strays, o) {
			m.Strays = append(m.Strays, o)
		}
	}
	m.Strays = slices.DeleteFunc(m.Strays, func(o int32) bool {
		return slices.Contains(iv.Acting, o) || slices.Contains(iv.Backfill.OSDs, o)
	})
	if iv.Size > 0 && acted >= iv.MinSize && (len(m.Past) == 0 || !slices.Equal(m.Past[len(m.Past)-1], prior)) {
		m.Past = append(m.Past, prior)
	}
	m.Interval, m.DownReason = iv, ""
	// a pg_temp asked for in an interval whose set comes back later (A,
	// its pg_temp B, cleared: A again, the same digest) may be needed
	// again there: a write in flight when B ended reached the former
	// members only
	m.TempAsked = 0
	switch {
	case !in:
		m.State = Stray
	case iv.Primary != m.Whoami:
		m.State = ReplicaActive
	case osdmap.Members(iv.Acting) < iv.MinSize:
		m.State = Peered
	default:
		m.State = GetInfo
		return true, true
	}
	return true, false
}

// Repeer starts peering again in the same interval (a write failed on a
// member: the members may disagree on the log's head). It reports
// whether this OSD peers: only a primary that is not Peered.
func (m *Machine) Repeer() bool {
	if m.Interval.Primary != m.Whoami || m.State == Stray || m.State == Peered {
		return false
	}
	m.State, m.DownReason = GetInfo, ""
	return true
}

// AddPast adds prior sets learnt from the MONs' record or from members'
// answers, once each.
func (m *Machine) AddPast(sets [][]int32) {
	for _, s := range sets {
		if osdmap.Members(s) > 0 && !slices.ContainsFunc(m.Past, func(a []int32) bool { return slices.Equal(a, s) }) {
			m.Past = append(m.Past, s)
		}
	}
}

// Progress records how far the running attempt of interval id got
// (GetInfo ... WaitActingChange, Down or Incomplete with why), unless the
// interval ended or the PG stopped peering. A Down or Incomplete PG stays
// so, whatever step its next attempts reach, until one of them finds it
// down again (with the new reason) or activates it: it is shown down, not
// flickering, while it waits. It reports whether the state or the
// reason changed.
func (m *Machine) Progress(id uint64, s State, why string) bool {
	if m.Interval.ID != id || !m.State.IsPeering() {
		return false
	}
	was, wasWhy := m.State, m.DownReason
	switch {
	case s == Down || s == Incomplete:
		m.State, m.DownReason = s, why
	case m.State != Down && m.State != Incomplete:
		m.State = s
	}
	return m.State != was || m.DownReason != wasWhy
}

// Activate makes the PG serve I/O after peering in interval id, with
// recovery to do (and a backfill among it) or none. It reports false if
// the interval ended.
func (m *Machine) Activate(id uint64, recover, backfill bool) bool {
	if m.Interval.ID != id {
		return false
	}
	m.DownReason = ""
	switch {
	case backfill:
		m.State = Backfilling
	case recover:
		m.State = Recovering
	default:
		m.recovered()
	}
	return true
}

// Recovered records that every acting member's copy is complete in
// interval id.
func (m *Machine) Recovered(id uint64) {
	if m.Interval.ID == id && m.State.IsActive() {
		m.recovered()
	}
}

func (m *Machine) recovered() {
	if m.Interval.Undersized() || len(m.Interval.Backfill.OSDs) > 0 {
		m.State = Recovered
		return
	}
	m.State = Clean
}

// Settled records that every copy of interval id holds every write of
// the earlier intervals, which are forgotten. It reports whether the
// pg_temp must be cleared (Interval.Remapped), and ok false if the
// interval ended.
func (m *Machine) Settled(id uint64) (clearTemp bool, ok bool) {
	if m.Interval.ID != id {
		return false, false
	}
	m.Past = nil
	return m.Interval.Remapped(), true
}
