package rbd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osdop"
)

// Clone makes image name in pool a clone of parent, an image opened at a
// protected snapshot (rbd clone, layering): an image of the snapshot's
// size whose unwritten objects read the parent's bytes, and which the
// pool's ChildrenOID lists under the snapshot. The clone's layout is
// o's; an unset order (with the striping) is the parent's. o.Size is
// ignored.
//
// As Ceph's clone (format 1), the child is listed before the parent's
// protection is checked a second time: an unprotect that began
// meanwhile (it looks for children only after marking the snapshot
// unprotecting) makes the clone fail and undo itself, so a snapshot is
// never unprotected with a clone of it left.
func Clone(ctx context.Context, parent *Image, pool *client.Pool, name string, o Options) error {
	if parent.snap == nil {
		return fmt.Errorf("rbd: clone of %s/%s: %w: name a snapshot of it (IMAGE@SNAP)", parent.pool.Name(), parent.name, ErrInvalid)
	}
	what := fmt.Sprintf("rbd: clone %s/%s@%s to %s/%s", parent.pool.Name(), parent.name, parent.snap.Name, pool.Name(), name)
	snap, err := parent.currentSnap(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !snap.Protected || snap.Unprotecting {
		return fmt.Errorf("%s: %w: the snapshot is not protected (shoal rbd snap protect %s/%s@%s)", what, ErrInvalid, parent.pool.Name(), parent.name, snap.Name)
	}
	if o.Order == 0 {
		in := parent.Info()
		o.Order = in.Order
		if o.StripeUnit == 0 && o.StripeCount == 0 {
			o.StripeUnit, o.StripeCount = in.StripeUnit, in.StripeCount
		}
	}
	o.Size = snap.Size
	spec := clsrbd.Parent{PoolID: parent.pool.ID(), ImageID: parent.id, SnapID: snap.ID, Overlap: snap.Size}
	id, err := create(ctx, pool, name, o, &spec)
	if err != nil {
		return err
	}
	if err := pool.OmapSet(ctx, clsrbd.ChildrenOID, []omap.KV{{Key: clsrbd.ChildKey(spec, id)}}); err != nil {
		Remove(context.WithoutCancel(ctx), pool, name)
		return fmt.Errorf("%s: list the child: %w", what, err)
	}
	if snap, err = parent.currentSnap(ctx); err != nil || !snap.Protected || snap.Unprotecting {
		Remove(context.WithoutCancel(ctx), pool, name)
		if err == nil {
			err = fmt.Errorf("%w: the snapshot is being unprotected", ErrBusy)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// currentSnap is the snapshot the image is opened at as its header
// stands now (its protection may have changed since the open).
func (img *Image) currentSnap(ctx context.Context) (clsrbd.Snapshot, error) {
	h, err := img.loadHeader(ctx)
	if err != nil {
		return clsrbd.Snapshot{}, err
	}
	i := slices.IndexFunc(h.Snapshots, func(s clsrbd.Snapshot) bool { return s.ID == img.snap.ID })
	if i < 0 {
		return clsrbd.Snapshot{}, fmt.Errorf("rbd: image %s/%s@%s: %w", img.pool.Name(), img.name, img.snap.Name, ErrNotFound)
	}
	return h.Snapshots[i], nil
}

// openParent opens a clone's parent at its snapshot.
func openParent(ctx context.Context, conn *client.Conn, spec clsrbd.Parent) (*Image, error) {
	p := conn.Map().Pools[spec.PoolID]
	if p == nil {
		return nil, fmt.Errorf("parent: pool %d: %w", spec.PoolID, ErrNotFound)
	}
	pool, err := conn.Pool(ctx, p.Name)
	if err != nil {
		return nil, fmt.Errorf("parent: %w", err)
	}
	name := nameOf(ctx, pool, spec.ImageID)
	var perr error
	return openID(ctx, pool, name, spec.ImageID, func(ss []clsrbd.Snapshot) int {
		if i := slices.IndexFunc(ss, func(s clsrbd.Snapshot) bool { return s.ID == spec.SnapID }); i >= 0 {
			return i
		}
		perr = fmt.Errorf("parent %s/%s: snap id %d: %w", pool.Name(), name, spec.SnapID, ErrNotFound)
		return -2
	}, &perr, false)
}

// nameOf is image id's name in pool's directory, or the id if the
// directory does not have it.
func nameOf(ctx context.Context, pool *client.Pool, id string) string {
	kvs, err := pool.OmapGet(ctx, clsrbd.DirectoryOID, []string{"id_" + id})
	if err != nil || len(kvs) == 0 {
		return id
	}
	return string(kvs[0].Value)
}

// is reports whether img is the parent spec names.
func (img *Image) is(spec clsrbd.Parent) bool {
	return img.pool.ID() == spec.PoolID && img.id == spec.ImageID && img.snap != nil && img.snap.ID == spec.SnapID
}

// sameParent reports whether a and b name the same snapshot (whatever
// their overlaps).
func sameParent(a, b *clsrbd.Parent) bool {
	return a != nil && b != nil && a.PoolID == b.PoolID && a.ImageID == b.ImageID && a.SnapID == b.SnapID
}

// copyUp applies ops to object n of a clone, which did not exist when
// they were tried: one request creates the object exclusively with the
// parent's bytes under it, then applies ops. If another writer made the
// object first (EEXIST), ops go to it as it is. With no ops (flatten)
// and nothing but zeros under the object, it is left absent.
func copyUp(ctx context.Context, w *client.Pool, lay layout, parent *Image, overlap, n uint64, ops []osdop.Op) error {
	oid := lay.objectName(n)
	for {
		data, err := parentData(ctx, lay, parent, overlap, n)
		if err != nil {
			return fmt.Errorf("copy-up: %w", err)
		}
		if len(data) == 0 && len(ops) == 0 {
			return nil
		}
		req := []osdop.Op{{Code: osdop.Create, Exclusive: true}}
		if len(data) > 0 {
			req = append(req, osdop.Op{Code: osdop.Write, Data: data})
		}
		_, err = w.Operate(ctx, oid, append(req, ops...))
		if !errors.Is(err, client.ErrExists) || len(ops) == 0 {
			if errors.Is(err, client.ErrExists) {
				err = nil
			}
			return err
		}
		_, err = w.Operate(ctx, oid, append([]osdop.Op{{Code: osdop.Stat}}, ops...))
		if !errors.Is(err, client.ErrNotFound) {
			return err
		}
		// removed again since (a shrink or a rollback): copy up anew
	}
}

// parentData reads what the parent shows through object n of a clone:
// each of the object's stripe units under the overlap, at its place in
// the object, without the trailing zeros (which an object reads anyway).
func parentData(ctx context.Context, lay layout, parent *Image, overlap, n uint64) ([]byte, error) {
	buf := make([]byte, lay.objSize)
	var units []uint64
	for u := range lay.objSize / lay.su {
		if lay.unitOffset(n, u) < overlap {
			units = append(units, u)
		}
	}
	err := parallel(len(units), func(i int) error {
		u := units[i]
		at := lay.unitOffset(n, u)
		return parent.ReadAt(ctx, buf[u*lay.su:u*lay.su+min(lay.su, overlap-at)], at)
	})
	end := len(buf)
	for end > 0 && buf[end-1] == 0 {
		end--
	}
	return buf[:end], err
}

// Flatten makes a clone independent of its parent (rbd flatten): every
// object the parent shows through is copied up (progress, if not nil,
// is told of each object done, one call at a time), then the header drops its parent. The
// clone's snapshots taken before keep reading through the parent, which
// stays protected until the last of them is removed. An interrupted
// flatten can be run again. ErrInvalid if the image is not a clone.
func (img *Image) Flatten(ctx context.Context, progress func(done, total uint64)) error {
	if err := img.checkWritable(); err != nil {
		return err
	}
	img.mu.RLock()
	lay, w, parent, overlap, spec := img.layoutLocked(), img.wr, img.parent, img.overlap, img.h.Parent
	img.mu.RUnlock()
	if parent == nil {
		return fmt.Errorf("rbd: flatten %s/%s: %w: the image is not a clone", img.pool.Name(), img.name, ErrInvalid)
	}
	total := lay.objectCount(overlap)
	var mu sync.Mutex
	done := uint64(0)
	end, err := img.startWrite(ctx)
	if err != nil {
		return err
	}
	usesMap, err := img.mapReady(ctx)
	if err == nil && usesMap { // every object copy-up may create
		err = img.markRange(ctx, 0, total, clsrbd.ObjectExists)
	}
	if err != nil {
		end()
		return fmt.Errorf("rbd: flatten %s/%s: %w", img.pool.Name(), img.name, err)
	}
	err = img.forObjects(ctx, total, func(n uint64, _ string) error {
		if err := copyUp(ctx, w, lay, parent, overlap, n, nil); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if done++; progress != nil {
			progress(done, total)
		}
		return nil
	})
	end() // before the notify below, which this client's watch answers
	if err != nil {
		return fmt.Errorf("rbd: flatten %s/%s: %w", img.pool.Name(), img.name, err)
	}
	if _, err := exec(ctx, img.pool, img.headerOID(), "remove_parent", struct{}{}); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: flatten %s/%s: %w", img.pool.Name(), img.name, err)
	}
	if err := img.notifyChange(ctx); err != nil {
		return err
	}
	return img.unlinkIfUnused(ctx, *spec)
}

// unlinkIfUnused takes the image out of its pool's list of parent's
// children once neither its head nor any of its snapshots reads through
// that parent.
func (img *Image) unlinkIfUnused(ctx context.Context, parent clsrbd.Parent) error {
	img.mu.RLock()
	used := sameParent(img.h.Parent, &parent) ||
		slices.ContainsFunc(img.h.Snapshots, func(s clsrbd.Snapshot) bool { return sameParent(s.Parent, &parent) })
	img.mu.RUnlock()
	if used {
		return nil
	}
	if err := img.pool.OmapRm(ctx, clsrbd.ChildrenOID, []string{clsrbd.ChildKey(parent, img.id)}); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: image %s/%s: unlist as a child: %w", img.pool.Name(), img.name, err)
	}
	return nil
}

// Child is a clone, by pool and image name.
type Child struct {
	Pool, Name string
}

// String is the clone as rbd children prints it: "POOL/IMAGE".
func (c Child) String() string { return c.Pool + "/" + c.Name }

// Children lists the clones of the snapshot the image is opened at (rbd
// children), from every replicated pool's ChildrenOID, sorted; a clone
// flattened but with snapshots that read through the parent still counts.
func (img *Image) Children(ctx context.Context) ([]Child, error) {
	if img.snap == nil {
		return nil, fmt.Errorf("rbd: children of %s/%s: %w: name a snapshot (IMAGE@SNAP)", img.pool.Name(), img.name, ErrInvalid)
	}
	return children(ctx, img.pool.Conn(), img.pool.ID(), img.id, img.snap.ID)
}

func children(ctx context.Context, conn *client.Conn, poolID int64, id string, snapID uint64) ([]Child, error) {
	prefix := clsrbd.ChildPrefix(poolID, id, snapID)
	var out []Child
	for _, p := range conn.Map().Pools {
		pool, err := conn.Pool(ctx, p.Name)
		if err != nil {
			return nil, err
		}
		for after := ""; ; {
			kvs, more, err := pool.OmapList(ctx, clsrbd.ChildrenOID, after, prefix, 1000)
			if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrUnsupported) {
				break // no clones in the pool, or an erasure-coded one
			}
			if err != nil {
				return nil, fmt.Errorf("rbd: children in %s: %w", p.Name, err)
			}
			for _, kv := range kvs {
				out = append(out, Child{Pool: p.Name, Name: nameOf(ctx, pool, strings.TrimPrefix(kv.Key, prefix))})
				after = kv.Key
			}
			if !more || len(kvs) == 0 {
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Child) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}
