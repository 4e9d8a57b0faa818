package mon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
)

func TestQuorumSurvivesLosingOneMON(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{MONs: 3})
	addrs, ds := cl.MonAddrs, cl.MONs
	c := cl.MonClient()
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
			cl.StopMON(i)
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
			cl.StopMON(i)
			break
		}
	}
	mctx, mcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = c.Command(mctx, "pool create", map[string]string{"name": "third", "pg_num": "8"})
	mcancel()
	if !errors.Is(err, monc.ErrNoMon) && !errors.Is(err, monc.ErrNotLeader) {
		t.Fatalf("a minority accepted a change: %v", err)
	}
	// nor does it serve reads it cannot vouch for: the map, the
	// configuration (mon status still answers, for diagnosis)
	for _, read := range []func(context.Context) error{
		func(ctx context.Context) error { _, err := c.GetMap(ctx, nil, false); return err },
		func(ctx context.Context) error { _, err := c.Command(ctx, "config dump", nil); return err },
	} {
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		err := read(rctx)
		rcancel()
		if !errors.Is(err, monc.ErrNoMon) {
			t.Fatalf("a MON in a minority served a read: %v", err)
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
	defer scancel()
	if _, err := c.Command(sctx, "mon status", nil); err != nil {
		t.Fatalf("mon status from a minority: %v", err)
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

// oneMon starts a one-MON test cluster (testcluster.Start, no OSDs)
// with the given [global] options and a client of it; must runs a
// command, failing the test on an error. The MON, the client and ctx
// (60 s) end with the test.
func oneMon(t *testing.T, global map[string]string) (ctx context.Context, c *monc.Client, must func(prefix string, args map[string]string) monc.Result) {
	t.Helper()
	var conf strings.Builder
	for _, k := range slices.Sorted(maps.Keys(global)) {
		fmt.Fprintf(&conf, "%s = %s\n", k, global[k])
	}
	c = testcluster.Start(t, testcluster.Options{Conf: conf.String()}).MonClient()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	must = func(prefix string, args map[string]string) monc.Result {
		t.Helper()
		r, err := c.Command(ctx, prefix, args)
		if err != nil {
			t.Fatalf("%s: %v", prefix, err)
		}
		return r
	}
	return ctx, c, must
}

// A down OSD is marked out after mon_osd_down_out_interval by the leader,
// not while noout is set, and is marked in again when it boots.
func TestDownOutInterval(t *testing.T) {
	ctx, c, must := oneMon(t, map[string]string{"mon_osd_down_out_interval": "1"})
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

// Failure reports mark an OSD down only once mon_osd_min_down_reporters
// reporters from distinct mon_osd_reporter_subtree_level buckets agree,
// and never while nodown is set.
func TestFailureReports(t *testing.T) {
	ctx, c, must := oneMon(t, map[string]string{
		"mon_osd_min_down_reporters": "2", "mon_osd_reporter_subtree_level": "host", "osd_heartbeat_grace": "600"})
	// osd.0 and osd.1 on host a, osd.2 and osd.3 on host b
	var r monc.Result
	for i, h := range []string{"a", "a", "b", "b"} {
		r = must("osd boot", map[string]string{"id": "-1", "host": h, "addr": fmt.Sprintf("127.0.0.1:%d", 6800+i), "size": "1099511627776"})
	}
	m, err := c.WaitEpoch(ctx, nil, r.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	report := func(target, reporter int) string {
		t.Helper()
		return must("osd failure", map[string]string{"target": strconv.Itoa(target), "reporter": strconv.Itoa(reporter), "addr": fmt.Sprintf("127.0.0.1:%d", 6800+target)}).Message
	}
	must("osd set", map[string]string{"key": "nodown"})
	if msg := report(3, 0); !strings.Contains(msg, "nodown") {
		t.Errorf("report under nodown: %q", msg)
	}
	if msg := report(3, 2); !strings.Contains(msg, "nodown") {
		t.Errorf("report under nodown: %q", msg)
	}
	r = must("osd unset", map[string]string{"key": "nodown"})
	if m, err = c.WaitEpoch(ctx, m, r.Epoch); err != nil || !m.OSDs[3].Up {
		t.Fatalf("osd.3 after reports under nodown: %v, up %v", err, m.OSDs[3].Up)
	}
	// two reporters, one host: one bucket of the two needed
	if msg := report(3, 0); !strings.Contains(msg, "1 of 2") {
		t.Errorf("first report: %q", msg)
	}
	if msg := report(3, 1); !strings.Contains(msg, "1 of 2") {
		t.Errorf("second reporter on the same host: %q", msg)
	}
	// a reporter on the other host makes two
	report(3, 2)
	for m, err = c.WaitEpoch(ctx, m, uint32(m.Epoch)+1); err == nil && m.OSDs[3].Up; m, err = c.WaitEpoch(ctx, m, uint32(m.Epoch)+1) {
	}
	if err != nil {
		t.Fatal(err)
	}
	if !m.OSDs[0].Up || !m.OSDs[1].Up || !m.OSDs[2].Up {
		t.Errorf("epoch %d: only osd.3 should be down: %+v", m.Epoch, m.OSDs)
	}
}

// A MON with metrics_addr serves Ceph's exporter metrics for what it
// holds: its quorum status, the OSDs, pools, PG counts and flags; `mon
// status` names the endpoint.
func TestMonMetrics(t *testing.T) {
	cl := testcluster.Start(t, testcluster.Options{MONs: 1, OSDs: 2, Conf: "metrics_addr = 127.0.0.1:0\n"})
	c := cl.MonClient()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Command(ctx, "pool create", map[string]string{"name": "data", "size": "2", "pg_num": "8"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Command(ctx, "osd set", map[string]string{"key": "noout"}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Command(ctx, "mon status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Metrics string `json:"metrics_addr"`
	}
	if err := json.Unmarshal(r.Data, &st); err != nil || st.Metrics == "" || st.Metrics != cl.MONs[0].MetricsAddr() {
		t.Fatalf("mon status names metrics at %q (%v), the MON serves them at %q", st.Metrics, err, cl.MONs[0].MetricsAddr())
	}
	resp, err := http.Get("http://" + st.Metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`ceph_mon_quorum_status{ceph_daemon="` + cl.MONs[0].Name() + `"} 1`,
		`ceph_osd_up{ceph_daemon="osd.0"} 1`,
		`ceph_osd_in{ceph_daemon="osd.1"} 1`,
		`ceph_osd_weight{ceph_daemon="osd.1"} 1`,
		`ceph_pool_metadata{name="data",pool_id="1",type="replicated"} 1`,
		`ceph_pg_total{pool_id="1"} 8`,
		`ceph_osd_flag_noout 1`,
		`ceph_osd_flag_noup 0`,
		`shoal_pg_upmap_items{ceph_daemon=`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
}
