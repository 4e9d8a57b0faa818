// Package lock is the advisory object lock class, Ceph's cls_lock
// (src/cls/lock): named locks on an object, exclusive or shared, held by
// a client instance under a cookie, with a tag, a description and an
// optional duration. The OSD runs the methods inside a write, so taking
// and releasing a lock are atomic and replicated. A lock NAME lives in
// the object's extended attribute "lock.NAME" (JSON Info), as Ceph keeps
// it; taking a lock creates the object. Locks are advisory: they stop
// nothing but other lockers (and assert_locked) — a writer fenced off by
// a broken lock must also be blocklisted.
//
// Methods ("lock.METHOD", inputs and outputs JSON):
//
//	lock          LockInput                   EBUSY held by others, EEXIST held by the caller (unless renewing)
//	unlock        UnlockInput                 ENOENT the caller does not hold it
//	break_lock    BreakInput                  ENOENT no such locker
//	get_info      NameInput     → Info        ENOENT no such lock
//	list_locks    {}            → []string
//	assert_locked AssertInput                 EBUSY the caller does not hold it so
package lock

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shoal-project/shoal/cls"
)

// Lock types.
const (
	Exclusive = "exclusive"
	Shared    = "shared"
)

// AttrPrefix begins the extended attribute of each lock.
const AttrPrefix = "lock."

// Info is a lock's state (Ceph's lock_info_t).
type Info struct {
	Type    string   `json:"type"` // Exclusive or Shared
	Tag     string   `json:"tag,omitempty"`
	Lockers []Locker `json:"lockers"`
}

// Locker is one holder of a lock.
type Locker struct {
	Name        string    `json:"name"` // the client instance, "client.NAME/NONCE"
	Cookie      string    `json:"cookie"`
	Description string    `json:"description,omitempty"`
	Expiration  time.Time `json:"expiration,omitzero"` // zero: never
}

// LockInput takes a lock (Ceph's cls_lock_lock_op). Duration 0 holds it
// until unlocked or broken. Renew (LOCK_FLAG_MAY_RENEW) lets the holder
// take it again to move its expiration; MustRenew (LOCK_FLAG_MUST_RENEW)
// fails (ENOENT) unless the caller holds it already.
type LockInput struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"`
	Cookie      string  `json:"cookie"`
	Tag         string  `json:"tag,omitempty"`
	Description string  `json:"description,omitempty"`
	Duration    float64 `json:"duration,omitempty"` // seconds
	Renew       bool    `json:"renew,omitempty"`
	MustRenew   bool    `json:"must_renew,omitempty"`
}

// UnlockInput releases the caller's hold under Cookie.
type UnlockInput struct {
	Name   string `json:"name"`
	Cookie string `json:"cookie"`
}

// BreakInput removes another instance's hold (Ceph's break_lock).
type BreakInput struct {
	Name   string `json:"name"`
	Locker string `json:"locker"`
	Cookie string `json:"cookie"`
}

// NameInput names a lock.
type NameInput struct {
	Name string `json:"name"`
}

// AssertInput checks that the caller holds the lock so (Ceph's
// assert_locked, which RBD puts before a write to fence it).
type AssertInput struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Cookie string `json:"cookie"`
	Tag    string `json:"tag,omitempty"`
}

func init() {
	cls.Register("lock", "lock", lockMethod)
	cls.Register("lock", "unlock", unlockMethod)
	cls.Register("lock", "break_lock", breakMethod)
	cls.RegisterRead("lock", "get_info", getInfoMethod)
	cls.RegisterRead("lock", "list_locks", listMethod)
	cls.Register("lock", "assert_locked", assertMethod)
}

func decode(in []byte, v any, name *string) error {
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("%w: %v", cls.ErrInvalid, err)
	}
	if name != nil && *name == "" {
		return fmt.Errorf("%w: empty lock name", cls.ErrInvalid)
	}
	return nil
}

// read returns lock name's state with expired lockers dropped (nil: no
// such lock, or every locker expired).
func read(o cls.Object, name string) (*Info, error) {
	if !o.Exists() {
		return nil, nil
	}
	b, err := o.GetXattr(AttrPrefix + name)
	if err != nil {
		return nil, nil // no such attribute: not locked
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%w: lock %q: %v", cls.ErrInvalid, name, err)
	}
	now := o.Now()
	info.Lockers = slices.DeleteFunc(info.Lockers, func(l Locker) bool { return !l.Expiration.IsZero() && !now.Before(l.Expiration) })
	if len(info.Lockers) == 0 {
		return nil, nil
	}
	return &info, nil
}

func write(o cls.Object, name string, info *Info) {
	if info == nil || len(info.Lockers) == 0 {
		info = &Info{Lockers: []Locker{}} // an unlocked lock: kept, as Ceph keeps the attribute
	}
	b, _ := json.Marshal(info)
	o.SetXattr(AttrPrefix+name, b)
}

func lockMethod(o cls.Object, in []byte) ([]byte, error) {
	var x LockInput
	if err := decode(in, &x, &x.Name); err != nil {
		return nil, err
	}
	if x.Type != Exclusive && x.Type != Shared {
		return nil, fmt.Errorf("%w: lock type %q (exclusive or shared)", cls.ErrInvalid, x.Type)
	}
	if x.Duration < 0 {
		return nil, fmt.Errorf("%w: negative duration", cls.ErrInvalid)
	}
	me := o.Caller()
	info, err := read(o, x.Name)
	if err != nil {
		return nil, err
	}
	mine := -1
	if info != nil {
		mine = slices.IndexFunc(info.Lockers, func(l Locker) bool { return l.Name == me && l.Cookie == x.Cookie })
	}
	switch {
	case x.MustRenew && mine < 0:
		return nil, fmt.Errorf("%w: lock %q is not held by %s under cookie %q to renew", cls.ErrNotFound, x.Name, me, x.Cookie)
	case mine >= 0 && !x.Renew && !x.MustRenew:
		return nil, fmt.Errorf("%w: lock %q is held by %s under cookie %q already", cls.ErrExists, x.Name, me, x.Cookie)
	case mine < 0 && info != nil && (info.Type == Exclusive || x.Type == Exclusive):
		return nil, fmt.Errorf("%w: lock %q is held %s by %s", cls.ErrBusy, x.Name, info.Type, holders(info))
	case mine < 0 && info != nil && info.Tag != x.Tag:
		return nil, fmt.Errorf("%w: lock %q is held shared with tag %q, not %q", cls.ErrBusy, x.Name, info.Tag, x.Tag)
	case mine >= 0 && info.Type != x.Type:
		return nil, fmt.Errorf("%w: lock %q is held %s, not %s", cls.ErrBusy, x.Name, info.Type, x.Type)
	}
	l := Locker{Name: me, Cookie: x.Cookie, Description: x.Description}
	if x.Duration > 0 {
		l.Expiration = o.Now().Add(time.Duration(x.Duration * float64(time.Second)))
	}
	if info == nil {
		info = &Info{Type: x.Type, Tag: x.Tag}
	}
	if mine >= 0 {
		info.Lockers[mine] = l
	} else {
		info.Lockers = append(info.Lockers, l)
	}
	write(o, x.Name, info)
	return nil, nil
}

func holders(info *Info) string {
	var s []string
	for _, l := range info.Lockers {
		s = append(s, fmt.Sprintf("%s (cookie %q)", l.Name, l.Cookie))
	}
	return strings.Join(s, ", ")
}

// remove drops the hold of locker under cookie.
func remove(o cls.Object, name, locker, cookie string) error {
	info, err := read(o, name)
	if err != nil {
		return err
	}
	i := -1
	if info != nil {
		i = slices.IndexFunc(info.Lockers, func(l Locker) bool { return l.Name == locker && l.Cookie == cookie })
	}
	if i < 0 {
		return fmt.Errorf("%w: lock %q is not held by %s under cookie %q", cls.ErrNotFound, name, locker, cookie)
	}
	info.Lockers = slices.Delete(info.Lockers, i, i+1)
	write(o, name, info)
	return nil
}

func unlockMethod(o cls.Object, in []byte) ([]byte, error) {
	var x UnlockInput
	if err := decode(in, &x, &x.Name); err != nil {
		return nil, err
	}
	return nil, remove(o, x.Name, o.Caller(), x.Cookie)
}

func breakMethod(o cls.Object, in []byte) ([]byte, error) {
	var x BreakInput
	if err := decode(in, &x, &x.Name); err != nil {
		return nil, err
	}
	return nil, remove(o, x.Name, x.Locker, x.Cookie)
}

func getInfoMethod(o cls.Object, in []byte) ([]byte, error) {
	var x NameInput
	if err := decode(in, &x, &x.Name); err != nil {
		return nil, err
	}
	if !o.Exists() {
		return nil, fmt.Errorf("%w: no object", cls.ErrNotFound)
	}
	if _, err := o.GetXattr(AttrPrefix + x.Name); err != nil {
		return nil, fmt.Errorf("%w: no lock %q", cls.ErrNotFound, x.Name)
	}
	info, err := read(o, x.Name)
	if err != nil {
		return nil, err
	}
	if info == nil {
		info = &Info{Lockers: []Locker{}}
	}
	return json.Marshal(info)
}

func listMethod(o cls.Object, _ []byte) ([]byte, error) {
	names := []string{}
	if o.Exists() {
		for _, a := range o.Xattrs() {
			if n, ok := strings.CutPrefix(a, AttrPrefix); ok {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return json.Marshal(names)
}

func assertMethod(o cls.Object, in []byte) ([]byte, error) {
	var x AssertInput
	if err := decode(in, &x, &x.Name); err != nil {
		return nil, err
	}
	info, err := read(o, x.Name)
	if err != nil {
		return nil, err
	}
	me := o.Caller()
	if info == nil || info.Type != x.Type || info.Tag != x.Tag ||
		!slices.ContainsFunc(info.Lockers, func(l Locker) bool { return l.Name == me && l.Cookie == x.Cookie }) {
		return nil, fmt.Errorf("%w: lock %q is not held %s by %s under cookie %q", cls.ErrBusy, x.Name, x.Type, me, x.Cookie)
	}
	return nil, nil
}
