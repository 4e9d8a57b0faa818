package osd

// PG splitting. When a pool's pg_num grows, every OSD splits each copy it
// holds of the pool's PGs — member or stray, when it installs the map —
// into the parent and the children osdmap.SplitChildren names, as Ceph's
// OSD does (PG::split_into): one store transaction moves the children's
// objects into their collections without copying data
// (objectstore.SplitCollection), divides the snap mapper's index, and
// writes each child's log (the parent's entries and missing objects that
// are the child's), info (the parent's versions; objects and bytes as
// the store counts them moving) and peering state (the parent's). The
// split is a new interval for the parent (peering.IntervalID counts the
// PG's split bits, osdmap.SplitBits) and the first of each child, so
// both peer; with pgp_num unchanged a child maps
// to its parent's OSDs, which all hold its objects, and the MONs gave it
// the parent's pg_temp, upmaps and recorded history. pgp_num then moves
// the children to their own OSDs by backfill.
//
// Ordering: the split runs under the map lock and the parent's lock, and
// the parent's new interval is set before that lock is released, so no
// write of the old interval reaches the store after the split (every
// write path checks the interval under that lock before it submits);
// anything built earlier and submitted later that names a moved object
// is refused by the store (objectstore's split fence) and retried in the
// new interval. A crash before the transaction commits leaves the
// parent whole and the map still asks for the split at the next start;
// after, the children are there. Each copy records the pg_num its
// collection holds objects for (attrPGNum on the PG's meta object).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdmap"
)

// attrPGNum is the meta object's attribute holding the pool's pg_num the
// PG's collection holds objects for (4 bytes, little endian).
const attrPGNum = "pg_num"

func pgNumBytes(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }

// loadPGNum reads a PG copy's attrPGNum; 0 if it has none (a copy made
// before Shoal recorded it).
func loadPGNum(s objectstore.Store, c objectstore.Coll) uint32 {
	b, err := s.GetAttr(metaColl, metaOID(c), attrPGNum)
	if err != nil || len(b) != 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// recordPGNum writes the pg_num of a copy that has none recorded: the
// pool's now (the map lock is held; a copy made before Shoal recorded it
// is taken to hold objects for the pg_num of the first map it sees).
func (pg *PG) recordPGNum(n uint32) error {
	var t objectstore.Transaction
	t.Touch(metaColl, metaOID(pg.coll))
	t.SetAttr(metaColl, metaOID(pg.coll), attrPGNum, pgNumBytes(n))
	if err := pg.osd.store.Apply(&t); err != nil {
		return err
	}
	pg.pgNum = n
	return nil
}

// splitTarget returns the function that names, for each object of the
// parent's collection, the child collection it moves to ("" to stay):
// by the pool's placement of its head's name (a clone goes with its
// head, an erasure-coded rollback stash with its log entry's object;
// stashes of entries no longer logged, and the snap mapper, stay).
func splitTarget(pool *osdmap.Pool, parent osdmap.PGID, stashes map[uint64]string) func(string) objectstore.Coll {
	return func(oid string) objectstore.Coll {
		head := oid
		if h, ok := opexec.CloneHead(oid); ok {
			head = h
		} else if rest, ok := strings.CutPrefix(oid, stashPrefix); ok {
			seq, err := strconv.ParseUint(strings.SplitN(rest, ".", 2)[0], 10, 64)
			if head, ok = stashes[seq]; err != nil || !ok {
				return ""
			}
		} else if strings.HasPrefix(oid, "\x00") {
			return ""
		}
		to := pool.RawPGToPG(osdmap.PGID{Pool: pool.ID, Seed: pool.HashKey(head, "")})
		if to == parent {
			return ""
		}
		return objectstore.Coll(to.String())
	}
}

// split splits the PG's copy from the pg_num it holds objects for to
// pool's (the map lock and pg.mu are held): it makes the children,
// commits the split and returns them, to be mapped as new PGs. A copy
// that splits into no child only records the new pg_num. A child
// collection that exists already is used if empty; one that holds
// objects is a copy this OSD got since (by backfill, while this stale
// copy of the parent waited to split): the parent's objects of that
// child are older, and are removed instead of moved. On an error nothing
// changed and the split is tried again at the next map.
func (pg *PG) split(pool *osdmap.Pool) ([]*PG, error) {
	d := pg.osd
	from := pg.pgNum
	kids := osdmap.SplitChildren(pg.id.Seed, from, pool.PGNum)
	var t objectstore.Transaction
	var colls []objectstore.Coll
	held := map[objectstore.Coll]bool{}
	for _, s := range kids {
		c := objectstore.Coll(osdmap.PGID{Pool: pool.ID, Seed: s}.String())
		names, err := d.store.List(c, "", 1)
		switch {
		case errors.Is(err, objectstore.ErrNotFound):
			t.CreateCollection(c)
		case err != nil:
			return nil, fmt.Errorf("pg %s: split: %s: %w", pg.id, c, err)
		case len(names) > 0:
			held[c] = true
			continue
		}
		colls = append(colls, c)
	}
	stashes := map[uint64]string{}
	for _, e := range pg.log.entries {
		if e.Stash || len(e.Stashed) > 0 {
			stashes[e.Ver.Seq] = e.OID
		}
	}
	to := splitTarget(pool, pg.id, stashes)
	target := func(oid string) objectstore.Coll {
		if c := to(oid); !held[c] {
			return c
		}
		return ""
	}
	// objects and bytes per child, counted as the split moves them
	objs, bytes := map[objectstore.Coll]int64{}, map[objectstore.Coll]int64{}
	// the stale objects of children held already
	var stale objectstore.Transaction
	for after := ""; len(held) > 0; {
		names, err := d.store.List(pg.coll, after, 1024)
		if err != nil {
			return nil, fmt.Errorf("pg %s: split: list: %w", pg.id, err)
		}
		for _, n := range names {
			if held[to(n)] {
				stale.Remove(pg.coll, n)
			}
		}
		if len(names) < 1024 {
			break
		}
		after = names[len(names)-1]
	}
	if stale.Len() > 0 {
		// before the split, in its own transaction: these copies are
		// older than the child's that this OSD holds
		if err := d.store.Apply(&stale); err != nil {
			return nil, fmt.Errorf("pg %s: split: remove stale copies: %w", pg.id, err)
		}
		d.log.Warn("split: removed the stale copies of children held already", "pg", pg.id, "objects", stale.Len())
	}
	if len(colls) > 0 {
		t.SplitCollection(pg.coll, &objectstore.Split{Children: colls, Target: target,
			Indexes: []string{opexec.SnapMapperOID}, KeyTarget: func(key string) objectstore.Coll {
				_, head, ok := strings.Cut(key, "/")
				if !ok {
					return ""
				}
				return target(head)
			},
			// rollback stashes are named by log version, which a later
			// write of the parent's may take again: not fenced
			Fence: func(oid string) bool { return !strings.HasPrefix(oid, stashPrefix) && target(oid) != "" },
			Moved: func(oid string, c objectstore.Coll, size uint64, attrs map[string][]byte) {
				if _, clone := opexec.CloneHead(oid); strings.HasPrefix(oid, "\x00") && !clone {
					return // a stash: not an object of the PG's counts
				}
				objs[c]++ // heads and clones, as the PG's counts
				if b := attrs[attrECSize]; len(b) == 8 {
					size = binary.LittleEndian.Uint64(b) // a shard: the object's size
				}
				bytes[c] += int64(size)
			}})
	}
	var out []*PG
	for c := range held { // their log entries are older than the copy's own
		pg.log.splitOff(func(oid string) bool { return to(oid) == c })
	}
	for _, c := range colls {
		kl := pg.log.splitOff(func(oid string) bool { return target(oid) == c })
		kl.info.Objects, kl.info.Bytes = 0, 0
		kl.persistAll(&t, c)
		t.SetAttr(metaColl, metaOID(c), attrPGNum, pgNumBytes(pool.PGNum))
		id, _ := osdmap.ParsePGID(string(c))
		kid := newPG(d, id, c, kl)
		kid.pgNum = pool.PGNum
		kid.pool, kid.epoch, kid.shard = pg.pool, pg.epoch, pg.shard
		kid.ps = pg.ps
		kid.ps.Past, kid.ps.Strays, kid.ps.TempAsked = slices.Clone(pg.ps.Past), slices.Clone(pg.ps.Strays), 0
		kid.recorded = pg.recorded
		kid.recorded.PG = kid.id
		kid.applied = kl.info.LastUpdate
		kid.scrub.last, kid.scrub.lastDeep = pg.scrub.last, pg.scrub.lastDeep
		out = append(out, kid)
	}
	pg.log.persistAll(&t, pg.coll)
	t.SetAttr(metaColl, metaOID(pg.coll), attrPGNum, pgNumBytes(pool.PGNum))
	if err := d.store.Apply(&t); err != nil {
		// the in-memory log lost the children's entries: reload it
		if l, lerr := loadPGLog(d.store, pg.coll); lerr == nil {
			pg.log = l
		}
		return nil, fmt.Errorf("pg %s: split %d -> %d: %w", pg.id, from, pool.PGNum, err)
	}
	pg.pgNum = pool.PGNum
	// the counts, now known: in memory, and on disk in a transaction of
	// their own (a crash before it leaves them off by what moved)
	var counts objectstore.Transaction
	for _, kid := range out {
		kid.log.info.Objects, kid.log.info.Bytes = objs[kid.coll], bytes[kid.coll]
		pg.log.info.Objects -= objs[kid.coll]
		pg.log.info.Bytes -= bytes[kid.coll]
		kid.log.persistInfo(&counts, kid.coll)
	}
	pg.log.persistInfo(&counts, pg.coll)
	if err := d.store.Apply(&counts); err != nil {
		d.log.Warn("split: counts not recorded", "pg", pg.id, "err", err)
	}
	// Live watches of the children's objects stay here: the parent's new
	// interval drops them (watchLoop), and a watcher's next poll reaches
	// the child, which learns them from the object, as any new primary.
	if len(out)+len(held) > 0 {
		d.log.Info("split pg", "pg", pg.id, "pg_num", fmt.Sprintf("%d -> %d", from, pool.PGNum), "children", len(out), "held_already", len(held))
	}
	return out, nil
}

// splitOff removes from the log the entries and missing objects of the
// objects keep names and returns them as a log of their own, with the
// same info (versions, tail, shard, rollback point).
func (l *pgLog) splitOff(keep func(oid string) bool) *pgLog {
	kl := newPGLog()
	kl.info = l.info
	var stay []LogEntry
	for _, e := range l.entries {
		if !keep(e.OID) {
			stay = append(stay, e)
			continue
		}
		kl.entries = append(kl.entries, e)
		if e.Client != 0 {
			kl.reqs[[2]uint64{e.Client, e.Tid}] = e.Ver
			delete(l.reqs, [2]uint64{e.Client, e.Tid})
		}
	}
	l.entries = stay
	for oid, v := range l.missing {
		if keep(oid) {
			kl.missing[oid] = v
			delete(l.missing, oid)
		}
	}
	return kl
}
