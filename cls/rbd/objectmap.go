package rbd

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/shoal-project/shoal/cls"
)

// The object map (features object-map and fast-diff), as Ceph's
// (src/cls/rbd object_map_*, src/librbd/object_map): 2 bits per data
// object telling whether it exists, kept by the exclusive lock's holder
// in the object ObjectMapPrefix+ID (the head) and
// ObjectMapPrefix+ID+".%016x" (a copy per snapshot). Its data is an
// 8-byte little-endian object count, then the states, four to a byte,
// the first in the high bits.
//
// Methods on a map object:
//
//	object_map_resize    ResizeMapInput    objects past the count dropped, new ones NONEXISTENT
//	object_map_update    UpdateMapInput → []uint8 (the range's states after)
//	object_map_snap_add  {}                every EXISTS becomes EXISTS_CLEAN (a snapshot was taken)
//	object_map_snap_remove SnapRemoveMapInput  a removed snapshot's dirty objects stay dirty here

// ObjectMapPrefix names object maps (librbd's RBD_OBJECT_MAP_PREFIX).
const ObjectMapPrefix = "rbd_object_map."

// Object states (Ceph's OBJECT_NONEXISTENT, OBJECT_EXISTS,
// OBJECT_PENDING, OBJECT_EXISTS_CLEAN). EXISTS also means "written since
// the last snapshot" (fast-diff), EXISTS_CLEAN "exists, unchanged since";
// PENDING marks an object being removed (it may still exist).
const (
	ObjectNonexistent uint8 = iota
	ObjectExists
	ObjectPending
	ObjectExistsClean
)

// ObjectMap is a map's states, one per object.
type ObjectMap []uint8

// EncodeObjectMap is a map object's data: the count (8 bytes, little
// endian), then the states, four to a byte, the first in the high bits.
func EncodeObjectMap(m ObjectMap) []byte {
	b := make([]byte, 8+(len(m)+3)/4)
	binary.LittleEndian.PutUint64(b, uint64(len(m)))
	for i, s := range m {
		b[8+i/4] |= (s & 3) << (6 - 2*(i%4))
	}
	return b
}

// DecodeObjectMap reads EncodeObjectMap's form (an empty object: an
// empty map); data shorter than its count needs is cls.ErrInvalid.
func DecodeObjectMap(b []byte) (ObjectMap, error) {
	if len(b) == 0 {
		return ObjectMap{}, nil
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: object map of %d bytes", cls.ErrInvalid, len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if uint64(len(b)-8) < (n+3)/4 {
		return nil, fmt.Errorf("%w: object map of %d objects in %d bytes", cls.ErrInvalid, n, len(b))
	}
	m := make(ObjectMap, n)
	for i := range m {
		m[i] = b[8+i/4] >> (6 - 2*(i%4)) & 3
	}
	return m, nil
}

// ResizeMapInput sets a map's object count.
type ResizeMapInput struct {
	Objects uint64 `json:"objects"`
}

// UpdateMapInput sets objects [Start, End) to State — only those now in
// state Current, if given. A range past the map's end grows it.
type UpdateMapInput struct {
	Start   uint64 `json:"start"`
	End     uint64 `json:"end"`
	State   uint8  `json:"state"`
	Current *uint8 `json:"current,omitempty"`
}

// SnapRemoveMapInput is a removed snapshot's map: its objects written
// since the snapshot before it (EXISTS) are written since the one before
// the next newer map too.
type SnapRemoveMapInput struct {
	Removed []byte `json:"removed"` // EncodeObjectMap's form
}

func init() {
	for name, m := range map[string]cls.Method{
		"object_map_resize": mapResize, "object_map_update": mapUpdate,
		"object_map_snap_add": mapSnapAdd, "object_map_snap_remove": mapSnapRemove,
	} {
		cls.Register("rbd", name, m)
	}
}

func loadMap(o cls.Object) (ObjectMap, error) {
	if !o.Exists() {
		return ObjectMap{}, nil
	}
	b, err := o.Read(0, 0)
	if err != nil {
		return nil, err
	}
	return DecodeObjectMap(b)
}

func mapResize(o cls.Object, in []byte) ([]byte, error) {
	var r ResizeMapInput
	if err := decode(in, &r); err != nil {
		return nil, err
	}
	m, err := loadMap(o)
	if err != nil {
		return nil, err
	}
	if r.Objects > 1<<32 {
		return nil, fmt.Errorf("%w: %d objects", cls.ErrInvalid, r.Objects)
	}
	if r.Objects <= uint64(len(m)) {
		m = m[:r.Objects]
	} else {
		m = append(m, make(ObjectMap, r.Objects-uint64(len(m)))...)
	}
	o.WriteFull(EncodeObjectMap(m))
	return nil, nil
}

func mapUpdate(o cls.Object, in []byte) ([]byte, error) {
	var u UpdateMapInput
	if err := decode(in, &u); err != nil {
		return nil, err
	}
	if u.State > ObjectExistsClean || u.Start > u.End || u.End > 1<<32 {
		return nil, fmt.Errorf("%w: state %d for objects [%d, %d)", cls.ErrInvalid, u.State, u.Start, u.End)
	}
	m, err := loadMap(o)
	if err != nil {
		return nil, err
	}
	grown := u.End > uint64(len(m))
	if grown {
		m = append(m, make(ObjectMap, u.End-uint64(len(m)))...)
	}
	changed := false
	for i := u.Start; i < u.End; i++ {
		if (u.Current == nil || m[i] == *u.Current) && m[i] != u.State {
			m[i], changed = u.State, true
		}
	}
	switch {
	case grown:
		o.WriteFull(EncodeObjectMap(m))
	case changed: // only the bytes of the range
		b := EncodeObjectMap(m)
		lo, hi := 8+u.Start/4, 8+(u.End+3)/4
		o.Write(lo, b[lo:hi])
	}
	return json.Marshal(m[u.Start:u.End])
}

func mapSnapAdd(o cls.Object, _ []byte) ([]byte, error) {
	m, err := loadMap(o)
	if err != nil {
		return nil, err
	}
	for i, s := range m {
		if s == ObjectExists {
			m[i] = ObjectExistsClean
		}
	}
	o.WriteFull(EncodeObjectMap(m))
	return nil, nil
}

func mapSnapRemove(o cls.Object, in []byte) ([]byte, error) {
	var r SnapRemoveMapInput
	if err := decode(in, &r); err != nil {
		return nil, err
	}
	removed, err := DecodeObjectMap(r.Removed)
	if err != nil {
		return nil, err
	}
	m, err := loadMap(o)
	if err != nil {
		return nil, err
	}
	for i := range min(len(m), len(removed)) {
		if removed[i] == ObjectExists && m[i] == ObjectExistsClean {
			m[i] = ObjectExists
		}
	}
	o.WriteFull(EncodeObjectMap(m))
	return nil, nil
}
