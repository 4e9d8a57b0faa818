package objectstore_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/objectstore"
)

// TestMetadataPinned: a store's metadata stays where the store was
// created. Opened again without the setting, it is found there; opened
// with another place, the store refuses instead of starting empty. A
// metadata directory serves one store only.
func TestMetadataPinned(t *testing.T) {
	dir, fast := t.TempDir(), t.TempDir()
	db, wal := filepath.Join(fast, "db"), filepath.Join(fast, "wal")
	s := openStore(t, dir, objectstore.Options{DBDir: db, WALDir: wal})
	var txn objectstore.Transaction
	txn.CreateCollection("1.0")
	txn.WriteFull("1.0", "kept", []byte("still here"))
	if err := s.Apply(&txn); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, objectstore.Options{}) // no setting: the recorded places
	got, err := s.Read("1.0", "kept", 0, 0)
	if err != nil || !bytes.Equal(got, []byte("still here")) {
		t.Fatalf("read after reopening without the setting: %q, %v", got, err)
	}
	s.Close()
	s = openStore(t, dir, objectstore.Options{DBDir: db, WALDir: wal}) // the same setting
	s.Close()

	for _, o := range []objectstore.Options{{DBDir: filepath.Join(fast, "elsewhere")}, {DBDir: db, WALDir: filepath.Join(fast, "wal2")}} {
		o.Dir = dir
		if _, err := objectstore.Open(o); !errors.Is(err, objectstore.ErrInvalid) || !strings.Contains(err.Error(), "since it was created") {
			t.Fatalf("open with %+v: %v", o, err)
		}
	}

	other := t.TempDir()
	if _, err := objectstore.Open(objectstore.Options{Dir: other, DBDir: db}); !errors.Is(err, objectstore.ErrInvalid) || !strings.Contains(err.Error(), "holds the metadata of the store in "+dir) {
		t.Fatalf("a second store on the same metadata directory: %v", err)
	}
	// the refused store recorded nothing: it can still be made elsewhere
	s = openStore(t, other, objectstore.Options{DBDir: filepath.Join(fast, "other-db")})
	s.Close()
}
