// Package mgr is the manager daemon (Ceph's ceph-mgr with its
// prometheus, dashboard and progress modules): a client of the cluster
// that gathers its status every mgr_stats_period (status.Gather: the
// MONs, the OSD map and every up OSD's statistics) and keeps the last
// sample in memory — nothing it holds needs to survive it, so any number
// may run and a restarted one starts afresh.
//
// From each sample it
//   - exports cluster-wide Prometheus metrics under the names of Ceph's
//     prometheus module (ceph_health_status, ceph_pool_objects,
//     ceph_pool_stored, ceph_num_objects_degraded, ...; Collector), which
//     no other daemon can: the MONs do not gather PG statistics and each
//     OSD knows only its own PGs;
//   - serves the dashboard (Handler): a page that shows health and its
//     checks, capacity, PG states, per-OSD throughput and latency, pools,
//     the progress of recovery, backfill and scrub, and the buckets, and
//     the JSON it is drawn from (GET /api/status, a Snapshot);
//   - raises the pg_num of pools in pg_autoscale_mode on to the PG
//     autoscaler's recommendation once it is worth it (Ceph's
//     pg_autoscaler module; autoscale). With several managers each may
//     ask; the MONs apply the first and find the rest already done.
//
// The progress events (status.Event) are followed across samples
// (status.Tracker), as Ceph's progress module does, so a PG that finished
// still counts towards its event's progress; `shoal status` shows a
// running manager's events instead of its own one-sample view (Progress).
//
// Per-OSD rates are the change of the OSDs' cumulative counters
// (osdop.Perf) between two samples over the time between them; an OSD
// whose counters went back (it restarted) shows no rate for that period.
package mgr

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-project/shoal/autoscaler"
	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdop"
	"github.com/shoal-project/shoal/status"
)

// DefaultPeriod is how often a manager gathers the cluster's status
// (Ceph's mgr_stats_period, 5 s).
const DefaultPeriod = 5 * time.Second

// Bucket is one S3 bucket as the dashboard lists it: Objects and Bytes
// (logical bytes) from its index.
type Bucket struct {
	Name    string    `json:"name"`
	Owner   string    `json:"owner"`
	Objects int64     `json:"objects"`
	Bytes   int64     `json:"bytes"`
	Shards  int       `json:"shards"` // bucket index shards (0: indexless)
	Created time.Time `json:"created"`
}

// Options configure a Mgr.
type Options struct {
	Conn     *client.Conn
	MonAddrs []string
	Keyring  msgr.Keyring  // the manager's identity (mon 'allow r', osd 'allow r')
	Period   time.Duration // between samples; 0: DefaultPeriod
	// Buckets lists the S3 buckets (nil, or an error: the dashboard shows
	// none; the error is logged once per change).
	Buckets func(ctx context.Context) ([]Bucket, error)
	Logger  *slog.Logger
}

// Snapshot is one sample: what GET /api/status returns.
type Snapshot struct {
	Time    time.Time      `json:"time"`
	Status  *status.Status `json:"status,omitempty"`
	OSDs    []OSD          `json:"osds"`
	Buckets []Bucket       `json:"buckets"`
	// Error is why the last gather failed ("" if it did not); Status is
	// then the last one that succeeded.
	Error string `json:"error,omitempty"`
}

// OSD is one OSD's state, use and client load over the last period: its
// device's size (KiB) and use (percent), the PGs whose acting set holds
// it, ops and bytes per second, mean latency in milliseconds (0 without
// ops), objects recovered onto it per second.
type OSD struct {
	ID          int32   `json:"id"`
	Up          bool    `json:"up"`
	In          bool    `json:"in"`
	Class       string  `json:"device_class"`
	UsedPct     float64 `json:"used_pct"`
	KBTotal     uint64  `json:"kb_total"`
	PGs         int     `json:"pgs"`
	ReadOps     float64 `json:"read_ops"`
	WriteOps    float64 `json:"write_ops"`
	ReadBytes   float64 `json:"read_bytes"`
	WriteBytes  float64 `json:"write_bytes"`
	ReadLatMs   float64 `json:"read_latency_ms"`
	WriteLatMs  float64 `json:"write_latency_ms"`
	RecoveryOps float64 `json:"recovery_ops"` // objects recovered per second
}

// Mgr gathers and serves; Run drives it.
type Mgr struct {
	opt Options

	mu       sync.Mutex
	snap     Snapshot
	prev     map[int32]sample // the OSDs' counters at the previous sample
	progress status.Tracker
	bucErr   string
	// asTried holds the pg_num changes the autoscaler asked for and the
	// MONs refused ("pool=pg_num"), so that each is logged once.
	asTried map[string]bool
}

type sample struct {
	at   time.Time
	perf osdop.Perf
}

// New returns a manager; nothing runs until Run or Refresh.
func New(opt Options) *Mgr {
	if opt.Period <= 0 {
		opt.Period = DefaultPeriod
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return &Mgr{opt: opt, prev: map[int32]sample{}, snap: Snapshot{OSDs: []OSD{}, Buckets: []Bucket{}}, asTried: map[string]bool{}}
}

// Run samples every period until ctx ends.
func (m *Mgr) Run(ctx context.Context) {
	t := time.NewTicker(m.opt.Period)
	defer t.Stop()
	for {
		m.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh takes one sample now and returns it. When the gather fails
// the sample keeps the last status that succeeded and says why in Error.
func (m *Mgr) Refresh(ctx context.Context) Snapshot {
	cctx, cancel := context.WithTimeout(ctx, max(m.opt.Period, 10*time.Second))
	defer cancel()
	st, err := status.Gather(cctx, m.opt.Conn, m.opt.MonAddrs, m.opt.Keyring)
	now := time.Now()
	var buckets []Bucket
	var bucErr error
	if err == nil && m.opt.Buckets != nil {
		buckets, bucErr = m.opt.Buckets(cctx)
	}
	if err == nil {
		m.autoscale(cctx, st.Autoscale)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.snap.Time, m.snap.Error = now, err.Error()
		m.opt.Logger.Warn("gather failed", "err", err)
		return m.snapshot()
	}
	if msg := errString(bucErr); msg != m.bucErr {
		m.bucErr = msg
		if bucErr != nil {
			m.opt.Logger.Warn("bucket listing failed", "err", bucErr)
		}
	}
	if bucErr != nil || buckets == nil {
		buckets = []Bucket{}
	}
	st.Progress = m.progress.Update(st.ReportedPGs(), now)
	m.snap = Snapshot{Time: now, Status: st, OSDs: m.osds(st, now), Buckets: buckets}
	return m.snapshot()
}

// autoscale sets the pg_num of each pool in pg_autoscale_mode on whose
// recommendation is worth it (autoscaler.Row.WouldAdjust), unless its
// last change is still under way (pgp_num short of its target, or merges
// toward a pg_num_target left): one "pool set pg_num" each, as Ceph's
// pg_autoscaler module does — a higher value splits PGs at once, a lower
// one has the MONs merge them one at a time. Refusals
// (mon_max_pg_per_osd, a manager key without the command) are logged
// once per pool and value.
func (m *Mgr) autoscale(ctx context.Context, rows []autoscaler.Row) {
	pm := m.opt.Conn.Map()
	for _, r := range rows {
		if r.Mode != "on" || !r.WouldAdjust || r.Final == r.PGNum {
			continue
		}
		if p, err := pm.Pool(r.Pool); err != nil || p.PGPMoving() || p.PGNumTargetOr() != p.PGNum {
			continue
		}
		key := fmt.Sprintf("%s=%d", r.Name, r.Final)
		_, err := m.opt.Conn.MonCommand(ctx, "pool set", map[string]string{"name": r.Name, "key": "pg_num", "value": strconv.FormatUint(uint64(r.Final), 10)})
		m.mu.Lock()
		logged := m.asTried[key]
		m.asTried[key] = err != nil
		m.mu.Unlock()
		switch {
		case err == nil:
			m.opt.Logger.Info("autoscaler set pg_num", "pool", r.Name, "from", r.PGNum, "to", r.Final)
		case !logged:
			m.opt.Logger.Warn("autoscaler: pg_num change refused", "pool", r.Name, "from", r.PGNum, "to", r.Final, "err", err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Snapshot returns the last sample.
func (m *Mgr) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapshot()
}

// snapshot copies the last sample's slices (m.mu held): callers may keep
// it while the next sample replaces it.
func (m *Mgr) snapshot() Snapshot {
	s := m.snap
	s.OSDs = append([]OSD(nil), s.OSDs...)
	s.Buckets = append([]Bucket(nil), s.Buckets...)
	return s
}

// osds builds the per-OSD rows and moves the counters on (m.mu held).
func (m *Mgr) osds(st *status.Status, now time.Time) []OSD {
	mp := m.opt.Conn.Map()
	usage, _ := status.OSDDF(mp, st.OSDStats)
	byID := map[int32]osdop.Stats{}
	for _, s := range st.OSDStats {
		byID[s.ID] = s
	}
	out := []OSD{}
	next := map[int32]sample{}
	for _, u := range usage {
		o := OSD{ID: u.ID, Up: u.Up, In: u.Reweight > 0, Class: u.Class, UsedPct: u.UsePct, KBTotal: u.SizeKB, PGs: u.PGs}
		if s, ok := byID[u.ID]; ok {
			next[u.ID] = sample{at: now, perf: s.Perf}
			if p, ok := m.prev[u.ID]; ok {
				o.rates(p, sample{at: now, perf: s.Perf})
			}
		}
		out = append(out, o)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	m.prev = next
	return out
}

// rates fills o's rates from two samples of its counters (none if a
// counter went back: the OSD restarted between them).
func (o *OSD) rates(a, b sample) {
	dt := b.at.Sub(a.at).Seconds()
	p, q := a.perf, b.perf
	if dt <= 0 || q.OpR < p.OpR || q.OpW < p.OpW || q.OpROutBytes < p.OpROutBytes || q.OpWInBytes < p.OpWInBytes || q.RecoveryOps < p.RecoveryOps {
		return
	}
	o.ReadOps, o.WriteOps = float64(q.OpR-p.OpR)/dt, float64(q.OpW-p.OpW)/dt
	o.ReadBytes, o.WriteBytes = float64(q.OpROutBytes-p.OpROutBytes)/dt, float64(q.OpWInBytes-p.OpWInBytes)/dt
	o.RecoveryOps = float64(q.RecoveryOps-p.RecoveryOps) / dt
	if n := q.OpR - p.OpR; n > 0 {
		o.ReadLatMs = (q.OpRLatency - p.OpRLatency) / float64(n) * 1000
	}
	if n := q.OpW - p.OpW; n > 0 {
		o.WriteLatMs = (q.OpWLatency - p.OpWLatency) / float64(n) * 1000
	}
}

// Progress asks the manager whose dashboard is at addr (host:port) for
// its progress events; an error if it does not answer within ctx or its
// last sample is older than two of its periods.
func Progress(ctx context.Context, addr string) ([]status.Event, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/api/status", nil)
	if err != nil {
		return nil, err
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("mgr at %s: %w", addr, err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("mgr at %s: %s", addr, r.Status)
	}
	var snap struct {
		Snapshot
		Period float64 `json:"period_sec"`
	}
	if err := json.NewDecoder(r.Body).Decode(&snap); err != nil {
		return nil, fmt.Errorf("mgr at %s: %w", addr, err)
	}
	if snap.Status == nil || time.Since(snap.Time) > 2*time.Duration(snap.Period*float64(time.Second)) {
		return nil, fmt.Errorf("mgr at %s: no recent sample", addr)
	}
	return snap.Status.Progress, nil
}
