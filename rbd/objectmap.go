package rbd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/osdop"
)

// The object map (cls/rbd's objectmap.go has its layout and states),
// kept by the exclusive lock's holder as librbd keeps it: the map is
// always a superset of the objects that exist — an object is marked
// before a request may create it (EXISTS), and unmarked only after its
// removal (PENDING, then NONEXISTENT if no other change of it ran
// meanwhile). So an object the map says is absent is absent: the holder
// reads it as a hole without asking an OSD, and a discard of it sends
// nothing. A snapshot copies the head's map (ObjectMapPrefix+ID.SNAPID)
// and marks the head's objects clean; a change marks an object EXISTS
// again, so with fast-diff the maps say which objects changed between
// snapshots, and du counts objects instead of asking each one's size.

type objectMap struct {
	update sync.Mutex // held across an update of the head's map (mark)
	mu     sync.Mutex
	loaded bool // states holds the head's map (the lock holder's copy)
	states clsrbd.ObjectMap
	// inflight counts the changes of each object running; contended
	// marks an object another change started on while one ran (its
	// removal must not be unmarked: a write may have re-created it).
	inflight  map[uint64]int
	contended map[uint64]bool
}

// mapOID is the object map of the head (snap 0) or of a snapshot.
func (img *Image) mapOID(snap uint64) string {
	if snap == 0 {
		return clsrbd.ObjectMapPrefix + img.id
	}
	return fmt.Sprintf("%s%s.%016x", clsrbd.ObjectMapPrefix, img.id, snap)
}

// loadMap reads the object map of the head or a snapshot (ErrNotFound if
// it has none).
func (img *Image) loadMap(ctx context.Context, snap uint64) (clsrbd.ObjectMap, error) {
	b, err := img.pool.Read(ctx, img.mapOID(snap), 0, 0)
	if err != nil {
		return nil, err
	}
	return clsrbd.DecodeObjectMap(b)
}

// mapReady loads the head's map into the holder's copy, if the image
// has the feature and it is not loaded; usesMap tells whether the copy
// is in use. The caller holds the lock (startWrite).
func (img *Image) mapReady(ctx context.Context) (usesMap bool, err error) {
	if !img.hasFeature(clsrbd.FeatureObjectMap) {
		return false, nil
	}
	img.om.mu.Lock()
	defer img.om.mu.Unlock()
	if img.om.loaded {
		return true, nil
	}
	m, err := img.loadMap(ctx, 0)
	if err != nil {
		return false, fmt.Errorf("rbd: image %s/%s: object map: %w (shoal rbd object-map rebuild)", img.pool.Name(), img.name, err)
	}
	img.om.states, img.om.loaded = m, true
	if img.om.inflight == nil {
		img.om.inflight, img.om.contended = map[uint64]int{}, map[uint64]bool{}
	}
	return true, nil
}

// dropMap forgets the holder's copy (the lock is being released).
func (img *Image) dropMap() {
	img.om.mu.Lock()
	img.om.loaded, img.om.states = false, nil
	img.om.mu.Unlock()
}

// absent reports whether the holder's map says object n does not exist
// (false if the map is not in use).
func (img *Image) absent(n uint64) bool {
	if !img.lk.owned.Load() {
		return false
	}
	img.om.mu.Lock()
	defer img.om.mu.Unlock()
	return img.om.loaded && img.stateLocked(n) == clsrbd.ObjectNonexistent
}

func (img *Image) stateLocked(n uint64) uint8 {
	if n >= uint64(len(img.om.states)) {
		return clsrbd.ObjectNonexistent
	}
	return img.om.states[n]
}

// mark sets object n's state in the head's map (if it is now current,
// when current is given) and in the holder's copy. Updates go one at a
// time, so the copy takes them in the order the OSD applied them.
func (img *Image) mark(ctx context.Context, n uint64, state uint8, current *uint8) error {
	img.om.update.Lock()
	defer img.om.update.Unlock()
	out, err := exec(ctx, img.pool, img.mapOID(0), "object_map_update", clsrbd.UpdateMapInput{Start: n, End: n + 1, State: state, Current: current})
	if err != nil {
		return fmt.Errorf("rbd: image %s/%s: object map: %w", img.pool.Name(), img.name, err)
	}
	var now clsrbd.ObjectMap
	if len(out) == 0 {
		// a request resent after a failover that the OSD had applied: it
		// answers from its log, without the method's output
		m, err := img.loadMap(ctx, 0)
		if err != nil {
			return fmt.Errorf("rbd: image %s/%s: object map: %w", img.pool.Name(), img.name, err)
		}
		now = clsrbd.ObjectMap{clsrbd.ObjectNonexistent}
		if n < uint64(len(m)) {
			now[0] = m[n]
		}
	} else if err := json.Unmarshal(out, &now); err != nil || len(now) != 1 {
		return fmt.Errorf("rbd: image %s/%s: object map update: %d states (%v)", img.pool.Name(), img.name, len(now), err)
	}
	img.om.mu.Lock()
	if img.om.loaded {
		if n >= uint64(len(img.om.states)) {
			img.om.states = append(img.om.states, make(clsrbd.ObjectMap, n+1-uint64(len(img.om.states)))...)
		}
		img.om.states[n] = now[0]
	}
	img.om.mu.Unlock()
	return nil
}

// markRange sets objects [start, end) to state in the head's map and
// the holder's copy.
func (img *Image) markRange(ctx context.Context, start, end uint64, state uint8) error {
	img.om.update.Lock()
	defer img.om.update.Unlock()
	if _, err := exec(ctx, img.pool, img.mapOID(0), "object_map_update", clsrbd.UpdateMapInput{Start: start, End: end, State: state}); err != nil {
		return fmt.Errorf("rbd: image %s/%s: object map: %w", img.pool.Name(), img.name, err)
	}
	img.om.mu.Lock()
	if img.om.loaded {
		if end > uint64(len(img.om.states)) {
			img.om.states = append(img.om.states, make(clsrbd.ObjectMap, end-uint64(len(img.om.states)))...)
		}
		for i := start; i < end; i++ {
			img.om.states[i] = state
		}
	}
	img.om.mu.Unlock()
	return nil
}

// mapChange is what one object's change does to the map.
type mapChange struct {
	skip   bool // the object is absent and the change needs it: nothing to send
	pre    uint8
	setPre bool
	remove bool // unmark it once removed
	alone  bool // no other change of it ran when this one began
}

// beginChanges plans the map's part of changes to objects (removal:
// their ops remove it; ifExists: they apply to an existing object only)
// and marks the objects first; endChanges unmarks what was removed.
func (img *Image) beginChanges(ctx context.Context, objs []uint64, removal, ifExists []bool) ([]mapChange, error) {
	plan := make([]mapChange, len(objs))
	img.om.mu.Lock()
	for i, n := range objs {
		st := img.stateLocked(n)
		p := &plan[i]
		p.alone = img.om.inflight[n] == 0
		if !p.alone {
			img.om.contended[n] = true
		}
		img.om.inflight[n]++
		switch {
		case ifExists[i] && st == clsrbd.ObjectNonexistent:
			p.skip = true
		case removal[i]:
			p.remove, p.pre, p.setPre = true, clsrbd.ObjectPending, st != clsrbd.ObjectPending
		default:
			p.pre, p.setPre = clsrbd.ObjectExists, st != clsrbd.ObjectExists
		}
	}
	img.om.mu.Unlock()
	err := parallel(len(objs), func(i int) error {
		if !plan[i].setPre || plan[i].skip {
			return nil
		}
		return img.mark(ctx, objs[i], plan[i].pre, nil)
	})
	if err != nil {
		img.endChanges(context.WithoutCancel(ctx), objs, plan, nil)
		return nil, err
	}
	return plan, nil
}

// endChanges ends the changes beginChanges planned: an object removed
// (removed[i]) by a change that ran alone is unmarked, if still PENDING.
func (img *Image) endChanges(ctx context.Context, objs []uint64, plan []mapChange, removed []bool) error {
	var unmark []uint64
	img.om.mu.Lock()
	for i, n := range objs {
		if removed != nil && removed[i] && plan[i].remove && plan[i].alone && !img.om.contended[n] {
			unmark = append(unmark, n)
		}
		if img.om.inflight[n]--; img.om.inflight[n] <= 0 {
			delete(img.om.inflight, n)
			delete(img.om.contended, n)
		}
	}
	img.om.mu.Unlock()
	pending := clsrbd.ObjectPending
	return parallel(len(unmark), func(i int) error {
		return img.mark(ctx, unmark[i], clsrbd.ObjectNonexistent, &pending)
	})
}

// exclusively runs fn as the exclusive lock's holder (if the image has
// the feature), with none of this client's writes running (so no object
// changes under fn), then reloads the header before they go on; fn must
// not notify the header (this client's watch would wait on fn).
func (img *Image) exclusively(ctx context.Context, fn func() error) error {
	if !img.hasFeature(clsrbd.FeatureExclusiveLock) {
		img.lk.io.Lock()
		defer img.lk.io.Unlock()
		return fn()
	}
	for {
		if err := img.acquireLock(ctx); err != nil {
			return err
		}
		img.lk.io.Lock()
		if img.lk.owned.Load() {
			defer img.lk.io.Unlock()
			if err := fn(); err != nil {
				return err
			}
			// this client's writes, let go now, write with the header fn
			// changed (a new SnapContext, a feature)
			return img.refresh(ctx)
		}
		img.lk.io.Unlock()
	}
}

// snapMaps is what a snapshot does to the maps (in exclusively): the
// head's map is copied for it, then the head's objects marked clean.
func (img *Image) snapMaps(ctx context.Context, snap uint64) error {
	if _, err := img.mapReady(ctx); err != nil {
		return err
	}
	b, err := img.pool.Read(ctx, img.mapOID(0), 0, 0)
	if err != nil {
		return err
	}
	if err := img.pool.WriteFull(ctx, img.mapOID(snap), b); err != nil {
		return err
	}
	if _, err := exec(ctx, img.pool, img.mapOID(0), "object_map_snap_add", struct{}{}); err != nil {
		return err
	}
	img.om.mu.Lock()
	for i, s := range img.om.states {
		if s == clsrbd.ObjectExists {
			img.om.states[i] = clsrbd.ObjectExistsClean
		}
	}
	img.om.mu.Unlock()
	return nil
}

// mergeSnapMap is what removing snapshot snap does to the maps first (in
// exclusively, before the header lets the snapshot go): the objects it
// saw written stay written in the next newer map (the next snapshot's,
// or the head's). A next snapshot without a map (older than the
// feature) is left so: diffs from it ask the OSDs.
func (img *Image) mergeSnapMap(ctx context.Context, snap uint64, snaps []clsrbd.Snapshot) error {
	next := uint64(0)
	for _, s := range snaps {
		if s.ID > snap && (next == 0 || s.ID < next) {
			next = s.ID
		}
	}
	if _, err := img.pool.Stat(ctx, img.mapOID(next)); errors.Is(err, client.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	b, err := img.pool.Read(ctx, img.mapOID(snap), 0, 0)
	switch {
	case errors.Is(err, client.ErrNotFound): // a snapshot older than the map: every object of the next may have changed
		clean := clsrbd.ObjectExistsClean
		_, err = exec(ctx, img.pool, img.mapOID(next), "object_map_update", clsrbd.UpdateMapInput{End: img.objectCount(img.Size()), State: clsrbd.ObjectExists, Current: &clean})
	case err == nil:
		_, err = exec(ctx, img.pool, img.mapOID(next), "object_map_snap_remove", clsrbd.SnapRemoveMapInput{Removed: b})
	}
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		return err
	}
	if next == 0 {
		img.dropMap() // reloaded at the next write
	}
	return nil
}

// rollbackMap makes the head's map the snapshot's (in exclusively,
// after its objects were rolled back), its objects all written since the
// last snapshot; without one, it is built from the objects.
func (img *Image) rollbackMap(ctx context.Context, snap uint64) error {
	m, err := img.loadMap(ctx, snap)
	if errors.Is(err, client.ErrNotFound) {
		return img.buildMap(ctx)
	}
	if err != nil {
		return err
	}
	for i, s := range m {
		if s != clsrbd.ObjectNonexistent {
			m[i] = clsrbd.ObjectExists
		}
	}
	if err := img.pool.WriteFull(ctx, img.mapOID(0), clsrbd.EncodeObjectMap(m)); err != nil {
		return err
	}
	img.dropMap()
	return nil
}

// buildMap writes the head's map from the objects as they are (every
// one that exists: EXISTS), in exclusively.
func (img *Image) buildMap(ctx context.Context) error {
	n := img.objectCount(img.Size())
	m := make(clsrbd.ObjectMap, n)
	err := img.forObjects(ctx, n, func(i uint64, oid string) error {
		_, err := img.data.Stat(ctx, oid)
		switch {
		case err == nil:
			m[i] = clsrbd.ObjectExists
		case !errors.Is(err, client.ErrNotFound):
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := img.pool.WriteFull(ctx, img.mapOID(0), clsrbd.EncodeObjectMap(m)); err != nil {
		return err
	}
	img.dropMap()
	return nil
}

// RebuildObjectMap rewrites the head's object map from the data objects
// as they are (rbd object-map rebuild), as the lock holder.
func (img *Image) RebuildObjectMap(ctx context.Context) error {
	if err := img.checkWritable(); err != nil {
		return err
	}
	if !img.hasFeature(clsrbd.FeatureObjectMap) {
		return fmt.Errorf("rbd: image %s/%s: %w: no object-map feature", img.pool.Name(), img.name, ErrInvalid)
	}
	return img.exclusively(ctx, func() error { return img.buildMap(ctx) })
}

// MapMismatch is an object the map is wrong about.
type MapMismatch struct {
	Object uint64
	State  uint8 // the map's
	Exists bool  // the object's
}

// CheckObjectMap compares the head's (or the snapshot's) object map with
// the data objects (rbd object-map check): wrong lists objects that
// exist where the map says absent — which must never be — and stale
// those the map says exist that do not (left by a writer killed between
// marking an object and creating it, or a removal whose unmarking was
// skipped: harmless).
func (img *Image) CheckObjectMap(ctx context.Context) (wrong, stale []MapMismatch, err error) {
	snap := uint64(0)
	src := img.data
	if img.snap != nil {
		snap, src = img.snap.ID, img.data.AtSnap(img.snap.ID)
	}
	m, err := img.loadMap(ctx, snap)
	if err != nil {
		return nil, nil, fmt.Errorf("rbd: image %s/%s: object map: %w", img.pool.Name(), img.name, err)
	}
	var mu sync.Mutex
	err = img.forObjects(ctx, img.objectCount(img.Size()), func(i uint64, oid string) error {
		_, err := src.Stat(ctx, oid)
		if err != nil && !errors.Is(err, client.ErrNotFound) {
			return err
		}
		st := clsrbd.ObjectNonexistent
		if i < uint64(len(m)) {
			st = m[i]
		}
		mm := MapMismatch{Object: i, State: st, Exists: err == nil}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case mm.Exists && st == clsrbd.ObjectNonexistent:
			wrong = append(wrong, mm)
		case !mm.Exists && st != clsrbd.ObjectNonexistent:
			stale = append(stale, mm)
		}
		return nil
	})
	byObject := func(a, b MapMismatch) int { return int(a.Object) - int(b.Object) }
	slices.SortFunc(wrong, byObject)
	slices.SortFunc(stale, byObject)
	return wrong, stale, err
}

// changedFast is Changed from the object maps (fast-diff): an object
// changed if it exists at one end only, or exists at the end and one of
// the maps since the start (the snapshots' after it, the end's) says it
// was written; whole objects. ok is false when a map is missing (a
// snapshot older than the feature): Changed then asks the OSDs.
func (img *Image) changedFast(ctx context.Context, from *clsrbd.Snapshot, lay layout, size, overlapF, overlapT uint64) (exts []Extent, ok bool, err error) {
	img.mu.RLock()
	snaps := slices.Clone(img.h.Snapshots)
	img.mu.RUnlock()
	to := uint64(0)
	if img.snap != nil {
		to = img.snap.ID
	}
	var chain []clsrbd.ObjectMap // the maps after from, up to to
	for _, s := range snaps {
		if (from == nil || s.ID > from.ID) && (to == 0 || s.ID <= to) {
			m, err := img.loadMap(ctx, s.ID)
			if errors.Is(err, client.ErrNotFound) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			chain = append(chain, m)
		}
	}
	if to == 0 {
		m, err := img.loadMap(ctx, 0)
		if errors.Is(err, client.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		chain = append(chain, m)
	}
	var start clsrbd.ObjectMap
	sizeF := uint64(0)
	if from != nil {
		if start, err = img.loadMap(ctx, from.ID); errors.Is(err, client.ErrNotFound) {
			return nil, false, nil
		} else if err != nil {
			return nil, false, err
		}
		sizeF = from.Size
	}
	state := func(m clsrbd.ObjectMap, n uint64) uint8 {
		if n < uint64(len(m)) {
			return m[n]
		}
		return clsrbd.ObjectNonexistent
	}
	end := chain[len(chain)-1]
	for n := range lay.objectCount(max(size, sizeF)) {
		existsF := state(start, n) != clsrbd.ObjectNonexistent
		existsT := state(end, n) != clsrbd.ObjectNonexistent
		written := slices.ContainsFunc(chain, func(m clsrbd.ObjectMap) bool {
			s := state(m, n)
			return s == clsrbd.ObjectExists || s == clsrbd.ObjectPending
		})
		var obj []osdop.Extent
		switch {
		case !existsF && !existsT:
			obj = parentChanges(lay, n, overlapF, overlapT)
		case existsF != existsT || written:
			obj = []osdop.Extent{{Off: 0, Len: lay.objSize}}
		}
		for _, e := range obj {
			exts = append(exts, lay.imageRanges(n, e.Off, e.Len)...)
		}
	}
	return mergeExtents(exts, size), true, nil
}
