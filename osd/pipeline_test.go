package osd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdop"
)

// TestBlindWritesInFlight: writes to one object at different offsets
// from many clients at once — a block image's data writes — are in flight
// together on a replicated PG (op_w_pipelined counts those prepared
// behind another), while xattr removals (not blind: they wait for the
// writes in flight and keep later ones out) and whole-object reads run
// beside them. Every read sees each 4 KiB block either unwritten or
// holding one whole write, never a part of one; at the end the object's
// size is the furthest write's end and every block holds its last write,
// in every store's copy.
func TestBlindWritesInFlight(t *testing.T) {
	if n := blindWrites(t, ""); n == 0 {
		t.Fatal("no write was prepared while another to its object was in flight")
	}
}

// TestBlindWritesNearFull: on OSDs past their nearfull ratio the same
// writes wait for each other (none is built on one that might fail for
// want of room), with the same outcome.
func TestBlindWritesNearFull(t *testing.T) {
	if n := blindWrites(t, "mon_osd_nearfull_ratio = 0.000001\n"); n != 0 {
		t.Fatalf("%d writes prepared behind another in flight on nearfull OSDs, want 0", n)
	}
}

// blindWrites runs TestBlindWritesInFlight's load on three OSDs
// configured with extra, checks its outcome, and returns how many writes
// the primaries prepared behind another in flight (op_w_pipelined).
func blindWrites(t *testing.T, extra string) uint64 {
	a, start := blockMonWith(t)
	var stores []*objectstore.BlockStore
	for range 3 {
		o, st := start(t.TempDir(), extra, 0)
		defer o.Close()
		stores = append(stores, st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, p := dataPool(ctx, t, a)
	// some data first, so that no store is empty (0 bytes used is below
	// any nearfull ratio)
	if err := p.WriteFull(ctx, "other", make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	const (
		block   = 4096
		blocks  = 96 // the object's 4 KiB blocks, written in reverse so it grows by every round's first writes
		writers = 16
		rounds  = 6
	)
	// content(b, r) fills block b as written in round r (1-based): the
	// block and round in every 8 bytes, so a torn block shows.
	content := func(b, r int) []byte {
		return bytes.Repeat(fmt.Appendf(nil, "%04d:%03d", b, r%1000), block/8)[:block]
	}
	stop := make(chan struct{})
	var side sync.WaitGroup
	var reads, xattrOps int
	side.Add(2)
	go func() { // readers see whole writes only
		defer side.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			d, err := p.Read(ctx, "img", 0, 0)
			if errors.Is(err, osdop.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			reads++
			for b := 0; b*block < len(d); b++ {
				got := d[b*block : min(len(d), (b+1)*block)]
				if len(got) != block {
					t.Errorf("read of %d bytes: not a whole number of blocks", len(d))
					return
				}
				if bytes.Equal(got, make([]byte, block)) {
					continue
				}
				var gb, gr int
				fmt.Sscanf(string(got[:8]), "%04d:%03d", &gb, &gr)
				if gb != b || !bytes.Equal(got, content(b, gr)) {
					t.Errorf("block %d reads %q…: not one whole write of it", b, got[:16])
					return
				}
			}
		}
	}()
	go func() { // xattr removals, which wait for the writes in flight
		defer side.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := p.SetXattr(ctx, "img", "x", []byte{byte(i)}); err != nil {
				t.Error(err)
				return
			}
			if err := p.RmXattr(ctx, "img", "x"); err != nil {
				t.Errorf("rmxattr after setxattr: %v", err)
				return
			}
			xattrOps += 2
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 1; r <= rounds; r++ {
				for b := blocks - 1 - w; b >= 0; b -= writers {
					if err := p.Write(ctx, "img", content(b, r), uint64(b*block)); err != nil {
						t.Errorf("write block %d round %d: %v", b, r, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	side.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var pipelined uint64
	for i := range stores {
		st, err := cl.OSDStats(ctx, int32(i))
		if err != nil {
			t.Fatal(err)
		}
		pipelined += st.Perf.OpWPipelined
	}
	t.Logf("%d writes, %d prepared behind another in flight; %d whole-object reads and %d xattr writes beside them", rounds*blocks, pipelined, reads, xattrOps)
	want := make([]byte, 0, blocks*block)
	for b := range blocks {
		want = append(want, content(b, rounds)...)
	}
	if got, err := p.Read(ctx, "img", 0, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v, %d bytes (want %d), equal %v", err, len(got), len(want), bytes.Equal(got, want))
	}
	if _, err := p.GetXattr(ctx, "img", "x"); !errors.Is(err, osdop.ErrNoData) {
		t.Fatalf("xattr x after its last removal: %v, want ErrNoData", err)
	}
	for i, st := range stores {
		colls, err := st.Collections()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range colls {
			d, err := st.Read(c, "img", 0, 0)
			if errors.Is(err, objectstore.ErrNotFound) {
				continue
			}
			if err != nil || !bytes.Equal(d, want) {
				t.Fatalf("osd.%d: %s/img in the store: %v, %d bytes, equal %v", i, c, err, len(d), bytes.Equal(d, want))
			}
			found = true
		}
		if !found {
			t.Fatalf("osd.%d holds no copy of img", i)
		}
	}
	return pipelined
}
