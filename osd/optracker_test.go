package osd

import (
	"testing"
	"time"
)

func TestOpTracker(t *testing.T) {
	var tr opTracker
	t0 := time.Unix(1000, 0)
	a := tr.begin(t0)
	b := tr.begin(t0.Add(10 * time.Second))
	c := tr.begin(t0.Add(20 * time.Second))
	if n, oldest := tr.slow(t0.Add(15 * time.Second)); n != 2 || !oldest.Equal(t0) {
		t.Errorf("ops before t0+15s: %d, oldest %v; want 2, %v", n, oldest, t0)
	}
	tr.end(a)
	if n, oldest := tr.slow(t0.Add(15 * time.Second)); n != 1 || !oldest.Equal(t0.Add(10*time.Second)) {
		t.Errorf("after the oldest ended: %d, oldest %v; want 1, t0+10s", n, oldest)
	}
	tr.end(b)
	tr.end(c)
	if n, oldest := tr.slow(t0.Add(time.Hour)); n != 0 || !oldest.IsZero() {
		t.Errorf("all ended: %d, %v", n, oldest)
	}
}
