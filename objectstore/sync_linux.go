package objectstore

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
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

// maxIOV is the most buffers one pwritev takes (Linux's IOV_MAX).
const maxIOV = 1024

// pwritev writes bufs to consecutive offsets of f from off with as few
// pwritev calls as the kernel allows, retrying short writes.
func pwritev(f *os.File, bufs [][]byte, off int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	for len(bufs) > 0 {
		var n int
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			n, werr = unix.Pwritev(int(fd), bufs[:min(len(bufs), maxIOV)], off)
			return werr != unix.EAGAIN
		}); err != nil {
			return err
		}
		if werr == unix.EINTR {
			continue
		}
		if werr != nil {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: werr}
		}
		if n == 0 {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: syscall.EIO}
		}
		off += int64(n)
		bufs = skipWritten(bufs, n)
	}
	return nil
}
