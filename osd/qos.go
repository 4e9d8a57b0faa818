package osd

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/osd/mclock"
)

// qos is the OSD's I/O scheduler (osd_op_queue = mclock_scheduler): every
// class of work is charged its device time; client ops run at once,
// background work — recovery and backfill copies, scrub chunks, stray
// deletion — waits for its share (package mclock). The primary of a
// recovering PG is the gate for its copies; the OSDs that serve its
// pulls and take its pushes are charged for them, which holds back their
// own background work.
type qos struct {
	mu    sync.Mutex
	s     *mclock.Scheduler
	conf  *config.Config // the settings below are this configuration's
	class string         // the OSD's device class (hdd: the _hdd capacities)
	cap   mclock.Capacity
	on    bool
	err   error // the configuration's, logged once
	epoch time.Time
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

func (q *qos) now() float64 { return time.Since(q.epoch).Seconds() }

func (d *OSD) qosLocked() *qos {
	d.qos.refresh(d.conf(), func(err error) { d.log.Error("mclock settings", "err", err) })
	return &d.qos
}

// charge records ops operations of class c moving n bytes that ran
// without waiting: client I/O, and the pulls and pushes another OSD's
// recovery asked of this one.
func (d *OSD) charge(c mclock.Class, ops int, n uint64) {
	d.qos.mu.Lock()
	q := d.qosLocked()
	if q.on {
		q.s.Charge(c, q.cap.Cost(ops, n), q.now())
	}
	d.qos.mu.Unlock()
}

// throttle waits until background work of class c — ops operations
// moving n bytes — may start, and charges it; it fails only when ctx
// ends.
func (d *OSD) throttle(ctx context.Context, c mclock.Class, ops int, n uint64) error {
	waited := false
	for {
		d.qos.mu.Lock()
		q := d.qosLocked()
		if !q.on {
			d.qos.mu.Unlock()
			return nil
		}
		now := q.now()
		ok, retry := q.s.Start(c, q.cap.Cost(ops, n), now)
		d.qos.mu.Unlock()
		if ok {
			return nil
		}
		if !waited {
			waited = true
			d.perf.mclockWaits.Add(1)
		}
		wait := time.Duration(math.Min(retry-now, 1) * float64(time.Second))
		t := time.NewTimer(max(wait, 100*time.Microsecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
