package osd

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shoal-project/shoal/osdmap"
)

// cephMetrics exports an OSD's counters and its primary PGs under the
// names of Ceph's exporter (the manager's prometheus module), beside the
// shoal_osd_* set: ceph_osd_op_w, ceph_osd_op_r, their bytes, the
// replicated sub-ops, ceph_osd_op_w_latency and ceph_osd_op_r_latency
// (_sum and _count, seconds), labelled ceph_daemon="osd.N"; and, for the
// PGs this OSD is primary of, ceph_pg_STATE{pool_id} for each state word
// (active, clean, degraded, …; Ceph's PG_STATES), ceph_pool_objects and
// ceph_pool_stored (bytes); the MONs export ceph_pg_total (pg_num). Each PG is counted at
// its primary only, so sum() over the OSDs gives the cluster's figures,
// which Ceph's manager exports once.
type cephMetrics struct{ d *OSD }

// cephPGStates are the state words always exported (0 when no PG is in
// them), so that a dashboard's series exist from the start; other words
// are exported while a PG is in them.
var cephPGStates = []string{"active", "clean", "peering", "degraded", "undersized", "down", "incomplete", "recovering", "backfilling", "remapped", "inconsistent", "scrubbing", "peered"}

// Describe implements prometheus.Collector: nothing, as an unchecked
// collector (its PG-state series come and go).
func (cephMetrics) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c cephMetrics) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	daemon := fmt.Sprintf("osd.%d", d.id)
	p := d.perf
	for _, m := range []struct {
		name, help string
		v          uint64
	}{
		{"ceph_osd_op_w", "Client write operations (as primary).", p.opW.Load()},
		{"ceph_osd_op_r", "Client read operations (as primary).", p.opR.Load()},
		{"ceph_osd_op_w_in_bytes", "Client data written (bytes).", p.opWBytes.Load()},
		{"ceph_osd_op_r_out_bytes", "Client data read (bytes).", p.opRBytes.Load()},
		{"ceph_osd_subop_w", "Replicated writes applied for a primary.", p.subopW.Load()},
		{"ceph_osd_subop_w_in_bytes", "Bytes of replicated writes received.", p.subopWBytes.Load()},
		{"ceph_osd_recovery_ops", "Objects installed whole for recovery, backfill or repair.", p.recoveryOps.Load()},
	} {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(m.name, m.help, []string{"ceph_daemon"}, nil), prometheus.CounterValue, float64(m.v), daemon)
	}
	for _, h := range []struct {
		name string
		hist prometheus.Histogram
	}{{"ceph_osd_op_w_latency", p.opWLat}, {"ceph_osd_op_r_latency", p.opRLat}} {
		var m dto.Metric
		if h.hist.Write(&m) == nil && m.Histogram != nil {
			ch <- prometheus.MustNewConstSummary(prometheus.NewDesc(h.name, "Client operation latency on the primary (seconds): _sum over _count is the mean.", []string{"ceph_daemon"}, nil),
				m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum(), nil, daemon)
		}
	}
	type poolPG struct{ objects, bytes int64 }
	pools := map[string]*poolPG{}
	states := map[[2]string]int{} // (state word, pool id) → PGs
	for _, pg := range d.pgList() {
		s, ok := pg.stats()
		if !ok {
			continue
		}
		id, err := osdmap.ParsePGID(s.PGID)
		if err != nil {
			continue
		}
		pool := fmt.Sprint(id.Pool)
		pp := pools[pool]
		if pp == nil {
			pp = &poolPG{}
			pools[pool] = pp
		}
		pp.objects += s.Objects
		pp.bytes += s.Bytes
		for _, w := range strings.Split(s.State, "+") {
			states[[2]string{strings.ReplaceAll(w, "-", "_"), pool}]++
		}
	}
	for pool, pp := range pools {
		for _, w := range cephPGStates {
			if _, ok := states[[2]string{w, pool}]; !ok {
				states[[2]string{w, pool}] = 0
			}
		}
		gauge := func(name, help string, v int64) {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, []string{"pool_id", "ceph_daemon"}, nil), prometheus.GaugeValue, float64(v), pool, daemon)
		}
		gauge("ceph_pool_objects", "Objects in the pool's PGs this OSD is primary of.", pp.objects)
		gauge("ceph_pool_stored", "Bytes stored (before replication or coding) in the pool's PGs this OSD is primary of.", pp.bytes)
	}
	for k, n := range states {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("ceph_pg_"+k[0], "PGs of the pool in state "+k[0]+" that this OSD is primary of.", []string{"pool_id", "ceph_daemon"}, nil),
			prometheus.GaugeValue, float64(n), k[1], daemon)
	}
}
