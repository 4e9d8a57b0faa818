package osdmap

import (
	"fmt"
	"math"
	"sort"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/internal/wire"
)

// Encoding versions. Map v1 and Incremental v1 are the first; v2 appends
// the cluster flags and the OSDs' extra state (AutoOut, Fullness), v3
// their cluster addresses, v4 their UpFrom, v5 the pg_upmap entries, v6
// the blocklist, v7 the pg_upmap_items. A
// reader accepts newer versions whose compat is 1 and skips fields it
// does not know. A map or incremental that holds pg_upmap entries has
// compat 5, one with pg_upmap_items compat 7: they change where PGs map,
// so a reader that would skip them must refuse it (as Ceph requires
// luminous clients for pg_upmap).
const (
	mapVersion         = 7
	incrementalVersion = 7
	magicMap           = "SHOALMAP"
	magicIncremental   = "SHOALINC"
)

// upmapCompat is the compat version of a map or incremental with n
// pg_upmap entries and items pg_upmap_items entries.
func upmapCompat(n, items int) uint8 {
	switch {
	case items > 0:
		return 7
	case n > 0:
		return 5
	}
	return 1
}

func encodeUpmapItems(e *wire.Encoder, t map[PGID][]UpmapItem) {
	e.U32(uint32(len(t)))
	for _, pg := range SortedPGs(t) {
		e.I64(pg.Pool)
		e.U32(pg.Seed)
		e.U32(uint32(len(t[pg])))
		for _, it := range t[pg] {
			e.I32(it.From)
			e.I32(it.To)
		}
	}
}

func decodeUpmapItems(d *wire.Decoder) map[PGID][]UpmapItem {
	t := map[PGID][]UpmapItem{}
	for n := d.Count(16); n > 0 && d.Err() == nil; n-- {
		pg := PGID{Pool: d.I64(), Seed: d.U32()}
		items := make([]UpmapItem, d.Count(8))
		for i := range items {
			items[i] = UpmapItem{From: d.I32(), To: d.I32()}
		}
		t[pg] = items
	}
	return t
}

// Pool encoding versions: v2 appends the snapshot fields (snap_seq, pool
// snapshots, removed snaps), v3 the autoscaler's options, v4
// pgp_num_target, v5 pg_num_target, pg_num_pending, the epoch that set
// it and the latest merges;
// an older reader skips them.
func encodePool(e *wire.Encoder, p *Pool) {
	mark := e.Begin(5, 1)
	e.I64(p.ID)
	e.String(p.Name)
	e.U8(uint8(p.Type))
	e.U32(uint32(p.Size))
	e.U32(uint32(p.MinSize))
	e.U32(p.PGNum)
	e.U32(p.PGPNum)
	e.I32(int32(p.CrushRule))
	e.String(p.ECProfile)
	e.U64(p.Flags)
	e.U8(p.ObjectHash)
	e.U64(p.SnapSeq)
	snaps := p.SortedSnaps()
	e.U32(uint32(len(snaps)))
	for _, s := range snaps {
		e.U64(s.ID)
		e.String(s.Name)
		e.I64(s.Stamp)
	}
	e.U32(uint32(len(p.RemovedSnaps)))
	for _, r := range p.RemovedSnaps {
		e.U64(r.First)
		e.U64(r.Last)
	}
	a := p.Autoscale // v3
	e.String(a.Mode)
	e.U64(math.Float64bits(a.TargetRatio))
	e.U64(a.TargetBytes)
	e.U64(math.Float64bits(a.Bias))
	e.U32(a.PGNumMin)
	e.U32(a.PGNumMax)
	e.Bool(a.Bulk)
	e.U32(p.PGPNumTarget) // v4
	e.U32(p.PGNumTarget)  // v5
	e.U32(p.PGNumPending)
	e.U32(uint32(p.PendingSince))
	e.U32(uint32(len(p.Merges)))
	for _, lm := range p.Merges {
		e.U32(lm.Source)
		e.U32(uint32(lm.Epoch))
		e.U64(lm.SourceVersion[0])
		e.U64(lm.SourceVersion[1])
		e.U64(lm.TargetVersion[0])
		e.U64(lm.TargetVersion[1])
	}
	e.End(mark)
}

func decodePool(d *wire.Decoder) *Pool {
	v, end := d.Begin("pool", 1)
	p := &Pool{ID: d.I64(), Name: d.String(), Type: PoolType(d.U8()), Size: int(d.U32()),
		MinSize: int(d.U32()), PGNum: d.U32(), PGPNum: d.U32(), CrushRule: int(d.I32()),
		ECProfile: d.String(), Flags: d.U64(), ObjectHash: d.U8()}
	if v >= 2 {
		p.SnapSeq = d.U64()
		for n := d.Count(20); n > 0 && d.Err() == nil; n-- {
			s := PoolSnap{ID: d.U64(), Name: d.String(), Stamp: d.I64()}
			if p.Snaps == nil {
				p.Snaps = map[uint64]PoolSnap{}
			}
			p.Snaps[s.ID] = s
		}
		for n := d.Count(16); n > 0 && d.Err() == nil; n-- {
			p.RemovedSnaps = append(p.RemovedSnaps, SnapRange{First: d.U64(), Last: d.U64()})
		}
	}
	if v >= 3 {
		p.Autoscale = AutoscaleOptions{Mode: d.String(), TargetRatio: math.Float64frombits(d.U64()), TargetBytes: d.U64(),
			Bias: math.Float64frombits(d.U64()), PGNumMin: d.U32(), PGNumMax: d.U32(), Bulk: d.Bool()}
	}
	if v >= 4 {
		p.PGPNumTarget = d.U32()
	}
	if v >= 5 {
		p.PGNumTarget, p.PGNumPending = d.U32(), d.U32()
		p.PendingSince = Epoch(d.U32())
		for n := d.Count(40); n > 0 && d.Err() == nil; n-- {
			p.Merges = append(p.Merges, MergeMeta{Source: d.U32(), Epoch: Epoch(d.U32()),
				SourceVersion: [2]uint64{d.U64(), d.U64()}, TargetVersion: [2]uint64{d.U64(), d.U64()}})
		}
	}
	d.End("pool", end)
	if d.Err() == nil {
		if err := p.validate(); err != nil {
			d.Fail("%v", err)
		}
	}
	return p
}

func encodeOSD(e *wire.Encoder, o OSD) {
	e.Bool(o.Exists)
	e.Bool(o.Up)
	e.U32(o.Weight)
	e.U32(o.PrimaryAffinity)
	e.String(o.Addr)
}

func decodeOSD(d *wire.Decoder) OSD {
	o := OSD{Exists: d.Bool(), Up: d.Bool(), Weight: d.U32(), PrimaryAffinity: d.U32(), Addr: d.String()}
	if o.Weight > WeightIn || o.PrimaryAffinity > DefaultPrimaryAffinity {
		d.Fail("osd weight %#x or primary affinity %#x above 1.0", o.Weight, o.PrimaryAffinity)
	}
	return o
}

// SortedPGs returns the PGs of m (keys), by pool, then seed.
func SortedPGs[V any](m map[PGID]V) []PGID {
	pgs := make([]PGID, 0, len(m))
	for pg := range m {
		pgs = append(pgs, pg)
	}
	sort.Slice(pgs, func(i, j int) bool {
		if pgs[i].Pool != pgs[j].Pool {
			return pgs[i].Pool < pgs[j].Pool
		}
		return pgs[i].Seed < pgs[j].Seed
	})
	return pgs
}

func encodePGTemp(e *wire.Encoder, t map[PGID][]int32) {
	e.U32(uint32(len(t)))
	for _, pg := range SortedPGs(t) {
		e.I64(pg.Pool)
		e.U32(pg.Seed)
		e.U32(uint32(len(t[pg])))
		for _, o := range t[pg] {
			e.I32(o)
		}
	}
}

func decodePGTemp(d *wire.Decoder) map[PGID][]int32 {
	t := map[PGID][]int32{}
	for n := d.Count(16); n > 0; n-- {
		pg := PGID{Pool: d.I64(), Seed: d.U32()}
		osds := make([]int32, d.Count(4))
		for i := range osds {
			osds[i] = d.I32()
		}
		t[pg] = osds
	}
	return t
}

func encodePrimaryTemp(e *wire.Encoder, t map[PGID]int32) {
	e.U32(uint32(len(t)))
	for _, pg := range SortedPGs(t) {
		e.I64(pg.Pool)
		e.U32(pg.Seed)
		e.I32(t[pg])
	}
}

func decodePrimaryTemp(d *wire.Decoder) map[PGID]int32 {
	t := map[PGID]int32{}
	for n := d.Count(16); n > 0; n-- {
		pg := PGID{Pool: d.I64(), Seed: d.U32()}
		t[pg] = d.I32()
	}
	return t
}

func encodeCrush(e *wire.Encoder, c *crush.Map) {
	e.Bool(c != nil)
	if c != nil {
		c.Encode(e)
	}
}

func decodeCrush(d *wire.Decoder) *crush.Map {
	if !d.Bool() || d.Err() != nil {
		return nil
	}
	c, err := crush.Decode(d)
	if err != nil {
		d.Fail("crush map: %v", err)
	}
	return c
}

// Encode returns the map's versioned binary encoding, deterministic for
// equal maps.
func (m *Map) Encode() []byte {
	var e wire.Encoder
	for i := 0; i < len(magicMap); i++ {
		e.U8(magicMap[i])
	}
	mark := e.Begin(mapVersion, upmapCompat(len(m.PGUpmap), len(m.PGUpmapItems)))
	e.U32(uint32(m.Epoch))
	e.String(m.FSID)
	e.I64(m.PoolMax)
	e.U32(uint32(len(m.Pools)))
	for _, id := range m.PoolIDs() {
		encodePool(&e, m.Pools[id])
	}
	e.U32(uint32(len(m.OSDs)))
	for _, o := range m.OSDs {
		encodeOSD(&e, o)
	}
	encodeCrush(&e, m.Crush)
	encodePGTemp(&e, m.PGTemp)
	encodePrimaryTemp(&e, m.PrimaryTemp)
	e.U32(uint32(m.Flags))
	ids := make([]int32, len(m.OSDs))
	for i := range ids {
		ids[i] = int32(i)
	}
	encodeOSDFields(&e, ids, func(id int32) OSD { return m.OSDs[id] })
	encodePGTemp(&e, m.PGUpmap)          // v5
	encodeBlocklist(&e, m.Blocklist)     // v6
	encodeUpmapItems(&e, m.PGUpmapItems) // v7
	e.End(mark)
	return e.Bytes()
}

func encodeBlocklist(e *wire.Encoder, b map[string]int64) {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.U32(uint32(len(keys)))
	for _, k := range keys {
		e.String(k)
		e.I64(b[k])
	}
}

func decodeBlocklist(d *wire.Decoder) map[string]int64 {
	var b map[string]int64
	for n := d.Count(12); n > 0 && d.Err() == nil; n-- {
		if b == nil {
			b = map[string]int64{}
		}
		k := d.String()
		b[k] = d.I64()
	}
	return b
}

// extraState packs the OSD fields of encoding v2: bit 0 AutoOut, bits
// 1-2 Fullness, bit 3 Lost.
func extraState(o OSD) uint8 {
	s := uint8(o.Fullness&3) << 1
	if o.AutoOut {
		s |= 1
	}
	if o.Lost {
		s |= 8
	}
	return s
}

// setExtraState unpacks extraState's byte into o.
func setExtraState(o *OSD, st uint8) {
	o.AutoOut, o.Fullness, o.Lost = st&1 != 0, Fullness(st>>1&3), st&8 != 0
}

// osdField is an OSD field that maps and incrementals carry, from
// encoding version since on, after the flags, as a list of (id, value)
// for the OSDs where it is set; min is the fewest bytes one entry takes
// (the decoder's bound on the count).
type osdField struct {
	since uint8
	name  string
	min   int
	set   func(OSD) bool
	put   func(*wire.Encoder, OSD)
	get   func(*wire.Decoder, *OSD)
}

// osdFields are the sparse OSD fields, in encoding order.
var osdFields = []osdField{
	{2, "state", 5, func(o OSD) bool { return extraState(o) != 0 },
		func(e *wire.Encoder, o OSD) { e.U8(extraState(o)) }, func(d *wire.Decoder, o *OSD) { setExtraState(o, d.U8()) }},
	{3, "cluster address", 8, func(o OSD) bool { return o.ClusterAddr != "" },
		func(e *wire.Encoder, o OSD) { e.String(o.ClusterAddr) }, func(d *wire.Decoder, o *OSD) { o.ClusterAddr = d.String() }},
	{4, "up_from", 8, func(o OSD) bool { return o.UpFrom != 0 },
		func(e *wire.Encoder, o OSD) { e.U32(uint32(o.UpFrom)) }, func(d *wire.Decoder, o *OSD) { o.UpFrom = Epoch(d.U32()) }},
}

// encodeOSDFields writes each of osdFields for the ids (in order) where
// it is set.
func encodeOSDFields(e *wire.Encoder, ids []int32, osd func(int32) OSD) {
	for _, f := range osdFields {
		var set []int32
		for _, id := range ids {
			if f.set(osd(id)) {
				set = append(set, id)
			}
		}
		e.U32(uint32(len(set)))
		for _, id := range set {
			e.I32(id)
			f.put(e, osd(id))
		}
	}
}

// decodeOSDFields reads the osdFields of encoding version v into the
// OSDs update gives (it calls fill on the OSD of id, or reports false for
// an id not held, which fails the decoding).
func decodeOSDFields(d *wire.Decoder, v uint8, update func(id int32, fill func(*OSD)) bool) {
	for _, f := range osdFields {
		if v < f.since {
			return
		}
		for n := d.Count(f.min); n > 0 && d.Err() == nil; n-- {
			id := d.I32()
			if !update(id, func(o *OSD) { f.get(d, o) }) {
				d.Fail("osd.%d: %s for an osd the map does not hold", id, f.name)
				return
			}
		}
	}
}

func checkMagic(d *wire.Decoder, magic string) {
	for i := 0; i < len(magic); i++ {
		if d.U8() != magic[i] {
			d.Fail("not a Shoal %s", map[string]string{magicMap: "OSD map", magicIncremental: "OSD map incremental"}[magic])
			return
		}
	}
}

// Decode reads a map written by Encode. Errors wrap wire.ErrCorrupt.
func Decode(b []byte) (*Map, error) {
	d := wire.NewDecoder(b)
	checkMagic(d, magicMap)
	v, end := d.Begin("osdmap", mapVersion)
	m := New("", nil)
	m.Epoch = Epoch(d.U32())
	m.FSID = d.String()
	m.PoolMax = d.I64()
	names := map[string]bool{}
	for n := d.Count(20); n > 0 && d.Err() == nil; n-- {
		p := decodePool(d)
		if m.Pools[p.ID] != nil || names[p.Name] {
			d.Fail("pool %d %q repeated", p.ID, p.Name)
		}
		m.Pools[p.ID], names[p.Name] = p, true
	}
	n := d.Count(14)
	if n > MaxOSDs {
		d.Fail("max_osd %d above %d", n, MaxOSDs)
		n = 0
	}
	m.OSDs = make([]OSD, n)
	for i := range m.OSDs {
		m.OSDs[i] = decodeOSD(d)
	}
	m.Crush = decodeCrush(d)
	m.PGTemp = decodePGTemp(d)
	m.PrimaryTemp = decodePrimaryTemp(d)
	if v >= 2 {
		m.Flags = Flags(d.U32())
	}
	decodeOSDFields(d, v, func(id int32, fill func(*OSD)) bool {
		if id < 0 || int(id) >= len(m.OSDs) {
			return false
		}
		fill(&m.OSDs[id])
		return true
	})
	if v >= 5 {
		m.PGUpmap = decodePGTemp(d)
	}
	if v >= 6 {
		m.Blocklist = decodeBlocklist(d)
	}
	m.PGUpmapItems = map[PGID][]UpmapItem{}
	if v >= 7 {
		m.PGUpmapItems = decodeUpmapItems(d)
	}
	d.End("osdmap", end)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("osdmap: decode: %w", err)
	}
	m.crushWeights = m.computeWeights()
	return m, nil
}

// Encode returns the incremental's versioned binary encoding.
func (inc *Incremental) Encode() []byte {
	var e wire.Encoder
	for i := 0; i < len(magicIncremental); i++ {
		e.U8(magicIncremental[i])
	}
	mark := e.Begin(incrementalVersion, upmapCompat(len(inc.NewPGUpmap), len(inc.NewPGUpmapItems)))
	e.U32(uint32(inc.Epoch))
	encodeCrush(&e, inc.NewCrush)
	e.U32(uint32(len(inc.NewPools)))
	for _, p := range inc.NewPools {
		encodePool(&e, p)
	}
	e.U32(uint32(len(inc.OldPools)))
	for _, id := range inc.OldPools {
		e.I64(id)
	}
	e.I32(inc.NewMaxOSD)
	e.U32(uint32(len(inc.NewOSDs)))
	for _, id := range sortedIDs(inc.NewOSDs) {
		e.I32(id)
		encodeOSD(&e, inc.NewOSDs[id])
	}
	encodePGTemp(&e, inc.NewPGTemp)
	encodePrimaryTemp(&e, inc.NewPrimaryTemp)
	e.Bool(inc.NewFlags != nil)
	if inc.NewFlags != nil {
		e.U32(uint32(*inc.NewFlags))
	}
	encodeOSDFields(&e, sortedIDs(inc.NewOSDs), func(id int32) OSD { return inc.NewOSDs[id] })
	encodePGTemp(&e, inc.NewPGUpmap)      // v5
	encodeBlocklist(&e, inc.NewBlocklist) // v6
	e.Strings(inc.OldBlocklist)
	encodeUpmapItems(&e, inc.NewPGUpmapItems) // v7
	e.End(mark)
	return e.Bytes()
}

// DecodeIncremental reads an incremental written by Incremental.Encode.
// Errors wrap wire.ErrCorrupt.
func DecodeIncremental(b []byte) (*Incremental, error) {
	d := wire.NewDecoder(b)
	checkMagic(d, magicIncremental)
	v, end := d.Begin("incremental", incrementalVersion)
	inc := &Incremental{Epoch: Epoch(d.U32())}
	inc.NewCrush = decodeCrush(d)
	for n := d.Count(20); n > 0 && d.Err() == nil; n-- {
		inc.NewPools = append(inc.NewPools, decodePool(d))
	}
	for n := d.Count(8); n > 0; n-- {
		inc.OldPools = append(inc.OldPools, d.I64())
	}
	inc.NewMaxOSD = d.I32()
	if inc.NewMaxOSD < 0 || inc.NewMaxOSD > MaxOSDs {
		d.Fail("max_osd %d outside [0, %d]", inc.NewMaxOSD, MaxOSDs)
	}
	if n := d.Count(18); n > 0 {
		inc.NewOSDs = make(map[int32]OSD, n)
		for ; n > 0; n-- {
			id := d.I32()
			inc.NewOSDs[id] = decodeOSD(d)
		}
	}
	inc.NewPGTemp = decodePGTemp(d)
	inc.NewPrimaryTemp = decodePrimaryTemp(d)
	if v >= 2 && d.Bool() {
		f := Flags(d.U32())
		inc.NewFlags = &f
	}
	decodeOSDFields(d, v, func(id int32, fill func(*OSD)) bool {
		o, ok := inc.NewOSDs[id]
		if ok {
			fill(&o)
			inc.NewOSDs[id] = o
		}
		return ok
	})
	if v >= 5 {
		inc.NewPGUpmap = decodePGTemp(d)
	}
	if v >= 6 {
		inc.NewBlocklist = decodeBlocklist(d)
		inc.OldBlocklist = d.Strings()
	}
	if v >= 7 {
		inc.NewPGUpmapItems = decodeUpmapItems(d)
	}
	d.End("incremental", end)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("osdmap: decode incremental: %w", err)
	}
	return inc, nil
}
