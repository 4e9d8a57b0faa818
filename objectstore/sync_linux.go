package objectstore

import (
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// rawSyncMax is the longest the process's previous fdatasync may have
// taken for the next to be made as a raw system call (fdatasyncFd).
const rawSyncMax = time.Millisecond

// lastSync is how long the process's latest fdatasync took (ns).
var lastSync atomic.Int64

// rawSyncing is set while a raw fdatasync runs in the process.
var rawSyncing atomic.Bool

// fdatasync flushes file data (not metadata that reads don't need).
func fdatasync(f *os.File) error { return fdatasyncFd(f.Fd()) }

// fdatasyncFd is fdatasync on a descriptor. While syncs are fast, one at
// a time is made as a raw system call, which Go's scheduler does not
// see: for an ordinary one that blocks past 20 µs, the runtime's monitor
// hands the goroutine's processor to another thread, waking it (a
// context switch, and another when the sync returns), and then polls
// every 20 µs for a while. A commit group's two syncs made that way cost
// an OSD about a tenth of its system calls and context switches per
// 64 KiB PUT (docs/PERFORMANCE.md).
//
// The price is that the processor stays held for the sync: its other
// goroutines can be stolen by the other processors, but a stop of the
// world (a garbage collection's start or end) waits for the sync. So a
// sync is raw only if the process's previous sync took under rawSyncMax,
// no other raw sync is running, and the process has more than one
// processor; otherwise it goes through the scheduler. A disk that stalls
// after fast syncs can still hold one sync raw for the stall's length,
// pausing the process if a collection starts meanwhile — the stall
// holds its commits anyway.
func fdatasyncFd(fd uintptr) error {
	start := time.Now()
	var err error
	for {
		if lastSync.Load() < int64(rawSyncMax) && runtime.GOMAXPROCS(0) > 1 && rawSyncing.CompareAndSwap(false, true) {
			err = nil
			if _, _, e := unix.RawSyscall(unix.SYS_FDATASYNC, fd, 0, 0); e != 0 {
				err = e
			}
			rawSyncing.Store(false)
		} else {
			err = syscall.Fdatasync(int(fd))
		}
		if err != syscall.EINTR {
			break
		}
	}
	lastSync.Store(int64(time.Since(start)))
	return err
}

// SyncData implements vfs.File: the metadata log's sync after each
// commit group, through fdatasyncFd where the file has a descriptor.
func (f *walFile) SyncData() error {
	if fd := f.File.Fd(); fd != vfs.InvalidFd {
		return fdatasyncFd(fd)
	}
	return f.File.SyncData()
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
