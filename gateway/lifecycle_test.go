package gateway_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/jonboulle/clockwork"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestLifecycleConfiguration: PUT ?lifecycle refuses what S3 and RGW
// refuse, with their codes; GET returns what was put (IDs filled in);
// DELETE answers 204 whether or not there was one.
func TestLifecycleConfiguration(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "lc-config"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: &b}); code(err) != "NoSuchLifecycleConfiguration" {
		t.Fatalf("GET without a configuration: %v", err)
	}
	if _, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: &b}); err != nil {
		t.Fatalf("DELETE without a configuration: %v", err)
	}
	days := func(n int32) *types.LifecycleExpiration { return &types.LifecycleExpiration{Days: aws.Int32(n)} }
	put := func(rules ...types.LifecycleRule) error {
		_, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: &b,
			LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: rules}})
		return err
	}
	bad := []struct {
		what string
		rule types.LifecycleRule
		code string
	}{
		{"an ID of 256 characters", types.LifecycleRule{ID: aws.String(strings.Repeat("a", 256)), Expiration: days(1), Filter: &types.LifecycleRuleFilter{}, Status: "Enabled"}, "InvalidArgument"},
		{"status in lower case", types.LifecycleRule{ID: aws.String("r"), Expiration: days(1), Filter: &types.LifecycleRuleFilter{}, Status: "enabled"}, "MalformedXML"},
		{"zero days", types.LifecycleRule{ID: aws.String("r"), Expiration: days(0), Filter: &types.LifecycleRuleFilter{}, Status: "Enabled"}, "InvalidArgument"},
		{"a date not at midnight", types.LifecycleRule{ID: aws.String("r"), Expiration: &types.LifecycleExpiration{Date: aws.Time(time.Date(2020, 1, 1, 3, 0, 0, 0, time.UTC))},
			Filter: &types.LifecycleRuleFilter{}, Status: "Enabled"}, "InvalidArgument"},
		{"a transition", types.LifecycleRule{ID: aws.String("r"), Transitions: []types.Transition{{Days: aws.Int32(1), StorageClass: "GLACIER"}},
			Filter: &types.LifecycleRuleFilter{}, Status: "Enabled"}, "InvalidArgument"},
		{"no action", types.LifecycleRule{ID: aws.String("r"), Filter: &types.LifecycleRuleFilter{}, Status: "Enabled"}, "InvalidRequest"},
	}
	for _, tc := range bad {
		if err := put(tc.rule); code(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.what, err, tc.code)
		}
	}
	same := types.LifecycleRule{ID: aws.String("r"), Expiration: days(1), Filter: &types.LifecycleRuleFilter{Prefix: aws.String("a/")}, Status: "Enabled"}
	if err := put(same, same); code(err) != "InvalidArgument" {
		t.Errorf("one ID twice: %v", err)
	}
	if _, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: &b}); code(err) != "NoSuchLifecycleConfiguration" {
		t.Fatalf("GET after refused PUTs: %v", err)
	}
	if err := put(
		types.LifecycleRule{ID: aws.String("logs"), Expiration: days(31), Filter: &types.LifecycleRuleFilter{Prefix: aws.String("logs/")}, Status: "Enabled"},
		types.LifecycleRule{Expiration: &types.LifecycleExpiration{Date: aws.Time(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))},
			Filter: &types.LifecycleRuleFilter{And: &types.LifecycleRuleAndOperator{Prefix: aws.String("tmp/"), Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}}, Status: "Disabled"},
		types.LifecycleRule{ID: aws.String("mpu"), AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(2)},
			NoncurrentVersionExpiration: &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(3)}, Filter: &types.LifecycleRuleFilter{}, Status: "Enabled"},
	); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: &b})
	if err != nil || len(got.Rules) != 3 {
		t.Fatalf("GET: %+v %v", got, err)
	}
	r0, r1, r2 := got.Rules[0], got.Rules[1], got.Rules[2]
	if *r0.ID != "logs" || *r0.Expiration.Days != 31 || *r0.Filter.Prefix != "logs/" || r0.Status != "Enabled" {
		t.Errorf("rule 0: %+v", r0)
	}
	if r1.ID == nil || *r1.ID == "" || !r1.Expiration.Date.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) || *r1.Filter.And.Prefix != "tmp/" ||
		*r1.Filter.And.Tags[0].Key != "k" || r1.Status != "Disabled" {
		t.Errorf("rule 1 (its ID given by the gateway): %+v", r1)
	}
	if *r2.AbortIncompleteMultipartUpload.DaysAfterInitiation != 2 || *r2.NoncurrentVersionExpiration.NoncurrentDays != 3 {
		t.Errorf("rule 2: %+v", r2)
	}
	if _, err := f.s3(f.other).GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: &b}); code(err) != "AccessDenied" {
		t.Errorf("GET by another user: %v", err)
	}
	if _, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: &b}); code(err) != "NoSuchLifecycleConfiguration" {
		t.Fatalf("GET after DELETE: %v", err)
	}
}

// TestLifecycleProcess: a pass expires exactly the due objects its rules'
// filters select (prefix, tags, size, date), aborts old uploads, skips
// disabled rules, never deletes an object rewritten since it was listed,
// and forgets buckets whose configuration was removed.
func TestLifecycleProcess(t *testing.T) {
	// a lifecycle day of 1 ns: everything written before a pass is days old
	// and no worker: the test runs the passes
	f := startGateway(t, rgw.Options{LCDebugInterval: time.Nanosecond, NoLCThreads: true})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "lc-run"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	putObj := func(key, body, tagging string) {
		t.Helper()
		in := &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader(body)}
		if tagging != "" {
			in.Tagging = &tagging
		}
		if _, err := c.PutObject(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"old/a", "old/b", "keep/a", "off/a"} {
		putObj(k, "x", "")
	}
	putObj("tagged/yes", "x", "expire=1")
	putObj("tagged/no", "x", "expire=0")
	putObj("sized/small", "x", "")
	putObj("sized/large", strings.Repeat("x", 2000), "")
	putObj("past/a", "x", "")
	putObj("future/a", "x", "")
	mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("mp/a")})
	if err != nil {
		t.Fatal(err)
	}
	keepUp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("keep/mp")})
	if err != nil {
		t.Fatal(err)
	}
	pfx := func(p string) *types.LifecycleRuleFilter { return &types.LifecycleRuleFilter{Prefix: aws.String(p)} }
	one := &types.LifecycleExpiration{Days: aws.Int32(1)}
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: &b,
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{
			{ID: aws.String("old"), Expiration: one, Filter: pfx("old/"), Status: "Enabled"},
			{ID: aws.String("off"), Expiration: one, Filter: pfx("off/"), Status: "Disabled"},
			{ID: aws.String("tags"), Expiration: one, Filter: &types.LifecycleRuleFilter{And: &types.LifecycleRuleAndOperator{
				Prefix: aws.String("tagged/"), Tags: []types.Tag{{Key: aws.String("expire"), Value: aws.String("1")}}}}, Status: "Enabled"},
			{ID: aws.String("size"), Expiration: one, Filter: &types.LifecycleRuleFilter{And: &types.LifecycleRuleAndOperator{
				Prefix: aws.String("sized/"), ObjectSizeGreaterThan: aws.Int64(1000)}}, Status: "Enabled"},
			{ID: aws.String("past"), Expiration: &types.LifecycleExpiration{Date: aws.Time(time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC))}, Filter: pfx("past/"), Status: "Enabled"},
			{ID: aws.String("future"), Expiration: &types.LifecycleExpiration{Date: aws.Time(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))}, Filter: pfx("future/"), Status: "Enabled"},
			{ID: aws.String("mpu"), AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(1)}, Filter: pfx("mp/"), Status: "Enabled"},
		}}}); err != nil {
		t.Fatal(err)
	}
	es, err := f.store.LCList(ctx)
	if err != nil || len(es) != 1 || es[0].Bucket != b || !es[0].LastRun.IsZero() {
		t.Fatalf("registry after PUT: %+v %v", es, err)
	}
	var out strings.Builder
	res, err := f.store.LCProcess(ctx, true, &out)
	if err != nil {
		t.Fatalf("pass: %v (%s)", err, out.String())
	}
	if res.Expired != 5 || res.Aborted != 1 || res.Buckets != 1 {
		t.Errorf("pass: %+v, want 5 expired (old/a, old/b, tagged/yes, sized/large, past/a), 1 aborted: %s", res, out.String())
	}
	lo, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range lo.Contents {
		keys = append(keys, *o.Key)
	}
	if got, want := strings.Join(keys, " "), "future/a keep/a off/a sized/small tagged/no"; got != want {
		t.Errorf("left after the pass: %s, want %s", got, want)
	}
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b})
	if err != nil || len(ups.Uploads) != 1 || *ups.Uploads[0].UploadId != *keepUp.UploadId {
		t.Errorf("uploads left: %+v %v (aborted %s)", ups, err, *mp.UploadId)
	}
	if es, err := f.store.LCList(ctx); err != nil || len(es) != 1 || es[0].LastRun.IsZero() || es[0].Status != "COMPLETE" {
		t.Errorf("registry after the pass: %+v %v", es, err)
	}

	// an expiration never removes a newer write than the one it listed
	putObj("race", "v1", "")
	bk, err := f.store.GetBucket(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	l, err := f.store.List(ctx, bk, "race", "", "", 10)
	if err != nil || len(l.Entries) != 1 {
		t.Fatalf("list race: %+v %v", l, err)
	}
	listed := l.Entries[0].Tag
	putObj("race", "v2", "")
	if ok, err := f.store.LCDeleteIfCurrent(ctx, bk, "race", listed); ok || err != nil {
		t.Fatalf("delete of a rewritten object: %v %v", ok, err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("race")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(body) != "v2" {
		t.Fatalf("race: %q", body)
	}

	// a removed configuration: the next pass drops the registration
	if _, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.LCProcess(ctx, true, io.Discard); err != nil {
		t.Fatal(err)
	}
	if es, err := f.store.LCList(ctx); err != nil || len(es) != 0 {
		t.Errorf("registry after the configuration's removal: %+v %v", es, err)
	}
}

// tmpExpiry creates bucket b holding keys (one byte each) with one
// lifecycle rule: objects under tmp/ expire after a day.
func tmpExpiry(ctx context.Context, t *testing.T, c *s3.Client, b string, keys ...string) {
	t.Helper()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: &b,
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{
			{ID: aws.String("tmp"), Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)}, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("tmp/")}, Status: "Enabled"},
		}}}); err != nil {
		t.Fatal(err)
	}
}

// TestLifecycleWorker: a gateway runs lifecycle passes on its own, on
// its clock: with real days inside the work window (a pass an hour in
// expires nothing, one two days in expires the rule's key), and with days
// of a second (rgw_lc_debug_interval) outside any work time. The GC,
// reshard and lifecycle loops wait on the fake clock, so the test knows
// when a pass has ended (the three wait again) without polling; it hangs
// to its deadline, and fails, if a loop reads real time.
func TestLifecycleWorker(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opt        rgw.Options
		early, due time.Duration
	}{
		{"days", rgw.Options{LCWorkTime: "00:00-24:00"}, time.Hour, 49 * time.Hour},
		{"debug-interval", rgw.Options{LCDebugInterval: time.Minute, LCWorkTime: "00:00-00:00"}, 0, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clockwork.NewFakeClock()
			tc.opt.Clock = fc
			f := startGateway(t, tc.opt)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := f.s3(f.admin)
			b := "lc-worker"
			tmpExpiry(ctx, t, c, b, "tmp/a", "keep")
			const loops = 3 // GC, dynamic reshard, lifecycle
			pass := func(d time.Duration) {
				t.Helper()
				if err := fc.BlockUntilContext(ctx, loops); err != nil {
					t.Fatalf("waiting for the workers to wait on the clock: %v", err)
				}
				fc.Advance(d)
				if err := fc.BlockUntilContext(ctx, loops); err != nil {
					t.Fatalf("waiting for the passes to end: %v", err)
				}
			}
			exists := func(key string) bool {
				_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String(key)})
				if err != nil && code(err) != "NotFound" {
					t.Fatalf("%s: %v", key, err)
				}
				return err == nil
			}
			if tc.early > 0 {
				pass(tc.early)
				if !exists("tmp/a") {
					t.Fatalf("tmp/a expired %v after its write, under a 1-day rule", tc.early)
				}
			}
			pass(tc.due)
			if exists("tmp/a") {
				t.Fatalf("tmp/a not expired %v after its write", tc.due)
			}
			if !exists("keep") {
				t.Fatal("keep, outside the rule's prefix, expired")
			}
		})
	}
}

// TestLifecycleLockTakeover: a pass killed mid-way (its lock held, never
// renewed) keeps others off only until the lock expires
// (rgw_lc_lock_max_time, 2 s on the store's fake clock: still held at
// 1 s, expired at 2.5 s); the next pass then takes it over and does the
// work, and the dead holder's late release does not remove a lock another
// holds.
func TestLifecycleLockTakeover(t *testing.T) {
	fc := clockwork.NewFakeClock()
	f := startGateway(t, rgw.Options{LCDebugInterval: time.Nanosecond, NoLCThreads: true, LCLockTTL: 2 * time.Second, Clock: fc})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "lc-lock"
	tmpExpiry(ctx, t, c, b, "tmp/a")
	deadRelease, err := f.store.HoldLCLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	locked := func(err error) bool { return err != nil && strings.Contains(err.Error(), "lock held") }
	if _, err := f.store.LCProcess(ctx, true, io.Discard); !locked(err) {
		t.Fatalf("a pass while the lock is held: %v", err)
	}
	fc.Advance(time.Second)
	if _, err := f.store.LCProcess(ctx, true, io.Discard); !locked(err) {
		t.Fatalf("a pass 1 s into the lock's 2 s: %v", err)
	}
	fc.Advance(1500 * time.Millisecond)
	res, err := f.store.LCProcess(ctx, true, io.Discard)
	if err != nil {
		t.Fatalf("a pass after the lock's expiry: %v", err)
	}
	if res.Expired != 1 {
		t.Errorf("the pass that took the lock over expired %d objects, want 1", res.Expired)
	}
	live, err := f.store.HoldLCLock(ctx)
	if err != nil {
		t.Fatalf("the lock after a pass released it: %v", err)
	}
	deadRelease()
	if _, err := f.store.LCProcess(ctx, true, io.Discard); !locked(err) {
		t.Errorf("the dead holder's late release removed another's lock: %v", err)
	}
	live()
	if _, err := f.store.LCProcess(ctx, true, io.Discard); err != nil {
		t.Errorf("a pass after its holder released the lock: %v", err)
	}
}
