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
