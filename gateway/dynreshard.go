package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/osdop"
)

// Dynamic resharding, as RGW's (rgw_dynamic_resharding): every index
// completion reports its shard's entry count; past MaxObjsPerShard the
// bucket is queued, and the reshard worker (RunReshard, every
// ReshardPeriod) splits its fullest range online (SplitRange) — writers
// never wait on it. A cluster-wide lock object in the log pool keeps two
// gateways from splitting one bucket at once.

// reshardLockTTL is how long a reshard lock holds before another gateway
// may take it over (its holder died; SplitRange resumes what it left).
const reshardLockTTL = 15 * time.Minute

// queueReshard marks a bucket for the reshard worker.
func (s *Store) queueReshard(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reshard[name] = true
}

// ReshardQueued lists the buckets queued for dynamic resharding, in no
// particular order.
func (s *Store) ReshardQueued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.reshard))
}

// RunReshard runs ReshardPass every ReshardPeriod until ctx ends.
func (s *Store) RunReshard(ctx context.Context) {
	periodic.Every(ctx, s.opt.ReshardPeriod, nil, func() {
		if n, err := s.ReshardPass(ctx, io.Discard); err != nil && ctx.Err() == nil {
			s.opt.Logger.Warn("dynamic reshard pass failed", "split", n, "err", err)
		}
	})
}

// ReshardPass splits, once each, the queued buckets whose fullest index
// shard still holds more than MaxObjsPerShard entries (a bucket another
// gateway holds the lock of stays queued), writing progress to out; it
// returns how many it split.
func (s *Store) ReshardPass(ctx context.Context, out io.Writer) (int, error) {
	split := 0
	for _, name := range s.ReshardQueued() {
		s.mu.Lock()
		delete(s.reshard, name)
		s.mu.Unlock()
		b, err := s.GetBucket(ctx, name)
		if errors.Is(err, ErrNoSuchBucket) {
			continue
		}
		if err != nil {
			return split, err
		}
		if b.Indexless() {
			continue
		}
		most, err := s.fullestShard(ctx, b)
		if err != nil {
			return split, err
		}
		if most <= s.opt.MaxObjsPerShard {
			continue // split meanwhile (by another gateway)
		}
		release, err := s.lockObject(ctx, "reshard_lock."+b.ID, reshardLockTTL)
		if errors.Is(err, errLocked) {
			s.queueReshard(name) // try again next pass
			continue
		}
		if err != nil {
			return split, err
		}
		s.opt.Logger.Info("dynamic reshard", "bucket", name, "fullest shard", most, "limit", s.opt.MaxObjsPerShard)
		err = s.SplitRange(ctx, name, "", out)
		release()
		if err != nil {
			return split, fmt.Errorf("dynamic reshard of %s: %w", name, err)
		}
		split++
	}
	return split, nil
}

// fullestShard is the largest entry count of any shard of b's index.
func (s *Store) fullestShard(ctx context.Context, b *Bucket) (int64, error) {
	var most int64
	for i := range b.Index.Ranges {
		for _, oid := range b.Index.Ranges[i].oids(b.ID) {
			var st BucketStats
			if err := s.shardStats(ctx, oid, &st); err != nil {
				return 0, err
			}
			most = max(most, st.Objects)
		}
	}
	return most, nil
}

var errLocked = errors.New("lock held by another gateway")

type lockRecord struct {
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
}

// lockObject takes the cluster-wide lock kept in the log pool object oid
// for ttl (errLocked if another holder's has not expired) and returns its
// release. A holder that dies leaves the lock to expire.
func (s *Store) lockObject(ctx context.Context, oid string, ttl time.Duration) (func(), error) {
	host, _ := os.Hostname()
	rec, _ := json.Marshal(lockRecord{Owner: fmt.Sprintf("%s/%d", host, os.Getpid()), Expires: time.Now().Add(ttl)})
	release := func() {
		if err := s.log.Remove(context.WithoutCancel(ctx), oid); err != nil && !errors.Is(err, client.ErrNotFound) {
			s.opt.Logger.Warn("lock release failed (it expires)", "lock", oid, "err", err)
		}
	}
	_, err := s.log.Operate(ctx, oid, []osdop.Op{{Code: osdop.Create, Exclusive: true}, {Code: osdop.WriteFull, Data: rec}})
	if err == nil {
		return release, nil
	}
	if !errors.Is(err, client.ErrExists) {
		return nil, fmt.Errorf("lock %s: %w", oid, err)
	}
	rep, err := s.log.Operate(ctx, oid, []osdop.Op{{Code: osdop.Read}})
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", oid, err)
	}
	var held lockRecord
	if json.Unmarshal(rep.Results[0].Data, &held) == nil && time.Now().Before(held.Expires) {
		return nil, errLocked
	}
	// expired: take it over, unless someone else just did
	if _, err := s.log.Operate(ctx, oid, []osdop.Op{{Code: osdop.AssertVersion, Ver: rep.Ver}, {Code: osdop.WriteFull, Data: rec}}); err != nil {
		return nil, errLocked
	}
	return release, nil
}
