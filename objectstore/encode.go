package objectstore

import (
	"fmt"

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/omap"
)

// Encode appends t's wire form to e: the form in which a primary OSD ships
// a transaction to its replicas (as Ceph's repop carries an
// ObjectStore::Transaction).
func (t *Transaction) Encode(e *wire.Encoder) {
	mark := e.Begin(2, 2)
	e.U32(uint32(len(t.ops)))
	for i := range t.ops {
		o := &t.ops[i]
		e.U8(uint8(o.code))
		e.String(string(o.coll))
		e.String(o.oid)
		e.String(o.oid2)
		e.U64(o.off)
		e.U64(o.n)
		e.AlignedBlob(o.data)
		e.String(o.name)
		omap.Encode(e, o.kvs)
		e.Strings(o.keys)
	}
	e.End(mark)
}

// EncodedLen bounds the number of bytes Encode appends (exact but for
// the alignment padding of large data): callers size their buffers with
// it, so that encoding a transaction that carries object data copies that
// data once.
func (t *Transaction) EncodedLen() int {
	n := 2 + 4 + 4 // section header, op count
	for i := range t.ops {
		o := &t.ops[i]
		n += 1 + 4 + len(o.coll) + 4 + len(o.oid) + 4 + len(o.oid2) + 8 + 8 + 4 + 4 + len(o.data) + 4 + len(o.name) + 4 + 4
		if len(o.data) >= 8<<10 {
			n += wire.BlockAlign - 1 // at most, for AlignedBlob's padding
		}
		for _, kv := range o.kvs {
			n += 4 + len(kv.Key) + 4 + len(kv.Value)
		}
		for _, k := range o.keys {
			n += 4 + len(k)
		}
	}
	return n
}

// DecodeTransaction reads a transaction Encode wrote. Data slices alias d's
// input, which must stay unchanged until the transaction is applied.
func DecodeTransaction(d *wire.Decoder) (*Transaction, error) {
	_, end := d.Begin("transaction", 2)
	n := d.Count(40)
	t := &Transaction{ops: make([]op, 0, n)}
	for range n {
		o := op{code: opCode(d.U8()), coll: Coll(d.String()), oid: d.String(), oid2: d.String(), off: d.U64(), n: d.U64()}
		o.data = d.AlignedBlobRef()
		o.name = d.String()
		o.kvs = omap.Decode(d)
		o.keys = d.Strings()
		if o.code < opCreateColl || o.code > opStash {
			d.Fail("transaction: unknown op code %d", o.code)
		}
		if o.code == opWrite && uint64(len(o.data)) != o.n {
			d.Fail("transaction: write of %d bytes carries %d", o.n, len(o.data))
		}
		t.ops = append(t.ops, o)
	}
	d.End("transaction", end)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("objectstore: %w", err)
	}
	return t, nil
}

// Append adds u's operations after t's.
func (t *Transaction) Append(u *Transaction) { t.ops = append(t.ops, u.ops...) }
