package objectstore_test

import "os"

// tempDirNoCleanup makes a directory that outlives one benchmark run (the
// filled stores are shared between runs); it lives under the OS temp dir.
func tempDirNoCleanup() (string, error) { return os.MkdirTemp("", "shoal-objectstore-bench-") }
