package rgw

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
	"github.com/shoal-project/shoal/gateway/s3err"
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
	periodic.Every(ctx, s.opt.Clock, s.opt.ReshardPeriod, nil, func() {
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
		if errors.Is(err, s3err.NoSuchBucket) {
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
		lk, err := s.lockObject(ctx, "reshard_lock."+b.ID, reshardLockTTL)
		if errors.Is(err, errLocked) {
			s.queueReshard(name) // try again next pass
			continue
		}
		if err != nil {
			return split, err
		}
		s.opt.Logger.Info("dynamic reshard", "bucket", name, "fullest shard", most, "limit", s.opt.MaxObjsPerShard)
		err = s.SplitRange(ctx, name, "", out)
		lk.release(ctx)
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

// objLock is a held cluster-wide lock: the log pool object oid, whose
// record names this holder and when the lock expires.
type objLock struct {
	s     *Store
	oid   string
	owner string // host/pid/random: this holder alone
	ttl   time.Duration
	ver   uint64 // the lock object's version after this holder's last write
}

// lockObject takes the cluster-wide lock kept in the log pool object oid
// for ttl (errLocked if another holder's has not expired). A holder that
// dies leaves the lock to expire; one that works longer renews it.
func (s *Store) lockObject(ctx context.Context, oid string, ttl time.Duration) (*objLock, error) {
	host, _ := os.Hostname()
	l := &objLock{s: s, oid: oid, owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), NewTag()), ttl: ttl}
	rep, err := s.log.Operate(ctx, oid, []osdop.Op{{Code: osdop.Create, Exclusive: true}, {Code: osdop.WriteFull, Data: l.record()}})
	if err == nil {
		l.ver = rep.Ver
		return l, nil
	}
	if !errors.Is(err, client.ErrExists) {
		return nil, fmt.Errorf("lock %s: %w", oid, err)
	}
	rep, err = s.log.Operate(ctx, oid, []osdop.Op{{Code: osdop.Read}})
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", oid, err)
	}
	var held lockRecord
	if json.Unmarshal(rep.Results[0].Data, &held) == nil && s.opt.Clock.Now().Before(held.Expires) {
		return nil, errLocked
	}
	// expired: take it over, unless someone else just did
	if rep, err = s.log.Operate(ctx, oid, []osdop.Op{{Code: osdop.AssertVersion, Ver: rep.Ver}, {Code: osdop.WriteFull, Data: l.record()}}); err != nil {
		return nil, errLocked
	}
	l.ver = rep.Ver
	return l, nil
}

func (l *objLock) record() []byte {
	rec, _ := json.Marshal(lockRecord{Owner: l.owner, Expires: l.s.opt.Clock.Now().Add(l.ttl)})
	return rec
}

// renew extends the lock to its TTL from now: errLocked if this holder
// lost it (it expired and another took it over).
func (l *objLock) renew(ctx context.Context) error {
	rep, err := l.s.log.Operate(ctx, l.oid, []osdop.Op{{Code: osdop.AssertVersion, Ver: l.ver}, {Code: osdop.WriteFull, Data: l.record()}})
	switch {
	case errors.Is(err, osdop.ErrVerNewer), errors.Is(err, osdop.ErrVerOlder), errors.Is(err, client.ErrNotFound):
		return fmt.Errorf("lock %s: %w", l.oid, errLocked)
	case err != nil:
		return fmt.Errorf("lock %s: %w", l.oid, err)
	}
	l.ver = rep.Ver
	return nil
}

// release removes the lock if this holder still has it (a lock taken
// over after it expired stays with its new holder).
func (l *objLock) release(ctx context.Context) {
	_, err := l.s.log.Operate(context.WithoutCancel(ctx), l.oid, []osdop.Op{{Code: osdop.AssertVersion, Ver: l.ver}, {Code: osdop.Remove}})
	if err != nil && !errors.Is(err, client.ErrNotFound) && !errors.Is(err, osdop.ErrVerNewer) && !errors.Is(err, osdop.ErrVerOlder) {
		l.s.opt.Logger.Warn("lock release failed (it expires)", "lock", l.oid, "err", err)
	}
}
