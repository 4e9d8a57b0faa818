package status_test

import (
	"context"
	"net/http"
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
