// Package testcluster is the one in-process cluster the package tests
// share (storj's testplanet shape): MONs and OSDs started in the test's
// process, on MemStores, over TCP on 127.0.0.1 or over an in-memory
// network (msgr/memnet) whose links the test can cut, slow or reset
// (msgr/faultnet), with hooks to stop, restart and add members. Tests
// that must kill real processes with SIGKILL use test/e2e instead.
//
// Every member shares Key; Conf is the base configuration (one CRUSH
// host, OSD-level failure domain and reporters, fast heartbeats, 8 PGs a
// pool), which a test extends with Options.Conf.
package testcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/internal/testnet"
	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/msgr/faultnet"
	"github.com/shoal-project/shoal/msgr/memnet"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd"
)

// Key is the cluster key every member and client of a test cluster
// holds (client.admin's).
var Key = msgr.Keyring{Name: "client.admin", Key: []byte("0123456789abcdef0123456789abcdef")}

// OSDKey is the OSDs' identity: Key's key under the OSDs' entity type (an
// OSD accepts OSD-to-OSD messages only from osd entities).
var OSDKey = msgr.Keyring{Name: "osd", Key: Key.Key}

// Conf is the base configuration of a test cluster: every OSD under one
// CRUSH host with the OSD as failure domain (so three OSDs hold three
// copies), OSDs reporting each other, heartbeats every 0.5 s, 8 PGs a
// pool.
const Conf = `[global]
osd_crush_chooseleaf_type = 0
mon_osd_reporter_subtree_level = osd
osd_heartbeat_interval = 0.5
osd_pool_default_pg_num = 8
`

// Options shape a cluster. The zero value is one MON and no OSD on TCP.
type Options struct {
	MONs int // default 1
	OSDs int // started by Start; AddOSD adds more
	// Conf is added to the base Conf ("name = value" lines, [global]).
	Conf string
	// ClusterNetwork gives each OSD a cluster (back) address of its own.
	ClusterNetwork bool
	// InMemory runs the cluster on an in-memory network with faults
	// (Cluster.Net): no sockets, and links the test controls.
	InMemory bool
	// RealStores runs each OSD on a BlockStore in its data directory
	// instead of a MemStore (benchmarks: MemStore copies an object's omap
	// on every write).
	RealStores bool
	// Clock, if set, times every member's schedules (heartbeats, leases,
	// scrubs, down→out...; see osd.Options.Clock and mon.Options.Clock):
	// a clockwork.FakeClock lets a test move time on at will.
	Clock clockwork.Clock
}

// Cluster is a running test cluster. Its members stop when the test ends.
type Cluster struct {
	t        testing.TB
	o        Options
	Conf     *config.File  // Conf and Options.Conf, parsed: every member's configuration
	MONs     []*mon.Daemon // nil where stopped
	MonAddrs []string      // the MONs' messenger addresses (mon_host), by MON
	monDirs  []string
	// Removed is closed when MON i finds itself removed from the MON map
	// (mon.Options.OnRemoved; a new channel each start).
	Removed []chan struct{}
	OSDs    []*osd.OSD              // nil where stopped
	Stores  []*objectstore.MemStore // survive their OSD's restarts (nil with RealStores)
	Dirs    []string                // the OSDs' data directories
	// Wrap, if set, wraps OSD i's store each time the OSD starts (set it
	// before RestartOSD).
	Wrap func(i int, s objectstore.Store) objectstore.Store
	// Net is the in-memory network's fault control (InMemory only).
	Net *faultnet.Net
	mem *memnet.Network
}

// Start starts o.MONs MONs (at least one) and o.OSDs OSDs, and stops
// them when t ends.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	conf, err := config.Parse(strings.NewReader(Conf+o.Conf), "test.conf")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, o: o, Conf: conf}
	if o.InMemory {
		c.mem, c.Net = memnet.New(), faultnet.New()
	}
	for i := range max(o.MONs, 1) {
		if o.InMemory {
			c.MonAddrs = append(c.MonAddrs, MONHostOf(i)+":6789")
		} else {
			c.MonAddrs = append(c.MonAddrs, testnet.FreePortPair(t))
		}
		c.monDirs = append(c.monDirs, t.TempDir())
	}
	c.MONs = make([]*mon.Daemon, len(c.MonAddrs))
	c.Removed = make([]chan struct{}, len(c.MonAddrs))
	t.Cleanup(func() {
		for _, d := range c.OSDs {
			if d != nil {
				d.Close()
			}
		}
		for _, m := range c.MONs {
			if m != nil {
				m.Close()
			}
		}
	})
	for i := range c.MONs {
		c.StartMON(i)
	}
	for range o.OSDs {
		c.AddOSD()
	}
	return c
}

// ClientHost is the host of an in-memory cluster's clients.
const ClientHost = "10.0.9.1"

// MONHostOf is MON i's host in an in-memory cluster.
func MONHostOf(i int) string { return fmt.Sprintf("10.0.0.%d", i+1) }

// StartMON starts MON i (again, on its data: raft's log and snapshots).
// Those Start started form the cluster; those AddMON added join it.
func (c *Cluster) StartMON(i int) {
	c.t.Helper()
	c.StopMON(i)
	host := MONHostOf(i)
	initial := max(c.o.MONs, 1)
	removed := make(chan struct{})
	c.Removed[i] = removed
	m, err := mon.Start(mon.Options{Addr: c.MonAddrs[i], Peers: c.MonAddrs[:initial], Join: i >= initial, DataDir: c.monDirs[i], FSID: "test", Keyring: Key, Config: c.Conf,
		Name: fmt.Sprintf("mon.%c", 'a'+i), Transport: c.transport(host), Clock: c.o.Clock, OnRemoved: func() { close(removed) }})
	if err != nil {
		c.t.Fatal(err)
	}
	c.MONs[i] = m
}

// AddMON starts a MON with no state that waits to be added to the MON
// map (mon add), and returns its index.
func (c *Cluster) AddMON() int {
	c.t.Helper()
	i := len(c.MonAddrs)
	if c.o.InMemory {
		c.MonAddrs = append(c.MonAddrs, MONHostOf(i)+":6789")
	} else {
		c.MonAddrs = append(c.MonAddrs, testnet.FreePortPair(c.t))
	}
	c.monDirs = append(c.monDirs, c.t.TempDir())
	c.MONs = append(c.MONs, nil)
	c.Removed = append(c.Removed, nil)
	c.StartMON(i)
	return i
}

// StopMON stops MON i if it runs.
func (c *Cluster) StopMON(i int) {
	if c.MONs[i] != nil {
		c.MONs[i].Close()
		c.MONs[i] = nil
	}
}

// MonClient connects a MON client (monc) to the cluster, closed when the
// test ends.
func (c *Cluster) MonClient() *monc.Client {
	c.t.Helper()
	mc, err := monc.New(c.MonAddrs, Key, msgr.Config{Transport: c.transport(ClientHost)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { mc.Close() })
	return mc
}

// OSDHost is OSD i's host: its public address's and, with a cluster
// network, BackHost(i) for its cluster address.
func OSDHost(i int) string { return fmt.Sprintf("10.0.1.%d", i) }

// BackHost is OSD i's cluster-network host.
func BackHost(i int) string { return fmt.Sprintf("10.0.2.%d", i) }

// transport is the transport of a member on host: nil (TCP) unless the
// cluster is in memory.
func (c *Cluster) transport(host string) msgr.Transport {
	if c.mem == nil {
		return nil
	}
	return c.Net.Wrap(c.mem.Host(host), host)
}

// AddOSD starts one more OSD and returns its id.
func (c *Cluster) AddOSD() int {
	if !c.o.RealStores {
		c.Stores = append(c.Stores, objectstore.NewMemStore())
	}
	c.Dirs = append(c.Dirs, c.t.TempDir())
	c.OSDs = append(c.OSDs, nil)
	i := len(c.OSDs) - 1
	c.RestartOSD(i)
	return i
}

// RestartOSD starts OSD i, stopping it first if it runs (its MemStore
// keeps what it acknowledged, as a disk does).
func (c *Cluster) RestartOSD(i int) {
	c.t.Helper()
	c.StopOSD(i)
	front, back, host := "127.0.0.1:0", "", "127.0.0.1"
	if c.o.ClusterNetwork {
		back = "127.0.0.1:0"
	}
	if c.mem != nil {
		host = OSDHost(i)
		front = host + ":6800"
		if c.o.ClusterNetwork {
			back = BackHost(i) + ":6800"
		}
	}
	var st objectstore.Store
	if !c.o.RealStores {
		st = c.Stores[i]
	}
	if c.Wrap != nil {
		st = c.Wrap(i, st)
	}
	d, err := osd.Start(osd.Options{DataDir: c.Dirs[i], Addr: front, ClusterAddr: back, Host: "h", MonAddrs: c.MonAddrs, Keyring: OSDKey, Config: c.Conf, Store: st, Transport: c.transport(host), Clock: c.o.Clock})
	if err != nil {
		c.t.Fatal(err)
	}
	c.OSDs[i] = d
}

// StopOSD stops OSD i if it runs (the MONs mark it down once its peers
// report it, or at once with the "osd down" command).
func (c *Cluster) StopOSD(i int) {
	if c.OSDs[i] != nil {
		c.OSDs[i].Close()
		c.OSDs[i] = nil
	}
}

// Client connects a client to the cluster (from ClientHost in memory);
// it closes when the test ends.
func (c *Cluster) Client(ctx context.Context) *client.Conn {
	c.t.Helper()
	conn, err := client.Connect(ctx, client.Config{MonAddrs: c.MonAddrs, Keyring: Key, Transport: c.transport(ClientHost)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(conn.Close)
	return conn
}

// WaitUp waits until the client's map shows OSDs ids up (or down, with
// up false), refreshing it, or fails the test when ctx ends.
func WaitUp(ctx context.Context, t testing.TB, conn *client.Conn, up bool, ids ...int32) {
	t.Helper()
	for {
		if err := conn.RefreshMap(ctx); err != nil {
			t.Fatal(err)
		}
		m := conn.Map()
		ok := true
		for _, id := range ids {
			ok = ok && id < m.MaxOSD() && m.OSDs[id].Up == up
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("osds %v never %s (map epoch %d)", ids, map[bool]string{true: "up", false: "down"}[up], m.Epoch)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
