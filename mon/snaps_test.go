package mon_test

import (
	"errors"
	"testing"

	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
)

func TestPoolSnapCommands(t *testing.T) {
	s := newState(t)
	script(t, s)
	commit(t, s, mon.PoolCreate{Name: "rbd"})
	expect := func(c mon.Command, want error) {
		t.Helper()
		epoch := s.Map.Epoch
		if _, _, err := s.Commit(c); !errors.Is(err, want) {
			t.Fatalf("%+v: %v, want %v", c, err, want)
		}
		if s.Map.Epoch != epoch {
			t.Fatalf("%+v failed and changed the map", c)
		}
	}
	// pool snapshots on "data"
	commit(t, s, mon.PoolSnapCreate{Pool: "data", Snap: "a", Stamp: 5})
	commit(t, s, mon.PoolSnapCreate{Pool: "data", Snap: "b"})
	expect(mon.PoolSnapCreate{Pool: "data", Snap: "a"}, monc.ErrExists)
	expect(mon.PoolSnapCreate{Pool: "nope", Snap: "a"}, monc.ErrNotFound)
	expect(mon.SelfManagedSnapCreate{Pool: "data"}, monc.ErrInvalid)
	commit(t, s, mon.PoolSnapRemove{Pool: "data", Snap: "a"})
	expect(mon.PoolSnapRemove{Pool: "data", Snap: "a"}, monc.ErrNotFound)
	p, _ := s.Map.PoolByName("data")
	if seq, snaps := p.PoolSnapContext(); seq != 2 || len(snaps) != 1 || snaps[0] != 2 || !p.IsRemovedSnap(1) {
		t.Fatalf("data: seq %d snaps %v removed %v", seq, snaps, p.RemovedSnaps)
	}
	// self-managed ones on "rbd": ids in order, the message gives each
	for want := "1"; want <= "3"; want = string(want[0] + 1) {
		_, msg, err := s.Commit(mon.SelfManagedSnapCreate{Pool: "rbd"})
		if err != nil || msg != want {
			t.Fatalf("self-managed snap create: %q %v, want id %s", msg, err, want)
		}
	}
	expect(mon.PoolSnapCreate{Pool: "rbd", Snap: "x"}, monc.ErrInvalid)
	commit(t, s, mon.SelfManagedSnapRemove{Pool: "rbd", ID: 2})
	expect(mon.SelfManagedSnapRemove{Pool: "rbd", ID: 2}, monc.ErrNotFound)
	expect(mon.SelfManagedSnapRemove{Pool: "rbd", ID: 4}, monc.ErrNotFound)
	expect(mon.SelfManagedSnapRemove{Pool: "data", ID: 2}, monc.ErrInvalid)
	p, _ = s.Map.PoolByName("rbd")
	if p.SnapSeq != 3 || !p.IsRemovedSnap(2) || p.IsRemovedSnap(3) {
		t.Fatalf("rbd: seq %d removed %v", p.SnapSeq, p.RemovedSnaps)
	}
	// the commands as they come from the wire
	for _, c := range []monc.Command{
		{Prefix: "osd pool mksnap", Args: map[string]string{"pool": "data", "snap": "c", "stamp": "9"}},
		{Prefix: "osd pool rmsnap", Args: map[string]string{"pool": "data", "snap": "c"}},
		{Prefix: "osd pool selfmanaged-snap create", Args: map[string]string{"pool": "rbd"}},
		{Prefix: "osd pool selfmanaged-snap rm", Args: map[string]string{"pool": "rbd", "snapid": "4"}},
	} {
		cmd, err := mon.Translate(c)
		if err != nil {
			t.Fatal(err)
		}
		commit(t, s, cmd)
	}
	if p, _ = s.Map.PoolByName("rbd"); !p.IsRemovedSnap(4) {
		t.Fatalf("rbd: removed %v", p.RemovedSnaps)
	}
}

// Erasure-coded pools take snapshots of either kind, one kind per pool,
// as replicated ones do.
func TestErasurePoolSnaps(t *testing.T) {
	s := newState(t)
	commit(t, s, mon.ECProfileSet{Name: "p21", Args: []string{"k=2", "m=1", "crush-failure-domain=osd"}})
	commit(t, s, mon.PoolCreate{Name: "ec", Erasure: true, ECProfile: "p21", PGNum: 8})
	commit(t, s, mon.PoolCreate{Name: "ec2", Erasure: true, ECProfile: "p21", PGNum: 8})
	commit(t, s, mon.PoolSnapCreate{Pool: "ec", Snap: "s"})
	commit(t, s, mon.SelfManagedSnapCreate{Pool: "ec2"})
	if p, _ := s.Map.PoolByName("ec"); !p.PoolSnapsMode() || p.SnapSeq != 1 {
		t.Fatalf("ec after mksnap: flags %x snap_seq %d", p.Flags, p.SnapSeq)
	}
	if p, _ := s.Map.PoolByName("ec2"); !p.SelfManagedSnapsMode() || p.SnapSeq != 1 {
		t.Fatalf("ec2 after selfmanaged-snap create: flags %x snap_seq %d", p.Flags, p.SnapSeq)
	}
	for _, c := range []mon.Command{mon.SelfManagedSnapCreate{Pool: "ec"}, mon.PoolSnapCreate{Pool: "ec2", Snap: "s"}} {
		epoch := s.Map.Epoch
		if _, _, err := s.Commit(c); !errors.Is(err, monc.ErrInvalid) || s.Map.Epoch != epoch {
			t.Fatalf("%T mixing snapshot kinds on an erasure-coded pool: %v", c, err)
		}
	}
}
