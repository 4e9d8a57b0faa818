package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/config"
)

// editConf changes options and sections in place: comments, order and
// the other sections stay, an option spelt another way is replaced, and
// the result is written only if it parses.
func TestEditConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shoal.conf")
	orig := "# a comment\n[global]\nmon host = 127.0.0.1:6789\nfsid = x\n\n[mon.a]\npublic_addr = 127.0.0.1:6789\n\n[mon.b]\npublic_addr = 127.0.0.1:6791\n\n[osd]\n# keep me\nosd_heartbeat_interval = 1\n"
	if err := os.WriteFile(path, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	err := editConf(path, func(f *confText) {
		f.set("global", "mon_host", "127.0.0.1:6791,127.0.0.1:6793")
		f.set("global", "mon_initial_members", "a")
		f.removeSection("mon.b")
		f.set("mon.c", "public_addr", "127.0.0.1:6793")
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# a comment\n[global]\nmon_host = 127.0.0.1:6791,127.0.0.1:6793\nfsid = x\nmon_initial_members = a\n\n[mon.a]\npublic_addr = 127.0.0.1:6789\n\n[osd]\n# keep me\nosd_heartbeat_interval = 1\n\n[mon.c]\npublic_addr = 127.0.0.1:6793\n"
	if string(got) != want {
		t.Fatalf("edited file:\n%s\nwant:\n%s", got, want)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want the file's own", st.Mode().Perm())
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &Conf{Path: path, Dir: filepath.Dir(path), File: f}
	if ids := c.MonIDs(); len(ids) != 2 || ids[0] != "a" || ids[1] != "c" {
		t.Fatalf("MonIDs %v", ids)
	}
	// a change that would not parse is refused, and the file is left alone
	if err := editConf(path, func(f *confText) { f.set("global", "no_such_option", "1") }); err == nil {
		t.Fatal("an unknown option was written")
	}
	if again, _ := os.ReadFile(path); string(again) != want {
		t.Fatalf("a refused edit changed the file:\n%s", again)
	}
}

// initialMons: the members of mon_initial_members still in the file form
// a new cluster; another MON joins; without the option, mon_host's do.
func TestInitialMons(t *testing.T) {
	parse := func(s string) *Conf {
		f, err := config.Parse(strings.NewReader(s), "t.conf")
		if err != nil {
			t.Fatal(err)
		}
		return &Conf{Path: "t.conf", File: f}
	}
	c := parse("[global]\nmon_host = 127.0.0.1:6791\nmon_initial_members = a,b\n[mon.b]\npublic_addr = 127.0.0.1:6791\n[mon.d]\npublic_addr = 127.0.0.1:6795\n")
	peers, join, err := c.initialMons("b")
	if err != nil || join || len(peers) != 1 || peers[0] != "127.0.0.1:6791" {
		t.Fatalf("mon.b: %v %v %v", peers, join, err)
	}
	if _, join, _ := c.initialMons("d"); !join {
		t.Fatal("mon.d, not an initial member, would form a cluster")
	}
	c = parse("[global]\nmon_host = 127.0.0.1:6789,127.0.0.1:6791\n")
	if peers, join, _ := c.initialMons("a"); join || len(peers) != 2 {
		t.Fatalf("no mon_initial_members: %v %v", peers, join)
	}
}
