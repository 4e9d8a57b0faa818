package osd

// Erasure-coded rollback: each shard keeps the state an object had
// before a write (a stash) until the write is on every shard, so that
// peering can undo writes fewer than k shards hold.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdop"
)

// stash adds to t, before a write of e, the keeping of what the write
// changes for rollback, and marks e (an erasure-coded PG's write): the
// state of e.OID if it exists (Stash), and of every other object the
// write changes — a head's snapshot clones, made or trimmed — that
// exists (Stashed; the others are Created). The snap mapper's index is
// not stashed: a rollback indexes the clones it restores (undo). The
// caller knows whether e.OID exists (the primary from the request's
// execution, a shard from a Stat before it takes the PG lock: the
// object's previous write committed before this one was prepared); the
// other objects, which only snapshot writes touch, are looked up here.
func (pg *PG) stash(t *objectstore.Transaction, e *LogEntry, exists bool, write *objectstore.Transaction) {
	for _, oid := range write.Objects(pg.coll) {
		if oid == e.OID || oid == opexec.SnapMapperOID {
			continue
		}
		if _, err := pg.osd.store.Stat(pg.coll, oid); errors.Is(err, objectstore.ErrNotFound) {
			e.Created = append(e.Created, oid)
			continue
		}
		t.Clone(pg.coll, oid, extraStashName(e.Ver.Seq, len(e.Stashed)))
		e.Stashed = append(e.Stashed, oid)
	}
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

// extraStashName names the stash of e.Stashed[i] for the write of seq.
func extraStashName(seq uint64, i int) string {
	return stashName(seq) + "." + strconv.Itoa(i+1)
}

// stashNames are the stash objects write e left on this copy.
func stashNames(e LogEntry) []string {
	var names []string
	if e.Stash {
		names = append(names, stashName(e.Ver.Seq))
	}
	for i := range e.Stashed {
		names = append(names, extraStashName(e.Ver.Seq, i))
	}
	return names
}

// dropStashes adds to t the removal of e's stashes.
func dropStashes(t *objectstore.Transaction, c objectstore.Coll, e LogEntry) {
	for _, n := range stashNames(e) {
		t.Remove(c, n)
	}
}

// rollForward drops the stashes of writes up to seq, which every shard
// holds (pg.mu is held).
func (pg *PG) rollForward(t *objectstore.Transaction, seq uint64) {
	if seq <= pg.log.info.RolledForward {
		return
	}
	for _, e := range pg.log.entries {
		if e.Ver.Seq > pg.log.info.RolledForward && e.Ver.Seq <= seq {
			dropStashes(t, pg.coll, e)
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
	u := &undoState{pg: pg, live: map[string]bool{}, attrNames: map[string]map[string]bool{}}
	// the PG's object and byte counts follow the objects rolled back: from
	// their state now to the one before their oldest write undone
	var dObjects, dBytes int64
	rolledTo, was := map[string]undone{}, map[string]undone{}
	for i > 0 && v.Less(entries[i-1].Ver) {
		e := entries[i-1]
		if e.Ver.Seq <= pg.log.info.RolledForward {
			return fmt.Errorf("pg %s: cannot roll back %s on osd.%d: it was on every shard (rolled forward to %d)", pg.id, e.Ver, pg.osd.id, pg.log.info.RolledForward)
		}
		if _, seen := rolledTo[e.OID]; !seen {
			now, err := pg.usageNow(e.OID)
			if err != nil {
				return err
			}
			dObjects, dBytes = dObjects-now.objects(), dBytes-now.bytes()
			was[e.OID] = now
		}
		before, err := u.undo(&t, e)
		if err != nil {
			return err
		}
		rolledTo[e.OID] = before // newest first: the last one stays
		i--
	}
	if i == len(entries) {
		return nil
	}
	for oid, b := range rolledTo {
		dObjects, dBytes = dObjects+b.objects(), dBytes+b.bytes()
		// the snap mapper indexes the clones restored, not those undone
		if now := was[oid].snaps; now != nil {
			for _, c := range now.Clones {
				opexec.UnindexClone(&t, pg.coll, oid, c.Snaps)
			}
		}
		if b.snaps != nil {
			for _, c := range b.snaps.Clones {
				opexec.IndexClone(&t, pg.coll, oid, c.Snaps)
			}
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

// undone is an object's state a rollback restores, as the PG's counts
// see it: whether it exists (not a whiteout), its logical size, and its
// SnapSet (nil: none), whose clones count too.
type undone struct {
	exists bool
	size   uint64
	snaps  *osdop.SnapSet
}

func (u undone) objects() int64 {
	n, _ := opexec.CloneUsage(u.snaps)
	if u.exists {
		n++
	}
	return n
}

func (u undone) bytes() int64 {
	_, n := opexec.CloneUsage(u.snaps)
	if u.exists {
		n += int64(u.size)
	}
	return n
}

// usageNow is oid's state on this copy now, as undone describes it.
func (pg *PG) usageNow(oid string) (undone, error) {
	st := pg.osd.store
	var now undone
	if _, err := st.Stat(pg.coll, oid); err != nil {
		return now, nil
	}
	attrs, err := st.Attrs(pg.coll, oid)
	if err != nil {
		return now, fmt.Errorf("pg %s: rollback: %s: %w", pg.id, oid, storeErr(err))
	}
	return usageOf(attrs), nil
}

// usageOf reads undone's fields from an object's attributes (a corrupt
// SnapSet counts as none: the rollback restores the bytes regardless).
func usageOf(attrs map[string][]byte) undone {
	_, whiteout := attrs[opexec.AttrWhiteout]
	u := undone{exists: !whiteout}
	if b := attrs[attrECSize]; len(b) == 8 {
		u.size = binary.LittleEndian.Uint64(b)
	}
	if b, ok := attrs[opexec.AttrSnapSet]; ok {
		u.snaps, _ = osdop.DecodeSnapSet(b)
	}
	return u
}

// undoState is what a rollback's transaction has done so far to the
// objects it touches: whether each exists at this point of it (live),
// and per object the attribute names it may hold (attrNames), so that a
// metadata restore removes the ones set since.
type undoState struct {
	pg        *PG
	live      map[string]bool
	attrNames map[string]map[string]bool
}

func (u *undoState) exists(oid string) bool {
	if v, ok := u.live[oid]; ok {
		return v
	}
	_, err := u.pg.osd.store.Stat(u.pg.coll, oid)
	u.live[oid] = err == nil
	return err == nil
}

// remove adds oid's removal to t if it exists at this point of t.
func (u *undoState) remove(t *objectstore.Transaction, oid string) {
	if u.exists(oid) {
		t.Remove(u.pg.coll, oid)
	}
	u.live[oid] = false
}

// restore replaces oid with its stash (a whole clone) and drops the stash.
func (u *undoState) restore(t *objectstore.Transaction, oid, stash string) {
	u.remove(t, oid)
	t.Clone(u.pg.coll, stash, oid)
	t.Remove(u.pg.coll, stash)
	u.live[oid] = true
}

// undo adds to t what restores the objects e changed to their state
// before e, and returns e.OID's: the other objects (clones) from their
// stashes or removed if e made them; e.OID from its stash (a clone, or
// for appends the metadata: truncate and restore attributes), or
// removed if it did not exist.
func (u *undoState) undo(t *objectstore.Transaction, e LogEntry) (undone, error) {
	pg := u.pg
	st, stash, c := pg.osd.store, stashName(e.Ver.Seq), pg.coll
	for i, oid := range e.Stashed {
		u.restore(t, oid, extraStashName(e.Ver.Seq, i))
	}
	for _, oid := range e.Created {
		u.remove(t, oid)
	}
	names := u.attrNames[e.OID]
	if names == nil {
		names = map[string]bool{}
		u.attrNames[e.OID] = names
		cur, _ := st.Attrs(c, e.OID) // none if it does not exist
		for k := range cur {
			names[k] = true
		}
	}
	if !e.Stash {
		u.remove(t, e.OID)
		clear(names)
		return undone{}, nil
	}
	saved, err := st.Attrs(c, stash)
	if err != nil {
		return undone{}, fmt.Errorf("pg %s: rollback %s: stash of %s: %w", pg.id, e.Ver, e.OID, storeErr(err))
	}
	size, meta := saved[objectstore.StashMetaAttr]
	delete(saved, objectstore.StashMetaAttr)
	before := usageOf(saved)
	if !meta {
		u.restore(t, e.OID, stash)
	} else {
		if len(size) != 8 {
			return undone{}, fmt.Errorf("pg %s: rollback %s: stash of %s: bad size record", pg.id, e.Ver, e.OID)
		}
		t.Truncate(c, e.OID, binary.LittleEndian.Uint64(size))
		for k := range names {
			if _, ok := saved[k]; !ok {
				t.RmAttr(c, e.OID, k)
			}
		}
		for k, v := range saved {
			t.SetAttr(c, e.OID, k, v)
		}
		t.Remove(c, stash)
	}
	clear(names)
	for k := range saved {
		names[k] = true
	}
	return before, nil
}

func (pg *PG) handleECRollback(pm *peerMsg) error {
	if err := pg.checkWrite(pm); err != nil {
		return err
	}
	return pg.rollback(pm.Interval, pm.Prev)
}
