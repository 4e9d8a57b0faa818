package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	mcreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// s3env reads the cluster's s3.env (what `shoal up` wrote).
func (c *tcluster) s3env() map[string]string {
	c.t.Helper()
	p := filepath.Join(c.data, "s3.env")
	st, err := os.Stat(p)
	if err != nil {
		c.t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		c.t.Fatalf("s3.env has mode %v, want 0600 (it holds a secret)", st.Mode().Perm())
	}
	f, _ := os.Open(p)
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	for _, k := range []string{"S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if env[k] == "" {
			c.t.Fatalf("s3.env lacks %s", k)
		}
	}
	return env
}

// tool runs an S3 client program with the cluster's credentials and
// nothing from the machine's own AWS configuration.
func (c *tcluster) tool(env map[string]string, name string, args ...string) string {
	c.t.Helper()
	out, err := c.toolErr(env, name, args...)
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// toolErr is tool for a command that may fail: its output and error.
func (c *tcluster) toolErr(env map[string]string, name string, args ...string) (string, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	home := c.t.TempDir()
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true", "LANG=C.UTF-8"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func sha256File(t *testing.T, p string) [32]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// TestS3RealClients drives the gateway `shoal up` started with the AWS
// CLI, s3cmd and rclone from Debian, and both Go SDKs: a real tree of
// thousands of files synced up and back, a 200 MiB multipart upload,
// low-level multipart calls.
func TestS3RealClients(t *testing.T) {
	for _, tool := range []string{"/usr/bin/aws", "/usr/bin/s3cmd", "/usr/bin/rclone", "/usr/bin/restic"} {
		if _, err := os.Stat(tool); err != nil {
			t.Fatalf("%s is missing (Debian packages awscli, s3cmd, rclone, restic; .ci/run installs them)", tool)
		}
	}
	c := upWithGateway(t)
	env := c.s3env()
	ep := env["S3_ENDPOINT"]
	awscli := func(args ...string) string {
		return c.tool(env, "/usr/bin/aws", append([]string{"--endpoint-url", ep}, args...)...)
	}
	awscli("s3", "mb", "s3://tree")
	// a real tree: /usr/share/doc (its regular files and what its symlinks
	// reach; dangling links, which packages leave, are not a gateway's
	// business), synced up, listed, synced back
	src := copyTree(t, "/usr/share/doc")
	awscli("s3", "sync", "--only-show-errors", src, "s3://tree/doc/")
	listed := strings.Count(awscli("s3", "ls", "--recursive", "s3://tree/doc/"), "\n")
	if listed < 1000 {
		t.Fatalf("listed %d objects after syncing %s; want thousands", listed, src)
	}
	back := t.TempDir()
	awscli("s3", "sync", "--only-show-errors", "s3://tree/doc/", back)
	if out, err := exec.Command("diff", "-r", src, back).CombinedOutput(); err != nil {
		t.Fatalf("synced tree differs: %v\n%.2000s", err, out)
	}
	t.Logf("synced %d objects of /usr/share/doc up and back, identical", listed)
	// 200 MiB through multipart and back
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	f, _ := os.Create(big)
	r := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 1<<20)
	for range 200 {
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
		f.Write(buf)
	}
	f.Close()
	awscli("s3", "cp", "--only-show-errors", big, "s3://tree/big")
	head := awscli("s3api", "head-object", "--bucket", "tree", "--key", "big")
	if !strings.Contains(head, `"ContentLength": 209715200`) || !strings.Contains(head, `-`) {
		t.Fatalf("head of the multipart object: %s", head)
	}
	awscli("s3", "cp", "--only-show-errors", "s3://tree/big", filepath.Join(dir, "big.back"))
	if sha256File(t, big) != sha256File(t, filepath.Join(dir, "big.back")) {
		t.Fatal("200 MiB multipart object came back different")
	}
	// low-level multipart: create, list, abort
	up := awscli("s3api", "create-multipart-upload", "--bucket", "tree", "--key", "abandoned", "--query", "UploadId", "--output", "text")
	id := strings.TrimSpace(up)
	if !strings.Contains(awscli("s3api", "list-multipart-uploads", "--bucket", "tree"), id) {
		t.Fatal("upload not listed")
	}
	awscli("s3api", "upload-part", "--bucket", "tree", "--key", "abandoned", "--upload-id", id, "--part-number", "1", "--body", "/etc/hostname")
	awscli("s3api", "abort-multipart-upload", "--bucket", "tree", "--key", "abandoned", "--upload-id", id)
	if strings.Contains(awscli("s3api", "list-multipart-uploads", "--bucket", "tree"), id) {
		t.Fatal("aborted upload still listed")
	}
	// s3cmd
	host := strings.TrimPrefix(ep, "http://")
	cfg := filepath.Join(dir, "s3cfg")
	os.WriteFile(cfg, []byte("[default]\naccess_key = "+env["AWS_ACCESS_KEY_ID"]+"\nsecret_key = "+env["AWS_SECRET_ACCESS_KEY"]+
		"\nhost_base = "+host+"\nhost_bucket = "+host+"\nuse_https = False\n"), 0o600)
	s3cmd := func(args ...string) string {
		return c.tool(nil, "/usr/bin/s3cmd", append([]string{"-c", cfg}, args...)...)
	}
	s3cmd("mb", "s3://viacmd")
	s3cmd("put", "/etc/hostname", "s3://viacmd/dir/host")
	if !strings.Contains(s3cmd("ls", "s3://viacmd/dir/"), "s3://viacmd/dir/host") {
		t.Fatal("s3cmd ls")
	}
	s3cmd("get", "--force", "s3://viacmd/dir/host", filepath.Join(dir, "host"))
	if a, b := sha256File(t, "/etc/hostname"), sha256File(t, filepath.Join(dir, "host")); a != b {
		t.Fatal("s3cmd round trip differs")
	}
	s3cmd("del", "s3://viacmd/dir/host")
	s3cmd("rb", "s3://viacmd")
	// rclone
	rcfg := filepath.Join(dir, "rclone.conf")
	os.WriteFile(rcfg, []byte("[shoal]\ntype = s3\nprovider = Ceph\naccess_key_id = "+env["AWS_ACCESS_KEY_ID"]+
		"\nsecret_access_key = "+env["AWS_SECRET_ACCESS_KEY"]+"\nendpoint = "+ep+"\n"), 0o600)
	rclone := func(args ...string) string {
		return c.tool(nil, "/usr/bin/rclone", append([]string{"--config", rcfg}, args...)...)
	}
	rclone("copy", "/usr/share/doc/bash", "shoal:viarclone/bash")
	rclone("check", "/usr/share/doc/bash", "shoal:viarclone/bash")
	rclone("purge", "shoal:viarclone")
	// versioning and object lock through aws s3api, and rclone's
	// --s3-versions (a bucket created with object lock is versioned at
	// once, without the wait of a first PutBucketVersioning)
	awscli("s3api", "create-bucket", "--bucket", "viaversions", "--object-lock-enabled-for-bucket")
	if st := awscli("s3api", "get-bucket-versioning", "--bucket", "viaversions", "--query", "Status", "--output", "text"); strings.TrimSpace(st) != "Enabled" {
		t.Fatalf("aws s3api get-bucket-versioning of a bucket with object lock: %q", st)
	}
	if st := awscli("s3api", "get-object-lock-configuration", "--bucket", "viaversions", "--query", "ObjectLockConfiguration.ObjectLockEnabled", "--output", "text"); strings.TrimSpace(st) != "Enabled" {
		t.Fatalf("aws s3api get-object-lock-configuration: %q", st)
	}
	var vids []string
	for _, f := range []string{"/etc/hostname", "/etc/os-release"} {
		vid := awscli("s3api", "put-object", "--bucket", "viaversions", "--key", "doc", "--body", f, "--query", "VersionId", "--output", "text")
		vids = append(vids, strings.TrimSpace(vid))
	}
	awscli("s3api", "get-object", "--bucket", "viaversions", "--key", "doc", "--version-id", vids[0], filepath.Join(dir, "v0"))
	if a, _ := os.ReadFile("/etc/hostname"); !bytes.Equal(a, mustReadFile(t, filepath.Join(dir, "v0"))) {
		t.Fatal("aws s3api get-object --version-id of the first version differs from what was put")
	}
	if got := strings.Fields(awscli("s3api", "list-object-versions", "--bucket", "viaversions", "--query", "Versions[].VersionId", "--output", "text")); !slices.Equal(got, []string{vids[1], vids[0]}) {
		t.Fatalf("aws s3api list-object-versions: %v; want newest first %v", got, vids)
	}
	if out := rclone("ls", "--s3-versions", "shoal:viaversions"); strings.Count(out, "doc") != 2 {
		t.Fatalf("rclone ls --s3-versions lists %q; want both versions of doc", out)
	}
	// a legal hold keeps a version until it is lifted
	awscli("s3api", "put-object-legal-hold", "--bucket", "viaversions", "--key", "doc", "--version-id", vids[0], "--legal-hold", "Status=ON")
	if out, err := c.toolErr(env, "/usr/bin/aws", "--endpoint-url", ep, "s3api", "delete-object", "--bucket", "viaversions", "--key", "doc", "--version-id", vids[0]); err == nil || !strings.Contains(out, "AccessDenied") {
		t.Fatalf("aws s3api delete-object of a version under a legal hold: %v %s", err, out)
	}
	awscli("s3api", "put-object-legal-hold", "--bucket", "viaversions", "--key", "doc", "--version-id", vids[0], "--legal-hold", "Status=OFF")
	for _, v := range vids {
		awscli("s3api", "delete-object", "--bucket", "viaversions", "--key", "doc", "--version-id", v)
	}
	awscli("s3api", "delete-bucket", "--bucket", "viaversions")
	resticOnLockedBucket(t, c, env, awscli)
	// both Go SDKs
	ctx := context.Background()
	sdk := s3.New(s3.Options{Region: "default", BaseEndpoint: aws.String(ep), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], "")})
	if _, err := sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tree"), Key: aws.String("sdk/v2"), Body: strings.NewReader("from aws-sdk-go-v2")}); err != nil {
		t.Fatal(err)
	}
	mc, err := minio.New(host, &minio.Options{Creds: mcreds.NewStaticV4(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], ""), Region: "default"})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := mc.GetObject(ctx, "tree", "sdk/v2", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || string(got) != "from aws-sdk-go-v2" {
		t.Fatalf("minio-go read %q, %v", got, err)
	}
	payload := bytes.Repeat([]byte("minio"), 4<<20) // 20 MiB: minio-go uploads it in parts
	if _, err := mc.PutObject(ctx, "tree", "sdk/minio", bytes.NewReader(payload), int64(len(payload)), minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for o := range mc.ListObjects(ctx, "tree", minio.ListObjectsOptions{Prefix: "sdk/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		n++
	}
	out, err := sdk.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tree"), Key: aws.String("sdk/minio")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(out.Body)
	out.Body.Close()
	if n != 2 || !bytes.Equal(got, payload) {
		t.Fatalf("SDKs: listed %d of 2, minio's multipart object read back equal: %v", n, bytes.Equal(got, payload))
	}
	awscli("s3", "rm", "--recursive", "--only-show-errors", "s3://tree")
	awscli("s3", "rb", "s3://tree")
}

// resticOnLockedBucket keeps a restic repository in a bucket with object
// lock and a default retention, as immutable backups are kept: init, two
// backups, check (reading every pack), restore, forget of a snapshot,
// and the versions the backups wrote stay, each refusing removal.
func resticOnLockedBucket(t *testing.T, c *tcluster, env map[string]string, awscli func(...string) string) {
	awscli("s3api", "create-bucket", "--bucket", "viarestic", "--object-lock-enabled-for-bucket")
	awscli("s3api", "put-object-lock-configuration", "--bucket", "viarestic", "--object-lock-configuration",
		`{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"GOVERNANCE","Days":1}}}`)
	renv := map[string]string{"RESTIC_REPOSITORY": "s3:" + env["S3_ENDPOINT"] + "/viarestic", "RESTIC_PASSWORD": "e2e-restic",
		"RESTIC_CACHE_DIR": t.TempDir()}
	for k, v := range env {
		renv[k] = v
	}
	restic := func(args ...string) string { return c.tool(renv, "/usr/bin/restic", args...) }
	restic("init")
	src := t.TempDir()
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 20 {
		b := make([]byte, 1<<(8+i%13)) // 256 B to 1 MiB
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		if err := os.WriteFile(filepath.Join(src, fmt.Sprint("f", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	restic("backup", "--quiet", src)
	os.WriteFile(filepath.Join(src, "added"), []byte("written after the first backup"), 0o644)
	restic("backup", "--quiet", src)
	if n := strings.Count(restic("snapshots", "--json"), `"id"`); n != 2 {
		t.Fatalf("restic snapshots: %d, want 2", n)
	}
	restic("check", "--read-data")
	back := t.TempDir()
	restic("restore", "latest", "--target", back)
	if out, err := exec.Command("diff", "-r", src, filepath.Join(back, src)).CombinedOutput(); err != nil {
		t.Fatalf("restic restore differs: %v\n%.2000s", err, out)
	}
	// forgetting a snapshot deletes its file: a delete marker, the version stays
	restic("forget", "--keep-last", "1")
	if n := strings.Count(restic("snapshots", "--json"), `"id"`); n != 1 {
		t.Fatalf("restic snapshots after forget --keep-last 1: %d", n)
	}
	vs := awscli("s3api", "list-object-versions", "--bucket", "viarestic", "--prefix", "snapshots/", "--query", "Versions[].[Key,VersionId]", "--output", "text")
	if strings.Count(vs, "snapshots/") != 2 {
		t.Fatalf("versions under snapshots/ after forget: %q; want both snapshots' files kept", vs)
	}
	key, vid, _ := strings.Cut(strings.TrimSpace(strings.Split(vs, "\n")[0]), "\t")
	out, err := c.toolErr(env, "/usr/bin/aws", "--endpoint-url", env["S3_ENDPOINT"], "s3api", "delete-object", "--bucket", "viarestic", "--key", key, "--version-id", vid)
	if err == nil || !strings.Contains(out, "AccessDenied") {
		t.Fatalf("removing a retained version of %s: %v %s", key, err, out)
	}
	restic("check")
}

// TestGatewayKilledMidPut kills the gateway with SIGKILL while a large PUT
// overwrites an object: the previous version stays readable and listed,
// and after a restart the cluster serves it unchanged. A client that drops
// its connection mid-PUT leaves no object and no tails. Then conditional
// PUTs race while an OSD is killed and restarted
// (conditionalRacesWithOSDKilled), and the gateway is killed again amid
// multi-object deletes (multiDeleteKilled).
func TestGatewayKilledMidPut(t *testing.T) {
	t.Parallel() // waits more than it computes: runs beside another such test (e2e_test.go)
	c := upWithGateway(t)
	env := c.s3env()
	ctx := context.Background()
	sdk := s3.New(s3.Options{Region: "default", BaseEndpoint: aws.String(env["S3_ENDPOINT"]), UsePathStyle: true, RetryMaxAttempts: 1,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		Credentials:                credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], "")})
	b, key := aws.String("crash"), aws.String("victim")
	if _, err := sdk.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	v1 := bytes.Repeat([]byte("version-one "), 1<<20) // 12 MiB: head and tails
	if _, err := sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: key, Body: bytes.NewReader(v1)}); err != nil {
		t.Fatal(err)
	}
	// a PUT whose body arrives slowly; the gateway dies after 20 MiB of it
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := streamPut(ctx, sdk, *b, *key, pr, 64<<20)
		pr.CloseWithError(err) // a PUT that ended early stops the writer
		done <- err
	}()
	chunk := bytes.Repeat([]byte("version-two "), 1<<16)
	sent := 0
	for sent < 20<<20 {
		n, err := pw.Write(chunk)
		if err != nil {
			t.Fatalf("PUT ended after %d bytes: %v", sent, err)
		}
		sent += n
	}
	c.kill9(gatewayPidName)
	pw.CloseWithError(errors.New("gateway gone"))
	if err := <-done; err == nil {
		t.Fatal("the interrupted PUT succeeded")
	}
	c.up() // restarts the gateway (c.up passes no --no-gateway)
	out, err := sdk.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if !bytes.Equal(got, v1) {
		t.Fatalf("after the gateway's crash mid-PUT the object reads %d bytes, not the previous version", len(got))
	}
	l, err := sdk.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b})
	if err != nil || len(l.Contents) != 1 || *l.Contents[0].Size != int64(len(v1)) {
		t.Fatalf("listing after the crash: %v", err)
	}
	// a client that drops its connection: the gateway cleans up at once
	baseline := c.countObjects("default.rgw.buckets.data")
	pr2, pw2 := io.Pipe()
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		pr2.CloseWithError(streamPut(cctx, sdk, *b, "dropped", pr2, 32<<20))
	}()
	for sent := 0; sent < 16<<20; sent += len(chunk) {
		pw2.Write(chunk)
	}
	// wait until the gateway has written tails of it
	before := c.countObjects("default.rgw.buckets.data")
	for deadline := time.Now().Add(30 * time.Second); before <= baseline && time.Now().Before(deadline); {
		pw2.Write(chunk)
		before = c.countObjects("default.rgw.buckets.data")
	}
	if before <= baseline {
		t.Fatalf("no tails written for 16 MiB and more of a PUT: %d objects before it, %d during", baseline, before)
	}
	cancel()
	pw2.Close()
	deadline := time.Now().Add(30 * time.Second)
	for c.countObjects("default.rgw.buckets.data") > baseline && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := sdk.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("dropped")}); err == nil {
		t.Fatal("a dropped upload left a visible object")
	}
	if now := c.countObjects("default.rgw.buckets.data"); now != baseline {
		t.Fatalf("a dropped upload's tails stayed: %d objects before the upload, %d during, %d after", baseline, before, now)
	}
	conditionalRacesWithOSDKilled(ctx, t, c, sdk, *b)
	multiDeleteKilled(ctx, t, c, sdk)
	versionedWritesKilled(ctx, t, c, sdk)
}

// versionedWritesKilled runs versioned PUTs and deletes (markers, and
// removals of acknowledged versions) of three keys from 6 writers, and
// kills with SIGKILL first the gateway and then, through the restarted
// gateway, osd.2: afterwards every acknowledged version reads back by
// its id with its bytes and is listed, no removed version is, and every
// listed version is one a writer sent (whole).
func versionedWritesKilled(ctx context.Context, t *testing.T, c *tcluster, sdk *s3.Client) {
	const bucket = "versioned"
	// created with object lock (no retention): versioned at once
	if _, err := sdk.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	type version struct{ key, id string }
	var mu sync.Mutex
	acked := map[version][]byte{} // acknowledged versions (nil: a delete marker)
	removed := map[version]bool{}
	var sent sync.Map // body → true: every body a writer sent
	body := func(w, i int) []byte {
		b := bytes.Repeat(fmt.Appendf(nil, "writer %d put %d ", w, i), 1+(i%5)*3000) // up to ~300 KiB: head-less tails
		sent.Store(string(b), true)
		return b
	}
	// run writes until stop; a failed request ends it in round 0 (the
	// gateway is gone) and is counted in round 1 (the OSD's failover).
	var failed atomic.Int64
	run := func(stop <-chan struct{}, round, w int, errs chan<- error) {
		r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
		fail := func(err error) bool {
			failed.Add(1)
			if round == 0 {
				errs <- err
				return true
			}
			return false
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			key := fmt.Sprintf("k%d", r.IntN(3))
			switch op := r.IntN(10); {
			case op < 7:
				b := body(10*round+w, i)
				out, err := sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: &key, Body: bytes.NewReader(b)})
				if err != nil {
					if fail(err) {
						return
					}
					continue
				}
				mu.Lock()
				acked[version{key, *out.VersionId}] = b
				mu.Unlock()
			case op < 8:
				out, err := sdk.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: &key})
				if err != nil {
					if fail(err) {
						return
					}
					continue
				}
				mu.Lock()
				acked[version{key, *out.VersionId}] = nil
				mu.Unlock()
			default: // remove an acknowledged version
				mu.Lock()
				var v version
				for v = range acked {
					break
				}
				delete(acked, v) // from here its fate is unknown until answered
				mu.Unlock()
				if v.id == "" {
					continue
				}
				if _, err := sdk.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: &v.key, VersionId: &v.id}); err != nil {
					if fail(err) {
						return
					}
					continue
				}
				mu.Lock()
				removed[v] = true
				mu.Unlock()
			}
		}
	}
	// round 1: the gateway dies under the writers; round 2: osd.2
	for round, victim := range []string{gatewayPidName, "osd.2"} {
		stop := make(chan struct{})
		errs := make(chan error, 6)
		for w := range 6 {
			go run(stop, round, w, errs)
		}
		for deadline := time.Now().Add(60 * time.Second); ; {
			mu.Lock()
			n := len(acked) + len(removed)
			mu.Unlock()
			if n >= 40*(round+1) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d versioned writes acknowledged in 60 s", round, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.kill9(victim)
		if victim == "osd.2" { // the cluster keeps serving: write on through the failover
			mu.Lock()
			n := len(acked) + len(removed)
			mu.Unlock()
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				mu.Lock()
				m := len(acked) + len(removed)
				mu.Unlock()
				if m >= n+20 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no versioned write acknowledged in 60 s after osd.2 was killed")
				}
			}
		}
		close(stop)
		for range 6 {
			<-errs
		}
		c.up()
	}
	listed := map[version]bool{}
	p := s3.NewListObjectVersionsPaginator(sdk, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(7)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			listed[version{*v.Key, *v.VersionId}] = true
		}
		for _, d := range page.DeleteMarkers {
			listed[version{*d.Key, *d.VersionId}] = true
		}
	}
	for v, want := range acked {
		if !listed[v] {
			t.Fatalf("acknowledged version %s/%s is not listed", v.key, v.id)
		}
		if want == nil {
			continue
		}
		out, err := sdk.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: &v.key, VersionId: &v.id})
		if err != nil {
			t.Fatalf("acknowledged version %s/%s: %v", v.key, v.id, err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("acknowledged version %s/%s reads %d bytes (%v), want %d", v.key, v.id, len(got), err, len(want))
		}
	}
	extra := 0
	for v := range listed {
		if removed[v] {
			t.Fatalf("removed version %s/%s is listed", v.key, v.id)
		}
		if _, ok := acked[v]; ok {
			continue
		}
		extra++ // a write whose answer the kill lost: whole, and a writer's
		out, err := sdk.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: &v.key, VersionId: &v.id})
		if isDeleteMarker(err) {
			continue
		}
		if err != nil {
			t.Fatalf("listed version %s/%s: %v", v.key, v.id, err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if _, ok := sent.Load(string(got)); !ok {
			t.Fatalf("listed version %s/%s holds %d bytes no writer sent", v.key, v.id, len(got))
		}
	}
	t.Logf("versioned writes through a gateway kill and an OSD kill: %d acknowledged versions kept, %d removed, %d unacknowledged listed, %d requests failed", len(acked), len(removed), extra, failed.Load())
}

// mustReadFile reads a file the test wrote.
func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// isDeleteMarker reports whether a GET by version id found a delete marker.
func isDeleteMarker(err error) bool {
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.Response != nil && re.Response.Header.Get("x-amz-delete-marker") == "true"
}

// multiDeleteKilled kills the gateway with SIGKILL while multi-object
// deletes run (16 keys at a time, rgw_multi_obj_del_max_aio): after a
// restart every key is either whole (listed, and read back with its
// bytes) or gone (neither listed nor readable), the data pool holds
// exactly the heads of the keys still there, and the index holds at most
// the deletes that were in flight as entries without a head, which
// `shoal bucket check --check-objects --fix` drops.
func multiDeleteKilled(ctx context.Context, t *testing.T, c *tcluster, sdk *s3.Client) {
	const bucket, n, per = "multidel", 2400, 800
	if _, err := sdk.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	const data = "default.rgw.buckets.data"
	base := c.countObjects(data)
	key := func(i int) string { return fmt.Sprintf("k%05d", i) }
	body := func(i int) []byte { return fmt.Appendf(nil, "the body of %s", key(i)) }
	errs := make(chan error, 16)
	for w := range 16 {
		go func() {
			var err error
			for i := w; i < n && err == nil; i += 16 {
				_, err = sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key(i)), Body: bytes.NewReader(body(i))})
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := c.countObjects(data); got != base+n {
		t.Fatalf("%d objects in the data pool after %d PUTs of small objects, want %d", got, n, base+n)
	}
	// n/per requests one after another; the gateway dies once a few
	// hundred heads are gone, inside one of them
	deleted := make(chan error, 1)
	go func() {
		for r := 0; r < n/per; r++ {
			var ids []types.ObjectIdentifier
			for i := r * per; i < (r+1)*per; i++ {
				ids = append(ids, types.ObjectIdentifier{Key: aws.String(key(i))})
			}
			if _, err := sdk.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}}); err != nil {
				deleted <- err
				return
			}
		}
		deleted <- nil
	}()
	for deadline := time.Now().Add(60 * time.Second); c.countObjects(data) > base+n-200; {
		if time.Now().After(deadline) {
			t.Fatal("multi-object deletes removed fewer than 200 heads in 60 s")
		}
	}
	c.kill9(gatewayPidName)
	if err := <-deleted; err == nil {
		t.Fatalf("every multi-object delete succeeded: the gateway died after them, not during them")
	}
	c.up()
	list := func() map[string]bool {
		listed := map[string]bool{}
		p := s3.NewListObjectsV2Paginator(sdk, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				listed[*o.Key] = true
			}
		}
		return listed
	}
	listed := list()
	present := 0
	for i := range n {
		out, err := sdk.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key(i))})
		var got []byte
		if err == nil {
			got, err = io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				t.Fatalf("%s: %v", key(i), err)
			}
		} else if nsk := (*types.NoSuchKey)(nil); !errors.As(err, &nsk) {
			t.Fatalf("%s: %v", key(i), err)
		}
		switch readable := err == nil; {
		case readable && !bytes.Equal(got, body(i)):
			t.Fatalf("%s reads %q after the crash, want %q", key(i), got, body(i))
		case readable != listed[key(i)]:
			t.Fatalf("%s: readable %v but listed %v after the crash", key(i), readable, listed[key(i)])
		case readable:
			present++
		}
	}
	if present == 0 || present == n {
		t.Fatalf("%d of %d keys left: the kill did not land among the deletes", present, n)
	}
	if len(listed) != present {
		t.Fatalf("%d keys listed, %d readable", len(listed), present)
	}
	if got := c.countObjects(data); got != base+present {
		t.Fatalf("%d objects in the data pool, want %d (%d before the bucket, %d keys left)", got, base+present, base, present)
	}
	// the index may still hold entries of the deletes in flight (at most
	// 16, each with its pending marker: the listing already hides them);
	// --fix drops them
	stale := func(fix ...string) int {
		var rep struct {
			StaleEntries int `json:"stale_entries"`
		}
		if err := json.Unmarshal([]byte(c.must(append([]string{"bucket", "check", bucket, "--check-objects"}, fix...)...)), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.StaleEntries
	}
	if k := stale("--fix"); k > 16 {
		t.Fatalf("bucket check after the crash: %d entries without their head, more than the 16 deletes in flight", k)
	}
	if k := stale(); k != 0 {
		t.Fatalf("bucket check --fix left %d entries without their head", k)
	}
	if after := list(); !maps.Equal(after, listed) {
		t.Fatalf("bucket check --fix changed the listing: %d keys before, %d after", len(listed), len(after))
	}
	t.Logf("gateway killed amid multi-object deletes: %d of %d keys left, each whole or gone", present, n)
}

// conditionalRacesWithOSDKilled runs rounds of 4 PUTs racing with If-Match
// on the object's current ETag while osd.1 is killed with SIGKILL (after
// round 3) and restarted (after round 8): in every round at most one
// racer is acknowledged, and the object then holds its body — or, with
// none acknowledged, the previous body or a racer's (a write whose answer
// the kill lost) — whole.
func conditionalRacesWithOSDKilled(ctx context.Context, t *testing.T, c *tcluster, sdk *s3.Client, bucket string) {
	t.Helper()
	key := "raced"
	body := func(round, writer int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("round %d writer %d ", round, writer)), 4<<10)
	}
	cur := body(0, 0)
	put, err := sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(cur)})
	if err != nil {
		t.Fatal(err)
	}
	etag := *put.ETag
	won := 0 // rounds with a winner acknowledged
	for round := 1; round <= 12; round++ {
		switch round {
		case 4:
			c.kill9("osd.1")
		case 9:
			c.up()
		}
		acked := make(chan int, 4)
		errs := make(chan error, 4)
		for w := range 4 {
			go func() {
				_, err := sdk.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body(round, w)), IfMatch: &etag})
				if err == nil {
					acked <- w
				}
				errs <- err
			}()
		}
		for range 4 {
			<-errs
		}
		close(acked)
		var winners []int
		for w := range acked {
			winners = append(winners, w)
		}
		out, err := sdk.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		possible := [][]byte{cur}
		for w := range 4 {
			possible = append(possible, body(round, w))
		}
		switch {
		case len(winners) > 1:
			t.Fatalf("round %d: writers %v all acknowledged with If-Match on one ETag", round, winners)
		case len(winners) == 1 && !bytes.Equal(got, body(round, winners[0])):
			t.Fatalf("round %d: writer %d acknowledged, the object holds %.30q…", round, winners[0], got)
		case !slices.ContainsFunc(possible, func(p []byte) bool { return bytes.Equal(p, got) }):
			t.Fatalf("round %d: the object holds %.30q… (%d bytes), neither the previous body nor a racer's", round, got, len(got))
		}
		cur, etag = got, *out.ETag
		won += len(winners)
	}
	if won == 0 {
		t.Fatal("no conditional PUT was acknowledged in 12 rounds")
	}
	t.Logf("conditional races: a winner acknowledged in %d of 12 rounds (osd.1 killed after round 3, restarted after round 8)", won)
}

const gatewayPidName = "client.rgw.gateway"

// countObjects counts a pool's objects with `shoal rados ls`.
func (c *tcluster) countObjects(pool string) int {
	c.t.Helper()
	out := c.must("rados", "-p", pool, "ls")
	return strings.Count(out, "\n")
}

// streamPut PUTs n bytes from body through a presigned URL (a plain
// HTTP client streaming a body it cannot rewind).
func streamPut(ctx context.Context, sdk *s3.Client, bucket, key string, body io.Reader, n int64) error {
	ps, err := s3.NewPresignClient(sdk).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, ps.URL, body)
	if err != nil {
		return err
	}
	req.ContentLength = n
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("PUT: %s: %s", resp.Status, b)
	}
	return nil
}

// maxTreeFiles bounds the tree copyTree makes (the first files in
// lexical order): thousands, whatever the machine has installed.
const maxTreeFiles = 1200

// copyTree copies the regular files of dir (following symlinks, skipping
// dangling ones and anything unreadable) into a temporary directory, at
// most maxTreeFiles of them.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		st, err := os.Stat(p) // follows symlinks
		if err != nil || !st.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		if n++; n == maxTreeFiles {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil || n < 1000 {
		t.Fatalf("copy of %s: %d files, %v (the test wants a real tree of thousands)", dir, n, err)
	}
	return dst
}

// TestTwoGatewayProcesses: a second `shoal gateway` process beside the one
// `shoal up` started sees the same users, buckets and objects at once,
// and refuses writes to a bucket the other deleted (its cached entry
// point notwithstanding).
func TestTwoGatewayProcesses(t *testing.T) {
	c := upWithGateway(t)
	env := c.s3env()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	gw := exec.Command(shoalBin, "gateway", "--conf", filepath.Join(c.data, "shoal.conf"), "--id", "second", "--listen", addr)
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Process.Kill(); gw.Wait() })
	second := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r, err := http.Get(second); err == nil {
			r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second gateway did not start serving")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// a user made with the CLI works on both at once
	out := c.must("user", "create", "carol", "--access-key", "CAROL0000000000000001", "--secret", "carolsecret000000000000000000000000000001")
	if !strings.Contains(out, "CAROL0000000000000001") {
		t.Fatalf("user create: %s", out)
	}
	sdk := func(endpoint string) *s3.Client {
		return s3.New(s3.Options{Region: "default", BaseEndpoint: aws.String(endpoint), UsePathStyle: true, RetryMaxAttempts: 1,
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
			Credentials:                credentials.NewStaticCredentialsProvider("CAROL0000000000000001", "carolsecret000000000000000000000000000001", "")})
	}
	a, b := sdk(env["S3_ENDPOINT"]), sdk(second)
	ctx := context.Background()
	bucket := aws.String("shared")
	if _, err := a.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: bucket}); err != nil {
		t.Fatalf("the second gateway does not see the new bucket: %v", err)
	}
	data := bytes.Repeat([]byte("two gateways "), 500_000) // 6.5 MiB: head and tails
	if _, err := b.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("k"), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	got, err := a.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(body, data) {
		t.Fatalf("read through the first gateway: %d bytes, want %d", len(body), len(data))
	}
	if l, err := a.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: bucket}); err != nil || len(l.Contents) != 1 || *l.Contents[0].Key != "k" {
		t.Fatalf("listing through the first gateway: %v", err)
	}
	// deleted through one, the bucket takes no more writes through the other
	if _, err := a.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	_, err = b.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("late"), Body: strings.NewReader("x")})
	var ae interface{ ErrorCode() string }
	if !errors.As(err, &ae) || ae.ErrorCode() != "NoSuchBucket" {
		t.Fatalf("PUT into a bucket the other gateway deleted: %v, want NoSuchBucket", err)
	}
}
