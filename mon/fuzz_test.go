package mon_test

import (
	"encoding/json"
	"testing"

	"github.com/shoal-project/shoal/mon"
	"github.com/shoal-project/shoal/monc"
)

// FuzzCommand: any command a client sends (JSON, as the MONs receive it)
// is refused with an error or applied to the state, never a panic; an
// applied change leaves a map that encodes.
func FuzzCommand(f *testing.F) {
	for _, c := range []monc.Command{
		{Prefix: "pool create", Args: map[string]string{"name": "p", "pg_num": "8", "size": "2"}},
		{Prefix: "pool set", Args: map[string]string{"name": "data", "key": "pg_num", "value": "16"}},
		{Prefix: "osd crush add", Args: map[string]string{"id": "0", "weight": "1", "loc": "host=a root=default"}},
		{Prefix: "osd pg-temp", Args: map[string]string{"pgs": "1.0=0,1"}},
		{Prefix: "config set", Args: map[string]string{"who": "osd.0", "option": "osd_max_backfills", "value": "2"}},
		{Prefix: "osd erasure-code-profile set", Args: map[string]string{"name": "e", "args": "k=2 m=1 crush-failure-domain=osd"}},
		{Prefix: "auth add", Args: map[string]string{"entity": "client.x", "key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "caps_osd": "allow r pool=data"}},
		{Prefix: "osd blocklist add", Args: map[string]string{"entry": "client.x/7", "until": "1"}},
		{Prefix: "osd pool selfmanaged-snap rm", Args: map[string]string{"pool": "data", "snapid": "3"}},
		{Prefix: "pg history", Args: map[string]string{"entries": "1.0:3:0,1,2"}},
	} {
		b, _ := json.Marshal(c)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c monc.Command
		if json.Unmarshal(b, &c) != nil {
			return
		}
		cmd, err := mon.Translate(c)
		if err != nil {
			return
		}
		s := newState(t)
		script(t, s)
		if _, _, err := s.Commit(cmd); err != nil {
			return
		}
		s.Map.Encode()
	})
}
