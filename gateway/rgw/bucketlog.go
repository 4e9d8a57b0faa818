package rgw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/shoal-project/shoal/client"
	clsrgw "github.com/shoal-project/shoal/cls/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
	"github.com/shoal-project/shoal/osdop"
)

// Bucket logging (S3 server access logging; RGW's "Bucket Logging"): a
// bucket's requests are written as records, in S3's access log format,
// to objects of a log bucket. The records of a bucket gather in a pending
// batch (an object of the log pool, cls/rgw's log_append); once the
// batch is RollTime old, the next request on the bucket (or the gateway's
// periodic pass, or a flush) commits it: the batch becomes one object of
// the log bucket, named TargetPrefix + "YYYY-MM-DD-hh-mm-ss-UNIQUE"
// (SimplePrefix) or TargetPrefix +
// "OWNER/REGION/BUCKET/YYYY/MM/DD/YYYY-MM-DD-hh-mm-ss-UNIQUE"
// (PartitionedPrefix), and is trimmed from the pending object (log_trim).
// A committer crashing between the two writes the same name again with
// the records gathered since (a superset), so a record is never lost or
// delivered twice; two committers are kept apart by a lock on the batch.

// BucketLogging is a bucket's logging configuration (PutBucketLogging's
// LoggingEnabled).
type BucketLogging struct {
	TargetBucket string `json:"target_bucket"` // the log bucket's key (tenant.go)
	// TargetID is the log bucket's ID when logging was configured: a
	// bucket of that name created since is not delivered to.
	TargetID     string `json:"target_id"`
	TargetPrefix string `json:"target_prefix"`
	// KeyFormat is LogKeySimple or LogKeyPartitioned; DateSource, for
	// the partitioned format, EventTime or DeliveryTime.
	KeyFormat  string `json:"key_format"`
	DateSource string `json:"date_source,omitempty"`
	// Modified is when the configuration last changed (GetBucketLogging's
	// Last-Modified; putting the same configuration again keeps it).
	Modified time.Time `json:"modified"`
}

// SameDestination reports whether c (nil: no logging) and o deliver to
// the same log bucket, under the same prefix.
func (c *BucketLogging) SameDestination(o *BucketLogging) bool {
	return c != nil && o != nil && c.TargetBucket == o.TargetBucket && c.TargetID == o.TargetID && c.TargetPrefix == o.TargetPrefix
}

// Log object key formats (S3's TargetObjectKeyFormat).
const (
	LogKeySimple      = "SimplePrefix"
	LogKeyPartitioned = "PartitionedPrefix"
)

// logCommitTTL is how long a commit holds its batch's lock; a commit
// gives up at half of it, so a slow one cannot outlive its lock and race
// the next (two commits of one batch would write the same object).
const logCommitTTL = time.Minute

// DefaultLogRollTime is how long a batch gathers records before it is
// committed when rgw_bucket_logging_obj_roll_time is not set (RGW's
// ObjectRollTime default, 300 s).
const DefaultLogRollTime = 300 * time.Second

// logBatchOID is the pending batch of bucket b's records.
func logBatchOID(b *Bucket) string { return "bucketlog." + b.ID }

// SetBucketLogging sets (nil: removes) bucket name's logging
// configuration and returns the bucket as updated; an unchanged one keeps
// its Modified time. s3err.NoSuchBucket if it is gone.
func (s *Store) SetBucketLogging(ctx context.Context, name string, cfg *BucketLogging) (*Bucket, error) {
	return s.UpdateBucket(ctx, name, func(b *Bucket) error {
		if cfg != nil {
			if old := b.Logging; old.SameDestination(cfg) && old.KeyFormat == cfg.KeyFormat && old.DateSource == cfg.DateSource {
				cfg.Modified = old.Modified
			} else {
				cfg.Modified = time.Now().UTC().Truncate(time.Second)
			}
		}
		b.Logging = cfg
		return nil
	})
}

// AppendLogRecord adds one record (a line, with its newline) to bucket
// b's pending batch and returns when the batch began (now, for a resent
// append, whose answer has no output); RADOS's error, wrapped.
func (s *Store) AppendLogRecord(ctx context.Context, b *Bucket, record []byte) (time.Time, error) {
	out, err := s.log.Exec(ctx, logBatchOID(b), "rgw.log_append", record)
	if err != nil {
		return time.Time{}, fmt.Errorf("bucket %s: log record: %w", b.Name, err)
	}
	var o clsrgw.LogAppendOut
	if len(out) > 0 && json.Unmarshal(out, &o) == nil && o.Since != 0 {
		return time.Unix(0, o.Since), nil
	}
	return time.Now(), nil // a resent append answers without output
}

// CommitLog commits bucket b's pending batch to its log bucket if it is
// at least rollTime old (force: whatever its age, as RGW's flush) and
// returns the log object's key ("" if nothing was committed: no batch,
// an empty or young one, or another gateway committing it now). Errors:
// s3err.InvalidRequest if the log bucket was created again since logging
// was configured (the batch is kept); the log bucket's or RADOS's
// otherwise, wrapped (the batch is kept, for the next commit).
func (s *Store) CommitLog(ctx context.Context, b *Bucket, rollTime time.Duration, force bool) (string, error) {
	cfg := b.Logging
	if cfg == nil {
		return "", nil
	}
	oid := logBatchOID(b)
	cookie := NewTag()
	ctx, cancel := context.WithTimeout(ctx, logCommitTTL/2)
	defer cancel()
	if err := s.log.LockExclusive(ctx, oid, "commit", cookie, "bucket log commit", logCommitTTL, false); err != nil {
		if errors.Is(err, osdop.ErrBusy) || errors.Is(err, client.ErrExists) {
			return "", nil // another gateway is committing it
		}
		return "", fmt.Errorf("bucket %s: log batch lock: %w", b.Name, err)
	}
	defer s.log.Unlock(context.WithoutCancel(ctx), oid, "commit", cookie)
	rep, err := s.log.Operate(ctx, oid, []osdop.Op{{Code: osdop.GetXattrs}, {Code: osdop.Read}})
	if errors.Is(err, client.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("bucket %s: log batch: %w", b.Name, err)
	}
	var since time.Time
	var seq uint64
	for _, kv := range rep.Results[0].KVs {
		switch kv.Key {
		case "since":
			since = clsrgw.LogSince(kv.Value)
		case "seq":
			seq, _ = strconv.ParseUint(string(kv.Value), 10, 64)
		}
	}
	data := rep.Results[1].Data
	if len(data) == 0 || since.IsZero() || (!force && time.Since(since) < rollTime) {
		return "", nil
	}
	target, err := s.GetBucket(ctx, cfg.TargetBucket)
	if err != nil {
		return "", fmt.Errorf("bucket %s: log bucket %s: %w", b.Name, cfg.TargetBucket, err)
	}
	if cfg.TargetID != "" && target.ID != cfg.TargetID {
		return "", s3err.InvalidRequest.With("bucket %s: log bucket %s was removed and created again since logging was configured: its records are kept, not delivered; configure logging again", b.Name, cfg.TargetBucket)
	}
	key := logObjectKey(cfg, b, since, seq)
	if _, err := s.PutObject(ctx, target, key, PutInput{Body: bytes.NewReader(data), Size: int64(len(data)), Owner: target.Owner,
		Headers: map[string]string{"Content-Type": "text/plain"},
		SSE:     target.DefaultSSE()}); err != nil { // a log bucket given default encryption after logging was set up
		return "", fmt.Errorf("bucket %s: log object %s/%s: %w", b.Name, target.Name, key, err)
	}
	if s.failpoint == "log-before-trim" { // as if killed here
		return "", errors.New("failpoint log-before-trim")
	}
	in, _ := json.Marshal(clsrgw.LogTrimIn{N: uint64(len(data)), Seq: seq})
	if _, err := s.log.Exec(ctx, oid, "rgw.log_trim", in); err != nil {
		return "", fmt.Errorf("bucket %s: log batch trim: %w", b.Name, err)
	}
	return key, nil
}

// DropLogBatch removes bucket b's pending batch (records gathered while
// its logging was being turned off, by gateways that had not seen it yet:
// not delivered to whatever log bucket is configured next).
func (s *Store) DropLogBatch(ctx context.Context, b *Bucket) error {
	if err := s.log.Remove(ctx, logBatchOID(b)); err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("bucket %s: log batch: %w", b.Name, err)
	}
	return nil
}

// logObjectKey names batch seq of bucket b, begun at since: the same for
// every commit of that batch, so a retried commit overwrites its own
// object.
func logObjectKey(cfg *BucketLogging, b *Bucket, since time.Time, seq uint64) string {
	h := sha256.Sum256([]byte(b.ID + "/" + strconv.FormatUint(seq, 10) + "/" + strconv.FormatInt(since.UnixNano(), 10)))
	unique := hex.EncodeToString(h[:8])
	t := since.UTC()
	name := t.Format("2006-01-02-15-04-05") + "-" + unique
	if cfg.KeyFormat == LogKeyPartitioned {
		return cfg.TargetPrefix + b.Owner + "/default/" + b.S3Name() + "/" + t.Format("2006/01/02") + "/" + name
	}
	return cfg.TargetPrefix + name
}

// ValidLogTarget checks that target may receive source's logs: another
// bucket, itself not logged, with no default encryption and not Requester
// Pays (s3err.InvalidArgument otherwise; RGW's rules, which refuse any
// default encryption of a log bucket where AWS allows SSE-S3).
func ValidLogTarget(source, target *Bucket) error {
	if source.Name == target.Name {
		return s3err.InvalidArgument.With("bucket %q cannot be its own log bucket", source.S3Name())
	}
	if target.Logging != nil {
		return s3err.InvalidArgument.With("log bucket %q has logging enabled itself", target.S3Name())
	}
	if target.Encryption != nil {
		return s3err.InvalidArgument.With("log bucket %q has default encryption", target.S3Name())
	}
	if target.RequesterPays() {
		return s3err.InvalidArgument.With("log bucket %q is a Requester Pays bucket", target.S3Name())
	}
	return nil
}
