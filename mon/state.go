// Package mon is the monitor: the authoritative cluster state (the OSD map
// and the central configuration database) and the commands that change it.
//
// This file is its pure core: State and the Commands applied to it are
// deterministic — no I/O, clock or goroutines — so every MON of a quorum
// that applies the same committed commands in the same order holds the same
// state. The consensus log (hashicorp/raft, daemon.go) carries Commands; this code
// turns each into the next OSD map incremental.
package mon

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/caps"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// Errors commands fail with: the MON protocol's own (package monc), so a
// client sees the very error the state returned.
var (
	ErrNotFound = monc.ErrNotFound
	ErrExists   = monc.ErrExists
	ErrInvalid  = monc.ErrInvalid
	ErrBusy     = monc.ErrBusy
)

// State is what the MONs agree on.
type State struct {
	Map *osdmap.Map
	// Config is the central configuration database (`shoal config set`):
	// WHO (global, mon, osd, osd.3, client, …) → option → value.
	Config map[string]map[string]string
	// Auth is the key database (`shoal auth`): entity → key and caps. The
	// keyring files' entities are accepted as well.
	Auth map[string]monc.AuthEntry
	// ECProfiles are the erasure-code profiles (`shoal osd
	// erasure-code-profile`): name → key=value arguments. "default" is
	// always there.
	ECProfiles map[string][]string
	// PGHistory is, for each PG, the acting set that last activated
	// (several only when records of the same interval epoch differ), as
	// its primaries recorded it (pghistory.go).
	PGHistory map[osdmap.PGID][]monc.PGInterval
}

// NewState is a cluster's first state: epoch 1 with the CRUSH map and no
// OSDs or pools.
func NewState(fsid string, c *crush.Map) (*State, error) {
	m, err := osdmap.New(fsid, c).Apply(&osdmap.Incremental{Epoch: 1})
	if err != nil {
		return nil, err
	}
	return &State{Map: m, Config: map[string]map[string]string{}, Auth: map[string]monc.AuthEntry{}, ECProfiles: map[string][]string{}}, nil
}

// Command is a change to the state. Apply validates it against s and
// returns the OSD map incremental it makes (nil if the map does not
// change) and a message for the operator; it does not modify s.
type Command interface {
	Apply(s *State) (inc *osdmap.Incremental, msg string, err error)
}

// Commit applies a command and installs its result: the new map (from the
// incremental, which it returns; nil if the map did not change) and the
// configuration changes.
func (s *State) Commit(c Command) (*osdmap.Incremental, string, error) {
	inc, msg, err := c.Apply(s)
	if err != nil {
		return nil, "", err
	}
	if inc != nil {
		next, err := s.Map.Apply(inc)
		if err != nil {
			return nil, "", err
		}
		if ups := positionalUpmaps(s.Map, next); len(ups) > 0 {
			if inc.NewPGUpmap == nil {
				inc.NewPGUpmap = map[osdmap.PGID][]int32{}
			}
			maps.Copy(inc.NewPGUpmap, ups)
			if next, err = s.Map.Apply(inc); err != nil {
				return nil, "", err
			}
		}
		if drop := cleanUpmapItems(inc, next); len(drop) > 0 {
			if inc.NewPGUpmapItems == nil {
				inc.NewPGUpmapItems = map[osdmap.PGID][]osdmap.UpmapItem{}
			}
			maps.Copy(inc.NewPGUpmapItems, drop)
			if next, err = s.Map.Apply(inc); err != nil {
				return nil, "", err
			}
		}
		if stale := staleTemps(next); len(stale) > 0 {
			if inc.NewPGTemp == nil {
				inc.NewPGTemp = map[osdmap.PGID][]int32{}
			}
			for _, pg := range stale {
				inc.NewPGTemp[pg] = nil
			}
			if next, err = s.Map.Apply(inc); err != nil {
				return nil, "", err
			}
		}
		s.splitHistory(next)
		s.Map = next
		if len(inc.OldPools) > 0 {
			s.dropPoolHistory()
		}
	}
	if cc, ok := c.(configChange); ok {
		cc.install(s)
	}
	return inc, msg, nil
}

func (s *State) next() *osdmap.Incremental {
	return &osdmap.Incremental{Epoch: s.Map.Epoch + 1}
}

// OSDBoot registers an OSD that starts: a new one (ID -1) gets the lowest
// free id and is placed in CRUSH under host=Host (root=default) with a
// weight of its device size in TiB, as Ceph's osd_crush_update_on_start
// does; a booting OSD is marked up with its address. A new OSD, and one
// the MONs marked out (AutoOut), is marked in unless the noin flag is set;
// one an operator marked out stays out. With noup set, booting fails with
// ErrBusy and the OSD stays down.
type OSDBoot struct {
	ID   int32
	Host string
	Addr string
	// ClusterAddr is the OSD's address on the cluster (back) network, ""
	// without one.
	ClusterAddr string
	SizeBytes   uint64
	Class       string
}

// Apply implements Command.
func (c OSDBoot) Apply(s *State) (*osdmap.Incremental, string, error) {
	m := s.Map
	id := c.ID
	if c.Host == "" || c.Addr == "" {
		return nil, "", fmt.Errorf("osd boot: %w: host and address required", ErrInvalid)
	}
	if m.Flags.Has(osdmap.FlagNoUp) {
		return nil, "", fmt.Errorf("osd boot: %w: the noup flag is set (shoal osd unset noup)", ErrBusy)
	}
	inc := s.next()
	if id < 0 {
		for id = 0; id < m.MaxOSD() && m.OSDs[id].Exists; id++ {
		}
		if id >= m.MaxOSD() {
			inc.NewMaxOSD = id + 1
		}
	} else if id >= m.MaxOSD() {
		inc.NewMaxOSD = id + 1
	}
	name := fmt.Sprintf("osd.%d", id)
	if m.Crush.Device(id) == nil {
		weight := uint32(float64(c.SizeBytes) / (1 << 40) * crush.WeightOne)
		cm := m.Crush.Clone()
		if err := cm.InsertItem(id, weight, name, c.Class, map[string]string{"host": c.Host, "root": "default"}); err != nil {
			return nil, "", fmt.Errorf("osd boot %s: %w", name, err)
		}
		inc.NewCrush = cm
	}
	osd := osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity, Addr: c.Addr, ClusterAddr: c.ClusterAddr, UpFrom: inc.Epoch} // Lost cleared
	if id < m.MaxOSD() && m.OSDs[id].Exists {
		old := m.OSDs[id]
		if old.Up && old.Addr == c.Addr && old.ClusterAddr == c.ClusterAddr {
			osd.UpFrom = old.UpFrom // the same instance, up all along (a repeated boot): no new interval
		}
		osd.Weight, osd.PrimaryAffinity, osd.AutoOut = old.Weight, old.PrimaryAffinity, old.AutoOut // keep an operator's out
		if old.AutoOut && !m.Flags.Has(osdmap.FlagNoIn) {
			osd.Weight, osd.AutoOut = osdmap.WeightIn, false
		}
	} else if m.Flags.Has(osdmap.FlagNoIn) {
		osd.Weight = osdmap.WeightOut
	}
	inc.NewOSDs = map[int32]osdmap.OSD{id: osd}
	return inc, fmt.Sprintf("%s up at %s", name, c.Addr), nil
}

// OSDMark sets OSDs down (Up=false), out (In=false) or back in. Auto
// marks the MONs' own down-out (mon_osd_down_out_interval): it applies
// only to OSDs still down and in, and records AutoOut so the OSD is marked
// in again when it boots. Addrs, when set, are the instances (one per id)
// the MON leader decided about: an OSD that has booted another instance
// since is left alone (a failure report for a process that is gone must
// not mark down the one that replaced it).
type OSDMark struct {
	IDs   []int32
	Up    *bool // nil: unchanged; only false is allowed (an OSD comes up by booting)
	In    *bool
	Auto  bool
	Addrs []string
}

// Apply implements Command.
func (c OSDMark) Apply(s *State) (*osdmap.Incremental, string, error) {
	if c.Up != nil && *c.Up {
		return nil, "", fmt.Errorf("osd mark: %w: an OSD is marked up only by booting", ErrInvalid)
	}
	inc := s.next()
	inc.NewOSDs = map[int32]osdmap.OSD{}
	for _, id := range c.IDs {
		if id < 0 || id >= s.Map.MaxOSD() || !s.Map.OSDs[id].Exists {
			return nil, "", fmt.Errorf("osd.%d: %w", id, ErrNotFound)
		}
		o := s.Map.OSDs[id]
		if i := slices.Index(c.IDs, id); i < len(c.Addrs) && c.Addrs[i] != "" && c.Addrs[i] != o.Addr {
			continue // another instance booted since the MON looked
		}
		if c.Auto && (o.Up || !o.In() || c.In == nil || *c.In || s.Map.Flags.Has(osdmap.FlagNoOut)) {
			continue // it came back, or someone else decided, since the MON looked
		}
		if c.Up != nil {
			o.Up = false
		}
		if c.In != nil {
			o.Weight = osdmap.WeightOut
			if *c.In {
				o.Weight = osdmap.WeightIn
			}
			o.AutoOut = c.Auto
		}
		inc.NewOSDs[id] = o
	}
	if len(inc.NewOSDs) == 0 {
		return nil, "nothing to mark", nil
	}
	return inc, fmt.Sprintf("marked %d osd(s)", len(inc.NewOSDs)), nil
}

// PGTemp sets or clears PGs' temporary acting sets (Ceph's MOSDPGTemp):
// a PG's primary asks for one when its new up set holds copies that must
// be backfilled, so that the old acting set keeps serving meanwhile, and
// clears it (an empty set) once the backfill is complete. An erasure-coded
// PG's set is positional: one entry per shard, osdmap.NoOSD for an empty
// position. Requests are batched: an entry for a PG that no longer exists
// (its pool deleted, pg_num lowered), naming an OSD that does not exist,
// longer than the pool's size, or erasure-coded without every position
// (or replicated with an empty one) is skipped; one equal to the PG's up
// set clears the entry.
type PGTemp struct {
	Sets map[osdmap.PGID][]int32
}

// Apply implements Command.
func (c PGTemp) Apply(s *State) (*osdmap.Incremental, string, error) {
	m := s.Map
	inc := s.next()
	inc.NewPGTemp = map[osdmap.PGID][]int32{}
	for pg, osds := range c.Sets {
		p, err := m.Pool(pg.Pool)
		if err != nil || pg.Seed >= p.PGNum || len(osds) > p.Size || (!p.CanShiftOSDs() && len(osds) != 0 && len(osds) != p.Size) ||
			slices.ContainsFunc(osds, func(o int32) bool {
				if o == osdmap.NoOSD { // an erasure-coded PG's empty position
					return p.CanShiftOSDs()
				}
				return o < 0 || o >= m.MaxOSD() || !m.OSDs[o].Exists
			}) {
			continue
		}
		if mp, err := m.MapPG(pg); err == nil && slices.Equal(mp.Up, osds) {
			osds = nil
		}
		if cur, ok := m.PGTemp[pg]; ok == (len(osds) > 0) && slices.Equal(cur, osds) {
			continue // already so
		}
		inc.NewPGTemp[pg] = slices.Clone(osds)
	}
	if len(inc.NewPGTemp) == 0 {
		return nil, "unchanged", nil
	}
	return inc, fmt.Sprintf("pg_temp of %d pg(s) changed", len(inc.NewPGTemp)), nil
}

// staleTemps lists the pg_temp entries of m that no longer serve (Ceph's
// OSDMap::clean_temps): of a PG that no longer exists, with every OSD
// down, equal to the PG's up set, or larger than the pool's size. A
// primary whose OSDs all went down cannot clear its own entry; without
// this, the old acting set would become the acting set again when those
// OSDs return, however stale.
func staleTemps(m *osdmap.Map) []osdmap.PGID {
	var stale []osdmap.PGID
	for pg, osds := range m.PGTemp {
		p, err := m.Pool(pg.Pool)
		if err != nil || pg.Seed >= p.PGNum || len(osds) > p.Size {
			stale = append(stale, pg)
			continue
		}
		mp, err := m.MapPG(pg)
		if err != nil || slices.Equal(mp.Up, osds) || !slices.ContainsFunc(osds, func(o int32) bool {
			return o >= 0 && o < m.MaxOSD() && m.OSDs[o].Up
		}) {
			stale = append(stale, pg)
		}
	}
	return stale
}

// OSDFlag sets (On) or clears cluster flags (`shoal osd set|unset FLAG`).
type OSDFlag struct {
	Flags osdmap.Flags
	On    bool
}

// Apply implements Command.
func (c OSDFlag) Apply(s *State) (*osdmap.Incremental, string, error) {
	f := s.Map.Flags &^ c.Flags
	verb := "unset"
	if c.On {
		f, verb = s.Map.Flags|c.Flags, "set"
	}
	if f == s.Map.Flags {
		return nil, fmt.Sprintf("%s is already %s", c.Flags, verb), nil
	}
	inc := s.next()
	inc.NewFlags = &f
	return inc, fmt.Sprintf("%s is %s", c.Flags, verb), nil
}

// OSDLost declares a down OSD's data gone for good (`shoal osd lost`), so
// PGs waiting for it in peering go on without it — whatever only it held
// is lost. Booting clears it.
type OSDLost struct{ ID int32 }

// Apply implements Command.
func (c OSDLost) Apply(s *State) (*osdmap.Incremental, string, error) {
	m := s.Map
	if c.ID < 0 || c.ID >= m.MaxOSD() || !m.OSDs[c.ID].Exists {
		return nil, "", fmt.Errorf("osd.%d: %w", c.ID, ErrNotFound)
	}
	o := m.OSDs[c.ID]
	if o.Up {
		return nil, "", fmt.Errorf("osd.%d is up: %w (only a down OSD can be lost)", c.ID, ErrBusy)
	}
	o.Lost = true
	inc := s.next()
	inc.NewOSDs = map[int32]osdmap.OSD{c.ID: o}
	return inc, fmt.Sprintf("marked osd.%d lost", c.ID), nil
}

// OSDFullness records the fill level an OSD reports of its device
// (Addr: the reporting instance; a stale instance's report is ignored).
type OSDFullness struct {
	ID    int32
	Addr  string
	Level osdmap.Fullness
}

// Apply implements Command.
func (c OSDFullness) Apply(s *State) (*osdmap.Incremental, string, error) {
	m := s.Map
	if c.ID < 0 || c.ID >= m.MaxOSD() || !m.OSDs[c.ID].Exists {
		return nil, "", fmt.Errorf("osd.%d: %w", c.ID, ErrNotFound)
	}
	if c.Level > osdmap.Full {
		return nil, "", fmt.Errorf("osd fullness: %w: level %d", ErrInvalid, c.Level)
	}
	o := m.OSDs[c.ID]
	if o.Addr != c.Addr || o.Fullness == c.Level {
		return nil, "unchanged", nil
	}
	o.Fullness = c.Level
	inc := s.next()
	inc.NewOSDs = map[int32]osdmap.OSD{c.ID: o}
	return inc, fmt.Sprintf("osd.%d is %s", c.ID, c.Level), nil
}

// OSDRemove deletes a down OSD from the map and from CRUSH.
type OSDRemove struct{ ID int32 }

// Apply implements Command.
func (c OSDRemove) Apply(s *State) (*osdmap.Incremental, string, error) {
	m := s.Map
	if c.ID < 0 || c.ID >= m.MaxOSD() || !m.OSDs[c.ID].Exists {
		return nil, "", fmt.Errorf("osd.%d: %w", c.ID, ErrNotFound)
	}
	if m.OSDs[c.ID].Up {
		return nil, "", fmt.Errorf("osd.%d is up: %w (mark it down first)", c.ID, ErrBusy)
	}
	inc := s.next()
	inc.NewOSDs = map[int32]osdmap.OSD{c.ID: {}}
	if m.Crush.Device(c.ID) != nil {
		cm := m.Crush.Clone()
		if err := cm.RemoveItem(c.ID); err != nil {
			return nil, "", err
		}
		inc.NewCrush = cm
	}
	return inc, fmt.Sprintf("removed osd.%d", c.ID), nil
}

// PoolCreate makes a pool; zero sizes take the configured defaults
// (osd_pool_default_size, _min_size, _pg_num, _pgp_num).
type PoolCreate struct {
	Name      string
	Erasure   bool
	Size      int
	MinSize   int
	PGNum     uint32
	PGPNum    uint32
	Rule      string // CRUSH rule name; default replicated_rule / erasure_rule
	ECProfile string
}

// Apply implements Command.
func (c PoolCreate) Apply(s *State) (*osdmap.Incremental, string, error) {
	if c.Name == "" {
		return nil, "", fmt.Errorf("pool create: %w: empty name", ErrInvalid)
	}
	if _, err := s.Map.PoolByName(c.Name); err == nil {
		return nil, "", fmt.Errorf("pool %q: %w", c.Name, ErrExists)
	}
	cfg := s.ConfigFor("mon")
	p := &osdmap.Pool{ID: s.Map.PoolMax + 1, Name: c.Name, Type: osdmap.PoolReplicated, Size: c.Size, MinSize: c.MinSize,
		PGNum: c.PGNum, PGPNum: c.PGPNum, Flags: osdmap.FlagHashPSPool, ObjectHash: osdmap.HashRjenkins, ECProfile: c.ECProfile}
	rule := c.Rule
	inc := s.next()
	if c.Erasure {
		// size k+m, min_size k+min(1, m-1), and an indep rule named after
		// the pool from the profile's root, failure domain and class, as
		// Ceph's OSDMonitor does (prepare_pool_size, prepare_pool_crush_rule)
		p.Type = osdmap.PoolErasure
		if p.ECProfile == "" {
			p.ECProfile = "default"
		}
		prof, err := s.ECProfile(p.ECProfile)
		if err != nil {
			return nil, "", fmt.Errorf("pool %q: %w", c.Name, err)
		}
		if p.Size == 0 {
			p.Size = prof.K + prof.M
		}
		if p.Size != prof.K+prof.M {
			return nil, "", fmt.Errorf("pool %q: %w: size of an erasure pool is k+m = %d", c.Name, ErrInvalid, prof.K+prof.M)
		}
		if p.MinSize == 0 {
			p.MinSize = prof.K + max(0, min(1, prof.M-1))
		}
		if p.MinSize < prof.K {
			return nil, "", fmt.Errorf("pool %q: %w: min_size %d below k = %d", c.Name, ErrInvalid, p.MinSize, prof.K)
		}
		if rule == "" {
			rule = c.Name
			if s.Map.Crush.RuleByName(rule) == nil {
				cm := s.Map.Crush.Clone()
				if _, err := cm.AddSimpleRule(rule, prof.Root, prof.FailureDomain, prof.DeviceClass, "indep", uint8(osdmap.PoolErasure)); err != nil {
					return nil, "", fmt.Errorf("pool %q: %w: crush rule from profile %s: %v", c.Name, ErrInvalid, p.ECProfile, err)
				}
				inc.NewCrush = cm
			}
		}
	} else if rule == "" {
		rule = "replicated_rule"
	}
	rules := s.Map.Crush
	if inc.NewCrush != nil {
		rules = inc.NewCrush
	}
	r := rules.RuleByName(rule)
	if r == nil {
		return nil, "", fmt.Errorf("pool %q: crush rule %q: %w", c.Name, rule, ErrNotFound)
	}
	if r.Type != uint8(p.Type) {
		return nil, "", fmt.Errorf("pool %q: crush rule %q serves %s pools: %w", c.Name, rule, osdmap.PoolType(r.Type), ErrInvalid)
	}
	p.CrushRule = int(r.ID)
	if p.Size == 0 {
		p.Size = int(cfg.Int("osd_pool_default_size"))
	}
	if p.MinSize == 0 {
		if p.MinSize = int(cfg.Int("osd_pool_default_min_size")); p.MinSize == 0 {
			p.MinSize = p.Size - p.Size/2
		}
	}
	if p.PGNum == 0 {
		p.PGNum = uint32(cfg.Int("osd_pool_default_pg_num"))
	}
	if p.PGPNum == 0 {
		if p.PGPNum = uint32(cfg.Int("osd_pool_default_pgp_num")); p.PGPNum == 0 {
			p.PGPNum = p.PGNum
		}
	}
	if mode := cfg.String("osd_pool_default_pg_autoscale_mode"); mode != "off" {
		p.Autoscale.Mode = mode
	}
	inc.NewPools = []*osdmap.Pool{p}
	if _, err := s.Map.Apply(inc); err != nil { // surface validation as the command's error
		return nil, "", fmt.Errorf("pool %q: %w: %v", c.Name, ErrInvalid, err)
	}
	return inc, fmt.Sprintf("pool '%s' created (id %d)", c.Name, p.ID), nil
}

// PoolDelete removes a pool.
type PoolDelete struct{ Name string }

// Apply implements Command.
func (c PoolDelete) Apply(s *State) (*osdmap.Incremental, string, error) {
	p, err := s.Map.PoolByName(c.Name)
	if err != nil {
		return nil, "", fmt.Errorf("pool %q: %w", c.Name, ErrNotFound)
	}
	inc := s.next()
	inc.OldPools = []int64{p.ID}
	return inc, fmt.Sprintf("pool '%s' removed", c.Name), nil
}

// PoolSet changes size, min_size, pg_num, pgp_num, crush_rule (a rule's
// name or id, of the pool's type: `ceph osd pool set POOL crush_rule
// RULE`, which moves the pool's PGs to where the rule maps them) or
// (erasure-coded pools) allow_ec_overwrites of a pool.
type PoolSet struct {
	Name, Key, Value string
}

// Apply implements Command.
func (c PoolSet) Apply(s *State) (*osdmap.Incremental, string, error) {
	p, err := s.Map.PoolByName(c.Name)
	if err != nil {
		return nil, "", fmt.Errorf("pool %q: %w", c.Name, ErrNotFound)
	}
	if c.Key == "allow_ec_overwrites" {
		if p.Type != osdmap.PoolErasure {
			return nil, "", fmt.Errorf("pool %q: %w: allow_ec_overwrites applies to erasure-coded pools only", c.Name, ErrInvalid)
		}
		on, err := strconv.ParseBool(c.Value)
		if err != nil {
			return nil, "", fmt.Errorf("pool %q allow_ec_overwrites = %q: %w: true or false", c.Name, c.Value, ErrInvalid)
		}
		if !on && p.Flags&osdmap.FlagECOverwrites != 0 {
			// as Ceph: objects may already hold partial overwrites
			return nil, "", fmt.Errorf("pool %q: %w: allow_ec_overwrites cannot be turned off once set", c.Name, ErrInvalid)
		}
		np := *p
		if on {
			np.Flags |= osdmap.FlagECOverwrites
		}
		inc := s.next()
		inc.NewPools = []*osdmap.Pool{&np}
		return inc, fmt.Sprintf("set pool %d allow_ec_overwrites to %t", p.ID, on), nil
	}
	if np, ok, err := setAutoscale(p, c.Key, c.Value); ok {
		if err != nil {
			return nil, "", fmt.Errorf("pool %q %s = %q: %w: %v", c.Name, c.Key, c.Value, ErrInvalid, err)
		}
		inc := s.next()
		inc.NewPools = []*osdmap.Pool{np}
		if _, err := s.Map.Apply(inc); err != nil {
			return nil, "", fmt.Errorf("pool %q %s = %s: %w: %v", c.Name, c.Key, c.Value, ErrInvalid, err)
		}
		return inc, fmt.Sprintf("set pool %d %s to %s", p.ID, c.Key, c.Value), nil
	}
	if c.Key == "crush_rule" {
		r := s.Map.Crush.RuleByName(c.Value)
		if id, err := strconv.Atoi(c.Value); r == nil && err == nil {
			r = s.Map.Crush.Rule(id)
		}
		if r == nil {
			return nil, "", fmt.Errorf("pool %q crush_rule: rule %q: %w", c.Name, c.Value, ErrNotFound)
		}
		if r.Type != uint8(p.Type) {
			return nil, "", fmt.Errorf("pool %q crush_rule: %w: rule %q is of another pool type than the pool", c.Name, ErrInvalid, r.Name)
		}
		np := *p
		np.CrushRule = int(r.ID)
		inc := s.next()
		inc.NewPools = []*osdmap.Pool{&np}
		return inc, fmt.Sprintf("set pool %d crush_rule to %s", p.ID, r.Name), nil
	}
	v, err := strconv.ParseUint(c.Value, 10, 32)
	if err != nil {
		return nil, "", fmt.Errorf("pool %q %s = %q: %w: not a number", c.Name, c.Key, c.Value, ErrInvalid)
	}
	np := *p
	switch c.Key {
	case "size":
		if p.Type == osdmap.PoolErasure && int(v) != p.Size {
			// as Ceph: an erasure-coded pool's size is its profile's k+m
			return nil, "", fmt.Errorf("pool %q: %w: the size of an erasure-coded pool is k+m of its profile (%d) and cannot change", c.Name, ErrInvalid, p.Size)
		}
		np.Size = int(v)
		np.MinSize = min(np.MinSize, np.Size)
	case "min_size":
		np.MinSize = int(v)
	case "pg_num":
		if err := s.checkPGNum(p, uint32(v)); err != nil {
			return nil, "", fmt.Errorf("pool %q pg_num %d: %w", c.Name, v, err)
		}
		n := uint32(v)
		_, _, pending := p.MergePending()
		switch {
		case n == p.PGNumTargetOr() && n == p.PGNum:
			return nil, fmt.Sprintf("pool %d pg_num is already %d", p.ID, v), nil
		case n <= p.PGNum:
			// a merge (or the end of one: n == pg_num stops it): the
			// leader lowers pgp_num first, then merges one PG at a time
			// (stepMerge)
			np.PGNumTarget = n
			if n == p.PGNum {
				np.PGNumTarget = 0
			}
			np.PGPNumTarget = min(p.PGPTarget(), n)
		case pending:
			return nil, "", fmt.Errorf("pool %q pg_num %d: %w: PG %d is merging; set pg_num again once pg_num_pending is gone", c.Name, v, ErrBusy, p.PGNum-1)
		default:
			// the OSDs split each PG locally at the new map; pgp_num then
			// follows in steps (the MONs' tick, stepPGPNum) so that the
			// children move to their own OSDs a few at a time
			np.PGNum, np.PGPNumTarget, np.PGNumTarget = n, n, 0
		}
	case "pg_num_actual":
		// the leader's merge steps (stepMerge), or an operator forcing
		// one, as Ceph's key: pg_num-1 starts the merge of the last PG,
		// pg_num cancels a pending one
		return s.mergeStart(p, uint32(v))
	case "pgp_num", "pgp_num_actual":
		if v < 1 || uint32(v) > p.PGNum {
			return nil, "", fmt.Errorf("pool %q %s %d: %w: want 1 ≤ pgp_num ≤ pg_num (%d)", c.Name, c.Key, v, ErrInvalid, p.PGNum)
		}
		if _, _, pending := p.MergePending(); pending && uint32(v) > p.PGNumPending {
			return nil, "", fmt.Errorf("pool %q %s %d: %w: PG %d is merging: pgp_num stays at most pg_num_pending %d", c.Name, c.Key, v, ErrBusy, p.PGNum-1, p.PGNumPending)
		}
		if c.Key == "pgp_num" {
			if t := p.PGNumTargetOr(); uint32(v) > t {
				return nil, "", fmt.Errorf("pool %q pgp_num %d: %w: above pg_num_target %d, which the pool is merging to", c.Name, v, ErrInvalid, t)
			}
			np.PGPNumTarget = uint32(v)
		} else { // the leader's steps (stepPGPNum), or an operator forcing one, as Ceph's key
			np.PGPNum = uint32(v)
		}
	default:
		return nil, "", fmt.Errorf("pool %q: %w: unknown key %q (size, min_size, pg_num, pg_num_actual, pgp_num, pgp_num_actual, crush_rule, allow_ec_overwrites, %s)", c.Name, ErrInvalid, c.Key, strings.Join(autoscaleKeys, ", "))
	}
	inc := s.next()
	inc.NewPools = []*osdmap.Pool{&np}
	if _, err := s.Map.Apply(inc); err != nil { // surface validation as the command's error
		return nil, "", fmt.Errorf("pool %q %s = %s: %w: %v", c.Name, c.Key, c.Value, ErrInvalid, err)
	}
	return inc, fmt.Sprintf("set pool %d %s to %s", p.ID, c.Key, c.Value), nil
}

// CrushReweight changes a device's CRUSH weight (TiB by convention).
type CrushReweight struct {
	Name   string
	Weight float64
}

// Apply implements Command.
func (c CrushReweight) Apply(s *State) (*osdmap.Incremental, string, error) {
	id, ok := s.Map.Crush.ItemID(c.Name)
	if !ok {
		return nil, "", fmt.Errorf("crush item %q: %w", c.Name, ErrNotFound)
	}
	if c.Weight < 0 || c.Weight > 100 {
		return nil, "", fmt.Errorf("crush weight %g: %w (0..100)", c.Weight, ErrInvalid)
	}
	cm := s.Map.Crush.Clone()
	if err := cm.AdjustItemWeight(id, uint32(float32(c.Weight)*crush.WeightOne)); err != nil {
		return nil, "", err
	}
	inc := s.next()
	inc.NewCrush = cm
	return inc, fmt.Sprintf("reweighted %s to %g", c.Name, c.Weight), nil
}

// CrushAdd places (or re-places) a device in CRUSH at loc with weight
// (TiB), as `ceph osd crush add`.
type CrushAdd struct {
	ID     int32
	Weight float64
	Class  string
	Loc    map[string]string
}

// Apply implements Command.
func (c CrushAdd) Apply(s *State) (*osdmap.Incremental, string, error) {
	if c.ID < 0 || c.ID >= s.Map.MaxOSD() || !s.Map.OSDs[c.ID].Exists {
		return nil, "", fmt.Errorf("osd.%d: %w", c.ID, ErrNotFound)
	}
	if c.Weight < 0 || c.Weight > 100 || len(c.Loc) == 0 {
		return nil, "", fmt.Errorf("crush add osd.%d: %w: weight 0..100 and a location required", c.ID, ErrInvalid)
	}
	cm := s.Map.Crush.Clone()
	if cm.Device(c.ID) != nil {
		if err := cm.RemoveItem(c.ID); err != nil {
			return nil, "", err
		}
	}
	name := fmt.Sprintf("osd.%d", c.ID)
	if err := cm.InsertItem(c.ID, uint32(float32(c.Weight)*crush.WeightOne), name, c.Class, c.Loc); err != nil {
		return nil, "", fmt.Errorf("crush add %s: %w: %v", name, ErrInvalid, err)
	}
	inc := s.next()
	inc.NewCrush = cm
	return inc, fmt.Sprintf("add item id %d name '%s' weight %g to crush map", c.ID, name, c.Weight), nil
}

// CrushMove moves a bucket (host, rack, …) to loc, as `ceph osd crush move`.
type CrushMove struct {
	Name string
	Loc  map[string]string
}

// Apply implements Command.
func (c CrushMove) Apply(s *State) (*osdmap.Incremental, string, error) {
	id, ok := s.Map.Crush.ItemID(c.Name)
	if !ok || id >= 0 {
		return nil, "", fmt.Errorf("crush bucket %q: %w", c.Name, ErrNotFound)
	}
	cm := s.Map.Crush.Clone()
	if err := cm.MoveBucket(id, c.Loc); err != nil {
		return nil, "", fmt.Errorf("crush move %s: %w: %v", c.Name, ErrInvalid, err)
	}
	inc := s.next()
	inc.NewCrush = cm
	return inc, fmt.Sprintf("moved item id %d name '%s' to location %v in crush map", id, c.Name, c.Loc), nil
}

// CrushRuleCreate adds a replicated (firstn) or erasure (indep) rule taking
// Root (of Class, if set) and separating replicas across FailureDomain, as
// `ceph osd crush rule create-replicated`.
type CrushRuleCreate struct {
	Name, Root, FailureDomain, Class string
	Erasure                          bool
}

// Apply implements Command.
func (c CrushRuleCreate) Apply(s *State) (*osdmap.Incremental, string, error) {
	if c.Name == "" {
		return nil, "", fmt.Errorf("crush rule create: %w: empty name", ErrInvalid)
	}
	if s.Map.Crush.RuleByName(c.Name) != nil {
		return nil, "", fmt.Errorf("crush rule %q: %w", c.Name, ErrExists)
	}
	cm := s.Map.Crush.Clone()
	mode, typ := "firstn", uint8(osdmap.PoolReplicated)
	if c.Erasure {
		mode, typ = "indep", uint8(osdmap.PoolErasure)
	}
	id, err := cm.AddSimpleRule(c.Name, c.Root, c.FailureDomain, c.Class, mode, typ)
	if err != nil {
		return nil, "", fmt.Errorf("crush rule create %s: %w: %v", c.Name, ErrInvalid, err)
	}
	inc := s.next()
	inc.NewCrush = cm
	return inc, fmt.Sprintf("created rule %s (id %d)", c.Name, id), nil
}

// ECProfile returns the named erasure-code profile ("default": Ceph's
// k=2 m=2 unless redefined).
func (s *State) ECProfile(name string) (ec.Profile, error) {
	args, ok := s.ECProfiles[name]
	if !ok && name != "default" {
		return ec.Profile{}, fmt.Errorf("erasure-code profile %q: %w", name, ErrNotFound)
	}
	p, err := ec.ParseProfile(name, args)
	if err != nil {
		return p, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return p, nil
}

// ECProfileSet defines an erasure-code profile; an existing one is
// replaced only with Force, and never while a pool uses it.
type ECProfileSet struct {
	Name  string
	Args  []string
	Force bool
}

// Apply implements Command.
func (c ECProfileSet) Apply(s *State) (*osdmap.Incremental, string, error) {
	if c.Name == "" {
		return nil, "", fmt.Errorf("erasure-code-profile set: %w: empty name", ErrInvalid)
	}
	if _, err := ec.ParseProfile(c.Name, c.Args); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, ok := s.ECProfiles[c.Name]; ok && !c.Force {
		return nil, "", fmt.Errorf("erasure-code profile %q: %w (use --force to replace it)", c.Name, ErrExists)
	}
	if pool := s.poolUsing(c.Name); pool != "" {
		return nil, "", fmt.Errorf("erasure-code profile %q: %w: pool %q uses it", c.Name, ErrBusy, pool)
	}
	return nil, "", nil
}

func (c ECProfileSet) install(s *State) {
	if s.ECProfiles == nil {
		s.ECProfiles = map[string][]string{}
	}
	s.ECProfiles[c.Name] = append([]string(nil), c.Args...)
}

// ECProfileRm deletes a profile no pool uses.
type ECProfileRm struct{ Name string }

// Apply implements Command.
func (c ECProfileRm) Apply(s *State) (*osdmap.Incremental, string, error) {
	if _, ok := s.ECProfiles[c.Name]; !ok {
		return nil, "", fmt.Errorf("erasure-code profile %q: %w", c.Name, ErrNotFound)
	}
	if pool := s.poolUsing(c.Name); pool != "" {
		return nil, "", fmt.Errorf("erasure-code profile %q: %w: pool %q uses it", c.Name, ErrBusy, pool)
	}
	return nil, "", nil
}

func (c ECProfileRm) install(s *State) { delete(s.ECProfiles, c.Name) }

func (s *State) poolUsing(profile string) string {
	for _, id := range s.Map.PoolIDs() {
		if p, _ := s.Map.Pool(id); p.Type == osdmap.PoolErasure && p.ECProfile == profile {
			return p.Name
		}
	}
	return ""
}

// AuthAdd stores entity's key (base64 of 32 bytes) and caps (service →
// capability string, package caps), replacing any.
type AuthAdd struct {
	Entity, Key string
	Caps        map[string]string
}

// Apply implements Command.
func (c AuthAdd) Apply(s *State) (*osdmap.Incremental, string, error) {
	typ, id, ok := strings.Cut(c.Entity, ".")
	if !ok || id == "" || (typ != "client" && typ != "osd" && typ != "mon" && typ != "mgr") {
		return nil, "", fmt.Errorf("auth add: %w: entity %q (client.NAME, osd.N, mon.NAME or mgr.NAME)", ErrInvalid, c.Entity)
	}
	if k, err := base64.StdEncoding.DecodeString(c.Key); err != nil || len(k) != 32 {
		return nil, "", fmt.Errorf("auth add %s: %w: key must be 32 base64-encoded bytes", c.Entity, ErrInvalid)
	}
	if _, err := caps.Parse(c.Caps); err != nil {
		return nil, "", fmt.Errorf("auth add %s: %w: %v", c.Entity, ErrInvalid, err)
	}
	return nil, "added key for " + c.Entity, nil
}

func (c AuthAdd) install(s *State) {
	if s.Auth == nil {
		s.Auth = map[string]monc.AuthEntry{}
	}
	s.Auth[c.Entity] = monc.AuthEntry{Key: c.Key, Caps: maps.Clone(nonNil(c.Caps))}
}

// AuthCaps replaces entity's caps with Caps (a service left out loses its
// caps), as Ceph's `auth caps`.
type AuthCaps struct {
	Entity string
	Caps   map[string]string
}

// Apply implements Command.
func (c AuthCaps) Apply(s *State) (*osdmap.Incremental, string, error) {
	if _, ok := s.Auth[c.Entity]; !ok {
		return nil, "", fmt.Errorf("auth caps %s: %w (the key database has no such entity)", c.Entity, ErrNotFound)
	}
	if _, err := caps.Parse(c.Caps); err != nil {
		return nil, "", fmt.Errorf("auth caps %s: %w: %v", c.Entity, ErrInvalid, err)
	}
	return nil, "updated caps for " + c.Entity, nil
}

func (c AuthCaps) install(s *State) {
	e := s.Auth[c.Entity]
	e.Caps = maps.Clone(nonNil(c.Caps))
	s.Auth[c.Entity] = e
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// AuthRm deletes entity's key: its connections are refused from then on.
type AuthRm struct{ Entity string }

// Apply implements Command.
func (c AuthRm) Apply(s *State) (*osdmap.Incremental, string, error) {
	if _, ok := s.Auth[c.Entity]; !ok {
		return nil, "", fmt.Errorf("auth rm %s: %w", c.Entity, ErrNotFound)
	}
	return nil, "removed key for " + c.Entity, nil
}

func (c AuthRm) install(s *State) { delete(s.Auth, c.Entity) }

// configChange is a command that changes the configuration database.
type configChange interface{ install(*State) }

// ConfigSet sets WHO's option (checked against the option table).
type ConfigSet struct{ Who, Option, Value string }

// Apply implements Command.
func (c ConfigSet) Apply(s *State) (*osdmap.Incremental, string, error) {
	if err := checkWho(c.Who); err != nil {
		return nil, "", err
	}
	o, ok := config.Lookup(c.Option)
	if !ok {
		return nil, "", fmt.Errorf("config set: %w %q", config.ErrUnknown, c.Option)
	}
	if err := o.Check(c.Value); err != nil {
		return nil, "", fmt.Errorf("config set %s: %w: %v", c.Who, ErrInvalid, err)
	}
	return nil, "", nil
}

func (c ConfigSet) install(s *State) {
	o, _ := config.Lookup(c.Option)
	if s.Config[c.Who] == nil {
		s.Config[c.Who] = map[string]string{}
	}
	s.Config[c.Who][o.Name] = c.Value
}

// ConfigRm removes WHO's setting of an option.
type ConfigRm struct{ Who, Option string }

// Apply implements Command.
func (c ConfigRm) Apply(s *State) (*osdmap.Incremental, string, error) {
	if err := checkWho(c.Who); err != nil {
		return nil, "", err
	}
	return nil, "", nil
}

func (c ConfigRm) install(s *State) {
	delete(s.Config[c.Who], config.Normalize(c.Option))
	if len(s.Config[c.Who]) == 0 {
		delete(s.Config, c.Who)
	}
}

func checkWho(who string) error {
	if err := config.CheckSection(who); err != nil {
		return fmt.Errorf("config: %w: %v", ErrInvalid, err)
	}
	return nil
}

// ConfigFor is the configuration an entity sees: the database's settings
// for global, its type and itself over the table's defaults.
func (s *State) ConfigFor(entity string) *config.Config {
	return config.NewFile(s.Config).For(entity)
}
