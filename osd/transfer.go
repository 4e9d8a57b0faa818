package osd

// Moving whole objects between members for recovery: pulls from a
// member that holds an object, pushes to one that lacks it, and
// installing a pushed copy.

import (
	"context"
	"errors"
	"fmt"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdop"
)

// pull reads an object whole (data, attributes, omap; Exists false if
// absent) from member m, this OSD included.
func (pg *PG) pull(ctx context.Context, iv uint64, m memberInfo, oid string) (*objState, error) {
	obj, _, err := pg.pullUpTo(ctx, iv, m, oid, 0)
	return obj, err
}

// pullUpTo pulls an object whose data is at most max bytes (0: any size);
// a larger one is not sent: obj is nil and size says how large it is.
func (pg *PG) pullUpTo(ctx context.Context, iv uint64, m memberInfo, oid string, max uint64) (obj *objState, size uint64, err error) {
	if m.ID == pg.osd.id {
		obj, err := pg.readWhole(oid)
		return obj, 0, err
	}
	b, err := pg.osd.call(ctx, m.ID, m.Addr, msgPull, (&peerMsg{PG: pg.id, Interval: iv, OID: oid, Len: max}).encode())
	if err != nil {
		return nil, 0, fmt.Errorf("pull %s from osd.%d: %w", oid, m.ID, err)
	}
	pm, err := decodePeerMsg(b)
	if err != nil {
		return nil, 0, fmt.Errorf("pull %s from osd.%d: %w", oid, m.ID, err)
	}
	if pm.Obj == nil && max > 0 && pm.Len > max {
		return nil, pm.Len, nil
	}
	if pm.Obj == nil {
		return nil, 0, fmt.Errorf("%w: pull %s from osd.%d: no object in the reply", osdop.ErrInvalid, oid, m.ID)
	}
	return pm.Obj, 0, nil
}

// push installs obj (or its absence) as oid on member m, this OSD
// included. The caller read obj under the object's lock and holds it
// still: obj is the object as of our log's head, which the push carries
// so that a member never takes a push older than a write it logged.
func (pg *PG) push(ctx context.Context, iv uint64, m memberInfo, oid string, obj *objState) error {
	pg.mu.Lock()
	at := pg.log.info.LastUpdate
	pg.mu.Unlock()
	if m.ID == pg.osd.id {
		return pg.install(oid, obj, at)
	}
	if _, err := pg.osd.call(ctx, m.ID, m.Addr, msgPush, (&peerMsg{PG: pg.id, Interval: iv, OID: oid, Obj: obj, Prev: at}).encode()); err != nil {
		return fmt.Errorf("push %s to osd.%d: %w", oid, m.ID, err)
	}
	return nil
}

// readWhole reads an object with its attributes and omap, and the
// clones its SnapSet names (snapshots travel with their head).
func (pg *PG) readWhole(oid string) (*objState, error) {
	obj, err := pg.readOne(oid)
	if err != nil || !obj.Exists {
		return obj, err
	}
	ss, err := snapSetOf(obj.Attrs)
	if err != nil || ss == nil {
		return obj, err
	}
	for _, c := range ss.Clones {
		coid := opexec.CloneOID(oid, c.ID)
		co, err := pg.readOne(coid)
		if err != nil {
			return nil, fmt.Errorf("clone %d of %s: %w", c.ID, oid, err)
		}
		if co.Exists {
			obj.Clones = append(obj.Clones, cloneState{ID: c.ID, Obj: co})
		}
	}
	return obj, nil
}

// snapSetOf decodes the SnapSet among an object's attributes (nil: none).
func snapSetOf(attrs []omap.KV) (*osdop.SnapSet, error) {
	for _, a := range attrs {
		if a.Key == opexec.AttrSnapSet {
			ss, err := osdop.DecodeSnapSet(a.Value)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", osdop.ErrCorrupt, err)
			}
			return ss, nil
		}
	}
	return nil, nil
}

// readOne reads one object of the store with its attributes and omap.
func (pg *PG) readOne(oid string) (*objState, error) {
	s := pg.osd.store
	data, err := s.Read(pg.coll, oid, 0, 0)
	if errors.Is(err, objectstore.ErrNotFound) {
		return &objState{}, nil
	}
	if err != nil {
		return nil, storeErr(err)
	}
	obj := &objState{Exists: true, Data: data}
	attrs, err := s.Attrs(pg.coll, oid)
	if err != nil {
		return nil, storeErr(err)
	}
	for k, v := range attrs {
		obj.Attrs = append(obj.Attrs, omap.KV{Key: k, Value: v})
	}
	after := ""
	for {
		kvs, more, err := s.OmapList(pg.coll, oid, after, "", 4096)
		if err != nil {
			return nil, storeErr(err)
		}
		obj.Omap = append(obj.Omap, kvs...)
		if !more || len(kvs) == 0 {
			return obj, nil
		}
		after = kvs[len(kvs)-1].Key
	}
}

// install replaces a local object with obj (or removes it): obj is the
// object as of version at of the PG's history. A copy this OSD lacks is
// replaced only by one at least as new as it needs (a push that was
// overtaken by a write this OSD logged is refused) and is then no longer
// missing.
func (pg *PG) install(oid string, obj *objState, at Version) error {
	if obj == nil {
		return fmt.Errorf("%w: push of %s without an object", osdop.ErrInvalid, oid)
	}
	t := &objectstore.Transaction{}
	if _, err := pg.osd.store.Stat(pg.coll, oid); err == nil {
		// the local copy's clones go with it
		if ss, err := opexec.ReadSnapSet(pg.osd.store, pg.coll, oid); err != nil {
			return fmt.Errorf("install %s: %w", oid, err)
		} else if ss != nil {
			for _, c := range ss.Clones {
				coid := opexec.CloneOID(oid, c.ID)
				if _, err := pg.osd.store.Stat(pg.coll, coid); err == nil {
					t.Remove(pg.coll, coid)
				}
				opexec.UnindexClone(t, pg.coll, oid, c.Snaps)
			}
		}
		t.Remove(pg.coll, oid)
	}
	if obj.Exists {
		writeObject(t, pg.coll, oid, obj)
		ss, err := snapSetOf(obj.Attrs)
		if err != nil {
			return fmt.Errorf("install %s: %w", oid, err)
		}
		for _, c := range obj.Clones {
			writeObject(t, pg.coll, opexec.CloneOID(oid, c.ID), c.Obj)
		}
		if ss != nil { // the snap mapper indexes the clones the head records
			for _, c := range ss.Clones {
				opexec.IndexClone(t, pg.coll, oid, c.Snaps)
			}
		}
	}
	pg.mu.Lock()
	need, lacked := pg.log.missing[oid]
	if lacked {
		if at.Less(need) {
			pg.mu.Unlock()
			return fmt.Errorf("%w: pg %s: %s as of %s is older than the %s osd.%d needs", osdop.ErrRetry, pg.id, oid, at, need, pg.osd.id)
		}
		t.OmapRm(metaColl, metaOID(pg.coll), []string{missingKey(oid)})
		delete(pg.log.missing, oid)
	}
	if t.Len() == 0 {
		pg.mu.Unlock()
		return nil
	}
	done := pg.osd.store.Submit(t) // in order with the PG's other transactions
	pg.mu.Unlock()
	if err := <-done; err != nil {
		if lacked {
			pg.mu.Lock()
			if !pg.log.lacks(oid) {
				pg.log.missing[oid] = need
			}
			pg.mu.Unlock()
		}
		return fmt.Errorf("install %s: %w", oid, storeErr(err))
	}
	pg.osd.perf.recoveryOps.Add(1)
	pg.osd.perf.recoveryBytes.Add(uint64(len(obj.Data)))
	return nil
}

// writeObject adds to t the creation of oid as obj (data, attributes,
// omap).
func writeObject(t *objectstore.Transaction, c objectstore.Coll, oid string, obj *objState) {
	t.Touch(c, oid)
	t.Write(c, oid, 0, obj.Data)
	for _, a := range obj.Attrs {
		t.SetAttr(c, oid, a.Key, a.Value)
	}
	if len(obj.Omap) > 0 {
		t.OmapSet(c, oid, obj.Omap)
	}
}

func (pg *PG) handlePull(pm *peerMsg) ([]byte, error) {
	if err := pg.checkInterval(pm); err != nil {
		return nil, err
	}
	if pm.Len > 0 { // the puller holds memory for Len bytes: larger, say how large
		if st, err := pg.osd.store.Stat(pg.coll, pm.OID); err == nil && st.Size > pm.Len {
			return (&peerMsg{PG: pg.id, OID: pm.OID, Len: st.Size}).encode(), nil
		}
	}
	obj, err := pg.readWhole(pm.OID)
	if err != nil {
		return nil, err
	}
	pg.osd.charge(mclock.Recovery, 1, uint64(len(obj.Data)))
	return (&peerMsg{PG: pg.id, OID: pm.OID, Obj: obj}).encode(), nil
}

func (pg *PG) handlePush(pm *peerMsg) error {
	if err := pg.checkWrite(pm); err != nil {
		return err
	}
	if pm.Obj != nil {
		pg.osd.charge(mclock.Recovery, 1, uint64(len(pm.Obj.Data)))
	}
	return pg.install(pm.OID, pm.Obj, pm.Prev)
}
