package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/internal/scrape"
)

// metrics are a gateway's Prometheus metrics (RGW's perf counters:
// requests, their latency and bytes, by method and target), served by
// MetricsHandler when metrics_addr is set in the gateway's section.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec   // method, target, code
	latency  *prometheus.HistogramVec // method, target
	in, out  prometheus.Counter
	// RGW's perf counters under the names Ceph's exporter gives them:
	// requests, failed ones (4xx and 5xx), object GETs and PUTs with
	// their body bytes and their initial latency (to the response's
	// headers: _sum over _count is the mean, seconds).
	cephReq, cephFailed, cephGet, cephGetB, cephPut, cephPutB prometheus.Counter
	cephGetLat, cephPutLat                                    prometheus.Summary
}

func newMetrics(s *rgw.Store) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "shoal", Subsystem: "rgw", Name: "requests_total",
		Help: "S3 requests answered, by HTTP method, target (service, bucket or object) and status code."}, []string{"method", "target", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "shoal", Subsystem: "rgw", Name: "request_seconds",
		Help:    "Time from a request's headers to the end of its answer, by HTTP method and target.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"method", "target"})
	m.in = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "shoal", Subsystem: "rgw", Name: "received_bytes_total",
		Help: "Request body bytes read."})
	m.out = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "shoal", Subsystem: "rgw", Name: "sent_bytes_total",
		Help: "Response body bytes written."})
	gauge := func(name, help string, fn func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "shoal", Subsystem: "rgw", Name: name, Help: help}, fn))
	}
	counter := func(name, help string, fn func() float64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "shoal", Subsystem: "rgw", Name: name, Help: help}, fn))
	}
	counter("index_calls_total", "Bucket index calls sent (rgw.batch; each carries one or more updates).",
		func() float64 { calls, _, _ := s.IndexCounters(); return float64(calls) })
	counter("index_updates_total", "Bucket index updates (prepares, completions, cancels) the index calls carried.",
		func() float64 { _, updates, _ := s.IndexCounters(); return float64(updates) })
	gauge("index_completions_in_flight", "Index completions sent after their requests were answered, not yet applied.",
		func() float64 { _, _, n := s.IndexCounters(); return float64(n) })
	m.reg.MustRegister(m.requests, m.latency, m.in, m.out)
	cephCounter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "ceph_rgw_" + name, Help: help})
		m.reg.MustRegister(c)
		return c
	}
	m.cephReq = cephCounter("req", "S3 requests answered (RGW's req).")
	m.cephFailed = cephCounter("failed_req", "Requests answered with a 4xx or 5xx status (RGW's failed_req).")
	m.cephGet = cephCounter("get", "Object GETs (RGW's get).")
	m.cephGetB = cephCounter("get_b", "Bytes sent for object GETs (RGW's get_b).")
	m.cephPut = cephCounter("put", "Object PUTs (RGW's put).")
	m.cephPutB = cephCounter("put_b", "Bytes received for object PUTs (RGW's put_b).")
	m.cephGetLat = prometheus.NewSummary(prometheus.SummaryOpts{Name: "ceph_rgw_get_initial_lat", Help: "Object GET latency to the response's headers, seconds (RGW's get_initial_lat)."})
	m.cephPutLat = prometheus.NewSummary(prometheus.SummaryOpts{Name: "ceph_rgw_put_initial_lat", Help: "Object PUT latency to the response's headers, seconds (RGW's put_initial_lat)."})
	m.reg.MustRegister(m.cephGetLat, m.cephPutLat)
	return m
}

// ServeMetrics serves the gateway's Prometheus metrics at /metrics on
// ln until ctx ends.
func (srv *Server) ServeMetrics(ctx context.Context, ln net.Listener) error {
	if err := scrape.Serve(ctx, ln, srv.m.reg); err != nil {
		return fmt.Errorf("gateway: metrics: %w", err)
	}
	return nil
}

// observe records one answered request.
func (m *metrics) observe(rq *request, w *countingWriter, start time.Time) {
	target := "object"
	switch {
	case rq.bucket == "":
		target = "service"
	case rq.key == "":
		target = "bucket"
	}
	method := rq.r.Method
	switch method {
	case http.MethodGet, http.MethodPut, http.MethodHead, http.MethodDelete, http.MethodPost:
	default:
		method = "other"
	}
	status := w.status
	if status == 0 { // nothing written: net/http answers 200
		status = http.StatusOK
	}
	m.requests.WithLabelValues(method, target, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(method, target).Observe(time.Since(start).Seconds())
	m.out.Add(float64(w.bytes))
	if rq.r.ContentLength > 0 {
		m.in.Add(float64(rq.r.ContentLength))
	}
	m.cephReq.Inc()
	if status >= 400 {
		m.cephFailed.Inc()
	}
	initial := time.Since(start)
	if !w.headerAt.IsZero() {
		initial = w.headerAt.Sub(start)
	}
	switch {
	case target != "object":
	case method == http.MethodGet:
		m.cephGet.Inc()
		m.cephGetB.Add(float64(w.bytes))
		m.cephGetLat.Observe(initial.Seconds())
	case method == http.MethodPut:
		m.cephPut.Inc()
		if rq.r.ContentLength > 0 {
			m.cephPutB.Add(float64(rq.r.ContentLength))
		}
		m.cephPutLat.Observe(initial.Seconds())
	}
}

// countingWriter records a response's status and body bytes.
type countingWriter struct {
	http.ResponseWriter
	status   int
	bytes    int64
	headerAt time.Time // when the status line was written
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status, w.headerAt = code, time.Now()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status, w.headerAt = http.StatusOK, time.Now()
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Flush passes a flush on to the connection.
func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
