// Package peering is the pure core of a PG's peering (Ceph's
// PeeringState, src/osd/PeeringState.{h,cc}, and
// doc/dev/peering.rst): it decides, and the OSD does. Nothing here runs
// a goroutine, takes a lock, reads a clock or does I/O, so every
// transition can be tested from a table (attempt_test.go,
// state_test.go) without a cluster.
//
// # Two machines
//
// Machine is one PG's state on one OSD across maps. AdvMap applies a new
// map's Interval (acting set, up set, backfill targets, the pool's size
// and min_size): a new interval ends the old one, whose prior set joins
// Past if it had min_size members (so may have taken writes); OSDs that
// left the acting set become Strays; and the OSD's role sets the state —
// Stray, ReplicaActive, Peered (below min_size: no I/O), or GetInfo, in
// which case the OSD starts a peering Attempt. Repeer, Progress,
// Activate, Recovered and Settled carry the primary through Peering
// (GetInfo, GetLog, GetMissing, WaitUpThru, or Down / Incomplete /
// WaitActingChange) into Active's sub-states Recovering, Backfilling,
// Recovered and Clean. State.String gives Ceph's state path
// ("Started/Primary/Peering/GetLog"), State.Name the word `shoal status`
// shows ("peering").
//
// Attempt is one primary's peering of one interval, built from the
// machine as it stands (Config). Start and Step return Actions; the OSD
// carries them out in order and answers the last one with an Event:
//
//	Query      → Infos    ask members (and former members) for info, log, past intervals, missing set
//	List       → Listed   list copies whose logs do not overlap the authority's (backfill)
//	WaitLeases → Done     wait out read leases of earlier intervals' OSDs not reached
//	RollBack   → Done     (erasure-coded) roll shards back to the newest version k shards hold
//	SendLogs   → Done     every member adopts the authoritative log with its missing set
//	Fail, RequestPGTemp, Activate   end the attempt
//
// Progress and MergePast need no answer: the OSD applies them to the
// Machine (under its PG lock) as they come. A replicated PG takes the
// newest last_update among the members and former members reached as
// authoritative (ties: the primary's), once every past interval has at
// least one OSD among them (else Down, Ceph's PriorSet check); an
// erasure-coded PG takes the k-th newest shard, rolls back what fewer
// than k shards hold, and needs k shards of every past interval. Both ask
// the former members that are up (an erasure-coded one's copy counts for
// the shard it still holds, and its writes block a rollback that would
// undo them). OSDs declared lost, or removed from the map, are not
// waited for. Either
// may ask for a pg_temp instead of activating, so that complete copies
// keep serving while the up set is backfilled (Ceph's choose_acting).
//
// # Intervals
//
// Interval.ID identifies an interval in peer messages: a digest of what
// defines it. Ceph names intervals by same_interval_since, the epoch
// they began; Shoal's OSDs install the newest map they are sent rather
// than every epoch, so two OSDs may see an interval begin at different
// epochs. The epoch this OSD saw is kept as SameIntervalSince (recorded
// at the MONs and shown), and the digest is what they compare.
//
// # Ordering rules for the OSD
//
//   - Apply AdvMap, Repeer and the Progress and MergePast actions under
//     the PG's lock; cancel a running attempt when AdvMap reports a
//     change, and start one when it or Repeer says the OSD peers.
//   - An attempt's queries and log sends go out in the order given;
//     Query answers list members in the order asked (an Optional query
//     leaves out those that did not answer).
//   - Activate: record the interval at the MONs (WaitUpThru) before the
//     PG serves, then Machine.Activate; settle (tell the members, clear a
//     pg_temp that no longer serves, purge strays) once every copy is
//     complete.
package peering
