// Package omap holds the types of an object's key/value map (its omap) and
// of its attributes, and their wire form: the vocabulary the client, the
// op protocol, object classes and the object store share. It is a leaf:
// it imports only internal/wire, so a client or a gateway that uses omap
// entries links no storage engine.
package omap

import "github.com/shoal-project/shoal/internal/wire"

// KV is one omap entry or one attribute: a key and its value.
type KV struct {
	Key   string // an omap key or an attribute's name (any bytes)
	Value []byte // its value; Decode's alias the decoded input
}

// Encode appends a u32 count and each entry (key, then length-prefixed
// value): the wire form of omap entries and attributes everywhere (op
// requests and replies, object-store transactions, peer messages).
func Encode(e *wire.Encoder, kvs []KV) {
	e.U32(uint32(len(kvs)))
	for _, kv := range kvs {
		e.String(kv.Key)
		e.Blob(kv.Value)
	}
}

// Decode reads what Encode wrote (nil for none); values alias d's input.
// A malformed input leaves the error in d (see wire.Decoder).
func Decode(d *wire.Decoder) []KV {
	n := d.Count(8)
	if n == 0 {
		return nil
	}
	kvs := make([]KV, n)
	for i := range kvs {
		kvs[i] = KV{Key: d.String(), Value: d.BlobRef()}
	}
	return kvs
}
