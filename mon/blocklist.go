package mon

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/osdmap"
)

// BlocklistAdd refuses a client (an entity, or one instance of it) at
// every OSD until Until (Unix nanoseconds, set by the MON that received
// the command), as `ceph osd blocklist add`. Adding an entry again
// moves its time.
type BlocklistAdd struct {
	Entry string
	Until int64
}

// Apply implements Command.
func (c BlocklistAdd) Apply(s *State) (*osdmap.Incremental, string, error) {
	if err := osdmap.ParseBlocklistEntry(c.Entry); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if c.Until <= 0 {
		return nil, "", fmt.Errorf("%w: blocklist %s: no expiry time", ErrInvalid, c.Entry)
	}
	inc := s.next()
	inc.NewBlocklist = map[string]int64{c.Entry: c.Until}
	return inc, fmt.Sprintf("blocklisting %s until %s", c.Entry, time.Unix(0, c.Until).UTC().Format(time.RFC3339)), nil
}

// BlocklistRm lets a blocklisted client in again.
type BlocklistRm struct{ Entry string }

// Apply implements Command.
func (c BlocklistRm) Apply(s *State) (*osdmap.Incremental, string, error) {
	if _, ok := s.Map.Blocklist[c.Entry]; !ok {
		return nil, "", fmt.Errorf("%s is not blocklisted: %w", c.Entry, ErrNotFound)
	}
	inc := s.next()
	inc.OldBlocklist = []string{c.Entry}
	return inc, fmt.Sprintf("un-blocklisting %s", c.Entry), nil
}
