package osd

// Read leases: a primary cut off from its peers and from the MONs must not
// go on serving reads once a new acting set may have acknowledged writes
// without it. Ceph's answer (doc/dev/osd_internals/stale_read, Octopus) is
// a lease: a primary reads only while every other OSD of its acting set
// (and, here, its backfill targets) has promised, within the last lease
// interval, not to help any new interval go active before that promise
// runs out; a new primary waits for the promises its members made to the
// OSDs of earlier intervals it could not reach.
//
// Here the promises ride on the heartbeat: each ping asks its receiver for
// a lease of osd_pool_default_read_lease_ratio × osd_heartbeat_grace
// (Ceph's default read_lease_interval, 0.8 × 20 s = 16 s), granted only
// while the sender's instance is up in the receiver's map. The receiver
// promises until its own clock's receipt time plus the lease; the sender
// holds the lease until its own send time plus the lease — never later in
// real time, as long as the clocks run at the same rate (no clock is read
// by another OSD: promises travel as durations, as in Ceph).
//
// A query's reply carries the member's outstanding promises (it is
// answered only once the member has the asker's map); the new primary
// turns each into a deadline from the reply's arrival. Before it
// activates, each OSD of an earlier interval it did not reach is either
// shown to be past serving — every address of it refuses connections (its
// process is gone; the assumption osd_fast_fail_on_connection_refused
// makes), a different instance answers there, or it answers a probe with
// a map at least as new as the one peering queried with (in which it is
// down or out of the PG, so its PGs have left the interval) — or, if that
// map has it down, waited for until the promises made to it run out (an
// OSD up in it is never waited out: peering retries until it answers).
// With failure detection slower than the lease (the grace is 1.25 leases)
// the wait is normally over before the MONs mark the OSD down; a kill -9
// is proven by the refused connections. An OSD that restarted forgot its
// promises: until osd_heartbeat_grace (the longest lease it grants) has
// passed since its start it reports one for every OSD.
//
// A read checks the lease before it starts and again once it has read, so
// a read that waited (behind a write's object lock, or a recovery) is not
// answered after the lease ran out.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// anyOSD is the promise a recently started OSD reports: to every OSD.
const anyOSD int32 = -1

// leaseTable holds this OSD's side of the read leases.
type leaseTable struct {
	start time.Time // when this OSD started: its promises before are forgotten
	conf  atomic.Pointer[leaseConf]

	promMu   sync.Mutex
	promised map[int32]time.Time // until when this OSD promised each OSD

	heldMu   sync.Mutex
	held     map[int32]time.Time     // until when each OSD's lease lets this OSD read
	inflight map[int32]chan struct{} // a renewal under way, by OSD
	// proven is, by OSD instance (address with nonce), the newest map
	// epoch it was seen to hold (MaxUint32: gone) by a probe.
	proven map[string]uint32
}

func newLeaseTable(start time.Time) leaseTable {
	return leaseTable{start: start, promised: map[int32]time.Time{}, held: map[int32]time.Time{}, inflight: map[int32]chan struct{}{}, proven: map[string]uint32{}}
}

// leaseInterval is how long a lease lasts under the current configuration
// (worked out once per configuration: every read asks).
func (d *OSD) leaseInterval() time.Duration {
	c := d.conf()
	if lc := d.leases.conf.Load(); lc != nil && lc.c == c {
		return lc.d
	}
	lc := &leaseConf{c: c, d: time.Duration(c.Float("osd_pool_default_read_lease_ratio") * c.Seconds("osd_heartbeat_grace") * float64(time.Second))}
	d.leases.conf.Store(lc)
	return lc.d
}

// leaseConf is the lease interval of a configuration.
type leaseConf struct {
	c *config.Config
	d time.Duration
}

// pingMsg is a heartbeat: From (at instance Addr) asks for a lease of
// Lease. Its reply says whether the lease is granted and which instance
// answered with which map epoch (a probe's evidence).
type pingMsg struct {
	From  int32
	Addr  string
	Lease time.Duration
}

type pingReply struct {
	Lease time.Duration // granted (at most the one asked for and the receiver's own); 0: refused
	Addr  string
	Epoch uint32
}

func (p *pingMsg) encode() []byte {
	e := wire.NewEncoder(make([]byte, 0, 32+len(p.Addr)))
	e.I32(p.From)
	e.String(p.Addr)
	e.I64(int64(p.Lease))
	return e.Bytes()
}

func decodePingReply(b []byte) (pingReply, error) {
	d := wire.NewDecoder(b)
	r := pingReply{Lease: time.Duration(d.I64()), Addr: d.String(), Epoch: d.U32()}
	return r, d.Err()
}

// handlePing answers a heartbeat, promising the sender a lease if its
// instance is up in this OSD's map. The map (the one handleMap has
// finished installing) is read under promMu, so a query answered once
// this OSD has a map in which the sender is down (dispatch checks the
// asker's epoch, then handleQuery reads the promises) has seen every
// promise this OSD will ever make to that instance.
func (d *OSD) handlePing(payload []byte) []byte {
	if len(payload) == 0 { // a bare liveness check
		return nil
	}
	dec := wire.NewDecoder(payload)
	p := pingMsg{From: dec.I32(), Addr: dec.String(), Lease: time.Duration(dec.I64())}
	l := &d.leases
	l.promMu.Lock()
	m := d.installed.Load()
	var lease time.Duration
	if dec.Err() == nil && m != nil && p.From >= 0 && p.From < m.MaxOSD() && m.OSDs[p.From].Up && m.OSDs[p.From].Addr == p.Addr {
		lease = max(min(p.Lease, d.leaseInterval()), 0)
		if until := d.clock.Now().Add(lease); until.After(l.promised[p.From]) {
			l.promised[p.From] = until
		}
	}
	l.promMu.Unlock()
	e := wire.NewEncoder(make([]byte, 0, 24+len(d.addr)))
	e.I64(int64(lease))
	e.String(d.addr)
	var epoch uint32
	if m != nil {
		epoch = uint32(m.Epoch)
	}
	e.U32(epoch)
	return e.Bytes()
}

// ping sends a heartbeat to OSD id at addr asking for a lease, and records
// the lease if granted.
func (d *OSD) ping(ctx context.Context, id int32, addr string) (pingReply, error) {
	lease := d.leaseInterval()
	sent := d.clock.Now()
	b, err := d.call(ctx, id, addr, msgPing, (&pingMsg{From: d.id, Addr: d.addr, Lease: lease}).encode())
	if err != nil {
		return pingReply{}, err
	}
	r, err := decodePingReply(b)
	if err != nil {
		return pingReply{}, fmt.Errorf("osd.%d: ping reply: %w", id, err)
	}
	if r.Lease > 0 {
		l := &d.leases
		l.heldMu.Lock()
		if until := sent.Add(min(r.Lease, lease)); until.After(l.held[id]) {
			l.held[id] = until
		}
		l.heldMu.Unlock()
	}
	return r, nil
}

// promises are the leases this OSD promised that still run, as durations
// from now; anyOSD stands for every OSD while osd_heartbeat_grace (longer
// than any lease it grants) has not passed since this OSD started.
func (d *OSD) promises() []leaseClaim {
	now := d.clock.Now()
	var out []leaseClaim
	grace := time.Duration(d.conf().Seconds("osd_heartbeat_grace") * float64(time.Second))
	if left := d.leases.start.Add(grace).Sub(now); left > 0 {
		out = append(out, leaseClaim{OSD: anyOSD, Left: left})
	}
	l := &d.leases
	l.promMu.Lock()
	defer l.promMu.Unlock()
	for o, until := range l.promised {
		if left := until.Sub(now); left > 0 {
			out = append(out, leaseClaim{OSD: o, Left: left})
		} else {
			delete(l.promised, o)
		}
	}
	return out
}

// leaseClaim is a promise reported in a query's reply: OSD (anyOSD: every
// one) may serve reads for up to Left more.
type leaseClaim struct {
	OSD  int32
	Left time.Duration
}

// leaseDeadlines turns a member's promises into deadlines from at, the
// time its reply arrived.
func leaseDeadlines(claims []leaseClaim, at time.Time) map[int32]time.Time {
	if len(claims) == 0 {
		return nil
	}
	out := make(map[int32]time.Time, len(claims))
	for _, c := range claims {
		out[c.OSD] = at.Add(c.Left)
	}
	return out
}

// readLeaseTimeout bounds how long a read waits for its primary's lease
// before the client is told to retry (and refresh its map).
const readLeaseTimeout = 5 * time.Second

// checkReadLease returns once this OSD, the PG's primary, holds a read
// lease from every other OSD that takes the PG's writes, and the interval
// it holds them in; it renews leases that lapsed (and, in the background,
// those past half their life). It fails with ErrRetry when the PG is not
// active or leaves the interval, or when no lease comes within
// readLeaseTimeout: the PG is laggy (Ceph's state), and the client
// resends once it has a newer map.
func (pg *PG) checkReadLease(ctx context.Context) (uint64, error) {
	d := pg.osd
	deadline := time.Now().Add(readLeaseTimeout)
	for {
		iv, lapsed, addr, err := pg.leaseHeld(0, true)
		if err != nil || lapsed < 0 {
			return iv, err
		}
		if !time.Now().Before(deadline) {
			return 0, fmt.Errorf("%w: pg %s is laggy: no read lease from osd.%d", osdop.ErrRetry, pg.id, lapsed)
		}
		d.leases.heldMu.Lock()
		done := d.renewLease(lapsed, addr)
		d.leases.heldMu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-done:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
		t.Stop()
	}
}

// stillReadable checks, without waiting, that the PG is still active in
// interval iv on this OSD and its read leases still hold: a read that
// passed checkReadLease and then waited (for an object lock, a recovery)
// answers only if so, else with ErrRetry.
func (pg *PG) stillReadable(iv uint64) error {
	_, lapsed, _, err := pg.leaseHeld(iv, false)
	if err == nil && lapsed >= 0 {
		err = fmt.Errorf("%w: pg %s is laggy: the read lease from osd.%d ran out during the read", osdop.ErrRetry, pg.id, lapsed)
	}
	return err
}

// leaseHeld reports the PG's interval and the first OSD taking its writes
// whose lease this OSD does not hold now (-1: none), with its address; an
// error if the PG is not active (or, iv non-zero, not in interval iv).
// With renew, leases past half their life are renewed in the background.
func (pg *PG) leaseHeld(iv uint64, renew bool) (uint64, int32, string, error) {
	d := pg.osd
	var buf [16]int32
	var abuf [16]string
	pg.mu.Lock()
	ids, addrs := append(append(buf[:0], pg.ps.Interval.Acting...), pg.ps.Interval.Backfill.OSDs...), append(append(abuf[:0], pg.ps.Interval.Addrs...), pg.ps.Interval.Backfill.Addrs...)
	cur, state := pg.ps.Interval.ID, pg.ps.State
	pg.mu.Unlock()
	if !state.IsActive() {
		return 0, -1, "", fmt.Errorf("%w: %s", osdop.ErrRetry, pg.describe())
	}
	if iv != 0 && cur != iv {
		return 0, -1, "", fmt.Errorf("%w: pg %s changed interval during the read", osdop.ErrRetry, pg.id)
	}
	now := pg.osd.clock.Now()
	half := now.Add(d.leaseInterval() / 2)
	d.leases.heldMu.Lock()
	defer d.leases.heldMu.Unlock()
	for i, o := range ids {
		if o == d.id || o == osdmap.NoOSD {
			continue
		}
		until := d.leases.held[o]
		if !until.After(now) {
			return cur, o, addrs[i], nil
		}
		if renew && until.Before(half) {
			d.renewLease(o, addrs[i])
		}
	}
	return cur, -1, "", nil
}

// renewLease pings OSD id (at addr) for a lease unless a renewal is
// already under way, and returns a channel closed when that renewal ends
// (heldMu held). A renewal that fails or is refused (the peer has this
// OSD down) ends after a short pause, so that waiting reads ask again at a
// bounded rate.
func (d *OSD) renewLease(id int32, addr string) chan struct{} {
	l := &d.leases
	if ch := l.inflight[id]; ch != nil {
		return ch
	}
	ch := make(chan struct{})
	l.inflight[id] = ch
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		ctx, cancel := context.WithTimeout(d.ctx, time.Second)
		r, err := d.ping(ctx, id, addr)
		if err != nil || r.Lease == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		cancel()
		l.heldMu.Lock()
		delete(l.inflight, id)
		l.heldMu.Unlock()
		close(ch)
	}()
	return ch
}

// waitPriorLeases, on a primary about to activate in interval iv, waits
// until no OSD of prior — the earlier intervals' OSDs and the strays that
// peering did not reach (reached: the members and former members it
// queried, itself included, each having answered with map mq or newer;
// leases: the promises each of them made, from its answer) — can still be
// serving reads: each is shown to be past it by a probe or, if down in
// mq, waited for until the promises the reached OSDs made it run out. An
// OSD up in mq is only ever cleared by a probe; after priorProbeLimit
// without one peering fails and is retried.
func (pg *PG) waitPriorLeases(ctx context.Context, iv uint64, mq *osdmap.Map, prior, reached []int32, leases map[int32]map[int32]time.Time) error {
	d := pg.osd
	self := leaseDeadlines(d.promises(), d.clock.Now())
	type wait struct {
		osd   int32
		until time.Time // zero: up in mq, a probe must clear it
	}
	var waits []wait
	for _, o := range prior {
		if o == d.id || slices.Contains(reached, o) {
			continue
		}
		if o < mq.MaxOSD() && mq.OSDs[o].Up {
			waits = append(waits, wait{osd: o})
			continue
		}
		until := latest(self, o)
		for _, r := range reached {
			if u := latest(leases[r], o); u.After(until) {
				until = u
			}
		}
		if until.After(d.clock.Now()) {
			waits = append(waits, wait{o, until})
		}
	}
	if len(waits) == 0 {
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(waits))
	for i, w := range waits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pg.waitLease(ctx, mq, w.osd, w.until)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.Interval.ID != iv {
		return context.Canceled
	}
	return nil
}

// priorProbeLimit is how long peering probes an OSD of an earlier
// interval that is up in its map before it gives up and peers again.
const priorProbeLimit = 10 * time.Second

// latest is the deadline of the promises in ds that cover OSD o.
func latest(ds map[int32]time.Time, o int32) time.Time {
	u := ds[o]
	if a := ds[anyOSD]; a.After(u) {
		return a
	}
	return u
}

// waitLease returns once OSD o, of an earlier interval and not reached by
// peering with map mq, is shown not to serve reads any more (pastServing),
// or at until, when the promises made to it run out; until zero (o is up
// in mq): only the former, failing after priorProbeLimit. It probes every
// 200 ms.
func (pg *PG) waitLease(ctx context.Context, mq *osdmap.Map, o int32, until time.Time) error {
	d := pg.osd
	var inst osdmap.OSD
	if o < mq.MaxOSD() {
		inst = mq.OSDs[o]
	}
	d.perf.leaseWaits.Add(1)
	limit := until
	if until.IsZero() {
		limit = d.clock.Now().Add(priorProbeLimit)
	}
	d.log.Debug("waiting for an earlier interval's read lease", "pg", pg.id, "osd", o, "for", d.clock.Until(limit).Round(time.Millisecond), "up", until.IsZero())
	for {
		if inst.Exists && d.pastServing(ctx, o, inst, uint32(mq.Epoch), limit) {
			return nil
		}
		left := d.clock.Until(limit)
		if left <= 0 {
			if until.IsZero() {
				return fmt.Errorf("pg %s: osd.%d, of an earlier interval, is up but has not shown it left it (a map of epoch %d) in %v", pg.id, o, mq.Epoch, priorProbeLimit)
			}
			return nil
		}
		t := d.clock.NewTimer(min(left, 200*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.Chan():
		}
	}
}

// pastServing probes the instance inst of OSD o (its addresses in the map
// peering used, of epoch e): true if every address refuses connections
// (the process is gone; only with osd_fast_fail_on_connection_refused), if
// another instance answers, or if it answers holding a map of epoch e or
// newer. What it learns is kept per instance, for the other PGs probing
// the same OSD (a refused dial backs off, so they would learn it late).
func (d *OSD) pastServing(ctx context.Context, o int32, inst osdmap.OSD, e uint32, limit time.Time) bool {
	l := &d.leases
	l.heldMu.Lock()
	known := l.proven[inst.Addr]
	l.heldMu.Unlock()
	if known >= e {
		return true
	}
	prove := func(epoch uint32) bool {
		l.heldMu.Lock()
		if epoch > l.proven[inst.Addr] {
			l.proven[inst.Addr] = epoch
		}
		l.heldMu.Unlock()
		return epoch >= e
	}
	addrs := []string{inst.Addr}
	if inst.ClusterAddr != "" {
		addrs = append(addrs, inst.ClusterAddr)
	}
	refused := 0
	for _, addr := range addrs {
		// a probe waits up to 500 ms, and not past limit (on the OSD's
		// clock, as leases are)
		pctx, cancel := context.WithTimeout(ctx, max(min(500*time.Millisecond, d.clock.Until(limit)), 0))
		r, err := d.probe(pctx, o, addr)
		cancel()
		switch {
		case err == nil && r.Addr != inst.Addr:
			return prove(math.MaxUint32) // restarted: that instance is gone
		case err == nil:
			return prove(r.Epoch)
		case errors.Is(err, syscall.ECONNREFUSED):
			refused++
		}
	}
	return refused == len(addrs) && d.conf().Bool("osd_fast_fail_on_connection_refused") && prove(math.MaxUint32)
}

// probe pings OSD o at addr without asking for a lease or reporting a
// refusal to the MONs (it is down already).
func (d *OSD) probe(ctx context.Context, o int32, addr string) (pingReply, error) {
	rep, err := d.peer(o, addr).Call(ctx, msgPing, (&pingMsg{From: d.id, Addr: d.addr}).encode())
	if err != nil {
		return pingReply{}, err
	}
	defer rep.Release()
	return decodePingReply(rep.Payload)
}
