package mclock

import "math"

// A Governor sets a Scheduler's Scale from how long the OSD process's
// runnable goroutines wait for a CPU (the Go runtime's
// /sched/latencies:seconds), for machines where the CPUs, not the
// devices, run out first. Sampled every period (the OSD's: 100 ms), the
// 90th percentile of that wait above the target while client work ran
// means background work is taking CPU time clients wait for: the scale
// falls by ScaleDecrease, down to MinScale. A period at or under the
// target, or without client work, raises it by ScaleIncrease, up to 1.
// With the costs divided by the scale, a client load that used a small
// share of the device's capacity uses most of what is left of it, so the
// OSD counts as saturated and background work falls to its reservation,
// itself a share of the scaled capacity; at MinScale that is still
// 1/16 of what it would be, so recovery finishes.
//
// The signal and its default target (1 ms) are those of CockroachDB's
// elastic CPU admission control (admission.elastic_cpu.
// scheduler_latency_target, pkg/util/admission), which aims its p99; the
// 90th percentile is used here because a client load alone already
// takes a busy OSD's p99 past 1 ms on a 2-core machine, where its 90th
// percentile stays at 0.1–0.33 ms and recovery beside it takes that to
// 1.5–16 ms (docs/PERFORMANCE.md, "The I/O scheduler watching the
// CPUs"). The additive increase and multiplicative decrease are the
// usual AIMD: the scale settles where background work keeps the OSD's
// scheduler latency at the target. The signal cannot tell whose CPU use
// makes goroutines wait: under a client load that alone keeps the
// latency over the target, background work stays at the floor for as
// long as that load lasts.
type Governor struct {
	scale float64 // 0 until the first Update: 1
}

// Governor constants: the least scale (capacity fraction), the factor
// applied per period over the target and the step added per period at or
// under it (1/16 back to 1 in 47 periods, under 5 s at 100 ms).
const (
	MinScale      = 1.0 / 16
	ScaleDecrease = 0.75
	ScaleIncrease = 0.02
)

// Update takes one period's 90th-percentile scheduler latency p90 and
// the target, in seconds (target 0: the governor is off and the scale
// 1), and whether client work was charged in the period; it returns the
// scale for the next period.
func (g *Governor) Update(p90, target float64, clientWork bool) float64 {
	switch {
	case target <= 0 || g.scale == 0:
		g.scale = 1
	case clientWork && p90 > target:
		g.scale = math.Max(g.scale*ScaleDecrease, MinScale)
	default:
		g.scale = math.Min(g.scale+ScaleIncrease, 1)
	}
	return g.scale
}
