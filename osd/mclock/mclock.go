// Package mclock decides when an OSD's background work — recovery,
// backfill, scrub, stray deletion — may run beside its client I/O: the
// role of Ceph's mClock scheduler (doc/rados/configuration/mclock-config-ref,
// after Gulati, Merchant and Varman, "mClock: Handling Throughput
// Variability for Hypervisor IO Scheduling", OSDI 2010).
//
// Every operation has a cost in seconds of device time: 1/IOPS plus its
// bytes over the sequential bandwidth (Ceph's osd_mclock_max_capacity_iops
// and osd_mclock_max_sequential_bandwidth). Each class of work has a
// reservation (the share of that capacity it gets whatever the load) and
// a limit (the share it never exceeds), fractions of capacity as in
// Ceph's profiles. As in mClock, each class keeps tags that advance by
// cost/share with each operation it runs and never fall more than Slack
// behind the clock (no credit for idle time): R (reservation) and L
// (limit).
//
// The capacity is a device's, but on a machine whose CPUs saturate before
// its devices do, what an OSD can do is less: Scale (set by a Governor,
// cpu.go) is the fraction of the capacity left when the OSD's process
// waits for CPU, and every cost is divided by it, so reservations and
// limits are shares of what the OSD can do now.
//
// One difference from Ceph: client operations are never queued here —
// they are charged and run at once, so the client path pays one mutex
// and no wait. Background operations ask Start: one may start when its
// class is within its reservation (R tag due), or, below its limit (L tag
// due), when the OSD is not saturated: the device, fed every operation
// charged (client work included) at capacity, would have less than
// Horizon of work queued. Under a
// saturating client load background work thus runs at its reservation —
// so it still finishes — and with spare capacity at up to its limit. With
// clients never queued, mClock's weights (the split of spare capacity
// among queued classes) have nothing to split and are not modelled.
//
// The package is pure: time is a float64 of seconds passed in by the
// caller, and Scheduler holds no lock (the OSD wraps it in one).
package mclock

import (
	"fmt"
	"math"
)

// Class is a kind of work (Ceph's mClock client types).
type Class uint8

// Classes of work.
const (
	Client     Class = iota // client ops and the replica writes they cause
	Recovery                // recovery and backfill (background_recovery)
	BestEffort              // scrub and stray deletion (background_best_effort)
	NumClasses
)

// String is the class's name in Ceph's mClock options
// (osd_mclock_scheduler_<name>_res and so on).
func (c Class) String() string {
	return [...]string{"client", "background_recovery", "background_best_effort"}[c]
}

// QoS is a class's share of the OSD's capacity: Res and Lim are fractions
// of it (Lim 0: no limit).
type QoS struct {
	Res, Lim float64
}

// Profiles are Ceph's built-in mClock profiles (Reef's mclock-config-ref,
// "mClock Built-in Profiles"): per class, reservation and limit as
// fractions of capacity (their weights are not modelled, see above).
var Profiles = map[string][NumClasses]QoS{
	"balanced":          {{Res: 0.5}, {Res: 0.5}, {Lim: 0.9}},
	"high_client_ops":   {{Res: 0.6}, {Res: 0.4}, {Lim: 0.7}},
	"high_recovery_ops": {{Res: 0.3}, {Res: 0.7}, {}},
}

// Capacity is an OSD's device capacity, from which costs are counted.
type Capacity struct {
	IOPS      float64 // random 4 KiB operations per second
	Bandwidth float64 // sequential bytes per second
}

// Cost is the device time, in seconds, of ops operations moving n bytes
// in all.
func (c Capacity) Cost(ops int, n uint64) float64 {
	return float64(ops)/c.IOPS + float64(n)/c.Bandwidth
}

// Validate reports a capacity or QoS that cannot be scheduled.
func Validate(c Capacity, q [NumClasses]QoS) error {
	if !(c.IOPS > 0) || !(c.Bandwidth > 0) {
		return fmt.Errorf("mclock: capacity needs positive IOPS and bandwidth, got %g and %g", c.IOPS, c.Bandwidth)
	}
	for i, x := range q {
		if !(x.Res >= 0 && x.Res <= 1 && x.Lim >= 0 && x.Lim <= 1) {
			return fmt.Errorf("mclock: %s: reservation and limit must be fractions of capacity (0..1), got %g and %g", Class(i), x.Res, x.Lim)
		}
		if x.Lim > 0 && x.Res > x.Lim {
			return fmt.Errorf("mclock: %s: reservation %g above limit %g", Class(i), x.Res, x.Lim)
		}
	}
	return nil
}

// Horizon is the device time of queued work beyond which the OSD counts
// as saturated; Slack is how far a class's tags may lag the clock (a
// class that asks late, by less than Slack, keeps its rate); MaxBacklog
// is the most work that operations which never wait (Charge: client I/O,
// operations served for other OSDs) can queue up, so that their
// overload — they are charged whatever the capacity — is forgotten soon
// after it ends; background work, which waits for the backlog, is never
// cut short. All three are Shoal's choices, not Ceph's: Horizon and
// Slack long enough for a few 4 MiB operations at SSD bandwidth, all
// short against the 100 ms a client notices (in scaled time: see Scale).
const (
	Horizon    = 0.010 // seconds
	Slack      = 0.010 // seconds
	MaxBacklog = 4 * Horizon
)

type tags struct {
	r, l float64 // next due times, seconds
}

// Scheduler holds the classes' tags and the OSD's backlog. Its zero value
// is not usable: see New.
type Scheduler struct {
	qos     [NumClasses]QoS
	scale   float64 // fraction of the capacity available (SetScale)
	tags    [NumClasses]tags
	busy    float64 // when the device would finish the work charged so far
	granted [NumClasses]float64
}

// New returns a scheduler for shares q (see Validate).
func New(q [NumClasses]QoS) *Scheduler { return &Scheduler{qos: q, scale: 1} }

// SetScale sets the fraction of the capacity the OSD has now, in
// [MinScale, 1] (values outside are clamped): costs charged from now on
// are divided by it. See Governor.
func (s *Scheduler) SetScale(f float64) { s.scale = math.Min(math.Max(f, MinScale), 1) }

// Scale is the fraction of the capacity in use (SetScale).
func (s *Scheduler) Scale() float64 { return s.scale }

// SetQoS changes the classes' shares; tags are kept.
func (s *Scheduler) SetQoS(q [NumClasses]QoS) { s.qos = q }

// Charge records that an operation of class c costing cost seconds of
// device time (at full capacity) started at now (seconds on the caller's
// clock): its tags and the backlog advance, the backlog to MaxBacklog at
// most. Operations that never wait (client I/O) call Charge; background
// ones are charged by Start when it lets them start.
func (s *Scheduler) Charge(c Class, cost, now float64) {
	cost /= s.scale
	s.charge(c, cost, now, false)
	s.busy = math.Max(s.busy, math.Min(math.Max(s.busy, now)+cost, now+MaxBacklog))
}

// charge advances c's tags (cost already scaled); only work under the
// reservation advances R (dmClock: work done from spare capacity does
// not use the reservation up, so a burst on an idle OSD does not hold
// the class back later). Charge and start advance the backlog.
func (s *Scheduler) charge(c Class, cost, now float64, reserved bool) {
	q, t := s.qos[c], &s.tags[c]
	if reserved {
		t.r = math.Max(t.r, now-Slack) + cost/q.Res
	}
	if q.Lim > 0 {
		t.l = math.Max(t.l, now-Slack) + cost/q.Lim
	}
	s.granted[c] += cost
}

// start charges a background operation Start lets start (cost scaled):
// the backlog grows by all of it.
func (s *Scheduler) start(c Class, cost, now float64, reserved bool) {
	s.charge(c, cost, now, reserved)
	s.busy = math.Max(s.busy, now) + cost
}

// Backlog is the device time (scaled) of work charged but not yet done
// at now, if the device did it at the scaled capacity; what Charge adds
// stops at MaxBacklog.
func (s *Scheduler) Backlog(now float64) float64 { return math.Max(s.busy-now, 0) }

// Granted is the device time, in seconds, charged to class c so far
// (divided by the scale at the time).
func (s *Scheduler) Granted(c Class) float64 { return s.granted[c] }

// Start asks whether a background operation of class c costing cost (at
// full capacity) may start at now. If so it is charged and Start returns
// true; if not, it returns the time at which to ask again.
func (s *Scheduler) Start(c Class, cost, now float64) (ok bool, retry float64) {
	q, t := s.qos[c], &s.tags[c]
	cost /= s.scale
	if q.Res > 0 && t.r <= now { // within its reservation
		s.start(c, cost, now, true)
		return true, 0
	}
	retry = math.Inf(1)
	if q.Res > 0 {
		retry = t.r
	}
	if q.Lim > 0 && t.l > now { // at its limit
		return false, math.Min(retry, t.l)
	}
	b := s.Backlog(now)
	if b < Horizon {
		s.start(c, cost, now, false)
		return true, 0
	}
	// saturated: ask again when the backlog is below the horizon
	return false, math.Min(retry, now+b-Horizon+1e-6)
}
