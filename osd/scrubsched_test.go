package osd

import (
	"testing"
	"time"
)

// TestScrubHours: osd_scrub_begin_hour and osd_scrub_end_hour bound the
// hours scheduled scrubs may start in, wrapping past midnight.
func TestScrubHours(t *testing.T) {
	tests := []struct {
		begin, end int
		in, out    []int
	}{
		{0, 0, []int{0, 5, 23}, nil},               // equal ends: any hour
		{1, 5, []int{1, 2, 4}, []int{0, 5, 6, 23}}, // [1, 5)
		{22, 6, []int{22, 23, 0, 5}, []int{6, 12, 21}},
	}
	for _, tc := range tests {
		for _, h := range tc.in {
			if !scrubHours(h, tc.begin, tc.end) {
				t.Errorf("hours %d-%d: %d:00 refused", tc.begin, tc.end, h)
			}
		}
		for _, h := range tc.out {
			if scrubHours(h, tc.begin, tc.end) {
				t.Errorf("hours %d-%d: %d:00 allowed", tc.begin, tc.end, h)
			}
		}
	}
}

// TestScrubDue: which scheduled scrub a PG is due for, with min interval 1
// day and deep interval 7 days (Ceph's defaults) and max interval 10 days
// (Ceph's is 7, which would leave no deep scrub waiting for its hours),
// outside the allowed hours or above the load threshold (allowed false),
// and under the flags.
func TestScrubDue(t *testing.T) {
	day := 24 * time.Hour
	minI, maxI, deepI := day, 10*day, 7*day
	tests := []struct {
		name                     string
		sinceLight, sinceDeep    time.Duration
		allowed, noScrub, noDeep bool
		kind                     int
		wait                     time.Duration
	}{
		{"nothing due", 12 * time.Hour, 3 * day, true, false, false, scrubNone, 0},
		{"light due", 30 * time.Hour, 3 * day, true, false, false, scrubLight, 6 * time.Hour},
		{"light due, not allowed now", 30 * time.Hour, 3 * day, false, false, false, scrubNone, 0},
		{"light past the max interval, not allowed", 11 * day, 3 * day, false, false, false, scrubLight, 10 * day},
		{"deep before light", 30 * time.Hour, 8 * day, true, false, false, scrubDeep, day},
		{"deep due, not allowed: waits", 2 * time.Hour, 8*day - time.Hour, false, false, false, scrubNone, 0},
		{"deep past the max interval, not allowed", 2 * time.Hour, 10*day + time.Minute, false, false, false, scrubDeep, 3*day + time.Minute},
		{"nodeep-scrub: the light one", 30 * time.Hour, 8 * day, true, false, true, scrubLight, 6 * time.Hour},
		{"noscrub and nodeep-scrub", 30 * 24 * time.Hour, 30 * day, true, true, true, scrubNone, 0},
		{"noscrub leaves deep", 30 * time.Hour, 8 * day, true, true, false, scrubDeep, day},
	}
	for _, tc := range tests {
		kind, wait := scrubDue(tc.sinceLight, tc.sinceDeep, minI, maxI, deepI, tc.allowed, tc.noScrub, tc.noDeep)
		if kind != tc.kind || wait != tc.wait {
			t.Errorf("%s: kind %d, %v past due; want %d, %v", tc.name, kind, wait, tc.kind, tc.wait)
		}
	}
}
