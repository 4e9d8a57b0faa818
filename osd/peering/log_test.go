package peering

import (
	"reflect"
	"testing"
)

func entries(epoch uint32, from, to uint64, oid func(uint64) string) []LogEntry {
	var out []LogEntry
	for s := from; s <= to; s++ {
		out = append(out, LogEntry{Ver: Version{Epoch: epoch, Seq: s}, Op: LogModify, OID: oid(s)})
	}
	return out
}

func letter(s uint64) string { return string(rune('a' + s%26)) }

// TestDivergent: what a copy lacks by the logs — behind, current,
// divergent (a deposed primary's writes nobody else saw) — and logs that
// do not overlap at all.
func TestDivergent(t *testing.T) {
	authE := entries(5, 1, 10, letter)
	auth := Member{ID: 0, Info: Info{LastUpdate: Version{Epoch: 5, Seq: 10}}, Entries: authE}
	behind := Member{ID: 1, Info: Info{LastUpdate: Version{Epoch: 5, Seq: 7}}, Entries: authE[:7]}
	if got, ok := Divergent(auth, behind); !ok || !reflect.DeepEqual(got, []string{"i", "j", "k"}) {
		t.Fatalf("behind: %v %v", got, ok)
	}
	if got, ok := Divergent(auth, auth); !ok || len(got) != 0 {
		t.Fatalf("current member misses %v", got)
	}
	div := append(append([]LogEntry(nil), authE[:7]...), LogEntry{Ver: Version{Epoch: 4, Seq: 8}, OID: "zz"}, LogEntry{Ver: Version{Epoch: 4, Seq: 9}, OID: "yy"})
	dm := Member{ID: 2, Info: Info{LastUpdate: Version{Epoch: 4, Seq: 9}}, Entries: div}
	if got, ok := Divergent(auth, dm); !ok || !reflect.DeepEqual(got, []string{"i", "j", "k", "yy", "zz"}) {
		t.Fatalf("divergent: %v %v", got, ok)
	}
	// the authoritative log was trimmed past everything the copy has
	trimmed := Member{ID: 0, Info: Info{LastUpdate: Version{Epoch: 5, Seq: 10}, LogTail: Version{Epoch: 5, Seq: 8}}, Entries: authE[8:]}
	if got, ok := Divergent(trimmed, behind); ok {
		t.Fatalf("logs that do not overlap gave %v", got)
	}
	// the tail itself is covered
	atTail := Member{ID: 3, Info: Info{LastUpdate: Version{Epoch: 5, Seq: 8}}}
	if got, ok := Divergent(trimmed, atTail); !ok || !reflect.DeepEqual(got, []string{"j", "k"}) {
		t.Fatalf("at the tail: %v %v", got, ok)
	}
}
