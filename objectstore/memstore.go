package objectstore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	crc "github.com/shoal-project/shoal/internal/crc32c"
)

// MemStore is an in-memory Store with the same semantics as BlockStore and
// none of its durability: the model the differential tests compare
// BlockStore against, and a fast store for tests of the layers above.
type MemStore struct {
	mu     sync.RWMutex
	colls  map[Coll]map[string]*memObject
	fences map[Coll][]*Split // splits since each collection was made
}

type memObject struct {
	data  []byte
	attrs map[string][]byte
	omap  map[string][]byte
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{colls: map[Coll]map[string]*memObject{}} }

func (m *memObject) clone() *memObject {
	n := &memObject{data: append([]byte(nil), m.data...), attrs: map[string][]byte{}, omap: map[string][]byte{}}
	for k, v := range m.attrs {
		n.attrs[k] = append([]byte(nil), v...)
	}
	for k, v := range m.omap {
		n.omap[k] = append([]byte(nil), v...)
	}
	return n
}

func (m *memObject) resize(size uint64) {
	if uint64(len(m.data)) < size {
		m.data = append(m.data, make([]byte, size-uint64(len(m.data)))...)
	}
	m.data = m.data[:size]
}

// Submit implements Store; MemStore applies at once.
func (s *MemStore) Submit(t *Transaction) <-chan error {
	out := make(chan error, 1)
	out <- s.Apply(t)
	return out
}

// Apply applies t atomically: on error nothing changes.
func (s *MemStore) Apply(t *Transaction) error {
	for i := range t.ops {
		if err := t.ops[i].validate(); err != nil {
			return fmt.Errorf("memstore: op %d: %w", i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// work on copies of what t touches, then publish
	colls := map[Coll]map[string]*memObject{}
	get := func(c Coll) map[string]*memObject {
		if objs, ok := colls[c]; ok {
			return objs
		}
		objs, ok := s.colls[c]
		if !ok {
			return nil
		}
		cp := make(map[string]*memObject, len(objs))
		for k, v := range objs {
			cp[k] = v
		}
		colls[c] = cp
		return cp
	}
	fences := map[Coll][]*Split{}
	fenceList := func(c Coll) []*Split {
		if fs, ok := fences[c]; ok {
			return fs
		}
		return s.fences[c]
	}
	touched := map[*memObject]bool{}
	obj := func(objs map[string]*memObject, oid string, create bool) *memObject {
		o := objs[oid]
		if o == nil {
			if !create {
				return nil
			}
			o = &memObject{attrs: map[string][]byte{}, omap: map[string][]byte{}}
		} else if !touched[o] {
			o = o.clone()
		}
		touched[o] = true
		objs[oid] = o
		return o
	}
	for i := range t.ops {
		op := &t.ops[i]
		fail := func(err error) error { return fmt.Errorf("memstore: op %d: %w", i, err) }
		objs := get(op.coll)
		switch op.code {
		case opCreateColl:
			if objs != nil {
				return fail(ErrExists)
			}
			colls[op.coll] = map[string]*memObject{}
			continue
		case opRemoveColl:
			if objs == nil {
				return fail(ErrNotFound)
			}
			if len(objs) > 0 {
				return fail(ErrNotEmpty)
			}
			colls[op.coll] = nil
			fences[op.coll] = nil
			continue
		case opSplit:
			if objs == nil {
				return fail(ErrNotFound)
			}
			if err := s.split(t.ops[:i], op, objs, get, obj); err != nil {
				return fail(err)
			}
			fences[op.coll] = append(slices.Clone(fenceList(op.coll)), op.split)
			continue
		}
		if objs == nil {
			return fail(ErrNotFound)
		}
		if err := op.fenced(fenceList(op.coll)); err != nil {
			return fail(err)
		}
		switch op.code {
		case opRemove, opRmAttr, opOmapRm, opOmapClear, opClone, opStash:
			if objs[op.oid] == nil {
				return fail(ErrNotFound)
			}
		}
		switch op.code {
		case opTouch:
			obj(objs, op.oid, true)
		case opWrite:
			o := obj(objs, op.oid, true)
			o.resize(max(uint64(len(o.data)), op.off+op.n))
			copy(o.data[op.off:], op.data)
		case opZero:
			o := obj(objs, op.oid, true)
			o.resize(max(uint64(len(o.data)), op.off+op.n))
			clear(o.data[op.off : op.off+op.n])
		case opTruncate:
			obj(objs, op.oid, true).resize(op.off)
		case opRemove:
			delete(objs, op.oid)
		case opSetAttr:
			obj(objs, op.oid, true).attrs[op.name] = append([]byte(nil), op.data...)
		case opRmAttr:
			delete(obj(objs, op.oid, false).attrs, op.name)
		case opOmapSet:
			o := obj(objs, op.oid, true)
			for _, kv := range op.kvs {
				o.omap[kv.Key] = append([]byte(nil), kv.Value...)
			}
		case opOmapRm:
			o := obj(objs, op.oid, false)
			for _, k := range op.keys {
				delete(o.omap, k)
			}
		case opOmapClear:
			obj(objs, op.oid, false).omap = map[string][]byte{}
		case opClone:
			if op.oid != op.oid2 {
				c := objs[op.oid].clone()
				touched[c] = true
				objs[op.oid2] = c
			}
		case opStash:
			if op.oid != op.oid2 {
				c := objs[op.oid].clone()
				if uint64(len(c.data)) <= op.off { // appends only: metadata
					c.attrs[StashMetaAttr] = binary.LittleEndian.AppendUint64(nil, uint64(len(c.data)))
					c.data, c.omap = nil, map[string][]byte{}
				}
				touched[c] = true
				objs[op.oid2] = c
			}
		}
	}
	for c, objs := range colls {
		if objs == nil {
			delete(s.colls, c)
		} else {
			s.colls[c] = objs
		}
	}
	installFences(&s.fences, fences)
	return nil
}

// split applies a SplitCollection op (before: the transaction's earlier
// ops) to objs, the collection's working copy, with Apply's helpers.
func (s *MemStore) split(before []op, op *op, objs map[string]*memObject, get func(Coll) map[string]*memObject,
	obj func(map[string]*memObject, string, bool) *memObject) error {
	sp := op.split
	kids := map[Coll]map[string]*memObject{}
	for _, c := range sp.Children {
		if kids[c] = get(c); kids[c] == nil {
			return fmt.Errorf("child collection %s: %w", c, ErrNotFound)
		}
	}
	if err := splitPreceded(before, op); err != nil {
		return err
	}
	for oid, o := range objs {
		if dst := sp.Target(oid); dst != "" {
			if kids[dst] == nil {
				return fmt.Errorf("split %s: %s goes to %s, not a child", op.coll, oid, dst)
			}
			kids[dst][oid] = o
			delete(objs, oid)
			if sp.Moved != nil {
				sp.Moved(oid, dst, uint64(len(o.data)), o.attrs)
			}
		}
	}
	for _, oid := range sp.Indexes {
		if objs[oid] == nil {
			continue
		}
		src := obj(objs, oid, false)
		for k, v := range src.omap {
			if dst := sp.KeyTarget(k); dst != "" {
				if kids[dst] == nil {
					return fmt.Errorf("split %s: %s entry %q goes to %s, not a child", op.coll, oid, k, dst)
				}
				obj(kids[dst], oid, true).omap[k] = v
				delete(src.omap, k)
			}
		}
	}
	return nil
}

func (s *MemStore) object(c Coll, oid string) (*memObject, error) {
	objs, ok := s.colls[c]
	if !ok || objs[oid] == nil {
		return nil, fmt.Errorf("memstore: %s/%s: %w", c, oid, ErrNotFound)
	}
	return objs[oid], nil
}

// ReadDevice is Read (MemStore caches nothing).
func (s *MemStore) ReadDevice(c Coll, oid string, off, length uint64) ([]byte, error) {
	return s.Read(c, oid, off, length)
}

// ReadVec is Read as one part (MemStore pools nothing and knows no
// checksums).
func (s *MemStore) ReadVec(c Coll, oid string, off, length uint64) ([][]byte, []crc.Sum, func(), error) {
	b, err := s.Read(c, oid, off, length)
	return [][]byte{b}, nil, func() {}, err
}

// Read implements Store.
func (s *MemStore) Read(c Coll, oid string, off, length uint64) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, err := s.object(c, oid)
	if err != nil {
		return nil, err
	}
	size := uint64(len(o.data))
	if off >= size {
		return []byte{}, nil
	}
	end := size
	if length != 0 && length < end-off {
		end = off + length
	}
	return append([]byte(nil), o.data[off:end]...), nil
}

// Stat implements Store.
func (s *MemStore) Stat(c Coll, oid string) (Stat, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, err := s.object(c, oid)
	if err != nil {
		return Stat{}, err
	}
	return Stat{Size: uint64(len(o.data))}, nil
}

// GetAttr implements Store.
func (s *MemStore) GetAttr(c Coll, oid, name string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, err := s.object(c, oid)
	if err != nil {
		return nil, err
	}
	v, ok := o.attrs[name]
	if !ok {
		return nil, fmt.Errorf("memstore: attr %q: %w", name, ErrNotFound)
	}
	return append([]byte(nil), v...), nil
}

// Attrs implements Store.
func (s *MemStore) Attrs(c Coll, oid string) (map[string][]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, err := s.object(c, oid)
	if err != nil {
		return nil, err
	}
	return o.clone().attrs, nil
}

// OmapGet implements Store.
func (s *MemStore) OmapGet(c Coll, oid string, keys []string) (map[string][]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, err := s.object(c, oid)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, k := range keys {
		if v, ok := o.omap[k]; ok {
			out[k] = append([]byte(nil), v...)
		}
	}
	return out, nil
}

// OmapList implements Store.
func (s *MemStore) OmapList(c Coll, oid, startAfter, prefix string, max int) ([]KV, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, err := s.object(c, oid)
	if err != nil {
		return nil, false, err
	}
	var keys []string
	for k := range o.omap {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	more := false
	if max > 0 && len(keys) > max {
		keys, more = keys[:max], true
	}
	out := make([]KV, len(keys))
	for i, k := range keys {
		out[i] = KV{Key: k, Value: append([]byte(nil), o.omap[k]...)}
	}
	return out, more, nil
}

// List implements Store.
func (s *MemStore) List(c Coll, startAfter string, max int) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	objs, ok := s.colls[c]
	if !ok {
		return nil, fmt.Errorf("memstore: collection %s: %w", c, ErrNotFound)
	}
	var names []string
	for n := range objs {
		if n > startAfter {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if max > 0 && len(names) > max {
		names = names[:max]
	}
	return names, nil
}

// Collections implements Store.
func (s *MemStore) Collections() ([]Coll, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Coll
	for c := range s.colls {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// StatFS implements Store; a MemStore has no device.
func (s *MemStore) StatFS() (FSStat, error) { return FSStat{}, nil }

// Close implements Store.
func (s *MemStore) Close() error { return nil }

var _ Store = (*MemStore)(nil)
