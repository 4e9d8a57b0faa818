//go:build !linux

package objectstore

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

func openDirect(string) *os.File { return nil }
