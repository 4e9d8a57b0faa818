// Package durable writes small files so that a crash leaves them whole or
// as they were: the daemons' keyrings, configuration and identity files.
package durable

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data (mode perm) so that after a crash at
// any point the file holds either its old content or data, never part of
// it: data goes to path.tmp, which is synced and renamed over path, and
// then path's directory is synced so the rename itself survives. Errors
// name the step that failed; path.tmp is removed on failure.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fail := func(step string, err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %s: %w", path, step, err)
	}
	if err := f.Chmod(perm); err != nil { // O_CREATE's mode is masked by the umask, and an old tmp keeps its own
		return fail("chmod", err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("sync", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir syncs directory dir, making the creation, removal or renaming
// of its entries durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
