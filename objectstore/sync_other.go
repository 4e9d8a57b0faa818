//go:build !linux

package objectstore

import "os"

func fdatasync(f *os.File) error { return f.Sync() }

func openDirect(string) *os.File { return nil }

// pwritev writes bufs to consecutive offsets of f from off (not reached
// here: WriteVecAt calls it only on a direct descriptor, which openDirect
// never gives on this platform).
func pwritev(f *os.File, bufs [][]byte, off int64) error {
	for _, b := range bufs {
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}
