package mgr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/mgr"
	"github.com/shoal-project/shoal/status"
)

// gauge is the value of metric name with the given label value (or no
// labels), and whether it was exported.
func gauge(t *testing.T, reg *prometheus.Registry, name, label string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" && len(m.GetLabel()) == 0 || len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				return value(m), true
			}
		}
	}
	return 0, false
}

// gaugeWith is the value of metric name whose labels are exactly want,
// and whether it was exported.
func gaugeWith(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if mf.GetName() == name && maps.Equal(got, want) {
				return value(m), true
			}
		}
	}
	return 0, false
}

func value(m *dto.Metric) float64 {
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.Counter.GetValue()
}

// pause waits a little before the next sample, or fails the test with
// msg once ctx ends.
func pause(ctx context.Context, t *testing.T, msg string) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatal(msg)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestMgr runs a manager against a three-OSD cluster: its sample counts
// the objects written, its per-OSD rates add up to the reads made
// between two samples, its metrics and dashboard say the same, and an
// OSD stopped shows as down with the health no longer OK.
func TestMgr(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{OSDs: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.Client(ctx)
	if _, err := cl.MonCommand(ctx, "pool create", map[string]string{"name": "p", "size": "3"}); err != nil {
		t.Fatal(err)
	}
	p, err := cl.Pool(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var stored int64
	for i := range n {
		data := bytes.Repeat([]byte{byte(i)}, 1000+i*10)
		stored += int64(len(data))
		if err := p.WriteFull(ctx, fmt.Sprintf("obj%d", i), data); err != nil {
			t.Fatal(err)
		}
	}
	listed := 0
	m := mgr.New(mgr.Options{Conn: cl, MonAddrs: c.MonAddrs, Keyring: testcluster.Key, Period: time.Second,
		Buckets: func(context.Context) ([]mgr.Bucket, error) {
			if listed++; listed == 1 {
				return nil, errors.New("no gateway pools yet")
			}
			return []mgr.Bucket{{Name: "b1", Owner: "u", Objects: 3}}, nil
		}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collector())
	if _, ok := gauge(t, reg, "ceph_health_status", ""); ok {
		t.Fatal("health exported before the first sample")
	}

	// samples until the cluster is clean and every object counted
	poolID := strconv.FormatInt(p.ID(), 10)
	var snap mgr.Snapshot
	for {
		snap = m.Refresh(ctx)
		if snap.Error == "" && snap.Status.Health == status.OK && snap.Status.Objects == n {
			break
		}
		pause(ctx, t, fmt.Sprintf("never clean with %d objects: %+v", n, snap))
	}
	var pool *status.PoolUsage
	for i := range snap.Status.PoolStats {
		if snap.Status.PoolStats[i].ID == p.ID() {
			pool = &snap.Status.PoolStats[i]
		}
	}
	if pool == nil || pool.Objects != n || pool.Bytes != stored || pool.Size != 3 || pool.Type != "replicated" {
		t.Fatalf("pool p: %+v, want %d objects of %d bytes", pool, n, stored)
	}
	if v, ok := gauge(t, reg, "ceph_health_status", ""); !ok || v != 0 {
		t.Errorf("ceph_health_status %v (exported %v), want 0", v, ok)
	}
	if v, _ := gauge(t, reg, "ceph_pool_objects", poolID); v != n {
		t.Errorf("ceph_pool_objects{pool_id=%s} %v, want %d", poolID, v, n)
	}
	if v, _ := gauge(t, reg, "ceph_pool_stored", poolID); v != float64(stored) {
		t.Errorf("ceph_pool_stored %v, want %d", v, stored)
	}

	// reads between two samples: the OSDs' read rates times the time
	// between the samples add up to them
	before := m.Refresh(ctx)
	for i := range n {
		if _, err := p.Read(ctx, fmt.Sprintf("obj%d", i), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	after := m.Refresh(ctx)
	dt := after.Time.Sub(before.Time).Seconds()
	var reads, latency float64
	for _, o := range after.OSDs {
		reads += o.ReadOps * dt
		latency = max(latency, o.ReadLatMs)
		if !o.Up || !o.In || o.PGs == 0 {
			t.Errorf("osd.%d: %+v", o.ID, o)
		}
	}
	if len(after.OSDs) != 3 || int(reads+0.5) != n || latency <= 0 {
		t.Errorf("%d OSDs, %.2f reads at most %.3f ms between the samples, want 3 OSDs and %d reads: %+v", len(after.OSDs), reads, latency, n, after.OSDs)
	}

	if len(before.Buckets) != 1 || before.Buckets[0].Name != "b1" || len(after.Buckets) != 1 {
		t.Errorf("buckets once the lister answers: %+v, %+v", before.Buckets, after.Buckets)
	}

	// the dashboard: the page, and the JSON it draws from
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		r, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, "<title>Shoal dashboard</title>") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Errorf("GET /: %d, a page that is not the dashboard or loads something from elsewhere", code)
	}
	code, body := get("/api/status")
	var api struct {
		mgr.Snapshot
		Period float64 `json:"period_sec"`
	}
	if err := json.Unmarshal([]byte(body), &api); code != 200 || err != nil || api.Status.FSID != after.Status.FSID || len(api.OSDs) != 3 || api.Period != 1 {
		t.Errorf("GET /api/status: %d %v: %.300s", code, err, body)
	}
	if _, err := mgr.Progress(ctx, strings.TrimPrefix(srv.URL, "http://")); err != nil {
		t.Errorf("progress from the dashboard's JSON: %v", err)
	}
	if code, _ := get("/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope: %d", code)
	}
	if r, err := http.Post(srv.URL+"/", "text/plain", nil); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %v %v", r.Status, err)
	}

	// an OSD stops: down, and the health warns
	c.StopOSD(2)
	for {
		snap = m.Refresh(ctx)
		if snap.Error == "" && snap.Status.Health != status.OK && len(snap.OSDs) == 3 && !snap.OSDs[2].Up {
			break
		}
		pause(ctx, t, fmt.Sprintf("osd.2 stopped: never seen down: %+v", snap))
	}
	if v, _ := gauge(t, reg, "ceph_health_status", ""); v != mgr.HealthValue(snap.Status.Health) || v == 0 {
		t.Errorf("ceph_health_status %v with health %s", v, snap.Status.Health)
	}
	if v, _ := gauge(t, reg, "shoal_health_checks", snap.Status.Checks[0].Severity); v < 1 {
		t.Errorf("shoal_health_checks{severity=%s} %v with checks %+v", snap.Status.Checks[0].Severity, v, snap.Status.Checks)
	}
	// each check by its code, in the metrics and in `shoal health detail`
	var text strings.Builder
	snap.Status.HealthText(&text, true)
	for _, ck := range snap.Status.Checks {
		if ck.Code == "" {
			t.Errorf("check without a code: %+v", ck)
		}
		if v, ok := gaugeWith(t, reg, "ceph_health_detail", map[string]string{"name": ck.Code, "severity": ck.Severity}); !ok || v != 1 {
			t.Errorf("ceph_health_detail{name=%s} %v (exported %t)", ck.Code, v, ok)
		}
		sev := map[string]string{status.Warn: "[WRN] ", status.Err: "[ERR] "}[ck.Severity]
		if !strings.Contains(text.String(), sev+ck.Code+": "+ck.Summary) {
			t.Errorf("health detail without %s's line:\n%s", ck.Code, text.String())
		}
	}
}

// TestMgrAutoscale: the manager raises the pg_num of a pool in
// pg_autoscale_mode on from 4 to the autoscaler's 32 (the floor for an
// empty pool: 8× above, past the threshold of 3), and the split pool
// serves; a pool in on mode with 100 PGs, 3.1× above the advice, gets
// pg_num_target 32 (the MONs merge its PGs one at a time) and no health
// warning; a pool in warn mode with 100 PGs keeps them and health warns
// of it.
func TestMgrAutoscale(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{OSDs: 3, RealStores: true}) // a MemStore has no capacity
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := c.Client(ctx)
	for name, pgs := range map[string]string{"grow": "4", "shrink": "100", "big": "100"} {
		if _, err := cl.MonCommand(ctx, "pool create", map[string]string{"name": name, "size": "3", "pg_num": pgs}); err != nil {
			t.Fatal(err)
		}
		mode := "on"
		if name == "big" {
			mode = "warn"
		}
		if _, err := cl.MonCommand(ctx, "pool set", map[string]string{"name": name, "key": "pg_autoscale_mode", "value": mode}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := cl.Pool(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteFull(ctx, "before", []byte("written at 4 PGs")); err != nil {
		t.Fatal(err)
	}
	m := mgr.New(mgr.Options{Conn: cl, MonAddrs: c.MonAddrs, Keyring: testcluster.Key, Period: time.Second})
	snap := m.Refresh(ctx)
	if snap.Error != "" {
		t.Fatal(snap.Error)
	}
	if err := cl.RefreshMap(ctx); err != nil {
		t.Fatal(err)
	}
	grow, _ := cl.Map().PoolByName("grow")
	big, _ := cl.Map().PoolByName("big")
	shrink, _ := cl.Map().PoolByName("shrink")
	if grow.PGNum != 32 || big.PGNum != 100 || shrink.PGNumTargetOr() != 32 {
		t.Fatalf("after a sample: grow has %d PGs (want 32), big %d (want 100), shrink a target of %d (want 32); advice %+v",
			grow.PGNum, big.PGNum, shrink.PGNumTargetOr(), snap.Status.Autoscale)
	}
	for {
		snap = m.Refresh(ctx)
		if snap.Error == "" && snap.Status.PGs >= 32+100 && snap.Status.PGStates["active+clean"] == snap.Status.PGs {
			break
		}
		pause(ctx, t, fmt.Sprintf("never clean: %+v", snap.Status))
	}
	if got, err := p.Read(ctx, "before", 0, 0); err != nil || string(got) != "written at 4 PGs" {
		t.Fatalf("after the split: %q %v", got, err)
	}
	var warned []string
	for _, ch := range snap.Status.Checks {
		if ch.Code == "POOL_TOO_MANY_PGS" {
			warned = ch.Detail
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "Pool big ") {
		t.Fatalf("too many PGs warned of for %v, want big only: %+v", warned, snap.Status.Checks)
	}
}
