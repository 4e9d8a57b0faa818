package osd

import (
	"context"

	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// backend is how a PG keeps its objects on its members (Ceph's
// PGBackend): a whole copy on every member (replicatedBackend), or one of
// the k+m shards of each object on each (ecBackend). The PG orders
// writes, logs them and sends every member its transaction (pg.go);
// the backend says what the transactions are, how reads are served and
// how a member's missing copy is rebuilt.
type backend interface {
	// prepare executes a write request against its object's current
	// state (the object's lock is held) and returns the transaction of
	// every member: prepared.T for all (replicated) or prepared.shards by
	// position (erasure-coded).
	prepare(ctx context.Context, req *osdop.Request) (*prepared, error)
	// read serves a request of reads only; release, if not nil, gives
	// back pooled buffers once the reply is out.
	read(ctx context.Context, req *osdop.Request) (rep *osdop.Reply, release func(), err error)
	// recoverObject brings oid to every member of plan r (interval iv)
	// that lacks it; the caller holds the object's lock.
	recoverObject(ctx context.Context, r *recovery, iv uint64, oid string) error
}

// replicatedBackend: every member holds the whole object; the primary
// executes a write (osd/opexec) and every member applies the same
// transaction; reads are served from the primary's copy; a missing copy
// is pushed whole from one that holds it.
type replicatedBackend struct{ pg *PG }

func (b replicatedBackend) prepare(_ context.Context, req *osdop.Request) (*prepared, error) {
	return b.pg.prepare(req)
}

func (b replicatedBackend) read(ctx context.Context, req *osdop.Request) (*osdop.Reply, func(), error) {
	return b.pg.read(ctx, req)
}

func (b replicatedBackend) recoverObject(ctx context.Context, r *recovery, iv uint64, oid string) error {
	return b.pg.recoverReplicated(ctx, r, iv, oid)
}

// ecBackend: member i holds shard i of every object (ec.go); a write
// re-encodes the stripes it touches and each member applies its shard's
// transaction (ec_write.go); reads fetch and decode the data shards
// (ec_read.go); a missing shard is copied or decoded from k others
// (ec_recovery.go).
type ecBackend struct {
	pg   *PG
	cd   *ec.Codec
	pool *osdmap.Pool
}

func (b ecBackend) prepare(ctx context.Context, req *osdop.Request) (*prepared, error) {
	return b.pg.prepareEC(ctx, b.cd, b.pool, req)
}

func (b ecBackend) read(ctx context.Context, req *osdop.Request) (*osdop.Reply, func(), error) {
	return b.pg.readEC(ctx, b.cd, req)
}

func (b ecBackend) recoverObject(ctx context.Context, r *recovery, iv uint64, oid string) error {
	return b.pg.recoverObjectEC(ctx, r, iv, oid)
}

// backend is the PG's backend for pool (its codec fetched from the MONs
// once, for an erasure-coded pool).
func (pg *PG) backend(ctx context.Context, pool *osdmap.Pool) (backend, error) {
	if pool.Type != osdmap.PoolErasure {
		return replicatedBackend{pg}, nil
	}
	cd, err := pg.osd.codec(ctx, pool)
	if err != nil {
		return nil, err
	}
	return ecBackend{pg: pg, cd: cd, pool: pool}, nil
}
