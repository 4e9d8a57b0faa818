package config_test

import (
	"bytes"
	"testing"

	"github.com/shoal-project/shoal/config"
)

// FuzzParse: a configuration file, however damaged, parses to an error or
// a File whose options read (a bad value falls back to the default).
func FuzzParse(f *testing.F) {
	f.Add([]byte("[global]\nfsid = x\nmon_host = 127.0.0.1:6789\nosd_memory_target = 4G\n[osd.0]\nosd_max_backfills = 4 # comment\n"))
	f.Add([]byte("[client.rgw.gateway]\nrgw_frontends = beast endpoint=127.0.0.1:7480\nkeyring = $data/k\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := config.Parse(bytes.NewReader(b), "fuzz.conf")
		if err != nil {
			return
		}
		c := file.For("osd.0")
		c.String("keyring")
		c.Size("osd_memory_target")
		c.Int("osd_max_backfills")
		c.Seconds("osd_heartbeat_interval")
	})
}
