package msgr

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/shoal-project/shoal/internal/durable"
	"gopkg.in/ini.v1"
)

// ErrAuth means the peer could not prove knowledge of the cluster key (or
// this end could not): the connection is refused.
var ErrAuth = errors.New("msgr: authentication failed")

// KeySize is the cluster key's length in bytes.
const KeySize = 32

// Keyring is an entity's identity and the cluster key it proves knowledge
// of. The file format is Ceph's keyring (INI):
//
//	[client.admin]
//		key = <base64 of 32 bytes>
type Keyring struct {
	Name string // entity name: client.admin, osd.3, mon.a
	Key  []byte
	// Lookup, on a server, finds the key of the entity a peer claims to
	// be (the peer proves knowledge of its own key, and the server of the
	// same key); nil means every peer shares Key. An entity it does not
	// know is refused.
	Lookup func(entity string) ([]byte, bool)
}

// keyFor is the key a server shares with entity.
func (k Keyring) keyFor(entity string) ([]byte, bool) {
	if k.Lookup == nil {
		return k.Key, true
	}
	return k.Lookup(entity)
}

// KeyringEntry is one entity's section of a keyring file: its key and
// its capabilities, service ("mon", "osd") → capability string (package
// caps). Caps is nil when the section has no caps lines.
type KeyringEntry struct {
	Key  []byte
	Caps map[string]string
}

// WriteKeyring writes a keyring file (mode 0600) with each entity's key and
// caps, durably (internal/durable: whole or as it was after a crash):
//
//	[client.admin]
//		key = <base64 of 32 bytes>
//		caps mon = "allow *"
func WriteKeyring(path string, entries map[string]KeyringEntry) error {
	return durable.WriteFile(path, FormatKeyring(entries), 0o600)
}

// FormatKeyring is a keyring file's text (WriteKeyring's format), the
// entities and their caps in name order.
func FormatKeyring(entries map[string]KeyringEntry) []byte {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(entries)) {
		e := entries[n]
		fmt.Fprintf(&b, "[%s]\n\tkey = %s\n", n, base64.StdEncoding.EncodeToString(e.Key))
		for _, svc := range slices.Sorted(maps.Keys(e.Caps)) {
			fmt.Fprintf(&b, "\tcaps %s = \"%s\"\n", svc, e.Caps[svc]) // ini takes the outermost quotes off
		}
	}
	return []byte(b.String())
}

// KeyringCaps is each entry's caps (nil for an entry without caps lines),
// as caps.NewTable takes a keyring file's.
func KeyringCaps(entries map[string]KeyringEntry) map[string]map[string]string {
	out := make(map[string]map[string]string, len(entries))
	for n, e := range entries {
		out[n] = e.Caps
	}
	return out
}

// ReadKeyring reads every entity's key and caps from a keyring file.
func ReadKeyring(path string) (map[string]KeyringEntry, error) {
	f, err := ini.LoadSources(ini.LoadOptions{IgnoreInlineComment: true}, path) // caps may hold ";"
	if err != nil {
		return nil, fmt.Errorf("keyring %s: %w", path, err)
	}
	out := map[string]KeyringEntry{}
	for _, sec := range f.Sections() {
		if sec.Name() == ini.DefaultSection {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(sec.Key("key").String())
		if err != nil || len(key) != KeySize {
			return nil, fmt.Errorf("keyring %s: key for %s is not %d base64-encoded bytes", path, sec.Name(), KeySize)
		}
		e := KeyringEntry{Key: key}
		for _, k := range sec.Keys() {
			if svc, ok := strings.CutPrefix(k.Name(), "caps "); ok {
				if e.Caps == nil {
					e.Caps = map[string]string{}
				}
				v := k.String() // ini leaves the quotes on when the value holds more
				if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
					v = v[1 : len(v)-1]
				}
				e.Caps[strings.TrimSpace(svc)] = v
			}
		}
		out[sec.Name()] = e
	}
	return out, nil
}

// KeyLookup finds entity's key in keys: its own entry, else its type's
// ("osd." for osd.3), which the entities of a type may share.
func KeyLookup(keys func(name string) ([]byte, bool)) func(string) ([]byte, bool) {
	return func(entity string) ([]byte, bool) {
		if k, ok := keys(entity); ok {
			return k, true
		}
		typ, _, _ := strings.Cut(entity, ".")
		return keys(typ + ".")
	}
}

// NewKey returns a fresh random cluster key.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// LoadKeyring reads the key of entity name ("osd.3") from a keyring file:
// its own section, else its type's ("osd.", shared by every OSD).
func LoadKeyring(path, name string) (Keyring, error) {
	f, err := ini.LoadSources(ini.LoadOptions{IgnoreInlineComment: true}, path) // caps may hold ";"
	if err != nil {
		return Keyring{}, fmt.Errorf("keyring %s: %w", path, err)
	}
	sec, err := f.GetSection(name)
	if err != nil {
		typ, _, _ := strings.Cut(name, ".")
		if sec, err = f.GetSection(typ + "."); err != nil {
			return Keyring{}, fmt.Errorf("keyring %s: no entry for %s", path, name)
		}
	}
	key, err := base64.StdEncoding.DecodeString(sec.Key("key").String())
	if err != nil || len(key) != KeySize {
		return Keyring{}, fmt.Errorf("keyring %s: key for %s is not %d base64-encoded bytes", path, name, KeySize)
	}
	return Keyring{Name: name, Key: key}, nil
}

// The handshake (before any frame), all fields length-prefixed, version 2:
//
//	client → server  hello:     "SHOAL-HELLO", version, client name, client nonce, mode wanted
//	server → client  challenge: server name, server nonce, mode,
//	                            HMAC(key, "server" ‖ client nonce ‖ server nonce ‖ server name ‖ client name ‖ mode)
//	client → server  proof:     HMAC(key, "client" ‖ server nonce ‖ client nonce ‖ client name ‖ server name ‖ mode)
//	server → client  verdict:   "OK", or a reason, and the connection closes
//
// Each side proves it knows the key without sending it, over fresh nonces
// from both sides (no replay); HMAC-SHA256 from the standard library. The
// mode is the secure one if either side wants it; the proofs cover it, so
// nobody on the path can talk the ends down to crc. Both ends then derive
// the session's keys (sessionKeys) and every frame is authenticated, or
// encrypted and authenticated (Mode). Version 1 peers, whose frames were
// not authenticated, are refused.
const (
	helloMagic    = "SHOAL-HELLO"
	nonceSize     = 32
	handshakeVers = 3 // 3: frame version 2 (a crc session authenticates payloads by segment)
)

func proof(key []byte, role string, a, b []byte, name, peer string, m Mode) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(role))
	h.Write(a)
	h.Write(b)
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(peer))
	h.Write([]byte{0, byte(m)})
	return h.Sum(nil)
}

// session is what a handshake leaves a connection: the peer's name and
// the frame protection of each direction.
type session struct {
	peer    string
	mode    Mode
	out, in *frameCipher
}

func newSession(peer string, m Mode, out, in []byte) (*session, error) {
	o, err := newFrameCipher(out, m)
	if err != nil {
		return nil, err
	}
	i, err := newFrameCipher(in, m)
	if err != nil {
		return nil, err
	}
	return &session{peer: peer, mode: m, out: o, in: i}, nil
}

func writeField(w io.Writer, b []byte) error {
	if len(b) > 255 {
		return fmt.Errorf("handshake field of %d bytes", len(b))
	}
	if _, err := w.Write([]byte{byte(len(b))}); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

func readField(r io.Reader) ([]byte, error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, n[0])
	_, err := io.ReadFull(r, b)
	return b, err
}

func nonce() []byte {
	b := make([]byte, nonceSize)
	rand.Read(b)
	return b
}

// clientHandshake authenticates to a server wanting mode want; it returns
// the session (the server's name, the mode, the keys). A refusal (the
// server sends an empty name and hangs up, a wrong proof, a verdict other
// than OK) is ErrAuth; a connection that breaks otherwise (the server died
// mid-handshake) is ErrConnReset, which callers retry.
func clientHandshake(rw io.ReadWriter, kr Keyring, want Mode) (*session, error) {
	cn := nonce()
	for _, f := range [][]byte{[]byte(helloMagic), {handshakeVers}, []byte(kr.Name), cn, {byte(want)}} {
		if err := writeField(rw, f); err != nil {
			return nil, fmt.Errorf("%w: sending hello: %w", ErrConnReset, err)
		}
	}
	var fields [4][]byte
	for i := range fields {
		f, err := readField(rw)
		if err != nil && i > 0 && len(fields[0]) == 0 {
			return nil, fmt.Errorf("%w: server refused %s (unknown entity, or handshake version %d unsupported)", ErrAuth, kr.Name, handshakeVers)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: reading the server's challenge: %w", ErrConnReset, err)
		}
		fields[i] = f
	}
	sname, sn, sproof := string(fields[0]), fields[1], fields[3]
	if len(sn) != nonceSize {
		return nil, fmt.Errorf("%w: server %s sent a %d-byte nonce", ErrAuth, sname, len(sn))
	}
	if len(fields[2]) != 1 || Mode(fields[2][0]) > ModeSecure || Mode(fields[2][0]) < want {
		return nil, fmt.Errorf("%w: server %s chose mode %v, this end wants at least %v", ErrAuth, sname, fields[2], want)
	}
	m := Mode(fields[2][0])
	if !hmac.Equal(sproof, proof(kr.Key, "server", cn, sn, sname, kr.Name, m)) {
		return nil, fmt.Errorf("%w: server %s does not know %s's key (unknown entity or wrong key)", ErrAuth, sname, kr.Name)
	}
	if err := writeField(rw, proof(kr.Key, "client", sn, cn, kr.Name, sname, m)); err != nil {
		return nil, fmt.Errorf("%w: sending proof to %s: %w", ErrConnReset, sname, err)
	}
	verdict, err := readField(rw)
	if err != nil {
		return nil, fmt.Errorf("%w: no verdict from %s: %w", ErrConnReset, sname, err)
	}
	if string(verdict) != "OK" {
		return nil, fmt.Errorf("%w: refused by %s: %s", ErrAuth, sname, verdict)
	}
	c2s, s2c, err := sessionKeys(kr.Key, cn, sn, kr.Name, sname, m)
	if err != nil {
		return nil, err
	}
	return newSession(sname, m, c2s, s2c)
}

// serverHandshake authenticates a client, this end wanting mode want; it
// returns the session (the client's name, the mode, the keys).
func serverHandshake(rw io.ReadWriter, kr Keyring, want Mode) (*session, error) {
	var first [1]byte
	if _, err := io.ReadFull(rw, first[:]); err != nil {
		return nil, fmt.Errorf("%w: reading hello: %v", ErrAuth, err)
	}
	if first[0] != byte(len(helloMagic)) { // refuse other protocols at once
		return nil, fmt.Errorf("%w: peer did not start with a Shoal hello (first byte %#x)", ErrAuth, first[0])
	}
	magic := make([]byte, len(helloMagic))
	if _, err := io.ReadFull(rw, magic); err != nil || string(magic) != helloMagic {
		return nil, fmt.Errorf("%w: peer did not start with a Shoal hello", ErrAuth)
	}
	var hello [5][]byte
	hello[0] = magic
	for i := 1; i < len(hello); i++ {
		f, err := readField(rw)
		if err != nil {
			return nil, fmt.Errorf("%w: reading hello: %v", ErrAuth, err)
		}
		hello[i] = f
		if i == 1 && (len(f) != 1 || f[0] != handshakeVers) {
			writeField(rw, nil)
			return nil, fmt.Errorf("%w: handshake version %v unsupported (this end speaks %d)", ErrAuth, f, handshakeVers)
		}
	}
	cname, cn := string(hello[2]), hello[3]
	if len(cn) != nonceSize {
		writeField(rw, nil)
		return nil, fmt.Errorf("%w: %q sent a %d-byte nonce", ErrAuth, cname, len(cn))
	}
	if len(hello[4]) != 1 || Mode(hello[4][0]) > ModeSecure {
		writeField(rw, nil)
		return nil, fmt.Errorf("%w: %q asks for unknown mode %v", ErrAuth, cname, hello[4])
	}
	m := max(want, Mode(hello[4][0]))
	key, known := kr.keyFor(cname)
	if !known {
		writeField(rw, nil)
		return nil, fmt.Errorf("%w: unknown entity %q", ErrAuth, cname)
	}
	sn := nonce()
	for _, f := range [][]byte{[]byte(kr.Name), sn, {byte(m)}, proof(key, "server", cn, sn, kr.Name, cname, m)} {
		if err := writeField(rw, f); err != nil {
			return nil, err
		}
	}
	cproof, err := readField(rw)
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s's proof: %v", ErrAuth, cname, err)
	}
	if !hmac.Equal(cproof, proof(key, "client", sn, cn, cname, kr.Name, m)) {
		writeField(rw, []byte("authentication failed: wrong key for "+cname))
		return nil, fmt.Errorf("%w: %s does not know its key", ErrAuth, cname)
	}
	if err := writeField(rw, []byte("OK")); err != nil {
		return nil, err
	}
	c2s, s2c, err := sessionKeys(key, cn, sn, cname, kr.Name, m)
	if err != nil {
		return nil, err
	}
	return newSession(cname, m, s2c, c2s)
}
