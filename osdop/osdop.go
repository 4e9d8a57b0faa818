// Package osdop is the client ↔ OSD protocol: the operations a client
// sends to a PG's primary (Ceph's MOSDOp), their results, and the errno
// codes errors travel as.
//
// A request names one object and carries a list of ops applied in order
// and atomically: if one fails, none takes effect (e.g. assert-version +
// write + omap-set). A list with any write op is a write: the primary
// orders it in the PG log and acknowledges it once every OSD of the acting
// set has committed it. A list of reads is served by the primary alone.
package osdop

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/omap"
)

// Message types on the messenger.
const (
	MsgOp    uint16 = 100 + iota // client → primary: Request → Reply
	MsgStats                     // → any OSD: its PG states and usage (JSON Stats)
)

// Code is an operation.
type Code uint8

// Operations. Writes first, then reads.
const (
	WriteFull     Code = iota + 1 // Data replaces the object's data
	Write                         // Data at Off
	Append                        // Data at the end
	Truncate                      // size Off
	Zero                          // [Off, Off+Len) reads as zeros
	Remove                        // delete the object (ENOENT if absent)
	Create                        // create empty; with Exclusive, EEXIST if it exists
	SetXattr                      // Name = Data
	RmXattr                       // Name
	OmapSet                       // KVs
	OmapRm                        // Keys
	OmapClear                     //
	Call                          // object-class method Name ("class.method") with input Data
	AssertVersion                 // the object's version must be Ver (ERANGE if older, EOVERFLOW if newer)
	Read                          // Len bytes at Off (Len 0: to the end)
	Stat                          // Size, Mtime, Ver
	GetXattr                      // Name → Data
	GetXattrs                     // → KVs
	OmapGet                       // Keys → KVs (absent keys omitted)
	OmapList                      // after Name (start-after), with Prefix, up to Max → KVs, More
	// Rollback makes the object what it was at snap Ver (Ceph's
	// CEPH_OSD_OP_ROLLBACK): that snap's clone, or absent if it did not
	// exist then. A write.
	Rollback
	ListSnaps // → Data: the object's SnapSet (EncodeSnapSet); Ceph's CEPH_OSD_OP_LIST_SNAPS
	// TrimSnaps is the snap trimmer's write (internal: refused from
	// clients): take the snap ids in Data (8 bytes little-endian each)
	// out of the object's clones, removing clones that serve no snap.
	TrimSnaps
	// Watch registers the sender as a watcher of the object under cookie
	// Ver with a timeout of Len seconds (0: osd_client_watch_timeout),
	// as Ceph's CEPH_OSD_OP_WATCH; a write (watchers are kept with the
	// object). Unwatch removes the sender's watch Ver. WatchExpire is the
	// primary's own removal of a timed-out watch (internal: refused from
	// clients), the watcher's instance in Name and cookie in Ver.
	Watch
	Unwatch
	WatchExpire
	// Notify sends Data to every watcher and waits up to Len milliseconds
	// (0: 30 s) for their acknowledgements → Data: a NotifyResult (JSON).
	// NotifyAck acknowledges notify Ver for the sender's watch Off with
	// reply Data. ListWatchers → Data: the watchers ([]WatcherInfo, JSON).
	Notify
	NotifyAck
	ListWatchers
	// CallRead calls object-class method Name with input Data (→ Data)
	// on the read path: only methods registered as reads
	// (cls.RegisterRead), whose resend after a failover runs again, where
	// a Call's would be answered from the PG log without its output.
	CallRead
	lastCode
)

var names = map[Code]string{WriteFull: "writefull", Write: "write", Append: "append", Truncate: "truncate", Zero: "zero",
	Remove: "remove", Create: "create", SetXattr: "setxattr", RmXattr: "rmxattr", OmapSet: "omap-set", OmapRm: "omap-rm",
	OmapClear: "omap-clear", Call: "call", AssertVersion: "assert-version", Read: "read", Stat: "stat",
	GetXattr: "getxattr", GetXattrs: "getxattrs", OmapGet: "omap-get", OmapList: "omap-list",
	Rollback: "rollback", ListSnaps: "list-snaps", TrimSnaps: "trim-snaps", Watch: "watch", Unwatch: "unwatch",
	WatchExpire: "watch-expire", Notify: "notify", NotifyAck: "notify-ack", ListWatchers: "list-watchers", CallRead: "call-read"}

func (c Code) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("op%d", uint8(c))
}

// IsWrite reports whether the op changes the object (Call counts as a
// write: a method may change the object, so it runs on the write path).
func (c Code) IsWrite() bool {
	return c <= AssertVersion || c == Rollback || c == TrimSnaps || c == Watch || c == Unwatch || c == WatchExpire
}

// KV is an omap entry or an xattr.
type KV = omap.KV

// Op is one operation of a request.
type Op struct {
	Code      Code
	Off, Len  uint64
	Name      string // xattr name, cls method, omap start-after
	Prefix    string // omap prefix
	Max       uint32 // omap entries
	Exclusive bool   // Create
	// FailOK lets a read op fail without failing its request (Ceph's
	// CEPH_OSD_OP_FLAG_FAILOK): its Result is left zero and the other ops
	// go on — e.g. a write that also reads the xattr it replaces, whether
	// or not the object exists yet.
	FailOK bool
	Ver    uint64 // AssertVersion
	Data   []byte
	// DataSums are the crc32c of Data's whole 4 KiB blocks when the
	// receiving OSD has them from the frame check (msgr.Message.BlockSums):
	// the store takes them instead of computing its block checksums. Not
	// encoded.
	DataSums []uint32
	// DataSum, when Valid, is the crc32c of Data, known to the sender
	// (a gateway takes it as the data arrives, while it is in cache): the
	// client combines it into the frame's checksum instead of reading Data
	// again. Not encoded.
	DataSum crc32c.Sum
	KVs     []omap.KV
	Keys    []string
}

// Result is one op's outcome.
type Result struct {
	Data []byte
	// Vec, if not nil, is the data as parts instead of Data (an OSD's
	// zero-copy read: parts of its cache's buffers), with VecSums the
	// parts' crc32c where known without a pass over them (from the
	// store's block checksums). Neither is encoded as such: the parts go
	// on the wire as one blob, which decodes into Data.
	Vec     [][]byte
	VecSums []crc32c.Sum
	KVs     []omap.KV
	More    bool
	Size    uint64
	Mtime   int64 // Unix nanoseconds
	Ver     uint64
}

// Request is a client's op list on one object.
type Request struct {
	Pool   int64
	Seed   uint32 // the PG the client computed
	OID    string
	Client uint64 // random per client instance; with Tid, identifies the request across resends
	Tid    uint64
	Ops    []Op
	// SnapSeq and Snaps are a write's SnapContext (Ceph's SnapContext):
	// the newest snap id the writer knows of in a pool with self-managed
	// snapshots, and the live snap ids, newest first. The OSD clones the
	// object before the first write after a snap newer than the object's
	// SnapSet knows. Zero: no snapshots. A pool with pool snapshots
	// ignores them and uses the pool's.
	SnapSeq uint64
	Snaps   []uint64
	// Snap, for a read, is the snap id to read at (0: the head, the
	// object as it is now); reads only.
	Snap uint64
	// From is the sender's authenticated entity name, set by the OSD
	// that received the request (msgr.Message.From). Not encoded.
	From string
}

// AddsData reports whether any op may store more than the object held
// (writes, creates, attributes, omap entries, object-class calls): what a
// full OSD refuses. Removals, truncations and zeroing free space and are
// allowed.
func (r *Request) AddsData() bool {
	for _, o := range r.Ops {
		switch o.Code {
		case WriteFull, Write, Append, Create, SetXattr, OmapSet, Call, Rollback:
			return true
		}
	}
	return false
}

// IsWrite reports whether any op writes.
func (r *Request) IsWrite() bool {
	for _, o := range r.Ops {
		if o.Code.IsWrite() {
			return true
		}
	}
	return false
}

// Reply answers a Request.
type Reply struct {
	Ver     uint64 // the PG log version that applied a write; the object's version for reads
	Results []Result
}

// Encode appends r's wire form to e (a vector encoder references large
// op data instead of copying it). Op data of 8 KiB or more starts at a
// multiple of 4 KiB from the start of the encoding, so an OSD that reads
// the request into page-aligned memory writes it to its device with
// O_DIRECT without copying it (wire.Encoder.AlignedBlob).
//
// Version 3 appends the SnapContext and the read snap (a version 2
// reader skips them).
func (r *Request) Encode(e *wire.Encoder) {
	m := e.Begin(3, 2)
	e.I64(r.Pool)
	e.U32(r.Seed)
	e.String(r.OID)
	e.U64(r.Client)
	e.U64(r.Tid)
	e.U32(uint32(len(r.Ops)))
	for i := range r.Ops {
		o := &r.Ops[i]
		e.U8(uint8(o.Code))
		e.U64(o.Off)
		e.U64(o.Len)
		e.String(o.Name)
		e.String(o.Prefix)
		e.U32(o.Max)
		e.U8(opFlags(o))
		e.U64(o.Ver)
		e.AlignedBlob(o.Data)
		omap.Encode(e, o.KVs)
		e.Strings(o.Keys)
	}
	e.U64(r.SnapSeq)
	e.U32(uint32(len(r.Snaps)))
	for _, s := range r.Snaps {
		e.U64(s)
	}
	e.U64(r.Snap)
	e.End(m)
}

// EncodeVec is Encode as parts whose concatenation is Encode's output: op
// data of at least minData bytes is its own part (referenced, not
// copied). For msgr.Client.CallVec.
func (r *Request) EncodeVec(minData int) [][]byte {
	e := wire.NewVecEncoder(minData)
	r.Encode(e)
	return e.Parts()
}

// An op's flags byte (it was the Exclusive bool: 0 or 1).
const (
	flagExclusive uint8 = 1 << iota
	flagFailOK
)

func opFlags(o *Op) uint8 {
	var f uint8
	if o.Exclusive {
		f |= flagExclusive
	}
	if o.FailOK {
		f |= flagFailOK
	}
	return f
}

// DecodeRequest reads a Request; data slices alias b.
func DecodeRequest(b []byte) (*Request, error) {
	d := wire.NewDecoder(b)
	v, end := d.Begin("osd op", 2)
	r := &Request{Pool: d.I64(), Seed: d.U32(), OID: d.String(), Client: d.U64(), Tid: d.U64()}
	n := d.Count(40)
	r.Ops = make([]Op, n)
	for i := range r.Ops {
		o := &r.Ops[i]
		o.Code = Code(d.U8())
		o.Off, o.Len = d.U64(), d.U64()
		o.Name, o.Prefix = d.String(), d.String()
		o.Max = d.U32()
		if f := d.U8(); f&^(flagExclusive|flagFailOK) != 0 {
			d.Fail("unknown op flags %#x", f)
		} else {
			o.Exclusive, o.FailOK = f&flagExclusive != 0, f&flagFailOK != 0
		}
		o.Ver = d.U64()
		o.Data = d.AlignedBlobRef()
		o.KVs = omap.Decode(d)
		o.Keys = d.Strings()
		if o.Code == 0 || o.Code >= lastCode {
			d.Fail("unknown op code %d", o.Code)
		}
	}
	if v >= 3 {
		r.SnapSeq = d.U64()
		for n := d.Count(8); n > 0 && d.Err() == nil; n-- {
			r.Snaps = append(r.Snaps, d.U64())
		}
		r.Snap = d.U64()
	}
	d.End("osd op", end)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("osd op: %w", err)
	}
	return r, nil
}

// Encode appends the reply's wire form (a vector encoder references
// large result data instead of copying it).
func (r *Reply) Encode(e *wire.Encoder) {
	e.U64(r.Ver)
	e.U32(uint32(len(r.Results)))
	for i := range r.Results {
		x := &r.Results[i]
		if x.Vec != nil {
			e.BlobVec(x.Vec)
		} else {
			e.Blob(x.Data)
		}
		omap.Encode(e, x.KVs)
		e.Bool(x.More)
		e.U64(x.Size)
		e.I64(x.Mtime)
		e.U64(x.Ver)
	}
}

// DataLen is the length of the result's data (Data, or Vec's parts).
func (x *Result) DataLen() int {
	n := len(x.Data)
	for _, p := range x.Vec {
		n += len(p)
	}
	return n
}

// EncodeVec is Encode as a list of byte slices whose concatenation is
// Encode's output: result data (and Vec parts) of at least minData bytes
// are elements of their own (referenced, not copied), the rest is
// encoded into small buffers between them. sums holds, for the elements
// that are Vec parts with a known checksum (VecSums), that checksum
// (nil if none is known). For msgr.Message.ReplyVecThen.
func (r *Reply) EncodeVec(minData int) (parts [][]byte, sums []crc32c.Sum) {
	e := wire.NewVecEncoder(minData)
	r.Encode(e)
	parts = e.Parts()
	var data [][]byte
	var known []crc32c.Sum
	for i := range r.Results {
		x := &r.Results[i]
		for k, v := range x.Vec {
			if k < len(x.VecSums) {
				data, known = append(data, v), append(known, x.VecSums[k])
			}
		}
	}
	return parts, e.PartSums(parts, data, known)
}

// DecodeReply reads a Reply; data slices alias b.
func DecodeReply(b []byte) (*Reply, error) {
	d := wire.NewDecoder(b)
	r := &Reply{Ver: d.U64()}
	n := d.Count(25)
	r.Results = make([]Result, n)
	for i := range r.Results {
		x := &r.Results[i]
		x.Data = d.BlobRef()
		x.KVs = omap.Decode(d)
		x.More = d.Bool()
		x.Size = d.U64()
		x.Mtime = d.I64()
		x.Ver = d.U64()
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("osd op reply: %w", err)
	}
	return r, nil
}

// Errors clients branch on (errors.Is). They travel as errno codes, as in
// Ceph, so a message always says which op failed and why.
var (
	ErrNotFound    = errors.New("no such object")
	ErrExists      = errors.New("object exists")
	ErrNoSpace     = errors.New("no space left on OSD")
	ErrInvalid     = errors.New("invalid argument")
	ErrUnsupported = errors.New("operation not supported")
	ErrPermission  = errors.New("permission denied")
	ErrTooLarge    = errors.New("object too large")
	ErrNameTooLong = errors.New("object name too long")
	ErrNoData      = errors.New("no such attribute")
	ErrVerOlder    = errors.New("object version older than asserted")
	ErrVerNewer    = errors.New("object version newer than asserted")
	ErrCorrupt     = errors.New("checksum mismatch on OSD")
	// ErrUnreadable: an erasure-coded object has fewer than k readable
	// shards (Ceph answers EIO; the errno here is EREMOTEIO so that it
	// stays apart from a checksum failure).
	ErrUnreadable = errors.New("too few shards to read the object")
	// ErrRetry: not the PG's primary at the sender's epoch, or the PG is
	// changing; the client resends with a newer map.
	ErrRetry = errors.New("retry with a newer map")
	// ErrBusy: an OSD has no slot free for the work asked (a scrub
	// reservation); the asker tries again later.
	ErrBusy = errors.New("busy")
	// ErrReadOnly: a write to a snapshot (Ceph: EROFS).
	ErrReadOnly = errors.New("snapshots are read-only")
	// ErrBlocklisted: the client is in the OSD map's blocklist (Ceph's
	// EBLOCKLISTED, which is ESHUTDOWN).
	ErrBlocklisted = errors.New("client is blocklisted")
	// ErrNotConnected: a poll for a watch the object does not have (Ceph
	// reports a lost watch as ENOTCONN): watch again.
	ErrNotConnected = errors.New("watch not registered")
)

var errnos = []struct {
	err error
	no  syscall.Errno
}{
	{ErrNotFound, syscall.ENOENT}, {ErrExists, syscall.EEXIST}, {ErrNoSpace, syscall.ENOSPC},
	{ErrInvalid, syscall.EINVAL}, {ErrUnsupported, syscall.EOPNOTSUPP}, {ErrPermission, syscall.EACCES},
	{ErrTooLarge, syscall.EFBIG}, {ErrNameTooLong, syscall.ENAMETOOLONG}, {ErrNoData, syscall.ENODATA},
	{ErrVerOlder, syscall.ERANGE}, {ErrVerNewer, syscall.EOVERFLOW}, {ErrCorrupt, syscall.EIO}, {ErrRetry, syscall.EAGAIN},
	{ErrUnreadable, syscall.EREMOTEIO}, {ErrBusy, syscall.EBUSY}, {ErrReadOnly, syscall.EROFS},
	{ErrBlocklisted, syscall.ESHUTDOWN}, {ErrNotConnected, syscall.ENOTCONN},
}

// Errno returns err's code (EIO for errors without one).
func Errno(err error) syscall.Errno {
	for _, x := range errnos {
		if errors.Is(err, x.err) {
			return x.no
		}
	}
	return syscall.EIO
}

// FromErrno returns the error for a code, wrapping msg.
func FromErrno(no syscall.Errno, msg string) error {
	for _, x := range errnos {
		if x.no == no {
			if rest, ok := strings.CutPrefix(msg, x.err.Error()); ok {
				if rest == "" {
					return x.err
				}
				return fmt.Errorf("%w%s", x.err, rest)
			}
			return fmt.Errorf("%w: %s", x.err, msg)
		}
	}
	return fmt.Errorf("%s (errno %d)", msg, int(no))
}

// Stats is what an OSD reports about itself (MsgStats).
type Stats struct {
	ID    int32     `json:"osd"`
	Epoch uint32    `json:"epoch"`
	Total uint64    `json:"kb_total"` // the data device
	Used  uint64    `json:"kb_used"`  // its blocks in use and the metadata store's files
	PGs   []PGStats `json:"pgs"`
	// HeldPGs counts the PG copies in this OSD's store: those it serves,
	// strays, and those being deleted.
	HeldPGs int  `json:"num_pgs_held"`
	Perf    Perf `json:"perf"`
	// Recovery rate over the last second (Ceph's
	// recovering_objects_per_sec, recovering_bytes_per_sec).
	RecoveryOpsRate   float64 `json:"recovering_objects_per_sec"`
	RecoveryBytesRate float64 `json:"recovering_bytes_per_sec"`
	// SlowOps counts the client ops in flight for longer than
	// osd_op_complaint_time, the oldest of them SlowOpOldest seconds old
	// (Ceph's SLOW_OPS).
	SlowOps      int     `json:"slow_ops,omitempty"`
	SlowOpOldest float64 `json:"slow_op_oldest_sec,omitempty"`
	// MetricsAddr is where the OSD serves Prometheus metrics at /metrics
	// (metrics_addr), "" if it does not.
	MetricsAddr string `json:"metrics_addr,omitempty"`
	// MetaStore is the OSD's metadata store (its LSM), nil for a store
	// without one.
	MetaStore *MetaStore `json:"meta_store,omitempty"`
}

// MetaStore describes an OSD's metadata store (Pebble's LSM), as BlueStore
// reports RocksDB's counters: flushes and compactions since the OSD
// started, those running now, the bytes compactions still owe (Pebble's
// estimated debt), the sstables a lookup may visit, and the bytes in
// sstables, in blob files (values kept apart), and of the blob files'
// values no key refers to any more.
type MetaStore struct {
	Flushes            int64  `json:"flushes"`
	Compactions        int64  `json:"compactions"`
	FlushesRunning     int64  `json:"flushes_running"`
	CompactionsRunning int64  `json:"compactions_running"`
	CompactionDebt     uint64 `json:"compaction_debt_bytes"`
	ReadAmp            int    `json:"read_amp"`
	SSTBytes           uint64 `json:"sst_bytes"`
	BlobBytes          uint64 `json:"blob_bytes"`
	BlobGarbageBytes   uint64 `json:"blob_garbage_bytes"`
}

// Idle says whether the metadata store has no flush or compaction
// running (nil: a store without one). Pebble starts a compaction as soon
// as a level is over its target, so a store that stays idle with no
// writes coming has caught up with the writes before (a blob-file
// rewrite may still start minutes later); compaction debt may be above
// zero then (Pebble counts L0's bytes, which wait for more files before
// they are compacted).
func (m *MetaStore) Idle() bool {
	return m == nil || m.FlushesRunning == 0 && m.CompactionsRunning == 0
}

// MsgOSDCommand asks an OSD to act on itself: a JSON OSDCommand → a text
// reply. Cmd "flush" writes the metadata store's memtable out; "compact"
// compacts the whole metadata store (Ceph's `ceph tell osd.N compact`);
// both answer when done.
const MsgOSDCommand uint16 = 113

// OSDCommand is a MsgOSDCommand request.
type OSDCommand struct {
	Cmd string `json:"cmd"`
}

// Perf is an OSD's op counters since it started (Ceph's OSD perf
// counters of the same names).
type Perf struct {
	OpW         uint64 `json:"op_w"`             // client writes served as primary
	OpR         uint64 `json:"op_r"`             // client reads served as primary
	OpWInBytes  uint64 `json:"op_w_in_bytes"`    // their data bytes
	OpROutBytes uint64 `json:"op_r_out_bytes"`   // data bytes read
	SubopW      uint64 `json:"subop_w"`          // replicated writes applied for a primary
	SubopWBytes uint64 `json:"subop_w_in_bytes"` // their bytes as received
	// Shard I/O: every object write this OSD's store applies for a client
	// write (the primary's own and each replica's or shard's), every shard
	// read for an erasure-coded read, and their data bytes — so the I/O
	// amplification of a workload is counted exactly (a 4 MiB write to a
	// 4+2 pool: 6 shard writes of 1 MiB).
	ShardW        uint64 `json:"shard_w"`
	ShardWBytes   uint64 `json:"shard_w_bytes"`
	ShardR        uint64 `json:"shard_r"`
	ShardRBytes   uint64 `json:"shard_r_bytes"`
	ECReconstruct uint64 `json:"ec_reconstruct"` // erasure-coded reads that decoded missing shards
	// Erasure-coded recovery on a PG's primary: objects whose missing
	// shards it rebuilt by decoding k others, and shards it copied whole
	// from the acting member holding the same shard (a backfill under
	// pg_temp: one shard read instead of k).
	ECRebuilds    uint64 `json:"ec_rebuilds"`
	ECShardCopies uint64 `json:"ec_shard_copies"`
	// Objects (and their data bytes) this OSD's store installed whole for
	// recovery, backfill or repair (Ceph's recovery_ops, recovery_bytes):
	// the data a failure or a rebalance moved.
	RecoveryOps   uint64 `json:"recovery_ops"`
	RecoveryBytes uint64 `json:"recovery_bytes"`
	// Background operations (recovery and backfill copies, scrub chunks,
	// stray deletion batches) the I/O scheduler held back before they
	// could start (osd_op_queue = mclock_scheduler).
	MClockWaits uint64 `json:"mclock_background_waits"`
	// RecoveryPreempted counts recovery reservations this OSD's PGs gave
	// back to PGs of higher priority (degraded before misplaced).
	RecoveryPreempted uint64 `json:"recovery_preempted"`
	// SnapTrimmed counts the objects this OSD's snap trimmer rewrote as
	// primary (removed snaps taken out of their clones).
	SnapTrimmed uint64 `json:"snaptrim_objects"`
	// OpWPipelined counts client writes this OSD prepared as primary
	// while another write to the same object was still in flight (blind
	// writes on a replicated PG: osd/opexec.Blind), instead of waiting for
	// it to commit everywhere.
	OpWPipelined uint64 `json:"op_w_pipelined"`
	// MClockCapacityIOPS is the random 4 KiB write capacity the I/O
	// scheduler charges operations against: measured at the OSD's first
	// start, or osd_mclock_max_capacity_iops_* (a gauge, not a counter).
	MClockCapacityIOPS float64 `json:"mclock_capacity_iops"`
	// MClockScale is the fraction of that capacity the I/O scheduler
	// gives the OSD now, in [1/16, 1]: below 1 while clients wait for CPU
	// that background work takes (osd_mclock_sched_latency_target; a
	// gauge).
	MClockScale float64 `json:"mclock_scale"`
	// OpWLatency and OpRLatency are the summed latencies (seconds) of the
	// OpW writes and OpR reads: a mean over an interval is the change of
	// the sum over the change of the count (Ceph's op_w_latency and
	// op_r_latency, avgcount and sum).
	OpWLatency float64 `json:"op_w_latency_sum"`
	OpRLatency float64 `json:"op_r_latency_sum"`
}

// PGStats is one PG as its primary sees it.
type PGStats struct {
	PGID   string  `json:"pgid"`
	State  string  `json:"state"`
	Acting []int32 `json:"acting"`
	// Up: the OSDs that hold or will hold the PG's copies — the acting
	// set and, while a pg_temp keeps it serving, the backfill targets.
	Up         []int32 `json:"up,omitempty"`
	LastUpdate string  `json:"last_update"`
	Objects    int64   `json:"num_objects"`
	Bytes      int64   `json:"num_bytes"`
	// Scrub: when the last light and deep scrubs finished (zero: never)
	// and the errors the last one found (Ceph's last_scrub_stamp,
	// last_deep_scrub_stamp and num_scrub_errors).
	LastScrub     time.Time `json:"last_scrub_stamp"`
	LastDeepScrub time.Time `json:"last_deep_scrub_stamp"`
	ScrubErrors   int       `json:"num_scrub_errors"`
	// ToRecover: the object copies the acting members still lack (a
	// replicated PG recovers them while it serves I/O; an erasure-coded
	// one rebuilds its shards while peering);
	// Size: the pool's replica (or k+m shard) count, against which an
	// undersized acting set's missing copies are counted.
	ToRecover int64 `json:"objects_to_recover"`
	// Misplaced: those of ToRecover whose object still has the pool's
	// size of current copies, on former members (moving, not at risk).
	Misplaced int64 `json:"objects_misplaced"`
	Size      int   `json:"pool_size"`
	// BlockedBy: while the PG is down, what its peering waits for (the
	// OSDs of an earlier interval that may hold its newest writes; Ceph's
	// peering_blocked_by in `ceph pg query`).
	BlockedBy string `json:"blocked_by,omitempty"`
	// RecoveryTotal is the object copies the acting members lacked when
	// the PG's current recovery or backfill was planned (at peering, at
	// RecoveryStart): with ToRecover, how far it is (0: none planned).
	RecoveryTotal int64     `json:"recovery_total,omitempty"`
	RecoveryStart time.Time `json:"recovery_start,omitzero"`
	// ScrubObjects is the objects the running scrub has compared since
	// ScrubStart (of Objects; 0 while none runs).
	ScrubObjects int64     `json:"scrub_objects,omitempty"`
	ScrubStart   time.Time `json:"scrub_start,omitzero"`
}

// MsgPGCommand asks a PG's primary to act on the PG: a JSON PGCommand →
// JSON reply (Ceph's `ceph pg scrub|deep-scrub|repair` and `rados
// list-inconsistent-obj`).
const MsgPGCommand uint16 = 111

// PGCommand is a MsgPGCommand request. Cmd is "scrub", "deep-scrub" or
// "repair" (each queues the work and answers at once) or
// "list-inconsistent" (answers Inconsistents).
type PGCommand struct {
	PGID string `json:"pgid"`
	Cmd  string `json:"cmd"`
}

// Inconsistents is what the last scrub of a PG found (`shoal pg
// list-inconsistent`, as `rados list-inconsistent-obj`): Epoch is the OSD
// map epoch of that scrub.
type Inconsistents struct {
	Epoch         uint32         `json:"epoch"`
	Inconsistents []Inconsistent `json:"inconsistents"`
}

// Inconsistent is one object whose copies disagree: each shard's (OSD's)
// view of it and its errors (Ceph's names: missing, read_error,
// size_mismatch, data_digest_mismatch, omap_digest_mismatch,
// attr_value_mismatch), the copy chosen as authoritative (-1: none
// could be), and the errors of all shards together.
type Inconsistent struct {
	Object      string       `json:"object"`
	AuthOSD     int32        `json:"selected_osd"`
	UnionErrors []string     `json:"union_shard_errors"`
	Shards      []ScrubShard `json:"shards"`
}

// ScrubShard is one OSD's copy of an object in a scrub.
type ScrubShard struct {
	OSD        int32    `json:"osd"`
	Shard      int      `json:"shard"` // position in the acting set
	Errors     []string `json:"errors"`
	Size       uint64   `json:"size"`
	DataDigest string   `json:"data_digest,omitempty"` // crc32c, deep scrubs
	OmapDigest string   `json:"omap_digest"`
	Detail     string   `json:"detail,omitempty"`
}

// MsgList lists a PG's objects (Ceph's PGLS): ListRequest → ListReply.
const MsgList uint16 = 110

// ListRequest asks a PG's primary for up to Max object names after After.
type ListRequest struct {
	Pool  int64
	Seed  uint32
	After string
	Max   uint32
	Snap  uint64 // list the objects that existed at this snap (0: those that exist now)
}

// Encode is the wire form.
func (r *ListRequest) Encode() []byte {
	e := wire.NewEncoder(nil)
	e.I64(r.Pool)
	e.U32(r.Seed)
	e.String(r.After)
	e.U32(r.Max)
	e.U64(r.Snap)
	return e.Bytes()
}

// DecodeListRequest reads ListRequest.Encode's output.
func DecodeListRequest(b []byte) (*ListRequest, error) {
	d := wire.NewDecoder(b)
	r := &ListRequest{Pool: d.I64(), Seed: d.U32(), After: d.String(), Max: d.U32()}
	if d.Remaining() >= 8 { // absent from a client before snapshots
		r.Snap = d.U64()
	}
	return r, d.Err()
}

// ListReply is a page of a PG's object names, in name order. Next, when
// not empty, is where the next page starts (the request's After): the
// OSD examined Max names, of which some may not be listed (internal
// objects, removed heads kept for their snapshots), so a short page does
// not mean the end.
type ListReply struct {
	Names []string
	Next  string
}

// Encode is the wire form.
func (r *ListReply) Encode() []byte {
	e := wire.NewEncoder(nil)
	e.Strings(r.Names)
	e.String(r.Next)
	return e.Bytes()
}

// DecodeListReply reads ListReply.Encode's output.
func DecodeListReply(b []byte) (*ListReply, error) {
	d := wire.NewDecoder(b)
	r := &ListReply{Names: d.Strings(), Next: d.String()}
	return r, d.Err()
}
