package osd

import (
	"context"
	"fmt"
	"math"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/osd/mclock"
)

// qos is the OSD's I/O scheduler (osd_op_queue = mclock_scheduler): every
// class of work is charged its device time; client ops run at once,
// background work — recovery and backfill copies, scrub chunks, stray
// deletion — waits for its share (package mclock). The primary of a
// recovering PG is the gate for its copies; the OSDs that serve its
// pulls and take its pushes are charged for them, which holds back their
// own background work. A governor (mclock.Governor, governLoop) scales
// the capacity down while clients wait for CPU.
type qos struct {
	mu    sync.Mutex
	s     *mclock.Scheduler
	conf  *config.Config // the settings below are this configuration's
	class string         // the OSD's device class (hdd: the _hdd capacities)
	cap   mclock.Capacity
	on    bool
	err   error // the configuration's, logged once
	epoch time.Time
	// measured is the capacity (IOPS) measured at the OSD's first start
	// (see loadCapacity), 0 if none.
	measured float64
	gov      mclock.Governor
	client   float64 // the client class's granted device time at the last govern
}

// setMeasured sets the measured capacity (before the scheduler's first
// use, or with q.mu free).
func (q *qos) setMeasured(iops float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.measured, q.conf = iops, nil // rereads the settings with it
}

// capacityIOPS is the capacity (IOPS) the scheduler uses under the
// settings of cfg (for the OSD's stats).
func (q *qos) capacityIOPS(cfg *config.Config, log func(error)) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refresh(cfg, log)
	return q.cap.IOPS
}

// refresh rereads the settings if the configuration changed (q.mu held).
func (q *qos) refresh(c *config.Config, log func(error)) {
	if c == q.conf {
		return
	}
	q.conf = c
	suffix := "_ssd"
	if q.class == "hdd" {
		suffix = "_hdd"
	}
	q.cap = mclock.Capacity{IOPS: c.Float("osd_mclock_max_capacity_iops" + suffix), Bandwidth: float64(c.Size("osd_mclock_max_sequential_bandwidth" + suffix))}
	if q.measured > 0 && !c.IsSet("osd_mclock_max_capacity_iops"+suffix) && q.measured <= c.Float("osd_mclock_iops_capacity_threshold"+suffix) {
		q.cap.IOPS = q.measured
	}
	var err error
	switch queue := c.String("osd_op_queue"); queue {
	case "mclock_scheduler":
		q.on = true
	case "wpq":
		q.on = false
	default:
		q.on, err = false, fmt.Errorf("osd_op_queue %q: want mclock_scheduler or wpq; background work is not scheduled", queue)
	}
	profile := c.String("osd_mclock_profile")
	shares, ok := mclock.Profiles[profile]
	switch {
	case profile == "custom":
		shares[mclock.Recovery] = mclock.QoS{Res: c.Float("osd_mclock_scheduler_background_recovery_res"), Lim: c.Float("osd_mclock_scheduler_background_recovery_lim")}
		shares[mclock.BestEffort] = mclock.QoS{Res: c.Float("osd_mclock_scheduler_background_best_effort_res"), Lim: c.Float("osd_mclock_scheduler_background_best_effort_lim")}
	case !ok:
		shares, err = mclock.Profiles["balanced"], fmt.Errorf("osd_mclock_profile %q: want balanced, high_client_ops, high_recovery_ops or custom; using balanced", profile)
	}
	if verr := mclock.Validate(q.cap, shares); verr != nil {
		shares, err = mclock.Profiles["balanced"], fmt.Errorf("%w; using balanced", verr)
	}
	if q.s == nil {
		q.s, q.epoch = mclock.New(shares), time.Now()
	} else {
		q.s.SetQoS(shares)
	}
	if err != nil && (q.err == nil || err.Error() != q.err.Error()) {
		log(err)
	}
	q.err = err
}

// admit, under the settings of configuration cfg, charges an operation
// of class c (ops operations moving n bytes) that runs regardless
// (background false: client I/O, and pulls and pushes served for another
// OSD), or asks whether background work may start and charges it if so;
// if not, retry is how long to wait before asking again. With
// osd_op_queue = wpq everything is admitted and nothing charged.
func (q *qos) admit(cfg *config.Config, log func(error), c mclock.Class, ops int, n uint64, background bool) (ok bool, retry time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refresh(cfg, log)
	if !q.on {
		return true, 0
	}
	now, cost := time.Since(q.epoch).Seconds(), q.cap.Cost(ops, n)
	if !background {
		q.s.Charge(c, cost, now)
		return true, 0
	}
	ok, at := q.s.Start(c, cost, now)
	return ok, time.Duration(math.Min(at-now, 1) * float64(time.Second))
}

func (d *OSD) qosError(err error) { d.log.Error("mclock settings", "err", err) }

// charge records ops operations of class c moving n bytes that ran
// without waiting: client I/O, and the pulls and pushes another OSD's
// recovery asked of this one.
func (d *OSD) charge(c mclock.Class, ops int, n uint64) {
	d.qos.admit(d.conf(), d.qosError, c, ops, n, false)
}

// throttle waits until background work of class c — ops operations
// moving n bytes — may start, and charges it; it fails only when ctx
// ends.
func (d *OSD) throttle(ctx context.Context, c mclock.Class, ops int, n uint64) error {
	for waited := false; ; waited = true {
		ok, retry := d.qos.admit(d.conf(), d.qosError, c, ops, n, true)
		if ok {
			return nil
		}
		if !waited {
			d.perf.mclockWaits.Add(1)
		}
		t := time.NewTimer(max(retry, 100*time.Microsecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// governPeriod is how often the governor samples the scheduler latency;
// minSchedSamples is the fewest samples in a period whose 90th
// percentile it trusts (the runtime samples one goroutine transition in
// 8, so 20 is about 160 wake-ups; fewer: the process is nearly idle).
const (
	governPeriod    = 100 * time.Millisecond
	minSchedSamples = 20
)

// govern feeds the governor one period's 90th-percentile scheduler
// latency (seconds) and sets the scheduler's scale from it.
func (q *qos) govern(cfg *config.Config, log func(error), p90 float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refresh(cfg, log)
	target := cfg.Seconds("osd_mclock_sched_latency_target")
	if !q.on {
		target = 0
	}
	granted := q.s.Granted(mclock.Client)
	q.s.SetScale(q.gov.Update(p90, target, granted > q.client))
	q.client = granted
}

// scale is the fraction of its capacity the scheduler gives the OSD now.
func (q *qos) scale() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.s == nil {
		return 1
	}
	return q.s.Scale()
}

// schedSampler reads the process's scheduler latency histogram (how long
// runnable goroutines waited for a CPU).
type schedSampler struct {
	sample []metrics.Sample
	prev   []uint64
}

// p90 returns the 90th percentile of the waits since the last call, in
// seconds, and how many were sampled.
func (s *schedSampler) p90() (float64, uint64) {
	if s.sample == nil {
		s.sample = []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	}
	metrics.Read(s.sample)
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0
	}
	h := s.sample[0].Value.Float64Histogram()
	prev := s.prev
	s.prev = append(s.prev[:0:0], h.Counts...) // Read reuses h's memory
	return quantile(h.Buckets, prev, h.Counts, 0.9)
}

// quantile returns the q-quantile of the samples a runtime/metrics
// histogram (bucket boundaries, counts per bucket: len(buckets) is
// len(counts)+1) gained since an earlier reading of it, prev (nil: none,
// and the result is 0, 0), as the upper bound of the bucket it falls in,
// and how many samples it gained. The runtime's buckets are a quarter of
// a power of two wide, so the result overstates the quantile by less
// than 19%.
func quantile(buckets []float64, prev, counts []uint64, q float64) (float64, uint64) {
	if len(prev) != len(counts) || len(buckets) != len(counts)+1 {
		return 0, 0
	}
	var n uint64
	for i, c := range counts {
		n += c - prev[i]
	}
	if n == 0 {
		return 0, 0
	}
	var seen uint64
	for i, c := range counts {
		if seen += c - prev[i]; float64(seen) >= q*float64(n) {
			return buckets[i+1], n
		}
	}
	return buckets[len(buckets)-1], n
}

// governLoop samples the scheduler latency every governPeriod and feeds
// the governor until the OSD stops.
func (d *OSD) governLoop() {
	defer d.wg.Done()
	var s schedSampler
	s.p90()
	periodic.Every(d.ctx, d.clock, governPeriod, nil, func() {
		p90, n := s.p90()
		if n < minSchedSamples {
			p90 = 0
		}
		d.qos.govern(d.conf(), d.qosError, p90)
	})
}
