package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Compose writes a compose file with every container at its address, a
// configuration per container, and refuses bad input without writing.
func TestCompose(t *testing.T) {
	dir := t.TempDir()
	o := ComposeOptions{Dir: dir, Mons: 3, OSDHosts: 5, Gateways: 2, Subnet: "172.28.0.0/24", Image: "shoal:test", ExtraConf: "mon_osd_down_out_interval = 5"}
	addrs, err := Compose(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs.Mons) != 3 || addrs.Mons[2] != "172.28.0.13:6789" || len(addrs.OSDs) != 5 || addrs.OSDs[4] != "172.28.0.25" || addrs.Gateways[1] != "172.28.0.42:7480" {
		t.Fatalf("addresses %+v", addrs)
	}
	y, err := os.ReadFile(filepath.Join(dir, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"subnet: 172.28.0.0/24", "hostname: osd-5", "ipv4_address: 172.28.0.41", `"osd", "--data", "/var/lib/shoal/osd"`, "image: shoal:test", "./mon-c:/var/lib/shoal"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("compose file lacks %q", want)
		}
	}
	c, err := FindConf(filepath.Join(dir, "osd-2", "shoal.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.For("osd").String("public_addr"); got != "172.28.0.22:6800" {
		t.Errorf("osd-2's public_addr %q", got)
	}
	if got := c.MonAddrs(); len(got) != 3 || got[0] != "172.28.0.11:6789" {
		t.Errorf("mon_host %v", got)
	}
	if got := c.For("mon.a").Seconds("mon_osd_down_out_interval"); got != 5 {
		t.Errorf("--set option: %v", got)
	}
	if _, err := c.Keyring("client.admin"); err != nil {
		t.Errorf("keyring: %v", err)
	}
	for _, bad := range []ComposeOptions{
		{Dir: t.TempDir(), Mons: 2, OSDHosts: 5, Subnet: "172.28.0.0/24", Image: "i"},
		{Dir: t.TempDir(), Mons: 3, OSDHosts: 2, PoolSize: 3, Subnet: "172.28.0.0/24", Image: "i"}, // size 3 over hosts needs 3
		{Dir: t.TempDir(), Mons: 3, OSDHosts: 5, Subnet: "172.28.0.0/16", Image: "i"},
		{Dir: t.TempDir(), Mons: 3, OSDHosts: 5, Subnet: "fd00::/64", Image: "i"},
		{Dir: dir, Mons: 3, OSDHosts: 5, Subnet: "172.28.0.0/24", Image: "i"}, // already a cluster there
	} {
		if _, err := Compose(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		} else if bad.Dir != dir {
			if entries, _ := os.ReadDir(bad.Dir); len(entries) != 0 {
				t.Errorf("%+v refused (%v) but wrote %d files", bad, err, len(entries))
			}
		}
	}
}
