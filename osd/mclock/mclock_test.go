package mclock

import (
	"math"
	"testing"
)

// simulate runs the scheduler in steps of 1 ms from start to end: each
// step, the client charges clientLoad (a fraction of the full capacity)
// times the step, and the background class bg starts as many operations
// of cost opCost (at full capacity) as Start allows. It returns the
// device time of the operations bg started (their number times opCost,
// whatever the scale).
func simulate(s *Scheduler, bg Class, opCost, clientLoad, start, end float64) float64 {
	const dt = 0.001
	ops := 0
	for i := 0; ; i++ {
		now := start + float64(i)*dt
		if now >= end {
			break
		}
		if clientLoad > 0 {
			s.Charge(Client, clientLoad*dt, now)
		}
		for {
			ok, retry := s.Start(bg, opCost, now)
			if !ok {
				if !(retry > now) {
					panic("refused with a retry time not after now")
				}
				break
			}
			ops++
		}
	}
	return float64(ops) * opCost
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s: %.3f s of device time, want %.3f ± %.3f", what, got, want, tol)
	}
}

// With no client load, recovery uses the whole capacity: the scheduler
// is work-conserving.
func TestIdleOSDRecoveryUsesCapacity(t *testing.T) {
	s := New(Profiles["balanced"])
	near(t, "recovery on an idle OSD over 10 s", simulate(s, Recovery, 0.002, 0, 0, 10), 10, 0.3)
}

// Under a client load of the whole capacity, recovery gets its
// reservation (balanced: half, high_client_ops: 0.4, high_recovery_ops:
// 0.7) and best-effort work (no reservation) next to nothing.
func TestSaturatedOSDGivesReservation(t *testing.T) {
	for name, q := range Profiles {
		s := New(q)
		near(t, name+": recovery under a saturating client load over 10 s", simulate(s, Recovery, 0.002, 1, 0, 10), 10*q[Recovery].Res, 0.2)
		s = New(q)
		if got := simulate(s, BestEffort, 0.002, 1, 0, 10); got > 0.1 {
			t.Errorf("%s: scrub under a saturating client load got %.3f s in 10 s, want about none", name, got)
		}
	}
}

// Under a client load of 30% of capacity, recovery fills the rest; under
// 70%, it still gets its reservation (high_client_ops: 40%).
func TestPartialLoad(t *testing.T) {
	s := New(Profiles["balanced"])
	near(t, "recovery beside a 30% client load over 10 s", simulate(s, Recovery, 0.002, 0.3, 0, 10), 7, 0.2)
	s = New(Profiles["high_client_ops"])
	near(t, "recovery beside a 70% client load over 10 s", simulate(s, Recovery, 0.002, 0.7, 0, 10), 4, 0.2)
}

// A limit caps a class even on an idle OSD.
func TestLimit(t *testing.T) {
	s := New(Profiles["balanced"]) // best effort: limit 0.9
	near(t, "scrub on an idle OSD over 10 s", simulate(s, BestEffort, 0.002, 0, 0, 10), 9, 0.1)
}

// Time idle earns no credit: after 10 s without recovery, a saturated
// OSD still gives recovery only its reservation, not a burst.
func TestNoIdleCredit(t *testing.T) {
	s := New(Profiles["balanced"])
	simulate(s, Recovery, 0.002, 1, 0, 1)
	near(t, "recovery in the first second of saturation after 10 s idle", simulate(s, Recovery, 0.002, 1, 11, 12), 0.5, 0.05)
}

// Spare capacity used does not use up the reservation: recovery that ran
// alone at full speed for 10 s still gets its reservation at once when
// clients saturate the OSD.
func TestBurstDoesNotStall(t *testing.T) {
	s := New(Profiles["balanced"])
	simulate(s, Recovery, 0.002, 0, 0, 10)
	near(t, "recovery in the first second of saturation after a burst", simulate(s, Recovery, 0.002, 1, 10, 11), 0.5, 0.05)
}

func TestCostAndValidate(t *testing.T) {
	c := Capacity{IOPS: 1000, Bandwidth: 100 << 20}
	if got, want := c.Cost(1, 4<<20), 0.001+0.04; math.Abs(got-want) > 1e-12 {
		t.Errorf("cost of 4 MiB: %g, want %g", got, want)
	}
	if got, want := c.Cost(10, 0), 0.01; math.Abs(got-want) > 1e-12 {
		t.Errorf("cost of 10 ops: %g, want %g", got, want)
	}
	for name, q := range Profiles {
		if err := Validate(c, q); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := []struct {
		c Capacity
		q [NumClasses]QoS
	}{
		{Capacity{IOPS: 0, Bandwidth: 1}, Profiles["balanced"]},
		{Capacity{IOPS: 1, Bandwidth: math.NaN()}, Profiles["balanced"]},
		{c, [NumClasses]QoS{{Res: 1.5}, {}, {}}},
		{c, [NumClasses]QoS{{}, {Res: 0.5, Lim: 0.2}, {}}},
		{c, [NumClasses]QoS{{}, {}, {Lim: -1}}},
	}
	for _, b := range bad {
		if err := Validate(b.c, b.q); err == nil {
			t.Errorf("Validate(%+v, %+v) accepted it", b.c, b.q)
		}
	}
}

// A scale divides the capacity. In device time: at a quarter of the capacity an idle OSD's
// recovery gets a quarter of the device (2.5 s in 10 s); beside a client
// load of a quarter of the full capacity, which saturates the scaled
// one, it gets its reservation of what is left, half of a quarter (1.25
// s), where unscaled it fills the other 75% (7.5 s). A background
// operation larger than MaxBacklog is charged whole: 31 ms operations (4
// MiB on a disk) at MinScale get about a sixteenth of the device, not
// all of it.
func TestScale(t *testing.T) {
	s := New(Profiles["balanced"])
	near(t, "recovery beside a 25% client load, unscaled", simulate(s, Recovery, 0.002, 0.25, 0, 10), 7.5, 0.2)
	s = New(Profiles["balanced"])
	s.SetScale(0.25)
	near(t, "recovery on an idle OSD at scale 1/4 (device time)", simulate(s, Recovery, 0.002, 0, 0, 10), 2.5, 0.1)
	s = New(Profiles["balanced"])
	s.SetScale(0.25)
	near(t, "recovery beside a 25% client load at scale 1/4 (device time)", simulate(s, Recovery, 0.002, 0.25, 0, 10), 1.25, 0.1)
	s = New(Profiles["balanced"])
	s.SetScale(MinScale)
	// (each op may start up to Horizon before the last ends: 22 ops, not 20)
	near(t, "31 ms recovery ops on an idle OSD at MinScale (device time)", simulate(s, Recovery, 0.031, 0, 0, 10), 10*MinScale, 0.08)
	if s.SetScale(0); s.Scale() != MinScale {
		t.Errorf("SetScale(0): scale %g, want MinScale", s.Scale())
	}
	if s.SetScale(3); s.Scale() != 1 {
		t.Errorf("SetScale(3): scale %g, want 1", s.Scale())
	}
}

// An overload is forgotten soon after it ends: after a second of client
// work at five times the capacity, recovery on the then idle OSD gets all
// but MaxBacklog of the next second, not just its reservation for the
// next four.
func TestOverloadForgotten(t *testing.T) {
	s := New(Profiles["balanced"])
	simulate(s, Recovery, 0.002, 5, 0, 1)
	near(t, "recovery in the second after an overload", simulate(s, Recovery, 0.002, 0, 1, 2), 1-MaxBacklog, 0.02)
}

// The governor: multiplicative decrease while clients run and the
// latency is over target, down to MinScale; additive increase otherwise;
// off (scale 1) with no target.
func TestGovernor(t *testing.T) {
	var g Governor
	const target = 0.001
	steps := []struct {
		p90    float64
		client bool
		want   float64
	}{
		{0.005, true, 1}, // first sample: starts at full capacity
		{0.005, true, 0.75},
		{0.005, true, 0.5625},
		{0.005, false, 0.5825},   // no client work: up
		{0.0009, true, 0.6025},   // under target: up
		{0.0011, true, 0.451875}, // over: down
	}
	for i, st := range steps {
		if got := g.Update(st.p90, target, st.client); math.Abs(got-st.want) > 1e-12 {
			t.Fatalf("step %d: scale %g, want %g", i, got, st.want)
		}
	}
	for range 50 {
		g.Update(1, target, true)
	}
	if got := g.Update(1, target, true); got != MinScale {
		t.Errorf("after 50 periods far over target: scale %g, want MinScale", got)
	}
	n := 0
	for ; g.Update(0, target, true) < 1; n++ {
	}
	if want := int(math.Ceil((1 - MinScale) / ScaleIncrease)); n+1 != want {
		t.Errorf("from MinScale back to 1 in %d periods, want %d", n+1, want)
	}
	g.Update(1, target, true)
	if got := g.Update(1, 0, true); got != 1 {
		t.Errorf("target 0: scale %g, want 1", got)
	}
}
