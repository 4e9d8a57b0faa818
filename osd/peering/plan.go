package peering

import (
	"maps"
	"slices"
	"strings"
)

// Member is one copy's answer to the primary's query (Ceph's pg_notify_t
// with the log and missing set): its info, log, the earlier acting sets
// it knows may have taken writes, and the objects it lacks.
type Member struct {
	ID        int32           // the OSD
	Addr      string          // its cluster address ("" for this OSD)
	Info      Info            // its PG info
	Entries   []LogEntry      // its log, oldest first
	Intervals [][]int32       // the earlier acting sets it knows may have taken writes
	Missing   map[string]bool // the objects its copy lacks
	// Reset: an erasure-coded member whose copy is of another shard than
	// its position's; peering treats it as holding nothing (its history
	// says nothing of this shard), and it must adopt the log.
	Reset bool
}

// Target names an OSD to ask: its id and its cluster address.
type Target struct {
	OSD  int32  // the OSD's id
	Addr string // its cluster address (host:port/nonce)
}

// IsInternal reports whether an object is a copy's own (an erasure-coded
// write's rollback stash: its name starts with a NUL byte, which client
// object names may not), never listed to clients nor recovered.
func IsInternal(oid string) bool { return strings.HasPrefix(oid, "\x00") }

// Plan is a PG's recovery plan, made at peering (Ceph's peer_missing and
// missing_loc): which objects each member lacks, and the copies reached
// at peering, former members included, that can give them.
type Plan struct {
	Members []Member // acting members, the primary first, then backfill targets
	Peers   []Member // every copy reached at peering, acting members first
	// Lacks holds, by OSD, the objects its copy lacks.
	Lacks map[int32]map[string]bool
	// Backfill: some member's missing set came from listings (its log did
	// not overlap the authoritative one), which nobackfill holds.
	Backfill bool
	// Whole, by OSD: the copy is rebuilt whole (a backfill) — the copies a
	// pg_temp keeps out of the acting set until they are complete.
	Whole map[int32]bool
	// Shards, for an erasure-coded PG, are the acting members by shard
	// position (nil where none); nil for a replicated PG. TargetShards
	// gives the shard each backfill target is filled with; K is the
	// code's data shards.
	Shards       []*Member
	TargetShards map[int32]int
	K            int
}

// Count is the number of object copies the acting members lack.
func (r *Plan) Count() int64 {
	if r == nil {
		return 0
	}
	n := 0
	for _, m := range r.Members {
		n += len(r.Lacks[m.ID])
	}
	return int64(n)
}

// logDiff lists the objects member m must receive to match the
// authoritative a, from their logs: those a's log names after the last
// entry they share, plus those m wrote after it (divergent writes a never
// saw). ok is false when the logs share nothing: only full listings tell
// then (a backfill).
func logDiff(a, m Member) (oids map[string]bool, ok bool) {
	if objs, ok := Since(a.Info, a.Entries, m.Info.LastUpdate); ok {
		return objs, true
	}
	inA := map[Version]bool{a.Info.LogTail: true}
	for _, e := range a.Entries {
		inA[e.Ver] = true
	}
	for i := len(m.Entries) - 1; i >= 0; i-- {
		if !inA[m.Entries[i].Ver] {
			continue
		}
		objs, _ := Since(a.Info, a.Entries, m.Entries[i].Ver)
		for _, e := range m.Entries[i+1:] {
			objs[e.OID] = true
		}
		return objs, true
	}
	return nil, false
}

// Divergent lists, sorted, the objects member m must receive to match the
// authoritative a by their logs (see logDiff), and whether the logs
// overlap at all.
func Divergent(a, m Member) ([]string, bool) {
	objs, ok := logDiff(a, m)
	return slices.Sorted(maps.Keys(objs)), ok
}

// lacks is what member m's copy lacks once it adopts a's log: those it
// already lacked plus those the logs say changed since it diverged — or,
// when the logs do not overlap, every object either holds (listed: their
// listings) and every object a lacks (which neither may hold: m's listing
// says nothing of its version); backfill is true then, and for a copy
// with no history (a PG new to m). needList is true, and nothing else is
// set, when the logs do not overlap and listed lacks a's or m's listing.
// Internal objects are left out.
func lacks(a, m Member, listed map[int32][]string) (set map[string]bool, backfill, needList bool) {
	set = maps.Clone(m.Missing)
	if set == nil {
		set = map[string]bool{}
	}
	if m.ID != a.ID {
		objs, ok := logDiff(a, m)
		if !ok {
			la, okA := listed[a.ID]
			lm, okM := listed[m.ID]
			if !okA || !okM {
				return nil, false, true
			}
			objs = map[string]bool{}
			for _, n := range append(slices.Clone(la), lm...) {
				objs[n] = true
			}
			maps.Copy(objs, a.Missing)
			backfill = true
		}
		maps.Copy(set, objs)
		// a copy with no history at all (the PG moved to this OSD) is
		// filled whole: a backfill, even when the log covers every write
		backfill = backfill || (m.Info.LastUpdate == Version{} && len(set) > 0)
	}
	maps.DeleteFunc(set, func(oid string, _ bool) bool { return IsInternal(oid) })
	return set, backfill, false
}

// complete reports whether m's copy holds everything of a's history by
// the logs alone (no listing: a copy whose log does not overlap is not).
func complete(a, m Member) bool {
	set, backfill, needList := lacks(a, m, nil)
	return !needList && !backfill && len(set) == 0
}

// makePlan works out what each copy in peers — the acting members (this
// OSD first), then former members — lacks in the authoritative history a.
// It returns the OSDs whose listings it needs first, if listed lacks them.
func makePlan(a Member, members, peers []Member, listed map[int32][]string) (*Plan, []int32) {
	rec := &Plan{Members: members, Peers: peers, Lacks: map[int32]map[string]bool{}, Whole: map[int32]bool{}}
	var need []int32
	for _, mi := range peers {
		set, backfill, needList := lacks(a, mi, listed)
		if needList {
			for _, o := range []int32{a.ID, mi.ID} {
				if _, ok := listed[o]; !ok && !slices.Contains(need, o) {
					need = append(need, o)
				}
			}
			continue
		}
		rec.Lacks[mi.ID] = set
		rec.Whole[mi.ID] = backfill
		rec.Backfill = rec.Backfill || (backfill && slices.ContainsFunc(members, func(x Member) bool { return x.ID == mi.ID }))
	}
	if need != nil {
		return nil, need
	}
	return rec, nil
}
