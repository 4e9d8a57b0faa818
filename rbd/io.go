package rbd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/osdop"
)

// ReadAt reads len(p) bytes at off into p; holes read as zeros. A read
// past the end is ErrInvalid.
func (img *Image) ReadAt(ctx context.Context, p []byte, off uint64) error {
	img.mu.RLock()
	size, lay, src, parent, overlap := img.sizeLocked(), img.layoutLocked(), img.data, img.parent, img.overlap
	img.mu.RUnlock()
	if img.snap != nil {
		src = img.data.AtSnap(img.snap.ID)
	}
	if err := checkRange(off, uint64(len(p)), size); err != nil {
		return err
	}
	exts := lay.extents(off, uint64(len(p)))
	comps := make([]*client.Completion, len(exts))
	for i, e := range exts {
		if img.snap == nil && img.absent(e.object) {
			continue // a hole, as the object map knows
		}
		// the reply's own buffer, copied once into p below
		comps[i] = src.OperateRefAsync(ctx, lay.objectName(e.object), []osdop.Op{{Code: osdop.Read, Off: e.objOff, Len: e.length}})
	}
	var first error
	var fromParent []extent // holes of a clone that its parent shows through
	for i, c := range comps {
		var rep *osdop.Reply
		err := error(client.ErrNotFound) // not asked: absent, as the object map knows
		if c != nil {
			rep, err = c.Wait()
		}
		dst := p[exts[i].bufOff : exts[i].bufOff+exts[i].length]
		switch {
		case errors.Is(err, client.ErrNotFound): // a hole
			clear(dst)
			if e := exts[i]; parent != nil && off+e.bufOff < overlap {
				e.length = min(e.length, overlap-(off+e.bufOff))
				fromParent = append(fromParent, e)
			}
		case err != nil:
			if first == nil {
				first = fmt.Errorf("rbd: read %s at %d: %w", lay.objectName(exts[i].object), exts[i].objOff, err)
			}
		default:
			var data []byte
			if len(rep.Results) > 0 {
				data = rep.Results[0].Data
			}
			clear(dst[copy(dst, data):]) // past the object's end: zeros
		}
		if c != nil {
			c.Release()
		}
	}
	if first == nil && len(fromParent) > 0 {
		first = parallel(len(fromParent), func(i int) error {
			e := fromParent[i]
			return parent.ReadAt(ctx, p[e.bufOff:e.bufOff+e.length], off+e.bufOff)
		})
	}
	return first
}

// parallel runs fn(0) … fn(n-1), 16 at a time, and returns their
// errors, joined.
func parallel(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// WriteAt writes p at off. A write past the end is ErrInvalid; at a
// snapshot, ErrReadOnly.
func (img *Image) WriteAt(ctx context.Context, p []byte, off uint64) error {
	return img.mutate(ctx, off, uint64(len(p)), 0, false, func(e extent, cloned bool) ([]osdop.Op, bool) {
		return []osdop.Op{{Code: osdop.Write, Off: e.objOff, Data: p[e.bufOff : e.bufOff+e.length]}}, cloned
	})
}

// Discard deallocates [off, off+n): objects it covers whole are removed,
// the rest truncated or zeroed; it reads as zeros afterwards, and an
// object that does not exist is left so (Ceph's discard, with
// write-zeroes' guarantee). In a clone, an object its parent shows
// through is emptied instead of removed (created empty if absent), and
// copied up before a part of it is zeroed.
func (img *Image) Discard(ctx context.Context, off, n uint64) error {
	return img.discard(ctx, off, n, 0)
}

// discard is Discard within the image's size, or, if limit is not 0,
// within limit bytes.
func (img *Image) discard(ctx context.Context, off, n, limit uint64) error {
	img.mu.RLock()
	objSize := uint64(1) << img.h.Order
	img.mu.RUnlock()
	return img.mutate(ctx, off, n, limit, true, func(e extent, cloned bool) ([]osdop.Op, bool) {
		switch {
		case e.objOff == 0 && e.length == objSize && cloned:
			return []osdop.Op{{Code: osdop.Create}, {Code: osdop.Truncate}}, false
		case e.objOff == 0 && e.length == objSize:
			return []osdop.Op{{Code: osdop.Remove}}, true
		case e.objOff+e.length == objSize:
			return []osdop.Op{{Code: osdop.Truncate, Off: e.objOff}}, true
		default:
			return []osdop.Op{{Code: osdop.Zero, Off: e.objOff, Len: e.length}}, true
		}
	})
}

// WriteZeroes makes [off, off+n) read as zeros, as Discard does.
func (img *Image) WriteZeroes(ctx context.Context, off, n uint64) error {
	return img.Discard(ctx, off, n)
}

// mutate changes every object extent of [off, off+n) at once and waits
// for all. The range must lie within the image's size, or limit bytes if
// not 0; with merge, each object's extents are coalesced first
// (discards). change gives an extent's ops — cloned tells that the
// object is a clone's with parent data under it — and whether they
// apply only to an existing object: those go after a Stat, and an
// absent object is left alone (a discard's ENOENT counts as done) or,
// if cloned, copied up with the ops in one request. A change to a
// cloned object that depends on its data must be ifExists.
func (img *Image) mutate(ctx context.Context, off, n, limit uint64, merge bool, change func(e extent, cloned bool) (ops []osdop.Op, ifExists bool)) error {
	if err := img.checkWritable(); err != nil {
		return err
	}
	done, err := img.startWrite(ctx)
	if err != nil {
		return err
	}
	defer done()
	img.mu.RLock()
	size, lay, w, parent, overlap := img.h.Size, img.layoutLocked(), img.wr, img.parent, img.overlap
	img.mu.RUnlock()
	if limit != 0 {
		size = limit
	}
	if err := checkRange(off, n, size); err != nil {
		return err
	}
	exts := lay.extents(off, n)
	if merge {
		exts = coalesce(exts)
	}
	type pending struct {
		ops      []osdop.Op // without the Stat
		cloned   bool
		ifExists bool
		obj      int // index in objs
		c        *client.Completion
	}
	reqs := make([]pending, len(exts))
	var objs []uint64 // the objects changed, each once
	var removal, existing []bool
	index := make(map[uint64]int, len(exts))
	for i, e := range exts {
		r := &reqs[i]
		r.cloned = parent != nil && lay.underParent(e.object, overlap)
		r.ops, r.ifExists = change(e, r.cloned)
		var seen bool
		if r.obj, seen = index[e.object]; !seen {
			r.obj = len(objs)
			index[e.object] = r.obj
			objs = append(objs, e.object)
			removal = append(removal, r.ops[0].Code == osdop.Remove)
			existing = append(existing, r.ifExists && !r.cloned)
		}
	}
	usesMap, err := img.mapReady(ctx)
	if err != nil {
		return err
	}
	var plan []mapChange
	if usesMap {
		if plan, err = img.beginChanges(ctx, objs, removal, existing); err != nil {
			return err
		}
	}
	for i, e := range exts {
		r := &reqs[i]
		if plan != nil && plan[r.obj].skip {
			continue // absent, as the map knows: nothing to change
		}
		ops := r.ops
		if r.ifExists {
			ops = append([]osdop.Op{{Code: osdop.Stat}}, ops...)
		}
		r.c = w.OperateAsync(ctx, lay.objectName(e.object), ops)
	}
	var first error
	removed := make([]bool, len(objs))
	for i, r := range reqs {
		if r.c == nil {
			continue
		}
		_, err := r.c.Wait()
		if errors.Is(err, client.ErrNotFound) && r.cloned {
			err = copyUp(ctx, w, lay, parent, overlap, exts[i].object, r.ops)
		}
		if err == nil || errors.Is(err, client.ErrNotFound) {
			removed[r.obj] = removal[r.obj]
		} else if first == nil {
			first = fmt.Errorf("rbd: %s at %d: %w", lay.objectName(exts[i].object), exts[i].objOff, err)
		}
	}
	if plan != nil {
		if err := img.endChanges(ctx, objs, plan, removed); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Flush returns once every write acknowledged so far is durable: writes
// are acknowledged only when every acting OSD committed them, so there
// is nothing to wait for.
func (img *Image) Flush(context.Context) error { return nil }

// checkWritable refuses data changes through an image opened at a
// snapshot, or without its header watch (OpenHeader; Remove's own open).
func (img *Image) checkWritable() error {
	switch {
	case img.snap != nil:
		return fmt.Errorf("rbd: image %s/%s@%s: %w", img.pool.Name(), img.name, img.snap.Name, ErrReadOnly)
	case img.watch == nil:
		return fmt.Errorf("rbd: image %s/%s: %w: opened for its header only", img.pool.Name(), img.name, ErrReadOnly)
	}
	return nil
}

func checkRange(off, n, size uint64) error {
	if off+n < off || off+n > size {
		return fmt.Errorf("rbd: %w: %d bytes at %d past the image's end (%d bytes)", ErrInvalid, n, off, size)
	}
	return nil
}
