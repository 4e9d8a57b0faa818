package objectstore

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walZeroStep is how far ahead of its writes a metadata log file is
// extended with written zeros (bytes).
const walZeroStep = 4 << 20

// walFS gives Pebble log files whose size runs ahead of what Pebble has
// written, in written (not merely allocated) blocks, so that the log's
// fdatasync after each commit group writes only the log's data. Appending
// to a file, or writing into blocks preallocated with fallocate (Pebble
// preallocates its logs that way), changes the file's size or extent map,
// which fdatasync must also write: on ext4 without a journal, as here, a
// second, synchronous write of the inode after the data, in every sync,
// until Pebble recycles the file (and a fresh log follows each memtable
// flush). Zeros past the last record are what a preallocated or recycled
// log already has there: Pebble's log reader takes a zeroed chunk after
// the last record as the log's end (record.ErrZeroedChunk, read-ahead
// finding no later record: an unclean but tolerated tail on the newest
// log; older logs end in an EOF trailer).
type walFS struct{ vfs.FS }

func isLog(name string) bool { return strings.HasSuffix(name, ".log") }

// Create implements vfs.FS.
func (fs walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !isLog(name) {
		return f, err
	}
	return &walFile{File: f}, nil
}

// ReuseForWrite implements vfs.FS: a recycled log is already written up to
// its old size.
func (fs walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isLog(newname) {
		return f, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat recycled log %s: %w", newname, err)
	}
	return &walFile{File: f, zeroed: st.Size()}, nil
}

// walFile is a log file written sequentially (Write) whose bytes from off
// to zeroed are written zeros.
type walFile struct {
	vfs.File
	off, zeroed int64
}

// Write implements io.Writer, first extending the zeros when p would pass
// them (walZeroStep past p's end, from the read path's shared zero unit: a
// write of 64 KiB per call, 64 per step, one step per few thousand
// commits).
func (f *walFile) Write(p []byte) (int, error) {
	if end := f.off + int64(len(p)); end > f.zeroed {
		to := end + walZeroStep
		for f.zeroed < to {
			n, err := f.File.WriteAt(zeroUnit[:min(unitBytes, to-f.zeroed)], f.zeroed)
			f.zeroed += int64(n)
			if err != nil {
				return 0, fmt.Errorf("extend log with zeros: %w", err)
			}
		}
	}
	n, err := f.File.Write(p)
	f.off += int64(n)
	return n, err
}
