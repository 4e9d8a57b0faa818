package mon_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/internal/testnet"
	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
)

func TestQuorumSurvivesLosingOneMON(t *testing.T) {
	kr := msgr.Keyring{Name: "client.admin", Key: []byte("0123456789abcdef0123456789abcdef")}
	var addrs []string
	for range 3 {
		addrs = append(addrs, testnet.FreePortPair(t))
	}
	var ds []*mon.Daemon
	for i, a := range addrs {
		d, err := mon.Start(mon.Options{Addr: a, Peers: addrs, DataDir: t.TempDir(), FSID: "f", Keyring: kr, Name: "mon." + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	defer func() {
		for _, d := range ds {
			if d != nil {
				d.Close()
			}
		}
	}()
	c, err := monc.New(addrs, kr, msgr.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r0, err := c.Command(ctx, "pool create", map[string]string{"name": "data", "size": "1", "pg_num": "8"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Command(ctx, "pool create", map[string]string{"name": "data"}); !errors.Is(err, monc.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	m, err := c.WaitEpoch(ctx, nil, r0.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.PoolByName("data"); err != nil {
		t.Fatalf("pool not in map epoch %d: %v", m.Epoch, err)
	}
	// stop the leader; the other two keep accepting changes
	for i, d := range ds {
		if d.IsLeader() {
			d.Close()
			ds[i] = nil
		}
	}
	r, err := c.Command(ctx, "pool create", map[string]string{"name": "second", "pg_num": "8"})
	if err != nil {
		t.Fatalf("after losing the leader: %v", err)
	}
	m2, err := c.WaitEpoch(ctx, m, r.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.PoolByName("second"); err != nil || m2.Epoch <= m.Epoch {
		t.Fatalf("epoch %d -> %d, second pool: %v", m.Epoch, m2.Epoch, err)
	}
	if _, err := c.Command(ctx, "pool set", map[string]string{"name": "nope", "key": "size", "value": "2"}); !errors.Is(err, monc.ErrNotFound) {
		t.Fatalf("unknown pool: %v", err)
	}
	// one MON of three is a minority: it refuses changes (no leader)
	for i, d := range ds {
		if d != nil && !d.IsLeader() {
			d.Close()
			ds[i] = nil
			break
		}
	}
	mctx, mcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = c.Command(mctx, "pool create", map[string]string{"name": "third", "pg_num": "8"})
	mcancel()
	if !errors.Is(err, monc.ErrNoMon) && !errors.Is(err, monc.ErrNotLeader) {
		t.Fatalf("a minority accepted a change: %v", err)
	}
	// a wrong key is refused
	bad, _ := monc.New(addrs, msgr.Keyring{Name: "client.evil", Key: []byte("wrong")}, msgr.Config{})
	defer bad.Close()
	bctx, bcancel := context.WithTimeout(ctx, 3*time.Second)
	defer bcancel()
	if _, err := bad.Command(bctx, "pool rm", map[string]string{"name": "data"}); err == nil {
		t.Fatal("a client with the wrong key ran a command")
	}
}

// A down OSD is marked out after mon_osd_down_out_interval by the leader,
// not while noout is set, and is marked in again when it boots.
func TestDownOutInterval(t *testing.T) {
	kr := msgr.Keyring{Name: "client.admin", Key: []byte("0123456789abcdef0123456789abcdef")}
	addr := testnet.FreePortPair(t)
	cfg := config.NewFile(map[string]map[string]string{"global": {"mon_osd_down_out_interval": "1"}})
	d, err := mon.Start(mon.Options{Addr: addr, Peers: []string{addr}, DataDir: t.TempDir(), FSID: "f", Keyring: kr, Name: "mon.a", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := monc.New([]string{addr}, kr, msgr.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must := func(prefix string, args map[string]string) monc.Result {
		t.Helper()
		r, err := c.Command(ctx, prefix, args)
		if err != nil {
			t.Fatalf("%s: %v", prefix, err)
		}
		return r
	}
	boot := map[string]string{"id": "-1", "host": "h", "addr": "127.0.0.1:6800", "size": "1099511627776"}
	must("osd boot", boot)
	must("osd set", map[string]string{"key": "noout"})
	r := must("osd down", map[string]string{"ids": "0"})
	m, err := c.WaitEpoch(ctx, nil, r.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	// wait for a map; with noout none marks it out (bounded wait: 3 intervals)
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	m2, err := c.WaitEpoch(wctx, m, uint32(m.Epoch)+1)
	wcancel()
	if err == nil {
		t.Fatalf("epoch %d with noout: osd.0 in %v", m2.Epoch, m2.OSDs[0].In())
	}
	start := time.Now()
	r = must("osd unset", map[string]string{"key": "noout"})
	for m, err = c.WaitEpoch(ctx, m, r.Epoch); err == nil && m.OSDs[0].In(); m, err = c.WaitEpoch(ctx, m, uint32(m.Epoch)+1) {
	}
	if err != nil {
		t.Fatal(err)
	}
	if !m.OSDs[0].AutoOut || m.OSDs[0].Up {
		t.Fatalf("epoch %d: osd.0 up %v auto-out %v", m.Epoch, m.OSDs[0].Up, m.OSDs[0].AutoOut)
	}
	t.Logf("marked out %v after noout was cleared (interval 1 s)", time.Since(start).Round(time.Millisecond))
	r = must("osd boot", map[string]string{"id": "0", "host": "h", "addr": "127.0.0.1:6801"})
	if m, err = c.WaitEpoch(ctx, m, r.Epoch); err != nil || !m.OSDs[0].In() || !m.OSDs[0].Up {
		t.Fatalf("after boot: %v in %v", err, m.OSDs[0].In())
	}
}
