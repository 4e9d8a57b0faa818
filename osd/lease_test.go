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

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd"
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
	proxy := newMonProxy(t, c.addrs[0])
	dir := t.TempDir()
	st := objectstore.NewMemStore()
	c.stores, c.dirs = append(c.stores, st), append(c.dirs, dir)
	deposed, err := osd.Start(osd.Options{DataDir: dir, Addr: "127.0.0.1:0", Host: "h", MonAddrs: []string{proxy.ln.Addr().String()}, Keyring: testKey, Config: c.conf, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c.osds = append(c.osds, deposed)
	cl := c.connect(ctx)
	monDo(ctx, t, cl, "pool create", "name", "p", "size", "3", "min_size", "2")
	p, err := cl.Pool(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
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
