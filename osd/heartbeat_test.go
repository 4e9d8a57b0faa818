package osd

import (
	"slices"
	"testing"
)

// Heartbeat peers: the OSDs sharing PGs, then the next ones around the
// ring of up ids, up to the minimum; in a small cluster, every other OSD.
func TestPickHeartbeatPeers(t *testing.T) {
	up := []int32{0, 1, 2, 3, 5, 8, 9, 11, 12, 13, 14, 15, 20, 21}
	for _, c := range []struct {
		self   int32
		shared []int32
		min    int
		want   []int32
	}{
		{self: 3, shared: []int32{12, 20, 3}, min: 5, want: []int32{5, 8, 9, 12, 20}},
		{self: 20, shared: nil, min: 3, want: []int32{0, 1, 21}},                                      // wraps around
		{self: 4, shared: []int32{4, 7}, min: 2, want: []int32{5, 8}},                                 // self down, 7 not up
		{self: 9, shared: []int32{0, 1, 2, 3, 5, 8, 11}, min: 2, want: []int32{0, 1, 2, 3, 5, 8, 11}}, // all shared kept
		{self: 2, shared: nil, min: 100, want: []int32{0, 1, 3, 5, 8, 9, 11, 12, 13, 14, 15, 20, 21}},
	} {
		shared := map[int32]bool{}
		for _, o := range c.shared {
			shared[o] = true
		}
		if got := pickHeartbeatPeers(c.self, up, shared, c.min); !slices.Equal(got, c.want) {
			t.Errorf("osd.%d sharing pgs with %v, min %d: peers %v, want %v", c.self, c.shared, c.min, got, c.want)
		}
	}
}
