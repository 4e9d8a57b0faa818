package osd

import (
	"fmt"

	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/objectstore"
)

// MemoryBudget is how an OSD divides osd_memory_target among what holds
// its memory, in bytes. BlueStore meets the target by resizing its caches
// (bluestore_cache_autotune: what osd_memory_base, the memory the OSD
// needs anyway, leaves of the target goes to the caches, never below
// osd_memory_cache_min; Ceph's "BlueStore Config Reference", "Cache
// Size"); Shoal does the same once, when the OSD starts:
//
//	Target ≥ Base + Recovery + Memtables + DataCache + MetaCache + OnodeCache
//
// Recovery is what recovery and backfill may hold of object data at once
// (Target/8, recoveryMemory); Memtables is the most the metadata store's
// memtables hold (objectstore.MemtableMemory). The caches get the rest,
// split in the proportion of their configured sizes. A cache size the
// configuration sets explicitly (bluestore_data_cache_size,
// bluestore_cache_size) is kept as given and the others share what it
// leaves; when those exceed the rest, Warning says so and the OSD may go
// past its target. Caches never shrink below osd_memory_cache_min in all,
// and never grow past their configured sizes: a large target leaves them
// as configured.
type MemoryBudget struct {
	Target, Base, Recovery, Memtables int64
	DataCache, MetaCache, OnodeCache  int64 // 0 DataCache: no data cache
	Warning                           string
}

// recoveryShare is the part of osd_memory_target recovery may hold in
// object data: an eighth.
func recoveryShare(target int64) int64 { return max(target/8, 1) }

// Memory returns the OSD's memory budget under cfg (its [osd] options).
func Memory(cfg *config.Config) MemoryBudget { return memory(cfg, -1) }

// memory is Memory with the metadata cache, if meta ≥ 0, fixed at meta
// bytes as if set explicitly: the size the store opened it with, which
// cannot change while it runs.
func memory(cfg *config.Config, meta int64) MemoryBudget {
	b := MemoryBudget{
		Target:     int64(cfg.Size("osd_memory_target")),
		Base:       int64(cfg.Size("osd_memory_base")),
		Memtables:  objectstore.MemtableMemory,
		DataCache:  int64(cfg.Size("bluestore_data_cache_size")),
		MetaCache:  int64(cfg.Size("bluestore_cache_size")),
		OnodeCache: objectstore.DefaultOnodeCache,
	}
	b.Recovery = recoveryShare(b.Target)
	if !cfg.Bool("bluestore_default_buffered_read") {
		b.DataCache = 0
	}
	dataExplicit := cfg.IsSet("bluestore_data_cache_size")
	metaExplicit := cfg.IsSet("bluestore_cache_size")
	if meta >= 0 {
		b.MetaCache, metaExplicit = meta, true
	}
	cacheMin := int64(cfg.Size("osd_memory_cache_min"))
	share := max(b.Target-b.Base-b.Recovery-b.Memtables, cacheMin)
	fixed, scaled := int64(0), b.OnodeCache // sizes kept as set, sizes to fit
	if dataExplicit {
		fixed += b.DataCache
	} else {
		scaled += b.DataCache
	}
	if metaExplicit {
		fixed += b.MetaCache
	} else {
		scaled += b.MetaCache
	}
	if floor := b.Base + b.Recovery + b.Memtables + cacheMin; b.Target < floor {
		b.Warning = fmt.Sprintf("osd_memory_target %s is below what the OSD needs outside its caches plus osd_memory_cache_min (%s): it will use more than its target",
			sizeString(b.Target), sizeString(floor))
	}
	if fixed+scaled <= share {
		return b
	}
	left := share - fixed
	if left < 0 {
		left = 0
		if b.Warning != "" {
			b.Warning += "; "
		}
		b.Warning += fmt.Sprintf("cache sizes set in the configuration (%s) exceed the %s osd_memory_target %s leaves for caches: the OSD may use more than its target",
			sizeString(fixed), sizeString(share), sizeString(b.Target))
	}
	scale := func(n int64) int64 { return int64(float64(n) * float64(left) / float64(scaled)) }
	if !dataExplicit {
		b.DataCache = scale(b.DataCache)
	}
	if !metaExplicit {
		b.MetaCache = max(scale(b.MetaCache), 1<<20) // bluestore_cache_size's minimum
	}
	b.OnodeCache = max(scale(b.OnodeCache), 1<<20)
	return b
}

// Caches is the memory of the three caches together.
func (b MemoryBudget) Caches() int64 { return b.DataCache + b.MetaCache + b.OnodeCache }

// GoMemLimit is the soft limit for the Go runtime's heap (GOMEMLIMIT):
// the target less what the metadata store allocates outside the Go heap
// (its block cache and memtables, in C memory when built with cgo).
func (b MemoryBudget) GoMemLimit() int64 {
	return max(b.Target-pebbleOffHeap*(b.MetaCache+b.Memtables), b.Target/2)
}

// storeOptions sets the cache sizes of opts from the budget.
func (b MemoryBudget) storeOptions(opts *objectstore.Options) {
	opts.CacheSize = b.MetaCache
	opts.OnodeCacheSize = int(b.OnodeCache)
	opts.DataCacheSize = b.DataCache
	if b.DataCache == 0 {
		opts.DataCacheSize = -1
	}
}

// String describes the budget for the OSD's log.
func (b MemoryBudget) String() string {
	return fmt.Sprintf("target %s: base %s, recovery %s, memtables %s, data cache %s, metadata cache %s, onode cache %s",
		sizeString(b.Target), sizeString(b.Base), sizeString(b.Recovery), sizeString(b.Memtables),
		sizeString(b.DataCache), sizeString(b.MetaCache), sizeString(b.OnodeCache))
}

// sizeString prints n bytes in MiB (or GiB when whole).
func sizeString(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%dG", n>>30)
	}
	return fmt.Sprintf("%dM", n>>20)
}

// cacheResizer is a store whose caches can be resized while it runs
// (objectstore.BlockStore).
type cacheResizer interface {
	SetCacheSizes(data int64, onodes int)
}

// applyMemory applies the memory budget of configuration cfg if it
// changed (osd_memory_target or the cache options set in the MONs'
// database, which the OSD learns after it starts): the store's data and
// onode caches are resized at once, and the Go heap's soft limit follows;
// the metadata store's block cache keeps the size the configuration file
// gave it at start (Pebble's cannot be resized), and the budget counts it
// at that size. Recovery's share is read from the configuration where it
// is used.
func (d *OSD) applyMemory(cfg *config.Config) {
	mem := memory(cfg, d.mem.MetaCache)
	if mem == d.mem {
		return
	}
	d.mem = mem
	if mem.Warning != "" {
		d.log.Warn("osd: " + mem.Warning)
	}
	d.log.Info("memory budget changed: data and onode caches resized (the metadata cache keeps its size from start)", "budget", mem.String())
	if r, ok := d.store.(cacheResizer); ok {
		r.SetCacheSizes(mem.DataCache, int(mem.OnodeCache))
	}
	if d.o.SetMemoryLimit != nil {
		d.o.SetMemoryLimit(mem.GoMemLimit())
	}
}
