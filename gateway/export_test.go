package gateway

import "time"

// SetFailpoint makes the store stop PUTs where a crashed gateway would
// ("before-head", "before-complete"; "" for none), and resolve pending
// index operations of any age.
func (s *Store) SetFailpoint(fp string) {
	s.failpoint = fp
	s.pendingGrace = time.Duration(0)
}
