package crush

import (
	"fmt"
	"sort"
)

// Editing follows Ceph's CrushWrapper (insert_item, adjust_item_weight,
// remove_item, rebuild_roots_with_classes) so that a map changed here
// equals the same map changed by crushtool --add-item, --reweight-item and
// --remove-item, ids, weights and shadow trees included. Edit a Clone: a
// Map that mapping code may be using is never modified.

// Clone returns a deep copy of the map, for editing.
func (m *Map) Clone() *Map {
	n := &Map{Tunables: m.Tunables, Types: map[int32]string{}, devices: map[int32]*Device{},
		classes: map[int32]string{}, classBucket: map[int32]map[int32]int32{}, maxDevices: m.maxDevices,
		names: map[string]int32{}}
	for k, v := range m.Types {
		n.Types[k] = v
	}
	n.typeIDs = map[string]int32{}
	for k, v := range m.typeIDs {
		n.typeIDs[k] = v
	}
	for k, d := range m.devices {
		cp := *d
		n.devices[k] = &cp
	}
	for k, v := range m.classes {
		n.classes[k] = v
	}
	for b, cls := range m.classBucket {
		n.classBucket[b] = map[int32]int32{}
		for c, id := range cls {
			n.classBucket[b][c] = id
		}
	}
	for k, v := range m.names {
		n.names[k] = v
	}
	n.buckets = make([]*Bucket, len(m.buckets))
	for i, b := range m.buckets {
		if b != nil {
			cp := *b
			cp.Items = append([]int32(nil), b.Items...)
			cp.ItemWeights = append([]uint32(nil), b.ItemWeights...)
			cp.prepare(n.Tunables.StrawCalcVersion)
			n.buckets[i] = &cp
		}
	}
	for _, r := range m.rules {
		if r == nil {
			n.rules = append(n.rules, nil)
			continue
		}
		cp := *r
		cp.Steps = append([]Step(nil), r.Steps...)
		n.rules = append(n.rules, &cp)
	}
	return n
}

// defaultAlg is Ceph's get_default_bucket_alg: straw2 when allowed.
func (m *Map) defaultAlg() Alg {
	for _, a := range []Alg{AlgStraw2, AlgStraw, AlgTree, AlgList, AlgUniform} {
		if m.Tunables.AllowedBucketAlgs&(1<<a) != 0 {
			return a
		}
	}
	return AlgStraw2
}

// InsertItem places device id (named name, of device class class, "" for
// none) with CRUSH weight w (16.16) at loc, a bucket type → bucket name map
// such as {"host": "node7", "rack": "r2", "root": "default"}: from the
// lowest type up, missing buckets are created (default algorithm, lowest
// free id) until an existing one takes the new subtree; ancestor weights
// are updated and the class shadow trees rebuilt.
func (m *Map) InsertItem(id int32, w uint32, name, class string, loc map[string]string) error {
	if id < 0 || id > MaxDeviceID {
		return fmt.Errorf("crush: device id %d out of range", id)
	}
	if other, ok := m.names[name]; ok && other != id {
		return fmt.Errorf("crush: name %q is already item %d", name, other)
	}
	if w > maxDeviceWeight {
		return fmt.Errorf("crush: device weight limited to %d", maxDeviceWeight/WeightOne)
	}
	if d := m.devices[id]; d != nil && d.Name != name {
		return fmt.Errorf("crush: device %d is already named %q", id, d.Name)
	}
	if len(loc) == 0 {
		return fmt.Errorf("crush: no location given for %s", name)
	}
	m.devices[id] = &Device{ID: id, Name: name, Class: class}
	m.names[name] = id
	if class != "" {
		m.classIDFor(class)
	}
	return m.insertItem(id, w, name, loc)
}

// insertItem is CrushWrapper::insert_item for a named device or bucket.
func (m *Map) insertItem(id int32, w uint32, name string, loc map[string]string) error {
	cur := id
	linked := false
	for _, t := range sortedKeys(m.Types) {
		if t == 0 {
			continue
		}
		bname, ok := loc[m.Types[t]]
		if !ok {
			continue
		}
		bid, exists := m.names[bname]
		if !exists {
			b := &Bucket{Name: bname, Type: t, Alg: m.defaultAlg(), Hash: HashRjenkins1, Items: []int32{cur}, ItemWeights: []uint32{0}}
			for b.ID = -1; m.Bucket(b.ID) != nil; b.ID-- {
			}
			b.prepare(m.Tunables.StrawCalcVersion)
			m.addBucket(b)
			cur = b.ID
			continue
		}
		b := m.Bucket(bid)
		if b == nil {
			return fmt.Errorf("crush: location %s=%s names a device", m.Types[t], bname)
		}
		if b.Type != t {
			return fmt.Errorf("crush: %s is a %s, not a %s", bname, m.TypeName(b.Type), m.Types[t])
		}
		if m.subtreeContains(bid, cur) || m.subtreeContains(cur, bid) {
			return fmt.Errorf("crush: linking %s under %s would make a loop", m.ItemName(cur), bname)
		}
		b.Items = append(b.Items, cur)
		b.ItemWeights = append(b.ItemWeights, 0)
		b.prepare(m.Tunables.StrawCalcVersion)
		linked = true
		break
	}
	if !linked && cur == id {
		return fmt.Errorf("crush: no location for %s among the map's types", name)
	}
	// set the weight in the buckets the location names (Ceph iterates the
	// location map in key order)
	keys := make([]string, 0, len(loc))
	for k := range loc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if bid, ok := m.names[loc[k]]; ok && m.Bucket(bid) != nil {
			m.adjustInBucket(id, w, bid)
		}
	}
	m.rebuildShadows()
	m.finalize()
	return nil
}

// AdjustItemWeight sets item's weight (16.16) wherever it appears and
// carries the change up to every ancestor (crushtool --reweight-item).
func (m *Map) AdjustItemWeight(item int32, w uint32) error {
	changed := 0
	for i := range m.buckets {
		if m.buckets[i] != nil && m.adjustInBucket(item, w, int32(-1-i)) {
			changed++
		}
	}
	if changed == 0 {
		return fmt.Errorf("crush: item %d is in no bucket", item)
	}
	return nil
}

// adjustInBucket is adjust_item_weight_in_bucket: set item's weight in one
// bucket, then the bucket's new total in its own parents.
func (m *Map) adjustInBucket(item int32, w uint32, bid int32) bool {
	b := m.Bucket(bid)
	changed := false
	for i, it := range b.Items {
		if it == item {
			b.ItemWeights[i] = w
			if b.Alg == AlgUniform {
				for j := range b.ItemWeights {
					b.ItemWeights[j] = w
				}
			}
			b.prepare(m.Tunables.StrawCalcVersion)
			m.AdjustItemWeight(bid, b.Weight) // parents; "in no bucket" is fine for a root
			changed = true
		}
	}
	return changed
}

// RemoveItem unlinks a device, or an empty bucket, from every bucket
// (shadow trees included, with weights carried up) and forgets it
// (crushtool --remove-item). Like Ceph it leaves a removed bucket's shadow
// copies in place until the next rebuild; they hold nothing.
func (m *Map) RemoveItem(item int32) error {
	if item < 0 {
		b := m.Bucket(item)
		if b == nil || IsShadow(b) {
			return fmt.Errorf("crush: bucket %d does not exist", item)
		}
		if len(b.Items) > 0 {
			return fmt.Errorf("crush: bucket %s is not empty", b.Name)
		}
		for _, r := range m.rules {
			for _, st := range ruleSteps(r) {
				if st.Op == OpTake && st.Arg1 == item {
					return fmt.Errorf("crush: bucket %s is used by rule %s", b.Name, r.Name)
				}
			}
		}
	}
	found := false
	for i := range m.buckets {
		b := m.buckets[i]
		if b == nil {
			continue
		}
		for j := 0; j < len(b.Items); j++ {
			if b.Items[j] == item {
				m.adjustInBucket(item, 0, b.ID)
				b.Items = append(b.Items[:j], b.Items[j+1:]...)
				b.ItemWeights = append(b.ItemWeights[:j], b.ItemWeights[j+1:]...)
				b.prepare(m.Tunables.StrawCalcVersion)
				found = true
				j--
			}
		}
	}
	if d := m.devices[item]; d != nil {
		delete(m.names, d.Name)
		delete(m.devices, item)
		found = true
	}
	if b := m.Bucket(item); b != nil {
		delete(m.names, b.Name)
		delete(m.classBucket, item)
		m.buckets[-1-item] = nil
		found = true
	}
	if !found {
		return fmt.Errorf("crush: item %d does not exist", item)
	}
	m.finalize()
	return nil
}

func (m *Map) subtreeContains(root, item int32) bool {
	if root == item {
		return true
	}
	b := m.Bucket(root)
	if b == nil {
		return false
	}
	for _, it := range b.Items {
		if m.subtreeContains(it, item) {
			return true
		}
	}
	return false
}

// rebuildShadows is rebuild_roots_with_classes: drop classes nothing uses,
// remove every shadow bucket, and build the shadow trees again, keeping
// each (bucket, class) pair's old id.
func (m *Map) rebuildShadows() {
	old := m.classBucket
	used := map[int32]bool{}
	for _, d := range m.devices {
		if d.Class != "" {
			if c, ok := m.ClassID(d.Class); ok {
				used[c] = true
			}
		}
	}
	for _, r := range m.rules {
		if r == nil {
			continue
		}
		for _, s := range r.Steps {
			if s.Op == OpTake {
				if _, class, ok := m.splitShadow(s.Arg1); ok {
					if c, ok := m.ClassID(class); ok {
						used[c] = true
					}
				}
			}
		}
	}
	for c := range m.classes {
		if !used[c] {
			delete(m.classes, c)
		}
	}
	for i, b := range m.buckets {
		if b != nil && IsShadow(b) {
			delete(m.names, b.Name)
			m.buckets[i] = nil
		}
	}
	if len(m.classes) > 0 {
		m.populateClasses(old)
	} else {
		m.classBucket = map[int32]map[int32]int32{}
	}
}

func ruleSteps(r *Rule) []Step {
	if r == nil {
		return nil
	}
	return r.Steps
}

// MoveBucket moves a bucket (with its subtree) to loc, as Ceph's
// move_bucket: it is unlinked from its first parent, then inserted like a
// new item with its weight (crushtool --move).
func (m *Map) MoveBucket(id int32, loc map[string]string) error {
	b := m.Bucket(id)
	if b == nil || IsShadow(b) {
		return fmt.Errorf("crush: bucket %d does not exist", id)
	}
	if len(loc) == 0 {
		return fmt.Errorf("crush: no location given for %s", b.Name)
	}
	for i, p := range m.buckets {
		if p == nil || IsShadow(p) {
			continue
		}
		if slicesIndex(p.Items, id) >= 0 {
			m.adjustInBucket(id, 0, int32(-1-i))
			j := slicesIndex(p.Items, id)
			p.Items = append(p.Items[:j], p.Items[j+1:]...)
			p.ItemWeights = append(p.ItemWeights[:j], p.ItemWeights[j+1:]...)
			p.prepare(m.Tunables.StrawCalcVersion)
			break
		}
	}
	// the weight goes through a float32 on its way, as in Ceph
	w := uint32(float32(float32(b.Weight)/float32(WeightOne)) * float32(WeightOne))
	return m.insertItem(id, w, b.Name, loc)
}

func slicesIndex(s []int32, v int32) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// AddSimpleRule adds a rule that takes root (its class shadow when class is
// set) and chooses leaves across failureDomain buckets ("" or "osd": the
// devices themselves), in mode "firstn" or "indep", as Ceph's
// add_simple_rule (crushtool --create-simple-rule). It returns the new
// rule's id: the lowest free one.
func (m *Map) AddSimpleRule(name, root, failureDomain, class, mode string, ruleType uint8) (int, error) {
	if m.RuleByName(name) != nil {
		return 0, fmt.Errorf("crush: rule %s exists", name)
	}
	rootID, ok := m.names[root]
	if !ok {
		return 0, fmt.Errorf("crush: root item %s does not exist", root)
	}
	typ := int32(0)
	if failureDomain != "" {
		if typ, ok = m.TypeID(failureDomain); !ok {
			return 0, fmt.Errorf("crush: unknown type %s", failureDomain)
		}
	}
	if class != "" {
		shadow, ok := m.ShadowBucket(rootID, class)
		if !ok {
			return 0, fmt.Errorf("crush: root %s has no devices with class %s", root, class)
		}
		rootID = shadow
	}
	if mode != "firstn" && mode != "indep" {
		return 0, fmt.Errorf("crush: unknown mode %s", mode)
	}
	r := &Rule{Name: name, Type: ruleType, MinSize: 1, MaxSize: 10}
	if mode == "indep" {
		r.MinSize, r.MaxSize = 3, 20
		r.Steps = append(r.Steps, Step{Op: OpSetChooseLeafTries, Arg1: 5}, Step{Op: OpSetChooseTries, Arg1: 100})
	}
	r.Steps = append(r.Steps, Step{Op: OpTake, Arg1: rootID})
	op := map[bool]Op{true: OpChooseLeafFirstN, false: OpChooseLeafIndep}[mode == "firstn"]
	if typ == 0 {
		op = map[bool]Op{true: OpChooseFirstN, false: OpChooseIndep}[mode == "firstn"]
	}
	r.Steps = append(r.Steps, Step{Op: op, Arg1: 0, Arg2: typ}, Step{Op: OpEmit})
	for r.ID = 0; int(r.ID) < len(m.rules) && m.rules[r.ID] != nil; r.ID++ {
	}
	for len(m.rules) <= int(r.ID) {
		m.rules = append(m.rules, nil)
	}
	m.rules[r.ID] = r
	return int(r.ID), nil
}
