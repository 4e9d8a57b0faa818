package mon

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/shoal-project/shoal/caps"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// keepIncrementals is how many recent OSD map incrementals a MON keeps to
// bring subscribers up to date; one further behind gets the full map.
const keepIncrementals = 500

// fsm is the raft state machine: the State, changed only by committed
// commands, plus the recent incrementals for map subscribers.
type fsm struct {
	mu      sync.RWMutex
	st      *State
	incs    map[osdmap.Epoch][]byte
	changed chan struct{} // closed (and replaced) on every new epoch, and MON map
	// mons is the MON map: raft's last committed configuration, its log
	// index the epoch (StoreConfiguration), kept in snapshots.
	mons monc.MonMap
}

func newFSM(st *State) *fsm {
	return &fsm{st: st, incs: map[osdmap.Epoch][]byte{}, changed: make(chan struct{})}
}

// applyResult is what raft's Apply future returns for a command.
type applyResult struct {
	msg   string
	epoch uint32 // the map's epoch after the command
	err   error
}

// Apply implements raft.FSM.
func (f *fsm) Apply(l *raft.Log) any {
	var c monc.Command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return applyResult{err: fmt.Errorf("%w: bad command: %v", ErrInvalid, err)}
	}
	cmd, err := Translate(c)
	if err != nil {
		return applyResult{err: err}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	inc, msg, err := f.st.Commit(cmd)
	if err != nil {
		return applyResult{err: err}
	}
	if inc != nil {
		f.incs[inc.Epoch] = inc.Encode()
		delete(f.incs, inc.Epoch-keepIncrementals)
	}
	close(f.changed)
	f.changed = make(chan struct{})
	return applyResult{msg: msg, epoch: uint32(f.st.Map.Epoch)}
}

// StoreConfiguration implements raft.ConfigurationStore: a committed
// configuration is the MON map, its log index the map's epoch.
func (f *fsm) StoreConfiguration(index uint64, cfg raft.Configuration) {
	mm := monc.MonMap{Epoch: index}
	for _, s := range cfg.Servers {
		mm.Mons = append(mm.Mons, monc.MonInfo{Addr: string(s.ID), Voter: s.Suffrage == raft.Voter})
	}
	slices.SortFunc(mm.Mons, func(a, b monc.MonInfo) int { return strings.Compare(a.Addr, b.Addr) })
	f.mu.Lock()
	f.mons = mm
	close(f.changed) // map subscribers carry it to clients
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// monMap is the MON map.
func (f *fsm) monMap() monc.MonMap {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.mons
}

// history returns PG pg's recorded intervals.
func (f *fsm) history(pg osdmap.PGID) []monc.PGInterval {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.History(pg)
}

// movingPGs is State.MovingPGs.
func (f *fsm) movingPGs() (moving, total int, some []string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.MovingPGs()
}

// balancerView returns the current map and why the automatic balancer
// should wait ("" when it may go on): State.BalancerReady.
func (f *fsm) balancerView() (*osdmap.Map, string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.Map, f.st.BalancerReady()
}

// view returns the current map and the channel that closes at the next
// change.
func (f *fsm) view() (*osdmap.Map, chan struct{}) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.Map, f.changed
}

// configDB returns a copy of the configuration database.
func (f *fsm) configDB() map[string]map[string]string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := map[string]map[string]string{}
	for who, kv := range f.st.Config {
		out[who] = map[string]string{}
		for k, v := range kv {
			out[who][k] = v
		}
	}
	return out
}

// authKey returns entity's key from the database.
func (f *fsm) authKey(entity string) ([]byte, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, ok := f.st.Auth[entity]
	if !ok {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(e.Key)
	return b, err == nil
}

// ecProfile returns a profile's arguments, sorted, with the defaults filled in.
func (f *fsm) ecProfile(name string) ([]string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	p, err := f.st.ECProfile(name)
	if err != nil {
		return nil, err
	}
	return p.Args(), nil
}

// ecProfiles lists the profiles' names ("default" included).
func (f *fsm) ecProfiles() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	names := []string{"default"}
	for n := range f.st.ECProfiles {
		if n != "default" {
			names = append(names, n)
		}
	}
	sort.Strings(names[1:])
	return names
}

// authEntry returns entity's key database entry.
func (f *fsm) authEntry(entity string) (monc.AuthEntry, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e, ok := f.st.Auth[entity]
	return e, ok
}

// authDB returns a copy of the key database (entries' caps are never
// changed in place, so they are shared).
func (f *fsm) authDB() map[string]monc.AuthEntry {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return maps.Clone(f.st.Auth)
}

// mapReply answers a subscriber that holds epoch have: the incrementals
// after it, or the full map, and the MON map.
func (f *fsm) mapReply(have osdmap.Epoch) monc.MapReply {
	f.mu.RLock()
	defer f.mu.RUnlock()
	m := f.st.Map
	r := monc.MapReply{Mons: f.mons}
	if have > 0 && have <= m.Epoch {
		for e := have + 1; e <= m.Epoch; e++ {
			b, ok := f.incs[e]
			if !ok {
				return monc.MapReply{Full: m.Encode(), Mons: f.mons}
			}
			r.Incs = append(r.Incs, b)
		}
		return r
	}
	r.Full = m.Encode()
	return r
}

// Snapshot implements raft.FSM: the map and the configuration database.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	e := wire.NewEncoder(nil)
	e.Blob(f.st.Map.Encode())
	cfg, _ := json.Marshal(f.st.Config)
	e.Blob(cfg)
	auth, _ := json.Marshal(f.st.Auth)
	e.Blob(auth)
	prof, _ := json.Marshal(f.st.ECProfiles)
	e.Blob(prof)
	hist := map[string][]monc.PGInterval{}
	for pg, h := range f.st.PGHistory {
		hist[pg.String()] = h
	}
	hb, _ := json.Marshal(hist)
	e.Blob(hb)
	mb, _ := json.Marshal(f.mons)
	e.Blob(mb)
	return snapshot(e.Bytes()), nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	d := wire.NewDecoder(b)
	mb, cb := d.Blob(), d.Blob()
	var ab, pb []byte
	if d.Remaining() > 0 {
		ab = d.Blob()
	}
	if d.Remaining() > 0 {
		pb = d.Blob()
	}
	var hb, monb []byte
	if d.Remaining() > 0 {
		hb = d.Blob()
	}
	if d.Remaining() > 0 {
		monb = d.Blob()
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("mon: snapshot: %w", err)
	}
	m, err := osdmap.Decode(mb)
	if err != nil {
		return fmt.Errorf("mon: snapshot: %w", err)
	}
	st := &State{Map: m, Config: map[string]map[string]string{}, Auth: map[string]monc.AuthEntry{}, ECProfiles: map[string][]string{}}
	if err := json.Unmarshal(cb, &st.Config); err != nil {
		return fmt.Errorf("mon: snapshot config: %w", err)
	}
	if ab != nil {
		if err := json.Unmarshal(ab, &st.Auth); err != nil {
			return fmt.Errorf("mon: snapshot auth: %w", err)
		}
		for n, e := range st.Auth {
			if e.Caps == nil { // recorded before caps: what its keyring entry would get
				e.Caps = nonNil(caps.Default(n))
				st.Auth[n] = e
			}
		}
	}
	if pb != nil {
		if err := json.Unmarshal(pb, &st.ECProfiles); err != nil {
			return fmt.Errorf("mon: snapshot erasure-code profiles: %w", err)
		}
	}
	if hb != nil {
		var hist map[string][]monc.PGInterval
		if err := json.Unmarshal(hb, &hist); err != nil {
			return fmt.Errorf("mon: snapshot pg history: %w", err)
		}
		st.PGHistory = map[osdmap.PGID][]monc.PGInterval{}
		for k, h := range hist {
			pg, err := osdmap.ParsePGID(k)
			if err != nil {
				return fmt.Errorf("mon: snapshot pg history: %w", err)
			}
			for i := range h {
				h[i].PG = pg
			}
			st.PGHistory[pg] = h
		}
	}
	var mons monc.MonMap
	if monb != nil {
		if err := json.Unmarshal(monb, &mons); err != nil {
			return fmt.Errorf("mon: snapshot mon map: %w", err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st, f.incs = st, map[osdmap.Epoch][]byte{}
	if monb != nil { // a snapshot from before the MON map keeps what the log gave
		f.mons = mons
	}
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}

// Translate turns a command from the wire into the State command it names.
// Prefixes and arguments follow Ceph's CLI where there is one:
//
//	osd boot id host addr [cluster_addr] size class
//	osd down|out|in ids (comma-separated)
//	osd rm id                               osd crush add id weight loc [class]
//	osd pg-temp pgs ("PGID=OSD,OSD PGID=": an empty list clears)
//	pg history entries ("PGID@EPOCH:OSD,OSD ...", in order)
//	pg ready-to-merge pool source epoch source_version target_version ready (versions "EPOCH'SEQ")
//	osd crush move name loc                 osd crush reweight name weight
//	osd crush rule create-replicated name root type [class]
//	pool create name [type size min_size pg_num pgp_num rule erasure_code_profile]
//	pool rm name                            pool set name key value
//	osd pool mksnap pool snap [stamp]       osd pool rmsnap pool snap
//	osd pool selfmanaged-snap create pool   (message: the new snap id)
//	osd pool selfmanaged-snap rm pool snapid
//	osd blocklist add entry [until|expire]  osd blocklist rm entry
//	config set who option value             config rm who option
//	osd erasure-code-profile set name args [force]   osd erasure-code-profile rm name
//	osd pg-upmap-items items (monc.FormatUpmapItems; an empty list removes a PG's)
//
// loc is "type=name" pairs separated by spaces, e.g. "host=a root=default".
func Translate(c monc.Command) (Command, error) {
	a := c.Args
	num := func(k string) (int64, error) {
		if a[k] == "" {
			return 0, nil
		}
		v, err := strconv.ParseInt(a[k], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w: %s=%q is not a number", c.Prefix, ErrInvalid, k, a[k])
		}
		return v, nil
	}
	var errs []error
	n := func(k string) int64 {
		v, err := num(k)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	f := func(k string) float64 {
		v, err := strconv.ParseFloat(a[k], 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: %s=%q is not a number", c.Prefix, ErrInvalid, k, a[k]))
		}
		return v
	}
	var cmd Command
	switch c.Prefix {
	case "osd boot":
		cmd = OSDBoot{ID: int32(n("id")), Host: a["host"], Addr: a["addr"], ClusterAddr: a["cluster_addr"], SizeBytes: uint64(n("size")), Class: a["class"]}
	case "osd lost":
		if a["sure"] != "--yes-i-really-mean-it" {
			return nil, fmt.Errorf("osd lost: %w: it gives up the data only that OSD holds; add --yes-i-really-mean-it", ErrInvalid)
		}
		cmd = OSDLost{ID: int32(n("id"))}
	case "osd fullness":
		cmd = OSDFullness{ID: int32(n("id")), Addr: a["addr"], Level: osdmap.Fullness(n("level"))}
	case "osd set", "osd unset":
		fl, err := osdmap.ParseFlag(a["key"])
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", c.Prefix, ErrInvalid, err)
		}
		cmd = OSDFlag{Flags: fl, On: c.Prefix == "osd set"}
	case "osd down", "osd out", "osd in":
		ids, err := monc.ParseOSDIDs(a["ids"])
		if err == nil && len(ids) == 0 {
			err = errors.New("no osd ids")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", c.Prefix, ErrInvalid, err)
		}
		f, t := false, true
		switch c.Prefix {
		case "osd down":
			var addrs []string
			if a["addrs"] != "" {
				addrs = strings.Split(a["addrs"], ",")
			}
			cmd = OSDMark{IDs: ids, Up: &f, Addrs: addrs}
		case "osd out":
			cmd = OSDMark{IDs: ids, In: &f, Auto: a["auto"] == "true"}
		default:
			cmd = OSDMark{IDs: ids, In: &t}
		}
	case "osd rm":
		cmd = OSDRemove{ID: int32(n("id"))}
	case "pg history":
		ivs, err := monc.ParsePGHistoryArgs(a)
		if err != nil {
			return nil, fmt.Errorf("pg history: %w: %v", ErrInvalid, err)
		}
		cmd = PGHistoryUpdate{Entries: ivs}
	case "pg ready-to-merge":
		sv, err1 := monc.ParseVersion(a["source_version"])
		tv, err2 := monc.ParseVersion(a["target_version"])
		ready, err3 := strconv.ParseBool(a["ready"])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("pg ready-to-merge: %w: %v", ErrInvalid, err)
		}
		cmd = MergeReady{Pool: n("pool"), Source: uint32(n("source")), Epoch: osdmap.Epoch(n("epoch")), SourceVersion: sv, TargetVersion: tv, Ready: ready}
	case "osd pg-temp":
		sets, err := monc.ParsePGTemps(a["pgs"])
		if err != nil {
			return nil, fmt.Errorf("osd pg-temp: %w: %v", ErrInvalid, err)
		}
		cmd = PGTemp{Sets: sets}
	case "osd pg-upmap-items":
		items, err := monc.ParseUpmapItems(a["items"])
		if err != nil {
			return nil, fmt.Errorf("osd pg-upmap-items: %w: %v", ErrInvalid, err)
		}
		cmd = PGUpmapItems{Items: items}
	case "osd crush add":
		loc, err := ParseLoc(a["loc"])
		if err != nil {
			return nil, err
		}
		cmd = CrushAdd{ID: int32(n("id")), Weight: f("weight"), Class: a["class"], Loc: loc}
	case "osd crush move":
		loc, err := ParseLoc(a["loc"])
		if err != nil {
			return nil, err
		}
		cmd = CrushMove{Name: a["name"], Loc: loc}
	case "osd crush reweight":
		cmd = CrushReweight{Name: a["name"], Weight: f("weight")}
	case "osd crush rule create-replicated":
		cmd = CrushRuleCreate{Name: a["name"], Root: a["root"], FailureDomain: a["type"], Class: a["class"]}
	case "pool create":
		pc := PoolCreate{Name: a["name"], Size: int(n("size")), MinSize: int(n("min_size")), PGNum: uint32(n("pg_num")),
			PGPNum: uint32(n("pgp_num")), Rule: a["rule"], ECProfile: a["erasure_code_profile"]}
		switch a["type"] {
		case "", "replicated":
		case "erasure":
			pc.Erasure = true
		default:
			return nil, fmt.Errorf("pool create: %w: type %q (replicated or erasure)", ErrInvalid, a["type"])
		}
		cmd = pc
	case "pool rm":
		cmd = PoolDelete{Name: a["name"]}
	case "pool set":
		cmd = PoolSet{Name: a["name"], Key: a["key"], Value: a["value"]}
	case "osd pool mksnap":
		cmd = PoolSnapCreate{Pool: a["pool"], Snap: a["snap"], Stamp: n("stamp")}
	case "osd pool rmsnap":
		cmd = PoolSnapRemove{Pool: a["pool"], Snap: a["snap"]}
	case "osd pool selfmanaged-snap create":
		cmd = SelfManagedSnapCreate{Pool: a["pool"]}
	case "osd pool selfmanaged-snap rm":
		cmd = SelfManagedSnapRemove{Pool: a["pool"], ID: uint64(n("snapid"))}
	case "osd blocklist add":
		cmd = BlocklistAdd{Entry: a["entry"], Until: n("until")}
	case "osd blocklist rm":
		cmd = BlocklistRm{Entry: a["entry"]}
	case "config set":
		cmd = ConfigSet{Who: a["who"], Option: a["option"], Value: a["value"]}
	case "config rm":
		cmd = ConfigRm{Who: a["who"], Option: a["option"]}
	case "osd erasure-code-profile set":
		cmd = ECProfileSet{Name: a["name"], Args: strings.Fields(a["args"]), Force: a["force"] == "true"}
	case "osd erasure-code-profile rm":
		cmd = ECProfileRm{Name: a["name"]}
	case "auth add":
		cmd = AuthAdd{Entity: a["entity"], Key: a["key"], Caps: monc.ArgsCaps(a)}
	case "auth caps":
		cmd = AuthCaps{Entity: a["entity"], Caps: monc.ArgsCaps(a)}
	case "auth rm":
		cmd = AuthRm{Entity: a["entity"]}
	default:
		return nil, fmt.Errorf("%w: unknown command %q", ErrInvalid, c.Prefix)
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return cmd, nil
}

// ParseLoc reads a CRUSH location, "host=a rack=r1 root=default".
func ParseLoc(s string) (map[string]string, error) {
	loc := map[string]string{}
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%w: crush location %q: want type=name pairs", ErrInvalid, s)
		}
		loc[k] = v
	}
	if len(loc) == 0 {
		return nil, fmt.Errorf("%w: empty crush location", ErrInvalid)
	}
	return loc, nil
}

// FormatLoc is ParseLoc's inverse, in a stable order.
func FormatLoc(loc map[string]string) string {
	var parts []string
	for k, v := range loc {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
