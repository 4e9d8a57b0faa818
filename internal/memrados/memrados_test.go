package memrados_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/internal/memrados"
	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osdop"
)

// TestDifferential runs the same random requests — writes, reads,
// attributes, omap, version assertions, an object-class method — on an
// in-memory RADOS and on a cluster of three OSDs, and requires the same
// outcome from both: the same error (by errno) or the same results.
// Versions differ (a PG's against a pool's count), so each side asserts
// its own. SHOAL_SEED=N reproduces a run.
func TestDifferential(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SHOAL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("SHOAL_SEED=%d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c := testcluster.Start(t, testcluster.Options{OSDs: 3})
	real := c.Client(ctx)
	mem, err := memrados.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	fake := client.NewConn(mem, client.Config{})
	defer fake.Close()
	var pools [2]*client.Pool
	for i, conn := range []*client.Conn{real, fake} {
		if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "diff", "size": "3"}); err != nil {
			t.Fatal(err)
		}
		if pools[i], err = conn.Pool(ctx, "diff"); err != nil {
			t.Fatal(err)
		}
	}
	vers := [2]map[string]uint64{{}, {}} // each side's last version of each object
	blob := func() []byte {
		b := make([]byte, 20+r.IntN(3000))
		for i := range b {
			b[i] = byte('a' + r.IntN(3))
		}
		return b
	}
	key := func() string { return fmt.Sprintf("k%d", r.IntN(6)) }
	for step := range 400 {
		oid := fmt.Sprintf("o%d", r.IntN(4))
		n := 1 + r.IntN(3)
		ops := make([]osdop.Op, n)
		stale := r.IntN(2) == 0
		for i := range ops {
			switch r.IntN(16) {
			case 0:
				ops[i] = osdop.Op{Code: osdop.WriteFull, Data: blob()}
			case 1:
				ops[i] = osdop.Op{Code: osdop.Write, Off: uint64(r.IntN(4000)), Data: blob()}
			case 2:
				ops[i] = osdop.Op{Code: osdop.Append, Data: blob()}
			case 3:
				ops[i] = osdop.Op{Code: osdop.Truncate, Off: uint64(r.IntN(4000))}
			case 4:
				ops[i] = osdop.Op{Code: osdop.Remove}
			case 5:
				ops[i] = osdop.Op{Code: osdop.Create, Exclusive: r.IntN(2) == 0}
			case 6:
				ops[i] = osdop.Op{Code: osdop.SetXattr, Name: key(), Data: blob()[:10]}
			case 7:
				ops[i] = osdop.Op{Code: osdop.RmXattr, Name: key()}
			case 8:
				ops[i] = osdop.Op{Code: osdop.OmapSet, KVs: []omap.KV{{Key: key(), Value: blob()[:20]}}}
			case 9:
				ops[i] = osdop.Op{Code: osdop.OmapRm, Keys: []string{key(), key()}}
			case 10:
				ops[i] = osdop.Op{Code: osdop.Read, Off: uint64(r.IntN(3000)), Len: uint64(r.IntN(2000)), FailOK: r.IntN(2) == 0}
			case 11:
				ops[i] = osdop.Op{Code: osdop.Stat}
			case 12:
				ops[i] = osdop.Op{Code: osdop.GetXattr, Name: key(), FailOK: r.IntN(2) == 0}
			case 13:
				ops[i] = osdop.Op{Code: osdop.OmapGet, Keys: []string{key(), key()}}
			case 14:
				ops[i] = osdop.Op{Code: osdop.OmapList, Max: uint32(1 + r.IntN(4))}
			case 15:
				in, _ := json.Marshal(rgw.SwapIn{Key: key(), Value: []byte("v" + strconv.Itoa(step))})
				ops[i] = osdop.Op{Code: osdop.Call, Name: "rgw.omap_swap", Data: in}
			}
		}
		if r.IntN(8) == 0 { // an assertion of the side's own version, current or stale
			ops = append([]osdop.Op{{Code: osdop.AssertVersion}}, ops...)
		}
		var reps [2]*osdop.Reply
		var errs [2]error
		for side, p := range pools {
			req := slices.Clone(ops)
			if req[0].Code == osdop.AssertVersion {
				req[0].Ver = vers[side][oid]
				if stale && req[0].Ver > 0 {
					req[0].Ver--
				}
			}
			reps[side], errs[side] = p.Operate(ctx, oid, req)
			if errs[side] == nil && (&osdop.Request{Ops: req}).IsWrite() {
				vers[side][oid] = reps[side].Ver
			}
		}
		if osdop.Errno(errs[0]) != osdop.Errno(errs[1]) {
			t.Fatalf("step %d, %s %v: cluster %v, memrados %v", step, oid, codes(ops), errs[0], errs[1])
		}
		if errs[0] != nil {
			continue
		}
		for i := range ops {
			a, b := reps[0].Results[i], reps[1].Results[i]
			if !bytes.Equal(a.Data, b.Data) || a.Size != b.Size || a.More != b.More || !slices.EqualFunc(a.KVs, b.KVs, func(x, y omap.KV) bool { return x.Key == y.Key && bytes.Equal(x.Value, y.Value) }) {
				t.Fatalf("step %d, %s %v, op %d: cluster %d bytes size %d %d kvs, memrados %d bytes size %d %d kvs",
					step, oid, codes(ops), i, len(a.Data), a.Size, len(a.KVs), len(b.Data), b.Size, len(b.KVs))
			}
		}
	}
}

// TestNamesAndPools: names no client may use are refused as the OSDs
// refuse them, on both sides; a deleted pool is not found, and its
// objects go with it.
func TestNamesAndPools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testcluster.Start(t, testcluster.Options{OSDs: 3})
	mem, err := memrados.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	fake := client.NewConn(mem, client.Config{})
	defer fake.Close()
	for side, conn := range []*client.Conn{c.Client(ctx), fake} {
		if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "p", "size": "3"}); err != nil {
			t.Fatal(err)
		}
		p, err := conn.Pool(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"", "\x00stash", strings.Repeat("n", 5000)} {
			if err := p.WriteFull(ctx, name, []byte("x")); osdop.Errno(err) == 0 || (!errors.Is(err, osdop.ErrInvalid) && !errors.Is(err, osdop.ErrNameTooLong)) {
				t.Errorf("side %d: a write to %.20q: %v", side, name, err)
			}
		}
		if side == 0 {
			continue
		}
		if err := p.WriteFull(ctx, "o", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.MonCommand(ctx, "pool rm", map[string]string{"name": "p"}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Read(ctx, "o", 0, 0); !errors.Is(err, client.ErrPoolNotFound) {
			t.Errorf("a read from a deleted pool: %v, want ErrPoolNotFound", err)
		}
		n := 0
		if err := mem.List(ctx, p.ID(), func(string) bool { n++; return true }); !errors.Is(err, osdop.ErrNotFound) || n != 0 {
			t.Errorf("listing a deleted pool: %d objects, %v; want none and ErrNotFound", n, err)
		}
	}
}

func codes(ops []osdop.Op) []string {
	var s []string
	for _, o := range ops {
		s = append(s, o.Code.String())
	}
	return s
}
