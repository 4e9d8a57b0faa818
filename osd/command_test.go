package osd

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osdop"
)

// heldStore is a store whose CompactMeta waits: it says when one starts
// (started) and returns when released.
type heldStore struct {
	objectstore.Store
	started, release chan struct{}
}

func (h heldStore) MetaStats() objectstore.MetaStats { return objectstore.MetaStats{} }
func (h heldStore) FlushMeta() error                 { return nil }
func (h heldStore) CompactMeta(ctx context.Context) error {
	h.started <- struct{}{}
	<-h.release
	return nil
}

// TestOSDCommandOneCompaction: a compaction asked while one runs is
// refused with ErrBusy; once the first is done another may run; an
// unknown command is refused.
func TestOSDCommandOneCompaction(t *testing.T) {
	h := heldStore{Store: objectstore.NewMemStore(), started: make(chan struct{}), release: make(chan struct{})}
	d := &OSD{store: h, log: slog.New(slog.DiscardHandler)}
	cmd := func(c string) ([]byte, error) {
		b, _ := json.Marshal(osdop.OSDCommand{Cmd: c})
		return d.osdCommand(context.Background(), b)
	}
	first := make(chan error, 1)
	go func() { _, err := cmd("compact"); first <- err }()
	<-h.started
	if _, err := cmd("compact"); !errors.Is(err, osdop.ErrBusy) {
		t.Fatalf("a second compaction while one runs: %v, want ErrBusy", err)
	}
	if _, err := cmd("flush"); err != nil {
		t.Fatalf("a flush while a compaction runs: %v", err)
	}
	close(h.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	go func() { <-h.started }()
	if _, err := cmd("compact"); err != nil {
		t.Fatalf("a compaction after the first ended: %v", err)
	}
	if _, err := cmd("defrag"); !errors.Is(err, osdop.ErrInvalid) {
		t.Fatalf("an unknown command: %v, want ErrInvalid", err)
	}
}

// TestMetaCollector: the metadata store's statistics are exported under
// their names, counters as counters, from one MetaStats per scrape.
func TestMetaCollector(t *testing.T) {
	calls := 0
	stats := func() objectstore.MetaStats {
		calls++
		return objectstore.MetaStats{Flushes: 3, Compactions: 5, CompactionDebt: 7, SSTBytes: 11, BlobBytes: 13, BlobGarbageBytes: 17}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newMetaCollector(stats, prometheus.Labels{"daemon": "osd.0"}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("one scrape read the statistics %d times", calls)
	}
	want := map[string]struct {
		typ dto.MetricType
		v   float64
	}{
		"shoal_osd_meta_flushes_total":         {dto.MetricType_COUNTER, 3},
		"shoal_osd_meta_compactions_total":     {dto.MetricType_COUNTER, 5},
		"shoal_osd_meta_compaction_debt_bytes": {dto.MetricType_GAUGE, 7},
		"shoal_osd_meta_sst_bytes":             {dto.MetricType_GAUGE, 11},
		"shoal_osd_meta_blob_bytes":            {dto.MetricType_GAUGE, 13},
		"shoal_osd_meta_blob_garbage_bytes":    {dto.MetricType_GAUGE, 17},
	}
	for _, mf := range mfs {
		w, ok := want[mf.GetName()]
		if !ok {
			t.Fatalf("unexpected metric %s", mf.GetName())
		}
		delete(want, mf.GetName())
		m := mf.GetMetric()[0]
		v := m.GetGauge().GetValue()
		if w.typ == dto.MetricType_COUNTER {
			v = m.GetCounter().GetValue()
		}
		if mf.GetType() != w.typ || v != w.v || m.GetLabel()[0].GetValue() != "osd.0" {
			t.Errorf("%s: %v %v %v, want %v %v", mf.GetName(), mf.GetType(), v, m.GetLabel(), w.typ, w.v)
		}
	}
	if len(want) > 0 {
		t.Fatalf("missing metrics: %v", want)
	}
}
