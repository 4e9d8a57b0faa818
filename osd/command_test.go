package osd

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

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
