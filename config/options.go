package config

// Type is an option's value type.
type Type int

// Option types. Sizes accept IEC suffixes (4M = 4 MiB); durations are in
// seconds (fractions allowed), as in Ceph.
const (
	Bool Type = iota
	Int
	Size
	Seconds
	Float
	String
)

func (t Type) String() string {
	return [...]string{"bool", "int", "size", "seconds", "float", "string"}[t]
}

// Option describes one setting: its name (Ceph's where the meaning is the
// same), type, default, and what it does.
type Option struct {
	Name    string
	Type    Type
	Default string
	Desc    string
	// Min and Max bound Int, Size, Seconds and Float values (inclusive)
	// when Max > Min.
	Min, Max float64
}

// Options is the table every configuration source is checked against and
// docs/configuration.md is generated from (`go generate ./config`).
var Options = []Option{
	// cluster
	{Name: "fsid", Type: String, Desc: "Cluster id, set by `shoal up`."},
	{Name: "mon_host", Type: String, Desc: "Comma-separated MON addresses (host:port) clients and daemons contact first; they follow the MON map from there (MONs added or removed since)."},
	{Name: "mon_initial_members", Type: String, Desc: "Comma-separated ids of the MONs that form a new cluster (Ceph's option): a MON with no state forms the cluster with them if its id is listed, and otherwise waits to be added (`shoal mon add`). Unset: every MON of mon_host is an initial member."},
	{Name: "public_addr", Type: String, Desc: "Address a daemon listens on (host:port; port 0 picks one)."},
	{Name: "cluster_addr", Type: String, Desc: "An OSD's address on the cluster (back) network (host:port; port 0 picks one): other OSDs send it replication, recovery and peering there and heartbeat both it and public_addr. Empty: public_addr carries everything."},
	{Name: "keyring", Type: String, Default: "$data/keyring", Desc: "Keyring file holding the cluster key for this entity."},
	{Name: "log_file", Type: String, Default: "$data/log/$name.log", Desc: "Daemon log file."},
	{Name: "daemon_gc_percent", Type: Int, Default: "0", Min: 0, Max: 10000, Desc: "Heap growth, in percent of the live heap, that starts a garbage collection in a daemon (Go's GOGC; the GOGC environment variable overrides it). 0: the daemon's default — 400 for gateways, whose live heap is small and whose per-request garbage would otherwise cost a fifth of their CPU in collections, 100 (Go's) for OSDs and MONs. An OSD's heap is also capped softly at osd_memory_target less its metadata store's memory outside the Go heap (Go's GOMEMLIMIT, which the environment variable overrides)."},
	{Name: "daemon_sysmon_poll", Type: Bool, Default: "false", Desc: "Removed: accepted and ignored, so that configuration files that set it still load. It kept the Go runtime monitor of each daemon polling by re-executing the daemon with GODEBUG=schedtrace set, a debugging setting used for its side effect; measured twice against the data path as it is now, it moved no throughput beyond the noise (docs/perf-log/datapath-2026-11-28.md, docs/perf-log/datapath-2026-11-30.md)."},

	// messenger
	{Name: "ms_mode", Type: String, Default: "crc", Desc: "Protection of this entity's connections once the handshake has proved both ends (Ceph's msgr2 mode names): crc — payloads in the clear with their crc32c, every frame authenticated by an AES-GCM tag under a session key, so nothing on the path can alter, inject, drop or replay a frame; secure — payloads also encrypted (AES-256-GCM). A connection is secure if either end asks for it. Read when the daemon or client starts."},
	{Name: "ms_session_ttl", Type: Seconds, Default: "3600", Min: 0, Max: 1 << 30, Desc: "Seconds a connection's session key lives (as cephx's ticket TTL): a client then opens a new connection, with fresh nonces and keys, for new requests and closes the old one once its replies are in; a server closes connections older than twice this. 0: no limit."},

	// objects and clients
	{Name: "osd_max_object_size", Type: Size, Default: "128M", Min: 4096, Max: 1 << 40, Desc: "Largest RADOS object; larger writes are refused (E2BIG)."},
	{Name: "osd_max_object_name_len", Type: Int, Default: "2048", Min: 1, Max: 2048, Desc: "Longest object name in bytes."},
	{Name: "objecter_inflight_op_bytes", Type: Size, Default: "100M", Min: 1, Max: 1 << 40, Desc: "Bytes of client requests in flight per connection before new ones wait."},
	{Name: "rados_osd_op_timeout", Type: Seconds, Default: "0", Min: 0, Max: 1 << 20, Desc: "Seconds a client op may take, resends included, before it fails with a timeout; 0: no limit."},
	{Name: "objecter_inflight_ops", Type: Int, Default: "1024", Min: 1, Max: 1 << 20, Desc: "Client requests in flight before new ones wait."},

	// pools
	{Name: "osd_pool_default_size", Type: Int, Default: "3", Min: 1, Max: 32, Desc: "Replicas of a new replicated pool."},
	{Name: "osd_pool_default_min_size", Type: Int, Default: "0", Min: 0, Max: 32, Desc: "Fewest replicas that accept writes; 0 means size - size/2."},
	{Name: "osd_pool_default_pg_num", Type: Int, Default: "32", Min: 1, Max: 65536, Desc: "PGs of a new pool."},
	{Name: "osd_pool_default_pgp_num", Type: Int, Default: "0", Min: 0, Max: 65536, Desc: "PGs used for placement of a new pool; 0 means pg_num."},

	// OSD
	{Name: "osd_data", Type: String, Default: "$data/$name", Desc: "An OSD's data directory."},
	{Name: "crush_device_class", Type: String, Desc: "Device class (hdd, ssd, nvme, …) a new OSD registers in CRUSH with, for rules that `take ROOT class CLASS`; a file crush_device_class in the OSD's data directory takes precedence (as ceph-volume records it). Empty: no class."},
	{Name: "bluestore_block_size", Type: Size, Default: "10G", Min: 1 << 20, Max: 1 << 50, Desc: "Size of an OSD's data file when it is created (a sparse file)."},
	{Name: "bluestore_block_db_path", Type: String, Desc: "Directory for the OSD's metadata store on a faster device (BlueStore's block.db). Read when the OSD is made; the store records it and refuses another place later. A new OSD's $name is \"osd\": give each OSD its own, or use shoal up --db-dir (a block.db link in the OSD's directory)."},
	{Name: "bluestore_block_wal_path", Type: String, Desc: "Directory for the metadata write-ahead log on a faster device (block.wal). As bluestore_block_db_path: fixed when the OSD is made; shoal up --wal-dir."},
	{Name: "objectstore_commit_window", Type: Seconds, Default: "0.0003", Min: 0, Max: 0.1, Desc: "Under load, how long a commit group waits for more transactions before it syncs (adaptive group commit; 0 disables)."},
	{Name: "bluestore_prefer_deferred_size", Type: Size, Default: "0", Min: 0, Max: 64 << 20, Desc: "A commit group of an OSD's store with at most this much new data puts the data into its metadata commit too and writes it to the device beside that commit (deferred writes, as BlueStore's): one flush instead of a data device flush and then the metadata log's. 0 (the default) disables it. Experimental: with it set (64K), test/e2e.TestKillsDuringRecovery fails — an OSD restarted after SIGKILL counts more blocks freed than used (docs/perf-log/deferred-2026-12-01.md)."},
	{Name: "bluestore_cache_size", Type: Size, Default: "256M", Min: 1 << 20, Max: 1 << 40, Desc: "Metadata block cache of an OSD; unless set explicitly, shrunk at start to fit osd_memory_target."},
	{Name: "bluestore_default_buffered_read", Type: Bool, Default: "true", Desc: "Keep data an OSD reads from its device in its data cache (bluestore_data_cache_size), so that reading it again costs a memory copy instead of a device read (BlueStore's buffered reads). Blocks are cached from their second read within the cache's reach (a ghost queue remembers which blocks were read once), so a stream read once neither copies into the cache nor evicts from it. Writes do not fill the cache; deep scrub always reads the device."},
	{Name: "bluestore_data_cache_size", Type: Size, Default: "1G", Min: 0, Max: 1 << 50, Desc: "Memory of an OSD's data cache (least recently read blocks leave first); 0 disables it. Unless set explicitly, shrunk at start to fit osd_memory_target, beside bluestore_cache_size (metadata)."},
	{Name: "metrics_addr", Type: String, Desc: "Address (host:port) where the daemon serves Prometheus metrics at /metrics; empty: none."},
	{Name: "osd_heartbeat_interval", Type: Seconds, Default: "6", Min: 0.1, Max: 3600, Desc: "Seconds between heartbeats to peer OSDs."},
	{Name: "osd_heartbeat_min_peers", Type: Int, Default: "10", Min: 1, Max: 1000, Desc: "Fewest OSDs an OSD heartbeats: those it shares PGs with, then its neighbours by id, up to this many."},
	{Name: "osd_heartbeat_grace", Type: Seconds, Default: "20", Min: 1, Max: 3600, Desc: "Seconds without a heartbeat before a peer is reported down."},
	{Name: "osd_pool_default_read_lease_ratio", Type: Float, Default: "0.8", Min: 0.05, Max: 1, Desc: "Read lease of a PG's primary as a fraction of osd_heartbeat_grace (Ceph's read_lease_interval): a primary serves reads only while every other OSD of its acting set promised, within this long, not to let a new acting set go active without it; a new primary that cannot reach an earlier one waits out those promises. Below 1, a failed primary's lease has normally run out when the MONs mark it down."},
	{Name: "osd_crush_chooseleaf_type", Type: Int, Default: "1", Min: 0, Max: 11, Desc: "Bucket type (0 osd, 1 host, 3 rack, …) the default rules of a new cluster spread replicas across; `shoal up` sets 0 for a one-host cluster, as Ceph's vstart does."},
	{Name: "osd_min_pg_log_entries", Type: Int, Default: "250", Min: 10, Max: 1 << 20, Desc: "PG log entries kept after trimming; an OSD behind by fewer catches up from the log."},
	{Name: "osd_max_pg_log_entries", Type: Int, Default: "10000", Min: 10, Max: 1 << 22, Desc: "PG log entries before the log is trimmed back to osd_min_pg_log_entries."},
	{Name: "osd_max_markdown_count", Type: Int, Default: "5", Min: 1, Max: 1000, Desc: "Times an OSD may be marked down while alive within osd_max_markdown_period and boot again at once; past it, it stays down for the rest of the period (a flapping OSD, e.g. cut off from its peers but not from the MONs, stops disturbing its PGs)."},
	{Name: "osd_max_markdown_period", Type: Seconds, Default: "600", Min: 1, Max: 1 << 30, Desc: "Seconds over which osd_max_markdown_count is counted."},
	{Name: "osd_fast_fail_on_connection_refused", Type: Bool, Default: "true", Desc: "Report a peer down at once when its port refuses connections (its process is gone)."},
	{Name: "osd_max_backfills", Type: Int, Default: "1", Min: 1, Max: 1000, Desc: "PGs an OSD recovers or backfills at once as their primary, and PGs it is recovered or backfilled for at once as a member (local and remote reservations, each held for the PG's whole catch-up, so PGs return to service one after another)."},
	{Name: "osd_memory_target", Type: Size, Default: "4G", Min: 64 << 20, Max: 1 << 50, Desc: "Memory an OSD aims to stay within: recovery holds at most an eighth of it in object data at once, across its PGs (with osd_recovery_max_active); at start the OSD shrinks its caches (data, metadata, onodes) to what osd_memory_base, recovery's eighth and the metadata store's memtables (128 MiB) leave, and caps its Go heap (GOMEMLIMIT) at the target less the metadata store's memory outside it; set at runtime (shoal config set), it resizes the data and onode caches and the heap cap at once (the metadata cache keeps its size until a restart with the target in the configuration file)."},
	{Name: "osd_memory_base", Type: Size, Default: "256M", Min: 0, Max: 1 << 50, Desc: "Memory an OSD needs besides its caches, recovery and memtables (client data in flight, messenger buffers, the runtime), reserved out of osd_memory_target before the caches are sized (Ceph's, 768M for its C++ OSD)."},
	{Name: "osd_memory_cache_min", Type: Size, Default: "128M", Min: 2 << 20, Max: 1 << 50, Desc: "Least memory an OSD's caches get together, however small osd_memory_target is (Ceph's)."},
	{Name: "osd_recovery_max_active", Type: Int, Default: "16", Min: 1, Max: 1000, Desc: "Objects an OSD copies at once for recovery or backfill as a PG's primary, across all its PGs; it bounds recovery's memory to this many objects."},
	{Name: "osd_recovery_sleep", Type: Seconds, Default: "0", Min: 0, Max: 60, Desc: "Pause after each object recovery or backfill copies."},
	{Name: "osd_op_complaint_time", Type: Seconds, Default: "30", Min: 0.001, Max: 86400, Desc: "A client op in flight on an OSD for longer than this is a slow op: shoal status and shoal health warn (N slow ops, oldest one blocked for S sec, daemons [osd.N] have slow ops), as Ceph's SLOW_OPS."},
	{Name: "osd_op_queue", Type: String, Default: "mclock_scheduler", Desc: "How an OSD shares its device between client I/O and background work: mclock_scheduler (reservations and limits per class of work, osd_mclock_*) or wpq (background work bounded only by osd_max_backfills, osd_recovery_max_active and the sleeps)."},
	{Name: "osd_mclock_profile", Type: String, Default: "balanced", Desc: "mClock shares of the OSD's capacity, as in Ceph: balanced (recovery and backfill reserve 50%, scrub and stray deletion are limited to 90%), high_client_ops (40%; 70%), high_recovery_ops (70%; no limit), or custom (the osd_mclock_scheduler_background_* options). Client I/O is never held back; background work runs at its reservation under a saturating client load (the capacity scaled down while clients wait for CPU, osd_mclock_sched_latency_target) and at up to its limit with spare capacity."},
	{Name: "osd_mclock_scheduler_background_recovery_res", Type: Float, Default: "0.5", Min: 0, Max: 1, Desc: "custom profile: fraction of the OSD's capacity reserved for recovery and backfill."},
	{Name: "osd_mclock_scheduler_background_recovery_lim", Type: Float, Default: "0", Min: 0, Max: 1, Desc: "custom profile: fraction of the OSD's capacity recovery and backfill never exceed (0: no limit)."},
	{Name: "osd_mclock_scheduler_background_best_effort_res", Type: Float, Default: "0", Min: 0, Max: 1, Desc: "custom profile: fraction of the OSD's capacity reserved for scrub and stray deletion."},
	{Name: "osd_mclock_scheduler_background_best_effort_lim", Type: Float, Default: "0.9", Min: 0, Max: 1, Desc: "custom profile: fraction of the OSD's capacity scrub and stray deletion never exceed (0: no limit)."},
	{Name: "osd_mclock_max_capacity_iops_ssd", Type: Float, Default: "21500", Min: 1, Max: 1e9, Desc: "Random 4 KiB write operations per second an OSD on solid-state media (any device class but hdd) can do; with the bandwidth, it turns an operation into device time for mClock."},
	{Name: "osd_mclock_max_capacity_iops_hdd", Type: Float, Default: "315", Min: 1, Max: 1e9, Desc: "osd_mclock_max_capacity_iops_ssd for OSDs of device class hdd."},
	{Name: "osd_mclock_skip_benchmark", Type: Bool, Default: "false", Desc: "Do not measure an OSD's random 4 KiB write capacity when it first starts (Ceph's osd bench at boot) and use osd_mclock_max_capacity_iops_ssd/_hdd as they are. The measurement (a few seconds of writes through the OSD's store) is kept in the OSD's data directory as mclock_capacity_iops and replaces the capacity option unless that is set explicitly."},
	{Name: "osd_mclock_iops_capacity_threshold_ssd", Type: Float, Default: "80000", Min: 1, Max: 1e9, Desc: "A measured capacity above this many IOPS is taken as unrealistic (a cache in front of the device) and the configured osd_mclock_max_capacity_iops_ssd is used instead, as in Ceph."},
	{Name: "osd_mclock_iops_capacity_threshold_hdd", Type: Float, Default: "500", Min: 1, Max: 1e9, Desc: "osd_mclock_iops_capacity_threshold_ssd for OSDs of device class hdd."},
	{Name: "osd_mclock_sched_latency_target", Type: Seconds, Default: "0.001", Min: 0, Max: 1, Desc: "Shoal: while client work runs and the 90th percentile of how long the OSD's runnable goroutines wait for a CPU (sampled every 100 ms) is above this, the CPUs, not the device, are what background work takes from clients: the capacity mClock shares is scaled down (to 1/16 at least) until the wait is back at this target (as CockroachDB's admission.elastic_cpu.scheduler_latency_target). 0 turns it off."},
	{Name: "osd_mclock_max_sequential_bandwidth_ssd", Type: Size, Default: "1200M", Min: 1 << 20, Max: 1 << 50, Desc: "Sequential bytes per second an OSD on solid-state media can move; an operation of n bytes costs n over this (plus one op over the IOPS capacity) of device time."},
	{Name: "osd_mclock_max_sequential_bandwidth_hdd", Type: Size, Default: "150M", Min: 1 << 20, Max: 1 << 50, Desc: "osd_mclock_max_sequential_bandwidth_ssd for OSDs of device class hdd."},
	{Name: "osd_client_watch_timeout", Type: Seconds, Default: "30", Min: 1, Max: 86400, Desc: "Seconds a watch lives without its client polling the primary before it expires (a watch may set its own); notifies count an expired watcher as timed out."},
	{Name: "osd_scrub_min_interval", Type: Seconds, Default: "86400", Min: 0, Max: 1 << 40, Desc: "Seconds after a PG's last scrub before the next is scheduled (when the load and hours allow)."},
	{Name: "osd_scrub_max_interval", Type: Seconds, Default: "604800", Min: 0, Max: 1 << 40, Desc: "Seconds after which a PG is scrubbed whatever the load and hours."},
	{Name: "osd_deep_scrub_interval", Type: Seconds, Default: "604800", Min: 0, Max: 1 << 40, Desc: "Seconds between deep scrubs (every byte read and compared) of a PG."},
	{Name: "osd_scrub_begin_hour", Type: Int, Default: "0", Min: 0, Max: 23, Desc: "Scheduled scrubs start at or after this hour (local time); equal to osd_scrub_end_hour: any hour."},
	{Name: "osd_scrub_end_hour", Type: Int, Default: "0", Min: 0, Max: 23, Desc: "Scheduled scrubs start before this hour (the range may wrap past midnight)."},
	{Name: "osd_scrub_load_threshold", Type: Float, Default: "0.5", Min: 0, Max: 1000, Desc: "Scheduled scrubs start only while the 1-minute load average per CPU is below this."},
	{Name: "osd_max_scrubs", Type: Int, Default: "3", Min: 1, Max: 1000, Desc: "Scrubs an OSD takes part in at once, as primary or replica: a primary scrubs a PG only once every member granted it a slot (Ceph's scrub reservations), and tries again later otherwise."},
	{Name: "osd_scrub_chunk_max", Type: Int, Default: "25", Min: 1, Max: 100000, Desc: "Objects compared per scrub chunk; writes to a chunk's objects wait while it is compared."},
	{Name: "osd_scrub_sleep", Type: Seconds, Default: "0", Min: 0, Max: 60, Desc: "Pause between scrub chunks."},
	{Name: "osd_scrub_auto_repair", Type: Bool, Default: "false", Desc: "Repair what a scheduled deep scrub finds, if it found at most osd_scrub_auto_repair_num_errors objects."},
	{Name: "osd_scrub_auto_repair_num_errors", Type: Int, Default: "5", Min: 0, Max: 1 << 30, Desc: "Most inconsistent objects a deep scrub may find and still be auto-repaired."},

	// MON
	{Name: "mon_osd_down_out_interval", Type: Seconds, Default: "600", Min: 0, Max: 1 << 30, Desc: "Seconds a down OSD stays in before the MONs mark it out (and its PGs recover elsewhere); 0: never. The noout flag suspends it; an OSD marked out this way is marked in again when it boots."},
	{Name: "mon_osd_report_timeout", Type: Seconds, Default: "900", Min: 0, Max: 1 << 30, Desc: "Seconds without a beacon (osd_beacon_report_interval) after which the MONs mark an up OSD down: one cut off from the MONs but not from its peers, which no peer reports; 0: never."},
	{Name: "osd_beacon_report_interval", Type: Seconds, Default: "300", Min: 0.1, Max: 1 << 30, Desc: "Seconds between an OSD's beacons to the MONs (see mon_osd_report_timeout)."},
	{Name: "mon_osd_min_down_reporters", Type: Int, Default: "2", Min: 1, Max: 1000, Desc: "Distinct OSDs that must report a peer down."},
	{Name: "mon_osd_reporter_subtree_level", Type: String, Default: "host", Desc: "CRUSH type whose buckets count as distinct reporters of a down OSD (`osd` for a one-host cluster)."},
	{Name: "mon_osd_nearfull_ratio", Type: Float, Default: "0.85", Min: 0, Max: 1, Desc: "Device use (fraction) past which an OSD is nearfull: a health warning."},
	{Name: "mon_osd_backfillfull_ratio", Type: Float, Default: "0.90", Min: 0, Max: 1, Desc: "Device use past which an OSD is backfillfull: a health warning (backfill onto it is to be refused)."},
	{Name: "mon_osd_full_ratio", Type: Float, Default: "0.95", Min: 0, Max: 1, Desc: "Device use past which an OSD is full: writes that add data to its PGs fail with ENOSPC (deletes still work) — so a device never fills."},
	{Name: "balancer_active", Type: Bool, Default: "false", Desc: "Let the MONs' leader balance PGs across OSDs with pg_upmap_items every balancer_sleep_interval (`shoal balancer on|off`). Ceph's balancer is on by default; Shoal's is off, so placement changes only when an operator asks."},
	{Name: "balancer_mode", Type: String, Default: "upmap", Desc: "How the balancer moves PGs: upmap (pg_upmap_items) or none (`shoal balancer mode`)."},
	{Name: "balancer_upmap_max_deviation", Type: Float, Default: "1", Min: 1, Max: 1000, Desc: "PG copies an OSD may hold above or below its weighted share of a pool's before the balancer moves one (Ceph's upmap_max_deviation, 5 there)."},
	{Name: "balancer_sleep_interval", Type: Seconds, Default: "60", Min: 1, Max: 1 << 30, Desc: "Seconds between the automatic balancer's rounds."},
	{Name: "target_max_misplaced_ratio", Type: Float, Default: "0.05", Min: 0, Max: 1, Desc: "Fraction of a cluster's PGs one round of the automatic balancer, or one step of a pool's pgp_num toward its target, may move (at least one); the next waits until fewer than this fraction are moving."},
	{Name: "osd_pool_default_pg_autoscale_mode", Type: String, Default: "off", Desc: "pg_autoscale_mode of new pools: off, warn (a health warning while pg_num is not the autoscaler's) or on (a running manager sets pg_num, splitting PGs or merging them one at a time, once the autoscaler's value is 3× above or below it). Ceph's default is on; Shoal's is off, so pg_num changes only when an operator asks."},
	{Name: "mon_max_pg_per_osd", Type: Int, Default: "250", Min: 1, Max: 1 << 20, Desc: "PG copies per in OSD (the sum over pools of pg_num × size, divided by the OSDs in) above which the MONs refuse a pg_num increase."},
	{Name: "mon_data", Type: String, Default: "$data/$name", Desc: "A MON's data directory."},

	// gateway
	{Name: "rgw_obj_stripe_size", Type: Size, Default: "4M", Min: 64 << 10, Max: 1 << 30, Desc: "Size of each RADOS object an S3 object is striped into."},
	{Name: "rgw_max_chunk_size", Type: Size, Default: "4M", Min: 4 << 10, Max: 1 << 30, Desc: "Largest single write the gateway sends to RADOS."},
	{Name: "rgw_put_obj_min_window_size", Type: Size, Default: "16M", Min: 4 << 10, Max: 1 << 34, Desc: "Bytes of one PUT in flight to RADOS at once."},
	{Name: "rgw_override_bucket_index_max_shards", Type: Int, Default: "0", Min: 0, Max: 65521, Desc: "Bucket index shards of new buckets; 0 means the default (11)."},
	{Name: "rgw_bucket_index_range_shards", Type: Int, Default: "2", Min: 1, Max: 1024, Desc: "Shoal: hash sub-shards per key range of a bucket index (the objects one listing page reads); a bucket's rgw_override_bucket_index_max_shards shards are laid out as ranges of at most this many."},
	{Name: "rgw_gc_obj_min_wait", Type: Seconds, Default: "7200", Min: 0, Max: 1 << 30, Desc: "Seconds garbage (tails of overwritten or deleted objects) waits before the GC deletes it, so reads in flight finish."},
	{Name: "rgw_multi_obj_del_max_aio", Type: Int, Default: "16", Min: 0, Max: 1024, Desc: "Keys of one multi-object delete (DeleteObjects) removed at once; 0 counts as 1 (as RGW)."},
	{Name: "rgw_dynamic_resharding", Type: Bool, Default: "true", Desc: "Split a bucket index range on its own once one of its shards holds more than rgw_max_objs_per_shard entries (RGW's dynamic resharding; here the split is online)."},
	{Name: "rgw_max_objs_per_shard", Type: Int, Default: "100000", Min: 1, Max: 1 << 40, Desc: "Entries per bucket index shard past which dynamic resharding splits the shard's range."},
	{Name: "rgw_reshard_thread_interval", Type: Seconds, Default: "600", Min: 0.01, Max: 1 << 30, Desc: "Seconds between the gateway's passes over the buckets queued for dynamic resharding."},
	{Name: "rgw_gc_processor_period", Type: Seconds, Default: "3600", Min: 1, Max: 1 << 30, Desc: "Seconds between the gateway's garbage-collection passes."},
	// MGR
	{Name: "mgr_stats_period", Type: Seconds, Default: "5", Min: 0.1, Max: 3600, Desc: "Seconds between the manager's samples of the cluster's status (the dashboard's and the manager's metrics' refresh; Ceph's mgr_stats_period)."},
	{Name: "mgr_dashboard_addr", Type: String, Desc: "Address (host:port) where the manager serves the dashboard (GET /) and its JSON (GET /api/status); empty: none. `shoal up` sets a free port near 8080."},

	{Name: "rgw_frontends", Type: String, Default: "beast endpoint=127.0.0.1:7480", Desc: "The gateway's HTTP listener, in Ceph's syntax: `beast endpoint=ADDR:PORT`, plus `ssl_endpoint=ADDR:PORT ssl_certificate=PATH ssl_private_key=PATH` for TLS (then only the TLS endpoint is served)."},
	{Name: "rgw_lifecycle_work_time", Type: String, Default: "00:00-06:00", Desc: "Local time window, HH:MM-HH:MM, in which the gateways run their daily bucket lifecycle pass (expiration, aborting incomplete uploads)."},
	{Name: "rgw_enable_lc_threads", Type: Bool, Default: "true", Desc: "Run bucket lifecycle passes in this gateway (any one gateway of the cluster runs each pass)."},
	{Name: "rgw_lc_lock_max_time", Type: Seconds, Default: "90", Min: 0.01, Max: 1 << 30, Desc: "Seconds a lifecycle pass holds the cluster's lifecycle lock between renewals (after each bucket and page of keys): how long a gateway killed mid-pass keeps the others from starting one."},
	{Name: "rgw_crypt_require_ssl", Type: Bool, Default: "true", Desc: "Refuse SSE-C requests (customer-provided keys) that do not come over TLS."},
	{Name: "rgw_bucket_logging_obj_roll_time", Type: Seconds, Default: "300", Min: 1, Max: 1 << 20, Desc: "Seconds a logged bucket's access log records gather before they are committed as one object of its log bucket (RGW's ObjectRollTime)."},
	{Name: "rgw_lc_debug_interval", Type: Seconds, Default: "0", Min: 0, Max: 1 << 30, Desc: "For tests: if positive, a lifecycle day lasts this many seconds and passes run that often, outside the work time too."},
	{Name: "rgw_dns_name", Type: String, Desc: "Domain for virtual-host-style bucket addressing."},
}
