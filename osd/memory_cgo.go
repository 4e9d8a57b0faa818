//go:build cgo

package osd

// pebbleOffHeap is 1 when Pebble allocates its block cache and memtables
// with C's allocator (its internal/manual package, with cgo), outside the
// Go heap and so outside GOMEMLIMIT; 0 when they are Go memory.
const pebbleOffHeap = 1
