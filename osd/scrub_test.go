package osd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// pgStats is PG pgid as its primary reports it.
func pgStats(ctx context.Context, t *testing.T, cl *client.Conn, pgid osdmap.PGID) osdop.PGStats {
	t.Helper()
	mp, err := cl.Map().MapPG(pgid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cl.OSDStats(ctx, mp.ActingPrimary)
	if err != nil {
		t.Fatal(err)
	}
	for _, pg := range st.PGs {
		if pg.PGID == pgid.String() {
			return pg
		}
	}
	t.Fatalf("osd.%d does not report pg %s", mp.ActingPrimary, pgid)
	return osdop.PGStats{}
}

// scrubPG asks for a scrub of kind cmd and waits until its stamp passes.
func scrubPG(ctx context.Context, t *testing.T, cl *client.Conn, pgid osdmap.PGID, cmd string) osdop.Inconsistents {
	t.Helper()
	before := pgStats(ctx, t, cl, pgid)
	if _, err := cl.PGCommand(ctx, pgid.String(), cmd); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	for {
		st := pgStats(ctx, t, cl, pgid)
		if st.LastScrub.After(before.LastScrub) && (cmd == "scrub" || st.LastDeepScrub.After(before.LastDeepScrub)) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s of %s did not finish: %v", cmd, pgid, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	b, err := cl.PGCommand(ctx, pgid.String(), "list-inconsistent")
	if err != nil {
		t.Fatal(err)
	}
	var incs osdop.Inconsistents
	if err := json.Unmarshal(b, &incs); err != nil {
		t.Fatal(err)
	}
	return incs
}

// errorsByObject flattens a scrub's findings: object → "osd.N:error" list.
func errorsByObject(incs osdop.Inconsistents) map[string][]string {
	out := map[string][]string{}
	for _, inc := range incs.Inconsistents {
		for _, sh := range inc.Shards {
			for _, e := range sh.Errors {
				out[inc.Object] = append(out[inc.Object], fmt.Sprintf("osd.%d:%s", sh.OSD, e))
			}
		}
	}
	return out
}

// scrubCluster starts three OSDs with extra configuration lines and
// connects a client.
func scrubCluster(ctx context.Context, t *testing.T, extra string) (*cluster, *client.Conn) {
	t.Helper()
	c := startClusterWith(t, 3, extra)
	return c, c.Client(ctx)
}

// onePGPool creates pool "s" — 3 replicas in one PG — and returns it,
// its PG and the PG's acting set.
func onePGPool(ctx context.Context, t *testing.T, cl *client.Conn) (*client.Pool, osdmap.PGID, []int32) {
	t.Helper()
	monDo(ctx, t, cl, "pool create", "name", "s", "size", "3", "pg_num", "1")
	p, err := cl.Pool(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	pgid := osdmap.PGID{Pool: p.ID(), Seed: 0}
	mp, err := cl.Map().MapPG(pgid)
	if err != nil {
		t.Fatal(err)
	}
	return p, pgid, mp.Acting
}

// damage applies fn's transaction to OSD osd's store behind the OSD's
// back (a disk's silent change).
func (c *cluster) damage(osd int32, fn func(tx *objectstore.Transaction)) {
	c.t.Helper()
	var tx objectstore.Transaction
	fn(&tx)
	if err := c.Stores[osd].Apply(&tx); err != nil {
		c.t.Fatal(err)
	}
}

// monDo runs a MON command given as prefix and key, value pairs.
func monDo(ctx context.Context, t *testing.T, cl *client.Conn, prefix string, kv ...string) {
	t.Helper()
	args := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i]] = kv[i+1]
	}
	if _, err := cl.MonCommand(ctx, prefix, args); err != nil {
		t.Fatalf("%s: %v", prefix, err)
	}
}

// TestScrubAndRepair damages copies of a replicated PG behind the OSDs'
// backs (a replica's bytes, a primary's bytes, a lost object, an omap
// value) while a client keeps writing other objects of the same PG: a
// light scrub finds what differs in lists and metadata, a deep scrub also
// the data, with the majority's copy as authority; repair rewrites the bad
// copies and a scrub after it finds nothing.
func TestScrubAndRepair(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, cl := scrubCluster(ctx, t, "osd_scrub_chunk_max = 7\n")
	p, pgid, acting := onePGPool(ctx, t, cl)
	want := map[string][]byte{}
	for i := range 40 {
		oid := fmt.Sprintf("obj%02d", i)
		want[oid] = bytes.Repeat([]byte{byte(i)}, 1000+i)
		if err := p.WriteFull(ctx, oid, want[oid]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.OmapSet(ctx, "obj05", []omap.KV{{Key: "k", Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	primary, replica := acting[0], acting[1]
	coll := objectstore.Coll(pgid.String())
	flip := func(b []byte) []byte { b = slices.Clone(b); b[len(b)/2] ^= 0xff; return b }
	c.damage(replica, func(tx *objectstore.Transaction) { tx.Write(coll, "obj03", 0, flip(want["obj03"])) })
	c.damage(primary, func(tx *objectstore.Transaction) { tx.Write(coll, "obj11", 0, flip(want["obj11"])) })
	c.damage(replica, func(tx *objectstore.Transaction) { tx.Remove(coll, "obj20") })
	c.damage(acting[2], func(tx *objectstore.Transaction) {
		tx.OmapSet(coll, "obj05", []omap.KV{{Key: "k", Value: []byte("other")}})
	})

	// writers to other objects of the PG run through every scrub: their
	// writes wait for a chunk being compared, and never show up as errors
	wctx, wcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var writes int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; wctx.Err() == nil; i++ {
			err := p.WriteFull(wctx, fmt.Sprintf("live%02d", i%30), []byte(fmt.Sprintf("write %d", i)))
			if err != nil && wctx.Err() == nil {
				t.Errorf("write during scrub: %v", err)
				return
			}
			writes++
		}
	}()

	light := errorsByObject(scrubPG(ctx, t, cl, pgid, "scrub"))
	wantLight := map[string][]string{
		"obj05": {fmt.Sprintf("osd.%d:omap_digest_mismatch", acting[2])},
		"obj20": {fmt.Sprintf("osd.%d:missing", replica)},
	}
	if fmt.Sprint(light) != fmt.Sprint(wantLight) {
		t.Fatalf("light scrub found %v, want %v", light, wantLight)
	}
	if st := pgStats(ctx, t, cl, pgid); !strings.Contains(st.State, "+inconsistent") || st.ScrubErrors != 2 {
		t.Fatalf("after a scrub with errors: state %s, %d errors", st.State, st.ScrubErrors)
	}
	deep := scrubPG(ctx, t, cl, pgid, "deep-scrub")
	wantDeep := map[string][]string{
		"obj03": {fmt.Sprintf("osd.%d:data_digest_mismatch", replica)},
		"obj05": wantLight["obj05"],
		"obj11": {fmt.Sprintf("osd.%d:data_digest_mismatch", primary)}, // the majority outvotes the primary
		"obj20": wantLight["obj20"],
	}
	if got := errorsByObject(deep); fmt.Sprint(got) != fmt.Sprint(wantDeep) {
		t.Fatalf("deep scrub found %v, want %v", got, wantDeep)
	}
	for _, inc := range deep.Inconsistents {
		if inc.Object == "obj11" && inc.AuthOSD == primary {
			t.Fatalf("obj11: the damaged primary copy was chosen as authoritative: %+v", inc)
		}
	}
	// the findings survive a restart of the primary (its PG meta holds them)
	c.RestartOSD(int(primary))
	for {
		b, err := cl.PGCommand(ctx, pgid.String(), "list-inconsistent")
		if err == nil {
			var incs osdop.Inconsistents
			if err := json.Unmarshal(b, &incs); err != nil {
				t.Fatal(err)
			}
			if got := errorsByObject(incs); fmt.Sprint(got) != fmt.Sprint(wantDeep) {
				t.Fatalf("list-inconsistent after the primary restarted: %v, want %v", got, wantDeep)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("list-inconsistent after the primary restarted: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if got := errorsByObject(scrubPG(ctx, t, cl, pgid, "repair")); fmt.Sprint(got) != fmt.Sprint(wantDeep) {
		t.Fatalf("repair found %v, want %v", got, wantDeep)
	}
	if got := scrubPG(ctx, t, cl, pgid, "deep-scrub"); len(got.Inconsistents) != 0 {
		t.Fatalf("deep scrub after repair: %+v", got.Inconsistents)
	}
	wcancel()
	wg.Wait()
	if st := pgStats(ctx, t, cl, pgid); st.State != "active+clean" || st.ScrubErrors != 0 {
		t.Fatalf("after repair: state %s, %d errors", st.State, st.ScrubErrors)
	}
	t.Logf("%d client writes ran during the scrubs", writes)
	// every copy holds the client's bytes again
	for _, o := range acting {
		for oid, data := range want {
			got, err := c.Stores[o].Read(coll, oid, 0, 0)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("osd.%d %s after repair: %v", o, oid, err)
			}
		}
		kv, err := c.Stores[o].OmapGet(coll, "obj05", []string{"k"})
		if err != nil || string(kv["k"]) != "v" {
			t.Fatalf("osd.%d obj05 omap after repair: %q %v", o, kv["k"], err)
		}
	}
	if _, err := cl.PGCommand(ctx, pgid.String(), "defragment"); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("unknown pg command: %v", err)
	}
}

// TestScrubErasureCoded: on a 2+1 pool, a shard lost on one OSD and a
// shard's attribute changed on another are found by a scrub; repair
// rebuilds the lost shard by decoding and rewrites the other, byte for
// byte as they were.
func TestScrubErasureCoded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, cl := scrubCluster(ctx, t, "")
	monDo(ctx, t, cl, "osd erasure-code-profile set", "name", "ec21", "args", "k=2 m=1 stripe_unit=4096 crush-failure-domain=osd")
	monDo(ctx, t, cl, "pool create", "name", "ec21", "type", "erasure", "erasure_code_profile", "ec21", "pg_num", "1")
	p, err := cl.Pool(ctx, "ec21")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 12 {
		if err := p.WriteFull(ctx, fmt.Sprintf("e%02d", i), randBytes(r, 20000+i)); err != nil {
			t.Fatal(err)
		}
	}
	pgid := osdmap.PGID{Pool: p.ID(), Seed: 0}
	mp, err := cl.Map().MapPG(pgid)
	if err != nil {
		t.Fatal(err)
	}
	coll := objectstore.Coll(pgid.String())
	lost, changed := mp.Acting[2], mp.Acting[1] // a parity and a data shard
	before, err := c.Stores[lost].Read(coll, "e04", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores[changed].GetAttr(coll, "e07", "u.color"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("e07 has an xattr before the test set one: %v", err)
	}
	c.damage(lost, func(tx *objectstore.Transaction) { tx.Remove(coll, "e04") })
	c.damage(changed, func(tx *objectstore.Transaction) { tx.SetAttr(coll, "e07", "u.color", []byte("red")) })
	want := map[string][]string{
		"e04": {fmt.Sprintf("osd.%d:missing", lost)},
		"e07": {fmt.Sprintf("osd.%d:attr_value_mismatch", changed)},
	}
	if got := errorsByObject(scrubPG(ctx, t, cl, pgid, "scrub")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scrub found %v, want %v", got, want)
	}
	if got := errorsByObject(scrubPG(ctx, t, cl, pgid, "repair")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("repair found %v, want %v", got, want)
	}
	if got := scrubPG(ctx, t, cl, pgid, "deep-scrub"); len(got.Inconsistents) != 0 {
		t.Fatalf("deep scrub after repair: %+v", got.Inconsistents)
	}
	after, err := c.Stores[lost].Read(coll, "e04", 0, 0)
	if err != nil || !bytes.Equal(after, before) {
		t.Fatalf("rebuilt shard of e04: %v (%d bytes, was %d)", err, len(after), len(before))
	}
	if _, err := c.Stores[changed].GetAttr(coll, "e07", "u.color"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("e07's stray attribute after repair: %v", err)
	}
}

// TestScheduledScrub: PGs are scrubbed on their own once
// osd_scrub_min_interval has passed, deep-scrubbed after
// osd_deep_scrub_interval, and not while noscrub / nodeep-scrub are set.
func TestScheduledScrub(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, cl := scrubCluster(ctx, t, "osd_scrub_min_interval = 1\nosd_deep_scrub_interval = 2\nosd_scrub_load_threshold = 1000\n")
	monDo(ctx, t, cl, "osd set", "key", "noscrub")
	monDo(ctx, t, cl, "osd set", "key", "nodeep-scrub")
	p, pgid, _ := onePGPool(ctx, t, cl)
	if err := p.WriteFull(ctx, "o", []byte("x")); err != nil {
		t.Fatal(err)
	}
	first := pgStats(ctx, t, cl, pgid)
	// both flags set: 3 s (three deep intervals) pass without a scrub
	quiet, qcancel := context.WithTimeout(ctx, 3*time.Second)
	<-quiet.Done()
	qcancel()
	if st := pgStats(ctx, t, cl, pgid); !st.LastScrub.Equal(first.LastScrub) || !st.LastDeepScrub.Equal(first.LastDeepScrub) {
		t.Fatalf("scrubbed with noscrub and nodeep-scrub set: %v → %v, deep %v → %v", first.LastScrub, st.LastScrub, first.LastDeepScrub, st.LastDeepScrub)
	}
	monDo(ctx, t, cl, "osd unset", "key", "noscrub")
	monDo(ctx, t, cl, "osd unset", "key", "nodeep-scrub")
	var st osdop.PGStats
	eventually(ctx, t, func() bool {
		st = pgStats(ctx, t, cl, pgid)
		return st.LastScrub.After(first.LastScrub) && st.LastDeepScrub.After(first.LastDeepScrub)
	}, func() string { return fmt.Sprintf("no scheduled scrubs: %+v", st) })
}

// TestRepairInterrupted stops a replica in the middle of a repair that
// rewrites 300 lost objects on it: every copy it holds after restarting is
// whole (a deep scrub finds only objects still missing, no torn one), and
// a second repair completes the job.
func TestRepairInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, cl := scrubCluster(ctx, t, "osd_scrub_chunk_max = 10\nosd_scrub_sleep = 0.05\n")
	p, pgid, acting := onePGPool(ctx, t, cl)
	want := map[string][]byte{}
	for i := range 300 {
		oid := fmt.Sprintf("r%03d", i)
		want[oid] = bytes.Repeat([]byte{byte(i)}, 8192+i)
		if err := p.WriteFull(ctx, oid, want[oid]); err != nil {
			t.Fatal(err)
		}
	}
	replica := acting[1]
	coll := objectstore.Coll(pgid.String())
	c.damage(replica, func(tx *objectstore.Transaction) {
		for oid := range want {
			tx.Remove(coll, oid)
		}
	})
	if _, err := cl.PGCommand(ctx, pgid.String(), "repair"); err != nil {
		t.Fatal(err)
	}
	for { // the repair has rewritten some objects: stop the replica now
		st, err := cl.OSDStats(ctx, replica)
		if err != nil {
			t.Fatal(err)
		}
		if st.Perf.RecoveryOps > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c.RestartOSD(int(replica))
	found := errorsByObject(scrubPG(ctx, t, cl, pgid, "deep-scrub"))
	for oid, errs := range found {
		if len(errs) != 1 || errs[0] != fmt.Sprintf("osd.%d:missing", replica) {
			t.Fatalf("%s after an interrupted repair: %v, want only missing on osd.%d", oid, errs, replica)
		}
	}
	t.Logf("%d of 300 objects still missing after the interrupted repair", len(found))
	if len(found) == 300 {
		t.Fatal("the repair rewrote nothing before the replica stopped")
	}
	scrubPG(ctx, t, cl, pgid, "repair")
	if got := scrubPG(ctx, t, cl, pgid, "deep-scrub"); len(got.Inconsistents) != 0 {
		t.Fatalf("deep scrub after the second repair: %+v", got.Inconsistents)
	}
	for oid, data := range want {
		if got, err := c.Stores[replica].Read(coll, oid, 0, 0); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("osd.%d %s after repair: %v", replica, oid, err)
		}
	}
}

// TestScrubReservations: with osd_max_scrubs 1 on three OSDs that each
// hold every PG, deep scrubs asked for all eight PGs at once (their
// primaries on all three OSDs) contend for every OSD's one slot: they run
// one after another as slots free, and all finish.
func TestScrubReservations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, cl := scrubCluster(ctx, t, "osd_max_scrubs = 1\nosd_scrub_chunk_max = 3\n")
	monDo(ctx, t, cl, "pool create", "name", "s", "size", "3", "pg_num", "8")
	p, err := cl.Pool(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := p.WriteFull(ctx, fmt.Sprintf("o%d", i), bytes.Repeat([]byte{byte(i)}, 4096)); err != nil {
			t.Fatal(err)
		}
	}
	waitClean(ctx, t, cl, p.ID())
	primaries := map[int32]bool{}
	before := map[osdmap.PGID]time.Time{}
	for seed := range 8 {
		pgid := osdmap.PGID{Pool: p.ID(), Seed: uint32(seed)}
		mp, err := cl.Map().MapPG(pgid)
		if err != nil {
			t.Fatal(err)
		}
		primaries[mp.ActingPrimary] = true
		before[pgid] = pgStats(ctx, t, cl, pgid).LastDeepScrub
	}
	if len(primaries) < 2 {
		t.Fatalf("the 8 pgs have %d primaries: no contention to test", len(primaries))
	}
	for pgid := range before {
		if _, err := cl.PGCommand(ctx, pgid.String(), "deep-scrub"); err != nil {
			t.Fatal(err)
		}
	}
	for pgid, at := range before {
		var st osdop.PGStats
		eventually(ctx, t, func() bool { st = pgStats(ctx, t, cl, pgid); return st.LastDeepScrub.After(at) },
			func() string { return fmt.Sprintf("deep scrub of %s never ran", pgid) })
		if st.ScrubErrors != 0 {
			t.Fatalf("%s: %d scrub errors", pgid, st.ScrubErrors)
		}
	}
}

// TestScrubECParity: on a 2+2 pool, one shard of an object is rewritten
// with wrong bytes through its OSD's store (so its block checksums are
// valid and a light scrub sees nothing); a deep scrub checks the parity,
// names that shard (ec_hash_error), repair rebuilds it from the others,
// and the object reads back whole.
func TestScrubECParity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := startCluster(t, 4)
	cl := c.Client(ctx)
	monDo(ctx, t, cl, "osd erasure-code-profile set", "name", "ec22", "args", "k=2 m=2 stripe_unit=4096 crush-failure-domain=osd")
	monDo(ctx, t, cl, "pool create", "name", "ec22", "type", "erasure", "erasure_code_profile", "ec22", "pg_num", "1")
	p, err := cl.Pool(ctx, "ec22")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	want := map[string][]byte{}
	for i := range 10 {
		oid := fmt.Sprintf("e%02d", i)
		want[oid] = randBytes(r, 30000+i)
		if err := p.WriteFull(ctx, oid, want[oid]); err != nil {
			t.Fatal(err)
		}
	}
	pgid := osdmap.PGID{Pool: p.ID(), Seed: 0}
	waitClean(ctx, t, cl, p.ID())
	mp, err := cl.Map().MapPG(pgid)
	if err != nil {
		t.Fatal(err)
	}
	coll := objectstore.Coll(pgid.String())
	for _, victim := range []int{1, 3} { // a data shard, then a parity shard
		osd := mp.Acting[victim]
		c.damage(osd, func(tx *objectstore.Transaction) { tx.Write(coll, "e05", 100, []byte("written wrong")) })
		if got := scrubPG(ctx, t, cl, pgid, "scrub"); len(got.Inconsistents) != 0 {
			t.Fatalf("a light scrub found %+v: it compares no bytes", got.Inconsistents)
		}
		wantErr := map[string][]string{"e05": {fmt.Sprintf("osd.%d:ec_hash_error", osd)}}
		if got := errorsByObject(scrubPG(ctx, t, cl, pgid, "deep-scrub")); fmt.Sprint(got) != fmt.Sprint(wantErr) {
			t.Fatalf("shard %d written wrong on osd.%d: deep scrub found %v, want %v", victim, osd, got, wantErr)
		}
		scrubPG(ctx, t, cl, pgid, "repair")
		if got := scrubPG(ctx, t, cl, pgid, "deep-scrub"); len(got.Inconsistents) != 0 {
			t.Fatalf("deep scrub after repair: %+v", got.Inconsistents)
		}
	}
	verifyModel(ctx, t, p, want, "after repair")
}

// TestScrubAutoRepair: with osd_scrub_auto_repair a deep scrub that finds
// a damaged copy repairs it on its own (at most
// osd_scrub_auto_repair_num_errors errors): the PG ends clean and every
// copy holds the client's bytes, with no repair asked for.
func TestScrubAutoRepair(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, cl := scrubCluster(ctx, t, "osd_scrub_auto_repair = true\n")
	p, pgid, acting := onePGPool(ctx, t, cl)
	data := bytes.Repeat([]byte("auto repair "), 1000)
	for i := range 10 {
		if err := p.WriteFull(ctx, fmt.Sprintf("obj%d", i), data); err != nil {
			t.Fatal(err)
		}
	}
	replica := acting[1]
	coll := objectstore.Coll(pgid.String())
	bad := slices.Clone(data)
	bad[100] ^= 0xff
	c.damage(replica, func(tx *objectstore.Transaction) { tx.Write(coll, "obj4", 0, bad) })
	before := pgStats(ctx, t, cl, pgid)
	if _, err := cl.PGCommand(ctx, pgid.String(), "deep-scrub"); err != nil {
		t.Fatal(err)
	}
	// the deep scrub, then the repair it starts, then a clean PG
	var st osdop.PGStats
	eventually(ctx, t, func() bool {
		st = pgStats(ctx, t, cl, pgid)
		return st.LastDeepScrub.After(before.LastDeepScrub) && st.State == "active+clean" && st.ScrubErrors == 0
	}, func() string { return fmt.Sprintf("not repaired on its own: %+v", st) })
	got, err := c.Stores[replica].Read(coll, "obj4", 0, 0)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("osd.%d obj4 after the automatic repair: %v (equal %v)", replica, err, bytes.Equal(got, data))
	}
}

// TestScrubClones: a deep scrub compares snapshot clones too — one whose
// bytes changed on a replica and one a replica lost are found — and
// repair rewrites them with their heads, after which every copy of each
// clone holds what the head held at the snap.
func TestScrubClones(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, cl := scrubCluster(ctx, t, "")
	p, pgid, acting := onePGPool(ctx, t, cl)
	before := map[string][]byte{}
	for i := range 4 {
		oid := fmt.Sprintf("obj%02d", i)
		before[oid] = bytes.Repeat([]byte{byte(i + 1)}, 100<<10)
		if err := p.WriteFull(ctx, oid, before[oid]); err != nil {
			t.Fatal(err)
		}
	}
	id, err := p.SelfManagedSnapCreate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := p.WithSnapContext(id, []uint64{id})
	for oid := range before {
		if err := w.Write(ctx, oid, []byte("after the snap"), 4096); err != nil {
			t.Fatal(err)
		}
	}
	coll := objectstore.Coll(pgid.String())
	c1, c2 := opexec.CloneOID("obj01", id), opexec.CloneOID("obj02", id)
	flipped := slices.Clone(before["obj01"])
	flipped[5000] ^= 0xff
	c.damage(acting[1], func(tx *objectstore.Transaction) { tx.Write(coll, c1, 0, flipped) })
	c.damage(acting[2], func(tx *objectstore.Transaction) { tx.Remove(coll, c2) })
	want := map[string][]string{
		c1: {fmt.Sprintf("osd.%d:data_digest_mismatch", acting[1])},
		c2: {fmt.Sprintf("osd.%d:missing", acting[2])},
	}
	if got := errorsByObject(scrubPG(ctx, t, cl, pgid, "deep-scrub")); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("deep scrub found %v, want %v", got, want)
	}
	scrubPG(ctx, t, cl, pgid, "repair")
	if got := scrubPG(ctx, t, cl, pgid, "deep-scrub"); len(got.Inconsistents) != 0 {
		t.Fatalf("deep scrub after repair: %+v", got.Inconsistents)
	}
	for _, o := range acting {
		for oid, b := range before {
			got, err := c.Stores[o].Read(coll, opexec.CloneOID(oid, id), 0, 0)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("osd.%d: clone of %s after repair: %v (%d bytes)", o, oid, err, len(got))
			}
		}
	}
	if got, err := p.AtSnap(id).Read(ctx, "obj02", 0, 0); err != nil || !bytes.Equal(got, before["obj02"]) {
		t.Fatalf("obj02 at the snap after repair: %v", err)
	}
}
