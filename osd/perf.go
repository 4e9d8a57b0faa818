package osd

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shoal-project/shoal/internal/scrape"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdop"
)

// perfCounters count an OSD's work, as Ceph's OSD perf counters (op_w,
// op_r, op_w_in_bytes, op_r_out_bytes, subop_w, subop_w_in_bytes), so the
// I/O amplification of a workload can be counted exactly: a client write to
// a 3-replica pool is one op_w on the primary and one subop_w on each of
// the two replicas. They are reported in the OSD's stats (`shoal osd
// perf`) and, when metrics_addr is set, exported for Prometheus.
type perfCounters struct {
	opW, opR, opWBytes, opRBytes atomic.Uint64
	subopW, subopWBytes          atomic.Uint64
	shardW, shardWBytes          atomic.Uint64
	shardR, shardRBytes          atomic.Uint64
	ecReconstruct                atomic.Uint64
	ecRebuilds, ecShardCopies    atomic.Uint64
	recoveryOps, recoveryBytes   atomic.Uint64
	mclockWaits                  atomic.Uint64
	recoveryPreempted            atomic.Uint64
	leaseWaits                   atomic.Uint64
	snapTrimmed                  atomic.Uint64
	opWPipelined                 atomic.Uint64
	opWLat, opRLat               prometheus.Histogram
	reg                          *prometheus.Registry

	rateMu             sync.Mutex // the recovery rate, sampled every second
	lastOps, lastBytes uint64
	lastAt             time.Time
	opsRate, bytesRate float64
}

// sampleRecovery updates the recovery rates from the counters' change
// since the last sample.
func (p *perfCounters) sampleRecovery(now time.Time) {
	ops, bytes := p.recoveryOps.Load(), p.recoveryBytes.Load()
	p.rateMu.Lock()
	defer p.rateMu.Unlock()
	if dt := now.Sub(p.lastAt).Seconds(); !p.lastAt.IsZero() && dt > 0 {
		p.opsRate, p.bytesRate = float64(ops-p.lastOps)/dt, float64(bytes-p.lastBytes)/dt
	}
	p.lastOps, p.lastBytes, p.lastAt = ops, bytes, now
}

func (p *perfCounters) recoveryRates() (ops, bytes float64) {
	p.rateMu.Lock()
	defer p.rateMu.Unlock()
	return p.opsRate, p.bytesRate
}

// commitStater is a store that counts its commit groups (BlockStore).
type commitStater interface {
	CommitStats() (groups, txns uint64)
}

// checksumStater is a store that counts the block checksums it was given
// and computed (BlockStore).
type checksumStater interface {
	ChecksumStats() (given, computed uint64)
}

// newPerf returns the counters of daemon, with its store's and its I/O
// scheduler's scale (a gauge) among them.
func newPerf(daemon string, store any, mclockScale func() float64) *perfCounters {
	p := &perfCounters{reg: prometheus.NewRegistry()}
	labels := prometheus.Labels{"daemon": daemon}
	counterFunc := func(name, help string, f func() float64) {
		p.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "shoal", Subsystem: "osd", Name: name, Help: help, ConstLabels: labels}, f))
	}
	if cs, ok := store.(commitStater); ok {
		counterFunc("commit_groups_total", "Commit groups of the object store (one metadata log sync each, and one device sync before it if the group wrote more data than it could defer).",
			func() float64 { g, _ := cs.CommitStats(); return float64(g) })
		counterFunc("commit_txns_total", "Transactions those groups committed (their ratio is the group commit's batching).",
			func() float64 { _, t := cs.CommitStats(); return float64(t) })
	}
	if ds, ok := store.(interface{ DeferredWrites() uint64 }); ok {
		counterFunc("store_deferred_writes_total", "Commit groups whose few new data blocks went into their metadata commit instead of a device sync before it (deferred writes, bluestore_prefer_deferred_size).",
			func() float64 { return float64(ds.DeferredWrites()) })
	}
	if cs, ok := store.(checksumStater); ok {
		counterFunc("store_csum_given_blocks_total", "Data blocks the object store wrote with the crc32c the messenger computed checking the frame they came in (no second pass over them).",
			func() float64 { g, _ := cs.ChecksumStats(); return float64(g) })
		counterFunc("store_csum_computed_blocks_total", "Data blocks whose crc32c the object store computed itself (partial blocks, erasure-coded shards, recovery).",
			func() float64 { _, c := cs.ChecksumStats(); return float64(c) })
	}
	if ms, ok := store.(interface{ MetaStats() objectstore.MetaStats }); ok {
		p.reg.MustRegister(newMetaCollector(ms.MetaStats, labels))
	}
	counter := func(name, help string, v *atomic.Uint64) {
		counterFunc(name, help, func() float64 { return float64(v.Load()) })
	}
	counter("op_w_total", "Client write requests served as primary.", &p.opW)
	counter("op_r_total", "Client read requests served as primary.", &p.opR)
	counter("op_w_in_bytes_total", "Data bytes of client writes.", &p.opWBytes)
	counter("op_r_out_bytes_total", "Data bytes returned by client reads.", &p.opRBytes)
	counter("subop_w_total", "Replicated writes applied for a primary.", &p.subopW)
	counter("subop_w_in_bytes_total", "Bytes of replicated writes received (the transaction as sent).", &p.subopWBytes)
	counter("shard_w_total", "Object writes this OSD's store applied for client writes (own, replica or erasure shard).", &p.shardW)
	counter("shard_w_bytes_total", "Data bytes of those writes.", &p.shardWBytes)
	counter("shard_r_total", "Erasure-coded shard reads served for a primary's client reads (this OSD's own included).", &p.shardR)
	counter("shard_r_bytes_total", "Data bytes of those reads.", &p.shardRBytes)
	counter("ec_reconstruct_total", "Erasure-coded reads that decoded missing, stale or corrupt shards.", &p.ecReconstruct)
	counter("ec_rebuilds_total", "Erasure-coded objects whose missing shards this primary's recovery rebuilt by decoding.", &p.ecRebuilds)
	counter("ec_shard_copies_total", "Erasure-coded shards this primary's backfill copied whole from the acting member holding the same shard.", &p.ecShardCopies)
	counter("recovery_ops_total", "Objects this OSD's store installed whole for recovery, backfill or repair.", &p.recoveryOps)
	counter("recovery_bytes_total", "Data bytes of those objects.", &p.recoveryBytes)
	counter("mclock_background_waits_total", "Background operations the I/O scheduler held back before they could start.", &p.mclockWaits)
	counter("recovery_preempted_total", "Recovery reservations given back to a PG of higher priority (degraded before misplaced).", &p.recoveryPreempted)
	counter("snaptrim_objects_total", "Objects this primary's snap trimmer rewrote (removed snaps taken out of their clones).", &p.snapTrimmed)
	counter("op_w_pipelined_total", "Client writes prepared while another write to the same object was in flight (blind writes on a replicated PG).", &p.opWPipelined)
	counter("read_lease_waits_total", "OSDs of earlier intervals that activating PGs could not reach and had to prove past serving reads or wait out (their read leases).", &p.leaseWaits)
	p.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "shoal", Subsystem: "osd", Name: "mclock_scale", ConstLabels: labels,
		Help: "Fraction of its capacity the I/O scheduler gives the OSD now (below 1 while clients wait for CPU that background work takes; osd_mclock_sched_latency_target)."}, mclockScale))
	buckets := prometheus.ExponentialBuckets(50e-6, 2, 18) // 50 µs … 6.5 s
	p.opWLat = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "shoal", Subsystem: "osd", Name: "op_w_latency_seconds",
		Help: "Client write latency on the primary, replicas included.", ConstLabels: labels, Buckets: buckets})
	p.opRLat = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "shoal", Subsystem: "osd", Name: "op_r_latency_seconds",
		Help: "Client read latency on the primary.", ConstLabels: labels, Buckets: buckets})
	p.reg.MustRegister(p.opWLat, p.opRLat)
	return p
}

func (p *perfCounters) snapshot() osdop.Perf {
	return osdop.Perf{OpW: p.opW.Load(), OpR: p.opR.Load(), OpWInBytes: p.opWBytes.Load(), OpROutBytes: p.opRBytes.Load(),
		SubopW: p.subopW.Load(), SubopWBytes: p.subopWBytes.Load(), ShardW: p.shardW.Load(), ShardWBytes: p.shardWBytes.Load(),
		ShardR: p.shardR.Load(), ShardRBytes: p.shardRBytes.Load(), ECReconstruct: p.ecReconstruct.Load(), ECRebuilds: p.ecRebuilds.Load(), ECShardCopies: p.ecShardCopies.Load(),
		RecoveryOps: p.recoveryOps.Load(), RecoveryBytes: p.recoveryBytes.Load(), MClockWaits: p.mclockWaits.Load(), RecoveryPreempted: p.recoveryPreempted.Load(),
		SnapTrimmed: p.snapTrimmed.Load(), OpWPipelined: p.opWPipelined.Load(), OpWLatency: histSum(p.opWLat), OpRLatency: histSum(p.opRLat)}
}

// histSum is the sum of a histogram's observations.
func histSum(h prometheus.Histogram) float64 {
	var m dto.Metric
	if h.Write(&m) != nil || m.Histogram == nil {
		return 0
	}
	return m.Histogram.GetSampleSum()
}

// serveMetrics exports the counters at addr/metrics until ctx ends.
func (d *OSD) serveMetrics(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("osd: metrics: %w", err)
	}
	d.perf.reg.MustRegister(cephMetrics{d})
	d.metricsAddr = ln.Addr().String()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := scrape.Serve(ctx, ln, d.perf.reg); err != nil {
			d.log.Error("metrics server", "err", err)
		}
	}()
	return nil
}

// metaCollector exports the metadata store's statistics (shoal_osd_meta_*)
// from one objectstore.MetaStats per scrape: reading Pebble's metrics
// walks its levels under its lock.
type metaCollector struct {
	stats func() objectstore.MetaStats
	descs []*prometheus.Desc // in metaValues' order
}

// metaValue is one exported statistic: name, help, whether a counter,
// and its value.
type metaValue struct {
	name, help string
	counter    bool
	v          float64
}

// metaValues are the exported statistics of m.
func metaValues(m objectstore.MetaStats) []metaValue {
	return []metaValue{
		{"meta_flushes_total", "Memtables the metadata store (Pebble) flushed.", true, float64(m.Flushes)},
		{"meta_compactions_total", "Compactions of the metadata store.", true, float64(m.Compactions)},
		{"meta_compaction_debt_bytes", "Bytes the metadata store's compactions still owe (Pebble's estimate).", false, float64(m.CompactionDebt)},
		{"meta_sst_bytes", "The metadata store's sstables.", false, float64(m.SSTBytes)},
		{"meta_blob_bytes", "The metadata store's blob files (values kept out of the sstables).", false, float64(m.BlobBytes)},
		{"meta_blob_garbage_bytes", "Values in the blob files that no key refers to any more (uncompressed).", false, float64(m.BlobGarbageBytes)},
	}
}

func newMetaCollector(stats func() objectstore.MetaStats, labels prometheus.Labels) *metaCollector {
	c := &metaCollector{stats: stats}
	for _, v := range metaValues(objectstore.MetaStats{}) {
		c.descs = append(c.descs, prometheus.NewDesc(prometheus.BuildFQName("shoal", "osd", v.name), v.help, nil, labels))
	}
	return c
}

func (c *metaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *metaCollector) Collect(ch chan<- prometheus.Metric) {
	for i, v := range metaValues(c.stats()) {
		typ := prometheus.GaugeValue
		if v.counter {
			typ = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[i], typ, v.v)
	}
}
