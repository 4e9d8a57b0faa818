package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// fakeClientEnv makes the test binary a fake client process
// (fakeClient): it speaks RunClient's protocol without a cluster.
const fakeClientEnv = "SHOAL_SWEEP_FAKE_CLIENT"

func TestMain(m *testing.M) {
	if os.Getenv(fakeClientEnv) != "" {
		fakeClient()
	}
	os.Exit(m.Run())
}

// fakeClient, run by clientProcs in the tests below (the test binary as
// a child process with fakeClientEnv set), reads its job, says it is
// ready, waits for go and reports 100 operations of BlockSize bytes with
// latencies of 1..100 ms and one error, then done. Pool "fail" reports
// an error instead; "forever" reports until it is stopped; "die" exits
// before it is ready.
func fakeClient() {
	enc := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	var job ClientJob
	if !in.Scan() || json.Unmarshal(in.Bytes(), &job) != nil {
		os.Exit(3)
	}
	if job.Pool == "die" {
		fmt.Fprintln(os.Stderr, "no such cluster")
		os.Exit(1)
	}
	enc.Encode(clientMsg{Ready: true, PID: os.Getpid()})
	if !in.Scan() || in.Text() != "go" {
		os.Exit(4)
	}
	rec := &Recorder{}
	for i := range 100 {
		rec.Op(job.BlockSize, time.Duration(i+1)*time.Millisecond, nil) // Op notes when (the Recorder's last)
		if i%50 == 49 {
			enc.Encode(clientSample(rec))
		}
	}
	rec.Op(0, 0, fmt.Errorf("one failed op"))
	switch job.Pool {
	case "fail":
		enc.Encode(clientMsg{Error: "boom"})
	case "forever":
		for {
			enc.Encode(clientSample(rec))
			rec.Op(job.BlockSize, time.Millisecond, nil)
			time.Sleep(clientFlush) // a load's pace, not synchronisation
		}
	default:
		enc.Encode(clientSample(rec))
		enc.Encode(clientMsg{Done: true})
	}
	os.Exit(0)
}

func fakeClients(pools ...string) (func(context.Context, int) *exec.Cmd, func(int) ClientJob) {
	start := func(ctx context.Context, _ int) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), fakeClientEnv+"=1")
		return cmd
	}
	job := func(i int) ClientJob { return ClientJob{Pool: pools[i], BlockSize: 4096} }
	return start, job
}

// runClients starts the fake client processes (one per pool) and runs
// them into rec.
func runClients(ctx context.Context, rec *Recorder, out *bytes.Buffer, pools ...string) error {
	start, job := fakeClients(pools...)
	cs, err := startClients(ctx, len(pools), start, job, out)
	if err != nil {
		return err
	}
	defer cs.stop()
	return cs.run(ctx, rec)
}

// TestClientProcs: a point's client processes report into one Recorder
// (operations, bytes, errors and every latency, the percentiles over all
// of them, and the latest operation's end); one failing stops the others
// and names its error; one that dies before it is ready says what it
// wrote; ones that never get to run are stopped.
func TestClientProcs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := &Recorder{}
	var out bytes.Buffer
	before := time.Now()
	if err := runClients(ctx, rec, &out, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "3 client process(es), pids [") {
		t.Fatalf("output: %q", out.String())
	}
	if last := rec.lastAt(); last.Before(before) || last.After(time.Now()) {
		t.Fatalf("last operation at %v, outside the run (%v on)", last, before)
	}
	s, errs := rec.cut()
	if s.ops != 300 || s.bytes != 300*4096 || errs != 3 || s.lat.Count() != 300 {
		t.Fatalf("recorded %d ops, %d bytes, %d errors, %d latencies", s.ops, s.bytes, errs, s.lat.Count())
	}
	// latencies 1..100 ms in each process: the median 50 ms, the max 100
	if p50 := s.lat.Quantile(0.5); p50 < 49*time.Millisecond || p50 > 51*time.Millisecond || s.lat.Max() != 100*time.Millisecond {
		t.Fatalf("p50 %v, max %v", p50, s.lat.Max())
	}
	if m := s.lat.Mean(); m < 50*time.Millisecond || m > 51*time.Millisecond {
		t.Fatalf("mean %v, want 50.5 ms", m)
	}

	err := runClients(ctx, &Recorder{}, &out, "forever", "fail", "forever")
	if err == nil || !strings.Contains(err.Error(), "client process 1: boom") {
		t.Fatalf("a failing process: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the others were not stopped")
	}

	err = runClients(ctx, &Recorder{}, &out, "a", "die")
	if err == nil || !strings.Contains(err.Error(), "client process 1") || !strings.Contains(err.Error(), "no such cluster") {
		t.Fatalf("a process that died: %v", err)
	}

	// started, never told to go: stop ends them (interrupted; a real one
	// also sees its input close)
	start, job := fakeClients("a", "b")
	cs, err := startClients(ctx, 2, start, job, &out)
	if err != nil {
		t.Fatal(err)
	}
	cs.stop()
	for i, p := range cs.procs {
		if st := p.cmd.ProcessState; st == nil || st.Success() {
			t.Errorf("client process %d never told to go: %v after stop", i, st)
		}
	}
}

// TestRunClientBadJob: a client process given a job it cannot run says
// why on its output, as its protocol's error line, before connecting.
func TestRunClientBadJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for in, want := range map[string]string{
		"":                                       "no job",
		"{not json\n":                            "job:",
		`{"conf": "/nonexistent/x.conf"}` + "\n": "no cluster configuration",
	} {
		var out, log bytes.Buffer
		err := RunClient(ctx, strings.NewReader(in), &out, &log)
		var m clientMsg
		if err == nil || !strings.Contains(err.Error(), want) || json.Unmarshal(out.Bytes(), &m) != nil || m.Error != err.Error() {
			t.Errorf("job %q: %v, output %q", in, err, out.String())
		}
	}
}
