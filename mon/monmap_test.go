package mon_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/monc"
)

// TestMonMapChanges grows one MON to three with `mon add` (each a
// non-voter until it has caught up), refuses a removal that would leave
// no quorum, removes a stopped MON (which, restarted on its stale state,
// finds out from the others and stops) and then the first MON; a client
// that knew only the first MON follows the MON map throughout. The MONs
// run with ms_mode secure: raft's streams are encrypted too.
func TestMonMapChanges(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{Conf: "ms_mode = secure\n"})
	mc := cl.MonClient() // knows MON 0 only
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dump := func() monc.MonMap {
		t.Helper()
		r, err := mc.Command(ctx, "mon dump", nil)
		if err != nil {
			t.Fatal(err)
		}
		var mm monc.MonMap
		if err := json.Unmarshal(r.Data, &mm); err != nil {
			t.Fatal(err)
		}
		return mm
	}
	// waitVoters waits for the MON map's voters to be those of MONs ids
	// (and no non-voter) and for the client to follow it
	waitVoters := func(ids ...int) monc.MonMap {
		t.Helper()
		var want []string
		for _, i := range ids {
			want = append(want, cl.MonAddrs[i])
		}
		slices.Sort(want)
		for {
			mm := dump()
			if _, err := mc.GetMap(ctx, nil, false); err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(slices.Values(mc.Addrs()))
			if slices.Equal(mm.Voters(), want) && len(mm.Mons) == len(want) && slices.Equal(got, want) {
				return mm
			}
			select {
			case <-ctx.Done():
				t.Fatalf("MON map %+v, client follows %v; want voters %v", mm, got, want)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	must := func(prefix string, args map[string]string) monc.Result {
		t.Helper()
		r, err := mc.Command(ctx, prefix, args)
		if err != nil {
			t.Fatalf("%s %v: %v", prefix, args, err)
		}
		return r
	}
	first := waitVoters(0)
	for range 2 {
		i := cl.AddMON()
		must("mon add", map[string]string{"addr": cl.MonAddrs[i]})
		if mm := dump(); !mm.Has(cl.MonAddrs[i]) || slices.Contains(mm.Voters(), cl.MonAddrs[i]) && mm.Epoch == first.Epoch {
			t.Fatalf("after mon add: %+v", mm)
		}
		waitVoters(slices.Collect(func(yield func(int) bool) {
			for j := 0; j <= i; j++ {
				yield(j)
			}
		})...)
	}
	// adding a member again changes nothing
	before := dump()
	must("mon add", map[string]string{"addr": cl.MonAddrs[1]})
	if after := dump(); after.Epoch != before.Epoch {
		t.Fatalf("adding a member again: epoch %d → %d", before.Epoch, after.Epoch)
	}
	if _, err := mc.Command(ctx, "mon add", map[string]string{"addr": "nohost"}); !errors.Is(err, monc.ErrInvalid) {
		t.Fatalf("mon add of a bad address: %v", err)
	}

	// MON 2 stopped: removing MON 1 would leave MON 0 of {0, 2}, no quorum
	cl.StopMON(2)
	if _, err := mc.Command(ctx, "mon rm", map[string]string{"addr": cl.MonAddrs[1]}); !errors.Is(err, monc.ErrBusy) {
		t.Fatalf("mon rm leaving no quorum: %v, want ErrBusy", err)
	}
	// removing the stopped one is allowed; restarted on its stale state,
	// it asks the others and stops
	must("mon rm", map[string]string{"addr": cl.MonAddrs[2]})
	waitVoters(0, 1)
	cl.StartMON(2)
	select {
	case <-cl.Removed[2]:
	case <-ctx.Done():
		t.Fatal("a removed MON restarted on its old state did not find out it was removed")
	}
	// the first MON, the one the client was given, goes; the client follows
	must("mon rm", map[string]string{"addr": cl.MonAddrs[0]})
	select {
	case <-cl.Removed[0]:
	case <-ctx.Done():
		t.Fatal("the removed first MON did not stop")
	}
	waitVoters(1)
	must("pool create", map[string]string{"name": "after", "pg_num": "8"})
	if _, err := mc.Command(ctx, "mon rm", map[string]string{"addr": cl.MonAddrs[1]}); !errors.Is(err, monc.ErrInvalid) {
		t.Fatalf("removing the last MON: %v", err)
	}
	if _, err := mc.Command(ctx, "mon rm", map[string]string{"addr": cl.MonAddrs[0]}); !errors.Is(err, monc.ErrNotFound) {
		t.Fatalf("removing a MON not in the map: %v", err)
	}
}
