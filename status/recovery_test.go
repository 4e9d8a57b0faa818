package status

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/osdop"
)

// TestRecoveryLine: `shoal status` shows the recovery rate, the objects
// left and the time they take at that rate, as `ceph -s`'s io section.
func TestRecoveryLine(t *testing.T) {
	tests := []struct {
		toRecover int64
		ops       float64
		want      string
	}{
		{1500, 100, "100 objects/s; 1500 objects to copy, ETA 15s"},
		{5, 10, "10 objects/s; 5 objects to copy, ETA 1s"}, // half a second, rounded up
		{90, 0.5, "0 objects/s; 90 objects to copy, ETA 3m0s"},
		{0, 40, "40 objects/s\n"},
	}
	for _, tc := range tests {
		s := &Status{Health: "HEALTH_WARN", ToRecover: tc.toRecover, RecoveryOpsRate: tc.ops, RecoveryBytesRate: 1 << 20, PGStates: map[string]int{}}
		var b bytes.Buffer
		s.Text(&b)
		if !strings.Contains(b.String(), "recovery: ") || !strings.Contains(b.String(), tc.want) {
			t.Errorf("%d objects at %g/s: %q, want it to show %q", tc.toRecover, tc.ops, b.String(), tc.want)
		}
	}
}

// TestInactiveLine: health detail says what a down PG waits for and what
// to do about it.
func TestInactiveLine(t *testing.T) {
	if got := inactiveLine(osdop.PGStats{PGID: "1.7", State: "peering"}); got != "1.7 is peering" {
		t.Errorf("peering PG: %q", got)
	}
	got := inactiveLine(osdop.PGStats{PGID: "1.7", State: "down", BlockedBy: "waiting for osd.3"})
	if !strings.HasPrefix(got, "1.7 is down: waiting for osd.3; ") || !strings.Contains(got, "shoal osd lost") {
		t.Errorf("down PG: %q", got)
	}
}
