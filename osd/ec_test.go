package osd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// ecPool connects a client and creates an erasure-coded pool of a new
// profile k+m with OSD failure domain, stripe unit unit bytes and pgNum
// PGs (0: the default).
func (c *cluster) ecPool(ctx context.Context, name string, k, m, unit, pgNum int) (*client.Conn, *client.Pool) {
	cl := c.Client(ctx)
	prof := fmt.Sprintf("k=%d m=%d stripe_unit=%d crush-failure-domain=osd", k, m, unit)
	if _, err := cl.MonCommand(ctx, "osd erasure-code-profile set", map[string]string{"name": name, "args": prof}); err != nil {
		c.t.Fatal(err)
	}
	args := map[string]string{"name": name, "type": "erasure", "erasure_code_profile": name}
	if pgNum > 0 {
		args["pg_num"] = fmt.Sprint(pgNum)
	}
	if _, err := cl.MonCommand(ctx, "pool create", args); err != nil {
		c.t.Fatal(err)
	}
	p, err := cl.Pool(ctx, name)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl, p
}

// ec22 connects a client and creates the 2+2 pool "ec22" (4 KiB stripe
// unit) that serves with two shards (min_size 2) and takes overwrites.
func (c *cluster) ec22(ctx context.Context) (*client.Conn, *client.Pool) {
	cl, p := c.ecPool(ctx, "ec22", 2, 2, 4096, 0)
	c.poolSet(ctx, cl, "ec22", "min_size", "2")
	c.poolSet(ctx, cl, "ec22", "allow_ec_overwrites", "true")
	return cl, p
}

// putModel writes oid whole and records it in model.
func putModel(ctx context.Context, t *testing.T, p *client.Pool, model map[string][]byte, oid string, data []byte) {
	t.Helper()
	if err := p.WriteFull(ctx, oid, data); err != nil {
		t.Fatalf("write %s: %v", oid, err)
	}
	model[oid] = data
}

func (c *cluster) poolSet(ctx context.Context, cl *client.Conn, pool, key, value string) {
	if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": pool, "key": key, "value": value}); err != nil {
		c.t.Fatal(err)
	}
	if err := cl.RefreshMap(ctx); err != nil {
		c.t.Fatal(err)
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestECRoundTrip writes objects of every boundary size (around the stripe
// unit and width) to a 2+1 pool, appends, overwrites and truncates them
// against a model, and reads whole and ranged.
func TestECRoundTrip(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const u, k = 4096, 2
	const w = u * k
	cl, p := c.ecPool(ctx, "ec21", k, 1, u, 0)
	r := rand.New(rand.NewPCG(1, 2))
	model := map[string][]byte{}
	check := func(oid string) {
		t.Helper()
		want := model[oid]
		got, err := p.Read(ctx, oid, 0, 0)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: read %d bytes (%v), want %d", oid, len(got), err, len(want))
		}
		st, err := p.Stat(ctx, oid)
		if err != nil || st.Size != uint64(len(want)) {
			t.Fatalf("%s: stat %+v %v, want size %d", oid, st, err, len(want))
		}
		for range 4 { // ranged reads
			if len(want) == 0 {
				break
			}
			off := r.IntN(len(want))
			n := 1 + r.IntN(len(want)-off)
			got, err := p.Read(ctx, oid, uint64(off), uint64(n))
			if err != nil || !bytes.Equal(got, want[off:off+n]) {
				t.Fatalf("%s: read [%d,+%d): %v", oid, off, n, err)
			}
		}
	}
	sizes := []int{0, 1, u - 1, u, u + 1, w - 1, w, w + 1, 3*w + 17, 3<<20 + 5}
	for _, n := range sizes {
		oid := "o" + strconv.Itoa(n)
		model[oid] = randBytes(r, n)
		if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
			t.Fatalf("write %s: %v", oid, err)
		}
		check(oid)
	}
	// appends: aligned and not
	for _, n := range []int{1, u - 1, w, w + 3, 5} {
		oid := "o" + strconv.Itoa(u+1)
		d := randBytes(r, n)
		if err := p.Append(ctx, oid, d); err != nil {
			t.Fatalf("append %d: %v", n, err)
		}
		model[oid] = append(model[oid], d...)
		check(oid)
	}
	// overwrites need allow_ec_overwrites
	if err := p.Write(ctx, "o"+strconv.Itoa(w), []byte("x"), 5); !errors.Is(err, client.ErrUnsupported) {
		t.Fatalf("overwrite without allow_ec_overwrites: %v", err)
	}
	if err := p.Truncate(ctx, "o"+strconv.Itoa(w), 5); !errors.Is(err, client.ErrUnsupported) {
		t.Fatalf("truncate without allow_ec_overwrites: %v", err)
	}
	if err := p.OmapSet(ctx, "o1", []client.KV{{Key: "a", Value: []byte("b")}}); !errors.Is(err, client.ErrUnsupported) {
		t.Fatalf("omap on an EC pool: %v", err)
	}
	if _, err := p.Watch(ctx, "o1", 0, func(client.Notification) []byte { return nil }, nil); !errors.Is(err, client.ErrUnsupported) {
		t.Fatalf("watch on an EC pool: %v", err)
	}
	if ss, err := p.ListSnaps(ctx, "o1"); err != nil || !ss.HeadExists || len(ss.Clones) != 0 {
		t.Fatalf("list-snaps of an object without snapshots on an EC pool: %+v, %v", ss, err)
	}
	check("o" + strconv.Itoa(w))
	c.poolSet(ctx, cl, "ec21", "allow_ec_overwrites", "true")
	big := "o" + strconv.Itoa(3<<20+5)
	for range 30 {
		oid := big
		if r.IntN(2) == 0 {
			oid = "o" + strconv.Itoa(sizes[r.IntN(len(sizes))])
		}
		cur := model[oid]
		switch r.IntN(3) {
		case 0: // overwrite, possibly past the end
			off := r.IntN(len(cur) + w)
			d := randBytes(r, 1+r.IntN(2*w))
			if err := p.Write(ctx, oid, d, uint64(off)); err != nil {
				t.Fatalf("write %s at %d: %v", oid, off, err)
			}
			if end := off + len(d); end > len(cur) {
				cur = append(cur, make([]byte, end-len(cur))...)
			}
			copy(cur[off:], d)
		case 1: // truncate, down or up
			n := r.IntN(len(cur) + w)
			if err := p.Truncate(ctx, oid, uint64(n)); err != nil {
				t.Fatalf("truncate %s to %d: %v", oid, n, err)
			}
			if n <= len(cur) {
				cur = cur[:n]
			} else {
				cur = append(cur, make([]byte, n-len(cur))...)
			}
		case 2: // zero
			if len(cur) == 0 {
				continue
			}
			off := r.IntN(len(cur))
			n := 1 + r.IntN(2*w)
			if err := p.Zero(ctx, oid, uint64(off), uint64(n)); err != nil {
				t.Fatalf("zero %s: %v", oid, err)
			}
			clear(cur[off:min(off+n, len(cur))])
		}
		model[oid] = cur
		check(oid)
	}
	// xattrs, remove, create
	if err := p.SetXattr(ctx, big, "color", []byte("blue")); err != nil {
		t.Fatal(err)
	}
	if v, err := p.GetXattr(ctx, big, "color"); err != nil || string(v) != "blue" {
		t.Fatalf("xattr %q %v", v, err)
	}
	if err := p.Remove(ctx, "o1"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Read(ctx, "o1", 0, 0); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("read removed: %v", err)
	}
	delete(model, "o1")
	var listed []string
	if err := p.List(ctx, func(n string) bool { listed = append(listed, n); return true }); err != nil || len(listed) != len(model) {
		t.Fatalf("list %v (%v), want %d objects", listed, err, len(model))
	}
	checkFailOK(ctx, t, p) // the gateway's head write on an erasure-coded data pool
}

// TestECConcurrentReads: many reads of large objects in flight at once
// on a 2+1 pool each return their own object's bytes, whole and ranged,
// while writes replace other objects. A read's reply is written from the
// shards' buffers (the remote shards' receive buffers, the local shard's
// read buffer, cached blocks); given back before the reply is out, they
// would be refilled by other reads and the reply would carry their bytes.
func TestECConcurrentReads(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, p := c.ecPool(ctx, "ecc", 2, 1, 4096, 0)
	r := rand.New(rand.NewPCG(3, 4))
	const objs = 6
	data := make([][]byte, objs)
	for i := range data {
		data[i] = randBytes(r, 1<<20+i*300<<10+7)
		if err := p.WriteFull(ctx, fmt.Sprint("o", i), data[i]); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 10)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rg := rand.New(rand.NewPCG(uint64(g), 5))
			for range 12 {
				i := rg.IntN(objs)
				want := data[i]
				off, n := 0, 0 // whole, every other read ranged
				if rg.IntN(2) == 0 {
					off = rg.IntN(len(want))
					n = 1 + rg.IntN(len(want)-off)
				}
				got, err := p.Read(ctx, fmt.Sprint("o", i), uint64(off), uint64(n))
				if n == 0 {
					n = len(want)
				}
				if err != nil || !bytes.Equal(got, want[off:off+n]) {
					errs <- fmt.Errorf("read o%d [%d,+%d): %v (%d bytes)", i, off, n, err, len(got))
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // writers of other objects: fresh shard reads and receive buffers in between
		defer wg.Done()
		for i := range 10 {
			if err := p.WriteFull(ctx, fmt.Sprint("w", i%3), randBytes(rand.New(rand.NewPCG(uint64(i), 6)), 1<<20)); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestECShardLoss: with m OSDs of a 2+2 pool gone every object still
// reads; with m+1 gone reads that need a lost shard fail, and none
// returns wrong bytes; when they return, peering rebuilds their shards.
func TestECShardLoss(t *testing.T) {
	c := startCluster(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, p := c.ecPool(ctx, "ec22", 2, 2, 4096, 0)
	c.poolSet(ctx, cl, "ec22", "min_size", "2") // serve with k shards
	r := rand.New(rand.NewPCG(3, 4))
	model := map[string][]byte{}
	for i := range 40 {
		oid := "obj" + strconv.Itoa(i)
		model[oid] = randBytes(r, r.IntN(64<<10))
		if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
			t.Fatal(err)
		}
	}
	readAll := func() {
		t.Helper()
		for oid, want := range model {
			got, err := p.Read(ctx, oid, 0, 0)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %v (%d bytes, want %d)", oid, err, len(got), len(want))
			}
		}
	}
	// m = 2 OSDs gone: first before the MON notices (degraded reads
	// decode), then after
	c.OSDs[1].Close()
	c.OSDs[2].Close()
	readAll()
	c.waitDown(ctx, cl, 1, 2)
	readAll()
	// writes still work with k shards (min_size 2)
	model["new"], model["empty"] = randBytes(r, 10000), []byte{}
	for _, oid := range []string{"new", "empty"} { // the returning OSDs must rebuild these
		if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
			t.Fatal(err)
		}
	}
	// m+1 gone: a read that needs a lost shard fails; none returns wrong
	// bytes. An object within one stripe unit lies wholly in data shard
	// 0: if that shard's OSD is the survivor and still primary (before
	// the MON marks the others down, under the leases they granted), it
	// reads without any other shard — current data, as Ceph serves it.
	c.OSDs[3].Close()
	short, cancelShort := context.WithTimeout(ctx, 8*time.Second)
	for oid, want := range model {
		got, err := p.Read(short, oid, 0, 0)
		if err == nil && (len(want) > 4096 || !bytes.Equal(got, want)) {
			t.Fatalf("%s read %d bytes (of %d) with 3 of 4 shards gone", oid, len(got), len(want))
		}
	}
	cancelShort()
	// all return: their shards are rebuilt, and read through them alone
	for _, i := range []int{1, 2, 3} {
		c.RestartOSD(i)
	}
	readAll()
}

// TestECShardCounters: one 4 MiB write to a 4+2 pool is 6 shard writes of
// 1 MiB; reading it back reads the 4 data shards.
func TestECShardCounters(t *testing.T) {
	c := startCluster(t, 6)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, p := c.ecPool(ctx, "ec42", 4, 2, 4096, 0)
	sum := func() (s osdop.Perf) {
		for i := range c.OSDs {
			st, err := cl.OSDStats(ctx, int32(i))
			if err != nil {
				t.Fatal(err)
			}
			s.ShardW += st.Perf.ShardW
			s.ShardWBytes += st.Perf.ShardWBytes
			s.ShardR += st.Perf.ShardR
			s.ShardRBytes += st.Perf.ShardRBytes
		}
		return s
	}
	before := sum()
	data := randBytes(rand.New(rand.NewPCG(5, 6)), 4<<20)
	if err := p.WriteFull(ctx, "big", data); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Read(ctx, "big", 0, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read: %v", err)
	}
	after := sum()
	if w, wb := after.ShardW-before.ShardW, after.ShardWBytes-before.ShardWBytes; w != 6 || wb != 6<<20 {
		t.Fatalf("4 MiB to 4+2: %d shard writes of %d bytes, want 6 of 6 MiB", w, wb)
	}
	if r, rb := after.ShardR-before.ShardR, after.ShardRBytes-before.ShardRBytes; r != 4 || rb != 4<<20 {
		t.Fatalf("4 MiB read from 4+2: %d shard reads of %d bytes, want 4 of 4 MiB", r, rb)
	}
}

// TestECRecoveryAfterActivation: an OSD that missed writes to a 2+2 pool
// returns and its PGs serve at once — reads decode around its stale
// shards, a write first rebuilds its object's missing shards — while
// background rebuilding waits under norecover. Its missing set survives a
// restart: with only it and one other OSD left (k shards), an object it
// lacks is refused, never served from its stale shard. Unset norecover
// and the PGs go active+clean; then it and one other serve every object.
func TestECRecoveryAfterActivation(t *testing.T) {
	c := startCluster(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, p := c.ec22(ctx)
	r := rand.New(rand.NewPCG(5, 6))
	model := map[string][]byte{} // nil: deleted
	put := func(oid string, data []byte) { t.Helper(); putModel(ctx, t, p, model, oid, data) }
	for i := range 60 {
		put(fmt.Sprintf("o%d", i), randBytes(r, 1000+r.IntN(40<<10)))
	}
	c.stop(ctx, cl, 3)
	monDo(ctx, t, cl, "osd set", "key", "norecover")
	for i := range 30 { // osd.3 misses these
		put(fmt.Sprintf("o%d", i), randBytes(r, 1000+r.IntN(40<<10)))
	}
	for i := 30; i < 36; i++ {
		oid := fmt.Sprintf("o%d", i)
		if err := p.Remove(ctx, oid); err != nil {
			t.Fatal(err)
		}
		model[oid] = nil
	}
	for i := range 10 {
		put(fmt.Sprintf("n%d", i), randBytes(r, 5000))
	}
	c.RestartOSD(3)
	verifyModel(ctx, t, p, model, "osd.3 back under norecover")
	// partial writes to objects osd.3 lacks rebuild them first
	for i := range 8 {
		oid := fmt.Sprintf("o%d", i)
		patch := randBytes(r, 3000)
		if err := p.Write(ctx, oid, patch, 100); err != nil {
			t.Fatal(err)
		}
		w := slices.Clone(model[oid])
		if n := 100 + len(patch); len(w) < n {
			w = append(w, make([]byte, n-len(w))...)
		}
		copy(w[100:], patch)
		model[oid] = w
	}
	verifyModel(ctx, t, p, model, "after writes to degraded objects")
	waitingForRecovery(ctx, t, cl, p.ID())

	// restarted, osd.3 still knows what its shards lack: with osd.0 and
	// osd.1 gone and declared lost (else the PGs that took writes without
	// osd.3 stay down, waiting for them), osd.2 and osd.3 hold k shards;
	// an object osd.3 lacks is refused, never decoded from its stale shard
	c.RestartOSD(3)
	c.stop(ctx, cl, 0, 1)
	for _, id := range []string{"0", "1"} {
		monDo(ctx, t, cl, "osd lost", "id", id, "sure", "--yes-i-really-mean-it")
	}
	for {
		states := pgStates(ctx, t, cl, p.ID())
		if len(states) == 32 && !slices.ContainsFunc(states, func(s string) bool { return !strings.Contains(s, " active") }) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("osd.2 and osd.3 alone: pgs not active: %v", states)
		case <-time.After(50 * time.Millisecond):
		}
	}
	served, refused := readServedOrRefused(ctx, t, p, model, "unreadable", "unfound")
	if len(refused) == 0 {
		t.Fatalf("osd.2 and osd.3 alone served all %d objects: osd.3 lacked none?", served)
	}
	t.Logf("osd.2 and osd.3 alone under norecover: %d objects served, refused: %v", served, refused)

	c.RestartOSD(0)
	c.RestartOSD(1)
	monDo(ctx, t, cl, "osd unset", "key", "norecover")
	waitClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, "clean")
	// every shard is rebuilt: any two OSDs serve every object
	c.stop(ctx, cl, 0, 1)
	verifyModel(ctx, t, p, model, "osd.2 and osd.3 alone after recovery")
}

// TestECBackfillUnderPGTemp: an OSD added to a 2+2 pool — each PG whose
// up set gives it a shard keeps the shard's old OSD acting under a
// pg_temp while the new one backfills (held by nobackfill): remapped,
// never degraded or undersized. Where CRUSH also reorders the PG's other
// OSDs, the MONs' pg_upmap keeps them at their positions, so the new OSD
// is the only change of any up set and no object is rebuilt by decoding.
// Every read is served meanwhile, and the new OSD takes every
// write (a partial write first copies it the object's shard). Then the
// shards are copied from the OSDs that held them, the pg_temps go, the
// old shards are deleted, and every object has its four shards, readable
// from any two OSDs.
func TestECBackfillUnderPGTemp(t *testing.T) {
	c := startCluster(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, p := c.ec22(ctx)
	r := rand.New(rand.NewPCG(7, 8))
	model := map[string][]byte{} // nil: deleted
	put := func(oid string, data []byte) { t.Helper(); putModel(ctx, t, p, model, oid, data) }
	for i := range 60 {
		put(fmt.Sprintf("o%d", i), randBytes(r, 1000+r.IntN(30<<10)))
	}
	waitClean(ctx, t, cl, p.ID())
	before, err := cl.Map().PGMappings(p.ID())
	if err != nil {
		t.Fatal(err)
	}
	monDo(ctx, t, cl, "osd set", "key", "nobackfill")
	c.AddOSD() // osd.4
	// moved: PGs where osd.4 takes shards and every other shard stays put
	moved, shifted := map[osdmap.PGID]bool{}, 0
	var m *osdmap.Map
	for {
		if err := cl.RefreshMap(ctx); err != nil {
			t.Fatal(err)
		}
		m = cl.Map()
		after, err := m.PGMappings(p.ID())
		if err != nil {
			t.Fatal(err)
		}
		clear(moved)
		shifted = 0
		for seed, mp := range after {
			old := before[seed].Acting
			if slices.Equal(mp.Up, old) {
				continue
			}
			pure := true
			for i, o := range mp.Up {
				pure = pure && (o == old[i] || o == 4)
			}
			if pure {
				moved[osdmap.PGID{Pool: p.ID(), Seed: uint32(seed)}] = true
			} else {
				shifted++
			}
		}
		waiting, empty := 0, 0 // a PG with no objects goes clean at once
		states := pgStates(ctx, t, cl, p.ID())
		for _, st := range states {
			id, state, _ := strings.Cut(st, " ")
			pg, err := osdmap.ParsePGID(id)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case moved[pg] && (strings.Contains(state, "degraded") || strings.Contains(state, "undersized")):
				t.Fatalf("an OSD added: %s, its old acting set %v", st, before[pg.Seed].Acting)
			case moved[pg] && state == "active+remapped+backfill_wait":
				mp, err := m.MapPG(pg)
				if err != nil {
					t.Fatal(err)
				}
				if slices.Equal(mp.Acting, before[pg.Seed].Acting) {
					waiting++
				}
			case moved[pg] && state == "active+clean":
				empty++
			}
		}
		if shifted > 0 {
			t.Fatalf("%d pgs with an OSD other than osd.4 at a new position (pg_upmap %v)", shifted, m.PGUpmap)
		}
		if m.OSDs[4].Up && waiting > 0 && waiting+empty == len(moved) {
			t.Logf("osd.4 added under nobackfill: %d pgs active+remapped+backfill_wait with their old acting set as pg_temp; %d pg_upmap entries kept reordered OSDs in place", waiting, len(m.PGUpmap))
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d pgs moved, %d wait under pg_temp: %v, pg_temp %v", len(moved), waiting, states, m.PGTemp)
		case <-time.After(20 * time.Millisecond):
		}
	}
	verifyModel(ctx, t, p, model, "under pg_temp")
	tempBefore := m.PGTemp
	// writes go on: whole, partial (osd.4 lacks the object first), removes, new
	for i := range 60 {
		oid := fmt.Sprintf("o%d", i)
		switch i % 4 {
		case 0:
			put(oid, randBytes(r, 1000+r.IntN(30<<10)))
		case 1:
			patch := randBytes(r, 3000)
			if err := p.Write(ctx, oid, patch, 500); err != nil {
				t.Fatal(err)
			}
			w := slices.Clone(model[oid])
			if n := 500 + len(patch); len(w) < n {
				w = append(w, make([]byte, n-len(w))...)
			}
			copy(w[500:], patch)
			model[oid] = w
		case 2:
			if i%8 == 2 {
				if err := p.Remove(ctx, oid); err != nil {
					t.Fatal(err)
				}
				model[oid] = nil
			}
		}
	}
	for i := range 20 {
		put(fmt.Sprintf("n%d", i), randBytes(r, 5000+i))
	}
	verifyModel(ctx, t, p, model, "written under pg_temp")
	if n := c.held(4, p.ID()); n == 0 {
		t.Fatal("osd.4 took none of the objects written under pg_temp")
	}
	// A PG whose missing shards the writes above all rebuilt is complete
	// under nobackfill and drops its pg_temp; the write in flight then (the
	// writes go one at a time) fails on a member that moved to the new
	// interval, and its object is rebuilt by decoding. Each such PG may
	// excuse one rebuild, two at most: here 10 PGs drop it in every run,
	// and 1 run in 20 rebuilt one object, none rebuilt more.
	if err := cl.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for pg := range tempBefore {
		if _, ok := cl.Map().PGTemp[pg]; !ok {
			dropped++
		}
	}
	backfillClean(ctx, t, cl, p.ID())
	verifyModel(ctx, t, p, model, "backfilled")
	copies := c.perfTotal(ctx, cl, func(p osdop.Perf) uint64 { return p.ECShardCopies })
	rebuilds := c.perfTotal(ctx, cl, func(p osdop.Perf) uint64 { return p.ECRebuilds })
	// backfill copies shards rather than decoding them
	if copies == 0 || rebuilds > uint64(min(dropped, 2)) {
		t.Fatalf("backfill: %d shards copied, %d objects rebuilt by decoding (%d pgs dropped their pg_temp during the writes)", copies, rebuilds, dropped)
	}
	t.Logf("backfill copied %d shards from the OSDs that held them, rebuilt %d; %d pgs dropped their pg_temp during the writes", copies, rebuilds, dropped)
	c.waitCopies(ctx, p.ID(), model, 4) // the replaced shards deleted, none lost
	c.stop(ctx, cl, 0, 1)
	verifyModel(ctx, t, p, model, "osd.0 and osd.1 down after the backfill")
}

// TestECSwappedPositions: a CRUSH weight change that only swaps the
// positions of a 2+1 PG's members (one shard per OSD, and min_size 3
// leaves no room to rebuild one) moves nothing: the MONs give the PG a
// pg_upmap of its old positions, and it stays active+clean on its old
// acting set, serving every object; the other PGs move and go clean, and
// the shards moved (copied or rebuilt) are exactly the minimum: one per
// object and position whose OSD changed.
func TestECSwappedPositions(t *testing.T) {
	c := startCluster(t, 6)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, p := c.ecPool(ctx, "ec", 2, 1, 4096, 64)
	r := rand.New(rand.NewPCG(9, 10))
	model := map[string][]byte{}
	for i := range 200 {
		putModel(ctx, t, p, model, fmt.Sprintf("o%d", i), randBytes(r, 500+r.IntN(20<<10)))
	}
	waitClean(ctx, t, cl, p.ID())
	before, err := cl.Map().PGMappings(p.ID())
	if err != nil {
		t.Fatal(err)
	}
	moved := func() uint64 {
		return c.perfTotal(ctx, cl, func(p osdop.Perf) uint64 { return p.ECShardCopies + p.ECRebuilds })
	}
	base := moved()
	monDo(ctx, t, cl, "osd crush reweight", "name", "osd.2", "weight", "2")
	if err := cl.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	chosen, err := cl.Map().CrushOSDs(p.ID())
	if err != nil {
		t.Fatal(err)
	}
	swapped := map[int]bool{} // by seed
	for seed, osds := range chosen {
		old := before[seed].Acting
		if !slices.Equal(osds, old) && len(osds) == len(old) && !slices.ContainsFunc(osds, func(o int32) bool { return !slices.Contains(old, o) }) {
			swapped[seed] = true
		}
	}
	if len(swapped) == 0 {
		t.Fatal("the reweight swapped no PG's positions: the test proves nothing")
	}
	after, err := cl.Map().PGMappings(p.ID())
	if err != nil {
		t.Fatal(err)
	}
	// the minimum to move: one shard of each object per position whose
	// OSD changed
	objects := objectsPerPG(t, cl.Map(), p.ID(), model)
	minimum := 0
	for seed, mp := range after {
		if swapped[seed] && (!slices.Equal(mp.Up, before[seed].Acting) || !slices.Equal(mp.Acting, before[seed].Acting)) {
			t.Fatalf("pg %d.%x, swapped by CRUSH from %v to %v: up %v acting %v", p.ID(), seed, before[seed].Acting, chosen[seed], mp.Up, mp.Acting)
		}
		for i, o := range mp.Up {
			if o != before[seed].Acting[i] {
				minimum += objects[uint32(seed)]
			}
		}
	}
	eventually(ctx, t, func() bool { return moved()-base >= uint64(minimum) },
		func() string { return fmt.Sprintf("%d shards moved, the minimum is %d", moved()-base, minimum) })
	backfillClean(ctx, t, cl, p.ID())
	if n := moved() - base; minimum == 0 || n != uint64(minimum) {
		t.Fatalf("the reweight moved %d shards, the minimum is %d", n, minimum)
	}
	t.Logf("%d of 64 pgs had their members swapped by CRUSH: active+clean on their old positions (pg_upmap); the others moved %d shards, the minimum", len(swapped), minimum)
	verifyModel(ctx, t, p, model, "after the reweight")
	for i := range 50 {
		oid := fmt.Sprintf("o%d", i*4)
		model[oid] = randBytes(r, 500+r.IntN(20<<10))
		if err := p.WriteFull(ctx, oid, model[oid]); err != nil {
			t.Fatal(err)
		}
	}
	verifyModel(ctx, t, p, model, "written after the reweight")
}
