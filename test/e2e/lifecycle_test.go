package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// TestLifecycleProcessKilled kills `shoal lc process` with SIGKILL in the
// middle of a pass: every object still listed still reads, nothing the
// rule does not select is touched, and once the dead pass's lock expires
// (rgw_lc_lock_max_time, here 2 s) the next pass takes it over and
// finishes the work.
func TestLifecycleProcessKilled(t *testing.T) {
	c := upWithGateway(t)
	conf := filepath.Join(c.data, "shoal.conf")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[client.rgw.gateway]\nrgw_lc_lock_max_time = 2\n")
	f.Close()
	env := c.s3env()
	ctx := context.Background()
	sdk := s3.New(s3.Options{Region: "default", BaseEndpoint: aws.String(env["S3_ENDPOINT"]), UsePathStyle: true, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], "")})
	b := aws.String("lc-kill")
	if _, err := sdk.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	const expiring, kept = 1500, 20
	keys := make(chan string)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				if _, err := sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: &k, Body: strings.NewReader(k)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range expiring {
		keys <- fmt.Sprintf("tmp/%04d", i)
	}
	for i := range kept {
		keys <- fmt.Sprintf("keep/%02d", i)
	}
	close(keys)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// a date in the past: every tmp/ object is due at once
	if _, err := sdk.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: b,
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{ID: aws.String("tmp"),
			Expiration: &types.LifecycleExpiration{Date: aws.Time(time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC))},
			Filter:     &types.LifecycleRuleFilter{Prefix: aws.String("tmp/")}, Status: "Enabled"}}}}); err != nil {
		t.Fatal(err)
	}
	gone := func(key string) bool {
		_, err := sdk.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String(key)})
		var ae smithy.APIError
		return errors.As(err, &ae) && ae.ErrorCode() == "NotFound"
	}
	pass := exec.Command(shoalBin, "lc", "process")
	pass.Env = append(os.Environ(), "SHOAL_CONF="+conf)
	if err := pass.Start(); err != nil {
		t.Fatal(err)
	}
	// the pass deletes in key order: kill it once the first key is gone
	for deadline := time.Now().Add(60 * time.Second); !gone("tmp/0000"); {
		if time.Now().After(deadline) {
			pass.Process.Kill()
			pass.Wait()
			t.Fatal("the pass deleted nothing in 60 s")
		}
		time.Sleep(5 * time.Millisecond) // polling the pass's progress
	}
	pass.Process.Kill() // SIGKILL
	pass.Wait()
	listed := func(prefix string) []string {
		t.Helper()
		var out []string
		p := s3.NewListObjectsV2Paginator(sdk, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String(prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				out = append(out, *o.Key)
			}
		}
		return out
	}
	left := listed("tmp/")
	if len(left) == 0 || len(left) == expiring {
		t.Fatalf("the pass was not killed mid-way: %d of %d tmp/ objects left", len(left), expiring)
	}
	for _, k := range left { // no listed object without its data
		out, err := sdk.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String(k)})
		if err != nil {
			t.Fatalf("%s is listed but does not read: %v", k, err)
		}
		out.Body.Close()
	}
	t.Logf("killed with %d of %d tmp/ objects left", len(left), expiring)
	// the next pass, once the dead one's lock has expired, finishes
	for deadline := time.Now().Add(60 * time.Second); ; {
		out, err := c.run("lc", "process")
		if err == nil {
			break
		}
		if !strings.Contains(out, "lock held") || time.Now().After(deadline) {
			t.Fatalf("a pass after the kill: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond) // polling for the lock's expiry
	}
	if left := listed("tmp/"); len(left) != 0 {
		t.Fatalf("%d tmp/ objects left after the second pass", len(left))
	}
	if k := listed("keep/"); len(k) != kept {
		t.Fatalf("%d keep/ objects, want %d", len(k), kept)
	}
	for i := range kept {
		k := fmt.Sprintf("keep/%02d", i)
		if gone(k) {
			t.Fatalf("%s was deleted", k)
		}
	}
}
