package crush

import (
	"fmt"
	"sort"

	"github.com/shoal-project/shoal/internal/wire"
)

// encodingVersion is the version of the binary CRUSH map encoding.
// v1: tunables, types, classes, devices, buckets, class shadows, rules.
const encodingVersion = 1

func sortedKeys[V any](m map[int32]V) []int32 {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// Encode appends the map's exact binary encoding (weights to the last
// 16.16 bit, unlike the text format's three decimals) to e. The encoding is
// deterministic: equal maps encode to equal bytes.
func (m *Map) Encode(e *wire.Encoder) {
	mark := e.Begin(encodingVersion, 1)
	t := m.Tunables
	e.U32(t.ChooseLocalTries)
	e.U32(t.ChooseLocalFallbackTries)
	e.U32(t.ChooseTotalTries)
	e.U32(t.ChooseLeafDescendOnce)
	e.U8(t.ChooseLeafVaryR)
	e.U8(t.ChooseLeafStable)
	e.U8(t.StrawCalcVersion)
	e.U32(t.AllowedBucketAlgs)
	e.U32(uint32(len(m.Types)))
	for _, id := range sortedKeys(m.Types) {
		e.I32(id)
		e.String(m.Types[id])
	}
	e.U32(uint32(len(m.classes)))
	for _, id := range sortedKeys(m.classes) {
		e.I32(id)
		e.String(m.classes[id])
	}
	e.U32(uint32(len(m.devices)))
	for _, id := range sortedKeys(m.devices) {
		d := m.devices[id]
		e.I32(d.ID)
		e.String(d.Name)
		e.String(d.Class)
	}
	bs := m.Buckets()
	e.U32(uint32(len(bs)))
	for _, b := range bs {
		e.I32(b.ID)
		e.String(b.Name)
		e.I32(b.Type)
		e.U8(uint8(b.Alg))
		e.U8(b.Hash)
		e.U32(uint32(len(b.Items)))
		for i, it := range b.Items {
			e.I32(it)
			e.U32(b.ItemWeights[i])
		}
	}
	e.U32(uint32(len(m.classBucket)))
	for _, id := range sortedKeys(m.classBucket) {
		e.I32(id)
		cls := m.classBucket[id]
		e.U32(uint32(len(cls)))
		for _, c := range sortedKeys(cls) {
			e.I32(c)
			e.I32(cls[c])
		}
	}
	rs := m.Rules()
	e.U32(uint32(len(rs)))
	for _, r := range rs {
		e.I32(r.ID)
		e.String(r.Name)
		e.U8(r.Type)
		e.U8(r.MinSize)
		e.U8(r.MaxSize)
		e.U32(uint32(len(r.Steps)))
		for _, s := range r.Steps {
			e.U32(uint32(s.Op))
			e.I32(s.Arg1)
			e.I32(s.Arg2)
		}
	}
	e.End(mark)
}

// Decode reads a map written by Encode and validates it: bucket ids are
// negative and unique, every bucket item exists, the hierarchy has no
// cycles, weights do not overflow. Errors wrap wire.ErrCorrupt.
func Decode(d *wire.Decoder) (*Map, error) {
	_, end := d.Begin("crush map", encodingVersion)
	m := &Map{Types: map[int32]string{}, devices: map[int32]*Device{}, classes: map[int32]string{},
		classBucket: map[int32]map[int32]int32{}, names: map[string]int32{}, typeIDs: map[string]int32{}}
	t := &m.Tunables
	t.ChooseLocalTries = d.U32()
	t.ChooseLocalFallbackTries = d.U32()
	t.ChooseTotalTries = d.U32()
	t.ChooseLeafDescendOnce = d.U32()
	t.ChooseLeafVaryR = d.U8()
	t.ChooseLeafStable = d.U8()
	t.StrawCalcVersion = d.U8()
	t.AllowedBucketAlgs = d.U32()
	for n := d.Count(8); n > 0; n-- {
		id := d.I32()
		m.Types[id] = d.String()
	}
	for _, id := range sortedKeys(m.Types) { // a name given twice: the higher id
		m.typeIDs[m.Types[id]] = id
	}
	for n := d.Count(8); n > 0; n-- {
		id := d.I32()
		m.classes[id] = d.String()
	}
	for n := d.Count(12); n > 0; n-- {
		dev := &Device{ID: d.I32(), Name: d.String(), Class: d.String()}
		if dev.ID < 0 || dev.ID > MaxDeviceID || m.devices[dev.ID] != nil {
			d.Fail("device id %d negative or repeated", dev.ID)
		}
		m.devices[dev.ID] = dev
		m.names[dev.Name] = dev.ID
	}
	for n := d.Count(18); n > 0 && d.Err() == nil; n-- {
		b := &Bucket{ID: d.I32(), Name: d.String(), Type: d.I32(), Alg: Alg(d.U8()), Hash: d.U8()}
		items := d.Count(8)
		b.Items = make([]int32, items)
		b.ItemWeights = make([]uint32, items)
		var sum uint64
		for i := range b.Items {
			b.Items[i] = d.I32()
			b.ItemWeights[i] = d.U32()
			sum += uint64(b.ItemWeights[i])
			if b.Items[i] > MaxDeviceID || b.Items[i] < MinBucketID {
				d.Fail("bucket %d: item %d out of range", b.ID, b.Items[i])
			}
		}
		switch {
		case b.ID >= 0 || b.ID < MinBucketID:
			d.Fail("bucket id %d out of range", b.ID)
		case m.Bucket(b.ID) != nil:
			d.Fail("bucket id %d repeated", b.ID)
		case algNames[b.Alg] == "":
			d.Fail("bucket %d: unknown algorithm %d", b.ID, b.Alg)
		case b.Hash != HashRjenkins1:
			d.Fail("bucket %d: unknown hash %d", b.ID, b.Hash)
		case sum > 1<<32-1:
			d.Fail("bucket %d: weight overflows", b.ID)
		}
		if d.Err() == nil {
			m.addBucket(b)
		}
	}
	for n := d.Count(8); n > 0; n-- {
		id := d.I32()
		cls := map[int32]int32{}
		for k := d.Count(8); k > 0; k-- {
			c := d.I32()
			cls[c] = d.I32()
		}
		m.classBucket[id] = cls
	}
	for n := d.Count(11); n > 0 && d.Err() == nil; n-- {
		r := &Rule{ID: d.I32(), Name: d.String(), Type: d.U8(), MinSize: d.U8(), MaxSize: d.U8()}
		steps := d.Count(12)
		r.Steps = make([]Step, steps)
		for i := range r.Steps {
			r.Steps[i] = Step{Op: Op(d.U32()), Arg1: d.I32(), Arg2: d.I32()}
		}
		if r.ID < 0 || r.ID > 255 || m.Rule(int(r.ID)) != nil {
			d.Fail("rule id %d out of range or repeated", r.ID)
			break
		}
		for len(m.rules) <= int(r.ID) {
			m.rules = append(m.rules, nil)
		}
		m.rules[r.ID] = r
	}
	d.End("crush map", end)
	if err := d.Err(); err != nil {
		return nil, err
	}
	if err := m.checkHierarchy(); err != nil {
		return nil, fmt.Errorf("%w: %v", wire.ErrCorrupt, err)
	}
	for _, b := range m.buckets {
		if b != nil {
			b.prepare(m.Tunables.StrawCalcVersion)
		}
	}
	m.finalize()
	return m, nil
}

// checkHierarchy verifies that every bucket item exists and that buckets
// form a directed acyclic graph, so mapping always terminates.
func (m *Map) checkHierarchy() error {
	const (
		unseen = iota
		active
		done
	)
	state := map[int32]int{}
	var visit func(id int32) error
	visit = func(id int32) error {
		switch state[id] {
		case active:
			return fmt.Errorf("bucket %d is inside itself", id)
		case done:
			return nil
		}
		state[id] = active
		for _, it := range m.Bucket(id).Items {
			if it < 0 {
				if m.Bucket(it) == nil {
					return fmt.Errorf("bucket %d holds missing bucket %d", id, it)
				}
				if err := visit(it); err != nil {
					return err
				}
			}
		}
		state[id] = done
		return nil
	}
	for _, b := range m.buckets {
		if b != nil {
			if err := visit(b.ID); err != nil {
				return err
			}
		}
	}
	return nil
}
