package osd

import (
	"errors"
	"testing"

	"github.com/shoal-project/shoal/caps"
	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdop"
)

// Messages between OSDs are accepted only from OSDs, whatever the sender's
// caps: a client with osd 'allow *' may not push a replica write.
func TestPeerMessagesOnlyFromOSDs(t *testing.T) {
	d := &OSD{}
	for _, typ := range []uint16{msgRepOp, msgPGQuery, msgPush, msgECRead, msgPing, msgGetMap, msgScrubMap} {
		for from, ok := range map[string]bool{"osd.3": true, "osd": true, "client.admin": false, "mon.a": false, "osdx.1": false} {
			err := d.authorizeMsg(&msgr.Message{Type: typ, From: from})
			if ok && err != nil {
				t.Errorf("type %d from %s: %v", typ, from, err)
			}
			if !ok && !errors.Is(err, osdop.ErrPermission) {
				t.Errorf("type %d from %s: %v, want ErrPermission", typ, from, err)
			}
		}
	}
}

func TestOpNeeds(t *testing.T) {
	var readMethod, writeMethod string
	for _, n := range cls.Names() {
		if cls.ReadOnly(n) && readMethod == "" {
			readMethod = n
		}
		if !cls.ReadOnly(n) && writeMethod == "" {
			writeMethod = n
		}
	}
	if readMethod == "" || writeMethod == "" {
		t.Fatal("no object-class methods registered")
	}
	for _, tc := range []struct {
		ops  []osdop.Op
		want caps.Perm
	}{
		{[]osdop.Op{{Code: osdop.Read}, {Code: osdop.Stat}}, caps.Read},
		{[]osdop.Op{{Code: osdop.WriteFull}}, caps.Write},
		{[]osdop.Op{{Code: osdop.GetXattr, FailOK: true}, {Code: osdop.SetXattr}}, caps.Read | caps.Write},
		{[]osdop.Op{{Code: osdop.AssertVersion}, {Code: osdop.Write}}, caps.Read | caps.Write},
		{[]osdop.Op{{Code: osdop.Watch}}, caps.Write},
		{[]osdop.Op{{Code: osdop.Notify}}, caps.Read},
		{[]osdop.Op{{Code: osdop.CallRead, Name: readMethod}}, caps.ClassRead},
		{[]osdop.Op{{Code: osdop.Call, Name: readMethod}}, caps.ClassRead},
		{[]osdop.Op{{Code: osdop.Call, Name: writeMethod}}, caps.ClassWrite},
	} {
		if got := opNeeds(&osdop.Request{Ops: tc.ops}); got != tc.want {
			t.Errorf("%v: needs %v, want %v", tc.ops, got, tc.want)
		}
	}
}
