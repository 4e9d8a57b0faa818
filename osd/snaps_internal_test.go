package osd

import (
	"errors"
	"slices"
	"testing"

	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// snapContext's checks, one request each, and the SnapContext it leaves.
func TestSnapContextChecks(t *testing.T) {
	self := &osdmap.Pool{Name: "rbd", Type: osdmap.PoolReplicated, SnapSeq: 6, Flags: osdmap.FlagSelfManagedSnaps,
		RemovedSnaps: []osdmap.SnapRange{{First: 2, Last: 3}}}
	pools := &osdmap.Pool{Name: "data", Type: osdmap.PoolReplicated, SnapSeq: 4, Flags: osdmap.FlagPoolSnaps,
		Snaps: map[uint64]osdmap.PoolSnap{1: {ID: 1, Name: "a"}, 4: {ID: 4, Name: "b"}}}
	ec := &osdmap.Pool{Name: "ec", Type: osdmap.PoolErasure, SnapSeq: 1, Flags: osdmap.FlagSelfManagedSnaps}
	write := []osdop.Op{{Code: osdop.Write, Data: []byte("x")}}
	read := []osdop.Op{{Code: osdop.Read}}
	for _, c := range []struct {
		what  string
		pool  *osdmap.Pool
		req   osdop.Request
		want  error
		seq   uint64
		snaps []uint64
	}{
		{"removed snaps leave the context", self, osdop.Request{Ops: write, SnapSeq: 6, Snaps: []uint64{6, 3, 2, 1}}, nil, 6, []uint64{6, 1}},
		{"a seq the pool never gave out", self, osdop.Request{Ops: write, SnapSeq: 7, Snaps: []uint64{7}}, osdop.ErrInvalid, 0, nil},
		{"snaps out of order", self, osdop.Request{Ops: write, SnapSeq: 6, Snaps: []uint64{1, 6}}, osdop.ErrInvalid, 0, nil},
		{"a write at a snap", self, osdop.Request{Ops: write, Snap: 6}, osdop.ErrReadOnly, 0, nil},
		{"a read at a removed snap", self, osdop.Request{Ops: read, Snap: 2}, osdop.ErrNotFound, 0, nil},
		{"a read at a live snap", self, osdop.Request{Ops: read, Snap: 5}, nil, 0, nil},
		{"a rollback to a removed snap", self, osdop.Request{Ops: []osdop.Op{{Code: osdop.Rollback, Ver: 3}}}, osdop.ErrNotFound, 0, nil},
		{"the trimmer's op from a client", self, osdop.Request{Ops: []osdop.Op{{Code: osdop.TrimSnaps}}}, osdop.ErrInvalid, 0, nil},
		{"the pool's context in a pool-snaps pool", pools, osdop.Request{Ops: write, SnapSeq: 1, Snaps: []uint64{1}}, nil, 4, []uint64{4, 1}},
		{"a snap on an erasure-coded pool", ec, osdop.Request{Ops: write, SnapSeq: 1, Snaps: []uint64{1}}, nil, 1, []uint64{1}},
		{"no snapshots at all", ec, osdop.Request{Ops: write}, nil, 0, nil},
	} {
		req := c.req
		err := snapContext(c.pool, &req)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.what, err, c.want)
			continue
		}
		if err == nil && req.IsWrite() && (req.SnapSeq != c.seq || !slices.Equal(req.Snaps, c.snaps)) {
			t.Errorf("%s: context %d %v, want %d %v", c.what, req.SnapSeq, req.Snaps, c.seq, c.snaps)
		}
	}
}
