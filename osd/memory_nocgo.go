//go:build !cgo

package osd

// pebbleOffHeap: see memory_cgo.go. Without cgo Pebble's manual memory is
// Go memory, within GOMEMLIMIT.
const pebbleOffHeap = 0
