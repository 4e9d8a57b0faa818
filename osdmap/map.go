package osdmap

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/shoal-project/shoal/crush"
)

// Epoch numbers OSD map versions; every change makes a new epoch.
type Epoch uint32

// Weight and affinity constants, 16.16 fixed point as in Ceph.
const (
	WeightIn                      = 0x10000 // CEPH_OSD_IN
	WeightOut                     = 0       // CEPH_OSD_OUT
	DefaultPrimaryAffinity uint32 = 0x10000
)

// NoOSD is the "no OSD" value in mapping results (a hole in an erasure
// acting set); equal to CRUSH's ItemNone.
const NoOSD = crush.ItemNone

// Members counts the OSDs of an acting (or up) set: its entries that are
// not NoOSD holes (erasure-coded sets keep shard positions).
func Members(acting []int32) int {
	n := 0
	for _, o := range acting {
		if o != NoOSD {
			n++
		}
	}
	return n
}

// OSD is one OSD's entry. An OSD that does not exist is the zero value.
type OSD struct {
	Exists          bool
	Up              bool
	Weight          uint32 // in/out reweight: 0 out … 0x10000 fully in
	PrimaryAffinity uint32 // 0 … 0x10000: chance to be primary of its PGs
	Addr            string // host:port/nonce of its messenger, when up (the public, front network)
	// ClusterAddr is where other OSDs reach it — replication, recovery,
	// peering and back heartbeats — when it has a cluster (back) network
	// of its own (Ceph's cluster_addr); "" when Addr carries everything.
	ClusterAddr string
	// AutoOut is set when the MONs marked the OSD out after
	// mon_osd_down_out_interval (not an operator); such an OSD is marked
	// in again when it boots, unless noin is set (Ceph's
	// mon_osd_auto_mark_auto_out_in).
	AutoOut bool
	// Fullness is how full the OSD last reported its device.
	Fullness Fullness
	// Lost: an operator declared the down OSD's data gone (`shoal osd
	// lost`), so peering no longer waits for it; cleared when it boots.
	Lost bool
	// UpFrom is the epoch of the map that last marked the OSD up (Ceph's
	// up_from): an OSD marked down and booting again, even at the same
	// address, gets a new one, so a peer that never saw the map it was
	// down in still sees a new interval of the PGs it serves. 0 in maps
	// encoded before it existed.
	UpFrom Epoch
}

// Fullness is an OSD's fill level against mon_osd_nearfull_ratio,
// mon_osd_backfillfull_ratio and mon_osd_full_ratio (Ceph's OSD states
// nearfull, backfillfull and full). Writes that add data to a PG with a
// full member are refused.
type Fullness uint8

// Fill levels, in order.
const (
	NotFull Fullness = iota
	NearFull
	BackfillFull
	Full
)

// String is Ceph's state name: "nearfull", "backfillfull", "full", or
// "ok" for NotFull.
func (f Fullness) String() string {
	switch f {
	case NearFull:
		return "nearfull"
	case BackfillFull:
		return "backfillfull"
	case Full:
		return "full"
	}
	return "ok"
}

// BackAddr is the address other OSDs use for the OSD: ClusterAddr, or
// Addr without a cluster network.
func (o OSD) BackAddr() string {
	if o.ClusterAddr != "" {
		return o.ClusterAddr
	}
	return o.Addr
}

// In reports whether the OSD receives data (reweight above zero).
func (o OSD) In() bool { return o.Weight > 0 }

// Map is one epoch of the OSD map. It is immutable once made by Apply or
// Decode (mapping caches derived state); changes go through Apply, which
// returns a new Map. Safe for concurrent reads.
type Map struct {
	Epoch       Epoch
	FSID        string
	Pools       map[int64]*Pool
	PoolMax     int64 // highest pool id ever used
	OSDs        []OSD // index = OSD id; len = max_osd
	Crush       *crush.Map
	PGTemp      map[PGID][]int32
	PrimaryTemp map[PGID]int32
	// PGUpmap overrides CRUSH's choice for a PG with an explicit list of
	// OSDs (Ceph's pg_upmap), applied before down OSDs are removed. The
	// MONs set it on erasure-coded PGs whose OSDs CRUSH only reorders, so
	// that each keeps its shard (mon.positionalUpmaps).
	PGUpmap map[PGID][]int32
	// PGUpmapItems replaces single OSDs of a PG's placement (Ceph's
	// pg_upmap_items), applied after PGUpmap: the balancer's moves
	// (package balancer, `shoal osd pg-upmap-items`).
	PGUpmapItems map[PGID][]UpmapItem
	Flags        Flags // cluster-wide flags (`shoal osd set`)
	// Blocklist holds the refused clients: entry → until when, Unix
	// nanoseconds (blocklist.go).
	Blocklist map[string]int64

	// crushWeights caches weights() for maps made by Apply or Decode,
	// which are never modified afterwards.
	crushWeights []uint32
}

// Errors callers branch on.
var (
	// ErrNoPool means the pool id or name is not in the map.
	ErrNoPool = errors.New("no such pool")
	// ErrEpoch means an incremental does not follow the map's epoch.
	ErrEpoch = errors.New("incremental does not follow this epoch")
)

// New returns an empty map at epoch 0 holding the given CRUSH map.
func New(fsid string, c *crush.Map) *Map {
	return &Map{FSID: fsid, Pools: map[int64]*Pool{}, Crush: c,
		PGTemp: map[PGID][]int32{}, PrimaryTemp: map[PGID]int32{}, PGUpmap: map[PGID][]int32{},
		PGUpmapItems: map[PGID][]UpmapItem{}}
}

// Pool returns the pool with the given id.
func (m *Map) Pool(id int64) (*Pool, error) {
	p, ok := m.Pools[id]
	if !ok {
		return nil, fmt.Errorf("pool %d: %w", id, ErrNoPool)
	}
	return p, nil
}

// PoolByName returns the pool with the given name.
func (m *Map) PoolByName(name string) (*Pool, error) {
	for _, p := range m.Pools {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pool %q: %w", name, ErrNoPool)
}

// PoolIDs returns the pool ids in increasing order.
func (m *Map) PoolIDs() []int64 {
	ids := make([]int64, 0, len(m.Pools))
	for id := range m.Pools {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// MaxOSD is the size of the OSD id space.
func (m *Map) MaxOSD() int32 { return int32(len(m.OSDs)) }

func (m *Map) exists(o int32) bool { return o >= 0 && int(o) < len(m.OSDs) && m.OSDs[o].Exists }

func (m *Map) isUp(o int32) bool { return m.exists(o) && m.OSDs[o].Up }

// UpOSDs returns the ids of the OSDs that exist and are up, ascending.
func (m *Map) UpOSDs() []int32 {
	var ids []int32
	for i := range m.OSDs {
		if m.isUp(int32(i)) {
			ids = append(ids, int32(i))
		}
	}
	return ids
}

// weights is the per-OSD reweight vector CRUSH reads. As in Ceph it holds
// each entry's weight even for OSDs that no longer exist (removing an OSD
// does not reset its weight): CRUSH may choose one, and the mapping then
// drops it (replicated) or leaves a hole (erasure).
func (m *Map) weights() []uint32 {
	if len(m.crushWeights) == len(m.OSDs) && m.crushWeights != nil {
		return m.crushWeights
	}
	return m.computeWeights()
}

func (m *Map) computeWeights() []uint32 {
	w := make([]uint32, len(m.OSDs))
	for i, o := range m.OSDs {
		w[i] = o.Weight
	}
	return w
}

// ObjectToPG maps an object name (in a namespace, "" for none) in a pool to
// its PG. The PG's seed is already folded to the pool's pg_num.
func (m *Map) ObjectToPG(pool int64, name, namespace string) (PGID, error) {
	p, err := m.Pool(pool)
	if err != nil {
		return PGID{}, err
	}
	raw := PGID{Pool: pool, Seed: p.HashKey(name, namespace)}
	return p.RawPGToPG(raw), nil
}

// Mapping is where a PG lives.
type Mapping struct {
	Raw           []int32 // CRUSH's choice or the PG's pg_upmap, then its pg_upmap_items; nonexistent OSDs removed
	Up            []int32 // Raw without down OSDs
	UpPrimary     int32   // -1 when Up is empty
	Acting        []int32 // pg_temp, else Up
	ActingPrimary int32   // primary_temp, else Acting's first, -1 if none
}

// MapPG computes a PG's raw, up and acting sets and primaries
// (OSDMap::_pg_to_up_acting_osds). The PG's seed may be raw or folded.
func (m *Map) MapPG(pg PGID) (Mapping, error) {
	p, err := m.Pool(pg.Pool)
	if err != nil {
		return Mapping{}, err
	}
	return m.mapPG(p, pg, m.weights()), nil
}

func (m *Map) mapPG(p *Pool, pg PGID, weights []uint32) Mapping {
	var mp Mapping
	pps := p.PlacementSeed(pg)
	folded := p.RawPGToPG(pg)
	u, ok, rejected := m.upmap(p, folded, weights)
	if ok {
		mp.Raw = u
	} else {
		mp.Raw = m.crushOSDs(p, pps, weights)
	}
	if !rejected {
		m.applyUpmapItems(folded, mp.Raw, weights)
	}
	// up: without down OSDs
	for _, o := range mp.Raw {
		switch {
		case m.isUp(o):
			mp.Up = append(mp.Up, o)
		case !p.CanShiftOSDs():
			mp.Up = append(mp.Up, NoOSD)
		}
	}
	mp.UpPrimary = pickPrimary(mp.Up)
	m.applyPrimaryAffinity(pps, p, mp.Up, &mp.UpPrimary)
	// acting: pg_temp / primary_temp override
	temp, tempPrimary := m.tempOSDs(p, folded)
	if len(temp) > 0 {
		mp.Acting = temp
	} else {
		mp.Acting = append([]int32(nil), mp.Up...)
	}
	mp.ActingPrimary = tempPrimary
	if len(temp) == 0 && tempPrimary == -1 {
		mp.ActingPrimary = mp.UpPrimary
	}
	return mp
}

// crushOSDs is CRUSH's choice for a PG's placement seed pps, with OSDs
// that do not exist removed (replicated) or made holes (erasure): Ceph's
// OSDMap::_pg_to_raw_osds.
func (m *Map) crushOSDs(p *Pool, pps uint32, weights []uint32) []int32 {
	var raw []int32
	// A rule serves only pools of its own type (CrushWrapper::find_rule).
	if m.Crush != nil {
		if r := m.Crush.Rule(p.CrushRule); r != nil && r.Type == uint8(p.Type) {
			raw = m.Crush.DoRule(p.CrushRule, pps, p.Size, weights, nil)
		}
	}
	if p.CanShiftOSDs() {
		out := raw[:0]
		for _, o := range raw {
			if m.exists(o) {
				out = append(out, o)
			}
		}
		return out
	}
	for i, o := range raw {
		if !m.exists(o) {
			raw[i] = NoOSD
		}
	}
	return raw
}

// upmap returns the PG's pg_upmap entry (a copy) and true when it applies:
// as in Ceph's OSDMap::_apply_upmap an entry naming an OSD that is out
// (weight 0) is ignored, and so is one whose length is not the pool's
// size or that names an OSD that does not exist. rejected reports an
// entry that exists but does not apply: as in Ceph, the PG's
// pg_upmap_items are then ignored too.
func (m *Map) upmap(p *Pool, pg PGID, weights []uint32) (u []int32, ok, rejected bool) {
	u, ok = m.PGUpmap[pg]
	if !ok {
		return nil, false, false
	}
	if len(u) != p.Size {
		return nil, false, true
	}
	for _, o := range u {
		if o != NoOSD && (!m.exists(o) || int(o) >= len(weights) || weights[o] == 0) {
			return nil, false, true
		}
	}
	return slices.Clone(u), true, false
}

// UpmapItem is one pair of a PG's pg_upmap_items: the OSD From of its
// placement is replaced by To.
type UpmapItem struct {
	From, To int32
}

// applyUpmapItems replaces OSDs of raw in place by the PG's
// pg_upmap_items, as Ceph's OSDMap::_apply_upmap: each pair replaces the
// first position holding From, unless To is already in raw or To is
// out (weight 0). Pairs apply in order, so [[1,2],[2,1]] is no swap. It
// returns the pairs that applied.
func (m *Map) applyUpmapItems(pg PGID, raw []int32, weights []uint32) []UpmapItem {
	var live []UpmapItem
	for _, it := range m.PGUpmapItems[pg] {
		if it.To >= 0 && int(it.To) < len(weights) && weights[it.To] == 0 {
			continue
		}
		pos := -1
		for i, o := range raw {
			if o == it.To {
				pos = -1
				break
			}
			if o == it.From && pos < 0 {
				pos = i
			}
		}
		if pos >= 0 {
			raw[pos] = it.To
			live = append(live, it)
		}
	}
	return live
}

// LiveUpmapItems returns the pairs of a PG's pg_upmap_items that apply
// now (a CRUSH change can leave a pair's From out of the set, or its To
// in it), in order; nil for a PG without entries or whose pg_upmap is
// refused. ErrNoPool if the PG's pool is not in the map.
func (m *Map) LiveUpmapItems(pg PGID) ([]UpmapItem, error) {
	p, err := m.Pool(pg.Pool)
	if err != nil {
		return nil, err
	}
	if len(m.PGUpmapItems[pg]) == 0 {
		return nil, nil
	}
	w := m.weights()
	u, ok, rejected := m.upmap(p, p.RawPGToPG(pg), w)
	if rejected {
		return nil, nil
	}
	if !ok {
		u = m.crushOSDs(p, p.PlacementSeed(pg), w)
	}
	return m.applyUpmapItems(p.RawPGToPG(pg), u, w), nil
}

// CrushOSDs returns, for every PG of a pool in seed order, CRUSH's choice
// of OSDs before any pg_upmap (Ceph's pg_to_raw_osds): nonexistent OSDs
// removed, or holes (NoOSD) on an erasure-coded pool. ErrNoPool if the
// map has no pool of that id.
func (m *Map) CrushOSDs(pool int64) ([][]int32, error) {
	p, err := m.Pool(pool)
	if err != nil {
		return nil, err
	}
	w := m.weights()
	out := make([][]int32, p.PGNum)
	for s := range out {
		out[s] = m.crushOSDs(p, p.PlacementSeed(PGID{Pool: pool, Seed: uint32(s)}), w)
	}
	return out, nil
}

func pickPrimary(osds []int32) int32 {
	for _, o := range osds {
		if o != NoOSD {
			return o
		}
	}
	return -1
}

// applyPrimaryAffinity lets an OSD with primary affinity a < 1 decline to
// be primary for a fraction 1-a of its PGs; the next OSD willing takes the
// role (replicated pools move it to the front). OSDMap::_apply_primary_affinity.
func (m *Map) applyPrimaryAffinity(seed uint32, p *Pool, osds []int32, primary *int32) {
	any := false
	for _, o := range osds {
		if o != NoOSD && m.OSDs[o].PrimaryAffinity != DefaultPrimaryAffinity {
			any = true
			break
		}
	}
	if !any {
		return
	}
	pos := -1
	for i, o := range osds {
		if o == NoOSD {
			continue
		}
		a := m.OSDs[o].PrimaryAffinity
		if a < DefaultPrimaryAffinity && crushHash2(seed, uint32(o))>>16 >= a {
			if pos < 0 {
				pos = i // fallback if nobody else accepts
			}
			continue
		}
		pos = i
		break
	}
	if pos < 0 {
		return
	}
	*primary = osds[pos]
	if p.CanShiftOSDs() && pos > 0 {
		copy(osds[1:pos+1], osds[:pos])
		osds[0] = *primary
	}
}

// tempOSDs returns the pg_temp acting set (down or missing OSDs dropped, or
// holes for erasure pools) and the temp primary, -1 when none.
func (m *Map) tempOSDs(p *Pool, pg PGID) ([]int32, int32) {
	var temp []int32
	for _, o := range m.PGTemp[pg] {
		switch {
		case m.isUp(o):
			temp = append(temp, o)
		case !p.CanShiftOSDs():
			temp = append(temp, NoOSD)
		}
	}
	if pt, ok := m.PrimaryTemp[pg]; ok {
		return temp, pt
	}
	return temp, pickPrimary(temp)
}

// PGMappings maps every PG of a pool, in seed order, computing the weight
// vector once.
func (m *Map) PGMappings(pool int64) ([]Mapping, error) {
	p, err := m.Pool(pool)
	if err != nil {
		return nil, err
	}
	w := m.weights()
	out := make([]Mapping, p.PGNum)
	for s := range out {
		out[s] = m.mapPG(p, PGID{Pool: pool, Seed: uint32(s)}, w)
	}
	return out, nil
}
