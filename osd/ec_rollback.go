package osd

// Erasure-coded rollback: each shard keeps the state an object had
// before a write (a stash) until the write is on every shard, so that
// peering can undo writes fewer than k shards hold.

import (
	"encoding/binary"
	"fmt"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdop"
)

// stash adds to t, before a write of e to an object that exists, the
// keeping of its current state for rollback, and marks e (an
// erasure-coded PG's write). The caller knows whether the object exists
// (the primary from the request's execution, a shard from a Stat before it
// takes the PG lock: the object's previous write committed before this one
// was prepared).
func (pg *PG) stash(t *objectstore.Transaction, e *LogEntry, exists bool, write *objectstore.Transaction) {
	if !exists {
		return
	}
	e.Stash = true
	if from, ok := write.AppendFrom(pg.coll, e.OID); ok {
		// appends keep only the metadata (rollback truncates)
		t.StashForRollback(pg.coll, e.OID, stashName(e.Ver.Seq), from)
		return
	}
	t.Clone(pg.coll, e.OID, stashName(e.Ver.Seq))
}

// rollForward drops the stashes of writes up to seq, which every shard
// holds (pg.mu is held).
func (pg *PG) rollForward(t *objectstore.Transaction, seq uint64) {
	if seq <= pg.log.info.RolledForward {
		return
	}
	for _, e := range pg.log.entries {
		if e.Stash && e.Ver.Seq > pg.log.info.RolledForward && e.Ver.Seq <= seq {
			t.Remove(pg.coll, stashName(e.Ver.Seq))
		}
	}
	pg.log.info.RolledForward = seq
}

// rollback undoes this copy's writes after v, newest first, from their
// stashes, and cuts the log back to v.
func (pg *PG) rollback(iv uint64, v Version) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.Interval.ID != iv {
		return fmt.Errorf("%w: interval changed", osdop.ErrRetry)
	}
	var t objectstore.Transaction
	entries := pg.log.entries
	i := len(entries)
	attrNames := map[string]map[string]bool{} // per object: every attribute it may hold at this point of t
	// the PG's object and byte counts follow the objects rolled back: from
	// their state now to the one before their oldest write undone
	var dObjects, dBytes int64
	rolledTo := map[string]undone{}
	for i > 0 && v.Less(entries[i-1].Ver) {
		e := entries[i-1]
		if e.Ver.Seq <= pg.log.info.RolledForward {
			return fmt.Errorf("pg %s: cannot roll back %s on osd.%d: it was on every shard (rolled forward to %d)", pg.id, e.Ver, pg.osd.id, pg.log.info.RolledForward)
		}
		if _, seen := rolledTo[e.OID]; !seen {
			if o, err := pg.loadECObject(e.OID); err == nil && o.Exists {
				dObjects, dBytes = dObjects-1, dBytes-int64(o.Size)
			}
		}
		before, err := pg.undo(&t, e, attrNames)
		if err != nil {
			return err
		}
		rolledTo[e.OID] = before // newest first: the last one stays
		i--
	}
	if i == len(entries) {
		return nil
	}
	for _, u := range rolledTo {
		if u.exists {
			dObjects, dBytes = dObjects+1, dBytes+int64(u.size)
		}
	}
	pg.osd.log.Info("rolling back writes no k shards hold", "pg", pg.id, "from", pg.log.info.LastUpdate, "to", v, "entries", len(entries)-i)
	info := pg.log.info
	info.LastUpdate = v
	info.Objects += dObjects
	info.Bytes += dBytes
	pg.log.replace(&t, pg.coll, info, entries[:i], pg.log.missingNames())
	if err := pg.osd.store.Apply(&t); err != nil {
		return fmt.Errorf("pg %s: rollback: %w", pg.id, storeErr(err))
	}
	pg.applied = v
	pg.notify()
	return nil
}

// undone is an object's state a rollback restores: whether it exists,
// and its logical size.
type undone struct {
	exists bool
	size   uint64
}

// undo adds to t what restores e.OID to its state before e, and returns
// that state: its stash (a clone, or for appends the metadata: truncate
// and restore attributes), or no object. attrNames collects the
// attribute names the object may have in t so far, so a metadata
// restore removes the ones set since.
func (pg *PG) undo(t *objectstore.Transaction, e LogEntry, attrNames map[string]map[string]bool) (undone, error) {
	st, stash := pg.osd.store, stashName(e.Ver.Seq)
	names := attrNames[e.OID]
	if names == nil {
		names = map[string]bool{}
		attrNames[e.OID] = names
		cur, _ := st.Attrs(pg.coll, e.OID) // none if it does not exist
		for k := range cur {
			names[k] = true
		}
	}
	if !e.Stash {
		t.Remove(pg.coll, e.OID)
		clear(names)
		return undone{}, nil
	}
	saved, err := st.Attrs(pg.coll, stash)
	if err != nil {
		return undone{}, fmt.Errorf("pg %s: rollback %s: stash of %s: %w", pg.id, e.Ver, e.OID, storeErr(err))
	}
	before := undone{exists: true}
	if b := saved[attrECSize]; len(b) == 8 {
		before.size = binary.LittleEndian.Uint64(b)
	}
	size, meta := saved[objectstore.StashMetaAttr]
	delete(saved, objectstore.StashMetaAttr)
	if !meta {
		t.Remove(pg.coll, e.OID)
		t.Clone(pg.coll, stash, e.OID)
	} else {
		if len(size) != 8 {
			return undone{}, fmt.Errorf("pg %s: rollback %s: stash of %s: bad size record", pg.id, e.Ver, e.OID)
		}
		t.Truncate(pg.coll, e.OID, binary.LittleEndian.Uint64(size))
		for k := range names {
			if _, ok := saved[k]; !ok {
				t.RmAttr(pg.coll, e.OID, k)
			}
		}
		for k, v := range saved {
			t.SetAttr(pg.coll, e.OID, k, v)
		}
	}
	clear(names)
	for k := range saved {
		names[k] = true
	}
	t.Remove(pg.coll, stash)
	return before, nil
}

func (pg *PG) handleECRollback(pm *peerMsg) error {
	if err := pg.checkWrite(pm); err != nil {
		return err
	}
	return pg.rollback(pm.Interval, pm.Prev)
}
