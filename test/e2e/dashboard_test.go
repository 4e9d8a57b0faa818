package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cluster"
)

// chromium is Debian's browser (the chromium package), run headless.
const chromium = "/usr/bin/chromium"

// checkDashboard checks the manager `shoal up` started: once its sample
// shows osds OSDs up and HEALTH_OK, Debian's chromium, headless, loads
// the dashboard and runs its script, and the page it draws shows the
// health, every OSD and pool data; a screenshot of it is a picture, not
// a blank page; and the manager's metrics say HEALTH_OK too.
func checkDashboard(ctx context.Context, t *testing.T, c *tcluster, osds int) {
	t.Helper()
	cfg := c.conf().For(cluster.MgrName)
	dash, metrics := "http://"+cfg.String("mgr_dashboard_addr")+"/", "http://"+cfg.String("metrics_addr")+"/metrics"
	get := func(url string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 {
			t.Fatalf("GET %s: %s", url, r.Status)
		}
		return string(b)
	}
	// the manager samples every mgr_stats_period (5 s)
	for {
		var snap struct {
			Status *struct {
				Health string `json:"health"`
			} `json:"status"`
			OSDs []struct {
				Up bool `json:"up"`
			} `json:"osds"`
		}
		if err := json.Unmarshal([]byte(get(dash+"api/status")), &snap); err != nil {
			t.Fatal(err)
		}
		up := 0
		for _, o := range snap.OSDs {
			if o.Up {
				up++
			}
		}
		if snap.Status != nil && snap.Status.Health == "HEALTH_OK" && up == osds {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the manager's sample never showed %d OSDs up and HEALTH_OK: %+v", osds, snap)
		case <-time.After(250 * time.Millisecond):
		}
	}
	if m := get(metrics); !strings.Contains(m, "\nceph_health_status 0\n") || !strings.Contains(m, "ceph_pool_objects{") {
		t.Errorf("the manager's metrics lack ceph_health_status 0 or ceph_pool_objects:\n%.2000s", m)
	}
	browse := func(args ...string) string {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
			"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000", "--window-size=1280,1000"}, args...)
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(cctx, chromium, append(args, dash)...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
		}
		return out.String()
	}
	dom := browse("--dump-dom")
	want := []string{`id="health-status">HEALTH_OK<`, ">data<"}
	for i := range osds {
		want = append(want, fmt.Sprintf(">osd.%d<", i))
	}
	for _, w := range want {
		if !strings.Contains(dom, w) {
			t.Errorf("the dashboard chromium drew lacks %q:\n%.4000s", w, dom)
		}
	}
	shot := filepath.Join(t.TempDir(), "dashboard.png")
	browse("--screenshot=" + shot)
	f, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(f))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colors := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if b.Dx() != 1280 || len(colors) < 20 {
		t.Errorf("screenshot: %v with %d colours: not the page", b, len(colors))
	}
}
