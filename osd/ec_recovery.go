package osd

// Erasure-coded recovery: a shard a member lacks is copied from the
// acting member that holds the same shard, or decoded from k others.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdop"
)

// shardFill is a shard of an object to rebuild: the shard at position
// pos, on member m (an acting member, or a backfill target).
type shardFill struct {
	pos int
	m   memberInfo
}

// recoverObjectEC rebuilds the shards of oid that acting members and
// backfill targets lack (recoverObject of an erasure-coded PG): copied
// from the acting member holding the same shard when only targets lack
// it and that copy is current (a backfill under pg_temp), else decoded
// from k current ones. The caller holds the object's lock exclusively.
func (pg *PG) recoverObjectEC(ctx context.Context, r *recovery, iv uint64, oid string) error {
	d := pg.osd
	pg.mu.Lock()
	pool := pg.pool
	var fills []shardFill
	for i, m := range r.Shards {
		if m != nil && r.Lacks[m.ID][oid] {
			fills = append(fills, shardFill{i, *m})
		}
	}
	direct := len(fills) == 0
	for _, m := range r.Members {
		if pos, ok := r.TargetShards[m.ID]; ok && r.Lacks[m.ID][oid] {
			fills = append(fills, shardFill{pos, m})
			direct = direct && r.Shards[pos] != nil
		}
	}
	pg.mu.Unlock()
	if len(fills) == 0 {
		return nil
	}
	var mem recoveryMemory
	defer mem.release()
	copied := false
	if direct {
		var err error
		if copied, err = pg.copyShards(ctx, r, iv, oid, fills, &mem); err != nil {
			return err
		}
	}
	if !copied {
		cd, err := d.codec(ctx, pool)
		if err != nil {
			return err
		}
		// every shard is held at once while decoding
		size, err := pg.shardSize(ctx, iv, r.Shards, fills, oid)
		if err != nil {
			return err
		}
		if err := mem.hold(ctx, d, size*uint64(len(r.Shards))); err != nil {
			return err
		}
		if err := pg.recoverEC(ctx, cd, iv, r.sources(), oid, fills); err != nil {
			return err
		}
		d.perf.ecRebuilds.Add(1)
	}
	for _, f := range fills {
		pg.filled(r, f.m.ID, oid)
	}
	return nil
}

// sources are the members an erasure-coded PG's shards can be read from
// for recovery, by shard position: the acting members, then the backfill
// targets (they took every write of their shard since they joined).
func (r *recovery) sources() []shardFill {
	var srcs []shardFill
	for i, m := range r.Shards {
		if m != nil {
			srcs = append(srcs, shardFill{i, *m})
		}
	}
	for _, m := range r.Members {
		if pos, ok := r.TargetShards[m.ID]; ok {
			srcs = append(srcs, shardFill{pos, m})
		}
	}
	return srcs
}

// copyShards fills backfill targets with oid's shards copied from the
// acting members that hold the same shards (no acting member lacks the
// object), when those are at the version this OSD, the primary, holds:
// one shard read per shard written, no decoding. It reports false,
// having pushed nothing, when a source holds another version; the caller
// decodes then.
func (pg *PG) copyShards(ctx context.Context, r *recovery, iv uint64, oid string, fills []shardFill, mem *recoveryMemory) (bool, error) {
	d := pg.osd
	want := &objState{}
	size := uint64(0)
	if st, err := d.store.Stat(pg.coll, oid); err == nil {
		b, err := d.store.GetAttr(pg.coll, oid, attrVersion)
		if err != nil {
			return false, nil
		}
		want.Exists, size = true, st.Size
		want.Attrs = []omap.KV{{Key: attrVersion, Value: b}}
	} else if !errors.Is(err, objectstore.ErrNotFound) {
		return false, fmt.Errorf("pg %s: backfill %s: %w", pg.id, oid, storeErr(err))
	}
	if err := mem.hold(ctx, d, size*uint64(len(fills))); err != nil {
		return false, err
	}
	objs := make([]*objState, len(fills))
	for i, f := range fills {
		if !want.Exists {
			objs[i] = want // deleted: nothing to read
			continue
		}
		src := r.Shards[f.pos]
		obj, err := pg.pull(ctx, iv, *src, oid)
		if err != nil {
			return false, err
		}
		ver := slices.IndexFunc(obj.Attrs, func(a omap.KV) bool { return a.Key == attrVersion })
		if !obj.Exists || ver < 0 || !bytes.Equal(obj.Attrs[ver].Value, want.Attrs[0].Value) {
			d.log.Warn("backfill source holds another version of the object; decoding", "pg", pg.id, "object", oid, "shard", f.pos, "osd", src.ID)
			return false, nil
		}
		objs[i] = obj
	}
	for i, f := range fills {
		if err := pg.push(ctx, iv, f.m, oid, objs[i]); err != nil {
			return false, err
		}
	}
	d.perf.ecShardCopies.Add(uint64(len(fills)))
	return true, nil
}

// shardSize is the size of oid's shard on an acting member not being
// filled: this OSD's if it has one, else the first that answers.
func (pg *PG) shardSize(ctx context.Context, iv uint64, shards []*memberInfo, fills []shardFill, oid string) (uint64, error) {
	var err error
	for _, m := range shards {
		if m == nil || filling(fills, m.ID) {
			continue
		}
		if m.ID == pg.osd.id {
			st, serr := pg.osd.store.Stat(pg.coll, oid)
			if serr != nil {
				return 0, nil // absent here: nothing to hold
			}
			return st.Size, nil
		}
		var obj *objState
		var size uint64
		if obj, size, err = pg.pullUpTo(ctx, iv, *m, oid, 1); err == nil {
			if obj != nil {
				return uint64(len(obj.Data)), nil
			}
			return size, nil
		}
	}
	return 0, err
}

// filling reports whether member o is one of the fills.
func filling(fills []shardFill, o int32) bool {
	return slices.ContainsFunc(fills, func(f shardFill) bool { return f.m.ID == o })
}

// recoverEC rebuilds an object's shards fills from k of the shards srcs
// (members by shard position: the acting members, and backfill targets
// that hold their shard; members being filled are not read) — read
// until k positions agree on the object's version (or on its absence) —
// or removes it from them if the others no longer hold it.
func (pg *PG) recoverEC(ctx context.Context, cd *ec.Codec, iv uint64, srcs []shardFill, oid string, fills []shardFill) error {
	d := pg.osd
	p := cd.Profile()
	// sources by (exists, version): the first group to reach k positions wins
	type key struct {
		exists bool
		ver    uint64
	}
	groups := map[key][]*objState{} // by shard position
	answered := 0
	for _, src := range srcs {
		if filling(fills, src.m.ID) {
			continue
		}
		obj, err := pg.pull(ctx, iv, src.m, oid)
		if err != nil {
			d.log.Warn("recovery source failed", "pg", pg.id, "object", oid, "shard", src.pos, "osd", src.m.ID, "err", err)
			continue
		}
		answered++
		k := key{exists: obj.Exists}
		for _, a := range obj.Attrs {
			if a.Key == attrVersion {
				k.ver = peering.VersionFrom(a.Value).Seq
			}
		}
		objs := groups[k]
		if objs == nil {
			objs = make([]*objState, p.K+p.M)
		}
		if objs[src.pos] != nil {
			continue // this position answered already (an acting member and its target)
		}
		objs[src.pos] = obj
		groups[k] = objs
		n := 0
		for _, o := range objs {
			if o != nil {
				n++
			}
		}
		if n < p.K {
			continue
		}
		out := &objState{Exists: k.exists, Attrs: obj.Attrs}
		var shards [][]byte
		if k.exists {
			if shards, err = rebuildShards(cd, objs, func(o *objState) *objState { return o }); err != nil {
				return fmt.Errorf("pg %s: rebuild %s: %w", pg.id, oid, err)
			}
		}
		// the clones the head's SnapSet names, each rebuilt as the head is
		// (clones never change: every shard holding one holds the same)
		ss, err := snapSetOf(obj.Attrs)
		if err != nil {
			return fmt.Errorf("pg %s: rebuild %s: %w", pg.id, oid, err)
		}
		var clones [][][]byte
		var cloneAttrs [][]omap.KV
		if k.exists && ss != nil {
			for _, c := range ss.Clones {
				of := func(o *objState) *objState {
					for _, cs := range o.Clones {
						if cs.ID == c.ID {
							return cs.Obj
						}
					}
					return nil
				}
				cs, err := rebuildShards(cd, objs, of)
				if err != nil {
					return fmt.Errorf("pg %s: rebuild clone %d of %s: %w", pg.id, c.ID, oid, err)
				}
				clones = append(clones, cs)
				cloneAttrs = append(cloneAttrs, of(obj).Attrs)
				out.Clones = append(out.Clones, cloneState{ID: c.ID})
			}
		}
		for _, f := range fills {
			o := *out
			if k.exists {
				o.Data = shards[f.pos]
				o.Clones = slices.Clone(out.Clones)
				for i := range o.Clones {
					o.Clones[i].Obj = &objState{Exists: true, Data: clones[i][f.pos], Attrs: cloneAttrs[i]}
				}
			}
			if err := pg.push(ctx, iv, f.m, oid, &o); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: pg %s: object %s is %w: %d shards answered, no k=%d of them agree on its version", osdop.ErrRetry, pg.id, oid, errUnfound, answered, p.K)
}

// rebuildShards decodes every shard of one object from the sources that
// hold it (objs by shard position; of picks the object from a source's
// state: the head itself, or one of its clones; nil where a source does
// not hold it). An empty object has empty shards.
func rebuildShards(cd *ec.Codec, objs []*objState, of func(*objState) *objState) ([][]byte, error) {
	shards := make([][]byte, len(objs))
	n, size := 0, 0
	for i, src := range objs {
		if src == nil {
			continue
		}
		if o := of(src); o != nil && o.Exists {
			shards[i] = o.Data
			if shards[i] == nil {
				shards[i] = []byte{}
			}
			n, size = n+1, max(size, len(o.Data))
		}
	}
	if n < cd.Profile().K {
		return nil, fmt.Errorf("%d shards of it answered, fewer than k=%d", n, cd.Profile().K)
	}
	if size == 0 {
		for i := range shards {
			shards[i] = []byte{}
		}
		return shards, nil
	}
	if err := cd.Reconstruct(shards); err != nil {
		return nil, err
	}
	return shards, nil
}
