package osd

// Erasure-coded PGs.
//
// Shard i of a PG lives on acting[i] (CRUSH's indep rule keeps positions
// stable; a missing OSD is a hole). Every shard holds, per object, its
// chunks of every stripe (ec package layout) as the object's data, and the
// same attributes: version, mtime, the object's logical size (attrECSize)
// and the client's xattrs. The primary turns each write request into one
// transaction per shard — whole stripes re-encoded: the stripes a write
// touches are read back (from the shards, reconstructing if needed),
// modified and encoded again — and sends shard i's to acting[i] with the
// log entry; the client is answered once every shard in the acting set
// committed.
//
// Rollback: before a write changes an object, each shard keeps the
// object's previous state as a stash object (stashName), and that of
// the other objects the write changes — the head's snapshot clones it
// makes or trims (ec_rollback.go) — until the
// primary knows the write is on every shard and rolls it forward (the next
// write carries that point, Info.RolledForward). If a primary dies mid-write
// some shards may hold the new version and others the old; peering then
// takes as authoritative the newest version at least k shards hold and
// rolls the others back from their stashes, so an object is always at its
// old or its new content, never a mix (Ceph: doc/dev/osd_internals/
// erasure_coding/developer_notes, "rollback").
//
// Reads fetch only the data shards (and stripes) the range covers, and
// the object's version with them; a shard that is missing, fails, returns
// another version, or fails its checksum (the object store checks a crc32c
// per 4 KiB block on every read) is replaced by others and the range is
// decoded from any k. A shard that failed its checksum is rewritten from
// the decoded data at once (repair on read).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/shoal-project/shoal/ec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// attrECSize is an erasure-coded object's logical size (8 bytes, little
// endian) on every shard; the shards' own data is whole stripes.
const attrECSize = "s.size"

// stashPrefix starts the names of rollback stashes; client object names
// may not start with a NUL byte, so they never collide and listings skip
// them.
const stashPrefix = "\x00rb."

func stashName(seq uint64) string { return stashPrefix + strconv.FormatUint(seq, 10) }

// codec returns the codec of an erasure-coded pool, fetching its profile
// from the MONs once (a profile cannot change while a pool uses it, and
// pool ids are never reused).
func (d *OSD) codec(ctx context.Context, pool *osdmap.Pool) (*ec.Codec, error) {
	d.codecMu.Lock()
	c := d.codecs[pool.ID]
	d.codecMu.Unlock()
	if c != nil {
		return c, nil
	}
	r, err := d.mc.Command(ctx, "osd erasure-code-profile get", map[string]string{"name": pool.ECProfile})
	if err != nil {
		return nil, fmt.Errorf("osd.%d: pool %s: erasure-code profile %q: %w", d.id, pool.Name, pool.ECProfile, err)
	}
	var args []string
	if err := json.Unmarshal(r.Data, &args); err != nil {
		return nil, fmt.Errorf("osd.%d: pool %s: erasure-code profile %q: %w", d.id, pool.Name, pool.ECProfile, err)
	}
	p, err := ec.ParseProfile(pool.ECProfile, args)
	if err != nil {
		return nil, fmt.Errorf("osd.%d: pool %s: %w", d.id, pool.Name, err)
	}
	if p.K+p.M != pool.Size {
		return nil, fmt.Errorf("osd.%d: pool %s: size %d is not k+m of profile %s (%d+%d)", d.id, pool.Name, pool.Size, p.Name, p.K, p.M)
	}
	if c, err = ec.NewCodec(p); err != nil {
		return nil, err
	}
	d.codecMu.Lock()
	d.codecs[pool.ID] = c
	d.codecMu.Unlock()
	return c, nil
}

// loadECObject is loadObject for an erasure-coded PG: the size is the
// object's logical size, not the shard's.
func (pg *PG) loadECObject(oid string) (*object, error) {
	o, err := pg.loadObject(oid)
	if err != nil || !o.Exists {
		return o, err
	}
	b, err := pg.osd.store.GetAttr(pg.coll, oid, attrECSize)
	if err != nil || len(b) != 8 {
		return nil, fmt.Errorf("%w: pg %s: %s has no valid %s attribute (%v)", osdop.ErrCorrupt, pg.id, oid, attrECSize, err)
	}
	o.Size = binary.LittleEndian.Uint64(b)
	return o, nil
}

// checkMember admits a message from the primary of the current interval.
func (pg *PG) checkMember(pm *peerMsg) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.checkMemberLocked(pm)
}

// checkMemberLocked is checkMember with pg.mu held.
func (pg *PG) checkMemberLocked(pm *peerMsg) error {
	if pg.ps.Interval.ID != pm.Interval || (pg.ps.State != peering.ReplicaActive && pg.ps.Interval.Primary != pg.osd.id) {
		return fmt.Errorf("%w: pg %s on osd.%d is not a member of this interval", osdop.ErrRetry, pg.id, pg.osd.id)
	}
	return nil
}
