package objectstore

import (
	"os"
	"syscall"
)

// fdatasync flushes file data (not metadata that reads don't need).
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// openDirect opens path for O_DIRECT writes, or returns nil where the
// filesystem refuses them (tmpfs).
func openDirect(path string) *os.File {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0)
	if err != nil {
		return nil
	}
	return f
}
