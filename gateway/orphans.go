package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cls/rgw"
)

// CheckOrphans finds the bucket's orphaned tails: tail objects in the
// data pool that no current version, write in flight, multipart upload
// or GC entry refers to (the role of radosgw-admin's orphan search,
// rgw-orphan-list). They are left by the two windows in which a gateway
// learns of an overwritten or deleted version's tails but has not queued
// them yet: it dies right after the head write or removal, or its head
// write is resent after a lost reply and the OSD answers the repeat
// without the previous head it read (duplicates carry no read output,
// as in Ceph). With fix the orphans are queued for GC, so they go after
// rgw_gc_obj_min_wait like any other garbage (a reader of the version
// they belonged to may still be streaming them). It returns how many
// objects it found.
//
// Nothing in flight is taken for an orphan: the candidates are listed
// first, and every record that could refer to a tail written before the
// listing is read after it, in the order writes create them — pending
// index records (a PUT prepares before writing tails), multipart uploads
// (created before their parts), heads (written before their upload or
// pending record goes), the GC queue (filled after a head changes) — and
// a candidate that turns out to be a head (a key beginning "_shadow_")
// is kept. Indexed buckets only: an indexless bucket has no record of
// its writes in flight (ErrIndexless).
func (s *Store) CheckOrphans(ctx context.Context, b *Bucket, fix bool) (int, error) {
	if b.Indexless() {
		return 0, ErrIndexless
	}
	shadow, multipart := b.ID+"__shadow_", b.ID+"__multipart_"
	var candidates []string
	err := s.data.List(ctx, func(name string) bool {
		if strings.HasPrefix(name, shadow) || strings.HasPrefix(name, multipart) && !strings.HasSuffix(name, ".meta") {
			candidates = append(candidates, name)
		}
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("orphans: list pool %s: %w", s.data.Name(), err)
	}
	if len(candidates) == 0 {
		return 0, nil
	}
	// writes in flight: their tags, and the keys whose heads to read
	tags := map[string]bool{}
	keys := map[string]bool{}
	for i := range b.Index.Ranges {
		for _, oid := range b.Index.Ranges[i].oids(b.ID) {
			err := omapEach(ctx, s.index, oid, "", rgw.PendingPrefix, func(kv client.KV) (bool, error) {
				if key, tag, ok := rgw.SplitPendingKey(kv.Key); ok {
					tags[tag], keys[key] = true, true
				}
				return true, nil
			})
			if err != nil {
				return 0, fmt.Errorf("orphans: index %s: %w", oid, err)
			}
		}
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
	for i := range b.Index.Ranges {
		for _, oid := range b.Index.Ranges[i].oids(b.ID) {
			err := omapEach(ctx, s.index, oid, rgw.EntriesAfter, "", func(kv client.KV) (bool, error) {
				keys[kv.Key] = true
				return true, nil
			})
			if err != nil {
				return 0, fmt.Errorf("orphans: index %s: %w", oid, err)
			}
		}
	}
	used := map[string]bool{}
	for key := range keys {
		h, _, _, _, err := s.headAt(ctx, headOID(b.ID, key), false)
		if errors.Is(err, ErrNoSuchKey) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("orphans: %w", err)
		}
		for _, oid := range h.tailOIDs() {
			used[oid] = true
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
	for _, name := range candidates {
		prefix, n, ok := tailName(name)
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
		if _, err := s.data.GetXattr(ctx, name, headAttr); err == nil {
			continue // the head of a key that starts "_shadow_" or "_multipart_"
		} else if !errors.Is(err, client.ErrNotFound) && !errors.Is(err, client.ErrNoData) {
			return found, fmt.Errorf("orphans: %s: %w", name, err)
		}
		found++
		byPrefix[prefix] = append(byPrefix[prefix], segment{Prefix: prefix, First: n, Size: s.opt.StripeSize})
	}
	if fix {
		for prefix, segs := range byPrefix {
			if err := s.gcPut(ctx, &GCEntry{Tag: "orphan." + prefix[len(b.ID)+2:], StripeSize: s.opt.StripeSize, Segments: segs}); err != nil {
				return found, fmt.Errorf("orphans: queue %s: %w", prefix, err)
			}
		}
	}
	return found, nil
}

// tailName splits a tail object's name into its segment prefix and
// stripe number (segment.oid's inverse).
func tailName(name string) (prefix string, n int, ok bool) {
	i := strings.LastIndexByte(name, '_')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	return name[:i], n, err == nil && n >= 0
}
