package osd

// RemoteGrants is the number of remote recovery reservations the OSD
// holds for primaries now (recoveryres.go), for tests.
func RemoteGrants(d *OSD) int {
	d.remoteSlots.mu.Lock()
	defer d.remoteSlots.mu.Unlock()
	return len(d.remoteSlots.held)
}
