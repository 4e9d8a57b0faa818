package mgr

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-project/shoal/status"
)

// Collector exports the last sample under the names of Ceph's prometheus
// manager module where the meaning is the same (ceph_health_status: 0
// HEALTH_OK, 1 HEALTH_WARN, 2 HEALTH_ERR; ceph_health_detail, 1 for each
// health check raised, by its code and severity; ceph_pool_*,
// ceph_cluster_total_*, ceph_num_objects_*), and the progress events as
// shoal_progress_* by kind. Nothing is exported before the first sample
// succeeds.
type Collector struct {
	m *Mgr

	health, detail, checks, poolObjects, poolStored, total, used, degraded, misplaced, objects, pgState, progress, remaining *prometheus.Desc
}

// Collector returns the manager's collector, for a prometheus.Registry.
func (m *Mgr) Collector() *Collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &Collector{m: m,
		health:      desc("ceph_health_status", "The cluster's health: 0 HEALTH_OK, 1 HEALTH_WARN, 2 HEALTH_ERR."),
		detail:      desc("ceph_health_detail", "1 for each health check raised, by its code (name: OSD_DOWN, PG_DEGRADED, ...) and severity.", "name", "severity"),
		checks:      desc("shoal_health_checks", "Health checks raised, by severity.", "severity"),
		poolObjects: desc("ceph_pool_objects", "Objects in the pool (as its PGs' primaries report them).", "pool_id"),
		poolStored:  desc("ceph_pool_stored", "Data bytes stored in the pool, before replication or coding.", "pool_id"),
		total:       desc("ceph_cluster_total_bytes", "The OSDs' devices' size (bytes)."),
		used:        desc("ceph_cluster_total_used_bytes", "Bytes used on the OSDs' devices."),
		objects:     desc("ceph_num_objects", "Objects in the cluster."),
		degraded:    desc("ceph_num_objects_degraded", "Object copies missing or not yet recovered."),
		misplaced:   desc("ceph_num_objects_misplaced", "Object copies held by former members, moving to new ones."),
		pgState:     desc("shoal_pgs_by_state", "PGs by full state string (as `shoal status` lists them).", "state"),
		progress:    desc("shoal_progress", "Progress of the recovery, backfill or scrub under way, 0 to 1.", "kind"),
		remaining:   desc("shoal_progress_remaining_seconds", "Estimated seconds until the recovery, backfill or scrub under way ends (absent until one has progressed).", "kind"),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.health, c.detail, c.checks, c.poolObjects, c.poolStored, c.total, c.used, c.objects, c.degraded, c.misplaced, c.pgState, c.progress, c.remaining} {
		ch <- d
	}
}

// HealthValue is ceph_health_status's value for a health string.
func HealthValue(h string) float64 {
	switch h {
	case status.OK:
		return 0
	case status.Warn:
		return 1
	}
	return 2
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.Snapshot().Status
	if st == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.health, HealthValue(st.Health))
	bySev := map[string]int{status.Warn: 0, status.Err: 0}
	for _, ck := range st.Checks {
		bySev[ck.Severity]++
		gauge(c.detail, 1, ck.Code, ck.Severity)
	}
	for sev, n := range bySev {
		gauge(c.checks, float64(n), sev)
	}
	for _, p := range st.PoolStats {
		id := strconv.FormatInt(p.ID, 10)
		gauge(c.poolObjects, float64(p.Objects), id)
		gauge(c.poolStored, float64(max(p.Bytes, 0)), id)
	}
	gauge(c.total, float64(st.TotalKB<<10))
	gauge(c.used, float64(st.UsedKB<<10))
	gauge(c.objects, float64(st.Objects))
	gauge(c.degraded, float64(max(st.Degraded, 0)))
	gauge(c.misplaced, float64(st.Misplaced))
	for state, n := range st.PGStates {
		gauge(c.pgState, float64(n), state)
	}
	for _, e := range st.Progress {
		gauge(c.progress, e.Progress, e.Kind)
		if e.Remaining >= 0 {
			gauge(c.remaining, e.Remaining, e.Kind)
		}
	}
}
