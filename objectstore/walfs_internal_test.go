package objectstore

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestLogRunsAhead checks, through Open on the real file system, that the
// metadata log is written ahead of its records: its size does not change
// from one commit to the next, so a commit's log sync writes no inode.
func TestLogRunsAhead(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	commit := func(i int) {
		var txn Transaction
		if i == 0 {
			txn.CreateCollection("1.0")
		}
		txn.WriteFull("1.0", fmt.Sprint("obj-", i), []byte("small"))
		if err := s.Apply(&txn); err != nil {
			t.Fatal(err)
		}
	}
	logSize := func() (string, int64) {
		names, err := vfs.Default.List(filepath.Join(dir, "db"))
		if err != nil {
			t.Fatal(err)
		}
		var logs []string
		for _, n := range names {
			if strings.HasSuffix(n, ".log") {
				logs = append(logs, n)
			}
		}
		if len(logs) == 0 {
			t.Fatalf("no log in %v", names)
		}
		slices.Sort(logs) // zero-padded log numbers: the newest last
		st, err := vfs.Default.Stat(filepath.Join(dir, "db", logs[len(logs)-1]))
		if err != nil {
			t.Fatal(err)
		}
		return logs[len(logs)-1], st.Size()
	}
	commit(0)
	name, size := logSize()
	if size < walZeroStep {
		t.Fatalf("log %s is %d bytes after a commit, want at least %d written ahead", name, size, walZeroStep)
	}
	for i := 1; i <= 50; i++ {
		commit(i)
	}
	if name2, size2 := logSize(); name2 != name || size2 != size {
		t.Errorf("log %s %d bytes grew to %s %d bytes over 50 small commits", name, size, name2, size2)
	}
}

// TestWalFile checks walFile's contents: the records written in order,
// then zeros to the end, however the writes cross the zeroed horizon; a
// recycled file keeps its size while writes stay inside it.
func TestWalFile(t *testing.T) {
	mem := vfs.NewMem()
	fs := walFS{mem}
	f, err := fs.Create("000001.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i, n := range []int{100, walZeroStep, 3, walZeroStep + 7, 1 << 20} {
		p := bytes.Repeat([]byte{byte(i + 1)}, n)
		want = append(want, p...)
		if k, err := f.Write(slices.Clone(p)); err != nil || k != n {
			t.Fatalf("write %d: %d, %v", n, k, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, mem, "000001.log")
	if len(got) <= len(want) || len(got) > len(want)+walZeroStep {
		t.Fatalf("file is %d bytes for %d written, want zeros ahead, at most %d", len(got), len(want), walZeroStep)
	}
	if !bytes.Equal(got[:len(want)], want) {
		t.Fatal("records differ from what was written")
	}
	if i := slices.IndexFunc(got[len(want):], func(b byte) bool { return b != 0 }); i >= 0 {
		t.Fatalf("byte %d past the records is not zero", len(want)+i)
	}

	size := int64(len(got))
	r, err := fs.ReuseForWrite("000001.log", "000002.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write([]byte("recycled")); err != nil {
		t.Fatal(err)
	}
	r.Close()
	got = readAll(t, mem, "000002.log")
	if int64(len(got)) != size || string(got[:8]) != "recycled" || got[8] != 1 {
		t.Fatalf("recycled log: %d bytes starting %q, want %d bytes starting \"recycled\" then the old records", len(got), got[:9], size)
	}
}

func readAll(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
