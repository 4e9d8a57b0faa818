package monc

import (
	"slices"
	"testing"

	"github.com/shoal-project/shoal/msgr"
)

func voters(epoch uint64, addrs ...string) MonMap {
	mm := MonMap{Epoch: epoch}
	for _, a := range addrs {
		mm.Mons = append(mm.Mons, MonInfo{Addr: a, Voter: true})
	}
	return mm
}

// A client follows the MON map's changes from the first map it sees: the
// addresses it was given stay (a MON behind a proxy), MONs added are
// dialled, MONs removed dropped, older maps ignored, and when every MON
// it talks to has left it takes the map's voters.
func TestFollow(t *testing.T) {
	c, err := New([]string{"proxy:1"}, msgr.Keyring{Name: "client.admin"}, msgr.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	step := func(what string, mm MonMap, want ...string) {
		t.Helper()
		c.follow(mm)
		if got := c.Addrs(); !slices.Equal(got, want) {
			t.Fatalf("%s: the client talks to %v, want %v", what, got, want)
		}
	}
	step("the first map", voters(5, "a:1"), "proxy:1")
	step("a MON added", voters(7, "a:1", "b:1"), "proxy:1", "b:1")
	step("an older map", voters(6, "a:1"), "proxy:1", "b:1")
	step("a map with no voters", MonMap{Epoch: 8, Mons: []MonInfo{{Addr: "c:1"}}}, "proxy:1", "b:1")
	step("a non-voter promoted", voters(9, "a:1", "b:1", "c:1"), "proxy:1", "b:1", "c:1")
	step("MONs removed", voters(10, "a:1", "c:1"), "proxy:1", "c:1")
	step("the MON behind the proxy and c removed", voters(11, "d:1"), "proxy:1", "d:1")
	c2, _ := New([]string{"a:1"}, msgr.Keyring{Name: "client.admin"}, msgr.Config{})
	defer c2.Close()
	c2.follow(voters(1, "a:1"))
	c2.follow(voters(2, "b:1", "c:1"))
	if got := c2.Addrs(); !slices.Equal(got, []string{"b:1", "c:1"}) {
		t.Fatalf("every MON it talked to left: %v, want the map's voters", got)
	}
}
