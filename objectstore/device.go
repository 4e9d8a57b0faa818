package objectstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Device is the data device: a file or block device addressed by byte
// offset. Tests substitute a faulty one.
type Device interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes every completed WriteAt durable (fdatasync).
	Sync() error
	Close() error
}

// fileDevice is a Device on a file or block device; Sync is fdatasync.
//
// Block-aligned writes go through a second descriptor opened O_DIRECT, as
// BlueStore writes its data: the page cache's copy, page allocation and
// writeback cost more CPU than the write itself (measured: a buffered
// pwrite of 4 MiB on ext4 took 63% of a 3-replica write's CPU, see
// docs/PERFORMANCE.md). Data not in an aligned buffer is first copied into
// one (O_DIRECT needs 4 KiB-aligned memory). Reads into aligned buffers are
// direct too; others go through the page cache, which Linux keeps coherent
// with direct writes. Where the filesystem
// refuses O_DIRECT (tmpfs) every write is buffered.
type fileDevice struct {
	f      *os.File
	direct *os.File // nil: no O_DIRECT here
}

// ReadAt reads directly into aligned buffers (the page cache holds no
// copy of directly written data anyway), through the cache otherwise.
func (d fileDevice) ReadAt(p []byte, off int64) (int, error) {
	if d.direct != nil && off%BlockSize == 0 && directOK(p) {
		return d.direct.ReadAt(p, off)
	}
	return d.f.ReadAt(p, off)
}
func (d fileDevice) Sync() error { return fdatasync(d.f) }

func (d fileDevice) Close() error {
	if d.direct != nil {
		d.direct.Close()
	}
	return d.f.Close()
}

// directChunk is the bounce buffer size for direct writes of unaligned
// memory.
const directChunk = 1 << 20

var bouncePool = sync.Pool{New: func() any {
	b := make([]byte, directChunk+BlockSize)
	skip := (BlockSize - int(uintptr(unsafe.Pointer(&b[0]))%BlockSize)) % BlockSize
	b = b[skip : skip+directChunk]
	return &b
}}

func (d fileDevice) WriteAt(p []byte, off int64) (int, error) {
	if d.direct == nil || off%BlockSize != 0 || len(p)%BlockSize != 0 || len(p) == 0 {
		return d.f.WriteAt(p, off)
	}
	if uintptr(unsafe.Pointer(&p[0]))%BlockSize == 0 {
		return d.direct.WriteAt(p, off)
	}
	bp := bouncePool.Get().(*[]byte)
	defer bouncePool.Put(bp)
	done := 0
	for done < len(p) {
		n := copy(*bp, p[done:])
		if _, err := d.direct.WriteAt((*bp)[:n], off+int64(done)); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// vecWriter is a Device that writes several buffers to consecutive
// offsets with one system call (fileDevice). On this machine a direct
// write costs about 27 µs of CPU plus 0.1 µs per KiB (dd, docs/PERFORMANCE.md),
// so a commit group's adjacent runs written as one cost a fraction of
// writing them one by one.
type vecWriter interface {
	// WriteVecAt writes bufs (each whole blocks) back to back from off;
	// it may reslice bufs' elements.
	WriteVecAt(bufs [][]byte, off int64) error
}

// WriteVecAt writes the block-aligned buffers among bufs with pwritev on
// the direct descriptor, in runs between the others, which go through
// WriteAt (its bounce buffer, or the page cache).
func (d fileDevice) WriteVecAt(bufs [][]byte, off int64) error {
	for len(bufs) > 0 {
		n := 0
		for n < len(bufs) && d.direct != nil && off%BlockSize == 0 && directOK(bufs[n]) {
			n++
		}
		if n == 0 {
			if _, err := d.WriteAt(bufs[0], off); err != nil {
				return err
			}
			off += int64(len(bufs[0]))
			bufs = bufs[1:]
			continue
		}
		total := 0
		for _, b := range bufs[:n] {
			total += len(b)
		}
		if err := pwritev(d.direct, bufs[:n], off); err != nil {
			return err
		}
		off += int64(total)
		bufs = bufs[n:]
	}
	return nil
}

// skipWritten drops the first n bytes of bufs, reslicing the buffer a
// short write ended in.
func skipWritten(bufs [][]byte, n int) [][]byte {
	for n > 0 && len(bufs) > 0 {
		if n < len(bufs[0]) {
			bufs[0] = bufs[0][n:]
			return bufs
		}
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	return bufs
}

// directOK reports whether p can be written with O_DIRECT as it is:
// whole blocks in block-aligned memory.
func directOK(p []byte) bool {
	return len(p) > 0 && len(p)%BlockSize == 0 && uintptr(unsafe.Pointer(&p[0]))%BlockSize == 0
}

// openFileDevice opens (creating, sparse, if needed) the data file of the
// given size.
func openFileDevice(path string, size int64) (Device, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if os.IsNotExist(statErr) { // new file: make its directory entry durable
		if err := syncDir(vfs.Default, filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Mode().IsRegular() && st.Size() < size {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, fmt.Errorf("size data file %s to %d bytes: %w", path, size, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
	}
	return fileDevice{f: f, direct: openDirect(path)}, nil
}
