package mon_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

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
