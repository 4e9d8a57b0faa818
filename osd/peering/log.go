package peering

import (
	"encoding/binary"
	"fmt"

	"github.com/shoal-project/shoal/internal/wire"
)

// Version orders a PG's writes: Seq counts every write the PG has applied
// (across primaries); Epoch is the OSD map epoch of the primary that
// ordered it, which tells entries from a deposed primary apart from those
// of its successor (Ceph's eversion_t).
type Version struct {
	Epoch uint32 // the ordering primary's map epoch
	Seq   uint64 // the PG's write count
}

func (v Version) String() string { return fmt.Sprintf("%d'%d", v.Epoch, v.Seq) }

// Less orders versions by Seq, then Epoch.
func (v Version) Less(w Version) bool {
	return v.Seq < w.Seq || (v.Seq == w.Seq && v.Epoch < w.Epoch)
}

// NewestFirst orders versions newest first (a slices.SortFunc comparison).
func NewestFirst(a, b Version) int {
	switch {
	case b.Less(a):
		return -1
	case a.Less(b):
		return 1
	}
	return 0
}

// Bytes is the version's 12-byte form in an object attribute (epoch,
// then seq, little-endian).
func (v Version) Bytes() []byte {
	b := binary.LittleEndian.AppendUint32(nil, v.Epoch)
	return binary.LittleEndian.AppendUint64(b, v.Seq)
}

// VersionFrom reads what Bytes wrote; anything else is the zero version.
func VersionFrom(b []byte) Version {
	if len(b) != 12 {
		return Version{}
	}
	return Version{Epoch: binary.LittleEndian.Uint32(b), Seq: binary.LittleEndian.Uint64(b[4:])}
}

// Log entry operations.
const (
	LogModify uint8 = 1
	LogDelete uint8 = 2
)

// LogEntry records one write of a PG: which object it changed and which
// client request did it (so a resent request is answered, not re-applied)
// (Ceph's pg_log_entry_t).
type LogEntry struct {
	Ver    Version
	Op     uint8
	OID    string
	Client uint64
	Tid    uint64
	// Stash (erasure-coded PGs, one OSD's copy of the entry only): the
	// object's state before the write was kept for rollback, until the
	// primary rolls the write forward.
	Stash bool
	// Stashed and Created (erasure-coded PGs, one OSD's copy only) are
	// the other objects of the PG the write changed — a head's snapshot
	// clones it made or trimmed: Stashed existed before it, and their
	// state then is kept for rollback as Stash keeps OID's; Created did
	// not, and a rollback removes them.
	Stashed, Created []string
}

// Encode appends the entry's wire form.
func (l *LogEntry) Encode(e *wire.Encoder) {
	e.U32(l.Ver.Epoch)
	e.U64(l.Ver.Seq)
	e.U8(l.Op)
	e.String(l.OID)
	e.U64(l.Client)
	e.U64(l.Tid)
	e.Bool(l.Stash)
	e.Strings(l.Stashed)
	e.Strings(l.Created)
}

// DecodeLogEntry reads what Encode wrote (an error stays in d). An
// entry stored before Stashed and Created existed ends at Stash: a
// stored entry is the whole of its record, so nothing remains then.
func DecodeLogEntry(d *wire.Decoder) LogEntry {
	e := LogEntry{Ver: Version{Epoch: d.U32(), Seq: d.U64()}, Op: d.U8(), OID: d.String(), Client: d.U64(), Tid: d.U64(), Stash: d.Bool()}
	if d.Remaining() > 0 {
		e.Stashed, e.Created = d.Strings(), d.Strings()
	}
	return e
}

// Info is a PG's persistent summary on one OSD (Ceph's pg_info_t): the
// newest write applied, the oldest the log still covers, and the PG's
// object and byte counts.
type Info struct {
	LastUpdate Version
	LogTail    Version // entries after this are in the log
	Objects    int64
	Bytes      int64
	// Erasure-coded PGs: the shard this OSD's copy holds (its position in
	// the acting set when it was written), and the newest write known to
	// be on every shard — writes up to it can no longer be rolled back
	// (Ceph's roll_forward_to).
	Shard         int32
	RolledForward uint64
}

// NoCopy is the Shard of the Info an OSD answers with for a PG it holds
// no copy of (it never had one, or deleted it): unlike an empty copy of
// a shard, it holds nothing of any earlier interval.
const NoCopy int32 = -1

// Encode appends the info's wire form.
func (i *Info) Encode(e *wire.Encoder) {
	e.U32(i.LastUpdate.Epoch)
	e.U64(i.LastUpdate.Seq)
	e.U32(i.LogTail.Epoch)
	e.U64(i.LogTail.Seq)
	e.I64(i.Objects)
	e.I64(i.Bytes)
	e.U32(uint32(i.Shard))
	e.U64(i.RolledForward)
}

// DecodeInfo reads what Encode wrote (an error stays in d).
func DecodeInfo(d *wire.Decoder) Info {
	return Info{LastUpdate: Version{d.U32(), d.U64()}, LogTail: Version{d.U32(), d.U64()}, Objects: d.I64(), Bytes: d.I64(),
		Shard: int32(d.U32()), RolledForward: d.U64()}
}

// Since returns the objects a log (its info and entries, oldest first)
// says changed after v, if the log covers v — v is one of its entries,
// its tail or its head — and whether it does.
func Since(info Info, entries []LogEntry, v Version) (map[string]bool, bool) {
	if v == info.LastUpdate {
		return map[string]bool{}, true
	}
	start := -1
	if v == info.LogTail {
		start = 0
	} else {
		for i, e := range entries {
			if e.Ver == v {
				start = i + 1
				break
			}
		}
	}
	if start < 0 {
		return nil, false
	}
	out := map[string]bool{}
	for _, e := range entries[start:] {
		out[e.OID] = true
	}
	return out, true
}
