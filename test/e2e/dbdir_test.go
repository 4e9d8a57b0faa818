package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpDBDir: `shoal up --db-dir --wal-dir` puts each OSD's metadata
// store and its write-ahead log in a directory of its own elsewhere
// (BlueStore's block.db and block.wal); an OSD killed with SIGKILL and
// started again finds them there, with every acknowledged write.
func TestUpDBDir(t *testing.T) {
	fast := t.TempDir()
	db, wal := filepath.Join(fast, "db"), filepath.Join(fast, "wal")
	c := up(t, "--db-dir", db, "--wal-dir", wal)
	for i := range 3 {
		osd := "osd." + string(rune('0'+i))
		for _, d := range []string{filepath.Join(db, osd), filepath.Join(wal, osd)} {
			b, err := os.ReadFile(filepath.Join(d, "SHOAL_STORE"))
			if err != nil || !strings.Contains(string(b), filepath.Join(c.data, osd)) {
				t.Fatalf("%s is not %s's: %q, %v", d, osd, b, err)
			}
		}
		if m, _ := filepath.Glob(filepath.Join(db, osd, "MANIFEST-*")); len(m) == 0 {
			t.Fatalf("no metadata store in %s", filepath.Join(db, osd))
		}
		if l, _ := filepath.Glob(filepath.Join(wal, osd, "*.log")); len(l) == 0 {
			t.Fatalf("no write-ahead log in %s", filepath.Join(wal, osd))
		}
	}
	src := filepath.Join(t.TempDir(), "obj")
	os.WriteFile(src, []byte("kept across a kill -9"), 0o644)
	c.must("rados", "-p", "data", "put", "obj", src)
	c.kill9("osd.0")
	c.up()
	if out := c.must("rados", "-p", "data", "get", "obj", "-"); out != "kept across a kill -9" {
		t.Fatalf("read after the restart: %q", out)
	}
	if _, err := os.Stat(filepath.Join(c.data, "osd.0", "store", "db")); !os.IsNotExist(err) {
		t.Fatalf("osd.0 made a metadata store in its own directory too: %v", err)
	}
}
