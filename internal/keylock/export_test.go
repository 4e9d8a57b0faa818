package keylock

// Waiters counts the waiters queued for key's lock.
func Waiters(t *Table, key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.locks[key]; e != nil {
		return len(e.waiters)
	}
	return 0
}
