package osd_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/osd"
)

// resizeRecorder is a store that records the cache sizes it is given.
type resizeRecorder struct {
	objectstore.Store
	mu           sync.Mutex
	data, onodes int64
}

func (r *resizeRecorder) SetCacheSizes(data int64, onodes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.data, r.onodes = data, int64(onodes)
}

func (r *resizeRecorder) sizes() (int64, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.data, r.onodes
}

// TestMemoryTargetAtRuntime: osd_memory_target set in the MONs'
// configuration database resizes a running OSD's data and onode caches
// to the budget the new target gives, without a restart.
func TestMemoryTargetAtRuntime(t *testing.T) {
	c := startCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := &resizeRecorder{}
	c.Wrap = func(_ int, s objectstore.Store) objectstore.Store { rec.Store = s; return rec }
	c.RestartOSD(0)
	cl := c.Client(ctx)
	meta := osd.Memory(c.Conf.For("osd.0")).MetaCache // the metadata cache keeps its size from start
	for _, target := range []string{"1G", "2G"} {
		want := osd.MemoryWithMeta(config.NewFile(map[string]map[string]string{"osd": {"osd_memory_target": target}}).Over(c.Conf).For("osd.0"), meta)
		monDo(ctx, t, cl, "config set", "who", "osd", "option", "osd_memory_target", "value", target)
		eventually(ctx, t, func() bool {
			d, o := rec.sizes()
			return d == want.DataCache && o == want.OnodeCache
		}, func() string {
			d, o := rec.sizes()
			return fmt.Sprintf("osd_memory_target %s: caches resized to %d and %d, want %d and %d", target, d, o, want.DataCache, want.OnodeCache)
		})
	}
}
