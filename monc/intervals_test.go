package monc_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// TestPGIntervalsText: the "pg history" command's entries argument
// carries each interval's PG, epoch, acting set (holes included) and
// whether it is recovering, and bad text is refused.
func TestPGIntervalsText(t *testing.T) {
	ivs := []monc.PGInterval{
		{PG: osdmap.PGID{Pool: 2, Seed: 0x1f}, Epoch: 40, Acting: []int32{3, osdmap.NoOSD, 1}, Recovering: true},
		{PG: osdmap.PGID{Pool: 1, Seed: 0}, Epoch: 7, Acting: []int32{0, 1, 2}},
	}
	text := monc.FormatPGIntervals(ivs)
	if want := "2.1f@40:3,"; !strings.HasPrefix(text, want) || strings.Count(text, ":recovering") != 1 {
		t.Fatalf("text %q", text)
	}
	got, err := monc.ParsePGIntervals(text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ivs) {
		t.Fatalf("parsed %+v, want %+v", got, ivs)
	}
	for _, bad := range []string{"", "2.1@40", "2.1:1,2", "2.1@x:1", "2.1@4:", "2.1@4::recovering"} {
		if _, err := monc.ParsePGIntervals(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
