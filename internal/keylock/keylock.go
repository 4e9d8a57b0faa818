// Package keylock is a table of reader/writer locks by key (an object's
// name), made on first use and dropped when the last holder releases it:
// the per-object locks of an OSD's PG (Ceph: ObjectContext's rwstate) and
// of the in-memory RADOS that stands in for OSDs in tests.
package keylock

import "sync"

// Table holds the locks. Its map is guarded by a mutex the owner may
// share (New), so that the owner can list the keys in use atomically
// with its own state under that mutex (Each).
type Table struct {
	mu    sync.Locker
	locks map[string]*entry
}

type entry struct {
	mu   sync.RWMutex
	refs int // holders and waiters
}

// New returns an empty table whose map mu guards (nil: a mutex of the
// table's own). The caller must not hold mu when it calls Lock or a
// release.
func New(mu sync.Locker) *Table {
	if mu == nil {
		mu = &sync.Mutex{}
	}
	return &Table{mu: mu, locks: map[string]*entry{}}
}

// Lock takes key's lock, shared (readers) or exclusive, waiting for it,
// and returns its release, to be called once.
func (t *Table) Lock(key string, shared bool) (release func()) {
	t.mu.Lock()
	e := t.locks[key]
	if e == nil {
		e = &entry{}
		t.locks[key] = e
	}
	e.refs++
	t.mu.Unlock()
	lock, unlock := e.mu.Lock, e.mu.Unlock
	if shared {
		lock, unlock = e.mu.RLock, e.mu.RUnlock
	}
	lock()
	return func() {
		unlock()
		t.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(t.locks, key)
		}
		t.mu.Unlock()
	}
}

// Each calls fn with every key held or waited for. The caller holds the
// table's mutex (New's mu).
func (t *Table) Each(fn func(key string)) {
	for k := range t.locks {
		fn(k)
	}
}
