// Package objectstore is the local storage engine of one OSD: collections
// (one per PG shard) of objects with data, extended attributes and an omap,
// changed only by atomic, durable transactions. It is the role of Ceph's
// ObjectStore (BlueStore).
//
// # Contract
//
// Store.Apply commits a Transaction: every operation or none, and when it
// returns nil the result survives kill -9 of the process and loss of power.
// Reads see every transaction that has returned, never a partial one, and
// never return bytes whose checksum fails (they return ErrCorrupt). All
// methods are safe for concurrent use. Errors are typed (ErrNotFound,
// ErrExists, ErrNotEmpty, ErrNoSpace, ErrCorrupt, ErrInvalid, ErrClosed).
//
// # BlockStore layout
//
// Metadata lives in Pebble (an LSM, as BlueStore keeps its metadata in
// RocksDB), optionally on another device (Options.DBDir) with its
// write-ahead log on a third (Options.WALDir), like BlueStore's block.db
// and block.wal. Where they are is fixed when the store is made: the
// store's directory records it (db_path, wal_path), a later Open without
// the options finds them there and one naming other places is refused,
// and each metadata directory names the one store it serves
// (SHOAL_STORE). The keys:
//
//	'S'                          superblock: device size, inline limit
//	'C' coll                     collection
//	'O' len coll oid             onode: size, xattrs, inline data or extents,
//	                             whether omap entries may exist
//	'M' len coll len oid key     omap entry
//	'F' region                   allocation bitmap, 4096 blocks per key
//
// Removing an object deletes its omap entries with one range deletion,
// written only when its onode says it may have some: range deletions in
// the memtable slow every later read of it, and most objects (an S3
// object's head and tails, rados bench's) have no omap. Fsck checks that
// no omap entry belongs to an onode that says it has none.
//
// Objects up to InlineMax (32 KiB by default) keep their bytes in the onode:
// one write to the log per transaction, no data-device I/O. Values of 1 KiB
// and more (such onodes, mostly) leave the LSM's sstables when their
// memtable is flushed: Pebble keeps them in blob files (value separation,
// WiscKey's idea) that compactions mostly leave alone, so an OSD filled
// with millions of small objects compacts keys and short handles, not the
// objects' bytes (separateValues says when values are rewritten). A store
// made before value separation is moved to the Pebble format that allows
// it when opened. MetaStats reports the LSM's state, and
// FlushMeta and CompactMeta act on it (`shoal osd compact`). Larger objects
// live on the data device (a file or block device, Options.Size bytes) in
// 4 KiB blocks, mapped by extents (logical block → physical block) that
// carry a crc32c per block; partial blocks are read, checked and rewritten
// whole. A writer that already has its data's block checksums (an OSD,
// from the messenger's frame check) gives them (Transaction.WriteSums)
// instead of the store computing them again; a reader that sends the data
// on gets them back combined per part (ReadVec).
//
// # Write path and its ordering
//
// Writes are copy-on-write: new data always goes to free blocks, never over
// live ones. A single committer goroutine takes every transaction waiting
// (up to 512) as one group, and for the group:
//
//  1. checks each transaction against the state so far (a transaction that
//     would fail — missing object, full device — is answered with its
//     error and leaves no trace);
//  2. applies them to one Pebble batch, allocating blocks from an
//     in-memory bitmap and noting the blocks the group frees (next-fit
//     within a zone of the device's first blocks that grows only when
//     nearly full, so freed blocks are written again before blocks never
//     written: see allocator);
//  3. writes the new blocks from the callers' buffers (bounced when
//     not block-aligned), the runs that follow one another on the device
//     in one pwritev (the allocator's cursor places a group's writes back
//     to back, and a direct write costs mostly per call), and makes them
//     durable: a group with at most Options.DeferredMax bytes of them
//     (64 KiB by default in this package; OSDs leave it off unless
//     bluestore_prefer_deferred_size is set) also puts them into its batch
//     (deferred writes, deferred.go, as BlueStore's) and writes them
//     beside the commit, so that the log sync below covers them; any
//     other group fdatasyncs the device, and its batch retires the
//     deferred records outstanding, whose data that sync made durable;
//  4. commits the batch — onodes, omap, the changed bitmap regions — with
//     a synced log write (the log file is kept written with zeros ahead of
//     its records, so that the sync writes only the records and not the
//     file's size and extents as well: walfs.go);
//  5. waits for readers that looked up metadata before the commit, then
//     returns the freed blocks to the allocator, and answers the group.
//
// Metadata therefore never refers to data that is not durable, a block is
// never overwritten while durable metadata or a reader still refers to it,
// and a crash at any point leaves either the old or the new state: blocks
// written but not committed are free in the persisted bitmap; a deferred
// record left by a crash is written to the device again when the store
// opens, before anything reads. One log sync, and one device sync before
// it unless the group deferred its data, serve the whole group, so
// concurrent writers share them (group commit).
//
// # Clones share blocks
//
// Clone and StashForRollback give the new object the source's extents:
// no data is read or written, and both onodes name the same blocks. A
// block named by more than one extent has an entry in a reference table
// ('R' keys per 16 MiB region, kept in memory and changed in the group's
// batch, refs.go); freeing a block with extra references only lowers the
// count. Copy-on-write does the rest: neither owner ever writes a shared
// block in place. A snapshot's clone of a 4 MiB object, then a 4 KiB
// overwrite of the head, costs one new block (TestCloneSharesBlocks).
// Fsck counts each block's owners and checks them against the table.
//
// # Data cache
//
// Blocks that reads fetch from the device are kept in a data cache
// (datacache.go; BlueStore's buffer cache with
// bluestore_default_buffered_read), so data read again costs a memory
// copy instead of a direct read, its system call and its checksum pass
// (the checksum was verified when the block was read). It is keyed by
// physical block, which copy-on-write keeps exact: a block's contents do
// not change while an onode refers to it, readers add only blocks of
// committed onodes (holding the store's lock shared), and the committer
// drops freed blocks in the locked step that returns them to the
// allocator. Writes do not fill it, and neither does a first read: a
// block is cached from its second read while its unit is still in a
// ghost queue (2Q's A1out), so a stream read once costs no copy and
// evicts nothing. ReadDevice bypasses it: deep scrub checks the device.
//
// # Why this layout and not append-only segments
//
// The alternative the design allowed — data appended to log segments,
// reclaimed by compaction — turns every overwrite and delete into future
// copying work whose cost grows with how full the device is and how much is
// rewritten; that debt is what makes log-structured stores slow down as
// they fill. Copy-on-write into a bitmap-allocated device frees space the
// moment a transaction commits, so the cost of an operation is the same
// at 1,000 or 1,000,000 objects and on an empty or a full device. On this
// machine the data device is not the bottleneck either way (sequential
// writes 1.6 GB/s, 4 KiB random writes 74.6k IOPS by fio, see
// docs/PERFORMANCE.md, against 611 MB/s and 12.4k transactions/s measured
// for the whole store): the CPU and the syncs per group are, and both
// layouts pay those.
//
// # Durability tests
//
// The package tests kill -9 a writer process at random acknowledgement
// counts, and simulate power loss at a random device or log sync (Pebble's
// crash-cloning in-memory filesystem plus a device that drops a random
// part of its unsynced blocks); after each, every acknowledged transaction
// must be present and whole, and Fsck must find the bitmap exactly equal
// to the blocks the onodes reference. A differential test runs random
// transactions against BlockStore and MemStore and compares everything.
//
// # Limits
//
// Object names up to 2048 bytes, collections up to 255, object size up to
// 1 TiB. An I/O error on the
// metadata log is fatal to the process, as in Ceph: Pebble cannot continue
// past a failed log write, and an OSD that stops is recovered by its peers.
package objectstore
