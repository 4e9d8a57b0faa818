package mon_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

func newState(t *testing.T) *mon.State {
	t.Helper()
	c, err := crush.Simple(crush.SimpleSpec{}) // a new cluster: an empty root and the default rules
	if err != nil {
		t.Fatal(err)
	}
	s, err := mon.NewState("fsid", c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func commit(t *testing.T, s *mon.State, c mon.Command) {
	t.Helper()
	if _, _, err := s.Commit(c); err != nil {
		t.Fatalf("%T: %v", c, err)
	}
}

func f(b bool) *bool { return &b }

// script is a short cluster life: three OSDs boot on three hosts, a pool
// is made with configured defaults, one OSD goes down, out, and away.
func script(t *testing.T, s *mon.State) {
	for i, h := range []string{"a", "b", "c"} {
		commit(t, s, mon.OSDBoot{ID: -1, Host: h, Addr: "127.0.0.1:680" + string(rune('0'+i)), SizeBytes: 1 << 40})
	}
	commit(t, s, mon.ConfigSet{Who: "global", Option: "osd pool default pg num", Value: "16"})
	commit(t, s, mon.PoolCreate{Name: "data"})
	commit(t, s, mon.OSDMark{IDs: []int32{2}, Up: f(false)})
	commit(t, s, mon.OSDMark{IDs: []int32{2}, In: f(false)})
	commit(t, s, mon.OSDRemove{ID: 2})
}

func TestClusterLife(t *testing.T) {
	s := newState(t)
	for i, h := range []string{"a", "b", "c"} {
		commit(t, s, mon.OSDBoot{ID: -1, Host: h, Addr: "127.0.0.1:680" + string(rune('0'+i)), SizeBytes: 1 << 40})
	}
	m := s.Map
	if m.MaxOSD() != 3 || m.Epoch != 4 {
		t.Fatalf("max_osd %d epoch %d after three boots", m.MaxOSD(), m.Epoch)
	}
	for id := int32(0); id < 3; id++ {
		o := m.OSDs[id]
		if !o.Exists || !o.Up || !o.In() || o.Addr == "" {
			t.Fatalf("osd.%d: %+v", id, o)
		}
		host, _ := m.Crush.ItemID([]string{"a", "b", "c"}[id])
		if b := m.Crush.Bucket(host); b == nil || len(b.Items) != 1 || b.Items[0] != id || b.ItemWeights[0] != crush.WeightOne {
			t.Fatalf("osd.%d not under its host at weight 1.0 (1 TiB): %+v", id, b)
		}
	}
	commit(t, s, mon.ConfigSet{Who: "global", Option: "osd_pool_default_pg_num", Value: "16"})
	commit(t, s, mon.PoolCreate{Name: "data"})
	p, err := s.Map.PoolByName("data")
	if err != nil || p.Size != 3 || p.MinSize != 2 || p.PGNum != 16 || p.PGPNum != 16 || p.CrushRule != 0 {
		t.Fatalf("pool: %+v %v", p, err)
	}
	// every PG on three OSDs of three different hosts
	for seed := uint32(0); seed < p.PGNum; seed++ {
		mp, _ := s.Map.MapPG(osdmap.PGID{Pool: p.ID, Seed: seed})
		if len(mp.Acting) != 3 || mp.Acting[0] == mp.Acting[1] || mp.Acting[1] == mp.Acting[2] || mp.Acting[0] == mp.Acting[2] {
			t.Fatalf("pg %d: acting %v", seed, mp.Acting)
		}
	}
	if _, _, err := s.Commit(mon.PoolCreate{Name: "data"}); !errors.Is(err, mon.ErrExists) {
		t.Fatalf("second pool 'data': %v", err)
	}
	if _, _, err := s.Commit(mon.PoolSet{Name: "data", Key: "pg_num", Value: "0"}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("pg_num 0: %v", err)
	}
	if _, _, err := s.Commit(mon.PoolSet{Name: "data", Key: "min_size", Value: "5"}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("min_size above size: %v", err)
	}
	commit(t, s, mon.PoolSet{Name: "data", Key: "size", Value: "2"})
	if p, _ := s.Map.PoolByName("data"); p.Size != 2 || p.MinSize != 2 {
		t.Fatalf("after size 2: %+v", p)
	}
	// an OSD that is up cannot be removed; down and out it can
	if _, _, err := s.Commit(mon.OSDRemove{ID: 2}); !errors.Is(err, mon.ErrBusy) {
		t.Fatalf("remove an up OSD: %v", err)
	}
	commit(t, s, mon.OSDMark{IDs: []int32{2}, Up: f(false)})
	commit(t, s, mon.OSDMark{IDs: []int32{2}, In: f(false)})
	commit(t, s, mon.OSDRemove{ID: 2})
	if s.Map.OSDs[2].Exists || s.Map.Crush.Device(2) != nil {
		t.Fatal("osd.2 still in the map or CRUSH")
	}
	// the next new OSD reuses the free id; a returning OSD keeps its out
	commit(t, s, mon.OSDBoot{ID: -1, Host: "d", Addr: "127.0.0.1:6810", SizeBytes: 2 << 40})
	if !s.Map.OSDs[2].Exists {
		t.Fatal("new OSD did not take the free id 2")
	}
	commit(t, s, mon.OSDMark{IDs: []int32{1}, In: f(false)})
	commit(t, s, mon.OSDBoot{ID: 1, Host: "b", Addr: "127.0.0.1:6820"})
	if o := s.Map.OSDs[1]; o.In() || o.Addr != "127.0.0.1:6820" || !o.Up {
		t.Fatalf("rebooted osd.1 (marked out): %+v", o)
	}
	commit(t, s, mon.CrushReweight{Name: "osd.0", Weight: 2})
	host, _ := s.Map.Crush.ItemID("a")
	if w := s.Map.Crush.Bucket(host).ItemWeights[0]; w != 2*crush.WeightOne {
		t.Fatalf("reweighted osd.0: %#x", w)
	}
	if _, _, err := s.Commit(mon.OSDMark{IDs: []int32{0}, Up: f(true)}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("mark up: %v", err)
	}
}

func TestConfigDatabase(t *testing.T) {
	s := newState(t)
	commit(t, s, mon.ConfigSet{Who: "osd", Option: "osd heartbeat grace", Value: "30"})
	commit(t, s, mon.ConfigSet{Who: "osd.1", Option: "osd_heartbeat_grace", Value: "45"})
	if g := s.ConfigFor("osd.1").Seconds("osd_heartbeat_grace"); g != 45 {
		t.Fatalf("osd.1 grace %v", g)
	}
	if g := s.ConfigFor("osd.2").Seconds("osd_heartbeat_grace"); g != 30 {
		t.Fatalf("osd.2 grace %v", g)
	}
	commit(t, s, mon.ConfigRm{Who: "osd.1", Option: "osd heartbeat grace"})
	if g := s.ConfigFor("osd.1").Seconds("osd_heartbeat_grace"); g != 30 {
		t.Fatalf("after rm: %v", g)
	}
	if _, _, err := s.Commit(mon.ConfigSet{Who: "osd", Option: "osd_heartbeat_grac", Value: "1"}); !errors.Is(err, config.ErrUnknown) {
		t.Fatalf("unknown option: %v", err)
	}
	if _, _, err := s.Commit(mon.ConfigSet{Who: "nobody", Option: "fsid", Value: "1"}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("bad who: %v", err)
	}
	if _, _, err := s.Commit(mon.ConfigSet{Who: "global", Option: "osd_pool_default_size", Value: "99"}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("out of range: %v", err)
	}
}

// Two MONs applying the same commands hold byte-identical maps.
func TestDeterministic(t *testing.T) {
	a, b := newState(t), newState(t)
	script(t, a)
	script(t, b)
	if !bytes.Equal(a.Map.Encode(), b.Map.Encode()) {
		t.Fatal("same commands, different maps")
	}
}

func TestAuthCommands(t *testing.T) {
	s := newState(t)
	key := "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" // 32 bytes
	for _, bad := range []mon.AuthAdd{{Entity: "bob", Key: key}, {Entity: "user.bob", Key: key}, {Entity: "client.bob", Key: "short"},
		{Entity: "client.bob", Key: key, Caps: map[string]string{"osd": "allow q"}}, {Entity: "client.bob", Key: key, Caps: map[string]string{"mds": "allow *"}}} {
		if _, _, err := s.Commit(bad); !errors.Is(err, mon.ErrInvalid) {
			t.Fatalf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
	if len(s.Auth) != 0 {
		t.Fatalf("refused adds changed the database: %v", s.Auth)
	}
	commit(t, s, mon.AuthAdd{Entity: "client.bob", Key: key})
	if e := s.Auth["client.bob"]; e.Key != key || e.Caps == nil || len(e.Caps) != 0 {
		t.Fatalf("auth db: %v", s.Auth)
	}
	osdCaps := map[string]string{"mon": "allow r", "osd": "allow rw pool=a"}
	commit(t, s, mon.AuthCaps{Entity: "client.bob", Caps: osdCaps})
	if e := s.Auth["client.bob"]; e.Key != key || !reflect.DeepEqual(e.Caps, osdCaps) {
		t.Fatalf("after auth caps: %v", s.Auth)
	}
	if _, _, err := s.Commit(mon.AuthCaps{Entity: "client.bob", Caps: map[string]string{"osd": "allow pool=a"}}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("bad caps: %v", err)
	}
	if _, _, err := s.Commit(mon.AuthCaps{Entity: "client.nobody", Caps: osdCaps}); !errors.Is(err, mon.ErrNotFound) {
		t.Fatalf("caps of a missing entity: %v", err)
	}
	if !reflect.DeepEqual(s.Auth["client.bob"].Caps, osdCaps) {
		t.Fatalf("refused caps changed the entry: %v", s.Auth)
	}
	commit(t, s, mon.AuthRm{Entity: "client.bob"})
	if _, _, err := s.Commit(mon.AuthRm{Entity: "client.bob"}); !errors.Is(err, mon.ErrNotFound) {
		t.Fatalf("second rm: %v", err)
	}
}

func TestErasurePools(t *testing.T) {
	s := newState(t)
	if _, _, err := s.Commit(mon.ECProfileSet{Name: "bad", Args: []string{"k=1"}}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("k=1: %v", err)
	}
	commit(t, s, mon.ECProfileSet{Name: "p42", Args: []string{"k=4", "m=2", "crush-failure-domain=osd"}})
	if _, _, err := s.Commit(mon.ECProfileSet{Name: "p42", Args: []string{"k=2", "m=1"}}); !errors.Is(err, mon.ErrExists) {
		t.Fatalf("redefining without force: %v", err)
	}
	commit(t, s, mon.PoolCreate{Name: "ec", Erasure: true, ECProfile: "p42", PGNum: 8})
	p, err := s.Map.PoolByName("ec")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Map.Crush.RuleByName("ec")
	if p.Size != 6 || p.MinSize != 5 || p.Type != osdmap.PoolErasure || r == nil || p.CrushRule != int(r.ID) || r.Type != uint8(osdmap.PoolErasure) {
		t.Fatalf("ec pool %+v, rule %+v", p, r)
	}
	if _, _, err := s.Commit(mon.ECProfileRm{Name: "p42"}); !errors.Is(err, mon.ErrBusy) {
		t.Fatalf("rm of a profile in use: %v", err)
	}
	if _, _, err := s.Commit(mon.ECProfileSet{Name: "p42", Args: []string{"k=2", "m=1"}, Force: true}); !errors.Is(err, mon.ErrBusy) {
		t.Fatalf("forced redefinition of a profile in use: %v", err)
	}
	if _, _, err := s.Commit(mon.PoolCreate{Name: "ec2", Erasure: true, ECProfile: "nope"}); !errors.Is(err, mon.ErrNotFound) {
		t.Fatalf("unknown profile: %v", err)
	}
	if _, _, err := s.Commit(mon.PoolCreate{Name: "ec3", Erasure: true, Size: 3}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("size other than k+m: %v", err)
	}
	if _, _, err := s.Commit(mon.PoolSet{Name: "ec", Key: "size", Value: "5"}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("size of an erasure-coded pool changed: %v", err)
	}
	// min_size k+min(1, m-1), as Ceph's OSDMonitor: 2+1 serves with a shard down
	commit(t, s, mon.ECProfileSet{Name: "p21", Args: []string{"k=2", "m=1", "crush-failure-domain=osd"}})
	commit(t, s, mon.PoolCreate{Name: "ec21", Erasure: true, ECProfile: "p21"})
	if p, _ := s.Map.PoolByName("ec21"); p.Size != 3 || p.MinSize != 2 {
		t.Fatalf("2+1 pool: size %d min_size %d, want 3 and 2", p.Size, p.MinSize)
	}
	commit(t, s, mon.PoolCreate{Name: "ecdef", Erasure: true}) // the default profile: 2+2
	if p, _ := s.Map.PoolByName("ecdef"); p.Size != 4 || p.MinSize != 3 || p.ECProfile != "default" {
		t.Fatalf("default profile pool: %+v", p)
	}
	commit(t, s, mon.PoolDelete{Name: "ec"})
	commit(t, s, mon.ECProfileRm{Name: "p42"})
}

// TestDeviceClassRule: OSDs that boot with a device class land in that
// class's shadow tree, and a pool moved to a class rule (`pool set
// crush_rule`) maps only onto them — the index-pool-on-fast-devices setup.
func TestDeviceClassRule(t *testing.T) {
	s := newState(t)
	classes := []string{"hdd", "ssd", "hdd", "ssd", "ssd"}
	for i, c := range classes {
		commit(t, s, mon.OSDBoot{ID: -1, Host: string(rune('a' + i)), Addr: "127.0.0.1:680" + string(rune('0'+i)), SizeBytes: 1 << 40, Class: c})
	}
	commit(t, s, mon.ConfigSet{Who: "global", Option: "osd_pool_default_pg_num", Value: "32"})
	commit(t, s, mon.PoolCreate{Name: "index"})
	commit(t, s, mon.CrushRuleCreate{Name: "fast", Root: "default", FailureDomain: "host", Class: "ssd"})
	if _, _, err := s.Commit(mon.PoolSet{Name: "index", Key: "crush_rule", Value: "nosuchrule"}); !errors.Is(err, mon.ErrNotFound) {
		t.Fatalf("unknown rule: %v", err)
	}
	commit(t, s, mon.PoolSet{Name: "index", Key: "crush_rule", Value: "fast"})
	p, _ := s.Map.PoolByName("index")
	if r := s.Map.Crush.RuleByName("fast"); r == nil || p.CrushRule != int(r.ID) {
		t.Fatalf("pool rule %d, rule %+v", p.CrushRule, r)
	}
	for seed := uint32(0); seed < p.PGNum; seed++ {
		mp, _ := s.Map.MapPG(osdmap.PGID{Pool: p.ID, Seed: seed})
		if len(mp.Acting) != 3 {
			t.Fatalf("pg %d: acting %v, want the 3 ssd OSDs", seed, mp.Acting)
		}
		for _, o := range mp.Acting {
			if classes[o] != "ssd" {
				t.Fatalf("pg %d: acting %v includes osd.%d of class %s", seed, mp.Acting, o, classes[o])
			}
		}
	}
}

// Cluster flags change what boots and marks do, as Ceph's: noup keeps a
// booting OSD down, noin keeps new and auto-out OSDs out, an auto-out OSD
// returns in when it boots but an operator's out stays, and the MONs'
// auto-out skips OSDs that came back or with noout set.
func TestOSDFlags(t *testing.T) {
	s := newState(t)
	boot := func(id int32, host string) error {
		_, _, err := s.Commit(mon.OSDBoot{ID: id, Host: host, Addr: "127.0.0.1:68" + host, SizeBytes: 1 << 40})
		return err
	}
	flag := func(name string, on bool) {
		t.Helper()
		fl, err := osdmap.ParseFlag(name)
		if err != nil {
			t.Fatal(err)
		}
		commit(t, s, mon.OSDFlag{Flags: fl, On: on})
	}
	for i, h := range []string{"00", "01", "02"} {
		if err := boot(int32(i), h); err != nil {
			t.Fatal(err)
		}
	}
	flag("noup", true)
	commit(t, s, mon.OSDMark{IDs: []int32{0}, Up: f(false)})
	if err := boot(0, "00"); !errors.Is(err, mon.ErrBusy) || s.Map.OSDs[0].Up {
		t.Fatalf("boot with noup: %v, up %v", err, s.Map.OSDs[0].Up)
	}
	flag("noup", false)
	if err := boot(0, "00"); err != nil || !s.Map.OSDs[0].Up {
		t.Fatalf("boot after noup cleared: %v", err)
	}

	// auto-out: only a down, in OSD; not with noout; marked in at boot
	auto := mon.OSDMark{IDs: []int32{1}, In: f(false), Auto: true}
	commit(t, s, auto)
	if !s.Map.OSDs[1].In() {
		t.Fatal("auto-out marked an up OSD out")
	}
	commit(t, s, mon.OSDMark{IDs: []int32{1}, Up: f(false)})
	flag("noout", true)
	commit(t, s, auto)
	if !s.Map.OSDs[1].In() {
		t.Fatal("auto-out ignored noout")
	}
	flag("noout", false)
	commit(t, s, auto)
	if o := s.Map.OSDs[1]; o.In() || !o.AutoOut {
		t.Fatalf("auto-out: in %v auto %v", o.In(), o.AutoOut)
	}
	flag("noin", true)
	if err := boot(1, "01"); err != nil || s.Map.OSDs[1].In() || !s.Map.OSDs[1].Up {
		t.Fatalf("auto-out OSD booting with noin: %v, in %v", err, s.Map.OSDs[1].In())
	}
	if err := boot(-1, "03"); err != nil || s.Map.OSDs[3].In() {
		t.Fatalf("new OSD booting with noin: %v, in %v", err, s.Map.OSDs[3].In())
	}
	flag("noin", false)
	commit(t, s, mon.OSDMark{IDs: []int32{1}, Up: f(false)})
	if err := boot(1, "01"); err != nil || !s.Map.OSDs[1].In() || s.Map.OSDs[1].AutoOut {
		t.Fatalf("auto-out OSD booting: %v, in %v auto %v", err, s.Map.OSDs[1].In(), s.Map.OSDs[1].AutoOut)
	}
	// an operator's out survives a restart
	commit(t, s, mon.OSDMark{IDs: []int32{2}, Up: f(false), In: f(false)})
	if err := boot(2, "02"); err != nil || s.Map.OSDs[2].In() {
		t.Fatalf("operator-out OSD booting: %v, in %v", err, s.Map.OSDs[2].In())
	}
	// fill levels: reported by the current instance only
	commit(t, s, mon.OSDFullness{ID: 0, Addr: "127.0.0.1:6899", Level: osdmap.Full})
	if s.Map.OSDs[0].Fullness != osdmap.NotFull {
		t.Fatal("a stale instance's fill level was recorded")
	}
	commit(t, s, mon.OSDFullness{ID: 0, Addr: s.Map.OSDs[0].Addr, Level: osdmap.NearFull})
	if s.Map.OSDs[0].Fullness != osdmap.NearFull {
		t.Fatalf("fill level %v, want nearfull", s.Map.OSDs[0].Fullness)
	}
	// lost: only a down OSD; booting clears it
	if _, _, err := s.Commit(mon.OSDLost{ID: 0}); !errors.Is(err, mon.ErrBusy) {
		t.Fatalf("lost while up: %v", err)
	}
	commit(t, s, mon.OSDMark{IDs: []int32{0}, Up: f(false)})
	commit(t, s, mon.OSDLost{ID: 0})
	if !s.Map.OSDs[0].Lost {
		t.Fatal("osd.0 not lost")
	}
	if err := boot(0, "00"); err != nil || s.Map.OSDs[0].Lost {
		t.Fatalf("boot of a lost OSD: %v, lost %v", err, s.Map.OSDs[0].Lost)
	}
	flag("pause", true)
	if got := s.Map.Flags.String(); got != "pauserd,pausewr" {
		t.Fatalf("flags after pause: %q", got)
	}
	if _, err := osdmap.ParseFlag("nosuch"); err == nil {
		t.Fatal("unknown flag accepted")
	}
}

// bootFour boots osd.0–3, each on a host of its own.
func bootFour(t *testing.T, s *mon.State) {
	t.Helper()
	for i := range 4 {
		commit(t, s, mon.OSDBoot{ID: -1, Host: "h" + string(rune('0'+i)), Addr: "127.0.0.1:680" + string(rune('0'+i)), SizeBytes: 1 << 40})
	}
}

// outsideUp maps pg, whose pool has size 3 on bootFour's OSDs, and
// returns its mapping and the one OSD outside its up set.
func outsideUp(t *testing.T, s *mon.State, pg osdmap.PGID) (osdmap.Mapping, int32) {
	t.Helper()
	mp, err := s.Map.MapPG(pg)
	if err != nil || len(mp.Up) != 3 {
		t.Fatalf("up %v: %v", mp.Up, err)
	}
	for o := range int32(4) {
		if !slices.Contains(mp.Up, o) {
			return mp, o
		}
	}
	t.Fatalf("up %v holds every OSD", mp.Up)
	return mp, -1
}

// TestPGTemp: a PG's primary sets a temporary acting set and clears it;
// entries that no longer serve — equal to the up set, every OSD down, the
// pool gone — are dropped by the MONs in the same epoch.
func TestPGTemp(t *testing.T) {
	s := newState(t)
	bootFour(t, s)
	commit(t, s, mon.ConfigSet{Who: "global", Option: "osd pool default pg num", Value: "8"})
	commit(t, s, mon.PoolCreate{Name: "data", Size: 3})
	p, err := s.Map.PoolByName("data")
	if err != nil {
		t.Fatal(err)
	}
	pg := osdmap.PGID{Pool: p.ID, Seed: 3}
	// the OSD outside the up set, with two of it: another acting set
	mp, other := outsideUp(t, s, pg)
	temp := []int32{other, mp.Up[1], mp.Up[2]}
	epoch := s.Map.Epoch
	commit(t, s, mon.PGTemp{Sets: map[osdmap.PGID][]int32{pg: temp, {Pool: p.ID, Seed: 99}: temp, {Pool: 42, Seed: 0}: temp}})
	got, _ := s.Map.MapPG(pg)
	if s.Map.Epoch != epoch+1 || !slices.Equal(got.Acting, temp) || got.ActingPrimary != other || !slices.Equal(got.Up, mp.Up) {
		t.Fatalf("epoch %d→%d: up %v acting %v primary %d, want acting %v", epoch, s.Map.Epoch, got.Up, got.Acting, got.ActingPrimary, temp)
	}
	if len(s.Map.PGTemp) != 1 {
		t.Fatalf("stale entries kept: %v", s.Map.PGTemp)
	}
	// asking again changes nothing; asking for the up set clears it
	if inc, _, err := s.Commit(mon.PGTemp{Sets: map[osdmap.PGID][]int32{pg: temp}}); err != nil || inc != nil {
		t.Fatalf("same pg_temp again: %v, %v", inc, err)
	}
	commit(t, s, mon.PGTemp{Sets: map[osdmap.PGID][]int32{pg: mp.Up}})
	if len(s.Map.PGTemp) != 0 {
		t.Fatalf("pg_temp equal to the up set kept: %v", s.Map.PGTemp)
	}
	// every OSD of it down: dropped in that epoch, so that it does not
	// come back as the acting set when they boot
	commit(t, s, mon.PGTemp{Sets: map[osdmap.PGID][]int32{pg: {other}}})
	if got, _ := s.Map.MapPG(pg); !slices.Equal(got.Acting, []int32{other}) {
		t.Fatalf("acting %v, want [%d]", got.Acting, other)
	}
	commit(t, s, mon.OSDMark{IDs: []int32{other}, Up: f(false)})
	if len(s.Map.PGTemp) != 0 {
		t.Fatalf("pg_temp of down OSDs kept: %v", s.Map.PGTemp)
	}
	// and with the pool
	commit(t, s, mon.PGTemp{Sets: map[osdmap.PGID][]int32{pg: {mp.Up[1], mp.Up[0]}}})
	if len(s.Map.PGTemp) != 1 {
		t.Fatalf("pg_temp not set: %v", s.Map.PGTemp)
	}
	commit(t, s, mon.PoolDelete{Name: "data"})
	if len(s.Map.PGTemp) != 0 {
		t.Fatalf("pg_temp of a deleted pool kept: %v", s.Map.PGTemp)
	}
	if _, err := mon.Translate(monc.Command{Prefix: "osd pg-temp", Args: map[string]string{"pgs": "1.x=1"}}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("bad pgid: %v", err)
	}
	sets := map[osdmap.PGID][]int32{{Pool: 1, Seed: 0x1f}: {2, 0}, {Pool: 1, Seed: 2}: nil}
	if cmd, err := mon.Translate(monc.Command{Prefix: "osd pg-temp", Args: map[string]string{"pgs": monc.FormatPGTemps(sets)}}); err != nil || !reflect.DeepEqual(cmd, mon.PGTemp{Sets: sets}) {
		t.Fatalf("round trip of %v: %v, %v", sets, cmd, err)
	}
}

// TestPGTempErasure: an erasure-coded PG's pg_temp is positional and may
// hold empty positions (osdmap.NoOSD), which a replicated PG's may not.
func TestPGTempErasure(t *testing.T) {
	s := newState(t)
	bootFour(t, s)
	commit(t, s, mon.ECProfileSet{Name: "p21", Args: []string{"k=2", "m=1", "crush-failure-domain=osd"}})
	commit(t, s, mon.PoolCreate{Name: "ec", Erasure: true, ECProfile: "p21", PGNum: 8})
	commit(t, s, mon.PoolCreate{Name: "rep", Size: 2, PGNum: 8})
	ecp, _ := s.Map.PoolByName("ec")
	rep, _ := s.Map.PoolByName("rep")
	pg := osdmap.PGID{Pool: ecp.ID, Seed: 2}
	mp, other := outsideUp(t, s, pg)
	temp := []int32{mp.Up[0], osdmap.NoOSD, other}
	commit(t, s, mon.PGTemp{Sets: map[osdmap.PGID][]int32{pg: temp}})
	if got, _ := s.Map.MapPG(pg); !slices.Equal(got.Acting, temp) || !slices.Equal(got.Up, mp.Up) {
		t.Fatalf("up %v acting %v, want acting %v", got.Up, got.Acting, temp)
	}
	epoch := s.Map.Epoch
	if inc, _, err := s.Commit(mon.PGTemp{Sets: map[osdmap.PGID][]int32{{Pool: rep.ID, Seed: 1}: {0, osdmap.NoOSD}}}); err != nil || inc != nil || s.Map.Epoch != epoch {
		t.Fatalf("a replicated pg_temp with a hole: %v, %v", inc, err)
	}
	if inc, _, err := s.Commit(mon.PGTemp{Sets: map[osdmap.PGID][]int32{{Pool: ecp.ID, Seed: 1}: {0, 1}}}); err != nil || inc != nil || s.Map.Epoch != epoch {
		t.Fatalf("an erasure-coded pg_temp without every position: %v, %v", inc, err)
	}
	sets := map[osdmap.PGID][]int32{pg: temp}
	if cmd, err := mon.Translate(monc.Command{Prefix: "osd pg-temp", Args: map[string]string{"pgs": monc.FormatPGTemps(sets)}}); err != nil || !reflect.DeepEqual(cmd, mon.PGTemp{Sets: sets}) {
		t.Fatalf("round trip of %v: %v, %v", sets, cmd, err)
	}
}

// TestPGHistory: the acting set recorded last replaces those of earlier
// intervals; a late record of an earlier interval is ignored; an interval
// recorded recovering counts as moving until recorded again without;
// deleting the pool forgets them.
func TestPGHistory(t *testing.T) {
	s := newState(t)
	for i := range 3 {
		commit(t, s, mon.OSDBoot{ID: -1, Host: "h" + string(rune('0'+i)), Addr: "127.0.0.1:680" + string(rune('0'+i)), SizeBytes: 1 << 40})
	}
	commit(t, s, mon.PoolCreate{Name: "data", Size: 2})
	p, _ := s.Map.PoolByName("data")
	pg := osdmap.PGID{Pool: p.ID, Seed: 1}
	rec := func(text string) {
		t.Helper()
		args := map[string]string{"entries": text}
		if e, ok := strings.CutSuffix(text, " recovering"); ok {
			args = map[string]string{"entries": e, "recovering": "0"}
		}
		cmd, err := mon.Translate(monc.Command{Prefix: "pg history", Args: args})
		if err != nil {
			t.Fatal(err)
		}
		epoch := s.Map.Epoch
		commit(t, s, cmd)
		if s.Map.Epoch != epoch {
			t.Fatalf("pg history changed the map: epoch %d → %d", epoch, s.Map.Epoch)
		}
	}
	acting := func() [][]int32 {
		var out [][]int32
		for _, iv := range s.History(pg) {
			out = append(out, iv.Acting)
		}
		return out
	}
	rec(pg.String() + "@5:0,1 " + pg.String() + "@5:0,1")
	if got := acting(); !reflect.DeepEqual(got, [][]int32{{0, 1}}) {
		t.Fatalf("history %v", got)
	}
	rec(pg.String() + "@7:0 " + pg.String() + "@7:0,2")
	if got := acting(); !reflect.DeepEqual(got, [][]int32{{0}, {0, 2}}) {
		t.Fatalf("history %v", got)
	}
	rec(pg.String() + "@9:2,1")
	rec(pg.String() + "@8:1") // late: never served
	if got := acting(); !reflect.DeepEqual(got, [][]int32{{2, 1}}) {
		t.Fatalf("history after a late record %v", got)
	}
	// recovering: the same interval recorded again flips the mark, a late
	// record of an earlier one does not
	recovering := func() bool { h := s.History(pg); return h[len(h)-1].Recovering }
	rec(pg.String() + "@9:2,1 recovering")
	if !recovering() || !reflect.DeepEqual(acting(), [][]int32{{2, 1}}) {
		t.Fatalf("history %v, recovering %v", acting(), recovering())
	}
	rec(pg.String() + "@8:2,1")
	if !recovering() {
		t.Fatal("a late record of an earlier interval ended the recovery")
	}
	rec(pg.String() + "@9:2,1")
	if recovering() || !reflect.DeepEqual(acting(), [][]int32{{2, 1}}) {
		t.Fatalf("after the recovery: history %v, recovering %v", acting(), recovering())
	}
	// on the PG's acting set now: moving while recovering, not after
	mp, _ := s.Map.MapPG(pg)
	now := fmt.Sprintf("%s@%d:%s", pg, max(s.Map.Epoch, 10), monc.FormatOSDIDs(mp.Acting)) // an interval after those above
	rec(now)
	settled, _, _ := s.MovingPGs()
	rec(now + " recovering")
	if moving, _, _ := s.MovingPGs(); moving != settled+1 {
		t.Fatalf("%d PGs moving while pg %s recovers, %d when it does not", moving, pg, settled)
	}
	rec(now)
	if moving, _, _ := s.MovingPGs(); moving != settled {
		t.Fatalf("%d PGs moving after pg %s recovered, want %d", moving, pg, settled)
	}
	if _, err := mon.Translate(monc.Command{Prefix: "pg history", Args: map[string]string{"entries": "1.1@x:0"}}); !errors.Is(err, mon.ErrInvalid) {
		t.Fatalf("bad epoch: %v", err)
	}
	commit(t, s, mon.PoolDelete{Name: "data"})
	if got := s.History(pg); len(got) != 0 {
		t.Fatalf("history of a deleted pool's pg: %v", got)
	}
}

// TestMarkDownTheReportedInstance: a markdown decided about one instance
// of an OSD (its address) leaves alone the instance that booted since —
// a failure report for a process that is gone raced its restart.
func TestMarkDownTheReportedInstance(t *testing.T) {
	s := newState(t)
	commit(t, s, mon.OSDBoot{ID: -1, Host: "a", Addr: "127.0.0.1:6800/1", SizeBytes: 1 << 40})
	commit(t, s, mon.OSDBoot{ID: 0, Host: "a", Addr: "127.0.0.1:6801/2", SizeBytes: 1 << 40}) // restarted
	if _, msg, err := s.Commit(mon.OSDMark{IDs: []int32{0}, Up: f(false), Addrs: []string{"127.0.0.1:6800/1"}}); err != nil || !s.Map.OSDs[0].Up {
		t.Fatalf("markdown of the old instance: %q, %v; up %v, want the new one left up", msg, err, s.Map.OSDs[0].Up)
	}
	commit(t, s, mon.OSDMark{IDs: []int32{0}, Up: f(false), Addrs: []string{"127.0.0.1:6801/2"}})
	if s.Map.OSDs[0].Up {
		t.Fatal("markdown of the current instance left it up")
	}
}

// TestUpFrom: booting records the epoch of the map that marks an OSD up
// (up_from) — a new one for a restart at a new address and for the same
// instance booting again after it was marked down — and a repeated boot
// of an instance that stayed up keeps it (no new interval for its PGs);
// marking down and out leave it.
func TestUpFrom(t *testing.T) {
	s := newState(t)
	commit(t, s, mon.OSDBoot{ID: -1, Host: "a", Addr: "127.0.0.1:6800/1", SizeBytes: 1 << 40})
	first := s.Map.Epoch
	if got := s.Map.OSDs[0].UpFrom; got != first {
		t.Fatalf("up_from after the first boot: %d, want %d", got, first)
	}
	commit(t, s, mon.OSDBoot{ID: 0, Host: "a", Addr: "127.0.0.1:6800/1"}) // the same instance, still up
	if got := s.Map.OSDs[0].UpFrom; got != first {
		t.Fatalf("up_from after a repeated boot of an up instance: %d, want %d", got, first)
	}
	commit(t, s, mon.OSDMark{IDs: []int32{0}, Up: f(false)})
	commit(t, s, mon.OSDMark{IDs: []int32{0}, In: f(false)})
	if got := s.Map.OSDs[0].UpFrom; got != first {
		t.Fatalf("up_from after down and out: %d, want %d", got, first)
	}
	commit(t, s, mon.OSDBoot{ID: 0, Host: "a", Addr: "127.0.0.1:6800/1"}) // the same instance, marked down while alive
	if got := s.Map.OSDs[0].UpFrom; got != s.Map.Epoch || got == first {
		t.Fatalf("up_from after booting again at the same address: %d, want %d", got, s.Map.Epoch)
	}
	again := s.Map.Epoch
	commit(t, s, mon.OSDBoot{ID: 0, Host: "a", Addr: "127.0.0.1:6801/2"}) // restarted while up
	if got := s.Map.OSDs[0].UpFrom; got != s.Map.Epoch || got == again {
		t.Fatalf("up_from after a restart at a new address: %d, want %d", got, s.Map.Epoch)
	}
}

// TestPositionalUpmap: when a reweight changes CRUSH's choice for
// erasure-coded PGs, the MONs give each a pg_upmap of CRUSH's OSDs with
// those that already held a position of it kept there (a PG whose OSDs
// CRUSH only reorders keeps its mapping: nothing moves), none for a
// replicated PG; an OSD down keeps them, one out gets a new order of
// CRUSH's new choice; reverting it all removes every entry.
func TestPositionalUpmap(t *testing.T) {
	s := newState(t)
	for i := range 6 {
		commit(t, s, mon.OSDBoot{ID: -1, Host: "h" + string(rune('0'+i)), Addr: "127.0.0.1:680" + string(rune('0'+i)), SizeBytes: 1 << 40})
	}
	commit(t, s, mon.ECProfileSet{Name: "p21", Args: []string{"k=2", "m=1"}})
	commit(t, s, mon.PoolCreate{Name: "ec", Erasure: true, ECProfile: "p21", PGNum: 64})
	commit(t, s, mon.PoolCreate{Name: "rep", Size: 3, PGNum: 64})
	ecp, _ := s.Map.PoolByName("ec")
	rep, _ := s.Map.PoolByName("rep")
	before, err := s.Map.PGMappings(ecp.ID)
	if err != nil || len(s.Map.PGUpmap) != 0 {
		t.Fatalf("pg_upmap %v before any reweight: %v", s.Map.PGUpmap, err)
	}
	commit(t, s, mon.CrushReweight{Name: "osd.2", Weight: 2})
	after, _ := s.Map.PGMappings(ecp.ID)
	crushOf, _ := s.Map.CrushOSDs(ecp.ID)
	reordered, swapped := 0, 0
	for seed, mp := range after {
		pg := osdmap.PGID{Pool: ecp.ID, Seed: uint32(seed)}
		old, chosen := before[seed].Acting, crushOf[seed]
		if !sameSet(mp.Up, chosen) {
			t.Fatalf("pg %s: up %v is not CRUSH's OSDs %v", pg, mp.Up, chosen)
		}
		moved := false
		for i, o := range old {
			if at := slices.Index(chosen, o); at >= 0 && at != i {
				moved = true
			}
			if slices.Contains(chosen, o) && mp.Up[i] != o {
				t.Fatalf("pg %s: osd.%d left position %d: acting %v, CRUSH %v, up %v", pg, o, i, old, chosen, mp.Up)
			}
		}
		_, has := s.Map.PGUpmap[pg]
		if has != !slices.Equal(mp.Up, chosen) || has != moved {
			t.Fatalf("pg %s: pg_upmap %v with acting %v, CRUSH %v", pg, s.Map.PGUpmap[pg], old, chosen)
		}
		if moved {
			reordered++
		}
		if moved && sameSet(old, chosen) {
			swapped++
			if !slices.Equal(mp.Up, old) {
				t.Fatalf("pg %s: CRUSH swapped %v to %v, up %v", pg, old, chosen, mp.Up)
			}
		}
	}
	if swapped == 0 {
		t.Fatal("the reweight swapped no PG's OSDs: the test proves nothing")
	}
	for pg := range s.Map.PGUpmap {
		if pg.Pool == rep.ID {
			t.Fatalf("pg_upmap for replicated pg %s", pg)
		}
	}
	t.Logf("%d of 64 PGs reordered by CRUSH (%d only swapped): pg_upmap %d", reordered, swapped, len(s.Map.PGUpmap))
	// down is not out: CRUSH's choice and the entries stay
	entries := maps.Clone(s.Map.PGUpmap)
	commit(t, s, mon.OSDMark{IDs: []int32{4}, Up: f(false)})
	if !reflect.DeepEqual(s.Map.PGUpmap, entries) {
		t.Fatalf("osd.4 down changed pg_upmap: %v → %v", entries, s.Map.PGUpmap)
	}
	// out: every entry is still CRUSH's OSDs, in another order
	commit(t, s, mon.OSDMark{IDs: []int32{4}, In: f(false)})
	crushOf, _ = s.Map.CrushOSDs(ecp.ID)
	for pg, u := range s.Map.PGUpmap {
		if !sameSet(u, crushOf[pg.Seed]) || slices.Equal(u, crushOf[pg.Seed]) || slices.Contains(u, 4) {
			t.Fatalf("osd.4 out: pg %s pg_upmap %v, CRUSH %v", pg, u, crushOf[pg.Seed])
		}
	}
	commit(t, s, mon.OSDBoot{ID: 4, Host: "h4", Addr: "127.0.0.1:6814", SizeBytes: 1 << 40})
	commit(t, s, mon.OSDMark{IDs: []int32{4}, In: f(true)}) // marked out by hand: stays out until marked in
	commit(t, s, mon.CrushReweight{Name: "osd.2", Weight: 1})
	if len(s.Map.PGUpmap) != 0 {
		t.Fatalf("pg_upmap kept after the weight went back: %v", s.Map.PGUpmap)
	}
	if back, _ := s.Map.PGMappings(ecp.ID); !reflect.DeepEqual(back, before) {
		t.Fatal("mappings differ after the weight went back")
	}
	// entries go with their pool
	commit(t, s, mon.CrushReweight{Name: "osd.2", Weight: 2})
	if len(s.Map.PGUpmap) == 0 {
		t.Fatal("no pg_upmap after the second reweight")
	}
	commit(t, s, mon.PoolDelete{Name: "ec"})
	if len(s.Map.PGUpmap) != 0 {
		t.Fatalf("pg_upmap of a deleted pool kept: %v", s.Map.PGUpmap)
	}
}

func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
