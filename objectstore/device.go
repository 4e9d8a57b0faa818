package objectstore

import (
	"fmt"
	"os"
	"path/filepath"

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
type fileDevice struct{ f *os.File }

func (d fileDevice) ReadAt(p []byte, off int64) (int, error)  { return d.f.ReadAt(p, off) }
func (d fileDevice) WriteAt(p []byte, off int64) (int, error) { return d.f.WriteAt(p, off) }
func (d fileDevice) Sync() error                              { return fdatasync(d.f) }
func (d fileDevice) Close() error                             { return d.f.Close() }

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
	return fileDevice{f}, nil
}
