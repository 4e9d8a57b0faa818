package rgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/internal/crc32c"
	"github.com/shoal-project/shoal/internal/periodic"
)

// gcShards is how many objects the GC queue is spread over (Ceph:
// rgw_gc_max_objs, default 32).
const gcShards = 32

// GCEntry is queued garbage: the tail objects of a version that was
// overwritten or deleted, or of an aborted multipart upload. If Head is
// set, the entry is skipped while that head object's version has tag Tag
// (the tails are still in use: an upload that was completed after all).
type GCEntry struct {
	Tag        string    `json:"tag"`
	Head       string    `json:"head,omitempty"`
	StripeSize int64     `json:"ss"`
	Segments   []segment `json:"segs"`
	Due        time.Time `json:"-"`
	shard      int
	key        string
}

// OIDs lists the entry's tail objects.
func (e *GCEntry) OIDs() []string {
	h := HeadInfo{StripeSize: e.StripeSize, Segments: e.Segments}
	return h.tailOIDs()
}

func gcOID(i int) string { return "gc." + strconv.Itoa(i) }

// gcEnqueue queues a version's tails, due after rgw_gc_obj_min_wait.
func (s *Store) gcEnqueue(ctx context.Context, h *HeadInfo) {
	s.gcAdd(ctx, &GCEntry{Tag: h.Tag, StripeSize: h.StripeSize, Segments: h.Segments})
}

// gcAdd queues e (gcPut), logging a failure: the tails then leak until
// `shoal bucket check --check-orphans --fix` finds them.
func (s *Store) gcAdd(ctx context.Context, e *GCEntry) {
	if err := s.gcPut(ctx, e); err != nil {
		s.opt.Logger.Error("gc: enqueue failed; tails leaked", "tag", e.Tag, "objects", len(e.OIDs()), "err", err)
	}
}

// gcPut queues e's tails, due after rgw_gc_obj_min_wait.
func (s *Store) gcPut(ctx context.Context, e *GCEntry) error {
	if len(e.Segments) == 0 {
		return nil
	}
	due := s.opt.Clock.Now().Add(s.opt.GCMinWait)
	v, _ := json.Marshal(e)
	shard := int(crc32c.Checksum([]byte(e.Tag)) % gcShards)
	key := fmt.Sprintf("%020d_%s", due.UnixNano(), e.Tag)
	return s.log.OmapSet(ctx, gcOID(shard), []client.KV{{Key: key, Value: v}})
}

// GCList returns the queued entries (only the due ones unless all).
func (s *Store) GCList(ctx context.Context, all bool) ([]*GCEntry, error) {
	var out []*GCEntry
	now := s.opt.Clock.Now()
	for i := range gcShards {
		err := omapEach(ctx, s.log, gcOID(i), "", "", func(kv client.KV) (bool, error) {
			e := &GCEntry{shard: i, key: kv.Key}
			if err := json.Unmarshal(kv.Value, e); err != nil {
				return false, fmt.Errorf("gc: %s entry %q: %w", gcOID(i), kv.Key, err)
			}
			ns, _, _ := strings.Cut(kv.Key, "_")
			n, _ := strconv.ParseInt(ns, 10, 64)
			e.Due = time.Unix(0, n)
			if !all && e.Due.After(now) {
				return false, nil // keys sort by due time: the rest are later
			}
			out = append(out, e)
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("gc: %w", err)
		}
	}
	return out, nil
}

// GCProcess deletes the tails of due entries (all entries if
// includeAll) and returns how many RADOS objects it removed.
func (s *Store) GCProcess(ctx context.Context, includeAll bool) (int, error) {
	es, err := s.GCList(ctx, includeAll)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, e := range es {
		if e.Head != "" {
			o, err := s.readOLHAt(ctx, e.Head)
			if err != nil {
				// unknown whether the tails are in use: keep them
				return removed, fmt.Errorf("gc: %w", err)
			}
			if o.uses(e.Tag) {
				// still referenced (by the current version or, in a
				// versioned bucket, any other): drop the entry, keep the tails
				s.log.OmapRm(ctx, gcOID(e.shard), []string{e.key})
				continue
			}
		}
		oids := e.OIDs()
		for _, oid := range oids {
			err := s.data.Remove(ctx, oid)
			switch {
			case err == nil:
				removed++
			case errors.Is(err, client.ErrNotFound):
			default:
				return removed, fmt.Errorf("gc: remove %s: %w", oid, err)
			}
		}
		if err := s.log.OmapRm(ctx, gcOID(e.shard), []string{e.key}); err != nil {
			return removed, fmt.Errorf("gc: dequeue: %w", err)
		}
	}
	return removed, nil
}

// RunGC processes the queue every GCPeriod until ctx ends.
func (s *Store) RunGC(ctx context.Context) {
	periodic.Every(ctx, s.opt.Clock, s.opt.GCPeriod, nil, func() {
		if n, err := s.GCProcess(ctx, false); err != nil && ctx.Err() == nil {
			s.opt.Logger.Warn("gc pass failed", "removed", n, "err", err)
		} else if n > 0 {
			s.opt.Logger.Info("gc pass", "removed", n)
		}
	})
}
