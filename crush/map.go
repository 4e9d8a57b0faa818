package crush

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Alg is a bucket algorithm, numbered as in Ceph's crush.h.
type Alg uint8

// Bucket algorithms. Straw2 is the default and the one to use; the others
// exist so that maps carried over from older Ceph clusters place identically.
const (
	AlgUniform Alg = 1
	AlgList    Alg = 2
	AlgTree    Alg = 3
	AlgStraw   Alg = 4
	AlgStraw2  Alg = 5
)

var algNames = map[Alg]string{AlgUniform: "uniform", AlgList: "list", AlgTree: "tree", AlgStraw: "straw", AlgStraw2: "straw2"}

func (a Alg) String() string {
	if n, ok := algNames[a]; ok {
		return n
	}
	return fmt.Sprintf("alg%d", uint8(a))
}

// ItemNone marks a hole in an indep (erasure-coded) mapping: no device could
// be chosen for that position (Ceph's CRUSH_ITEM_NONE, 0x7fffffff).
const ItemNone int32 = 0x7fffffff

// itemUndef is CRUSH_ITEM_UNDEF, an indep position not yet decided.
const itemUndef int32 = 0x7ffffffe

// WeightOne is a weight of 1.0 in CRUSH's 16.16 fixed point.
const WeightOne = 0x10000

// Rule types (the pool type a rule serves), as Ceph's CEPH_PG_TYPE_*.
const (
	RuleReplicated = 1
	RuleErasure    = 3
)

// Op is a rule step opcode, numbered as Ceph's CRUSH_RULE_* constants.
type Op uint32

// Rule step opcodes.
const (
	OpNoop                        Op = 0
	OpTake                        Op = 1
	OpChooseFirstN                Op = 2
	OpChooseIndep                 Op = 3
	OpEmit                        Op = 4
	OpChooseLeafFirstN            Op = 6
	OpChooseLeafIndep             Op = 7
	OpSetChooseTries              Op = 8
	OpSetChooseLeafTries          Op = 9
	OpSetChooseLocalTries         Op = 10
	OpSetChooseLocalFallbackTries Op = 11
	OpSetChooseLeafVaryR          Op = 12
	OpSetChooseLeafStable         Op = 13
)

// Tunables are the map-wide CRUSH behaviour switches (Ceph doc:
// rados/operations/crush-map "Tunables").
type Tunables struct {
	ChooseLocalTries         uint32
	ChooseLocalFallbackTries uint32
	ChooseTotalTries         uint32
	ChooseLeafDescendOnce    uint32
	ChooseLeafVaryR          uint8
	ChooseLeafStable         uint8
	StrawCalcVersion         uint8
	AllowedBucketAlgs        uint32
}

// LegacyTunables are argonaut's values; a text map without tunable lines
// compiles with these, as crushtool does, so a given text always compiles to
// the same map.
func LegacyTunables() Tunables {
	return Tunables{ChooseLocalTries: 2, ChooseLocalFallbackTries: 5, ChooseTotalTries: 19,
		AllowedBucketAlgs: 1<<AlgUniform | 1<<AlgList | 1<<AlgStraw}
}

// OptimalTunables are the "optimal" (jewel) profile, the default for maps
// Shoal creates: choose_total_tries 50, chooseleaf_descend_once 1,
// chooseleaf_vary_r 1, chooseleaf_stable 1, straw_calc_version 1.
func OptimalTunables() Tunables {
	return Tunables{ChooseTotalTries: 50, ChooseLeafDescendOnce: 1, ChooseLeafVaryR: 1,
		ChooseLeafStable: 1, StrawCalcVersion: 1,
		AllowedBucketAlgs: 1<<AlgUniform | 1<<AlgList | 1<<AlgStraw | 1<<AlgStraw2}
}

// Device is a leaf of the hierarchy: one OSD.
type Device struct {
	ID    int32
	Name  string
	Class string // device class (hdd, ssd, nvme or custom); "" for none
}

// Bucket is an interior node. IDs are negative. Weights are 16.16 fixed
// point; Weight is the sum of ItemWeights.
type Bucket struct {
	ID          int32
	Name        string
	Type        int32
	Alg         Alg
	Hash        uint8
	Items       []int32
	ItemWeights []uint32
	Weight      uint32

	// derived by prepare(), per algorithm
	straws      []uint32 // straw
	sumWeights  []uint32 // list
	nodeWeights []uint32 // tree
}

// Step is one rule step: Op with its arguments (Arg1 is the count or the
// take target, Arg2 the bucket type).
type Step struct {
	Op   Op
	Arg1 int32
	Arg2 int32
}

// Rule is a placement rule. MinSize and MaxSize are kept for the text
// format's sake (Ceph before Quincy requires them).
type Rule struct {
	ID      int32
	Name    string
	Type    uint8
	MinSize uint8
	MaxSize uint8
	Steps   []Step
}

// Map is a compiled CRUSH map: the hierarchy, the rules and the tunables.
// A Map is immutable once built (by Compile or a Builder): the mapping
// functions may be called from many goroutines at once.
type Map struct {
	Tunables Tunables
	Types    map[int32]string
	devices  map[int32]*Device
	buckets  []*Bucket // index -1-id
	rules    []*Rule   // index id
	classes  map[int32]string
	// classBucket[bucket][class] is the shadow bucket holding only the
	// devices of that class (Ceph's class_bucket).
	classBucket map[int32]map[int32]int32
	maxDevices  int32
	names       map[string]int32
	typeIDs     map[string]int32 // type name → id; the last definition wins
}

// MaxDevices is one more than the highest device id the map knows.
func (m *Map) MaxDevices() int32 { return m.maxDevices }

// Bucket returns the bucket with the given (negative) id, or nil.
func (m *Map) Bucket(id int32) *Bucket {
	i := -1 - int(id)
	if id >= 0 || i >= len(m.buckets) {
		return nil
	}
	return m.buckets[i]
}

// Buckets returns every bucket, shadow buckets included, by decreasing id.
func (m *Map) Buckets() []*Bucket {
	var out []*Bucket
	for _, b := range m.buckets {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// Device returns the device with the given id, or nil.
func (m *Map) Device(id int32) *Device { return m.devices[id] }

// Devices returns the named devices in id order.
func (m *Map) Devices() []*Device {
	out := make([]*Device, 0, len(m.devices))
	for _, d := range m.devices {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Rule returns the rule with the given id, or nil.
func (m *Map) Rule(id int) *Rule {
	if id < 0 || id >= len(m.rules) {
		return nil
	}
	return m.rules[id]
}

// Rules returns the rules in id order.
func (m *Map) Rules() []*Rule {
	var out []*Rule
	for _, r := range m.rules {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// RuleByName returns the rule with the given name, or nil.
func (m *Map) RuleByName(name string) *Rule {
	for _, r := range m.rules {
		if r != nil && r.Name == name {
			return r
		}
	}
	return nil
}

// ItemID returns the id of the device or bucket with the given name.
func (m *Map) ItemID(name string) (int32, bool) {
	id, ok := m.names[name]
	return id, ok
}

// ItemName returns the name of a device or bucket ("device<N>" or
// "bucket<N>" when it has none, as crushtool prints).
func (m *Map) ItemName(id int32) string {
	if id >= 0 {
		if d := m.devices[id]; d != nil {
			return d.Name
		}
		return fmt.Sprintf("device%d", id)
	}
	if b := m.Bucket(id); b != nil && b.Name != "" {
		return b.Name
	}
	return fmt.Sprintf("bucket%d", -1-id)
}

// TypeName returns the name of a bucket type.
func (m *Map) TypeName(t int32) string {
	if n, ok := m.Types[t]; ok {
		return n
	}
	if t == 0 {
		return "device"
	}
	return fmt.Sprintf("type%d", t)
}

// TypeID returns the id of the named bucket type (for a name defined
// twice, the later definition, as crushtool).
func (m *Map) TypeID(name string) (int32, bool) {
	id, ok := m.typeIDs[name]
	return id, ok
}

// ClassID returns the id of a device class.
func (m *Map) ClassID(name string) (int32, bool) {
	for id, n := range m.classes {
		if n == name {
			return id, true
		}
	}
	return 0, false
}

// ShadowBucket returns the id of the shadow bucket that holds only the
// devices of class under bucket, as `take <bucket> class <class>` uses.
func (m *Map) ShadowBucket(bucket int32, class string) (int32, bool) {
	cid, ok := m.ClassID(class)
	if !ok {
		return 0, false
	}
	id, ok := m.classBucket[bucket][cid]
	return id, ok
}

// splitShadow maps a shadow bucket back to its original bucket and class.
func (m *Map) splitShadow(id int32) (orig int32, class string, ok bool) {
	for o, cls := range m.classBucket {
		for c, s := range cls {
			if s == id {
				return o, m.classes[c], true
			}
		}
	}
	return 0, "", false
}

// IsShadow reports whether a bucket is a device-class shadow bucket.
func IsShadow(b *Bucket) bool { return IsShadowName(b.Name) }

// IsShadowName reports whether a bucket name is a shadow bucket's
// ("<bucket>~<class>").
func IsShadowName(name string) bool { return strings.Contains(name, "~") }

// itemWeight is crush_get_bucket_item_weight: the weight of the i-th item.
func (b *Bucket) itemWeight(i int) uint32 { return b.ItemWeights[i] }

// prepare computes the per-algorithm derived arrays from Items and
// ItemWeights, as Ceph's crush_make_bucket does (src/crush/builder.c).
func (b *Bucket) prepare(strawCalcVersion uint8) {
	b.Weight = 0
	for _, w := range b.ItemWeights {
		b.Weight += w
	}
	switch b.Alg {
	case AlgList:
		b.sumWeights = make([]uint32, len(b.Items))
		var s uint32
		for i, w := range b.ItemWeights {
			s += w
			b.sumWeights[i] = s
		}
	case AlgTree:
		b.prepareTree()
	case AlgStraw:
		b.straws = calcStraws(b.ItemWeights, strawCalcVersion)
	case AlgUniform:
		if len(b.ItemWeights) > 0 {
			b.Weight = uint32(len(b.Items)) * b.ItemWeights[0]
		}
	}
}

// Tree buckets label nodes so that leaves are odd numbers and a node's
// height is its count of trailing zero bits (builder.c "tree bucket").
func treeHeight(n int) int {
	h := 0
	for n&1 == 0 {
		h++
		n >>= 1
	}
	return h
}

func treeParent(n int) int {
	h := treeHeight(n)
	if n&(1<<(h+1)) != 0 {
		return n - (1 << h)
	}
	return n + (1 << h)
}

func treeDepth(size int) int {
	if size == 0 {
		return 0
	}
	depth, t := 1, size-1
	for t != 0 {
		t >>= 1
		depth++
	}
	return depth
}

func (b *Bucket) prepareTree() {
	size := len(b.Items)
	if size == 0 {
		b.nodeWeights = nil
		return
	}
	depth := treeDepth(size)
	b.nodeWeights = make([]uint32, 1<<depth)
	for i, w := range b.ItemWeights {
		node := (i+1)<<1 - 1
		b.nodeWeights[node] = w
		for j := 1; j < depth; j++ {
			node = treeParent(node)
			b.nodeWeights[node] += w
		}
	}
}

// calcStraws is crush_calc_straw (builder.c) for both straw_calc_version 0
// (the original, whose handling of equal weights is skewed) and version ≥ 1.
// Its floating-point steps are kept in the same order so results match.
func calcStraws(weights []uint32, version uint8) []uint32 {
	size := len(weights)
	straws := make([]uint32, size)
	// indexes by increasing weight, equal weights in item order: the order
	// of Ceph's insertion sort, in O(n log n)
	reverse := make([]int, size)
	for i := range reverse {
		reverse[i] = i
	}
	sort.SliceStable(reverse, func(i, j int) bool { return weights[reverse[i]] < weights[reverse[j]] })
	numleft := size
	straw := 1.0
	wbelow := 0.0
	lastw := 0.0
	i := 0
	for i < size {
		if version == 0 {
			if weights[reverse[i]] == 0 {
				straws[reverse[i]] = 0
				i++
				continue
			}
			straws[reverse[i]] = uint32(straw * 0x10000)
			i++
			if i == size {
				break
			}
			if weights[reverse[i]] == weights[reverse[i-1]] {
				continue
			}
			wbelow += (float64(weights[reverse[i-1]]) - lastw) * float64(numleft)
			for j := i; j < size; j++ {
				if weights[reverse[j]] == weights[reverse[i]] {
					numleft--
				} else {
					break
				}
			}
			// C computes numleft*(delta) in 32-bit unsigned arithmetic.
			wnext := float64(uint32(numleft) * (weights[reverse[i]] - weights[reverse[i-1]]))
			pbelow := wbelow / (wbelow + wnext)
			straw *= math.Pow(1.0/pbelow, 1.0/float64(numleft))
			lastw = float64(weights[reverse[i-1]])
		} else {
			if weights[reverse[i]] == 0 {
				straws[reverse[i]] = 0
				i++
				numleft--
				continue
			}
			straws[reverse[i]] = uint32(straw * 0x10000)
			i++
			if i == size {
				break
			}
			wbelow += (float64(weights[reverse[i-1]]) - lastw) * float64(numleft)
			numleft--
			wnext := float64(uint32(numleft) * (weights[reverse[i]] - weights[reverse[i-1]]))
			pbelow := wbelow / (wbelow + wnext)
			straw *= math.Pow(1.0/pbelow, 1.0/float64(numleft))
			lastw = float64(weights[reverse[i-1]])
		}
	}
	return straws
}

// MaxRetries is the largest retry count the map asks for, from its
// tunables or any rule's set_*_tries step. The work of mapping an
// unsatisfiable rule grows with it (times the replica count and the depth
// and width of the hierarchy), so code that maps untrusted maps can bound
// its work by checking it first.
func (m *Map) MaxRetries() uint32 {
	t := m.Tunables
	r := max(t.ChooseTotalTries, t.ChooseLocalTries, t.ChooseLocalFallbackTries)
	for _, rule := range m.Rules() {
		for _, s := range rule.Steps {
			switch s.Op {
			case OpSetChooseTries, OpSetChooseLeafTries, OpSetChooseLocalTries, OpSetChooseLocalFallbackTries:
			default:
				continue
			}
			if s.Arg1 > 0 {
				r = max(r, uint32(s.Arg1))
			}
		}
	}
	return r
}

// Parent returns the (non-shadow) bucket that holds item, or nil.
func (m *Map) Parent(item int32) *Bucket {
	for _, b := range m.buckets {
		if b == nil || IsShadow(b) {
			continue
		}
		for _, it := range b.Items {
			if it == item {
				return b
			}
		}
	}
	return nil
}

// Ancestor returns the name of the bucket of type typeName above item (the
// item's own name when typeName is its type or no such bucket exists), as
// the failure domain a report or replica counts in.
func (m *Map) Ancestor(item int32, typeName string) string {
	t, ok := m.TypeID(typeName)
	if !ok || (item >= 0 && t == 0) {
		return m.ItemName(item)
	}
	for b := m.Parent(item); b != nil; b = m.Parent(b.ID) {
		if b.Type == t {
			return b.Name
		}
	}
	return m.ItemName(item)
}
