package opexec_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdop"
)

// randomBlindOps is one request of 1–3 blind ops (opexec.Blind) at
// offsets within 64 KiB.
func randomBlindOps(rng *rand.Rand) []osdop.Op {
	ops := make([]osdop.Op, 1+rng.Intn(3))
	for i := range ops {
		off := uint64(rng.Intn(64 << 10))
		data := make([]byte, rng.Intn(9000))
		rng.Read(data)
		switch rng.Intn(10) {
		case 0:
			ops[i] = osdop.Op{Code: osdop.WriteFull, Data: data}
		case 1:
			ops[i] = osdop.Op{Code: osdop.Append, Data: data}
		case 2:
			ops[i] = osdop.Op{Code: osdop.Truncate, Off: off}
		case 3:
			ops[i] = osdop.Op{Code: osdop.Zero, Off: off, Len: uint64(rng.Intn(20000))}
		case 4:
			ops[i] = osdop.Op{Code: osdop.Create, Exclusive: rng.Intn(2) == 0}
		case 5:
			ops[i] = osdop.Op{Code: osdop.Remove}
		case 6:
			ops[i] = osdop.Op{Code: osdop.SetXattr, Name: "a", Data: data[:min(len(data), 8)]}
		case 7:
			ops[i] = osdop.Op{Code: osdop.OmapSet, KVs: []omap.KV{{Key: fmt.Sprint(off), Value: data[:min(len(data), 8)]}}}
		default:
			ops[i] = osdop.Op{Code: osdop.Write, Off: off, Data: data}
		}
	}
	return ops
}

// TestAfterIsWhatLoadFinds: a chain of blind writes to one object, each
// prepared against the state the one before it leaves (Prepared.After,
// as an OSD does with writes in flight) and applied, with snapshots taken
// between them in some runs: after every write, After is exactly the
// state Load and LoadSnapSet read from the store (existence, size,
// version, SnapSet, whiteout), and the chain gives the same answers
// (results, errors) as preparing each write against the store's state.
func TestAfterIsWhatLoadFinds(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			s := objectstore.NewMemStore()
			const c, oid = objectstore.Coll("1.0_head"), "obj"
			var mk objectstore.Transaction
			mk.CreateCollection(c)
			if err := s.Apply(&mk); err != nil {
				t.Fatal(err)
			}
			snaps := seed%2 == 0 // half the runs take snapshots between writes
			load := func() *opexec.Object {
				o, err := opexec.Load(s, c, oid)
				if err != nil {
					t.Fatal(err)
				}
				if snaps {
					if err := o.LoadSnapSet(); err != nil {
						t.Fatal(err)
					}
				}
				return o
			}
			var snapc opexec.SnapContext
			var projected *opexec.Object // nil: nothing written yet, the store's state
			for seq := uint64(1); seq <= 200; seq++ {
				if snaps && rng.Intn(8) == 0 {
					snapc.Seq++
					snapc.Snaps = append([]uint64{snapc.Seq}, snapc.Snaps...)
				}
				ops := randomBlindOps(rng)
				if !opexec.Blind(ops) {
					t.Fatalf("ops %v are not blind", ops)
				}
				stored := load()
				o := stored
				if projected != nil {
					if got := *projected; !sameState(&got, stored) {
						t.Fatalf("write %d: projected %s, the store holds %s", seq, state(&got), state(stored))
					}
					o = projected
				}
				x, err := opexec.Prepare(o, ops, 1<<20, snapc)
				_, errStored := opexec.Prepare(load(), ops, 1<<20, snapc)
				if (err == nil) != (errStored == nil) {
					t.Fatalf("write %d %v: against the projection %v, against the store %v", seq, ops, err, errStored)
				}
				if err != nil {
					continue // nothing applied: the projection stands
				}
				v := peering.Version{Epoch: 1, Seq: seq}
				if x.ExistsAfter {
					opexec.Stamp(x.T, c, oid, v, time.Now())
				}
				if err := s.Apply(x.T); err != nil {
					t.Fatalf("write %d %v: apply: %v", seq, ops, err)
				}
				a := x.After(v.Seq)
				a.Store, a.Coll, a.OID = s, c, oid
				projected = &a
			}
		})
	}
}

func sameState(a, b *opexec.Object) bool {
	return a.Exists == b.Exists && a.Size == b.Size && a.Version == b.Version && a.Whiteout == b.Whiteout && reflect.DeepEqual(a.SnapSet, b.SnapSet)
}

func state(o *opexec.Object) string {
	return fmt.Sprintf("exists %v size %d version %d whiteout %v snapset %+v", o.Exists, o.Size, o.Version, o.Whiteout, o.SnapSet)
}
