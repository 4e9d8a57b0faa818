// Package keylock is a table of per-key locks (a key is an object's name),
// made on first use and dropped when the last holder releases it: the
// per-object locks of an OSD's PG and of the in-memory RADOS that stands
// in for OSDs in tests.
//
// A lock has three modes, as Ceph's ObjectContext::RWState: Read is
// shared among readers, Write among writers, and Excl with no one. Reads
// and writes exclude each other, so a read never sees a write half
// applied, while writes to one object, ordered by their caller, may be in
// flight together (Ceph lets a PG have several writes on an object in
// flight, ordered in its log; src/osd/object_state.h). Waiters are
// served in arrival order: a waiting reader holds back writers that come
// after it, so neither kind starves the other.
package keylock

import "sync"

// Mode is how a lock is held.
type Mode uint8

// The modes: each is shared with holders of the same mode only, but Excl,
// which is shared with no one.
const (
	Read Mode = iota
	Write
	Excl
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "excl"
}

// Table holds the locks. Its map is guarded by a mutex the owner may
// share (New), so that the owner can list the keys in use atomically
// with its own state under that mutex (Each).
type Table struct {
	mu    sync.Locker
	locks map[string]*entry
}

// entry is one key's lock, guarded by the table's mutex.
type entry struct {
	mode    Mode
	holders int
	waiters []waiter // in arrival order
}

type waiter struct {
	mode Mode
	ch   chan struct{} // closed when granted
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

// Lock takes key's lock in mode m, waiting for it, and returns its
// release, to be called once.
func (t *Table) Lock(key string, m Mode) (release func()) {
	t.mu.Lock()
	e := t.locks[key]
	if e == nil {
		e = &entry{}
		t.locks[key] = e
	}
	if len(e.waiters) == 0 && (e.holders == 0 || e.mode == m && m != Excl) {
		e.mode = m
		e.holders++
		t.mu.Unlock()
	} else {
		w := waiter{mode: m, ch: make(chan struct{})}
		e.waiters = append(e.waiters, w)
		t.mu.Unlock()
		<-w.ch // granted by a release, which counted us among the holders
	}
	return func() { t.release(key, e) }
}

// release drops one holder of key's lock and grants the waiters at the
// head of the queue: the first, and those after it in the same shared
// mode.
func (t *Table) release(key string, e *entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.holders--; e.holders > 0 {
		return
	}
	if len(e.waiters) == 0 {
		delete(t.locks, key)
		return
	}
	e.mode = e.waiters[0].mode
	n := 1
	for e.mode != Excl && n < len(e.waiters) && e.waiters[n].mode == e.mode {
		n++
	}
	for _, w := range e.waiters[:n] {
		close(w.ch)
	}
	e.holders = n
	e.waiters = append(e.waiters[:0], e.waiters[n:]...)
}

// Each calls fn with every key held or waited for. The caller holds the
// table's mutex (New's mu).
func (t *Table) Each(fn func(key string)) {
	for k := range t.locks {
		fn(k)
	}
}
