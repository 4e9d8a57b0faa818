package rgw

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrgw "github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// CheckOrphans finds the bucket's orphaned tails: tail objects in the
// data pool, older than grace, that no current version, write in
// flight, multipart upload or GC entry refers to (the role of
// radosgw-admin's orphan search, whose --orphan-stale-secs is grace).
// They are left by the windows in which a gateway has replaced or
// removed a version but not queued its tails: it dies right after the
// head write or removal, or its head write is resent after a lost reply
// and the OSD answers the repeat without the previous head it read
// (duplicates carry no read output, as in Ceph). With fix the orphans
// are queued for GC, so they go after rgw_gc_obj_min_wait like any other
// garbage. It returns how many objects it found.
//
// A tail in use is never taken. The candidates are listed first; then
// the records that refer to tails are read in the order writes hand a
// tail from one to the next, so that a tail leaving a record already
// read is in one read later: multipart uploads (made before their
// parts, removed after the completion's head write), pending index
// records (a PUT prepares before writing its tails and clears the
// record after its head write; read from every shard of the layout,
// split targets and retired ranges too), the heads themselves (every
// object of the bucket that is not named like a tail, listed again
// now, and those named like tails that hold a head: keys beginning
// "_shadow_"), then the GC queue. A head write whose outcome its
// gateway never learnt (a timeout) may land with no record left; the
// grace covers that and any other write slower than it. A reshard
// during the check fails it (the layout's generation is compared at the
// end), since pending records may then be in shards it did not read.
// Indexed buckets only: an indexless bucket keeps no record of its
// writes in flight (s3err.Indexless).
func (s *Store) CheckOrphans(ctx context.Context, b *Bucket, fix bool, grace time.Duration) (int, error) {
	if b.Indexless() {
		return 0, s3err.Indexless
	}
	bucketPrefix, shadow, multipart := HeadOID(b.ID, ""), shadowPrefix(b.ID, ""), multipartPrefix(b.ID)
	tailLike := func(name string) bool {
		return strings.HasPrefix(name, shadow) || strings.HasPrefix(name, multipart) && !strings.HasSuffix(name, ".meta")
	}
	candidates, err := s.listData(ctx, tailLike)
	if err != nil {
		return 0, fmt.Errorf("orphans: %w", err)
	}
	if len(candidates) == 0 {
		return 0, nil
	}
	uploads := map[string]bool{}
	err = omapEach(ctx, s.nonec, b.ID+uploadsSuffix, "", "", func(kv client.KV) (bool, error) {
		if _, id, ok := strings.Cut(kv.Key, "\x00"); ok {
			uploads[id] = true
		}
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("orphans: uploads: %w", err)
	}
	tags := map[string]bool{} // PUTs in flight
	for _, oid := range b.Index.allShards(b.ID) {
		err := omapEach(ctx, s.index, oid, "", clsrgw.PendingPrefix, func(kv client.KV) (bool, error) {
			if _, tag, ok := clsrgw.SplitPendingKey(kv.Key); ok {
				tags[tag] = true
			}
			return true, nil
		})
		if err != nil {
			return 0, fmt.Errorf("orphans: index %s: %w", oid, err)
		}
	}
	heads, err := s.listData(ctx, func(name string) bool { return strings.HasPrefix(name, bucketPrefix) && !tailLike(name) })
	if err != nil {
		return 0, fmt.Errorf("orphans: %w", err)
	}
	used := map[string]bool{}
	useHead := func(oid string) (bool, error) {
		o, err := s.readOLHAt(ctx, oid) // every version's tails are in use
		if err != nil {
			return false, fmt.Errorf("orphans: %w", err)
		}
		if o.cur == nil && len(o.vers) == 0 {
			return false, nil // gone, or not a head
		}
		for _, t := range o.tailsOf() {
			used[t] = true
		}
		return true, nil
	}
	for _, oid := range heads {
		if _, err := useHead(oid); err != nil {
			return 0, err
		}
	}
	// candidates no record refers to so far; those that are heads
	// themselves refer to tails of their own
	var unref []string
	for _, name := range candidates {
		prefix, _, ok := tailName(name)
		if !ok || used[name] {
			continue
		}
		if rest, ok := strings.CutPrefix(prefix, shadow); ok && tags[rest] {
			continue // a PUT in flight
		}
		if rest, ok := strings.CutPrefix(prefix, multipart); ok {
			if id, _, _ := strings.Cut(rest, "."); uploads[id] {
				continue // an upload in progress
			}
		}
		isHead, err := useHead(name)
		if err != nil {
			return 0, err
		}
		if !isHead {
			unref = append(unref, name)
		}
	}
	gc, err := s.GCList(ctx, true)
	if err != nil {
		return 0, fmt.Errorf("orphans: %w", err)
	}
	for _, e := range gc {
		for _, oid := range e.OIDs() {
			used[oid] = true
		}
	}
	byPrefix := map[string][]segment{}
	found := 0
	for _, name := range unref {
		if used[name] {
			continue
		}
		st, err := s.data.Stat(ctx, name)
		if errors.Is(err, client.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("orphans: %s: %w", name, err)
		}
		if time.Since(st.Mtime) < grace {
			continue
		}
		prefix, n, _ := tailName(name)
		found++
		byPrefix[prefix] = append(byPrefix[prefix], segment{Prefix: prefix, First: n, Size: s.opt.StripeSize})
	}
	now, err := s.GetBucket(ctx, b.Name)
	if err != nil {
		return 0, fmt.Errorf("orphans: %w", err)
	}
	if now.ID != b.ID || now.Index.Gen != b.Index.Gen {
		return 0, fmt.Errorf("orphans: bucket %s was resharded or recreated during the check; run it again", b.Name)
	}
	if fix {
		for prefix, segs := range byPrefix {
			if err := s.gcPut(ctx, &GCEntry{Tag: "orphan." + prefix[len(b.ID)+2:], StripeSize: s.opt.StripeSize, Segments: segs}); err != nil {
				return found, fmt.Errorf("orphans: queue %s: %w", prefix, err)
			}
			if s.failpoint == "orphans-after-first" { // as if killed here
				return found, errors.New("failpoint orphans-after-first")
			}
		}
	}
	return found, nil
}

// listData lists the data pool's objects whose names keep accepts.
func (s *Store) listData(ctx context.Context, keep func(name string) bool) ([]string, error) {
	var out []string
	err := s.data.List(ctx, func(name string) bool {
		if keep(name) {
			out = append(out, name)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list pool %s: %w", s.data.Name(), err)
	}
	return out, nil
}
