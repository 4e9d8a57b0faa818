// Package scrape serves a daemon's Prometheus metrics at /metrics: the
// HTTP endpoint every Shoal daemon (MON, OSD, gateway, manager) opens
// when metrics_addr is set; ServeHandler serves any other handler the
// same way (the manager's dashboard).
package scrape

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Serve answers GET /metrics on ln with what g gathers, in Prometheus'
// text format, until ctx ends (then it closes ln and returns nil). An
// error is the listener's.
func Serve(ctx context.Context, ln net.Listener, g prometheus.Gatherer) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return ServeHandler(ctx, ln, mux)
}

// ServeHandler answers HTTP requests on ln with h until ctx ends (then it
// closes ln and returns nil): the daemons' small HTTP endpoints (metrics,
// the manager's dashboard). An error is the listener's.
func ServeHandler(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	stop := context.AfterFunc(ctx, func() { hs.Close() })
	defer stop()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
