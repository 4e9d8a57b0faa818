package status

import (
	"testing"

	"github.com/shoal-project/shoal/osdop"
)

func TestSlowOps(t *testing.T) {
	if _, ok := slowOps([]osdop.Stats{{ID: 0}, {ID: 1}}); ok {
		t.Error("no slow ops: a check")
	}
	c, ok := slowOps([]osdop.Stats{{ID: 0, SlowOps: 3, SlowOpOldest: 41.6}, {ID: 1}, {ID: 2, SlowOps: 1, SlowOpOldest: 33}})
	if !ok || c.Severity != Warn {
		t.Fatalf("slow ops on osd.0 and osd.2: %+v, %v", c, ok)
	}
	if want := "4 slow ops, oldest one blocked for 42 sec, daemons [osd.0,osd.2] have slow ops"; c.Summary != want {
		t.Errorf("summary %q, want %q", c.Summary, want)
	}
	if len(c.Detail) != 2 {
		t.Errorf("detail %q: want one line per OSD with slow ops", c.Detail)
	}
}
