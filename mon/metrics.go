package mon

import (
	"fmt"
	"net"
	"strconv"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-project/shoal/internal/scrape"
	"github.com/shoal-project/shoal/osdmap"
)

// A MON's Prometheus metrics (metrics_addr in its section): what it knows
// from the state it holds — its quorum membership, the OSDs, pools and
// flags of the OSD map, and the balancer's entries — under the names of
// Ceph's exporter (the manager's prometheus module) where the meaning is
// the same; the rest under shoal_. Every MON exports the map it holds, so
// a dashboard takes one MON's series (or the max). PG states, object
// counts and health are the OSDs' and `shoal status`'s: the MONs do not
// gather PG statistics.

// osdFlagMetrics are the flags Ceph's exporter exports as
// ceph_osd_flag_NAME (0 or 1).
var osdFlagMetrics = []string{"noup", "nodown", "noout", "noin", "nobackfill", "norebalance", "norecover", "noscrub", "nodeep-scrub"}

// collector reads the MON's state at each scrape.
type collector struct {
	d *Daemon

	quorum, monMeta, osdUp, osdIn, osdWeight, osdMeta, poolMeta, pgTotal, epoch, upmapItems, balancer *prometheus.Desc
	flags                                                                                             map[string]*prometheus.Desc
}

func newCollector(d *Daemon) *collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	c := &collector{d: d,
		quorum:     desc("ceph_mon_quorum_status", "1 if the MON is in quorum: the raft leader, or a voter that heard from it recently.", "ceph_daemon"),
		monMeta:    desc("ceph_mon_metadata", "The MON's address and rank in the MON map (value 1).", "ceph_daemon", "public_addr", "rank", "ceph_version"),
		osdUp:      desc("ceph_osd_up", "1 if the OSD is up in the OSD map.", "ceph_daemon"),
		osdIn:      desc("ceph_osd_in", "1 if the OSD is in (reweight above 0).", "ceph_daemon"),
		osdWeight:  desc("ceph_osd_weight", "The OSD's reweight, 0 (out) to 1.", "ceph_daemon"),
		osdMeta:    desc("ceph_osd_metadata", "The OSD's addresses, host and device class (value 1).", "ceph_daemon", "public_addr", "cluster_addr", "hostname", "device_class"),
		poolMeta:   desc("ceph_pool_metadata", "A pool's id, name and type (value 1).", "pool_id", "name", "type"),
		pgTotal:    desc("ceph_pg_total", "A pool's PG count (pg_num).", "pool_id"),
		epoch:      desc("shoal_osdmap_epoch", "The epoch of the OSD map the MON holds.", "ceph_daemon"),
		upmapItems: desc("shoal_pg_upmap_items", "PGs with pg_upmap_items (the balancer's or an operator's).", "ceph_daemon"),
		balancer:   desc("shoal_balancer_active", "1 if the MONs balance PGs automatically (balancer_active).", "ceph_daemon"),
		flags:      map[string]*prometheus.Desc{},
	}
	for _, f := range osdFlagMetrics {
		c.flags[f] = desc("ceph_osd_flag_"+promName(f), "1 if the cluster flag "+f+" is set.")
	}
	return c
}

// promName makes a flag name a metric name part, as Ceph's exporter
// does ("nodeep-scrub" → "nodeep_scrub").
func promName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '-' {
			b[i] = '_'
		}
	}
	return string(b)
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.quorum, c.monMeta, c.osdUp, c.osdIn, c.osdWeight, c.osdMeta, c.poolMeta, c.pgTotal, c.epoch, c.upmapItems, c.balancer} {
		ch <- d
	}
	for _, d := range c.flags {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	self := d.o.Name
	inQuorum := d.raft.State() == raft.Leader || (d.current() == nil && d.raft.State() == raft.Follower)
	gauge(c.quorum, b2f(inQuorum), self)
	for rank, mi := range d.fsm.monMap().Mons {
		if mi.Addr == d.o.Addr {
			gauge(c.monMeta, 1, self, mi.Addr, strconv.Itoa(rank), "shoal")
		}
	}
	m, _ := d.fsm.view()
	gauge(c.epoch, float64(m.Epoch), self)
	gauge(c.upmapItems, float64(len(m.PGUpmapItems)), self)
	gauge(c.balancer, b2f(d.config().Bool("balancer_active")), self)
	for id, o := range m.OSDs {
		if !o.Exists {
			continue
		}
		name := fmt.Sprintf("osd.%d", id)
		gauge(c.osdUp, b2f(o.Up), name)
		gauge(c.osdIn, b2f(o.In()), name)
		gauge(c.osdWeight, float64(o.Weight)/osdmap.WeightIn, name)
		var class string
		if dev := m.Crush.Device(int32(id)); dev != nil {
			class = dev.Class
		}
		gauge(c.osdMeta, 1, name, o.Addr, o.BackAddr(), m.Crush.Ancestor(int32(id), "host"), class)
	}
	for _, id := range m.PoolIDs() {
		p := m.Pools[id]
		typ := "replicated"
		if p.Type == osdmap.PoolErasure {
			typ = "erasure"
		}
		pid := strconv.FormatInt(id, 10)
		gauge(c.poolMeta, 1, pid, p.Name, typ)
		gauge(c.pgTotal, float64(p.PGNum), pid)
	}
	for _, f := range osdFlagMetrics {
		fl, err := osdmap.ParseFlag(f)
		gauge(c.flags[f], b2f(err == nil && m.Flags.Has(fl)))
	}
}

// serveMetrics serves the MON's metrics at /metrics on addr until Close.
func (d *Daemon) serveMetrics(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mon: metrics: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(d))
	d.metricsAddr = ln.Addr().String()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := scrape.Serve(d.ctx, ln, reg); err != nil {
			d.log.Error("metrics server", "err", err)
		}
	}()
	return nil
}

// Name is the MON's entity name ("mon.a").
func (d *Daemon) Name() string { return d.o.Name }

// MetricsAddr is where the MON serves /metrics ("" if it does not).
func (d *Daemon) MetricsAddr() string { return d.metricsAddr }
