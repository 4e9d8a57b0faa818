package crush

import (
	"fmt"
	"strings"
)

// DefaultTypes are Ceph's bucket types (ids as in a default Ceph map).
var DefaultTypes = []string{"osd", "host", "chassis", "rack", "row", "pdu", "pod", "room", "datacenter", "zone", "region", "root"}

// SimpleSpec describes a regular hierarchy: a root "default" over racks
// (none when Racks is 0) over hosts over OSDs, all straw2.
type SimpleSpec struct {
	Racks         int     // 0: hosts directly under the root
	HostsPerRack  int     // hosts per rack (or in total when Racks is 0); 0: an empty root, a new cluster's map
	OSDsPerHost   int     // ≥ 1 when there are hosts
	Weight        float64 // CRUSH weight of each OSD (by convention its size in TiB); 0 means 1.0
	Class         string  // device class of every OSD, or ""
	FailureDomain string  // bucket type replicas spread across; default "host"
}

// SimpleText writes the hierarchy as a text map with optimal tunables and
// Ceph's two default rules: replicated_rule (id 0, chooseleaf firstn over
// the failure domain) and erasure_rule (id 1, chooseleaf indep with
// set_chooseleaf_tries 5 and set_choose_tries 100, as `ceph osd
// erasure-code-profile` rules are made).
func SimpleText(s SimpleSpec) (string, error) {
	if s.HostsPerRack < 0 || s.OSDsPerHost < 0 || s.Racks < 0 || (s.HostsPerRack > 0 && s.OSDsPerHost == 0) {
		return "", fmt.Errorf("crush: simple map of %d racks × %d hosts × %d OSDs: counts must be ≥ 0, and hosts need OSDs", s.Racks, s.HostsPerRack, s.OSDsPerHost)
	}
	if s.Weight == 0 {
		s.Weight = 1
	}
	if s.FailureDomain == "" {
		s.FailureDomain = "host"
	}
	found := false
	for _, t := range DefaultTypes {
		found = found || t == s.FailureDomain
	}
	if !found {
		return "", fmt.Errorf("crush: unknown failure domain %q (one of %s)", s.FailureDomain, strings.Join(DefaultTypes, ", "))
	}
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("# begin crush map\n")
	writeTunables(&sb, OptimalTunables())
	w("\n# devices\n")
	hosts := s.HostsPerRack * max(s.Racks, 1)
	for d := 0; d < hosts*s.OSDsPerHost; d++ {
		w("device %d osd.%d", d, d)
		if s.Class != "" {
			w(" class %s", s.Class)
		}
		w("\n")
	}
	w("\n# types\n")
	for i, name := range DefaultTypes {
		w("type %d %s\n", i, name)
	}
	w("\n# buckets\n")
	for h := 0; h < hosts; h++ {
		w("host host%d {\n\talg straw2\n\thash 0\n", h)
		for o := 0; o < s.OSDsPerHost; o++ {
			w("\titem osd.%d weight %.5f\n", h*s.OSDsPerHost+o, s.Weight)
		}
		w("}\n")
	}
	top, topCount := "host", hosts
	if s.Racks > 0 {
		for r := 0; r < s.Racks; r++ {
			w("rack rack%d {\n\talg straw2\n\thash 0\n", r)
			for h := r * s.HostsPerRack; h < (r+1)*s.HostsPerRack; h++ {
				w("\titem host%d\n", h)
			}
			w("}\n")
		}
		top, topCount = "rack", s.Racks
	}
	w("root default {\n\talg straw2\n\thash 0\n")
	for i := 0; i < topCount; i++ {
		w("\titem %s%d\n", top, i)
	}
	w("}\n\n# rules\n")
	w("rule replicated_rule {\n\tid 0\n\ttype replicated\n\tmin_size 1\n\tmax_size 10\n\tstep take default\n\tstep chooseleaf firstn 0 type %s\n\tstep emit\n}\n", s.FailureDomain)
	w("rule erasure_rule {\n\tid 1\n\ttype erasure\n\tmin_size 3\n\tmax_size 20\n\tstep set_chooseleaf_tries 5\n\tstep set_choose_tries 100\n\tstep take default\n\tstep chooseleaf indep 0 type %s\n\tstep emit\n}\n", s.FailureDomain)
	w("\n# end crush map\n")
	return sb.String(), nil
}

// Simple builds the map SimpleText describes.
func Simple(s SimpleSpec) (*Map, error) {
	text, err := SimpleText(s)
	if err != nil {
		return nil, err
	}
	return Compile([]byte(text))
}
