package objectstore

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFdatasyncModes: fdatasyncFd syncs a file both as a raw system call
// (after a fast sync) and through the scheduler (after a slow one, or
// beside another raw sync), records how long it took, and reports a bad
// descriptor's error either way.
func TestFdatasyncModes(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	defer lastSync.Store(0)
	for _, prev := range []time.Duration{0, time.Hour} {
		lastSync.Store(int64(prev))
		if err := fdatasyncFd(f.Fd()); err != nil {
			t.Fatalf("after a sync of %v: %v", prev, err)
		}
		if got := time.Duration(lastSync.Load()); got <= 0 || got >= time.Hour {
			t.Fatalf("after a sync of %v: recorded %v", prev, got)
		}
		lastSync.Store(int64(prev))
		if err := fdatasyncFd(^uintptr(0) >> 1); !errors.Is(err, syscall.EBADF) {
			t.Fatalf("after a sync of %v: a bad descriptor gave %v, want EBADF", prev, err)
		}
		if rawSyncing.Load() {
			t.Fatal("a raw sync left its flag set")
		}
	}
	// another raw sync running: this one goes through the scheduler and
	// leaves the other's flag alone
	lastSync.Store(0)
	rawSyncing.Store(true)
	defer rawSyncing.Store(false)
	if err := fdatasyncFd(f.Fd()); err != nil || !rawSyncing.Load() {
		t.Fatalf("beside a raw sync: %v, flag %v", err, rawSyncing.Load())
	}
}
