package objectstore

import (
	"testing"

	"github.com/shoal-project/shoal/internal/wire"
)

// FuzzDecodeOnode: a stored onode (or one damaged on the device) decodes
// to an error or a value, never a panic; so do the reference regions.
func FuzzDecodeOnode(f *testing.F) {
	f.Add((&onode{Size: 3, Inline: []byte("abc"), Attrs: map[string][]byte{"_": []byte("v")}}).encode())
	f.Add((&onode{Size: 8192, OnDevice: true, Extents: []extent{{Logical: 0, Phys: 4096, CRCs: []uint32{1, 2}}}}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeOnode(b)
		decodeRefRegion(b)
		decodeSuperblock(b)
	})
}

// FuzzDecodeTransaction: a transaction as a replica receives it (inside a
// peer message) decodes to an error or a value, never a panic.
func FuzzDecodeTransaction(f *testing.F) {
	txn := &Transaction{}
	txn.WriteFull("c", "o", []byte("data"))
	txn.Write("c", "o", 4096, make([]byte, 8192))
	txn.OmapSet("c", "o", []KV{{Key: "k", Value: []byte("v")}})
	txn.Touch("c", "p")
	e := wire.NewEncoder(nil)
	txn.Encode(e)
	f.Add(e.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeTransaction(wire.NewDecoder(b))
	})
}
