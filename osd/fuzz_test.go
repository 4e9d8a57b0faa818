package osd

import (
	"testing"

	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
)

// FuzzDecodePeerMsg: the messages between OSDs — with PG log entries,
// PG infos, whole objects with clones, store transactions and leases —
// decode to an error or a value, never a panic. Only an authenticated OSD
// may send them (authorizeMsg); a fuzzed one must not crash its peer
// either. Scrub maps and ping replies too.
func FuzzDecodePeerMsg(f *testing.F) {
	txn := &objectstore.Transaction{}
	txn.WriteFull("1.2_head", "obj", []byte("data"))
	txn.OmapSet("1.2_head", "obj", []omap.KV{{Key: "k", Value: []byte("v")}})
	f.Add((&peerMsg{PG: osdmap.PGID{Pool: 1, Seed: 2}, Interval: 7, Entry: peering.LogEntry{OID: "obj", Stashed: []string{"s"}},
		Entries: []peering.LogEntry{{OID: "a"}, {OID: "b", Created: []string{"c"}}}, Names: []string{"x"}, Txn: txn,
		Obj:       &objState{Exists: true, Data: []byte("data"), Attrs: []omap.KV{{Key: "_", Value: []byte("v")}}, Clones: []cloneState{{ID: 3, Obj: &objState{Exists: true}}}},
		Intervals: [][]int32{{0, 1}}, Missing: []string{"m"}, Leases: []leaseClaim{{}}}).encode())
	f.Add(encodeScrubMap([]scrubObj{{OID: "a", Size: 3, Err: "e"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodePeerMsg(b)
		decodeScrubMap(b)
		decodePingReply(b)
	})
}
