package rbd

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/osdop"
)

// SnapCreate takes snapshot name of the image (rbd snap create): a
// self-managed snap id from the data pool's MONs, recorded in the
// header with the image's size; every client with the image open reloads
// its header before this returns, so their later writes clone.
func (img *Image) SnapCreate(ctx context.Context, name string) error {
	if img.snap != nil {
		return fmt.Errorf("rbd: image %s/%s@%s: %w", img.pool.Name(), img.name, img.snap.Name, ErrReadOnly)
	}
	if name == "" {
		return fmt.Errorf("rbd: %w: empty snapshot name", ErrInvalid)
	}
	id, err := img.data.SelfManagedSnapCreate(ctx)
	if err != nil {
		return fmt.Errorf("rbd: snap create %s/%s@%s: %w", img.pool.Name(), img.name, name, err)
	}
	add := func() error {
		_, err := exec(ctx, img.pool, img.headerOID(), "snapshot_add", clsrbd.Snapshot{ID: id, Name: name, Size: img.Size()})
		if err != nil {
			img.data.SelfManagedSnapRemove(context.WithoutCancel(ctx), id)
			if errors.Is(err, client.ErrExists) {
				err = ErrExists
			}
			return fmt.Errorf("rbd: snap create %s/%s@%s: %w", img.pool.Name(), img.name, name, err)
		}
		return nil
	}
	if img.hasFeature(clsrbd.FeatureObjectMap) {
		// as the lock holder with no write running: the header takes the
		// snapshot, then the head's map is copied for it and marked clean
		err = img.exclusively(ctx, func() error {
			if err := add(); err != nil {
				return err
			}
			if err := img.snapMaps(ctx, id); err != nil {
				return fmt.Errorf("rbd: snap create %s/%s@%s: object map: %w", img.pool.Name(), img.name, name, err)
			}
			return nil
		})
	} else {
		err = add()
	}
	if err != nil {
		return err
	}
	return img.notifyChange(ctx)
}

// Snapshots lists the image's snapshots, oldest first.
func (img *Image) Snapshots() []clsrbd.Snapshot { return img.Info().Snapshots }

// snapshot finds snapshot name (ErrNotFound).
func (img *Image) snapshot(name string) (clsrbd.Snapshot, error) {
	img.mu.RLock()
	defer img.mu.RUnlock()
	i := slices.IndexFunc(img.h.Snapshots, func(s clsrbd.Snapshot) bool { return s.Name == name })
	if i < 0 {
		return clsrbd.Snapshot{}, fmt.Errorf("rbd: image %s/%s@%s: %w", img.pool.Name(), img.name, name, ErrNotFound)
	}
	return img.h.Snapshots[i], nil
}

// SnapRemove removes snapshot name (rbd snap rm): it leaves the header,
// then its snap id is removed from the data pool, and the OSDs trim its
// clones in the background. A protected snapshot is ErrBusy.
func (img *Image) SnapRemove(ctx context.Context, name string) error {
	s, err := img.snapshot(name)
	if err != nil {
		return err
	}
	objectMap := img.hasFeature(clsrbd.FeatureObjectMap)
	if objectMap && !s.Protected {
		// the objects it saw written stay written in the next newer map
		// before it leaves the header: an interrupted removal leaves it
		// listed, and fast-diff never misses what it recorded
		if err := img.exclusively(ctx, func() error { return img.mergeSnapMap(ctx, s.ID, img.Snapshots()) }); err != nil {
			return fmt.Errorf("rbd: snap rm %s/%s@%s: object map: %w", img.pool.Name(), img.name, name, err)
		}
	}
	if _, err := exec(ctx, img.pool, img.headerOID(), "snapshot_remove", clsrbd.SnapIDInput{ID: s.ID}); err != nil {
		if errors.Is(err, osdop.ErrBusy) {
			err = fmt.Errorf("%w: it is protected (shoal rbd snap unprotect first)", ErrBusy)
		}
		return fmt.Errorf("rbd: snap rm %s/%s@%s: %w", img.pool.Name(), img.name, name, err)
	}
	if err := img.notifyChange(ctx); err != nil {
		return err
	}
	if objectMap {
		if err := img.pool.Remove(ctx, img.mapOID(s.ID)); err != nil && !errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("rbd: snap rm %s/%s@%s: object map: %w", img.pool.Name(), img.name, name, err)
		}
	}
	if err := img.data.SelfManagedSnapRemove(ctx, s.ID); err != nil {
		return fmt.Errorf("rbd: snap rm %s/%s@%s: release snap id %d: %w", img.pool.Name(), img.name, name, s.ID, err)
	}
	if s.Parent != nil { // the last snapshot of a flattened clone lets its parent go
		return img.unlinkIfUnused(ctx, *s.Parent)
	}
	return nil
}

// SnapProtect protects snapshot name from removal (rbd snap protect), so
// that it can be cloned, or with protect false lifts that (rbd snap
// unprotect) — ErrBusy while it has clones. Unprotecting is Ceph's three
// steps: mark the snapshot unprotecting (no new clone will keep it),
// look for its clones in every pool, then unprotect it, or, if one was
// found, protect it again.
func (img *Image) SnapProtect(ctx context.Context, name string, protect bool) error {
	s, err := img.snapshot(name)
	if err != nil {
		return err
	}
	set := func(in clsrbd.ProtectInput) error {
		if _, err := exec(ctx, img.pool, img.headerOID(), "set_protection_status", in); err != nil {
			return fmt.Errorf("rbd: snap protect %s/%s@%s: %w", img.pool.Name(), img.name, name, err)
		}
		return nil
	}
	if !protect {
		if err := set(clsrbd.ProtectInput{ID: s.ID, Protected: true, Unprotecting: true}); err != nil {
			return err
		}
		kids, err := children(ctx, img.pool.Conn(), img.pool.ID(), img.id, s.ID)
		if err == nil && len(kids) > 0 {
			err = fmt.Errorf("rbd: snap unprotect %s/%s@%s: %w: it has %d clones (%s first; shoal rbd children lists them)", img.pool.Name(), img.name, name, ErrBusy, len(kids), kids[0])
		}
		if err != nil {
			return errors.Join(err, set(clsrbd.ProtectInput{ID: s.ID, Protected: true}))
		}
	}
	if err := set(clsrbd.ProtectInput{ID: s.ID, Protected: protect}); err != nil {
		return err
	}
	return img.notifyChange(ctx)
}

// SnapRollback makes the image's head what it was at snapshot name (rbd
// snap rollback): every data object is rolled back to the snap (removed
// if it did not exist then), then the size is set back. Other clients
// should not write meanwhile, as with rbd.
func (img *Image) SnapRollback(ctx context.Context, name string) error {
	if img.snap != nil {
		return fmt.Errorf("rbd: image %s/%s@%s: %w", img.pool.Name(), img.name, img.snap.Name, ErrReadOnly)
	}
	s, err := img.snapshot(name)
	if err != nil {
		return err
	}
	img.mu.RLock()
	w, n, parent := img.wr, img.objectCountLocked(max(img.h.Size, s.Size)), img.h.Parent
	img.mu.RUnlock()
	in := clsrbd.SizeInput{Size: s.Size}
	if s.Parent != nil {
		if !sameParent(parent, s.Parent) {
			return fmt.Errorf("rbd: snap rollback %s/%s@%s: %w: the image was flattened after the snapshot, whose unwritten objects read its former parent", img.pool.Name(), img.name, name, ErrInvalid)
		}
		in.ParentOverlap = &s.Parent.Overlap
	}
	objectMap := img.hasFeature(clsrbd.FeatureObjectMap)
	err = img.exclusively(ctx, func() error {
		if objectMap { // every object may exist until the snapshot's map is in
			if err := img.markRange(ctx, 0, n, clsrbd.ObjectExists); err != nil {
				return err
			}
		}
		if err := img.forObjects(ctx, n, func(_ uint64, oid string) error {
			if err := w.Rollback(ctx, oid, s.ID); err != nil && !errors.Is(err, client.ErrNotFound) {
				return err
			}
			return nil
		}); err != nil || !objectMap {
			return err
		}
		return img.rollbackMap(ctx, s.ID)
	})
	if err != nil {
		return fmt.Errorf("rbd: snap rollback %s/%s@%s: %w", img.pool.Name(), img.name, name, err)
	}
	if _, err := exec(ctx, img.pool, img.headerOID(), "set_size", in); err != nil {
		return fmt.Errorf("rbd: snap rollback %s/%s@%s: %w", img.pool.Name(), img.name, name, err)
	}
	return img.notifyChange(ctx)
}
