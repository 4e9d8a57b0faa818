package caps

import (
	"errors"
	"testing"
)

func TestMonCaps(t *testing.T) {
	for _, tc := range []struct {
		caps   string
		prefix string
		need   Perm
		want   bool
	}{
		{"allow *", "auth add", Write | Exec, true},
		{"allow r", "config dump", Read, true},
		{"allow r", "pool create", Write, false},
		{"allow r", "auth dump", Read | Exec, false},
		{"allow rw", "auth add", Write | Exec, false},
		{"allow rwx", "auth add", Write | Exec, true},
		{"allow r, allow command \"osd blocklist add\"", "osd blocklist add", Write, true},
		{"allow r; allow command \"osd blocklist add\"", "osd blocklist rm", Write, false},
		{"profile osd", "osd boot", Write, true},
		{"allow profile osd", "auth dump", Read | Exec, true},
		{"profile osd", "auth add", Write | Exec, false},
		{"profile osd", "pool create", Write, false},
		{"profile rgw", "pool create", Write, true},
		{"profile rgw", "pool rm", Write, false},
		{"profile rbd", "osd blocklist add", Write, true},
		{"profile mon", "osd set", Write, true},
		{"", "mon status", Read, false},
	} {
		m, err := ParseMon(tc.caps)
		if err != nil {
			t.Fatalf("ParseMon(%q): %v", tc.caps, err)
		}
		if got := m.Allows(tc.prefix, tc.need); got != tc.want {
			t.Errorf("mon %q: Allows(%q, %v) = %v, want %v", tc.caps, tc.prefix, tc.need, got, tc.want)
		}
	}
	var nilMon *Mon
	if nilMon.Allows("mon status", Read) {
		t.Error("nil Mon allows")
	}
	m, _ := ParseMon("profile bootstrap-osd")
	if !m.Profile("bootstrap-osd") || m.Profile("osd") {
		t.Error("Profile misreports")
	}
}

func TestOSDCaps(t *testing.T) {
	for _, tc := range []struct {
		caps      string
		pool, oid string
		need      Perm
		want      bool
	}{
		{"allow *", "a", "x", Admin | Read | Write, true},
		{"allow rwx", "a", "x", Admin, false},
		{"allow r pool=a", "a", "x", Read, true},
		{"allow r pool=a", "a", "x", Write, false},
		{"allow r pool=a", "b", "x", Read, false},
		{"allow r pool a", "a", "x", Read, true},
		{"allow pool a rw", "a", "x", Read | Write, true},
		{"allow r, allow w pool=a", "a", "x", Read | Write, true},
		{"allow r, allow w pool=a", "b", "x", Read | Write, false},
		{"allow x pool=a", "a", "x", ClassRead | ClassWrite, true},
		{"allow r class-read pool=a", "a", "x", ClassRead, true},
		{"allow r class-read pool=a", "a", "x", ClassWrite, false},
		{"allow rw object_prefix rbd_data", "a", "rbd_data.1", Write, true},
		{"allow rw object_prefix rbd_data", "a", "rbd_header.1", Write, false},
		{"allow rw object_prefix=rbd_data", "a", "rbd_data.1", Write, true},
		{"profile rbd pool=img", "img", "rbd_header.1", Read | Write | ClassWrite, true},
		{"profile rbd pool=img", "other", "rbd_header.1", Read, false},
		{"profile rbd pool=img", "other", "rbd_children", ClassRead, true},
		{"allow profile rbd-read-only pool=img", "img", "x", Read | ClassRead, true},
		{"profile rbd-read-only pool=img", "img", "x", Write, false},
		{"profile rgw", "default.rgw.buckets.data", "x", Read | Write | ClassWrite, true},
		{"", "a", "x", Read, false},
	} {
		o, err := ParseOSD(tc.caps)
		if err != nil {
			t.Fatalf("ParseOSD(%q): %v", tc.caps, err)
		}
		if got := o.Allows(tc.pool, tc.oid, tc.need); got != tc.want {
			t.Errorf("osd %q: Allows(%q, %q, %v) = %v, want %v", tc.caps, tc.pool, tc.oid, tc.need, got, tc.want)
		}
	}
	o, _ := ParseOSD("allow r object_prefix rbd_data, allow w pool=a")
	if o.AllowsPool("a", Read) || !o.AllowsPool("a", Write) || o.AllowsPool("b", Write) {
		t.Error("AllowsPool counts prefix grants or other pools")
	}
}

func TestBadCaps(t *testing.T) {
	for _, s := range []string{"allow", "allow q", "permit r", "allow command", "profile nosuch", "allow r extra"} {
		if _, err := ParseMon(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseMon(%q) = %v, want ErrSyntax", s, err)
		}
	}
	for _, s := range []string{"allow", "allow q", "allow r pool", "allow pool=", "profile rbd rw", "profile nosuch",
		"allow r namespace=x", "allow r \"pool=a", "permit r", "allow pool=a"} {
		if _, err := ParseOSD(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseOSD(%q) = %v, want ErrSyntax", s, err)
		}
	}
	if _, err := Parse(map[string]string{"mds": "allow"}); !errors.Is(err, ErrSyntax) {
		t.Errorf("unknown service: %v", err)
	}
}

func TestDefault(t *testing.T) {
	for name, mon := range map[string]string{"mon.a": "allow *", "mon.": "allow *", "client.admin": "allow *", "osd.3": "profile osd", "osd.": "profile osd"} {
		if got := Default(name)["mon"]; got != mon {
			t.Errorf("Default(%s) mon = %q, want %q", name, got, mon)
		}
	}
	if Default("client.foo") != nil {
		t.Error("client.foo gets default caps")
	}
}

func TestTable(t *testing.T) {
	tab, err := NewTable(
		map[string]map[string]string{"client.a": {"osd": "allow r pool=a"}, "osd.7": nil},
		map[string]map[string]string{"client.admin": nil, "osd.": nil, "client.rgw": {"mon": "profile rgw"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if e := tab.Lookup("client.a"); e.Mon.Allows("mon status", Read) || !e.OSD.Allows("a", "x", Read) {
		t.Error("client.a: want no mon caps, osd r on a")
	}
	if e := tab.Lookup("osd.3"); !e.Mon.Allows("osd boot", Write) || !e.OSD.Allows("a", "x", Admin) {
		t.Error("osd.3 does not get osd.'s default caps")
	}
	if e := tab.Lookup("osd.7"); e.Mon.Allows("osd boot", Write) {
		t.Error("osd.7's database entry without caps gets the keyring's")
	}
	if e := tab.Lookup("client.rgw"); !e.Mon.Allows("pool create", Write) || e.OSD.Allows("a", "x", Read) {
		t.Error("client.rgw: keyring caps lines not used")
	}
	if e := tab.Lookup("client.nobody"); e.Mon.Allows("mon status", Read) || e.OSD.Allows("a", "x", Read) {
		t.Error("an unknown entity has caps")
	}
	open, _ := NewTable(nil, nil, true)
	if e := open.Lookup("client.nobody"); !e.Mon.Allows("auth add", Write|Exec) || !e.OSD.Allows("a", "x", Admin) {
		t.Error("open table: unknown entity not allowed everything")
	}
	if _, err := NewTable(nil, map[string]map[string]string{"client.x": {"osd": "allow q"}}, false); !errors.Is(err, ErrSyntax) {
		t.Errorf("bad keyring caps: %v", err)
	}
}
