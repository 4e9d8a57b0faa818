// Package rbd is the block image class, the part of Ceph's cls_rbd
// (src/cls/rbd) that Shoal's images use: an image's header object and the
// pool's image directory change only through these methods, so each
// change — creating an image, resizing it, adding or removing a snapshot,
// renaming — is atomic and replicated like any write, and two clients
// racing on one header never interleave.
//
// The layout is RBD's format 2. The directory object (DirectoryOID) maps
// names to ids in its omap ("name_NAME" → ID, "id_ID" → NAME); the object
// IDObjectPrefix+NAME holds the image's id as its data; the header object
// HeaderObjectPrefix+ID keeps the image in its omap, one key per field as
// cls_rbd names them: "size", "order", "features", "stripe_unit",
// "stripe_count", "data_pool_id" and "snap_seq" (8-byte little-endian
// integers), "object_prefix" (the data objects' name prefix),
// "snapshot_%016x" per snapshot (a JSON Snapshot record; Ceph encodes its
// cls_rbd_snap there) and, for a clone, "parent" (a JSON Parent; Ceph's
// cls_rbd_parent). A clone's pool lists it in ChildrenOID's omap under
// ChildKey(parent, id), so a parent's snapshot knows its children (Ceph's
// rbd_children, clone format 1).
//
// Methods ("rbd.METHOD", inputs and outputs JSON):
//
//	create           Header (snapshot fields ignored)   EEXIST the header exists
//	get_header       {}            → Header              ENOENT no such image
//	set_size         SizeInput                           ENOENT
//	snapshot_add     Snapshot (its Parent ignored)       EEXIST name taken; EINVAL id not newer than snap_seq
//	snapshot_remove  SnapIDInput                         ENOENT no such snapshot; EBUSY protected
//	set_protection_status ProtectInput                   ENOENT no such snapshot
//	set_parent_overlap OverlapInput                      ENOENT not a clone; EINVAL a larger overlap
//	remove_parent    {}                                  ENOENT not a clone
//	set_features     FeaturesInput                       EINVAL a feature that cannot change, or a missing dependency
//	dir_add_image    DirInput                            EEXIST the name or the id is taken
//	dir_remove_image DirInput                            ENOENT the name does not map to the id
//	dir_rename_image RenameInput                         ENOENT no such name; EEXIST the new one is taken
//	dir_list         {}            → map name → id
package rbd

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/omap"
)

// Object names of RBD's format 2 (librbd's RBD_DIRECTORY, RBD_ID_PREFIX,
// RBD_HEADER_PREFIX, RBD_DATA_PREFIX).
const (
	DirectoryOID       = "rbd_directory"
	IDObjectPrefix     = "rbd_id."
	HeaderObjectPrefix = "rbd_header."
	DataObjectPrefix   = "rbd_data."
)

// Header is an image as its header records it.
type Header struct {
	Size         uint64     `json:"size"`  // bytes
	Order        uint8      `json:"order"` // objects are 2^order bytes
	Features     uint64     `json:"features"`
	ObjectPrefix string     `json:"object_prefix"` // "rbd_data.ID": object n is ObjectPrefix + ".%016x"
	StripeUnit   uint64     `json:"stripe_unit"`   // bytes; 2^order when not striped
	StripeCount  uint64     `json:"stripe_count"`  // objects a stripe spans; 1 when not striped
	DataPoolID   int64      `json:"data_pool_id"`  // -1: the header's own pool
	SnapSeq      uint64     `json:"snap_seq"`      // the newest snap id the image has used
	Snapshots    []Snapshot `json:"snapshots,omitempty"`
	Parent       *Parent    `json:"parent,omitempty"` // a clone's parent; nil for other images (and flattened clones)
}

// Parent is where a clone reads what it has not written (its parent
// overlap): the snapshot SnapID of image ImageID in pool PoolID, bytes
// [0, Overlap) of which show through the clone's unwritten objects.
// The overlap starts as the snapshot's size and only shrinks (with the
// clone's size); Ceph's cls_rbd_parent.
type Parent struct {
	PoolID  int64  `json:"pool_id"`
	ImageID string `json:"image_id"`
	SnapID  uint64 `json:"snap_id"`
	Overlap uint64 `json:"overlap"` // bytes
}

// ChildrenOID is the object of a pool whose omap lists the pool's clones
// by parent (Ceph's RBD_CHILDREN): one key per clone, ChildKey's, with an
// empty value.
const ChildrenOID = "rbd_children"

// ChildPrefix is the key prefix of the clones of snapshot snapID of
// image imageID in pool poolID in a ChildrenOID omap.
func ChildPrefix(poolID int64, imageID string, snapID uint64) string {
	return fmt.Sprintf("%d.%s.%016x/", poolID, imageID, snapID)
}

// ChildKey is clone childID's key under its parent in a ChildrenOID omap.
func ChildKey(p Parent, childID string) string {
	return ChildPrefix(p.PoolID, p.ImageID, p.SnapID) + childID
}

// Snapshot is one snapshot of an image: its snap id (allocated in the
// data pool, a self-managed snap), its name and the image's size then.
type Snapshot struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
	Size uint64 `json:"size"`
	// Protected snapshots cannot be removed (rbd snap protect; Ceph's
	// RBD_PROTECTION_STATUS_PROTECTED); only a protected snapshot can be
	// cloned. Unprotecting marks one being unprotected (Ceph's
	// RBD_PROTECTION_STATUS_UNPROTECTING): still not removable, but no
	// longer clonable, while its clones are looked for.
	Protected    bool `json:"protected,omitempty"`
	Unprotecting bool `json:"unprotecting,omitempty"`
	// Parent is a clone's parent when the snapshot was taken (its
	// overlap then); the clone's objects absent at the snapshot read
	// from it. snapshot_add records it from the header.
	Parent *Parent `json:"parent,omitempty"`
}

// ProtectInput sets snapshot ID's protection.
type ProtectInput struct {
	ID           uint64 `json:"id"`
	Protected    bool   `json:"protected"`
	Unprotecting bool   `json:"unprotecting,omitempty"` // with Protected
}

// SizeInput is set_size's input. A clone's parent overlap shrinks with
// its size; ParentOverlap, if set, sets it instead (a rollback to a
// snapshot restores the snapshot's overlap), at most the new size.
type SizeInput struct {
	Size          uint64  `json:"size"`
	ParentOverlap *uint64 `json:"parent_overlap,omitempty"`
}

// OverlapInput is set_parent_overlap's: a clone's new, smaller, parent
// overlap in bytes.
type OverlapInput struct {
	Overlap uint64 `json:"overlap"`
}

// SnapIDInput names a snapshot by id.
type SnapIDInput struct {
	ID uint64 `json:"id"`
}

// DirInput is a directory entry: image name and id.
type DirInput struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// RenameInput renames image ID from Src to Dst.
type RenameInput struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
	ID  string `json:"id"`
}

// Image features: the header's "features" bits, RBD's (Ceph:
// src/include/rbd/features.h).
const (
	FeatureLayering      = 1 << 0                                                    // clones read through a parent
	FeatureStriping      = 1 << 1                                                    // a stripe unit or count other than the object size and 1
	FeatureExclusiveLock = 1 << 2                                                    // one writer at a time, through the header's rbd_lock
	FeatureObjectMap     = 1 << 3                                                    // a map of which data objects exist (needs exclusive-lock)
	FeatureFastDiff      = 1 << 4                                                    // the object map also tracks what changed since each snapshot (needs object-map)
	FeatureDataPool      = 1 << 7                                                    // data objects in another pool
	FeaturesMutable      = FeatureExclusiveLock | FeatureObjectMap | FeatureFastDiff // those rbd feature enable|disable changes
)

// FeatureNames are the features' names, as rbd prints and takes them.
var FeatureNames = map[uint64]string{FeatureLayering: "layering", FeatureStriping: "striping",
	FeatureExclusiveLock: "exclusive-lock", FeatureObjectMap: "object-map", FeatureFastDiff: "fast-diff",
	FeatureDataPool: "data-pool"}

// CheckFeatures refuses a feature set whose features lack the features
// they depend on.
func CheckFeatures(f uint64) error {
	switch {
	case f&FeatureObjectMap != 0 && f&FeatureExclusiveLock == 0:
		return fmt.Errorf("%w: object-map needs exclusive-lock", cls.ErrInvalid)
	case f&FeatureFastDiff != 0 && f&FeatureObjectMap == 0:
		return fmt.Errorf("%w: fast-diff needs object-map", cls.ErrInvalid)
	}
	return nil
}

// FeaturesInput sets the features in Mask to those of Features (only
// FeaturesMutable may change).
type FeaturesInput struct {
	Features uint64 `json:"features"`
	Mask     uint64 `json:"mask"`
}

// Header omap keys (cls_rbd's).
const (
	keySize         = "size"
	keyOrder        = "order"
	keyFeatures     = "features"
	keyObjectPrefix = "object_prefix"
	keyStripeUnit   = "stripe_unit"
	keyStripeCount  = "stripe_count"
	keyDataPool     = "data_pool_id"
	keySnapSeq      = "snap_seq"
	keyParent       = "parent"
	snapKeyPrefix   = "snapshot_"
)

func snapKey(id uint64) string { return fmt.Sprintf("%s%016x", snapKeyPrefix, id) }

func init() {
	for name, m := range map[string]cls.Method{
		"create": create, "set_size": setSize,
		"snapshot_add": snapshotAdd, "snapshot_remove": snapshotRemove,
		"set_protection_status": setProtection,
		"set_parent_overlap":    setParentOverlap, "remove_parent": removeParent,
		"set_features":  setFeatures,
		"dir_add_image": dirAdd, "dir_remove_image": dirRemove,
		"dir_rename_image": dirRename,
	} {
		cls.Register("rbd", name, m)
	}
	cls.RegisterRead("rbd", "get_header", getHeader)
	cls.RegisterRead("rbd", "dir_list", dirList)
}

func decode(in []byte, v any) error {
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("%w: %v", cls.ErrInvalid, err)
	}
	return nil
}

// input decodes a method's input into a T and loads the header.
func input[T any](o cls.Object, in []byte) (T, *Header, error) {
	var v T
	if err := decode(in, &v); err != nil {
		return v, nil, err
	}
	h, err := read(o)
	return v, h, err
}

// putParent records a clone's parent in its header.
func putParent(o cls.Object, p *Parent) {
	rec, _ := json.Marshal(p)
	o.OmapSet([]omap.KV{{Key: keyParent, Value: rec}})
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func create(o cls.Object, in []byte) ([]byte, error) {
	var h Header
	if err := decode(in, &h); err != nil {
		return nil, err
	}
	switch {
	case o.Exists():
		return nil, fmt.Errorf("%w: image header", cls.ErrExists)
	case h.Order < 12 || h.Order > 25:
		return nil, fmt.Errorf("%w: order %d (objects of 4 KiB to 32 MiB: order 12 to 25)", cls.ErrInvalid, h.Order)
	case h.ObjectPrefix == "":
		return nil, fmt.Errorf("%w: empty object prefix", cls.ErrInvalid)
	case h.StripeUnit == 0 || h.StripeCount == 0 || (uint64(1)<<h.Order)%h.StripeUnit != 0:
		return nil, fmt.Errorf("%w: stripe unit %d, count %d: the unit must divide the object size %d", cls.ErrInvalid, h.StripeUnit, h.StripeCount, uint64(1)<<h.Order)
	}
	if err := CheckFeatures(h.Features); err != nil {
		return nil, err
	}
	if p := h.Parent; p != nil && (p.ImageID == "" || p.Overlap > h.Size) {
		return nil, fmt.Errorf("%w: parent %+v of an image of %d bytes", cls.ErrInvalid, *p, h.Size)
	}
	if h.Parent != nil {
		putParent(o, h.Parent)
	}
	o.OmapSet([]omap.KV{
		{Key: keySize, Value: u64(h.Size)},
		{Key: keyOrder, Value: u64(uint64(h.Order))},
		{Key: keyFeatures, Value: u64(h.Features)},
		{Key: keyObjectPrefix, Value: []byte(h.ObjectPrefix)},
		{Key: keyStripeUnit, Value: u64(h.StripeUnit)},
		{Key: keyStripeCount, Value: u64(h.StripeCount)},
		{Key: keyDataPool, Value: u64(uint64(h.DataPoolID))},
		{Key: keySnapSeq, Value: u64(0)},
	})
	return nil, nil
}

// read loads the header (ENOENT if the object is not an image header).
func read(o cls.Object) (*Header, error) {
	if !o.Exists() {
		return nil, fmt.Errorf("%w: image header", cls.ErrNotFound)
	}
	kv, err := o.OmapGet([]string{keySize, keyOrder, keyFeatures, keyObjectPrefix, keyStripeUnit, keyStripeCount, keyDataPool, keySnapSeq, keyParent})
	if err != nil {
		return nil, err
	}
	n := func(k string) (uint64, error) {
		b, ok := kv[k]
		if !ok || len(b) != 8 {
			return 0, fmt.Errorf("%w: image header: key %q missing or malformed", cls.ErrInvalid, k)
		}
		return binary.LittleEndian.Uint64(b), nil
	}
	h := &Header{ObjectPrefix: string(kv[keyObjectPrefix])}
	var order, pool uint64
	for _, f := range []struct {
		k string
		v *uint64
	}{{keySize, &h.Size}, {keyOrder, &order}, {keyFeatures, &h.Features}, {keyStripeUnit, &h.StripeUnit}, {keyStripeCount, &h.StripeCount}, {keyDataPool, &pool}, {keySnapSeq, &h.SnapSeq}} {
		if *f.v, err = n(f.k); err != nil {
			return nil, err
		}
	}
	h.Order, h.DataPoolID = uint8(order), int64(pool)
	if b, ok := kv[keyParent]; ok {
		h.Parent = new(Parent)
		if err := json.Unmarshal(b, h.Parent); err != nil {
			return nil, fmt.Errorf("%w: image header: parent: %v", cls.ErrInvalid, err)
		}
	}
	after := ""
	for {
		kvs, more, err := o.OmapList(after, snapKeyPrefix, 1024)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			var s Snapshot
			if err := json.Unmarshal(kv.Value, &s); err != nil {
				return nil, fmt.Errorf("%w: image header: %s: %v", cls.ErrInvalid, kv.Key, err)
			}
			h.Snapshots = append(h.Snapshots, s)
			after = kv.Key
		}
		if !more || len(kvs) == 0 {
			return h, nil
		}
	}
}

func getHeader(o cls.Object, _ []byte) ([]byte, error) {
	h, err := read(o)
	if err != nil {
		return nil, err
	}
	return json.Marshal(h)
}

func setSize(o cls.Object, in []byte) ([]byte, error) {
	s, h, err := input[SizeInput](o, in)
	if err != nil {
		return nil, err
	}
	o.OmapSet([]omap.KV{{Key: keySize, Value: u64(s.Size)}})
	if p := h.Parent; p != nil {
		overlap := p.Overlap
		if s.ParentOverlap != nil {
			overlap = *s.ParentOverlap
		}
		if overlap = min(overlap, s.Size); overlap != p.Overlap {
			p.Overlap = overlap
			putParent(o, p)
		}
	}
	return nil, nil
}

func setParentOverlap(o cls.Object, in []byte) ([]byte, error) {
	s, h, err := input[OverlapInput](o, in)
	if err != nil {
		return nil, err
	}
	switch {
	case h.Parent == nil:
		return nil, fmt.Errorf("%w: the image has no parent", cls.ErrNotFound)
	case s.Overlap > h.Parent.Overlap:
		return nil, fmt.Errorf("%w: parent overlap %d is larger than %d", cls.ErrInvalid, s.Overlap, h.Parent.Overlap)
	}
	h.Parent.Overlap = s.Overlap
	putParent(o, h.Parent)
	return nil, nil
}

func setFeatures(o cls.Object, in []byte) ([]byte, error) {
	f, h, err := input[FeaturesInput](o, in)
	if err != nil {
		return nil, err
	}
	if bad := f.Mask &^ FeaturesMutable; bad != 0 {
		return nil, fmt.Errorf("%w: features %#x cannot be changed", cls.ErrInvalid, bad)
	}
	next := h.Features&^f.Mask | f.Features&f.Mask
	if err := CheckFeatures(next); err != nil {
		return nil, err
	}
	o.OmapSet([]omap.KV{{Key: keyFeatures, Value: u64(next)}})
	return nil, nil
}

func removeParent(o cls.Object, _ []byte) ([]byte, error) {
	h, err := read(o)
	if err != nil {
		return nil, err
	}
	if h.Parent == nil {
		return nil, fmt.Errorf("%w: the image has no parent", cls.ErrNotFound)
	}
	o.OmapRm([]string{keyParent})
	return nil, nil
}

func snapshotAdd(o cls.Object, in []byte) ([]byte, error) {
	s, h, err := input[Snapshot](o, in)
	if err != nil {
		return nil, err
	}
	switch {
	case s.Name == "":
		return nil, fmt.Errorf("%w: empty snapshot name", cls.ErrInvalid)
	case s.ID <= h.SnapSeq:
		return nil, fmt.Errorf("%w: snap id %d is not newer than the image's snap_seq %d", cls.ErrInvalid, s.ID, h.SnapSeq)
	case slices.ContainsFunc(h.Snapshots, func(x Snapshot) bool { return x.Name == s.Name }):
		return nil, fmt.Errorf("%w: snapshot %q", cls.ErrExists, s.Name)
	}
	s.Protected, s.Unprotecting, s.Parent = false, false, h.Parent
	rec, _ := json.Marshal(s)
	o.OmapSet([]omap.KV{{Key: snapKey(s.ID), Value: rec}, {Key: keySnapSeq, Value: u64(s.ID)}})
	return nil, nil
}

func snapshotRemove(o cls.Object, in []byte) ([]byte, error) {
	s, h, err := input[SnapIDInput](o, in)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(h.Snapshots, func(x Snapshot) bool { return x.ID == s.ID })
	switch {
	case i < 0:
		return nil, fmt.Errorf("%w: snapshot id %d", cls.ErrNotFound, s.ID)
	case h.Snapshots[i].Protected:
		return nil, fmt.Errorf("%w: snapshot %q is protected (unprotect it first)", cls.ErrBusy, h.Snapshots[i].Name)
	}
	o.OmapRm([]string{snapKey(s.ID)})
	return nil, nil
}

func setProtection(o cls.Object, in []byte) ([]byte, error) {
	p, h, err := input[ProtectInput](o, in)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(h.Snapshots, func(x Snapshot) bool { return x.ID == p.ID })
	if i < 0 {
		return nil, fmt.Errorf("%w: snapshot id %d", cls.ErrNotFound, p.ID)
	}
	s := h.Snapshots[i]
	s.Protected, s.Unprotecting = p.Protected, p.Protected && p.Unprotecting
	rec, _ := json.Marshal(s)
	o.OmapSet([]omap.KV{{Key: snapKey(s.ID), Value: rec}})
	return nil, nil
}

func dirAdd(o cls.Object, in []byte) ([]byte, error) {
	var d DirInput
	if err := decode(in, &d); err != nil {
		return nil, err
	}
	if d.Name == "" || d.ID == "" || strings.ContainsAny(d.Name, "/@") {
		return nil, fmt.Errorf("%w: image name %q (id %q): empty, or with / or @", cls.ErrInvalid, d.Name, d.ID)
	}
	kv, err := o.OmapGet([]string{"name_" + d.Name, "id_" + d.ID})
	if err != nil {
		return nil, err
	}
	if len(kv) > 0 {
		return nil, fmt.Errorf("%w: image %q", cls.ErrExists, d.Name)
	}
	o.OmapSet([]omap.KV{{Key: "name_" + d.Name, Value: []byte(d.ID)}, {Key: "id_" + d.ID, Value: []byte(d.Name)}})
	return nil, nil
}

func dirRemove(o cls.Object, in []byte) ([]byte, error) {
	var d DirInput
	if err := decode(in, &d); err != nil {
		return nil, err
	}
	kv, err := o.OmapGet([]string{"name_" + d.Name})
	if err != nil {
		return nil, err
	}
	if string(kv["name_"+d.Name]) != d.ID || d.ID == "" {
		return nil, fmt.Errorf("%w: image %q with id %q", cls.ErrNotFound, d.Name, d.ID)
	}
	o.OmapRm([]string{"name_" + d.Name, "id_" + d.ID})
	return nil, nil
}

func dirRename(o cls.Object, in []byte) ([]byte, error) {
	var r RenameInput
	if err := decode(in, &r); err != nil {
		return nil, err
	}
	if r.Dst == "" || strings.ContainsAny(r.Dst, "/@") {
		return nil, fmt.Errorf("%w: image name %q: empty, or with / or @", cls.ErrInvalid, r.Dst)
	}
	kv, err := o.OmapGet([]string{"name_" + r.Src, "name_" + r.Dst})
	if err != nil {
		return nil, err
	}
	switch {
	case string(kv["name_"+r.Src]) != r.ID || r.ID == "":
		return nil, fmt.Errorf("%w: image %q with id %q", cls.ErrNotFound, r.Src, r.ID)
	case kv["name_"+r.Dst] != nil:
		return nil, fmt.Errorf("%w: image %q", cls.ErrExists, r.Dst)
	}
	o.OmapRm([]string{"name_" + r.Src})
	o.OmapSet([]omap.KV{{Key: "name_" + r.Dst, Value: []byte(r.ID)}, {Key: "id_" + r.ID, Value: []byte(r.Dst)}})
	return nil, nil
}

func dirList(o cls.Object, _ []byte) ([]byte, error) {
	out := map[string]string{}
	if !o.Exists() {
		return json.Marshal(out)
	}
	after := ""
	for {
		kvs, more, err := o.OmapList(after, "name_", 1024)
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			out[strings.TrimPrefix(kv.Key, "name_")] = string(kv.Value)
			after = kv.Key
		}
		if !more || len(kvs) == 0 {
			return json.Marshal(out)
		}
	}
}
