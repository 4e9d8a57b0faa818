package rgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/osdop"
)

// LifecycleRule is one rule of a lifecycle configuration, as its XML
// document has it (and stored so: a GET returns what was put).
type LifecycleRule struct {
	ID                             string                 `json:"id" xml:"ID"`
	Prefix                         *string                `json:"prefix,omitempty" xml:"Prefix"` // the older form of Filter.Prefix
	Filter                         *LifecycleFilter       `json:"filter,omitempty" xml:"Filter"`
	Status                         string                 `json:"status" xml:"Status"` // Enabled or Disabled
	Expiration                     *LifecycleExpiration   `json:"expiration,omitempty" xml:"Expiration"`
	Transitions                    []LifecycleTransition  `json:"transitions,omitempty" xml:"Transition"`
	NoncurrentVersionTransitions   []LifecycleTransition  `json:"nc_transitions,omitempty" xml:"NoncurrentVersionTransition"`
	NoncurrentVersionExpiration    *NoncurrentExpiration  `json:"nc_expiration,omitempty" xml:"NoncurrentVersionExpiration"`
	AbortIncompleteMultipartUpload *AbortIncompleteUpload `json:"abort_mpu,omitempty" xml:"AbortIncompleteMultipartUpload"`
}

// LifecycleFilter selects the objects a rule applies to: a prefix, one
// tag, size bounds (bytes), or several of them under And.
type LifecycleFilter struct {
	Prefix                *string       `json:"prefix,omitempty" xml:"Prefix"`
	Tag                   *Tag          `json:"tag,omitempty" xml:"Tag"`
	ObjectSizeGreaterThan *int64        `json:"gt,omitempty" xml:"ObjectSizeGreaterThan"`
	ObjectSizeLessThan    *int64        `json:"lt,omitempty" xml:"ObjectSizeLessThan"`
	And                   *LifecycleAnd `json:"and,omitempty" xml:"And"`
}

// LifecycleAnd is a filter's conjunction.
type LifecycleAnd struct {
	Prefix                *string `json:"prefix,omitempty" xml:"Prefix"`
	Tags                  []Tag   `json:"tags,omitempty" xml:"Tag"`
	ObjectSizeGreaterThan *int64  `json:"gt,omitempty" xml:"ObjectSizeGreaterThan"`
	ObjectSizeLessThan    *int64  `json:"lt,omitempty" xml:"ObjectSizeLessThan"`
}

// LifecycleExpiration expires current objects Days after their last
// modification or on Date (midnight UTC, ISO 8601).
type LifecycleExpiration struct {
	Days                      *int    `json:"days,omitempty" xml:"Days"`
	Date                      *string `json:"date,omitempty" xml:"Date"`
	ExpiredObjectDeleteMarker *bool   `json:"edm,omitempty" xml:"ExpiredObjectDeleteMarker"`
}

// LifecycleTransition moves objects to another storage class.
type LifecycleTransition struct {
	Days           *int    `json:"days,omitempty" xml:"Days"`
	NoncurrentDays *int    `json:"nc_days,omitempty" xml:"NoncurrentDays"`
	Date           *string `json:"date,omitempty" xml:"Date"`
	StorageClass   string  `json:"sc" xml:"StorageClass"`
}

// NoncurrentExpiration expires noncurrent versions.
type NoncurrentExpiration struct {
	NoncurrentDays          *int `json:"days,omitempty" xml:"NoncurrentDays"`
	NewerNoncurrentVersions *int `json:"newer,omitempty" xml:"NewerNoncurrentVersions"`
}

// AbortIncompleteUpload aborts multipart uploads DaysAfterInitiation
// days after they started.
type AbortIncompleteUpload struct {
	DaysAfterInitiation *int `json:"days,omitempty" xml:"DaysAfterInitiation"`
}

// prefix is the key prefix the rule applies to.
func (rule *LifecycleRule) prefix() string {
	switch f := rule.Filter; {
	case rule.Prefix != nil:
		return *rule.Prefix
	case f == nil:
	case f.Prefix != nil:
		return *f.Prefix
	case f.And != nil && f.And.Prefix != nil:
		return *f.And.Prefix
	}
	return ""
}

// tags are the tags an object needs for the rule to apply.
func (rule *LifecycleRule) tags() []Tag {
	switch f := rule.Filter; {
	case f == nil:
	case f.Tag != nil:
		return []Tag{*f.Tag}
	case f.And != nil:
		return f.And.Tags
	}
	return nil
}

// sizeMatches applies the rule's object size bounds.
func (rule *LifecycleRule) sizeMatches(size int64) bool {
	f := rule.Filter
	if f == nil {
		return true
	}
	gt, lt := f.ObjectSizeGreaterThan, f.ObjectSizeLessThan
	if f.And != nil {
		gt, lt = f.And.ObjectSizeGreaterThan, f.And.ObjectSizeLessThan
	}
	return (gt == nil || size > *gt) && (lt == nil || size < *lt)
}

// hasTags reports whether have holds every tag of want.
func hasTags(have, want []Tag) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// lcDue reports whether something modified at mtime is days old at now:
// with a positive debug interval a day is that long; otherwise days of
// 24 h are counted from the start of now's day (UTC), as RGW does.
func lcDue(mtime, now time.Time, days int, debugInterval time.Duration) bool {
	if debugInterval > 0 {
		return now.Sub(mtime) >= time.Duration(days)*debugInterval
	}
	return now.UTC().Truncate(24*time.Hour).Sub(mtime) >= time.Duration(days)*24*time.Hour
}

// lcOID is the log pool object whose omap registers the buckets with a
// lifecycle configuration (Ceph: the lc.N shards): bucket name → lcEntry.
const lcOID = "lc"

// lcLockOID keeps two gateways from running lifecycle passes at once. A
// pass holds it for LCLockTTL (rgw_lc_lock_max_time) at a time and renews
// it after each bucket and each page of keys or uploads; a gateway killed
// mid-pass leaves it to expire, and the next pass takes it over and
// repeats what the killed one had not recorded (its deletions are
// conditional, so repeating is safe).
const lcLockOID = "lc_lock"

// LCEntry is a bucket's lifecycle registration and the outcome of its
// last pass.
type LCEntry struct {
	Bucket   string    `json:"-"`
	BucketID string    `json:"id"`
	LastRun  time.Time `json:"last_run"` // zero: never
	Status   string    `json:"status"`   // "UNINITIAL", "COMPLETE" or "FAILED: <error>"
}

// LCRegister adds b to the lifecycle registry (a registration already
// there keeps its last run).
func (s *Store) LCRegister(ctx context.Context, b *Bucket) error {
	kvs, err := s.log.OmapGet(ctx, lcOID, []string{b.Name})
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("lifecycle: register %s: %w", b.Name, err)
	}
	var e LCEntry
	if len(kvs) == 1 && json.Unmarshal(kvs[0].Value, &e) == nil && e.BucketID == b.ID {
		return nil
	}
	return s.lcPut(ctx, &LCEntry{Bucket: b.Name, BucketID: b.ID, Status: "UNINITIAL"})
}

func (s *Store) lcPut(ctx context.Context, e *LCEntry) error {
	v, _ := json.Marshal(e)
	if err := s.log.OmapSet(ctx, lcOID, []client.KV{{Key: e.Bucket, Value: v}}); err != nil {
		return fmt.Errorf("lifecycle: record %s: %w", e.Bucket, err)
	}
	return nil
}

// LCList returns the buckets registered for lifecycle processing, by
// name.
func (s *Store) LCList(ctx context.Context) ([]*LCEntry, error) {
	var out []*LCEntry
	err := omapEach(ctx, s.log, lcOID, "", "", func(kv client.KV) (bool, error) {
		e := &LCEntry{Bucket: kv.Key}
		if err := json.Unmarshal(kv.Value, e); err != nil {
			return false, fmt.Errorf("lifecycle: entry %q: %w", kv.Key, err)
		}
		out = append(out, e)
		return true, nil
	})
	if errors.Is(err, client.ErrNotFound) {
		err = nil
	}
	return out, err
}

// LCResult counts what a lifecycle pass did.
type LCResult struct {
	Buckets, Expired, Aborted int
}

// LCProcess runs a lifecycle pass over the registered buckets whose last
// pass is a day old (every bucket if all), writing a line per bucket to
// out. Only one gateway runs a pass at a time (errLocked otherwise).
func (s *Store) LCProcess(ctx context.Context, all bool, out io.Writer) (LCResult, error) {
	var res LCResult
	lk, err := s.lockObject(ctx, lcLockOID, s.opt.LCLockTTL)
	if err != nil {
		return res, fmt.Errorf("lifecycle: %w", err)
	}
	defer lk.release(ctx)
	es, err := s.LCList(ctx)
	if err != nil {
		return res, err
	}
	for _, e := range es {
		now := s.opt.Clock.Now()
		if !all && !e.LastRun.IsZero() && !lcDue(e.LastRun, now, 1, s.opt.LCDebugInterval) {
			continue
		}
		b, err := s.GetBucket(ctx, e.Bucket)
		if errors.Is(err, s3err.NoSuchBucket) || (err == nil && (b.ID != e.BucketID || len(b.Lifecycle) == 0)) {
			s.log.OmapRm(ctx, lcOID, []string{e.Bucket}) // deleted, re-created or configuration removed
			continue
		}
		if err != nil {
			return res, err
		}
		expired, aborted, err := s.lcBucket(ctx, lk, b, now)
		res.Buckets++
		res.Expired += expired
		res.Aborted += aborted
		e.LastRun, e.Status = now, "COMPLETE"
		if err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			e.Status = "FAILED: " + err.Error()
		}
		fmt.Fprintf(out, "%s: %d expired, %d uploads aborted: %s\n", b.Name, expired, aborted, e.Status)
		if errors.Is(err, errLocked) {
			return res, fmt.Errorf("lifecycle: %w", err) // lost: the new holder carries on
		}
		if err := s.lcPut(ctx, e); err != nil {
			return res, err
		}
		if err := lk.renew(ctx); err != nil {
			return res, fmt.Errorf("lifecycle: %w", err)
		}
	}
	return res, nil
}

// lcBucket applies b's enabled rules as of now, renewing lk as it goes.
func (s *Store) lcBucket(ctx context.Context, lk *objLock, b *Bucket, now time.Time) (expired, aborted int, err error) {
	for i := range b.Lifecycle {
		rule := &b.Lifecycle[i]
		if rule.Status != "Enabled" {
			continue
		}
		if e := rule.Expiration; e != nil && (e.Days != nil || e.Date != nil) && !b.Indexless() {
			n, err := s.lcExpire(ctx, lk, b, rule, now)
			expired += n
			if err != nil {
				return expired, aborted, fmt.Errorf("rule %q: %w", rule.ID, err)
			}
		}
		if b.Versioned() && rule.expiresVersions() {
			n, err := s.lcVersions(ctx, lk, b, rule, now)
			expired += n
			if err != nil {
				return expired, aborted, fmt.Errorf("rule %q: %w", rule.ID, err)
			}
		}
		if a := rule.AbortIncompleteMultipartUpload; a != nil && a.DaysAfterInitiation != nil {
			n, err := s.lcAbortUploads(ctx, lk, b, rule.prefix(), *a.DaysAfterInitiation, now)
			aborted += n
			if err != nil {
				return expired, aborted, fmt.Errorf("rule %q: %w", rule.ID, err)
			}
		}
	}
	return expired, aborted, nil
}

// lcExpire deletes the current objects rule's Expiration makes due.
func (s *Store) lcExpire(ctx context.Context, lk *objLock, b *Bucket, rule *LifecycleRule, now time.Time) (int, error) {
	e := rule.Expiration
	if e.Date != nil {
		d, err := LifecycleDate(*e.Date)
		if err != nil || now.Before(d) {
			return 0, err
		}
	}
	prefix, tags, n := rule.prefix(), rule.tags(), 0
	after := ""
	for {
		l, err := s.List(ctx, b, prefix, "", after, 1000)
		if err != nil {
			return n, err
		}
		for _, ent := range l.Entries {
			if !rule.sizeMatches(ent.Size) || (e.Days != nil && !lcDue(time.Unix(0, ent.Mtime), now, *e.Days, s.opt.LCDebugInterval)) {
				continue
			}
			ok, err := s.deleteIfCurrent(ctx, b, ent.Key, ent.Tag, tags)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
		if !l.Truncated {
			return n, nil
		}
		if err := lk.renew(ctx); err != nil {
			return n, err
		}
		after = l.NextMarker
	}
}

// deleteIfCurrent deletes key if its current version is still the one
// the write tagged tag made and carries every tag of want; it reports
// whether it deleted.
func (s *Store) deleteIfCurrent(ctx context.Context, b *Bucket, key, tag string, want []Tag) (bool, error) {
	b, err := s.recheck(ctx, b) // a pass lasts long: the bucket may have become versioned
	if err != nil {
		return false, err
	}
	if b.Versioned() { // expiring the current version makes a delete marker
		o, err := s.readOLH(ctx, b, key)
		if err != nil {
			return false, err
		}
		if h := o.current(); h == nil || h.Tag != tag || !hasTags(h.Tags, want) {
			return false, nil
		}
		_, err = s.DeleteVersion(ctx, b, key, "", b.Owner, DeleteCond{})
		return err == nil, err
	}
	h, _, ver, _, err := s.HeadAt(ctx, HeadOID(b.ID, key), false)
	if errors.Is(err, s3err.NoSuchKey) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if h.Tag != tag || !hasTags(h.Tags, want) {
		return false, nil
	}
	err = s.deleteObject(ctx, b, key, ver)
	if errors.Is(err, osdop.ErrVerNewer) || errors.Is(err, osdop.ErrVerOlder) {
		return false, nil // rewritten meanwhile
	}
	return err == nil, err
}

// lcAbortUploads aborts the uploads under prefix started days ago.
func (s *Store) lcAbortUploads(ctx context.Context, lk *objLock, b *Bucket, prefix string, days int, now time.Time) (int, error) {
	n := 0
	keyMarker, idMarker := "", ""
	for {
		ups, truncated, err := s.ListUploads(ctx, b, prefix, keyMarker, idMarker, 1000)
		if err != nil {
			return n, err
		}
		for _, u := range ups {
			keyMarker, idMarker = u.Key, u.UploadID
			if !lcDue(u.Initiated, now, days, s.opt.LCDebugInterval) {
				continue
			}
			err := s.AbortUpload(ctx, b, u.Key, u.UploadID)
			if errors.Is(err, s3err.NoSuchUpload) {
				continue // completed or aborted meanwhile
			}
			if err != nil {
				return n, err
			}
			n++
		}
		if !truncated || len(ups) == 0 {
			return n, nil
		}
		if err := lk.renew(ctx); err != nil {
			return n, err
		}
	}
}

// RunLC runs lifecycle passes until ctx ends (at once if
// rgw_enable_lc_threads is false): within the work window
// (rgw_lifecycle_work_time), checking every 10 minutes for buckets whose
// last pass is a day old; with a positive rgw_lc_debug_interval, every
// such interval (at least a second) at any hour, as RGW.
func (s *Store) RunLC(ctx context.Context) {
	if s.opt.NoLCThreads {
		return
	}
	period := 10 * time.Minute
	if d := s.opt.LCDebugInterval; d > 0 {
		period = max(d, time.Second)
	}
	periodic.Every(ctx, s.opt.Clock, period, nil, func() {
		if s.opt.LCDebugInterval <= 0 && !inWorkTime(s.opt.Clock.Now(), s.lcWorkStart, s.lcWorkEnd) {
			return
		}
		res, err := s.LCProcess(ctx, false, io.Discard)
		switch {
		case errors.Is(err, errLocked):
		case err != nil && ctx.Err() == nil:
			s.opt.Logger.Warn("lifecycle pass failed", "err", err)
		case res.Expired+res.Aborted > 0:
			s.opt.Logger.Info("lifecycle pass", "buckets", res.Buckets, "expired", res.Expired, "aborted", res.Aborted)
		}
	})
}

// parseWorkTime parses rgw_lifecycle_work_time, "HH:MM-HH:MM" (local
// time), into minutes of the day; the window may wrap past midnight.
func parseWorkTime(s string) (start, end int, err error) {
	minutes := func(hm string) (int, error) {
		h, m, ok := strings.Cut(strings.TrimSpace(hm), ":")
		hh, err1 := strconv.Atoi(h)
		mm, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 24 || mm < 0 || mm > 59 || hh*60+mm > 24*60 {
			return 0, fmt.Errorf("rgw_lifecycle_work_time %q: want HH:MM-HH:MM", s)
		}
		return hh*60 + mm, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("rgw_lifecycle_work_time %q: want HH:MM-HH:MM", s)
	}
	if start, err = minutes(a); err != nil {
		return 0, 0, err
	}
	end, err = minutes(b)
	return start, end, err
}

// inWorkTime reports whether t's local time of day falls in [start, end)
// minutes (wrapping past midnight when end <= start).
func inWorkTime(t time.Time, start, end int) bool {
	m := t.Hour()*60 + t.Minute()
	if start < end {
		return m >= start && m < end
	}
	return m >= start || m < end
}

// LifecycleDate parses an Expiration or Transition date: ISO 8601, at
// midnight UTC.
func LifecycleDate(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		if t, err = time.Parse("2006-01-02", s); err != nil {
			return time.Time{}, fmt.Errorf("date %q is not ISO 8601", s)
		}
	}
	if t = t.UTC(); !t.Equal(t.Truncate(24 * time.Hour)) {
		return time.Time{}, fmt.Errorf("date %q is not at midnight UTC", s)
	}
	return t, nil
}

// expiresMarker reports whether the rule removes an expired delete
// marker (the only version of its key) made at mtime: with
// ExpiredObjectDeleteMarker, or with Expiration Days once the marker is
// that old (as S3).
func (rule *LifecycleRule) expiresMarker(mtime, now time.Time, debug time.Duration) bool {
	e := rule.Expiration
	switch {
	case e == nil:
		return false
	case e.ExpiredObjectDeleteMarker != nil && *e.ExpiredObjectDeleteMarker:
		return true
	}
	return e.Days != nil && lcDue(mtime, now, *e.Days, debug)
}

// expiresVersions reports whether the rule removes noncurrent versions
// or expired delete markers (in a versioned bucket).
func (rule *LifecycleRule) expiresVersions() bool {
	nc := rule.NoncurrentVersionExpiration
	e := rule.Expiration
	return (nc != nil && nc.NoncurrentDays != nil) || (e != nil && (e.Days != nil || (e.ExpiredObjectDeleteMarker != nil && *e.ExpiredObjectDeleteMarker)))
}

// lcVersions applies a rule to a versioned bucket's history: a
// noncurrent version NoncurrentDays after it became noncurrent (when the
// next newer version was written) is removed, keeping the
// NewerNoncurrentVersions newest noncurrent ones; a delete marker that is
// its key's only version (an expired delete marker) is removed. Tag
// filters apply to current versions only (the index does not hold a
// version's tags): a rule with tags removes no noncurrent version.
func (s *Store) lcVersions(ctx context.Context, lk *objLock, b *Bucket, rule *LifecycleRule, now time.Time) (int, error) {
	nc := rule.NoncurrentVersionExpiration
	prefix, n, after := rule.prefix(), 0, ""
	for {
		keys, more, err := s.listMerged(ctx, b, after, prefix, 1000, true)
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			list := k.Versions.List
			var due []string
			if len(list) == 1 && list[0].DeleteMarker && rule.expiresMarker(time.Unix(0, list[0].Mtime), now, s.opt.LCDebugInterval) {
				due = append(due, list[0].ID)
			}
			if nc != nil && nc.NoncurrentDays != nil && len(rule.tags()) == 0 {
				keep := 0
				if nc.NewerNoncurrentVersions != nil {
					keep = *nc.NewerNoncurrentVersions
				}
				for i := 1; i < len(list); i++ {
					if i-1 >= keep && rule.sizeMatches(list[i].Size) && lcDue(time.Unix(0, list[i-1].Mtime), now, *nc.NoncurrentDays, s.opt.LCDebugInterval) {
						due = append(due, list[i].ID)
					}
				}
			}
			for _, id := range due {
				_, err := s.unlinkVersion(ctx, b, k.Key, id, DeleteCond{})
				if errors.Is(err, s3err.AccessDenied) {
					continue // locked (objectlock.go): it stays
				}
				if err != nil {
					return n, err
				}
				n++
			}
			after = k.Key
		}
		if !more {
			return n, nil
		}
		if err := lk.renew(ctx); err != nil {
			return n, err
		}
	}
}
