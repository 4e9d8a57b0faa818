package osd

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/objectstore"
)

func memoryConf(t *testing.T, opts map[string]string) *config.Config {
	t.Helper()
	c := config.NewFile(map[string]map[string]string{"osd": opts}).For("osd.0")
	for k := range opts {
		if !c.IsSet(k) {
			t.Fatalf("option %s not set", k)
		}
	}
	return c
}

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// TestMemoryDefaults: at the default 4 GiB target the caches keep their
// configured sizes.
func TestMemoryDefaults(t *testing.T) {
	b := Memory(memoryConf(t, map[string]string{}))
	if b.DataCache != gib || b.MetaCache != 256*mib || b.OnodeCache != 64*mib || b.Recovery != 512*mib || b.Warning != "" {
		t.Fatalf("defaults: %s, warning %q", b, b.Warning)
	}
	want := 4 * gib
	if pebbleOffHeap == 1 {
		want -= 256*mib + 128*mib // block cache and two 64 MiB memtables in C memory
	}
	if got := b.GoMemLimit(); got != want {
		t.Errorf("GoMemLimit %d, want %d", got, want)
	}
}

// TestMemoryShrinksCaches: a 1 GiB target leaves 1024 - 256 (base) - 128
// (recovery) - 128 (memtables) = 512 MiB to the caches, split 1024:256:64
// as configured.
func TestMemoryShrinksCaches(t *testing.T) {
	b := Memory(memoryConf(t, map[string]string{"osd_memory_target": "1G"}))
	near := func(name string, got, want int64) {
		if got < want-1 || got > want+1 {
			t.Errorf("%s: %d bytes, want %d", name, got, want)
		}
	}
	near("data cache", b.DataCache, gib*512/1344)
	near("metadata cache", b.MetaCache, 256*mib*512/1344)
	near("onode cache", b.OnodeCache, 64*mib*512/1344)
	if b.Recovery != 128*mib || b.Memtables != 128*mib || b.Warning != "" {
		t.Errorf("budget %s, warning %q", b, b.Warning)
	}
	if total := b.Base + b.Recovery + b.Memtables + b.Caches(); total > b.Target {
		t.Errorf("budget adds up to %d, above the target %d", total, b.Target)
	}
	var opts objectstore.Options
	b.storeOptions(&opts)
	if opts.DataCacheSize != b.DataCache || opts.CacheSize != b.MetaCache || int64(opts.OnodeCacheSize) != b.OnodeCache {
		t.Errorf("store options %+v from %s", opts, b)
	}
}

// TestMemoryWithinTarget: for any target above the floor, with nothing
// set by hand, the parts add up to at most the target and no cache grows
// past its configured size.
func TestMemoryWithinTarget(t *testing.T) {
	for target := 640 * mib; target <= 8*gib; target += 64 * mib {
		b := Memory(memoryConf(t, map[string]string{"osd_memory_target": sizeString(target)}))
		if b.Target != target {
			t.Fatalf("target %s read as %d", sizeString(target), b.Target)
		}
		if total := b.Base + b.Recovery + b.Memtables + b.Caches(); total > target || b.Warning != "" {
			t.Errorf("target %s: parts add up to %s (%s), warning %q", sizeString(target), sizeString(total), b, b.Warning)
		}
		if b.DataCache > gib || b.MetaCache > 256*mib || b.OnodeCache > 64*mib {
			t.Errorf("target %s: a cache above its configured size: %s", sizeString(target), b)
		}
		if b.Caches() < 128*mib-2 { // osd_memory_cache_min, less rounding
			t.Errorf("target %s: caches below osd_memory_cache_min: %s", sizeString(target), b)
		}
	}
}

// TestMemoryExplicit: a cache size set by hand is kept, the others share
// what it leaves, and one that leaves nothing is warned about.
func TestMemoryExplicit(t *testing.T) {
	b := Memory(memoryConf(t, map[string]string{"osd_memory_target": "1G", "bluestore_data_cache_size": "256M"}))
	// 512 MiB for caches: 256 MiB taken, 256 left for metadata and onodes (256:64)
	if b.DataCache != 256*mib || b.MetaCache < 256*mib*256/320-1 || b.MetaCache > 256*mib*256/320+1 || b.Warning != "" {
		t.Errorf("data cache set to 256M: %s, warning %q", b, b.Warning)
	}
	b = Memory(memoryConf(t, map[string]string{"osd_memory_target": "1G", "bluestore_data_cache_size": "1G"}))
	if b.DataCache != gib || b.Warning == "" {
		t.Errorf("data cache set to 1G under a 1G target: %s, warning %q", b, b.Warning)
	}
	b = Memory(memoryConf(t, map[string]string{"osd_memory_target": "512M"}))
	if b.Warning == "" || b.Caches() > 128*mib || b.Caches() < 128*mib-2 {
		t.Errorf("512M target: %s, warning %q (want caches at osd_memory_cache_min and a warning)", b, b.Warning)
	}
	b = Memory(memoryConf(t, map[string]string{"osd_memory_target": "1G", "bluestore_default_buffered_read": "false"}))
	var opts objectstore.Options
	b.storeOptions(&opts)
	if b.DataCache != 0 || opts.DataCacheSize != -1 || b.MetaCache != 256*mib || b.OnodeCache != 64*mib {
		t.Errorf("buffered reads off: %s, store data cache %d (want off, and the other caches whole)", b, opts.DataCacheSize)
	}
}

// TestStoreCommitWindow: the option's default, a setting, and 0, which
// the option's help calls "disabled" and the store must see as never
// waiting (its own 0 would be its default window).
func TestStoreCommitWindow(t *testing.T) {
	for _, c := range []struct {
		set  map[string]string
		want time.Duration
	}{
		{map[string]string{}, 300 * time.Microsecond},
		{map[string]string{"objectstore_commit_window": "0.001"}, time.Millisecond},
		{map[string]string{"objectstore_commit_window": "0"}, -1},
	} {
		if got := storeCommitWindow(memoryConf(t, c.set)); got != c.want {
			t.Errorf("%v: window %v, want %v", c.set, got, c.want)
		}
	}
}

// TestStoreDeferredMax: bluestore_prefer_deferred_size's default (0,
// disabled), a setting, and 0 set explicitly, which the store must see
// as negative (its own 0 would be its default).
func TestStoreDeferredMax(t *testing.T) {
	for _, c := range []struct {
		set  map[string]string
		want int
	}{
		{map[string]string{}, -1},
		{map[string]string{"bluestore_prefer_deferred_size": "16K"}, 16 << 10},
		{map[string]string{"bluestore_prefer_deferred_size": "0"}, -1},
	} {
		if got := storeDeferredMax(memoryConf(t, c.set)); got != c.want {
			t.Errorf("%v: deferred max %d, want %d", c.set, got, c.want)
		}
	}
}
