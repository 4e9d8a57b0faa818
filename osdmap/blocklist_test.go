package osdmap_test

import (
	"testing"
	"time"

	"github.com/shoal-project/shoal/osdmap"
)

func TestBlocklist(t *testing.T) {
	m := testMap(t)
	now := time.Unix(1000, 0)
	inst := osdmap.InstanceName("client.a", 0xbeef)
	next, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewBlocklist: map[string]int64{
		inst: now.Add(time.Minute).UnixNano(), "client.b": now.Add(-time.Second).UnixNano(), "10.0.0.9": now.Add(time.Minute).UnixNano()}})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := osdmap.Decode(next.Encode())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		entity string
		nonce  uint64
		ip     string
		want   bool
	}{
		{"client.a", 0xbeef, "", true},          // the instance listed
		{"client.a", 0xbeee, "10.0.0.1", false}, // another instance of the same entity
		{"client.b", 1, "", false},              // expired
		{"client.c", 0xbeef, "", false},
		{"client.c", 0xbeef, "10.0.0.9", true}, // from a listed address
	} {
		if got := m2.Blocklisted(c.entity, c.nonce, c.ip, now); got != c.want {
			t.Errorf("Blocklisted(%s, %x, %q) = %v", c.entity, c.nonce, c.ip, got)
		}
	}
	if got := m2.BlocklistEntries(now); len(got) != 2 || got[0] != "10.0.0.9" || got[1] != inst {
		t.Fatalf("entries in force: %v", got)
	}
	m3, err := m2.Apply(&osdmap.Incremental{Epoch: m2.Epoch + 1, OldBlocklist: []string{inst}, NewBlocklist: map[string]int64{"client.a": now.Add(time.Hour).UnixNano()}})
	if err != nil {
		t.Fatal(err)
	}
	if !m3.Blocklisted("client.a", 7, "", now) || m2.Blocklisted("client.a", 7, "", now) {
		t.Fatal("an entity entry refuses every instance, and only from its epoch")
	}
	for _, bad := range []string{"osd.1", "client.", "client.a/xyz", "mon.a", "10.0.0.300"} {
		if _, err := m.Apply(&osdmap.Incremental{Epoch: m.Epoch + 1, NewBlocklist: map[string]int64{bad: 1}}); err == nil {
			t.Errorf("blocklist entry %q accepted", bad)
		}
	}
}
