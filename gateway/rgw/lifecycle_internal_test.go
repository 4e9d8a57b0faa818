package rgw

import (
	"testing"
	"time"
)

func TestWorkTime(t *testing.T) {
	for _, tc := range []struct {
		s          string
		start, end int
		ok         bool
	}{
		{"00:00-06:00", 0, 360, true}, {"22:30-02:15", 1350, 135, true}, {"00:00-24:00", 0, 1440, true},
		{"6-7", 0, 0, false}, {"00:00", 0, 0, false}, {"25:00-01:00", 0, 0, false}, {"01:60-02:00", 0, 0, false},
	} {
		start, end, err := parseWorkTime(tc.s)
		if (err == nil) != tc.ok || (tc.ok && (start != tc.start || end != tc.end)) {
			t.Errorf("parseWorkTime(%q) = %d, %d, %v", tc.s, start, end, err)
		}
	}
	at := func(h, m int) time.Time { return time.Date(2026, 1, 1, h, m, 0, 0, time.Local) }
	if !inWorkTime(at(5, 59), 0, 360) || inWorkTime(at(6, 0), 0, 360) {
		t.Error("window 00:00-06:00")
	}
	if !inWorkTime(at(23, 0), 1350, 135) || !inWorkTime(at(1, 0), 1350, 135) || inWorkTime(at(12, 0), 1350, 135) {
		t.Error("window past midnight 22:30-02:15")
	}
}

func TestLifecycleDays(t *testing.T) {
	mtime := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	// days count from the start of the current day (UTC), as RGW's
	if lcDue(mtime, time.Date(2026, 3, 2, 23, 30, 0, 0, time.UTC), 1, 0) {
		t.Error("due 24.5 h later, before the next day's start plus one day")
	}
	if !lcDue(mtime, time.Date(2026, 3, 3, 0, 1, 0, 0, time.UTC), 1, 0) {
		t.Error("not due on the second day after")
	}
	if !lcDue(mtime, mtime.Add(2*time.Second), 2, time.Second) || lcDue(mtime, mtime.Add(time.Second), 2, time.Second) {
		t.Error("debug interval days")
	}
	if _, err := LifecycleDate("2017-09-27"); err != nil {
		t.Error(err)
	}
	if _, err := LifecycleDate("2017-09-27T00:00:00Z"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"20200101", "1970-08-22T03:28:21Z", "2017-09-27T00:00:00+02:00"} {
		if _, err := LifecycleDate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
