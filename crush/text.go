package crush

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// SyntaxError is a malformed text map: where, and what was expected.
type SyntaxError struct {
	Line, Col int // 1-based
	Msg       string
	Err       error // a sentinel such as ErrUnsupported, or nil
}

// Unwrap returns the sentinel the error carries, if any.
func (e *SyntaxError) Unwrap() error { return e.Err }

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// Id limits: far beyond any real cluster, and small enough that tables
// indexed by id stay allocatable.
const (
	MaxDeviceID = 1<<20 - 1
	MinBucketID = -(1 << 20)
)

// ErrUnsupported marks text-map features Shoal parses but does not
// implement; Compile refuses them rather than place data differently.
var ErrUnsupported = errors.New("unsupported")

type token struct {
	text      string
	line, col int
}

func (t token) String() string {
	if t.text == "" {
		return "end of input"
	}
	return strconv.Quote(t.text)
}

func isWordByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' ||
		(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// lex splits the text into words and the punctuation { } [ ], dropping
// comments (# to end of line).
func lex(src []byte) ([]token, error) {
	var toks []token
	line, col := 1, 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			col = 1
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			col++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '{' || c == '}' || c == '[' || c == ']':
			toks = append(toks, token{string(c), line, col})
			i++
			col++
		case isWordByte(c):
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			toks = append(toks, token{string(src[i:j]), line, col})
			col += j - i
			i = j
		default:
			return nil, &SyntaxError{line, col, fmt.Sprintf("unexpected character %q", c), nil}
		}
	}
	return toks, nil
}

type parser struct {
	toks []token
	pos  int
	eof  token
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return p.eof
}

func (p *parser) next() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &SyntaxError{t.line, t.col, fmt.Sprintf(format, args...), nil}
}

func (p *parser) expect(word string) (token, error) {
	t := p.next()
	if t.text != word {
		return t, p.errAt(t, "expected %q, found %s", word, t)
	}
	return t, nil
}

func (p *parser) name(what string) (token, error) {
	t := p.next()
	if t.text == "" || t.text == "{" || t.text == "}" || t.text == "[" || t.text == "]" {
		return t, p.errAt(t, "expected %s, found %s", what, t)
	}
	return t, nil
}

func (p *parser) integer(what string) (int32, token, error) {
	t := p.next()
	v, err := strconv.ParseInt(t.text, 10, 32)
	if err != nil {
		return 0, t, p.errAt(t, "expected %s (an integer), found %s", what, t)
	}
	return int32(v), t, nil
}

// weight parses a decimal weight and converts it to 16.16 fixed point the
// way crushtool does (float32 multiply, truncation).
func (p *parser) weight() (uint32, token, error) {
	t := p.next()
	f, err := strconv.ParseFloat(t.text, 32)
	if err != nil || f < 0 || math.IsNaN(f) {
		return 0, t, p.errAt(t, "expected a non-negative weight, found %s", t)
	}
	v := float32(f) * float32(WeightOne)
	if v >= 1<<32 {
		return 0, t, p.errAt(t, "weight %s too large", t.text)
	}
	return uint32(v), t, nil
}

type bucketItemSrc struct {
	name   token
	weight uint32
	hasW   bool
	pos    int
}

type bucketSrc struct {
	typ, name token
	id        int32
	firstID   int32 // id of the first statement when it is an id line (reserved, as crushtool's find_used_bucket_ids)
	classIDs  []struct {
		id    int32
		class token
	}
	alg   Alg
	hash  uint8
	items []bucketItemSrc
}

type stepSrc struct {
	op       Op
	arg1     int32
	target   token // take
	class    token // take ... class
	typeName token // choose
	hasClass bool
}

type ruleSrc struct {
	start            token
	name             string
	id               int32
	typ              uint8
	minSize, maxSize uint8
	steps            []stepSrc
}

var tunableNames = []string{"choose_local_tries", "choose_local_fallback_tries", "choose_total_tries",
	"chooseleaf_descend_once", "chooseleaf_vary_r", "chooseleaf_stable", "straw_calc_version", "allowed_bucket_algs"}

// tunableMax is the largest value a tunable's field holds.
func tunableMax(name string) int64 {
	switch name {
	case "chooseleaf_vary_r", "chooseleaf_stable", "straw_calc_version":
		return math.MaxUint8
	}
	return math.MaxInt32
}

func setTunable(t *Tunables, name string, v int32) bool {
	switch name {
	case "choose_local_tries":
		t.ChooseLocalTries = uint32(v)
	case "choose_local_fallback_tries":
		t.ChooseLocalFallbackTries = uint32(v)
	case "choose_total_tries":
		t.ChooseTotalTries = uint32(v)
	case "chooseleaf_descend_once":
		t.ChooseLeafDescendOnce = uint32(v)
	case "chooseleaf_vary_r":
		t.ChooseLeafVaryR = uint8(v)
	case "chooseleaf_stable":
		t.ChooseLeafStable = uint8(v)
	case "straw_calc_version":
		t.StrawCalcVersion = uint8(v)
	case "allowed_bucket_algs":
		t.AllowedBucketAlgs = uint32(v)
	default:
		return false
	}
	return true
}

var stepOps = map[string]Op{
	"set_choose_tries": OpSetChooseTries, "set_chooseleaf_tries": OpSetChooseLeafTries,
	"set_choose_local_tries": OpSetChooseLocalTries, "set_choose_local_fallback_tries": OpSetChooseLocalFallbackTries,
	"set_chooseleaf_vary_r": OpSetChooseLeafVaryR, "set_chooseleaf_stable": OpSetChooseLeafStable,
}

// Compile parses a CRUSH map in the text format of `crushtool -c` and builds
// it as crushtool does: tunables start at their legacy values, buckets
// without an id take the lowest free one, item weights default to 1.0 for
// devices and the subtree weight for buckets, and the device-class shadow
// trees are built before the first rule (reusing any `id N class C` ids the
// text gives, allocating the lowest free ids otherwise). A malformed map
// yields a *SyntaxError naming line, column and what was expected;
// choose_args (weight sets) yield an error wrapping ErrUnsupported.
func Compile(src []byte) (*Map, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	lastLine := strings.Count(string(src), "\n") + 1
	p := &parser{toks: toks, eof: token{"", lastLine, 1}}
	m := &Map{Tunables: LegacyTunables(), Types: map[int32]string{}, devices: map[int32]*Device{},
		classes: map[int32]string{}, classBucket: map[int32]map[int32]int32{}, names: map[string]int32{},
		typeIDs: map[string]int32{}}
	var buckets []*bucketSrc
	var rules []*ruleSrc
	for p.peek().text != "" {
		t := p.next()
		switch t.text {
		case "tunable":
			n, err := p.name("tunable name")
			if err != nil {
				return nil, err
			}
			v, vt, err := p.integer("tunable value")
			if err != nil {
				return nil, err
			}
			if limit := tunableMax(n.text); v < 0 || int64(v) > limit {
				return nil, p.errAt(vt, "tunable %s must be in [0, %d], found %d", n.text, limit, v)
			}
			if !setTunable(&m.Tunables, n.text, v) {
				return nil, p.errAt(n, "unknown tunable %q (known: %s)", n.text, strings.Join(tunableNames, ", "))
			}
		case "device":
			id, idt, err := p.integer("device id")
			if err != nil {
				return nil, err
			}
			if id < 0 || id > MaxDeviceID {
				return nil, p.errAt(idt, "device id must be in [0, %d], found %d", MaxDeviceID, id)
			}
			n, err := p.name("device name")
			if err != nil {
				return nil, err
			}
			if _, dup := m.names[n.text]; dup {
				return nil, p.errAt(n, "item %q defined twice", n.text)
			}
			d := &Device{ID: id, Name: n.text}
			if p.peek().text == "class" {
				p.next()
				c, err := p.name("device class")
				if err != nil {
					return nil, err
				}
				d.Class = c.text
				m.classIDFor(c.text)
			}
			m.devices[id] = d
			m.names[n.text] = id
		case "type":
			id, _, err := p.integer("type id")
			if err != nil {
				return nil, err
			}
			n, err := p.name("type name")
			if err != nil {
				return nil, err
			}
			m.Types[id] = n.text
			m.typeIDs[n.text] = id
		case "rule":
			r, err := p.parseRule(t)
			if err != nil {
				return nil, err
			}
			rules = append(rules, r)
		case "choose_args":
			return nil, &SyntaxError{t.line, t.col, "choose_args (weight sets) are not supported", ErrUnsupported}
		default:
			if len(rules) > 0 {
				return nil, p.errAt(t, "buckets must be defined before rules")
			}
			b, err := p.parseBucket(t)
			if err != nil {
				return nil, err
			}
			buckets = append(buckets, b)
		}
	}
	textClassIDs, err := m.buildBuckets(p, buckets)
	if err != nil {
		return nil, err
	}
	if len(rules) > 0 && len(m.classes) > 0 {
		if err := m.populateClasses(textClassIDs); err != nil {
			return nil, err
		}
	}
	for _, r := range rules {
		if err := m.buildRule(p, r); err != nil {
			return nil, err
		}
	}
	m.finalize()
	return m, nil
}

func (m *Map) classIDFor(name string) int32 {
	if id, ok := m.ClassID(name); ok {
		return id
	}
	id := int32(0)
	for c := range m.classes {
		if c >= id {
			id = c + 1
		}
	}
	m.classes[id] = name
	return id
}

func (p *parser) parseBucket(typ token) (*bucketSrc, error) {
	n, err := p.name("bucket name")
	if err != nil {
		return nil, err
	}
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	b := &bucketSrc{typ: typ, name: n, alg: AlgStraw2}
	for first := true; ; first = false {
		t := p.next()
		switch t.text {
		case "}":
			return b, nil
		case "id":
			id, idt, err := p.integer("bucket id")
			if err != nil {
				return nil, err
			}
			if id >= 0 || id < MinBucketID {
				return nil, p.errAt(idt, "bucket id must be in [%d, -1], found %d", MinBucketID, id)
			}
			if first {
				b.firstID = id
			}
			if p.peek().text == "class" {
				p.next()
				c, err := p.name("device class")
				if err != nil {
					return nil, err
				}
				b.classIDs = append(b.classIDs, struct {
					id    int32
					class token
				}{id, c})
			} else {
				b.id = id
			}
		case "alg":
			a, err := p.name("bucket algorithm")
			if err != nil {
				return nil, err
			}
			found := false
			for alg, name := range algNames {
				if name == a.text {
					b.alg, found = alg, true
				}
			}
			if !found {
				return nil, p.errAt(a, "unknown bucket alg %q (expected uniform, list, tree, straw or straw2)", a.text)
			}
		case "hash":
			h := p.next()
			if h.text == "rjenkins1" || h.text == "0" {
				b.hash = HashRjenkins1
			} else {
				return nil, p.errAt(h, "unknown hash %s (only 0, rjenkins1, exists)", h)
			}
		case "item":
			in, err := p.name("item name")
			if err != nil {
				return nil, err
			}
			it := bucketItemSrc{name: in, pos: -1}
			for p.peek().text == "weight" || p.peek().text == "pos" {
				if p.next().text == "weight" {
					if it.weight, _, err = p.weight(); err != nil {
						return nil, err
					}
					it.hasW = true
				} else {
					pos, pt, err := p.integer("item position")
					if err != nil {
						return nil, err
					}
					if pos < 0 {
						return nil, p.errAt(pt, "item position must be >= 0")
					}
					it.pos = int(pos)
				}
			}
			b.items = append(b.items, it)
		default:
			return nil, p.errAt(t, "expected id, alg, hash, item or '}' in bucket %q, found %s", n.text, t)
		}
	}
}

func (p *parser) parseRule(start token) (*ruleSrc, error) {
	r := &ruleSrc{start: start, id: -1, typ: RuleReplicated, minSize: 1, maxSize: 10}
	if p.peek().text != "{" {
		n, err := p.name("rule name")
		if err != nil {
			return nil, err
		}
		r.name = n.text
	}
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	for {
		t := p.next()
		switch t.text {
		case "}":
			if r.id < 0 {
				return nil, p.errAt(t, "rule %q has no id", r.name)
			}
			return r, nil
		case "id", "ruleset":
			id, it, err := p.integer("rule id")
			if err != nil {
				return nil, err
			}
			if id < 0 || id > 255 {
				return nil, p.errAt(it, "rule id must be in [0, 255], found %d", id)
			}
			r.id = id
		case "type":
			tt := p.next()
			switch tt.text {
			case "replicated":
				r.typ = RuleReplicated
			case "erasure":
				r.typ = RuleErasure
			default:
				return nil, p.errAt(tt, "expected rule type replicated or erasure, found %s", tt)
			}
		case "min_size", "max_size":
			v, vt, err := p.integer(t.text)
			if err != nil {
				return nil, err
			}
			if v < 0 || v > 255 {
				return nil, p.errAt(vt, "%s must be in [0, 255]", t.text)
			}
			if t.text == "min_size" {
				r.minSize = uint8(v)
			} else {
				r.maxSize = uint8(v)
			}
		case "step":
			s, err := p.parseStep()
			if err != nil {
				return nil, err
			}
			r.steps = append(r.steps, s)
		default:
			return nil, p.errAt(t, "expected id, type, min_size, max_size, step or '}' in rule, found %s", t)
		}
	}
}

func (p *parser) parseStep() (stepSrc, error) {
	t := p.next()
	var s stepSrc
	switch t.text {
	case "take":
		n, err := p.name("bucket name")
		if err != nil {
			return s, err
		}
		s.op, s.target = OpTake, n
		if p.peek().text == "class" {
			p.next()
			if s.class, err = p.name("device class"); err != nil {
				return s, err
			}
			s.hasClass = true
		}
	case "emit":
		s.op = OpEmit
	case "noop":
		s.op = OpNoop
	case "choose", "chooseleaf":
		mode := p.next()
		switch {
		case mode.text == "firstn" && t.text == "choose":
			s.op = OpChooseFirstN
		case mode.text == "indep" && t.text == "choose":
			s.op = OpChooseIndep
		case mode.text == "firstn":
			s.op = OpChooseLeafFirstN
		case mode.text == "indep":
			s.op = OpChooseLeafIndep
		default:
			return s, p.errAt(mode, "expected firstn or indep, found %s", mode)
		}
		n, _, err := p.integer("replica count")
		if err != nil {
			return s, err
		}
		s.arg1 = n
		if _, err := p.expect("type"); err != nil {
			return s, err
		}
		if s.typeName, err = p.name("bucket type"); err != nil {
			return s, err
		}
	default:
		op, ok := stepOps[t.text]
		if !ok {
			return s, p.errAt(t, "expected take, choose, chooseleaf, emit or set_* step, found %s", t)
		}
		v, vt, err := p.integer(t.text + " value")
		if err != nil {
			return s, err
		}
		if v < 0 {
			return s, p.errAt(vt, "%s must be >= 0, found %d", t.text, v)
		}
		s.op, s.arg1 = op, v
	}
	return s, nil
}

// Ceph's weight limits (crush.h CRUSH_MAX_DEVICE_WEIGHT and
// CRUSH_MAX_BUCKET_WEIGHT), in 16.16 fixed point.
const (
	maxDeviceWeight = 100 * WeightOne
	maxBucketWeight = 65535 * WeightOne
)

// buildBuckets adds the buckets. The definitions are first reordered the
// way crushtool's adjust_bucket_item_place does — swapping the bucket at
// the original position of a container with the one at the original
// position of its item, decided on the original name order — so that
// buckets without ids get the same ids as under crushtool. It returns the
// shadow ids the text gives (`id N class C`), which apply only if shadow
// trees are built.
func (m *Map) buildBuckets(p *parser, bs []*bucketSrc) (map[int32]map[int32]int32, error) {
	contains := map[string]map[string]bool{}
	pos := map[string]int{}
	for i, b := range bs {
		items := map[string]bool{}
		for _, it := range b.items {
			items[it.name.text] = true
		}
		contains[b.name.text] = items
		pos[b.name.text] = i
	}
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.name.text
	}
	slots := append([]*bucketSrc(nil), bs...)
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			if contains[names[i]][names[j]] {
				if contains[names[j]][names[i]] {
					return nil, p.errAt(bs[i].name, "buckets %q and %q contain each other", names[i], names[j])
				}
				a, b := pos[names[i]], pos[names[j]]
				slots[a], slots[b] = slots[b], slots[a]
			}
		}
	}
	used := map[int32]bool{}
	for _, b := range bs {
		if b.firstID != 0 {
			used[b.firstID] = true
		}
	}
	weightOf := map[int32]uint32{}
	textClassIDs := map[int32]map[int32]int32{}
	for _, src := range slots {
		typ, ok := m.TypeID(src.typ.text)
		if !ok {
			return nil, p.errAt(src.typ, "bucket type %q is not defined", src.typ.text)
		}
		if _, dup := m.names[src.name.text]; dup {
			return nil, p.errAt(src.name, "bucket or device %q is already defined", src.name.text)
		}
		// size: the item count, or the highest explicit position if larger
		size := len(src.items)
		taken := map[int]bool{}
		for _, it := range src.items {
			if it.pos >= 0 {
				if taken[it.pos] {
					return nil, p.errAt(it.name, "item %q in bucket %q has position %d, which is taken", it.name.text, src.name.text, it.pos)
				}
				taken[it.pos] = true
				size = max(size, it.pos)
			}
		}
		b := &Bucket{Name: src.name.text, Type: typ, Alg: src.alg, Hash: src.hash,
			Items: make([]int32, size), ItemWeights: make([]uint32, size)}
		cur := 0
		var sum uint64
		var uniformW uint32
		for k, it := range src.items {
			id, ok := m.names[it.name.text]
			if !ok {
				return nil, p.errAt(it.name, "item %q in bucket %q is not defined", it.name.text, src.name.text)
			}
			w := uint32(WeightOne)
			if id < 0 {
				w = weightOf[id]
			}
			if it.hasW {
				w = it.weight
				if id >= 0 && w > maxDeviceWeight {
					return nil, p.errAt(it.name, "device weight limited to %d", maxDeviceWeight/WeightOne)
				}
				if id < 0 && w > maxBucketWeight {
					return nil, p.errAt(it.name, "bucket weight limited to %d to prevent overflow", maxBucketWeight/WeightOne)
				}
			}
			if src.alg == AlgUniform {
				if k == 0 {
					uniformW = w
				} else if w != uniformW {
					return nil, p.errAt(it.name, "item %q in uniform bucket %q has a weight different from the others", it.name.text, src.name.text)
				}
			}
			at := it.pos
			if at >= size {
				return nil, p.errAt(it.name, "item %q in bucket %q has position %d >= size %d", it.name.text, src.name.text, at, size)
			}
			if at < 0 {
				for taken[cur] {
					cur++
				}
				at = cur
				cur++
			}
			b.Items[at], b.ItemWeights[at] = id, w
			sum += uint64(w)
			if sum > math.MaxUint32 {
				return nil, p.errAt(it.name, "bucket %q weight overflows 16.16 fixed point", src.name.text)
			}
		}
		id := src.id
		if id == 0 {
			for id = -1; used[id]; id-- {
			}
		}
		used[id] = true
		if m.Bucket(id) != nil {
			return nil, p.errAt(src.name, "duplicate bucket id %d", id)
		}
		b.ID = id
		for _, c := range src.classIDs {
			cid := m.classIDFor(c.class.text)
			if _, dup := textClassIDs[id][cid]; dup {
				return nil, p.errAt(c.class, "duplicate device class %q for bucket %q", c.class.text, src.name.text)
			}
			if textClassIDs[id] == nil {
				textClassIDs[id] = map[int32]int32{}
			}
			textClassIDs[id][cid] = c.id
		}
		b.prepare(m.Tunables.StrawCalcVersion)
		weightOf[id] = b.Weight
		m.addBucket(b)
	}
	return textClassIDs, nil
}

func (m *Map) addBucket(b *Bucket) {
	i := int(-1 - b.ID)
	for len(m.buckets) <= i {
		m.buckets = append(m.buckets, nil)
	}
	m.buckets[i] = b
	m.names[b.Name] = b.ID
}

// populateClasses builds the per-class shadow trees (Ceph's
// CrushWrapper::populate_classes and device_class_clone): for every root and
// class, a copy of the hierarchy holding only that class's devices, named
// "<bucket>~<class>", with the ids the text gave or the lowest free ones.
func (m *Map) populateClasses(old map[int32]map[int32]int32) error {
	used := map[int32]bool{}
	for _, cls := range old {
		for _, id := range cls {
			used[id] = true
		}
	}
	m.classBucket = map[int32]map[int32]int32{}
	child := map[int32]bool{}
	for _, b := range m.buckets {
		if b != nil {
			for _, it := range b.Items {
				child[it] = true
			}
		}
	}
	var roots []int32
	for _, b := range m.buckets {
		if b != nil && !child[b.ID] && !IsShadow(b) {
			roots = append(roots, b.ID)
		}
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i] < roots[j] })
	var classIDs []int32
	for c := range m.classes {
		classIDs = append(classIDs, c)
	}
	sort.Slice(classIDs, func(i, j int) bool { return classIDs[i] < classIDs[j] })
	for _, r := range roots {
		for _, c := range classIDs {
			if _, err := m.cloneForClass(r, c, old, used); errors.Is(err, errUniformShadow) {
				// Ceph stops here, keeping the shadow buckets made so far;
				// rules that need the missing ones are refused.
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	return nil
}

// errUniformShadow: Ceph cannot clone a uniform bucket into a shadow tree.
var errUniformShadow = errors.New("uniform buckets have no class shadow trees")

func (m *Map) cloneForClass(orig, class int32, old map[int32]map[int32]int32, used map[int32]bool) (int32, error) {
	ob := m.Bucket(orig)
	name := ob.Name + "~" + m.classes[class]
	if id, ok := m.names[name]; ok {
		return id, nil
	}
	if ob.Alg == AlgUniform {
		return 0, errUniformShadow
	}
	cp := &Bucket{Name: name, Type: ob.Type, Alg: ob.Alg, Hash: ob.Hash}
	for i, it := range ob.Items {
		if it >= 0 {
			if d := m.devices[it]; d != nil && d.Class == m.classes[class] {
				cp.Items = append(cp.Items, it)
				cp.ItemWeights = append(cp.ItemWeights, ob.itemWeight(i))
			}
			continue
		}
		sub, err := m.cloneForClass(it, class, old, used)
		if err != nil {
			return 0, err
		}
		cp.Items = append(cp.Items, sub)
		cp.ItemWeights = append(cp.ItemWeights, m.Bucket(sub).Weight)
	}
	id, ok := old[orig][class]
	if !ok {
		for id = -1; m.Bucket(id) != nil || used[id]; id-- {
		}
	} else if other := m.Bucket(id); other != nil {
		return 0, fmt.Errorf("crush: shadow id %d for %s is already bucket %q", id, name, other.Name)
	}
	cp.ID = id
	cp.prepare(m.Tunables.StrawCalcVersion)
	m.addBucket(cp)
	if m.classBucket[orig] == nil {
		m.classBucket[orig] = map[int32]int32{}
	}
	m.classBucket[orig][class] = id
	return id, nil
}

func (m *Map) buildRule(p *parser, src *ruleSrc) error {
	if m.Rule(int(src.id)) != nil {
		return p.errAt(src.start, "rule %d already exists", src.id)
	}
	if src.name != "" && m.RuleByName(src.name) != nil {
		return p.errAt(src.start, "rule name %q already defined", src.name)
	}
	r := &Rule{ID: src.id, Name: src.name, Type: src.typ, MinSize: src.minSize, MaxSize: src.maxSize}
	for _, s := range src.steps {
		st := Step{Op: s.op, Arg1: s.arg1}
		switch s.op {
		case OpTake:
			id, ok := m.names[s.target.text]
			if !ok {
				return p.errAt(s.target, "in rule %q item %q not defined", src.name, s.target.text)
			}
			if s.hasClass {
				cid, ok := m.ClassID(s.class.text)
				if !ok {
					return p.errAt(s.class, "in rule %q device class %q does not exist", src.name, s.class.text)
				}
				if m.classBucket[id] == nil {
					return p.errAt(s.target, "in rule %q step take %s has no class information (no shadow trees: is a uniform bucket in its subtree?)", src.name, s.target.text)
				}
				shadow, ok := m.classBucket[id][cid]
				if !ok {
					return p.errAt(s.class, "in rule %q step take %s no matching bucket for class %q", src.name, s.target.text, s.class.text)
				}
				id = shadow
			}
			st.Arg1 = id
		case OpChooseFirstN, OpChooseIndep, OpChooseLeafFirstN, OpChooseLeafIndep:
			t, ok := m.TypeID(s.typeName.text)
			if !ok {
				return p.errAt(s.typeName, "in rule %q type %q not defined", src.name, s.typeName.text)
			}
			st.Arg2 = t
		}
		r.Steps = append(r.Steps, st)
	}
	for len(m.rules) <= int(r.ID) {
		m.rules = append(m.rules, nil)
	}
	m.rules[r.ID] = r
	return nil
}

// finalize sets max_devices as Ceph's CrushWrapper::finalize does: one more
// than the highest device id that is named or placed in a bucket.
func (m *Map) finalize() {
	m.maxDevices = 0
	for _, b := range m.buckets {
		if b == nil {
			continue
		}
		for _, it := range b.Items {
			if it >= m.maxDevices {
				m.maxDevices = it + 1
			}
		}
	}
	for id := range m.devices {
		if id >= m.maxDevices {
			m.maxDevices = id + 1
		}
	}
}

// writeTunables writes the tunable lines of the text format: those that
// differ from the legacy values a text without them compiles to.
func writeTunables(sb *strings.Builder, t Tunables) {
	legacy := LegacyTunables()
	for _, tv := range []struct {
		name    string
		v, base uint32
	}{
		{"choose_local_tries", t.ChooseLocalTries, legacy.ChooseLocalTries},
		{"choose_local_fallback_tries", t.ChooseLocalFallbackTries, legacy.ChooseLocalFallbackTries},
		{"choose_total_tries", t.ChooseTotalTries, legacy.ChooseTotalTries},
		{"chooseleaf_descend_once", t.ChooseLeafDescendOnce, 0},
		{"chooseleaf_vary_r", uint32(t.ChooseLeafVaryR), 0},
		{"chooseleaf_stable", uint32(t.ChooseLeafStable), 0},
		{"straw_calc_version", uint32(t.StrawCalcVersion), 0},
		{"allowed_bucket_algs", t.AllowedBucketAlgs, legacy.AllowedBucketAlgs},
	} {
		if tv.v != tv.base {
			fmt.Fprintf(sb, "tunable %s %d\n", tv.name, tv.v)
		}
	}
}

// fixed formats a 16.16 weight as crushtool does ("%.3f" of a float).
func fixed(w uint32) string {
	return strconv.FormatFloat(float64(float32(w)/float32(WeightOne)), 'f', 3, 64)
}

// Decompile writes the map in the text format of `crushtool -d`, byte for
// byte: tunables that differ from legacy, devices, types, buckets (children
// before parents, shadow trees as `id N class C` lines), rules.
func (m *Map) Decompile() []byte {
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("# begin crush map\n")
	writeTunables(&sb, m.Tunables)
	w("\n# devices\n")
	for _, d := range m.Devices() {
		w("device %d %s", d.ID, d.Name)
		if d.Class != "" {
			w(" class %s", d.Class)
		}
		w("\n")
	}
	w("\n# types\n")
	typeIDs := sortedKeys(m.Types)
	if _, ok := m.Types[0]; !ok && len(typeIDs) > 0 {
		w("type 0 osd\n")
	}
	for _, id := range typeIDs {
		w("type %d %s\n", id, m.Types[id])
	}
	w("\n# buckets\n")
	done := map[int32]bool{}
	var visit func(id int32)
	visit = func(id int32) {
		b := m.Bucket(id)
		if b == nil || done[id] {
			return
		}
		done[id] = true
		for _, it := range b.Items {
			visit(it)
		}
		if !IsShadow(b) {
			m.decompileBucket(&sb, b)
		}
	}
	for i := range m.buckets {
		visit(int32(-1 - i))
	}
	w("\n# rules\n")
	for _, r := range m.Rules() {
		w("rule %s {\n\tid %d\n", r.Name, r.ID)
		switch r.Type {
		case RuleReplicated:
			w("\ttype replicated\n")
		case RuleErasure:
			w("\ttype erasure\n")
		default:
			w("\ttype %d\n", r.Type)
		}
		w("\tmin_size %d\n\tmax_size %d\n", r.MinSize, r.MaxSize)
		for _, s := range r.Steps {
			switch s.Op {
			case OpNoop:
				w("\tstep noop\n")
			case OpTake:
				if orig, class, ok := m.splitShadow(s.Arg1); ok {
					w("\tstep take %s class %s\n", m.ItemName(orig), class)
				} else {
					w("\tstep take %s\n", m.ItemName(s.Arg1))
				}
			case OpEmit:
				w("\tstep emit\n")
			case OpChooseFirstN:
				w("\tstep choose firstn %d type %s\n", s.Arg1, m.TypeName(s.Arg2))
			case OpChooseIndep:
				w("\tstep choose indep %d type %s\n", s.Arg1, m.TypeName(s.Arg2))
			case OpChooseLeafFirstN:
				w("\tstep chooseleaf firstn %d type %s\n", s.Arg1, m.TypeName(s.Arg2))
			case OpChooseLeafIndep:
				w("\tstep chooseleaf indep %d type %s\n", s.Arg1, m.TypeName(s.Arg2))
			default:
				for name, op := range stepOps {
					if op == s.Op {
						w("\tstep %s %d\n", name, s.Arg1)
					}
				}
			}
		}
		w("}\n")
	}
	w("\n# end crush map\n")
	return []byte(sb.String())
}

func (m *Map) decompileBucket(sb *strings.Builder, b *Bucket) {
	w := func(format string, args ...any) { fmt.Fprintf(sb, format, args...) }
	w("%s %s {\n", m.TypeName(b.Type), b.Name)
	w("\tid %d\t\t# do not change unnecessarily\n", b.ID)
	var cids []int32
	for c := range m.classBucket[b.ID] {
		cids = append(cids, c)
	}
	sort.Slice(cids, func(i, j int) bool { return cids[i] < cids[j] })
	for _, c := range cids {
		w("\tid %d class %s\t\t# do not change unnecessarily\n", m.classBucket[b.ID][c], m.classes[c])
	}
	w("\t# weight %s\n", fixed(b.Weight))
	w("\talg %s", b.Alg)
	pos := false
	switch b.Alg {
	case AlgUniform:
		w("\t# do not change bucket size (%d) unnecessarily", len(b.Items))
		pos = true
	case AlgList:
		w("\t# add new items at the end; do not change order unnecessarily")
	case AlgTree:
		w("\t# do not change pos for existing items unnecessarily")
		pos = true
	}
	w("\n\thash %d\t# rjenkins1\n", b.Hash)
	for i, it := range b.Items {
		w("\titem %s weight %s", m.ItemName(it), fixed(b.itemWeight(i)))
		if pos {
			w(" pos %d", i)
		}
		w("\n")
	}
	w("}\n")
}
