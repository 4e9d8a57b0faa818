// Package rgw is the storage layer of Shoal's S3 gateway (Ceph: RGW's
// RADOS store): users, buckets, the bucket index, objects as head and
// tail RADOS objects, multipart uploads, garbage collection, lifecycle
// expiration and resharding, over a *client.Conn. The S3 edge, package
// gateway, turns HTTP requests into calls of a Store; nothing here knows
// HTTP. Errors a client sees as S3 errors are package s3err's.
//
// # Pools
//
// Five RADOS pools, named as RGW's default zone names them (Pools): meta
// (users, access keys, bucket entry points), index (bucket index
// shards), data (object heads and tails; may be erasure-coded), non-ec
// (multipart upload state, which needs omaps) and log (the GC queue).
// Each can have its own CRUSH rule and protection, so the index pool can
// sit on fast devices while data sits on EC over HDDs. The gateway
// creates missing pools at start, replicated with the cluster defaults.
//
// # Object layout
//
// An S3 object is a head RADOS object "BUCKETID_KEY" holding the first
// rgw_max_chunk_size bytes and, in its "rgw.head" xattr, the metadata and
// manifest (HeadInfo), plus tail objects of rgw_obj_stripe_size bytes
// named after the write that made them ("BUCKETID__shadow_TAG_N"; a
// multipart part: "BUCKETID__multipart_UPLOAD.PART~TAG_N"). A PUT writes
// the tails first, in writes of at most rgw_max_chunk_size with up to
// rgw_put_obj_min_window_size bytes in flight (one stripe's writes in
// order, stripes in parallel), then the head in one atomic request: the
// head write is the commit point, so a PUT that fails or a gateway that
// dies before it leaves the previous version untouched. The head request
// also reads the version it replaces; that version's tails go to the GC
// queue, deleted after rgw_gc_obj_min_wait (reads in flight finish
// first); a gateway that dies before queueing them, or whose head write
// is answered as a resent duplicate (without the read's output), leaves
// them for CheckOrphans to find. A GET reads the head's data and metadata in one request, then
// the tails with the same window of reads ahead.
//
// # Versioning
//
// In a bucket with versioning Enabled or Suspended, a key's head object
// also records every version of the key, each version's bytes living in
// tails of its own, and every change of the versions is one atomic
// request to the head object; the index keeps each key's versions beside
// its entry (versioning.go).
//
// # Bucket index
//
// A bucket's listing lives in the omaps of index shard objects
// (".dir.BUCKETID.RANGE.N") laid out by an IndexLayout: key ranges, each
// split into rgw_bucket_index_range_shards (default 2) hash sub-shards by
// crc32c of the key. rgw_override_bucket_index_max_shards (default 11)
// sets the initial total; a bucket starts with ranges cut evenly over the
// printable first byte. Updates are two-phase through the OSD's
// object-class methods (package cls/rgw): prepare before the data write
// records a pending operation, complete after it records the entry with
// the head's version (PG log sequence) — applied only if newer than what
// the index holds, so racing writers leave the index agreeing with the
// head that won. As in RGW, the completion is sent after the request is
// answered (completeAsync): the head write is the commit point, and a
// listing that meets a key with a pending record reads that key's head
// in the same pass and lists what the head says (reconcile; RGW's
// check_disk_state). So a listing right after a PUT or DELETE shows it
// whether or not its completion has landed, never an object without data
// and never a deleted one. A crash between the phases leaves a pending
// record, which listings resolve the same way and CheckBucket (`shoal
// bucket check --fix`) completes from the head or cancels, queueing its
// tails for GC. Shard stats lag by the completions in flight.
// Updates are coalesced per shard (indexBatcher, cls method rgw.batch):
// while one call to a shard is in flight, the prepares, completions and
// cancels of other requests wait and go together in the next call, so
// under load one replicated index write serves many PUTs (a store's group
// commit, at the gateway); a request waits for the call that carries its
// prepare, so the phases keep their order.
// Indexless buckets (placement "indexless") skip the index: one RADOS
// request per PUT, no listing.
//
// Two of RGW's known pains are designed out. (a) Listing cost: RGW's
// shards are hash shards, so every ordered page reads every shard (a
// page of 1000 from 128 shards reads 128 × 1000 entries). Here a page
// reads only the sub-shards of the range(s) its keys fall in, so its cost
// is set by the sub-shards per range, not by the total shard count
// (BenchmarkListPage measures both). (b) Resharding: RGW blocks a
// bucket's writes while it reshards. Here a range splits online
// (SplitRange, `shoal bucket reshard`): writers update the old range and
// its new half while the entries are copied with their versions, then the
// layout switches; no step waits on or blocks a writer (reshard.go; the
// copy goes in batches of 256 entries per rgw.complete_batch call).
// docs/bench/reshard-vs-rgw.sh measures the writers' latency during a
// reshard on both systems (docs/PERFORMANCE.md).
// Sequential keys still spread over a range's sub-shards; a bucket whose
// keys share a prefix starts in one range and is split as it grows.
// Splits happen on their own (dynamic resharding, dynreshard.go: a shard
// past rgw_max_objs_per_shard entries queues its bucket, and the
// gateway's reshard worker splits the fullest range every
// rgw_reshard_thread_interval, under a cluster-wide lock) or when the
// operator runs `shoal bucket reshard`.
//
// # Lifecycle
//
// Lifecycle rules (lifecycle.go) expire objects and abort old uploads in
// a daily pass (RunLC, LCProcess) that one gateway of the cluster runs at
// a time, under a lock object in the log pool.
//
// # Hooks for tests
//
// testing.go holds failpoints and counters that tests of this package
// and of the S3 edge use to stop a write where a crashed gateway would
// (SetFailpoint) or to watch the index batching; nothing else calls them.
package rgw
