package msgr

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzHandshake: whatever a peer sends before it has authenticated, the
// server's (and the client's) side of the handshake answers an error or a
// name, never a panic; fields are at most 255 bytes.
func FuzzHandshake(f *testing.F) {
	var hello bytes.Buffer
	for _, fl := range [][]byte{[]byte(helloMagic), {handshakeVers}, []byte("client.admin"), make([]byte, nonceSize), {byte(ModeSecure)}} {
		writeField(&hello, fl)
	}
	f.Add(hello.Bytes())
	f.Add([]byte{byte(len(helloMagic))})
	kr := Keyring{Name: "osd.0", Key: bytes.Repeat([]byte{1}, KeySize)}
	f.Fuzz(func(t *testing.T, b []byte) {
		serverHandshake(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(b), io.Discard}, kr, Mode(len(b)%2))
		clientHandshake(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(b), io.Discard}, kr, Mode(len(b)%2))
	})
}

// FuzzKeyring: a keyring file, however damaged, reads to an error or its
// entries.
func FuzzKeyring(f *testing.F) {
	f.Add([]byte("[client.admin]\n\tkey = AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n\tcaps mon = \"allow *\"\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "keyring")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		ReadKeyring(path)
		LoadKeyring(path, "client.admin")
	})
}
