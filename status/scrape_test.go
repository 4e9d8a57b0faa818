package status_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/status"
)

// Gather lists every daemon's Prometheus endpoint (MONs, then OSDs), and
// each answers /metrics.
func TestScrapeEndpoints(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{MONs: 1, OSDs: 2, Conf: "metrics_addr = 127.0.0.1:0\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := status.Gather(ctx, cl.Client(ctx), cl.MonAddrs, testcluster.Key)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mon." + cl.MonAddrs[0], "osd.0", "osd.1"}
	if len(st.Scrape) != len(want) {
		t.Fatalf("scrape endpoints %+v, want %v", st.Scrape, want)
	}
	for i, s := range st.Scrape {
		if s.Daemon != want[i] {
			t.Errorf("endpoint %d: %+v, want %s", i, s, want[i])
		}
		resp, err := http.Get("http://" + s.Addr + "/metrics")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: GET /metrics: %v %v", s.Daemon, err, resp)
		}
		resp.Body.Close()
	}
}

// The autoscaler's advice is in the status for every pool, and a pool in
// warn mode whose pg_num differs from it raises Ceph's
// POOL_TOO_FEW_PGS check; off (the default) raises nothing.
func TestAutoscaleWarn(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{MONs: 1, OSDs: 3, RealStores: true}) // a MemStore has no capacity
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := cl.Client(ctx)
	if _, err := conn.MonCommand(ctx, "pool create", map[string]string{"name": "data", "size": "3", "pg_num": "8"}); err != nil {
		t.Fatal(err)
	}
	gather := func() *status.Status {
		if err := conn.RefreshMap(ctx); err != nil {
			t.Fatal(err)
		}
		st, err := status.Gather(ctx, conn, cl.MonAddrs, testcluster.Key)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	has := func(st *status.Status, summary string) bool {
		for _, c := range st.Checks {
			if strings.Contains(c.Summary, summary) {
				return true
			}
		}
		return false
	}
	st := gather()
	if len(st.Autoscale) != 1 || st.Autoscale[0].Name != "data" || st.Autoscale[0].Final != 32 || st.Autoscale[0].Mode != "off" {
		t.Fatalf("advice %+v: want data at 32 PGs (the floor for an empty pool), mode off", st.Autoscale)
	}
	if has(st, "placement groups") {
		t.Fatalf("mode off raised %+v", st.Checks)
	}
	if _, err := conn.MonCommand(ctx, "pool set", map[string]string{"name": "data", "key": "pg_autoscale_mode", "value": "warn"}); err != nil {
		t.Fatal(err)
	}
	st = gather()
	if !has(st, "1 pools have too few placement groups") || st.Health == status.OK {
		t.Fatalf("warn mode: health %s, checks %+v", st.Health, st.Checks)
	}
}
