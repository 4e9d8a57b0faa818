package osd

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/osdmap"
)

// TestScrubSlots: at most max PGs hold a grant; a PG that holds one keeps
// it; a release or a grant unused for scrubGrantTTL frees the slot.
func TestScrubSlots(t *testing.T) {
	var s scrubSlots
	t0 := time.Unix(1000, 0)
	a, b, c := osdmap.PGID{Pool: 1, Seed: 0}, osdmap.PGID{Pool: 1, Seed: 1}, osdmap.PGID{Pool: 1, Seed: 2}
	if !s.reserve(a, t0, 2) || !s.reserve(b, t0, 2) {
		t.Fatal("two grants of two refused")
	}
	if s.reserve(c, t0, 2) {
		t.Fatal("a third grant of two given")
	}
	if !s.reserve(a, t0.Add(time.Second), 2) {
		t.Fatal("a PG holding a grant refused it again")
	}
	s.release(b)
	if !s.reserve(c, t0.Add(time.Second), 2) {
		t.Fatal("a released slot not given")
	}
	// a is refreshed by its scrub's requests, c is not: c expires
	s.touch(a, t0.Add(scrubGrantTTL))
	if !s.reserve(b, t0.Add(scrubGrantTTL+2*time.Second), 2) {
		t.Fatal("an expired grant still holds its slot")
	}
	if s.reserve(c, t0.Add(scrubGrantTTL+2*time.Second), 2) {
		t.Fatal("a refreshed grant expired")
	}
}
