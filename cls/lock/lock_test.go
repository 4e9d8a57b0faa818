package lock_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/cls/lock"
	"github.com/shoal-project/shoal/omap"
)

// obj is an object whose method writes apply at once (the OSD applies
// them with the request, or not at all if the method fails; these tests
// only look after successful calls).
type obj struct {
	exists bool
	xattrs map[string][]byte
	caller string
	now    time.Time
}

func (o *obj) Exists() bool                        { return o.exists }
func (o *obj) Size() uint64                        { return 0 }
func (o *obj) Read(uint64, uint64) ([]byte, error) { return nil, nil }
func (o *obj) GetXattr(n string) ([]byte, error) {
	if v, ok := o.xattrs[n]; ok {
		return v, nil
	}
	return nil, cls.ErrNotFound
}
func (o *obj) Xattrs() []string {
	var n []string
	for k := range o.xattrs {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}
func (o *obj) OmapGet([]string) (map[string][]byte, error)           { return nil, nil }
func (o *obj) OmapList(string, string, int) ([]omap.KV, bool, error) { return nil, false, nil }
func (o *obj) Caller() string                                        { return o.caller }
func (o *obj) Now() time.Time                                        { return o.now }
func (o *obj) Write(uint64, []byte)                                  { o.exists = true }
func (o *obj) WriteFull([]byte)                                      { o.exists = true }
func (o *obj) SetXattr(n string, v []byte)                           { o.exists = true; o.xattrs[n] = v }
func (o *obj) OmapSet([]omap.KV)                                     {}
func (o *obj) OmapRm([]string)                                       {}
func (o *obj) Remove()                                               { o.exists = false }

func call(t *testing.T, o *obj, who, method string, in any) ([]byte, error) {
	t.Helper()
	m, ok := cls.Lookup("lock." + method)
	if !ok {
		t.Fatalf("lock.%s not registered", method)
	}
	b, _ := json.Marshal(in)
	o.caller = who
	return m(o, b)
}

func TestExclusiveAndShared(t *testing.T) {
	o := &obj{xattrs: map[string][]byte{}, now: time.Unix(100, 0)}
	const a, b = "client.a/1", "client.b/2"
	want := func(err, target error, what string) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Fatalf("%s: %v, want %v", what, err, target)
		}
	}
	if _, err := call(t, o, a, "lock", lock.LockInput{Name: "l", Type: lock.Exclusive, Cookie: "c1", Description: "mine"}); err != nil {
		t.Fatal(err)
	}
	if !o.exists {
		t.Fatal("taking a lock did not create the object")
	}
	_, err := call(t, o, b, "lock", lock.LockInput{Name: "l", Type: lock.Exclusive, Cookie: "c2"})
	want(err, cls.ErrBusy, "another exclusive locker")
	_, err = call(t, o, b, "lock", lock.LockInput{Name: "l", Type: lock.Shared, Cookie: "c2"})
	want(err, cls.ErrBusy, "a shared locker of an exclusive lock")
	_, err = call(t, o, a, "lock", lock.LockInput{Name: "l", Type: lock.Exclusive, Cookie: "c1"})
	want(err, cls.ErrExists, "the holder again without renew")
	if _, err := call(t, o, a, "lock", lock.LockInput{Name: "l", Type: lock.Exclusive, Cookie: "c1", Renew: true}); err != nil {
		t.Fatalf("renew: %v", err)
	}
	_, err = call(t, o, b, "assert_locked", lock.AssertInput{Name: "l", Type: lock.Exclusive, Cookie: "c1"})
	want(err, cls.ErrBusy, "assert by a non-holder")
	if _, err := call(t, o, a, "assert_locked", lock.AssertInput{Name: "l", Type: lock.Exclusive, Cookie: "c1"}); err != nil {
		t.Fatalf("assert by the holder: %v", err)
	}
	_, err = call(t, o, b, "unlock", lock.UnlockInput{Name: "l", Cookie: "c1"})
	want(err, cls.ErrNotFound, "unlock by another instance")
	// b breaks a's lock, then takes it
	if _, err := call(t, o, b, "break_lock", lock.BreakInput{Name: "l", Locker: a, Cookie: "c1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, o, b, "lock", lock.LockInput{Name: "l", Type: lock.Shared, Cookie: "c2", Tag: "t"}); err != nil {
		t.Fatal(err)
	}
	_, err = call(t, o, a, "lock", lock.LockInput{Name: "l", Type: lock.Shared, Cookie: "c1", Tag: "other"})
	want(err, cls.ErrBusy, "shared with another tag")
	if _, err := call(t, o, a, "lock", lock.LockInput{Name: "l", Type: lock.Shared, Cookie: "c1", Tag: "t"}); err != nil {
		t.Fatalf("second shared locker: %v", err)
	}
	out, err := call(t, o, a, "get_info", lock.NameInput{Name: "l"})
	var info lock.Info
	if err != nil || json.Unmarshal(out, &info) != nil || info.Type != lock.Shared || len(info.Lockers) != 2 {
		t.Fatalf("info: %s %v", out, err)
	}
	out, _ = call(t, o, a, "list_locks", struct{}{})
	if string(out) != `["l"]` {
		t.Fatalf("list: %s", out)
	}
	_, err = call(t, o, a, "get_info", lock.NameInput{Name: "none"})
	want(err, cls.ErrNotFound, "info of no lock")
	_, err = call(t, o, a, "lock", lock.LockInput{Name: "l", Type: "both", Cookie: "x"})
	want(err, cls.ErrInvalid, "bad type")
}

func TestExpiration(t *testing.T) {
	o := &obj{xattrs: map[string][]byte{}, now: time.Unix(100, 0)}
	if _, err := call(t, o, "client.a/1", "lock", lock.LockInput{Name: "l", Type: lock.Exclusive, Cookie: "c", Duration: 30}); err != nil {
		t.Fatal(err)
	}
	o.now = o.now.Add(29 * time.Second)
	if _, err := call(t, o, "client.b/2", "lock", lock.LockInput{Name: "l", Type: lock.Exclusive, Cookie: "c"}); !errors.Is(err, cls.ErrBusy) {
		t.Fatalf("before expiry: %v", err)
	}
	o.now = o.now.Add(time.Second)
	if _, err := call(t, o, "client.b/2", "lock", lock.LockInput{Name: "l", Type: lock.Exclusive, Cookie: "c"}); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if _, err := call(t, o, "client.a/1", "lock", lock.LockInput{Name: "l", Type: lock.Exclusive, Cookie: "c", MustRenew: true}); !errors.Is(err, cls.ErrNotFound) {
		t.Fatalf("must-renew of an expired hold: %v", err)
	}
}
