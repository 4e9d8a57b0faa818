package osdmap

import (
	"fmt"
	"strings"
)

// Flags are the cluster-wide OSD map flags an operator sets with `shoal osd
// set FLAG` (Ceph's CEPH_OSDMAP_* flags, same names and meaning; see Ceph's
// "Troubleshooting OSDs: flags" and the `ceph osd set` reference).
type Flags uint32

// The flags. Pause is PauseRd|PauseWr, as `ceph osd set pause` sets both.
const (
	FlagPauseRd     Flags = 1 << iota // clients hold reads
	FlagPauseWr                       // clients hold writes
	FlagNoUp                          // booting OSDs are not marked up
	FlagNoDown                        // failure reports do not mark OSDs down
	FlagNoOut                         // down OSDs are not marked out after mon_osd_down_out_interval
	FlagNoIn                          // booting OSDs that are out (new, or marked out by the MONs) stay out
	FlagNoBackfill                    // PGs do not backfill
	FlagNoRecover                     // PGs do not recover
	FlagNoScrub                       // no scheduled light scrubs
	FlagNoDeepScrub                   // no scheduled deep scrubs

	FlagPause = FlagPauseRd | FlagPauseWr
)

var flagNames = []struct {
	name string
	f    Flags
}{
	{"pauserd", FlagPauseRd}, {"pausewr", FlagPauseWr}, {"noup", FlagNoUp},
	{"nodown", FlagNoDown}, {"noout", FlagNoOut}, {"noin", FlagNoIn},
	{"nobackfill", FlagNoBackfill}, {"norecover", FlagNoRecover},
	{"noscrub", FlagNoScrub}, {"nodeep-scrub", FlagNoDeepScrub},
}

// ParseFlag returns the flag named name ("noout", "pause", …).
func ParseFlag(name string) (Flags, error) {
	if name == "pause" {
		return FlagPause, nil
	}
	for _, n := range flagNames {
		if n.name == name {
			return n.f, nil
		}
	}
	var all []string
	for _, n := range flagNames {
		all = append(all, n.name)
	}
	return 0, fmt.Errorf("unknown osd map flag %q (one of pause, %s)", name, strings.Join(all, ", "))
}

// Has reports whether every flag of g is set.
func (f Flags) Has(g Flags) bool { return f&g == g }

// Names lists the set flags by name, in Ceph's order.
func (f Flags) Names() []string {
	var s []string
	for _, n := range flagNames {
		if f.Has(n.f) {
			s = append(s, n.name)
		}
	}
	return s
}

// String is the comma-separated Names, as `ceph osd dump` prints flags.
func (f Flags) String() string { return strings.Join(f.Names(), ",") }
