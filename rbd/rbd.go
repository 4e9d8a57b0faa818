// Package rbd is Shoal's block images, librbd's role over the client
// library: thin-provisioned virtual disks striped over RADOS objects, in
// RBD's format-2 layout (cls/rbd has the objects and the header's keys),
// so an RBD user finds the same objects, names and verbs.
//
// An image of Size bytes is cut into objects of 2^Order bytes (default
// order 22, 4 MiB) named ObjectPrefix + ".%016x" in its data pool — the
// image's own pool, or a separate one (an erasure-coded pool with
// allow_ec_overwrites, as RBD's --data-pool) while the header stays in
// the image's pool. With striping (StripeUnit smaller than the object
// size, StripeCount objects per stripe) consecutive stripe units go
// round-robin over StripeCount objects, as Ceph's Striper lays out files
// (doc/dev/file-striping.rst). An object exists once written: holes read
// as zeros, and discarding or zeroing removes, truncates or zeroes the
// objects it covers, never creating one.
//
// Snapshots are self-managed snaps of the data pool: the id comes from the
// MONs, the header records it (with the image's size then), and every
// write carries the image's SnapContext, so the OSDs clone an object
// before its first change after a snapshot. An image opened at a
// snapshot reads the data objects at that snap id and refuses writes.
// Every open image watches its header: a snapshot created or removed, or
// a resize, by anyone is notified to every watcher, which reloads the
// header before it acknowledges — the creator returns only once every
// writer writes with the new SnapContext.
//
// A clone (layering, clone.go) is an image whose header names a parent:
// a protected snapshot of another image, whose first Parent.Overlap bytes
// show through every data object the clone has not written. The first
// change to such an object copies the parent's bytes up into it, in the
// same request as the change (the request creates the object exclusively,
// so two writers never both copy up); a discard there leaves the object
// existing, empty or zeroed, so the parent never shows through again.
package rbd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Errors callers branch on (errors.Is); the client's errors pass through
// wrapped.
var (
	ErrNotFound = client.ErrNotFound // no such image or snapshot
	ErrExists   = client.ErrExists   // the image or snapshot name is taken
	ErrInvalid  = client.ErrInvalid  // bad options or an I/O past the image's end
	ErrReadOnly = osdop.ErrReadOnly  // a write to an image opened at a snapshot
	ErrBusy     = osdop.ErrBusy      // removal of an image that is open or has snapshots
)

// DefaultFeatures are the features of an image created without a
// choice: layering, exclusive-lock, object-map and fast-diff (Ceph's
// default but deep-flatten).
const DefaultFeatures = clsrbd.FeatureLayering | clsrbd.FeatureExclusiveLock | clsrbd.FeatureObjectMap | clsrbd.FeatureFastDiff

// Defaults and limits (rbd's --object-size range: 4 KiB to 32 MiB).
const (
	DefaultOrder = 22
	MinOrder     = 12
	MaxOrder     = 25
)

// Options are an image's layout at creation.
type Options struct {
	// Features are the image's features among clsrbd.FeaturesMutable (0:
	// DefaultFeatures; clsrbd.FeatureLayering alone: none of them).
	// Layering is always on, striping and data-pool follow the layout.
	Features    uint64
	Size        uint64       // bytes
	Order       uint8        // objects of 2^Order bytes; 0: DefaultOrder
	StripeUnit  uint64       // bytes, dividing the object size; 0: the object size
	StripeCount uint64       // objects a stripe spans; 0: 1
	DataPool    *client.Pool // nil: the image's own pool
}

// Create makes image name in pool, empty (no data object exists). The
// name is claimed first (its id object, created exclusively), then the
// header is written and the image entered in the pool's directory; a
// failure after the claim removes what was made.
func Create(ctx context.Context, pool *client.Pool, name string, o Options) error {
	_, err := create(ctx, pool, name, o, nil)
	return err
}

// create is Create, of a clone of parent if not nil; it returns the new
// image's id.
func create(ctx context.Context, pool *client.Pool, name string, o Options, parent *clsrbd.Parent) (string, error) {
	if o.Order == 0 {
		o.Order = DefaultOrder
	}
	objSize := uint64(1) << o.Order
	if o.StripeUnit == 0 {
		o.StripeUnit = objSize
	}
	if o.StripeCount == 0 {
		o.StripeCount = 1
	}
	switch {
	case name == "":
		return "", fmt.Errorf("rbd: %w: empty image name", ErrInvalid)
	case o.Order < MinOrder || o.Order > MaxOrder:
		return "", fmt.Errorf("rbd: %w: object size 2^%d (4 KiB to 32 MiB: order %d to %d)", ErrInvalid, o.Order, MinOrder, MaxOrder)
	case objSize%o.StripeUnit != 0 || o.StripeUnit < 4096:
		return "", fmt.Errorf("rbd: %w: stripe unit %d must be at least 4 KiB and divide the object size %d", ErrInvalid, o.StripeUnit, objSize)
	}
	if p := pool.Conn().Map().Pools[pool.ID()]; p != nil && p.Type == osdmap.PoolErasure {
		return "", fmt.Errorf("rbd: pool %s: %w: an image's header needs a replicated pool (omap); keep the image there and its data here with --data-pool %s", pool.Name(), ErrInvalid, pool.Name())
	}
	dataPoolID := int64(-1)
	if o.DataPool != nil && o.DataPool.ID() != pool.ID() {
		if err := checkDataPool(pool.Conn().Map(), o.DataPool.ID()); err != nil {
			return "", err
		}
		dataPoolID = o.DataPool.ID()
	}
	if err := checkDataPool(pool.Conn().Map(), pool.ID()); err != nil && dataPoolID < 0 {
		return "", err
	}
	id := newID()
	idObj := clsrbd.IDObjectPrefix + name
	if err := pool.Create(ctx, idObj, true); err != nil {
		if errors.Is(err, client.ErrExists) {
			return "", fmt.Errorf("rbd: image %s/%s: %w", pool.Name(), name, ErrExists)
		}
		return "", fmt.Errorf("rbd: create %s/%s: %w", pool.Name(), name, err)
	}
	undo := func(err error) (string, error) {
		pool.Remove(context.WithoutCancel(ctx), clsrbd.ObjectMapPrefix+id)
		pool.Remove(context.WithoutCancel(ctx), clsrbd.HeaderObjectPrefix+id)
		pool.Remove(context.WithoutCancel(ctx), idObj)
		return "", fmt.Errorf("rbd: create %s/%s: %w", pool.Name(), name, err)
	}
	if err := pool.WriteFull(ctx, idObj, []byte(id)); err != nil {
		return undo(err)
	}
	if o.Features == 0 {
		o.Features = DefaultFeatures
	}
	o.Features = o.Features&clsrbd.FeaturesMutable | clsrbd.FeatureLayering
	if o.StripeUnit != objSize || o.StripeCount != 1 {
		o.Features |= clsrbd.FeatureStriping
	}
	if dataPoolID >= 0 {
		o.Features |= clsrbd.FeatureDataPool
	}
	h := clsrbd.Header{Features: o.Features, Size: o.Size, Order: o.Order, ObjectPrefix: clsrbd.DataObjectPrefix + id,
		StripeUnit: o.StripeUnit, StripeCount: o.StripeCount, DataPoolID: dataPoolID, Parent: parent}
	if _, err := exec(ctx, pool, clsrbd.HeaderObjectPrefix+id, "create", h); err != nil {
		return undo(err)
	}
	if o.Features&clsrbd.FeatureObjectMap != 0 { // every object absent
		lay := layout{objSize: objSize, su: o.StripeUnit, sc: o.StripeCount}
		if _, err := exec(ctx, pool, clsrbd.ObjectMapPrefix+id, "object_map_resize", clsrbd.ResizeMapInput{Objects: lay.objectCount(o.Size)}); err != nil {
			return undo(err)
		}
	}
	if _, err := exec(ctx, pool, clsrbd.DirectoryOID, "dir_add_image", clsrbd.DirInput{Name: name, ID: id}); err != nil {
		return undo(err)
	}
	return id, nil
}

// checkDataPool refuses a pool that cannot hold an image's data: one with
// pool snapshots (images take self-managed ones, which Ceph, too, will
// not mix), or an erasure-coded one without allow_ec_overwrites.
func checkDataPool(m *osdmap.Map, id int64) error {
	p := m.Pools[id]
	switch {
	case p == nil:
		return fmt.Errorf("rbd: data pool %d: %w", id, ErrNotFound)
	case p.PoolSnapsMode():
		return fmt.Errorf("rbd: pool %s: %w: it has pool snapshots; images need self-managed ones", p.Name, ErrInvalid)
	case p.Type == osdmap.PoolErasure && p.Flags&osdmap.FlagECOverwrites == 0:
		return fmt.Errorf("rbd: pool %s: %w: an erasure-coded data pool needs allow_ec_overwrites (shoal pool set %s allow_ec_overwrites true)", p.Name, ErrInvalid, p.Name)
	}
	return nil
}

// newID is a new image id: 12 hex digits, as librbd's.
func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// exec calls an rbd class method with in (JSON) on oid.
func exec(ctx context.Context, pool *client.Pool, oid, method string, in any) ([]byte, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return pool.Exec(ctx, oid, "rbd."+method, b)
}

// List is the names of pool's images, sorted.
func List(ctx context.Context, pool *client.Pool) ([]string, error) {
	b, err := exec(ctx, pool, clsrbd.DirectoryOID, "dir_list", struct{}{})
	if errors.Is(err, client.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rbd: list %s: %w", pool.Name(), err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("rbd: list %s: %w", pool.Name(), err)
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// imageID reads image name's id from its id object.
func imageID(ctx context.Context, pool *client.Pool, name string) (string, error) {
	b, err := pool.Read(ctx, clsrbd.IDObjectPrefix+name, 0, 0)
	if errors.Is(err, client.ErrNotFound) {
		return "", fmt.Errorf("rbd: image %s/%s does not exist (%w)", pool.Name(), name, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("rbd: image %s/%s: %w", pool.Name(), name, err)
	}
	return string(b), nil
}

// Remove deletes image name: its data objects, its entry among its
// parent's children (a clone's), header, directory entry and id object,
// in that order, so an interrupted removal can be run again. It refuses (ErrBusy) an image with snapshots or one another
// client has open (a watcher on its header), as rbd rm does.
func Remove(ctx context.Context, pool *client.Pool, name string) error {
	img, err := open(ctx, pool, name, "", false)
	if errors.Is(err, ErrNotFound) {
		return removeUnfinished(ctx, pool, name, err)
	}
	if err != nil {
		return err
	}
	if len(img.h.Snapshots) > 0 {
		return fmt.Errorf("rbd: image %s/%s: %w: it has %d snapshots (shoal rbd snap purge first)", pool.Name(), name, ErrBusy, len(img.h.Snapshots))
	}
	ws, err := pool.ListWatchers(ctx, img.headerOID())
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: image %s/%s: %w", pool.Name(), name, err)
	}
	if len(ws) > 0 {
		return fmt.Errorf("rbd: image %s/%s: %w: still open by %s (and %d more)", pool.Name(), name, ErrBusy, ws[0].Instance, len(ws)-1)
	}
	if err := img.forObjects(ctx, img.objectCount(img.h.Size), func(_ uint64, oid string) error {
		if err := img.data.Remove(ctx, oid); err != nil && !errors.Is(err, client.ErrNotFound) {
			return err
		}
		return nil
	}); err != nil {
		return fmt.Errorf("rbd: remove %s/%s: data: %w", pool.Name(), name, err)
	}
	if p := img.h.Parent; p != nil {
		if err := pool.OmapRm(ctx, clsrbd.ChildrenOID, []string{clsrbd.ChildKey(*p, img.id)}); err != nil && !errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("rbd: remove %s/%s: unlist as a child: %w", pool.Name(), name, err)
		}
	}
	if err := pool.Remove(ctx, img.mapOID(0)); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: remove %s/%s: object map: %w", pool.Name(), name, err)
	}
	if err := pool.Remove(ctx, img.headerOID()); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: remove %s/%s: header: %w", pool.Name(), name, err)
	}
	if _, err := exec(ctx, pool, clsrbd.DirectoryOID, "dir_remove_image", clsrbd.DirInput{Name: name, ID: img.id}); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: remove %s/%s: directory: %w", pool.Name(), name, err)
	}
	if err := pool.Remove(ctx, clsrbd.IDObjectPrefix+name); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: remove %s/%s: %w", pool.Name(), name, err)
	}
	return nil
}

// removeUnfinished removes what an interrupted Create or Remove left of
// image name when it cannot be opened: an id object that is empty or
// names a header that does not exist, with the object map and directory
// entry of that id. Any other reason the image cannot be opened (a
// missing data pool or parent) returns openErr, as does no id object.
func removeUnfinished(ctx context.Context, pool *client.Pool, name string, openErr error) error {
	id, err := imageID(ctx, pool, name)
	if err != nil {
		return openErr
	}
	if id != "" {
		if _, err := pool.Stat(ctx, clsrbd.HeaderObjectPrefix+id); !errors.Is(err, client.ErrNotFound) {
			return openErr // the header is there: the image is whole, something else is missing
		}
		if err := pool.Remove(ctx, clsrbd.ObjectMapPrefix+id); err != nil && !errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("rbd: remove %s/%s: %w", pool.Name(), name, err)
		}
		if _, err := exec(ctx, pool, clsrbd.DirectoryOID, "dir_remove_image", clsrbd.DirInput{Name: name, ID: id}); err != nil && !errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("rbd: remove %s/%s: directory: %w", pool.Name(), name, err)
		}
	}
	if err := pool.Remove(ctx, clsrbd.IDObjectPrefix+name); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: remove %s/%s: %w", pool.Name(), name, err)
	}
	return nil
}

// Rename renames image src to dst in pool (rbd mv): the directory entry
// changes atomically, then the id object moves.
func Rename(ctx context.Context, pool *client.Pool, src, dst string) error {
	id, err := imageID(ctx, pool, src)
	if err != nil {
		return err
	}
	if err := pool.Create(ctx, clsrbd.IDObjectPrefix+dst, true); err != nil {
		if errors.Is(err, client.ErrExists) {
			return fmt.Errorf("rbd: image %s/%s: %w", pool.Name(), dst, ErrExists)
		}
		return fmt.Errorf("rbd: rename %s/%s: %w", pool.Name(), src, err)
	}
	if err := pool.WriteFull(ctx, clsrbd.IDObjectPrefix+dst, []byte(id)); err != nil {
		return fmt.Errorf("rbd: rename %s/%s: %w", pool.Name(), src, err)
	}
	if _, err := exec(ctx, pool, clsrbd.DirectoryOID, "dir_rename_image", clsrbd.RenameInput{Src: src, Dst: dst, ID: id}); err != nil {
		pool.Remove(context.WithoutCancel(ctx), clsrbd.IDObjectPrefix+dst)
		return fmt.Errorf("rbd: rename %s/%s: %w", pool.Name(), src, err)
	}
	if err := pool.Remove(ctx, clsrbd.IDObjectPrefix+src); err != nil {
		return fmt.Errorf("rbd: rename %s/%s: %w", pool.Name(), src, err)
	}
	return nil
}

// Image is an open image. Its methods may be called from several
// goroutines at once.
type Image struct {
	pool, data *client.Pool
	name, id   string
	snap       *clsrbd.Snapshot // opened at this snapshot (read-only), or nil
	watch      *client.Watch

	mu sync.RWMutex
	h  clsrbd.Header
	wr *client.Pool // the data pool with the image's SnapContext
	// parent is a clone's parent, opened at its snapshot (for this
	// image's head, or for the snapshot it is opened at); overlap is how
	// many of the parent's bytes show through. nil, 0 if not a clone.
	parent  *Image
	overlap uint64

	lk exclusiveLock
	om objectMap
}

// Open opens image name of pool at its head (snap "") or at snapshot
// snap (read-only). Close it when done: an open image at its head
// watches its header.
func Open(ctx context.Context, pool *client.Pool, name, snap string) (*Image, error) {
	return open(ctx, pool, name, snap, snap == "")
}

// OpenHeader opens image name for its header alone — its description,
// watchers and locks — without watching the header (so without
// appearing as a client with the image open): its data writes are
// refused (ErrReadOnly), as they would not learn of others' snapshots.
func OpenHeader(ctx context.Context, pool *client.Pool, name string) (*Image, error) {
	return open(ctx, pool, name, "", false)
}

func open(ctx context.Context, pool *client.Pool, name, snap string, watch bool) (*Image, error) {
	id, err := imageID(ctx, pool, name)
	if err != nil {
		return nil, err
	}
	return openID(ctx, pool, name, id, func(ss []clsrbd.Snapshot) int {
		if snap == "" {
			return -1
		}
		if i := slices.IndexFunc(ss, func(s clsrbd.Snapshot) bool { return s.Name == snap }); i >= 0 {
			return i
		}
		err = fmt.Errorf("rbd: image %s/%s@%s: %w", pool.Name(), name, snap, ErrNotFound)
		return -2
	}, &err, watch)
}

// openID opens image id (named name, for messages) of pool, at the
// snapshot whose index in the header's list pick returns (-1: the head;
// -2: fail with *perr), watching the header if watch (at the head).
func openID(ctx context.Context, pool *client.Pool, name, id string, pick func([]clsrbd.Snapshot) int, perr *error, watch bool) (*Image, error) {
	img := &Image{pool: pool, data: pool, name: name, id: id}
	h, err := img.loadHeader(ctx)
	if err != nil {
		return nil, err
	}
	if h.DataPoolID >= 0 {
		p := pool.Conn().Map().Pools[h.DataPoolID]
		if p == nil {
			return nil, fmt.Errorf("rbd: image %s/%s: data pool %d: %w", pool.Name(), name, h.DataPoolID, ErrNotFound)
		}
		if img.data, err = pool.Conn().Pool(ctx, p.Name); err != nil {
			return nil, fmt.Errorf("rbd: image %s/%s: %w", pool.Name(), name, err)
		}
	}
	switch i := pick(h.Snapshots); {
	case i == -2:
		return nil, *perr
	case i >= 0:
		s := h.Snapshots[i]
		img.snap = &s
	}
	if err := img.install(ctx, h); err != nil {
		return nil, err
	}
	if img.snap != nil {
		return img, nil
	}
	if watch {
		img.watch, err = pool.Watch(ctx, img.headerOID(), 0, img.handleNotify, img.lostWatch)
		if err != nil {
			return nil, fmt.Errorf("rbd: image %s/%s: watch header: %w", pool.Name(), name, err)
		}
	}
	return img, nil
}

// handleNotify answers a notify on the header, before it is
// acknowledged: a request for the exclusive lock releases it (once the
// writes under it are done); any other reloads the header (and releases
// the lock if the feature went).
func (img *Image) handleNotify(n client.Notification) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if string(n.Payload) != notifyRequestLock {
		img.refresh(ctx) // a failed reload leaves the old header; the next I/O error shows it
		if img.hasFeature(clsrbd.FeatureExclusiveLock) {
			return nil
		}
	}
	if released, err := img.releaseLock(ctx); released && err == nil { // a failed unlock leaves the lock for the asker to break
		if string(n.Payload) == notifyRequestLock {
			img.lk.yielded.Store(time.Now().UnixNano())
		}
		return []byte(lockReleased)
	}
	return nil
}

// refresh reloads the header.
func (img *Image) refresh(ctx context.Context) error {
	h, err := img.loadHeader(ctx)
	if err != nil {
		return err
	}
	return img.install(ctx, h)
}

// loadHeader reads the header (ErrNotFound if the image is gone).
func (img *Image) loadHeader(ctx context.Context) (clsrbd.Header, error) {
	var h clsrbd.Header
	b, err := exec(ctx, img.pool, img.headerOID(), "get_header", struct{}{})
	if err != nil {
		if errors.Is(err, client.ErrNotFound) {
			err = ErrNotFound
		}
		return h, fmt.Errorf("rbd: image %s/%s: header: %w", img.pool.Name(), img.name, err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("rbd: image %s/%s: header: %w", img.pool.Name(), img.name, err)
	}
	return h, nil
}

// install installs h, and with it the handle writes go through — the
// data pool with the image's SnapContext (its snap_seq and snapshot ids,
// newest first) — and the parent a clone reads through (the header's,
// or the snapshot's the image is opened at; opened anew only if it
// changed): all together, so no I/O pairs one header with another's
// context or parent.
func (img *Image) install(ctx context.Context, h clsrbd.Header) error {
	ids := make([]uint64, len(h.Snapshots))
	for i, s := range h.Snapshots {
		ids[i] = s.ID
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	wr := img.data.WithSnapContext(h.SnapSeq, ids)
	spec := h.Parent
	if img.snap != nil {
		spec = img.snap.Parent
	}
	img.mu.RLock()
	parent := img.parent
	img.mu.RUnlock()
	var overlap uint64
	switch {
	case spec == nil:
		parent = nil
	case parent == nil || !parent.is(*spec):
		var err error
		if parent, err = openParent(ctx, img.pool.Conn(), *spec); err != nil {
			return fmt.Errorf("rbd: image %s/%s: %w", img.pool.Name(), img.name, err)
		}
		fallthrough
	default:
		overlap = spec.Overlap
	}
	img.mu.Lock()
	img.h, img.wr, img.parent, img.overlap = h, wr, parent, overlap
	img.mu.Unlock()
	return nil
}

// notifyChange tells every client with the image open to reload its
// header, and waits for their answers.
func (img *Image) notifyChange(ctx context.Context) error {
	if _, err := img.pool.Notify(ctx, img.headerOID(), []byte(notifyHeaderUpdate), 10*time.Second); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("rbd: image %s/%s: notify: %w", img.pool.Name(), img.name, err)
	}
	return img.refresh(ctx)
}

// Close releases the exclusive lock if held and stops watching the
// header.
func (img *Image) Close(ctx context.Context) error {
	if img.watch == nil {
		return nil
	}
	_, err := img.releaseLock(ctx)
	return errors.Join(err, img.watch.Close(ctx))
}

func (img *Image) headerOID() string { return clsrbd.HeaderObjectPrefix + img.id }

// Watchers are the clients with the image open at its head (rbd
// status): the watchers of its header.
func (img *Image) Watchers(ctx context.Context) ([]osdop.WatcherInfo, error) {
	ws, err := img.pool.ListWatchers(ctx, img.headerOID())
	if err != nil {
		return nil, fmt.Errorf("rbd: image %s/%s: watchers: %w", img.pool.Name(), img.name, err)
	}
	return ws, nil
}

// HeaderOID is the name of the image's header object, which advisory
// locks (rbd lock) are taken on.
func (img *Image) HeaderOID() string { return img.headerOID() }

// Pool is the image's pool (its header's).
func (img *Image) Pool() *client.Pool { return img.pool }

// Info is an image's description (rbd info).
type Info struct {
	Name         string
	ID           string
	Size         uint64 // bytes; at the snapshot, for an image opened at one
	ObjectSize   uint64
	Order        uint8
	Objects      uint64 // data objects the size spans
	ObjectPrefix string // "rbd_data.ID"
	StripeUnit   uint64
	StripeCount  uint64
	DataPool     string // "" if the image's own pool
	Features     uint64 // clsrbd.Feature* bits
	Snapshots    []clsrbd.Snapshot
	Parent       *ParentInfo // a clone's parent (for the head or the snapshot opened); nil if none
}

// ParentInfo names a clone's parent (rbd info's parent and overlap).
type ParentInfo struct {
	Pool, Image, Snap string
	Overlap           uint64 // bytes of the parent that show through
}

// Info describes the image as its header stands.
func (img *Image) Info() Info {
	img.mu.RLock()
	defer img.mu.RUnlock()
	in := Info{Name: img.name, ID: img.id, Size: img.sizeLocked(), ObjectSize: uint64(1) << img.h.Order, Order: img.h.Order,
		ObjectPrefix: img.h.ObjectPrefix, StripeUnit: img.h.StripeUnit, StripeCount: img.h.StripeCount, Features: img.h.Features,
		Snapshots: slices.Clone(img.h.Snapshots)}
	in.Objects = img.objectCountLocked(in.Size)
	if img.data.ID() != img.pool.ID() {
		in.DataPool = img.data.Name()
	}
	if p := img.parent; p != nil {
		in.Parent = &ParentInfo{Pool: p.pool.Name(), Image: p.name, Snap: p.snap.Name, Overlap: img.overlap}
	}
	return in
}

// Size is the image's size in bytes (at its snapshot, if opened at one).
func (img *Image) Size() uint64 {
	img.mu.RLock()
	defer img.mu.RUnlock()
	return img.sizeLocked()
}

func (img *Image) sizeLocked() uint64 {
	if img.snap != nil {
		return img.snap.Size
	}
	return img.h.Size
}

// Resize changes the image's size (rbd resize). Shrinking needs
// allowShrink: the data past the new end is discarded first, then the
// header changes, so an interrupted shrink never leaves stale data
// beyond the end that a later grow could expose.
func (img *Image) Resize(ctx context.Context, size uint64, allowShrink bool) error {
	if img.snap != nil {
		return fmt.Errorf("rbd: image %s/%s@%s: %w", img.pool.Name(), img.name, img.snap.Name, ErrReadOnly)
	}
	cur := img.Size()
	if size < cur {
		if !allowShrink {
			return fmt.Errorf("rbd: image %s/%s: %w: shrinking from %d to %d bytes needs allow-shrink", img.pool.Name(), img.name, ErrInvalid, cur, size)
		}
		// to the end of the last object set, so that each object past the
		// new end is covered whole and removed, not zeroed
		img.mu.RLock()
		set := uint64(1) << img.h.Order * img.h.StripeCount
		overlap := img.overlap
		img.mu.RUnlock()
		if overlap > size { // a clone's parent stops showing past the new end first
			if _, err := exec(ctx, img.pool, img.headerOID(), "set_parent_overlap", clsrbd.OverlapInput{Overlap: size}); err != nil {
				return fmt.Errorf("rbd: resize %s/%s: %w", img.pool.Name(), img.name, err)
			}
			if err := img.notifyChange(ctx); err != nil {
				return err
			}
		}
		end := (cur + set - 1) / set * set
		if err := img.discard(ctx, size, end-size, end); err != nil {
			return err
		}
	}
	if _, err := exec(ctx, img.pool, img.headerOID(), "set_size", clsrbd.SizeInput{Size: size}); err != nil {
		return fmt.Errorf("rbd: resize %s/%s: %w", img.pool.Name(), img.name, err)
	}
	if img.hasFeature(clsrbd.FeatureObjectMap) { // the map follows (objects past the end were unmarked as removed)
		if err := img.exclusively(ctx, func() error {
			_, err := exec(ctx, img.pool, img.mapOID(0), "object_map_resize", clsrbd.ResizeMapInput{Objects: img.objectCount(size)})
			img.dropMap()
			return err
		}); err != nil {
			return fmt.Errorf("rbd: resize %s/%s: object map: %w", img.pool.Name(), img.name, err)
		}
	}
	return img.notifyChange(ctx)
}

// Used counts the bytes the image's data objects hold (rbd du's USED):
// provisioned is the image's size. With an object map, as rbd du with
// fast-diff, it counts the image bytes of every object the map has —
// whole objects, not what they hold — without asking the OSDs.
func (img *Image) Used(ctx context.Context) (uint64, error) {
	img.mu.RLock()
	size, lay, src := img.sizeLocked(), img.layoutLocked(), img.data
	img.mu.RUnlock()
	if img.snap != nil {
		src = img.data.AtSnap(img.snap.ID)
	}
	if img.hasFeature(clsrbd.FeatureObjectMap) {
		snap := uint64(0)
		if img.snap != nil {
			snap = img.snap.ID
		}
		if m, err := img.loadMap(ctx, snap); err == nil { // each object the map has, whole
			var used uint64
			for n, st := range m {
				if st != clsrbd.ObjectNonexistent {
					used += lay.objectBytes(uint64(n), size)
				}
			}
			return used, nil
		}
	}
	var mu sync.Mutex
	var used uint64
	err := img.forObjects(ctx, lay.objectCount(size), func(_ uint64, oid string) error {
		st, err := src.Stat(ctx, oid)
		if errors.Is(err, client.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		mu.Lock()
		used += st.Size
		mu.Unlock()
		return nil
	})
	return used, err
}

// forObjects calls fn for data objects 0 … n-1 (number, name), 16 at a
// time; the first error stops it.
func (img *Image) forObjects(ctx context.Context, n uint64, fn func(n uint64, oid string) error) error {
	img.mu.RLock()
	lay := img.layoutLocked()
	img.mu.RUnlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan uint64)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i, lay.objectName(i)); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

func (img *Image) objectCount(size uint64) uint64 {
	img.mu.RLock()
	defer img.mu.RUnlock()
	return img.objectCountLocked(size)
}

func (img *Image) objectCountLocked(size uint64) uint64 { return img.layoutLocked().objectCount(size) }

func (img *Image) layoutLocked() layout {
	return layout{prefix: img.h.ObjectPrefix, objSize: uint64(1) << img.h.Order, su: img.h.StripeUnit, sc: img.h.StripeCount}
}
