package objectstore_test

import (
	"os"
	"sync"
	"testing"
)

var (
	benchDirsMu sync.Mutex
	benchDirs   []string
)

// tempDirNoCleanup makes a directory that outlives one benchmark run (the
// filled stores are shared between runs); TestMain removes it at the end.
func tempDirNoCleanup() (string, error) {
	d, err := os.MkdirTemp("", "shoal-objectstore-bench-")
	if err == nil {
		benchDirsMu.Lock()
		benchDirs = append(benchDirs, d)
		benchDirsMu.Unlock()
	}
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
