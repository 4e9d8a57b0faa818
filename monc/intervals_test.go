package monc_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// TestPGHistoryArgs: the "pg history" command's arguments carry each
// interval's PG, epoch, acting set (holes included) and whether it is
// recovering — the mark apart from the entries, which a MON that does
// not know it reads alone — and bad ones are refused.
func TestPGHistoryArgs(t *testing.T) {
	ivs := []monc.PGInterval{
		{PG: osdmap.PGID{Pool: 1, Seed: 0}, Epoch: 7, Acting: []int32{0, 1, 2}},
		{PG: osdmap.PGID{Pool: 2, Seed: 0x1f}, Epoch: 40, Acting: []int32{3, osdmap.NoOSD, 1}, Recovering: true},
	}
	args := monc.PGHistoryArgs(ivs)
	if args["recovering"] != "1" || !strings.HasPrefix(args["entries"], "1.0@7:0,1,2 2.1f@40:3,") {
		t.Fatalf("args %q", args)
	}
	got, err := monc.ParsePGHistoryArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ivs) {
		t.Fatalf("parsed %+v, want %+v", got, ivs)
	}
	old, err := monc.ParsePGIntervals(args["entries"]) // an older MON's reading
	if err != nil || len(old) != 2 || old[1].Recovering {
		t.Fatalf("entries alone: %+v %v", old, err)
	}
	if _, ok := monc.PGHistoryArgs(ivs[:1])["recovering"]; ok {
		t.Fatal("a recovering argument with no interval recovering")
	}
	for _, bad := range []map[string]string{
		{}, {"entries": "2.1@40"}, {"entries": "2.1:1,2"}, {"entries": "2.1@x:1"}, {"entries": "2.1@4:"},
		{"entries": "2.1@4:1", "recovering": "1"}, {"entries": "2.1@4:1", "recovering": "x"},
	} {
		if _, err := monc.ParsePGHistoryArgs(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
