package config_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/config"
)

const sample = `
# a shoal.conf
[global]
fsid = 3f0e
mon host = 127.0.0.1:6789
osd pool default size = 2

[osd]
osd-heartbeat-grace = 30 ; tolerant
bluestore_block_size = 20G

[osd.3]
osd_heartbeat_grace = 45
`

func TestResolution(t *testing.T) {
	f, err := config.Parse(strings.NewReader(sample), "shoal.conf")
	if err != nil {
		t.Fatal(err)
	}
	osd3, osd1, mon := f.For("osd.3"), f.For("osd.1"), f.For("mon.a")
	if g := osd3.Seconds("osd_heartbeat_grace"); g != 45 {
		t.Fatalf("osd.3 grace %v, want its own 45", g)
	}
	if g := osd1.Seconds("osd_heartbeat_grace"); g != 30 {
		t.Fatalf("osd.1 grace %v, want [osd]'s 30", g)
	}
	if g := mon.Seconds("osd_heartbeat_grace"); g != 20 {
		t.Fatalf("mon grace %v, want the default 20", g)
	}
	if n := mon.Int("osd_pool_default_size"); n != 2 {
		t.Fatalf("[global] size %d, want 2", n)
	}
	if s := osd1.Size("bluestore_block_size"); s != 20<<30 {
		t.Fatalf("block size %d", s)
	}
	if s := mon.String("mon_host"); s != "127.0.0.1:6789" {
		t.Fatalf("mon_host %q", s)
	}
	osd1.SetDataDir("/var/shoal")
	if d := osd1.String("osd_data"); d != "/var/shoal/osd.1" {
		t.Fatalf("osd_data %q", d)
	}
	if err := osd1.Set("osd max backfills", "4"); err != nil || osd1.Int("osd_max_backfills") != 4 {
		t.Fatalf("Set: %v", err)
	}
}

// Mistakes name the file, line and option, and suggest the likely one.
func TestErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{"[global]\nosd pool default sise = 3\n", `shoal.conf:2: unknown option "osd pool default sise" (did you mean osd_pool_default_size?)`},
		{"[global]\nosd_pool_default_size = three\n", "shoal.conf:2: osd_pool_default_size = \"three\": not a valid int"},
		{"[global]\nosd_pool_default_size = 99\n", "shoal.conf:2: osd_pool_default_size = 99: outside [1, 32]"},
		{"[global]\nbluestore_block_size = 10Q\n", "shoal.conf:2: bluestore_block_size"},
		{"fsid = x\n", "shoal.conf:1: option outside a section"},
		{"[osdd]\n", "shoal.conf:1: unknown section [osdd]"},
		{"[global]\njust words\n", "shoal.conf:2: expected 'name = value'"},
	}
	for _, c := range cases {
		_, err := config.Parse(strings.NewReader(c.text), "shoal.conf")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
	if _, err := config.Parse(strings.NewReader("[global]\nfoo = 1\n"), "x"); !errors.Is(err, config.ErrUnknown) {
		t.Fatalf("unknown option: %v", err)
	}
	if err := config.Defaults("osd.0").Set("no_such_option", "1"); !errors.Is(err, config.ErrUnknown) {
		t.Fatalf("Set unknown: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"4096": 4096, "64K": 64 << 10, "4M": 4 << 20, "4MiB": 4 << 20, "10G": 10 << 30, "1T": 1 << 40, "2 GB": 2 << 30} {
		if got, err := config.ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "M", "-1", "1.5G", "99999999999999999999P"} {
		if _, err := config.ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

// Every default satisfies its own option's checks, and the committed
// reference matches the table.
func TestTableAndDocs(t *testing.T) {
	for _, o := range config.Options {
		if o.Default != "" {
			if err := o.Check(o.Default); err != nil {
				t.Errorf("default of %s: %v", o.Name, err)
			}
		}
		if o.Name != config.Normalize(o.Name) || o.Desc == "" {
			t.Errorf("option %q: name not normalised or no description", o.Name)
		}
	}
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil || string(doc) != config.Markdown() {
		t.Fatalf("docs/configuration.md is stale: run go generate ./config (%v)", err)
	}
}
