package osd

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
)

// Version orders a PG's writes: Seq counts every write the PG has applied
// (across primaries); Epoch is the OSD map epoch of the primary that
// ordered it, which tells entries from a deposed primary apart from those
// of its successor (Ceph's eversion_t).
type Version struct {
	Epoch uint32
	Seq   uint64
}

func (v Version) String() string { return fmt.Sprintf("%d'%d", v.Epoch, v.Seq) }

// Less orders versions by Seq, then Epoch.
func (v Version) Less(w Version) bool {
	return v.Seq < w.Seq || (v.Seq == w.Seq && v.Epoch < w.Epoch)
}

// newestFirst orders versions newest first (a slices.SortFunc comparison).
func newestFirst(a, b Version) int {
	switch {
	case b.Less(a):
		return -1
	case a.Less(b):
		return 1
	}
	return 0
}

func (v Version) bytes() []byte {
	b := binary.LittleEndian.AppendUint32(nil, v.Epoch)
	return binary.LittleEndian.AppendUint64(b, v.Seq)
}

func versionFrom(b []byte) Version {
	if len(b) != 12 {
		return Version{}
	}
	return Version{Epoch: binary.LittleEndian.Uint32(b), Seq: binary.LittleEndian.Uint64(b[4:])}
}

// Log entry operations.
const (
	logModify uint8 = 1
	logDelete uint8 = 2
)

// LogEntry records one write of a PG: which object it changed and which
// client request did it (so a resent request is answered, not re-applied).
type LogEntry struct {
	Ver    Version
	Op     uint8
	OID    string
	Client uint64
	Tid    uint64
	// Stash (erasure-coded PGs, this OSD's copy of the entry only): the
	// object's state before the write was kept as stashName(Seq), so the
	// write can be rolled back until the primary rolls it forward.
	Stash bool
}

func (l *LogEntry) encode(e *wire.Encoder) {
	e.U32(l.Ver.Epoch)
	e.U64(l.Ver.Seq)
	e.U8(l.Op)
	e.String(l.OID)
	e.U64(l.Client)
	e.U64(l.Tid)
	e.Bool(l.Stash)
}

func decodeLogEntry(d *wire.Decoder) LogEntry {
	return LogEntry{Ver: Version{Epoch: d.U32(), Seq: d.U64()}, Op: d.U8(), OID: d.String(), Client: d.U64(), Tid: d.U64(), Stash: d.Bool()}
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

func (i *Info) encode(e *wire.Encoder) {
	e.U32(i.LastUpdate.Epoch)
	e.U64(i.LastUpdate.Seq)
	e.U32(i.LogTail.Epoch)
	e.U64(i.LogTail.Seq)
	e.I64(i.Objects)
	e.I64(i.Bytes)
	e.U32(uint32(i.Shard))
	e.U64(i.RolledForward)
}

func decodeInfo(d *wire.Decoder) Info {
	return Info{LastUpdate: Version{d.U32(), d.U64()}, LogTail: Version{d.U32(), d.U64()}, Objects: d.I64(), Bytes: d.I64(),
		Shard: int32(d.U32()), RolledForward: d.U64()}
}

// The PG's metadata (info and log) lives in the "meta" collection, one
// object per PG, so a PG's own collection holds only client objects.
const metaColl objectstore.Coll = "meta"

func metaOID(c objectstore.Coll) string { return "pg_" + string(c) }

func logKey(seq uint64) string { return fmt.Sprintf("l%020d", seq) }

// Internal attributes of client objects; client xattrs are stored as
// "u." + name so the two never collide.
const (
	attrVersion = "s.v"
	attrMtime   = "s.m"
	userAttr    = "u."
)

// pgLog is the in-memory copy of a PG's log, oldest first.
type pgLog struct {
	info    Info
	entries []LogEntry
	reqs    map[[2]uint64]Version
	// missing holds the objects this copy lacks, or holds older than its
	// log says, since it adopted an authoritative log at peering, each
	// with the version a copy installed by recovery must be at least as
	// new as (Ceph's pg_missing_t and its need): the log's head when
	// adopted, raised by each write logged here without being applied.
	// They are not read or written here until recovery installs them.
	// Persisted beside the log ("m"+name keys), so a restart never
	// mistakes a stale copy for a current one.
	missing map[string]Version
}

func newPGLog() *pgLog { return &pgLog{reqs: map[[2]uint64]Version{}, missing: map[string]Version{}} }

func missingKey(oid string) string { return "m" + oid }

func (l *pgLog) lacks(oid string) bool {
	_, ok := l.missing[oid]
	return ok
}

// need records, in memory and in t, that this copy of oid must be
// replaced by one at least as new as v.
func (l *pgLog) need(t *objectstore.Transaction, c objectstore.Coll, oid string, v Version) {
	l.missing[oid] = v
	t.OmapSet(metaColl, metaOID(c), []omap.KV{{Key: missingKey(oid), Value: v.bytes()}})
}

// missingNames lists the objects this copy lacks.
func (l *pgLog) missingNames() []string { return slices.Sorted(maps.Keys(l.missing)) }

// add appends e to the log and to t (with the new info); it trims the log
// to min entries once it passes max.
func (l *pgLog) add(t *objectstore.Transaction, c objectstore.Coll, e LogEntry, min, max int) {
	l.entries = append(l.entries, e)
	l.info.LastUpdate = e.Ver
	if e.Client != 0 {
		l.reqs[[2]uint64{e.Client, e.Tid}] = e.Ver
	}
	enc := wire.NewEncoder(nil)
	e.encode(enc)
	kvs := []omap.KV{{Key: logKey(e.Ver.Seq), Value: enc.Bytes()}}
	if len(l.entries) > max {
		drop := l.entries[:len(l.entries)-min]
		keys := make([]string, len(drop))
		for i, d := range drop {
			keys[i] = logKey(d.Ver.Seq)
			delete(l.reqs, [2]uint64{d.Client, d.Tid})
			if d.Stash && d.Ver.Seq > l.info.RolledForward {
				t.Remove(c, stashName(d.Ver.Seq))
			}
		}
		l.info.LogTail = drop[len(drop)-1].Ver
		l.entries = append([]LogEntry(nil), l.entries[len(drop):]...)
		t.OmapRm(metaColl, metaOID(c), keys)
	}
	t.OmapSet(metaColl, metaOID(c), kvs)
	l.persistInfo(t, c)
}

func (l *pgLog) persistInfo(t *objectstore.Transaction, c objectstore.Coll) {
	enc := wire.NewEncoder(nil)
	l.info.encode(enc)
	t.SetAttr(metaColl, metaOID(c), "info", enc.Bytes())
}

// replace makes the log a copy of an authoritative one, with the objects
// this copy lacks in it, in memory and in t.
//
// A copy of an object it lacks must be at least as new as the log's head.
func (l *pgLog) replace(t *objectstore.Transaction, c objectstore.Coll, info Info, entries []LogEntry, missing []string) {
	l.info = info
	l.entries = append([]LogEntry(nil), entries...)
	l.reqs = map[[2]uint64]Version{}
	l.missing = map[string]Version{}
	t.Touch(metaColl, metaOID(c)) // a copy that never wrote has none yet
	t.OmapClear(metaColl, metaOID(c))
	kvs := make([]omap.KV, 0, len(entries)+len(missing))
	for _, oid := range missing {
		l.missing[oid] = info.LastUpdate
		kvs = append(kvs, omap.KV{Key: missingKey(oid), Value: info.LastUpdate.bytes()})
	}
	for _, e := range entries {
		if e.Client != 0 {
			l.reqs[[2]uint64{e.Client, e.Tid}] = e.Ver
		}
		enc := wire.NewEncoder(nil)
		e.encode(enc)
		kvs = append(kvs, omap.KV{Key: logKey(e.Ver.Seq), Value: enc.Bytes()})
	}
	if len(kvs) > 0 {
		t.OmapSet(metaColl, metaOID(c), kvs)
	}
	l.persistInfo(t, c)
}

// loadPGLog reads a PG's info and log from the store.
func loadPGLog(s objectstore.Store, c objectstore.Coll) (*pgLog, error) {
	l := newPGLog()
	b, err := s.GetAttr(metaColl, metaOID(c), "info")
	if err != nil {
		return l, nil // a PG that never wrote
	}
	d := wire.NewDecoder(b)
	l.info = decodeInfo(d)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("pg %s info: %w", c, err)
	}
	for after := ""; ; {
		kvs, more, err := s.OmapList(metaColl, metaOID(c), after, "m", 1024)
		if err != nil {
			return nil, fmt.Errorf("pg %s missing set: %w", c, err)
		}
		for _, kv := range kvs {
			l.missing[kv.Key[1:]] = versionFrom(kv.Value)
			after = kv.Key
		}
		if !more || len(kvs) == 0 {
			break
		}
	}
	after := ""
	for {
		kvs, more, err := s.OmapList(metaColl, metaOID(c), after, "l", 1024)
		if err != nil {
			return nil, fmt.Errorf("pg %s log: %w", c, err)
		}
		for _, kv := range kvs {
			d := wire.NewDecoder(kv.Value)
			e := decodeLogEntry(d)
			if err := d.Err(); err != nil {
				return nil, fmt.Errorf("pg %s log entry %s: %w", c, kv.Key, err)
			}
			l.entries = append(l.entries, e)
			if e.Client != 0 {
				l.reqs[[2]uint64{e.Client, e.Tid}] = e.Ver
			}
			after = kv.Key
		}
		if !more {
			return l, nil
		}
	}
}

// since returns the objects changed after v if the log covers v (v is an
// entry of the log, or its tail), and whether it does.
func (l *pgLog) since(v Version) (map[string]bool, bool) {
	if v == l.info.LastUpdate {
		return map[string]bool{}, true
	}
	start := -1
	if v == l.info.LogTail {
		start = 0
	} else {
		for i, e := range l.entries {
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
	for _, e := range l.entries[start:] {
		out[e.OID] = true
	}
	return out, true
}
