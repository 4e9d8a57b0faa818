package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte count as rados bench's -b and -O options accept
// it: a decimal integer optionally followed by a binary unit K, M, G or T
// (case-insensitive, powers of 1024), itself optionally followed by "i"
// and/or "B": "4096", "4K", "4KiB", "4M", "1G", "512B". It returns an error
// for an empty, negative, malformed or overflowing value.
func ParseSize(s string) (int, error) {
	orig := s
	s = strings.TrimSpace(s)
	u := strings.ToUpper(s)
	u = strings.TrimSuffix(u, "B")
	hasI := strings.HasSuffix(u, "I")
	u = strings.TrimSuffix(u, "I")
	shift := 0
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
		if shift != 0 {
			u = u[:n-1]
		}
	}
	if u == "" || u[0] == '+' || u[0] == '-' || (hasI && shift == 0) {
		return 0, fmt.Errorf("bench: invalid size %q", orig)
	}
	v, err := strconv.ParseUint(u, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("bench: invalid size %q", orig)
	}
	if v > uint64(math.MaxInt)>>shift {
		return 0, fmt.Errorf("bench: size %q overflows", orig)
	}
	return int(v << shift), nil
}
