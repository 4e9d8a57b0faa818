package osd

import (
	"fmt"
	"maps"
	"slices"

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
)

// The PG log's types are the peering core's (osd/peering).
type (
	Version  = peering.Version
	LogEntry = peering.LogEntry
	Info     = peering.Info
)

// Log entry operations.
const (
	logModify = peering.LogModify
	logDelete = peering.LogDelete
)

// The PG's metadata (info and log) lives in the "meta" collection, one
// object per PG, so a PG's own collection holds only client objects.
const metaColl objectstore.Coll = "meta"

func metaOID(c objectstore.Coll) string { return "pg_" + string(c) }

func logKey(seq uint64) string { return fmt.Sprintf("l%020d", seq) }

// Internal attributes of client objects; client xattrs are stored as
// "u." + name so the two never collide.
const (
	attrVersion = opexec.AttrVersion
	attrMtime   = opexec.AttrMtime
	userAttr    = opexec.UserAttr
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
	// dups are requests, by client and tid, whose log entries a merge
	// dropped (merge.go) with the versions they were logged at, answered
	// as duplicates like reqs until the log first trims (Ceph's merged
	// log keeps its dups too). Persisted beside the log ("d" keys).
	dups map[[2]uint64]Version
}

func dupKey(k [2]uint64) string { return fmt.Sprintf("d%016x%016x", k[0], k[1]) }

// logged returns the version client's request tid was logged at, if the
// log (or a merge's dups) holds it.
func (l *pgLog) logged(client, tid uint64) (Version, bool) {
	k := [2]uint64{client, tid}
	if v, ok := l.reqs[k]; ok {
		return v, true
	}
	v, ok := l.dups[k]
	return v, ok
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
	t.OmapSet(metaColl, metaOID(c), []omap.KV{{Key: missingKey(oid), Value: v.Bytes()}})
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
	kvs := []omap.KV{{Key: logKey(e.Ver.Seq), Value: encodeEntry(e)}}
	if len(l.entries) > max {
		drop := l.entries[:len(l.entries)-min]
		keys := make([]string, len(drop))
		for i, d := range drop {
			keys[i] = logKey(d.Ver.Seq)
			delete(l.reqs, [2]uint64{d.Client, d.Tid})
			if d.Ver.Seq > l.info.RolledForward {
				dropStashes(t, c, d)
			}
		}
		l.info.LogTail = drop[len(drop)-1].Ver
		l.entries = append([]LogEntry(nil), l.entries[len(drop):]...)
		for k := range l.dups { // a merge's dups go at the first trim after it
			keys = append(keys, dupKey(k))
		}
		l.dups = nil
		t.OmapRm(metaColl, metaOID(c), keys)
	}
	t.OmapSet(metaColl, metaOID(c), kvs)
	l.persistInfo(t, c)
}

func (l *pgLog) persistInfo(t *objectstore.Transaction, c objectstore.Coll) {
	enc := wire.NewEncoder(nil)
	l.info.Encode(enc)
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
	for _, oid := range missing {
		l.missing[oid] = info.LastUpdate
	}
	for _, e := range entries {
		if e.Client != 0 {
			l.reqs[[2]uint64{e.Client, e.Tid}] = e.Ver
		}
	}
	l.persistAll(t, c)
}

func encodeEntry(e LogEntry) []byte {
	enc := wire.NewEncoder(nil)
	e.Encode(enc)
	return enc.Bytes()
}

// persistAll writes the whole log — info, entries and missing objects
// with their versions — as the PG's metadata in t, replacing what was
// there.
func (l *pgLog) persistAll(t *objectstore.Transaction, c objectstore.Coll) {
	t.Touch(metaColl, metaOID(c)) // a copy that never wrote has none yet
	t.OmapClear(metaColl, metaOID(c))
	kvs := make([]omap.KV, 0, len(l.entries)+len(l.missing))
	for oid, v := range l.missing {
		kvs = append(kvs, omap.KV{Key: missingKey(oid), Value: v.Bytes()})
	}
	for _, e := range l.entries {
		kvs = append(kvs, omap.KV{Key: logKey(e.Ver.Seq), Value: encodeEntry(e)})
	}
	for k, v := range l.dups {
		kvs = append(kvs, omap.KV{Key: dupKey(k), Value: v.Bytes()})
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
	l.info = peering.DecodeInfo(d)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("pg %s info: %w", c, err)
	}
	for after := ""; ; {
		kvs, more, err := s.OmapList(metaColl, metaOID(c), after, "m", 1024)
		if err != nil {
			return nil, fmt.Errorf("pg %s missing set: %w", c, err)
		}
		for _, kv := range kvs {
			l.missing[kv.Key[1:]] = peering.VersionFrom(kv.Value)
			after = kv.Key
		}
		if !more || len(kvs) == 0 {
			break
		}
	}
	for after := ""; ; {
		kvs, more, err := s.OmapList(metaColl, metaOID(c), after, "d", 1024)
		if err != nil {
			return nil, fmt.Errorf("pg %s dups: %w", c, err)
		}
		for _, kv := range kvs {
			var k [2]uint64
			if _, err := fmt.Sscanf(kv.Key, "d%016x%016x", &k[0], &k[1]); err != nil {
				return nil, fmt.Errorf("pg %s dup %q: %w", c, kv.Key, err)
			}
			if l.dups == nil {
				l.dups = map[[2]uint64]Version{}
			}
			l.dups[k] = peering.VersionFrom(kv.Value)
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
			e := peering.DecodeLogEntry(d)
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
	return peering.Since(l.info, l.entries, v)
}
