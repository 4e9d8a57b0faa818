package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/internal/scrape"
	"github.com/shoal-project/shoal/mgr"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/status"
)

// MgrName is the entity name of the manager `shoal up` runs; its [mgr.x]
// section of shoal.conf configures it.
const MgrName = "mgr.x"

// mgrCaps are a manager's caps: it reads the MONs' state and the OSDs'
// statistics, and the S3 gateway's pools for the bucket list; it sets
// the pg_num of pools whose pg_autoscale_mode is on.
var mgrCaps = map[string]string{"mon": `allow r, allow command "pool set"`, "osd": "allow r"}

// MgrIDs are the managers shoal.conf configures: the ids of its [mgr.ID]
// sections.
func (c *Conf) MgrIDs() []string {
	var ids []string
	for _, sec := range c.File.Sections() {
		if id, ok := strings.CutPrefix(sec, "mgr."); ok && id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// Status gathers the cluster's status (status.Gather) with the progress
// events of the first manager shoal.conf configures that answers within
// a second: it has followed them over time, so its events count the PGs
// that already finished (one sample's cannot).
func Status(ctx context.Context, c *Conf, conn *client.Conn, monAddrs []string, kr msgr.Keyring) (*status.Status, error) {
	st, err := status.Gather(ctx, conn, monAddrs, kr)
	if err != nil {
		return nil, err
	}
	for _, id := range c.MgrIDs() {
		addr := c.For("mgr." + id).String("mgr_dashboard_addr")
		if addr == "" {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		events, err := mgr.Progress(cctx, addr)
		cancel()
		if err == nil {
			st.Progress = events
			break
		}
	}
	return st, nil
}

// maxDashboardBuckets bounds the buckets the dashboard lists (the first
// by owner, then name).
const maxDashboardBuckets = 200

// RunMgr runs manager name (mgr.ID; its own key in its keyring) until
// SIGINT or SIGTERM: the dashboard at mgr_dashboard_addr, the cluster's
// metrics at metrics_addr.
func RunMgr(c *Conf, name string) error {
	cfg := c.For(name)
	d, err := startClientDaemon(c, name, name, 100)
	if err != nil {
		return err
	}
	defer d.close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log, conn := d.log, d.conn
	m := mgr.New(mgr.Options{Conn: conn, MonAddrs: c.MonAddrs(), Keyring: d.kr, Logger: log,
		Period:  time.Duration(cfg.Seconds("mgr_stats_period") * float64(time.Second)),
		Buckets: (&bucketLister{conn: conn, opt: rgw.OptionsFromConfig(cfg)}).list})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	serve := func(what, addr string, run func(net.Listener) error) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, what, err)
		}
		log.Info("serving", "what", what, "addr", ln.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ln); err != nil {
				log.Error(what+" server", "err", err)
			}
		}()
		return nil
	}
	if addr := cfg.String("mgr_dashboard_addr"); addr != "" {
		if err := serve("dashboard", addr, func(ln net.Listener) error { return scrape.ServeHandler(ctx, ln, m.Handler()) }); err != nil {
			return err
		}
	}
	if addr := cfg.String("metrics_addr"); addr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(m.Collector())
		if err := serve("metrics", addr, func(ln net.Listener) error { return scrape.Serve(ctx, ln, reg) }); err != nil {
			return err
		}
	}
	if err := writePid(c, name); err != nil {
		return err
	}
	defer os.Remove(pidPath(c, name))
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.Run(ctx)
	}()
	log.Info("started", "entity", name)
	sig := <-signalCh()
	log.Info("stopping", "signal", sig.String())
	return nil
}

// bucketLister lists the S3 buckets for the dashboard once the
// gateway's pools exist (it never makes them: the store opens only when
// every one is in the map).
type bucketLister struct {
	conn  *client.Conn
	opt   rgw.Options
	store *rgw.Store
}

func (b *bucketLister) list(ctx context.Context) ([]mgr.Bucket, error) {
	if b.store == nil {
		m := b.conn.Map()
		p := b.opt.Pools
		for _, n := range []string{p.Meta, p.Index, p.Data, p.NonEC, p.Log} {
			if _, err := m.PoolByName(n); err != nil {
				return nil, nil // no gateway has run yet
			}
		}
		st, err := rgw.OpenStore(ctx, b.conn, b.opt)
		if err != nil {
			return nil, err
		}
		b.store = st
	}
	users, err := b.store.ListUsers(ctx)
	if err != nil {
		return nil, err
	}
	out := []mgr.Bucket{}
	for _, u := range users {
		names, err := b.store.UserBuckets(ctx, u)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if len(out) == maxDashboardBuckets {
				return out, nil
			}
			bk, err := b.store.GetBucket(ctx, n)
			if err != nil {
				continue // deleted meanwhile
			}
			row := mgr.Bucket{Name: bk.Name, Owner: bk.Owner, Created: bk.Created}
			if s, err := b.store.Stats(ctx, bk); err == nil {
				row.Objects, row.Bytes, row.Shards = s.Objects, s.Bytes, s.Shards
			}
			out = append(out, row)
		}
	}
	return out, nil
}
