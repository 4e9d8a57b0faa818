//go:build !linux

package objectstore

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
