package osd

import "github.com/shoal-project/shoal/config"

// RemoteGrants is the number of remote recovery reservations the OSD
// holds for primaries now (recoveryres.go), for tests.
func RemoteGrants(d *OSD) int {
	d.remoteSlots.mu.Lock()
	defer d.remoteSlots.mu.Unlock()
	return len(d.remoteSlots.held)
}

// MemoryWithMeta is the memory budget a running OSD applies under cfg,
// its metadata cache fixed at the meta bytes it started with.
func MemoryWithMeta(cfg *config.Config, meta int64) MemoryBudget { return memory(cfg, meta) }
