package osd

// Scrub: the primary compares every member's copy of each object.
//
// A light scrub compares the object lists, sizes, versions, attributes and
// omaps (by crc32c digests) of the acting set; a deep scrub also reads
// every byte, which the object store checks against its per-block
// checksums, and compares the data digests of replicas (erasure-coded
// shards hold different data: each is checked by its own store's
// checksums, and the shards must agree on everything else). The PG is
// scrubbed in chunks of osd_scrub_chunk_max objects, in name order; while
// a chunk is compared, writes to its objects wait (those in flight finish
// first), so every member holds the same writes (Ceph: doc/dev/
// osd_internals/scrub.rst, "chunky scrub").
//
// The copy most members agree on is authoritative (ties: the primary's,
// then the lowest shard); copies that differ, are missing or fail to read
// are reported (`shoal pg list-inconsistent`) and the PG is marked
// inconsistent until a repair — a deep scrub that also rewrites the bad
// copies from the authoritative one (erasure-coded: rebuilds the shard by
// decoding) — fixes them. Scrubs run on a schedule (osd_scrub_min_interval,
// osd_deep_scrub_interval; within osd_scrub_begin_hour…end_hour and below
// osd_scrub_load_threshold unless osd_scrub_max_interval passed; not under
// noscrub / nodeep-scrub) or when asked (`shoal pg scrub|deep-scrub|repair`,
// which ignore the schedule and the flags, as Ceph's must_scrub).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/internal/keylock"
	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Scrub kinds, in increasing strength: a request for a stronger one
// replaces a weaker one.
const (
	scrubNone = iota
	scrubLight
	scrubDeep
	scrubRepair // a deep scrub that fixes what it finds
)

// pgScrub is a PG's scrub state on its primary (guarded by pg.mu).
type pgScrub struct {
	requested int       // asked for by an operator, not yet run
	running   int       // the kind running now
	last      time.Time // last light (or deep) scrub finished
	lastDeep  time.Time
	errors    int // inconsistent objects the last scrub left unrepaired
	found     osdop.Inconsistents
	busyUntil time.Time // a member had no slot: not before then

	// the chunk being compared: writes to objects in (from, to] wait
	// until blocked is closed; to "" means no upper bound
	from, to string
	blocked  chan struct{}

	// the running scrub's start and the objects it has compared so far
	// (its progress in the PG's stats)
	start    time.Time
	compared int64
}

// scrubObj is one object in a member's scrub map.
type scrubObj struct {
	OID        string
	Size       uint64
	AttrDigest uint32 // crc32c of the sorted attributes (version included)
	OmapDigest uint32
	DataDigest uint32 // deep scrubs only
	Err        string // the read error, if any
}

func encodeScrubMap(objs []scrubObj) []byte {
	e := wireEncoder(64 * len(objs))
	e.U32(uint32(len(objs)))
	for _, o := range objs {
		e.String(o.OID)
		e.U64(o.Size)
		e.U32(o.AttrDigest)
		e.U32(o.OmapDigest)
		e.U32(o.DataDigest)
		e.String(o.Err)
	}
	return e.Bytes()
}

func decodeScrubMap(b []byte) ([]scrubObj, error) {
	d := wire.NewDecoder(b)
	n := d.Count(22)
	objs := make([]scrubObj, 0, n)
	for range n {
		objs = append(objs, scrubObj{OID: d.String(), Size: d.U64(), AttrDigest: d.U32(), OmapDigest: d.U32(), DataDigest: d.U32(), Err: d.String()})
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("scrub map: %w", err)
	}
	return objs, nil
}

// inChunk reports whether oid is in (from, to]; to "" has no bound.
func inChunk(oid, from, to string) bool {
	return oid > from && (to == "" || oid <= to)
}

// scrubMapLocal describes this OSD's copies of the objects in (from, to].
func (pg *PG) scrubMapLocal(from, to string, deep bool) ([]scrubObj, error) {
	s := pg.osd.store
	var objs []scrubObj
	after := from
	for {
		names, err := s.List(pg.coll, after, 1024)
		if err != nil {
			return nil, storeErr(err)
		}
		for _, n := range names {
			if to != "" && n > to {
				return objs, nil
			}
			if !peering.IsInternal(n) {
				objs = append(objs, pg.scrubObject(n, deep))
				objs = append(objs, pg.scrubClones(n, deep)...)
			}
		}
		if len(names) < 1024 {
			return objs, nil
		}
		after = names[len(names)-1]
	}
}

// scrubClones describes the clones head names (its snapshots): they are
// scrubbed with their head, in its chunk, so a write that makes a clone
// waits for the chunk like any write to the head. A clone a copy lacks
// is missing there; repair rewrites the head with its clones.
func (pg *PG) scrubClones(head string, deep bool) []scrubObj {
	ss, err := opexec.ReadSnapSet(pg.osd.store, pg.coll, head)
	if err != nil || ss == nil {
		return nil // none, or unreadable: the head's own entry shows that
	}
	objs := make([]scrubObj, 0, len(ss.Clones))
	for _, c := range ss.Clones {
		coid := opexec.CloneOID(head, c.ID)
		if _, err := pg.osd.store.Stat(pg.coll, coid); errors.Is(err, objectstore.ErrNotFound) {
			continue // missing here
		}
		objs = append(objs, pg.scrubObject(coid, deep))
	}
	return objs
}

// scrubObject describes one local object; read failures are in Err.
func (pg *PG) scrubObject(oid string, deep bool) scrubObj {
	s := pg.osd.store
	o := scrubObj{OID: oid}
	fail := func(what string, err error) scrubObj {
		o.Err = fmt.Sprintf("%s: %v", what, err)
		return o
	}
	st, err := s.Stat(pg.coll, oid)
	if err != nil {
		return fail("stat", err)
	}
	o.Size = st.Size
	attrs, err := s.Attrs(pg.coll, oid)
	if err != nil {
		return fail("attributes", err)
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := crc32c.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(attrs[k]))
		h.Write(attrs[k])
	}
	o.AttrDigest = h.Sum32()
	h.Reset()
	after := ""
	for {
		kvs, more, err := s.OmapList(pg.coll, oid, after, "", 4096)
		if err != nil {
			return fail("omap", err)
		}
		for _, kv := range kvs {
			fmt.Fprintf(h, "%d:%s%d:", len(kv.Key), kv.Key, len(kv.Value))
			h.Write(kv.Value)
		}
		if !more || len(kvs) == 0 {
			break
		}
		after = kvs[len(kvs)-1].Key
	}
	o.OmapDigest = h.Sum32()
	if deep { // from the device, not a cache of what was read before
		data, err := s.ReadDevice(pg.coll, oid, 0, 0)
		if err != nil {
			return fail("read", err)
		}
		o.DataDigest = crc32c.Checksum(data)
	}
	return o
}

// handleScrubMap answers the primary's request for this member's scrub
// map of a chunk: OID is the chunk's start (exclusive), Names[0] its end,
// Off 1 for a deep scrub.
func (pg *PG) handleScrubMap(pm *peerMsg) ([]byte, error) {
	if err := pg.checkMember(pm); err != nil {
		return nil, err
	}
	if len(pm.Names) != 1 {
		return nil, fmt.Errorf("%w: scrub map request without a chunk end", osdop.ErrInvalid)
	}
	pg.osd.scrubSlots.touch(pg.id, pg.osd.clock.Now())
	objs, err := pg.scrubMapLocal(pm.OID, pm.Names[0], pm.Off == 1)
	if err != nil {
		return nil, err
	}
	var bytes uint64
	if pm.Off == 1 {
		for _, o := range objs {
			bytes += o.Size
		}
	}
	pg.osd.charge(mclock.BestEffort, max(len(objs), 1), bytes)
	return encodeScrubMap(objs), nil
}

// writeLock takes a write's object lock in mode m (keylock.Write or
// Excl), after any scrub of a chunk holding the object.
func (pg *PG) writeLock(ctx context.Context, oid string, m keylock.Mode) (func(), error) {
	for {
		unlock := pg.objLocks.Lock(oid, m)
		pg.mu.Lock()
		ch := pg.scrub.blocked
		if ch != nil && !inChunk(oid, pg.scrub.from, pg.scrub.to) {
			ch = nil
		}
		pg.mu.Unlock()
		if ch == nil {
			return unlock, nil
		}
		unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// scrubBusyBackoff is how long a PG whose members had no scrub slot waits
// before it asks again.
const scrubBusyBackoff = 300 * time.Millisecond

// errScrubAborted ends a scrub whose PG changed interval or state.
var errScrubAborted = errors.New("scrub aborted: the pg changed")

// blockChunk makes writes to objects in (from, to] wait and waits for
// those in flight (they hold their object locks until every member has
// committed). pg.mu is not held.
func (pg *PG) blockChunk(iv uint64, from, to string) error {
	pg.mu.Lock()
	if pg.ps.Interval.ID != iv || !pg.isClean() {
		pg.mu.Unlock()
		return errScrubAborted
	}
	if pg.scrub.blocked != nil {
		close(pg.scrub.blocked) // waiters re-check against the new bounds
	}
	pg.scrub.from, pg.scrub.to, pg.scrub.blocked = from, to, make(chan struct{})
	var inflight []string
	pg.objLocks.Each(func(oid string) {
		if inChunk(oid, from, to) {
			inflight = append(inflight, oid)
		}
	})
	pg.mu.Unlock()
	for _, oid := range inflight {
		pg.lockObject(oid)() // one object per write: no lock order to keep
	}
	return nil
}

func (pg *PG) unblockChunk() {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.scrub.blocked != nil {
		close(pg.scrub.blocked)
		pg.scrub.blocked = nil
	}
}

// runScrub scrubs the PG as its primary (kind scrubLight, scrubDeep or
// scrubRepair) and records what it found.
func (pg *PG) runScrub(ctx context.Context, kind int) error {
	d := pg.osd
	pg.mu.Lock()
	if pg.ps.Interval.Primary != d.id || !pg.isClean() {
		st := pg.stateName()
		pg.mu.Unlock()
		return fmt.Errorf("%w: pg %s is %s (scrubs need active+clean)", errScrubAborted, pg.id, st)
	}
	iv, acting, addrs, isEC, pool := pg.ps.Interval.ID, slices.Clone(pg.ps.Interval.Acting), slices.Clone(pg.ps.Interval.Addrs), pg.ps.Interval.EC, pg.pool
	pg.mu.Unlock()
	release, err := pg.reserveScrub(ctx, iv, acting, addrs)
	if err != nil {
		return err
	}
	defer release()
	pg.mu.Lock()
	pg.scrub.running, pg.scrub.start, pg.scrub.compared = kind, d.clock.Now(), 0
	pg.mu.Unlock()
	defer func() {
		pg.unblockChunk()
		pg.mu.Lock()
		pg.scrub.running = scrubNone
		pg.mu.Unlock()
	}()
	deep := kind >= scrubDeep
	start := time.Now()
	m, _ := d.curMap()
	found := osdop.Inconsistents{Epoch: uint32(m.Epoch), Inconsistents: []osdop.Inconsistent{}}
	unrepaired, objects := 0, 0
	chunk := int(d.conf().Int("osd_scrub_chunk_max"))
	from := ""
	for {
		if err := pg.blockChunk(iv, from, ""); err != nil {
			return err
		}
		names, err := d.store.List(pg.coll, from, chunk)
		if err != nil {
			return storeErr(err)
		}
		to := ""
		if len(names) == chunk {
			to = names[len(names)-1]
			if err := pg.blockChunk(iv, from, to); err != nil { // writes past the chunk go on
				return err
			}
		}
		smaps := make([][]scrubObj, len(acting))
		for i, o := range acting {
			switch {
			case o == osdmap.NoOSD:
				continue
			case o == d.id:
				smaps[i], err = pg.scrubMapLocal(from, to, deep)
			default:
				var b []byte
				deepFlag := uint64(0)
				if deep {
					deepFlag = 1
				}
				b, err = d.call(ctx, o, addrs[i], msgScrubMap, (&peerMsg{PG: pg.id, Interval: iv, OID: from, Names: []string{to}, Off: deepFlag}).encode())
				if err == nil {
					smaps[i], err = decodeScrubMap(b)
				}
			}
			if err != nil {
				return fmt.Errorf("pg %s: scrub map of osd.%d: %w", pg.id, o, err)
			}
		}
		incs, n := compareScrubMaps(acting, slices.Index(acting, d.id), smaps, deep && !isEC)
		if deep && isEC {
			parity, err := pg.checkParity(ctx, iv, pool, acting, addrs, smaps[slices.Index(acting, d.id)], incs)
			if err != nil {
				return err
			}
			incs = append(incs, parity...)
		}
		objects += n
		pg.mu.Lock()
		pg.scrub.compared = int64(objects)
		pg.mu.Unlock()
		for _, inc := range incs {
			if kind == scrubRepair {
				if err := pg.repairObject(ctx, iv, acting, addrs, pool, inc); err != nil {
					d.log.Warn("repair failed", "pg", pg.id, "object", inc.Object, "err", err)
					unrepaired++
				}
			} else {
				unrepaired++
			}
		}
		found.Inconsistents = append(found.Inconsistents, incs...)
		pg.unblockChunk()
		// the next chunk waits for scrub's share of the device, which this
		// one used: its objects read here (and their bytes, deep)
		var bytes uint64
		if self := slices.Index(acting, d.id); deep && self >= 0 {
			for _, o := range smaps[self] {
				bytes += o.Size
			}
		}
		if err := d.throttle(ctx, mclock.BestEffort, max(n, 1), bytes); err != nil {
			return err
		}
		if to == "" {
			break
		}
		from = to
		if s := d.conf().Seconds("osd_scrub_sleep"); s > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(s * float64(time.Second))):
			}
		}
	}
	now := pg.osd.clock.Now()
	autoRepair := kind == scrubDeep && unrepaired > 0 && d.conf().Bool("osd_scrub_auto_repair") && unrepaired <= int(d.conf().Int("osd_scrub_auto_repair_num_errors"))
	pg.mu.Lock()
	pg.scrub.last = now
	if deep {
		pg.scrub.lastDeep = now
	}
	pg.scrub.errors, pg.scrub.found = unrepaired, found
	// with the stamps: whoever sees them sees this scrub done, and a
	// repair to follow already running
	pg.scrub.running = scrubNone
	if autoRepair {
		pg.scrub.running = scrubRepair
	}
	stamps := pg.scrubStamps()
	pg.mu.Unlock()
	report, err := json.Marshal(found)
	if err != nil {
		return err
	}
	var t objectstore.Transaction
	t.SetAttr(metaColl, metaOID(pg.coll), "scrub", stamps)
	t.SetAttr(metaColl, metaOID(pg.coll), "scrub_found", report) // list-inconsistent after a restart
	if err := d.store.Apply(&t); err != nil {
		return storeErr(err)
	}
	what := map[int]string{scrubLight: "scrub", scrubDeep: "deep-scrub", scrubRepair: "repair"}[kind]
	lvl := d.log.Info
	if len(found.Inconsistents) > 0 {
		lvl = d.log.Error
	}
	lvl(what+" done", "pg", pg.id, "objects", objects, "inconsistent", len(found.Inconsistents), "unrepaired", unrepaired, "took", time.Since(start).Round(time.Millisecond))
	if autoRepair {
		d.log.Warn("auto-repairing", "pg", pg.id, "errors", unrepaired)
		return pg.runScrub(ctx, scrubRepair)
	}
	return nil
}

// scrubStamps encodes the scrub stamps and error count (pg.mu held).
func (pg *PG) scrubStamps() []byte {
	e := wireEncoder(20)
	e.I64(pg.scrub.last.UnixNano())
	e.I64(pg.scrub.lastDeep.UnixNano())
	e.U32(uint32(pg.scrub.errors))
	return e.Bytes()
}

// loadScrubStamps reads what scrubStamps wrote, and the last scrub's
// findings (for list-inconsistent); a PG never scrubbed counts from now
// (Ceph stamps a new PG with its creation time).
func (pg *PG) loadScrubStamps() {
	now := pg.osd.clock.Now()
	pg.scrub.last, pg.scrub.lastDeep = now, now
	b, err := pg.osd.store.GetAttr(metaColl, metaOID(pg.coll), "scrub")
	if err != nil {
		return
	}
	d := wire.NewDecoder(b)
	last, deep, errs := d.I64(), d.I64(), d.U32()
	if d.Err() == nil {
		pg.scrub.last, pg.scrub.lastDeep, pg.scrub.errors = time.Unix(0, last), time.Unix(0, deep), int(errs)
	}
	if b, err := pg.osd.store.GetAttr(metaColl, metaOID(pg.coll), "scrub_found"); err == nil {
		var found osdop.Inconsistents
		if err := json.Unmarshal(b, &found); err == nil && found.Inconsistents != nil {
			pg.scrub.found = found
		}
	}
}

// compareScrubMaps finds the objects whose copies disagree, given each
// acting position's scrub map of one chunk (nil for a hole); primary is
// the primary's position. Data digests are compared when dataToo. It
// returns the inconsistencies and the number of objects compared.
func compareScrubMaps(acting []int32, primary int, smaps [][]scrubObj, dataToo bool) ([]osdop.Inconsistent, int) {
	byPos := make([]map[string]*scrubObj, len(smaps))
	names := map[string]bool{}
	for i, m := range smaps {
		if acting[i] == osdmap.NoOSD {
			continue
		}
		byPos[i] = make(map[string]*scrubObj, len(m))
		for j := range m {
			byPos[i][m[j].OID] = &m[j]
			names[m[j].OID] = true
		}
	}
	type key struct {
		size             uint64
		attr, omap, data uint32
	}
	keyOf := func(o *scrubObj) key {
		k := key{size: o.Size, attr: o.AttrDigest, omap: o.OmapDigest}
		if dataToo {
			k.data = o.DataDigest
		}
		return k
	}
	var out []osdop.Inconsistent
	for _, oid := range slices.Sorted(maps.Keys(names)) {
		votes := map[key]int{}
		for i := range smaps {
			if o := byPos[i][oid]; o != nil && o.Err == "" {
				votes[keyOf(o)]++
			}
		}
		auth := -1
		for i := range smaps {
			o := byPos[i][oid]
			if o == nil || o.Err != "" {
				continue
			}
			better := auth < 0 || votes[keyOf(o)] > votes[keyOf(byPos[auth][oid])] ||
				(votes[keyOf(o)] == votes[keyOf(byPos[auth][oid])] && i == primary)
			if better {
				auth = i
			}
		}
		inc := osdop.Inconsistent{Object: oid, AuthOSD: -1}
		if auth >= 0 {
			inc.AuthOSD = acting[auth]
		}
		union := map[string]bool{}
		bad := false
		for i := range smaps {
			if acting[i] == osdmap.NoOSD {
				continue
			}
			sh := osdop.ScrubShard{OSD: acting[i], Shard: i, Errors: []string{}}
			o := byPos[i][oid]
			switch {
			case o == nil:
				sh.Errors = append(sh.Errors, "missing")
			case o.Err != "":
				sh.Errors = append(sh.Errors, "read_error")
				sh.Detail = o.Err
			case auth >= 0:
				a := byPos[auth][oid]
				if o.Size != a.Size {
					sh.Errors = append(sh.Errors, "size_mismatch")
				}
				if dataToo && o.DataDigest != a.DataDigest {
					sh.Errors = append(sh.Errors, "data_digest_mismatch")
				}
				if o.OmapDigest != a.OmapDigest {
					sh.Errors = append(sh.Errors, "omap_digest_mismatch")
				}
				if o.AttrDigest != a.AttrDigest {
					sh.Errors = append(sh.Errors, "attr_value_mismatch")
				}
			}
			if o != nil {
				sh.Size, sh.OmapDigest = o.Size, fmt.Sprintf("0x%08x", o.OmapDigest)
				if dataToo && o.Err == "" {
					sh.DataDigest = fmt.Sprintf("0x%08x", o.DataDigest)
				}
			}
			for _, e := range sh.Errors {
				union[e], bad = true, true
			}
			inc.Shards = append(inc.Shards, sh)
		}
		if bad {
			inc.UnionErrors = slices.Sorted(maps.Keys(union))
			out = append(out, inc)
		}
	}
	return out, len(names)
}

// repairObject rewrites the bad copies of an inconsistent object from the
// authoritative one (the chunk's writes are blocked): a replica gets the
// whole object, an erasure-coded shard is rebuilt by decoding the others.
func (pg *PG) repairObject(ctx context.Context, iv uint64, acting []int32, addrs []string, pool *osdmap.Pool, inc osdop.Inconsistent) error {
	if inc.AuthOSD < 0 {
		return fmt.Errorf("no copy of %s is good: nothing to repair from", inc.Object)
	}
	if head, ok := opexec.CloneHead(inc.Object); ok { // a clone is repaired with its head
		inc.Object = head
	}
	defer pg.lockObject(inc.Object)() // no read sees a copy half rewritten
	var targets []int
	for _, sh := range inc.Shards {
		if len(sh.Errors) > 0 {
			targets = append(targets, sh.Shard)
		}
	}
	mem := make([]*memberInfo, len(acting))
	for i, o := range acting {
		if o != osdmap.NoOSD {
			mem[i] = &memberInfo{ID: o, Addr: addrs[i]}
		}
	}
	if pool.Type == osdmap.PoolErasure {
		cd, err := pg.osd.codec(ctx, pool)
		if err != nil {
			return err
		}
		var srcs, fills []shardFill
		for i, m := range mem {
			if m != nil {
				srcs = append(srcs, shardFill{i, *m})
			}
		}
		for _, t := range targets {
			fills = append(fills, shardFill{t, *mem[t]})
		}
		return pg.recoverEC(ctx, cd, iv, srcs, inc.Object, fills)
	}
	obj, err := pg.pull(ctx, iv, *mem[slices.Index(acting, inc.AuthOSD)], inc.Object)
	if err != nil {
		return err
	}
	for _, t := range targets {
		if err := pg.push(ctx, iv, *mem[t], inc.Object, obj); err != nil {
			return err
		}
	}
	pg.osd.log.Warn("repaired", "pg", pg.id, "object", inc.Object, "from", inc.AuthOSD, "shards", targets, "errors", inc.UnionErrors)
	return nil
}

// scrubState is the scrub part of the PG's reported state (pg.mu held),
// in Ceph's order: +scrubbing[+deep], +inconsistent, +repair.
func (pg *PG) scrubState() string {
	var s string
	switch pg.scrub.running {
	case scrubLight:
		s = "+scrubbing"
	case scrubDeep, scrubRepair:
		s = "+scrubbing+deep"
	}
	if pg.scrub.errors > 0 {
		s += "+inconsistent"
	}
	if pg.scrub.running == scrubRepair {
		s += "+repair"
	}
	return s
}

// pgCommand serves MsgPGCommand on the PG's primary.
func (d *OSD) pgCommand(payload []byte) ([]byte, error) {
	var c osdop.PGCommand
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: pg command: %v", osdop.ErrInvalid, err)
	}
	id, err := osdmap.ParsePGID(c.PGID)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
	}
	pg := d.getPG(id)
	if pg == nil {
		return nil, fmt.Errorf("%w: osd.%d does not hold pg %s", osdop.ErrRetry, d.id, id)
	}
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.ps.Interval.Primary != d.id {
		return nil, fmt.Errorf("%w: osd.%d is not the primary of pg %s", osdop.ErrRetry, d.id, id)
	}
	kind := map[string]int{"scrub": scrubLight, "deep-scrub": scrubDeep, "repair": scrubRepair}[c.Cmd]
	switch {
	case c.Cmd == "list-inconsistent":
		if pg.scrub.found.Inconsistents == nil {
			return nil, fmt.Errorf("%w: pg %s has no scrub findings on osd.%d (never scrubbed with it as primary)", osdop.ErrNotFound, id, d.id)
		}
		return json.Marshal(pg.scrub.found)
	case kind == scrubNone:
		return nil, fmt.Errorf("%w: pg command %q (scrub, deep-scrub, repair or list-inconsistent)", osdop.ErrInvalid, c.Cmd)
	}
	pg.scrub.requested = max(pg.scrub.requested, kind)
	d.scrubKick.kick()
	return []byte(fmt.Sprintf("instructing pg %s on osd.%d to %s", id, d.id, c.Cmd)), nil
}

// scrubLoop runs requested and scheduled scrubs, one at a time, until the
// OSD stops.
func (d *OSD) scrubLoop() {
	defer d.wg.Done()
	periodic.Every(d.ctx, d.clock, time.Second, d.scrubKick, func() {
		for d.ctx.Err() == nil {
			pg, kind, requested := d.nextScrub(d.clock.Now())
			if pg == nil {
				return
			}
			err := pg.runScrub(d.ctx, kind)
			if errors.Is(err, errScrubBusy) {
				// a member scrubs osd_max_scrubs PGs already: another PG
				// first, this one again in a while (an operator's request
				// stays asked for)
				d.log.Debug("scrub waits for a reservation", "pg", pg.id, "err", err)
				pg.mu.Lock()
				if requested {
					pg.scrub.requested = max(pg.scrub.requested, kind)
				}
				pg.scrub.busyUntil = d.clock.Now().Add(scrubBusyBackoff)
				pg.mu.Unlock()
				continue
			}
			if err != nil && d.ctx.Err() == nil {
				d.log.Warn("scrub", "pg", pg.id, "err", err)
				pg.mu.Lock()
				pg.scrub.busyUntil = d.clock.Now().Add(time.Second) // not again at once
				pg.mu.Unlock()
			}
		}
	})
}

// nextScrub picks the PG to scrub now and how: an operator's request
// first (requested), then a deep scrub due, then a light one.
func (d *OSD) nextScrub(now time.Time) (pg *PG, kind int, requested bool) {
	m, _ := d.curMap()
	cfg := d.conf()
	pgs := d.pgList()
	sec := func(name string) time.Duration { return time.Duration(cfg.Seconds(name) * float64(time.Second)) }
	minI, maxI, deepI := sec("osd_scrub_min_interval"), sec("osd_scrub_max_interval"), sec("osd_deep_scrub_interval")
	allowed := scrubHours(now.Hour(), int(cfg.Int("osd_scrub_begin_hour")), int(cfg.Int("osd_scrub_end_hour"))) &&
		loadPerCPU() < cfg.Float("osd_scrub_load_threshold")
	noScrub, noDeep := m.Flags.Has(osdmap.FlagNoScrub), m.Flags.Has(osdmap.FlagNoDeepScrub)
	var best *PG
	bestKind, bestWait := scrubNone, time.Duration(0)
	for _, pg := range pgs {
		pg.mu.Lock()
		ok := pg.ps.Interval.Primary == d.id && pg.isClean() && !now.Before(pg.scrub.busyUntil)
		req, last, lastDeep := pg.scrub.requested, pg.scrub.last, pg.scrub.lastDeep
		if ok && req != scrubNone {
			pg.scrub.requested = scrubNone
			pg.mu.Unlock()
			return pg, req, true
		}
		pg.mu.Unlock()
		if !ok {
			continue
		}
		kind, wait := scrubDue(now.Sub(last), now.Sub(lastDeep), minI, maxI, deepI, allowed, noScrub, noDeep)
		if kind != scrubNone && (best == nil || wait > bestWait) {
			best, bestKind, bestWait = pg, kind, wait
		}
	}
	return best, bestKind, false
}

// scrubDue is the scheduled scrub a PG is due for, and how long past due,
// sinceLight and sinceDeep after its last light and deep scrubs: a deep
// scrub once osd_deep_scrub_interval (deepI) passed, else a light one once
// osd_scrub_min_interval (minI) did — each only while allowed (scrub hours
// and load) unless osd_scrub_max_interval (maxI) passed too, and never
// while its flag (noscrub, nodeep-scrub) is set. scrubNone if neither.
func scrubDue(sinceLight, sinceDeep, minI, maxI, deepI time.Duration, allowed, noScrub, noDeep bool) (kind int, wait time.Duration) {
	switch {
	case !noDeep && sinceDeep >= deepI && (allowed || sinceDeep >= maxI):
		return scrubDeep, sinceDeep - deepI
	case !noScrub && sinceLight >= minI && (allowed || sinceLight >= maxI):
		return scrubLight, sinceLight - minI
	}
	return scrubNone, 0
}

// scrubHours reports whether hour is within [begin, end) (wrapping past
// midnight); begin == end allows every hour (Ceph's osd_scrub_begin_hour
// and osd_scrub_end_hour).
func scrubHours(hour, begin, end int) bool {
	switch {
	case begin == end:
		return true
	case begin < end:
		return hour >= begin && hour < end
	}
	return hour >= begin || hour < end
}

// loadPerCPU is the 1-minute load average per CPU (0 where unknown), the
// measure osd_scrub_load_threshold limits.
func loadPerCPU() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	l, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return 0
	}
	return l / float64(runtime.NumCPU())
}

// checkParity is a deep scrub's check of an erasure-coded chunk: for each
// object whose shards otherwise agree (not in incs), the primary reads
// every shard whole and checks that the parity is the coding of the data
// — a shard whose bytes changed without failing its store's checksums
// (written wrong) shows up only here. The shard at fault is the one whose
// rebuild from the others makes every shard agree; with m = 1 any shard
// could be, and all are reported. Errors are Ceph's ec_hash_error.
func (pg *PG) checkParity(ctx context.Context, iv uint64, pool *osdmap.Pool, acting []int32, addrs []string, local []scrubObj, incs []osdop.Inconsistent) ([]osdop.Inconsistent, error) {
	d := pg.osd
	cd, err := d.codec(ctx, pool)
	if err != nil {
		return nil, err
	}
	p := cd.Profile()
	w, u := uint64(p.K)*uint64(p.StripeUnit), uint64(p.StripeUnit)
	var out []osdop.Inconsistent
	for _, so := range local {
		if so.Err != "" || slices.ContainsFunc(incs, func(inc osdop.Inconsistent) bool { return inc.Object == so.OID }) {
			continue
		}
		o, err := pg.loadECObject(so.OID)
		if err != nil || !o.Exists || o.Size == 0 {
			continue
		}
		n := (o.Size + w - 1) / w * u
		shards := make([][]byte, len(acting))
		whole := true
		var held releases
		for i, osd := range acting {
			if osd == osdmap.NoOSD {
				whole = false
				break
			}
			var release func()
			if shards[i], release, err = pg.readShard(ctx, osd, addrs[i], iv, o, 0, n); err != nil {
				whole = false // read errors are the scrub maps' to report
				break
			}
			held = append(held, release)
		}
		if !whole {
			held.release()
			continue
		}
		d.charge(mclock.BestEffort, len(acting), n*uint64(len(acting)))
		inc, bad := ecInconsistent(cd, d.id, so.OID, acting, shards)
		held.release()
		if bad {
			out = append(out, inc)
		}
	}
	return out, nil
}

// ecInconsistent checks an object's whole shards (one per acting set
// member, from this OSD, self) against its code: if they do not verify,
// it reports them inconsistent, naming the one shard whose
// reconstruction from the others verifies, if exactly one does.
func ecInconsistent(cd *ec.Codec, self int32, oid string, acting []int32, shards [][]byte) (osdop.Inconsistent, bool) {
	if ok, err := cd.Verify(shards); err != nil || ok {
		return osdop.Inconsistent{}, false
	}
	var bad []int
	for i := range shards {
		trial := slices.Clone(shards)
		trial[i] = nil
		if cd.Reconstruct(trial) != nil {
			continue
		}
		if ok, err := cd.Verify(trial); err == nil && ok {
			bad = append(bad, i)
		}
	}
	inc := osdop.Inconsistent{Object: oid, AuthOSD: self, UnionErrors: []string{"ec_hash_error"}}
	for i, osd := range acting {
		sh := osdop.ScrubShard{OSD: osd, Shard: i, Size: uint64(len(shards[i]))}
		if len(bad) == 1 && bad[0] == i || len(bad) != 1 {
			sh.Errors = []string{"ec_hash_error"}
		}
		inc.Shards = append(inc.Shards, sh)
	}
	if len(bad) == 1 && acting[bad[0]] == self {
		inc.AuthOSD = acting[(bad[0]+1)%len(acting)]
	}
	return inc, true
}
