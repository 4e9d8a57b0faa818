package osd_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// monProxy forwards TCP connections to a MON until cut, when it drops
// them all and refuses new ones: the daemons behind it stop hearing of
// new maps.
type monProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
	wg    sync.WaitGroup
}

func newMonProxy(t *testing.T, target string) *monProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &monProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(up, c); up.Close() }()
			go func() { defer p.wg.Done(); io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

// setCut cuts (dropping every connection) or heals the proxy.
func (p *monProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// startBehindProxy starts one more OSD, which reaches the MON only
// through a proxy the test can cut.
func (c *cluster) startBehindProxy() (*osd.OSD, *monProxy) {
	proxy := newMonProxy(c.t, c.MonAddrs[0])
	dir := c.t.TempDir()
	st := objectstore.NewMemStore()
	c.Stores, c.Dirs = append(c.Stores, st), append(c.Dirs, dir)
	o, err := osd.Start(osd.Options{DataDir: dir, Addr: "127.0.0.1:0", Host: "h", MonAddrs: []string{proxy.ln.Addr().String()}, Keyring: testcluster.OSDKey, Config: c.Conf, Store: st})
	if err != nil {
		c.t.Fatal(err)
	}
	c.OSDs = append(c.OSDs, o)
	return o, proxy
}

// TestMapFromPeers: an OSD that lost the MONs but not its peers gets
// newer maps from them (Ceph's map sharing). Cut from the MON, it learns
// of a pool created meanwhile and takes its part in the PGs other OSDs
// lead, which go clean. Without the sharing, their primaries' queries wait
// for a map it never gets and those PGs never peer. The PGs it leads wait
// in peering: a primary records its acting set at the MONs before it
// serves (as Ceph's needs the MONs for up_thru).
func TestMapFromPeers(t *testing.T) {
	c := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cut, proxy := c.startBehindProxy()
	cl := c.Client(ctx)
	proxy.setCut(true)
	monDo(ctx, t, cl, "pool create", "name", "p", "size", "3", "min_size", "2")
	p, err := cl.Pool(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	m := cl.Map()
	pool, _ := m.Pool(p.ID())
	want := 0 // PGs led by the OSDs that reach the MON
	for seed := range pool.PGNum {
		if mp, _ := m.MapPG(osdmap.PGID{Pool: p.ID(), Seed: seed}); mp.ActingPrimary != cut.ID() {
			want++
		}
	}
	var states map[string]int
	eventually(ctx, t, func() bool {
		states = map[string]int{}
		for o := range int32(2) {
			if st, err := cl.OSDStats(ctx, o); err == nil {
				for _, pg := range st.PGs {
					states[pg.State]++
				}
			}
		}
		return states["active+clean"] == want
	}, func() string {
		return fmt.Sprintf("PGs led by osd.0 and osd.1: %v, want %d active+clean", states, want)
	})
	st, err := cl.OSDStats(ctx, cut.ID())
	if err != nil || st.Epoch < uint32(m.Epoch) {
		t.Fatalf("osd.%d cut from the MON: map %d, the cluster's %d (%v)", cut.ID(), st.Epoch, m.Epoch, err)
	}
	for i, n := 0, 0; n < 20; i++ {
		oid := fmt.Sprint("o", i)
		pgid, _ := m.ObjectToPG(p.ID(), oid, "")
		if mp, _ := m.MapPG(pgid); mp.ActingPrimary == cut.ID() {
			continue
		}
		if err := p.WriteFull(ctx, oid, []byte("x")); err != nil {
			t.Fatal(err)
		}
		n++
	}
	proxy.setCut(false)
	waitClean(ctx, t, cl, p.ID())
}

// TestDeposedPrimaryStopsReading is the stale read read leases close
// (Ceph's doc/dev/osd_internals/stale_read): a PG's primary loses the
// MONs, so it never learns that it was marked down, while it can still
// reach its peers and a client with the old map can still reach it. The
// new acting set goes active and acknowledges a write; the old primary
// must then refuse to read (its lease ran out: its peers, which have it
// down, no longer renew it) rather than return the older version.
func TestDeposedPrimaryStopsReading(t *testing.T) {
	c := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	deposed, proxy := c.startBehindProxy()
	cl, p := c.pool(ctx, "p") // size 3, min_size 2
	waitClean(ctx, t, cl, p.ID())
	// an object whose PG the OSD behind the proxy leads
	var oid string
	var seed uint32
	for i := 0; oid == ""; i++ {
		name := fmt.Sprintf("obj-%d", i)
		pgid, err := cl.Map().ObjectToPG(p.ID(), name, "")
		if err != nil {
			t.Fatal(err)
		}
		if mp, _ := cl.Map().MapPG(pgid); mp.ActingPrimary == deposed.ID() {
			oid, seed = name, pgid.Seed
		}
	}
	if err := p.WriteFull(ctx, oid, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	// read through the primary: it holds its read lease now
	if got, err := p.Read(ctx, oid, 0, 0); err != nil || string(got) != "v1" {
		t.Fatalf("read v1: %q, %v", got, err)
	}
	oldEpoch := uint32(cl.Map().Epoch)

	proxy.setCut(true)
	marked := time.Now()
	monDo(ctx, t, cl, "osd down", "ids", fmt.Sprint(deposed.ID()))
	if err := p.WriteFull(ctx, oid, []byte("v2, by the new acting set")); err != nil {
		t.Fatal(err)
	}
	t.Logf("osd.%d marked down; the new acting set took a write %v later", deposed.ID(), time.Since(marked).Round(time.Millisecond))

	// a client that still has the old map reads from the old primary
	addr, _, _ := strings.Cut(deposed.Addr(), "/")
	raw := msgr.Dial(addr, testKey, msgr.Config{Epoch: func() uint32 { return oldEpoch }})
	defer raw.Close()
	req := osdop.Request{Pool: p.ID(), Seed: seed, OID: oid, Client: 7, Tid: 1, Ops: []osdop.Op{{Code: osdop.Read}}}
	e := wire.NewEncoder(nil)
	req.Encode(e)
	rep, err := raw.Call(ctx, osdop.MsgOp, e.Bytes())
	if err == nil {
		r, derr := osdop.DecodeReply(rep.Payload)
		if derr != nil {
			t.Fatal(derr)
		}
		got := string(r.Results[0].Data)
		rep.Release()
		t.Fatalf("the deposed primary served %q after the new acting set acknowledged v2", got)
	}
	var re *msgr.RemoteError
	if !errors.As(err, &re) || !errors.Is(osdop.FromErrno(syscall.Errno(re.Code), re.Msg), osdop.ErrRetry) {
		t.Fatalf("deposed primary: %v; want a retry (no read lease)", err)
	}
	t.Logf("the deposed primary refused: %v", err)

	// healed: it learns of its markdown, boots again and catches up
	proxy.setCut(false)
	waitClean(ctx, t, cl, p.ID())
	got, err := p.Read(ctx, oid, 0, 0)
	if err != nil || string(got) != "v2, by the new acting set" {
		t.Fatalf("after healing: %q, %v", got, err)
	}
}

// TestBeaconTimeout: an OSD cut off from the MONs but not from its peers
// is marked down once the MON has had no beacon from it for
// mon_osd_report_timeout (no peer reports it: they still reach it), learns
// it from its peers' maps, and leaves its PGs, which go on without it;
// the OSDs that still reach the MON stay up. Healed, it boots again.
func TestBeaconTimeout(t *testing.T) {
	c := startClusterWith(t, 2, "mon_osd_report_timeout = 3\nosd_beacon_report_interval = 0.5\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cut, proxy := c.startBehindProxy()
	cl, p := c.pool(ctx, "p") // size 3, min_size 2
	waitClean(ctx, t, cl, p.ID())
	proxy.setCut(true)
	c.waitDown(ctx, cl, cut.ID())
	m := cl.Map()
	for id := range 2 {
		if !m.OSDs[id].Up {
			t.Fatalf("osd.%d, which reaches the MON, was marked down too", id)
		}
	}
	// it learns from its peers that it is down, and serves no PG
	var st osdop.Stats
	var err error
	eventually(ctx, t, func() bool {
		st, err = cl.OSDStats(ctx, cut.ID())
		return err == nil && st.Epoch >= uint32(m.Epoch) && len(st.PGs) == 0
	}, func() string {
		return fmt.Sprintf("osd.%d cut from the MON: map %d (the MON's %d), primary of %d PGs, %v", cut.ID(), st.Epoch, m.Epoch, len(st.PGs), err)
	})
	for i := range 20 {
		if err := p.WriteFull(ctx, fmt.Sprint("o", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	proxy.setCut(false)
	eventually(ctx, t, func() bool {
		return cl.RefreshMap(ctx) == nil && cl.Map().OSDs[cut.ID()].Up
	}, func() string { return fmt.Sprintf("osd.%d not up again after the cut healed", cut.ID()) })
	waitClean(ctx, t, cl, p.ID())
}
