package objectstore

import "testing"

// The metadata store's file cache takes half of the process's open-file
// limit, never less than Pebble's default nor more than 131,072.
func TestMaxOpenFilesFor(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{{0, 1000}, {1024, 1000}, {20000, 10000}, {65536, 32768}, {1048576, 131072}, {1 << 40, 131072}} {
		if got := maxOpenFilesFor(c.limit); got != c.want {
			t.Errorf("limit %d: %d open files, want %d", c.limit, got, c.want)
		}
	}
}
