package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// composeCluster is a cluster that `shoal deploy compose` wrote and Docker
// Compose runs: its files, its project name and its client configuration.
type composeCluster struct {
	t       *testing.T
	dir     string
	project string
}

func (c *composeCluster) compose(args ...string) string {
	c.t.Helper()
	out, err := exec.Command("docker-compose", append([]string{"-p", c.project, "-f", filepath.Join(c.dir, "docker-compose.yml")}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// shoal runs the host's shoal against the cluster.
func (c *composeCluster) shoal(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, shoalBin, append([]string{"-c", filepath.Join(c.dir, "shoal.conf")}, args...)...).CombinedOutput()
	return string(out), err
}

// waitStatus waits until `shoal status --format json` satisfies ok.
func (c *composeCluster) waitStatus(what string, timeout time.Duration, ok func(health string, states map[string]int, up, in, osds int) bool) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		out, err := c.shoal("status", "--format", "json")
		var st struct {
			Health   string         `json:"health"`
			States   map[string]int `json:"pgs_by_state"`
			OSDs     int            `json:"num_osds"`
			UpOSDs   int            `json:"num_up_osds"`
			InOSDs   int            `json:"num_in_osds"`
			NumPools int            `json:"num_pools"`
		}
		if err == nil && json.Unmarshal([]byte(out), &st) == nil && ok(st.Health, st.States, st.UpOSDs, st.InOSDs, st.OSDs) {
			return
		}
		last = out
		time.Sleep(time.Second)
	}
	s, _ := c.shoal("health", "detail")
	c.t.Fatalf("%s: not within %v: %s\n%s", what, timeout, last, s)
}

// TestComposeCluster deploys a cluster across containers as `shoal
// deploy compose` writes it — 3 MON, 5 OSD host and 2 gateway containers
// from the FROM-scratch image of deploy/Dockerfile, on their own network
// — writes objects through both gateways, kills one OSD host and one MON
// container, reads every object back through both while they are down
// (the PGs recovered onto the other hosts), starts them again and checks
// HEALTH_OK with every object intact. Skipped where there is no Docker
// engine.
func TestComposeCluster(t *testing.T) {
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("no Docker engine here (docker info: %v): the compose cluster test needs one", err)
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("no docker-compose here: the compose cluster test needs it")
	}
	// the image: TestMain's static binary, FROM scratch
	suffix := make([]byte, 4)
	rand.Read(suffix)
	tag := fmt.Sprintf("shoal-e2e:%x", suffix)
	ctxDir := t.TempDir()
	bin, err := os.ReadFile(shoalBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "shoal"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "build", "-q", "-f", "../../deploy/Dockerfile", "-t", tag, ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })

	c := &composeCluster{t: t, dir: t.TempDir(), project: fmt.Sprintf("shoale2e%x", suffix)}
	subnet := fmt.Sprintf("172.%d.%d.0/24", 29+int(suffix[0])%2, suffix[1])
	out, err := exec.Command(shoalBin, "deploy", "compose", c.dir, "--image", tag, "--subnet", subnet,
		"--set", "mon_osd_down_out_interval = 5", "--set", "osd_heartbeat_interval = 1", "--set", "osd_heartbeat_grace = 6").CombinedOutput()
	if err != nil {
		t.Fatalf("deploy compose: %v\n%s", err, out)
	}
	gateways := []string{}
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "S3:"); ok {
			gateways = strings.Fields(rest)
		}
	}
	if len(gateways) != 2 {
		t.Fatalf("deploy compose named gateways %v:\n%s", gateways, out)
	}
	// bad input: fewer OSD hosts than the pools' size
	if out, err := exec.Command(shoalBin, "deploy", "compose", t.TempDir(), "--osd-hosts", "2", "--pool-size", "3").CombinedOutput(); err == nil || !strings.Contains(string(out), "need at least 3") {
		t.Fatalf("2 OSD hosts for size 3: %v %s", err, out)
	}
	t.Cleanup(func() { // registered first: a failed `up` leaves containers too
		if t.Failed() {
			logs, _ := exec.Command("docker-compose", "-p", c.project, "-f", filepath.Join(c.dir, "docker-compose.yml"), "logs", "--tail", "40").CombinedOutput()
			t.Logf("container logs:\n%s", logs)
			for _, d := range []string{"mon-a", "osd-1", "gw-1"} {
				files, _ := filepath.Glob(filepath.Join(c.dir, d, "log", "*.log"))
				for _, f := range files {
					b, _ := os.ReadFile(f)
					t.Logf("--- %s (tail)\n%s", f, tail(b, 3000))
				}
			}
		}
		exec.Command("docker-compose", "-p", c.project, "-f", filepath.Join(c.dir, "docker-compose.yml"), "down", "-v", "--remove-orphans", "-t", "5").Run()
	})
	c.compose("up", "-d")
	c.waitStatus("5 OSDs up", 2*time.Minute, func(_ string, _ map[string]int, up, _, osds int) bool { return osds == 5 && up == 5 })
	if out, err := c.shoal("pool", "create", "data"); err != nil {
		t.Fatalf("pool create: %v %s", err, out)
	}
	if out, err := c.shoal("user", "create", "dana", "--access-key", "DANA00000000000000001", "--secret", "danasecret0000000000000000000000000000001"); err != nil {
		t.Fatalf("user create: %v %s", err, out)
	}
	clean := func(health string, states map[string]int, _, _, _ int) bool {
		return health == "HEALTH_OK" && len(states) == 1 && states["active+clean"] > 0
	}
	c.waitStatus("HEALTH_OK", 2*time.Minute, clean)

	sdk := func(endpoint string) *s3.Client {
		return s3.New(s3.Options{Region: "default", BaseEndpoint: aws.String("http://" + endpoint), UsePathStyle: true, RetryMaxAttempts: 3,
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
			Credentials:                credentials.NewStaticCredentialsProvider("DANA00000000000000001", "danasecret0000000000000000000000000000001", "")})
	}
	gw := []*s3.Client{sdk(gateways[0]), sdk(gateways[1])}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bucket := aws.String("spread")
	if _, err := gw[0].CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil {
		t.Fatal(err)
	}
	content := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("object %d;", i)), 1000+i*100) }
	const objects = 40
	for i := range objects { // half through each gateway
		if _, err := gw[i%2].PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprint("o", i)), Body: bytes.NewReader(content(i))}); err != nil {
			t.Fatalf("put o%d through gateway %d: %v", i, i%2+1, err)
		}
	}
	readAll := func(when string) {
		t.Helper()
		for i := range objects {
			for g, cl := range gw {
				r, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(fmt.Sprint("o", i))})
				if err != nil {
					t.Fatalf("%s: get o%d through gateway %d: %v", when, i, g+1, err)
				}
				b, err := io.ReadAll(r.Body)
				r.Body.Close()
				if err != nil || !bytes.Equal(b, content(i)) {
					t.Fatalf("%s: o%d through gateway %d: %d bytes, %v", when, i, g+1, len(b), err)
				}
			}
		}
	}
	readAll("after the writes")

	// one OSD host and one MON die
	c.compose("kill", "osd-3", "mon-b")
	c.waitStatus("osd-3's OSD down and out, PGs recovered on the other hosts", 3*time.Minute, func(_ string, states map[string]int, up, in, osds int) bool {
		return up == 4 && in == 4 && len(states) == 1 && states["active+clean"] > 0
	})
	readAll("with osd-3 and mon-b down")
	if _, err := gw[1].PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String("during"), Body: bytes.NewReader(content(99))}); err != nil {
		t.Fatalf("put with osd-3 and mon-b down: %v", err)
	}

	c.compose("start", "osd-3", "mon-b")
	c.waitStatus("HEALTH_OK with every container back", 3*time.Minute, func(health string, states map[string]int, up, in, osds int) bool {
		return clean(health, states, up, in, osds) && up == 5 && in == 5
	})
	readAll("after the restart")
	r, err := gw[0].GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String("during")})
	if err != nil {
		t.Fatalf("the object written while down: %v", err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !bytes.Equal(b, content(99)) {
		t.Fatalf("the object written while down: %d bytes", len(b))
	}
}
