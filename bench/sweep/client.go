package sweep

// Client processes. A rados point's procs run as that many operating
// system processes, as CBT runs one rados bench per client: each is
// `shoal bench sweep-client` (RunClient), started by the sweep with its
// job on standard input while it prepares the point (startClients). Each
// connects to the cluster and says it is ready; the point's measured
// window then begins, and the sweep tells them all to go (clientSet.run),
// so that their loads start together and connecting is not measured.
// While it runs, a client writes what it completed every clientFlush as
// a JSON line — operations, bytes, errors, the latencies' histogram and
// when its latest operation ended — which the sweep adds to the point's
// Recorder: per-second samples and percentiles over all the processes,
// and a window that ends with the last operation of any, as for a load
// in the sweep's own process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/bench"
	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cluster"
)

// ClientJob is a client process's work, sent as one JSON line: the
// cluster, the pool, and rados bench's options (bench.Options).
type ClientJob struct {
	Conf        string        `json:"conf"`        // the cluster's shoal.conf ("": cluster.FindConf's default)
	User        string        `json:"user"`        // entity to connect as ("": client.admin)
	Pool        string        `json:"pool"`        // pool to write to or read from
	Mode        bench.Mode    `json:"mode"`        // write, seq or rand
	BlockSize   int           `json:"block_size"`  // bytes per object and op (write)
	Concurrency int           `json:"concurrency"` // ops in flight
	Duration    time.Duration `json:"duration"`    // how long to start ops (nanoseconds in JSON)
	RunName     string        `json:"run_name"`    // metadata object: written by a write run, read by seq and rand
	Hostname    string        `json:"hostname"`    // the object names' host part (bench.ObjectPrefix)
}

// clientMsg is a line a client process writes: Ready (with its PID)
// once connected; samples (Ops … Max) while it runs; Done at the end, or
// Error.
type clientMsg struct {
	Ready  bool        `json:"ready,omitempty"`
	PID    int         `json:"pid,omitempty"`
	Ops    uint64      `json:"ops,omitempty"`
	Bytes  uint64      `json:"bytes,omitempty"`
	Errors uint64      `json:"errors,omitempty"`
	Lat    [][2]uint64 `json:"lat,omitempty"` // histogram buckets: index, count
	Sum    int64       `json:"sum_ns,omitempty"`
	Max    int64       `json:"max_ns,omitempty"`
	Last   int64       `json:"last_ns,omitempty"` // when the latest operation ended (Unix ns)
	Done   bool        `json:"done,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// clientFlush is how often a client process reports: a per-second
// sample is off by at most this much of its second's operations.
const clientFlush = 25 * time.Millisecond

// clientReady is how long the sweep waits for its client processes to
// connect; clientCleanup how long one may take to remove what a failed
// write run wrote, once interrupted.
const (
	clientReady   = 90 * time.Second
	clientCleanup = 5 * time.Minute
)

// RunClient is `shoal bench sweep-client`: it reads a ClientJob (one
// JSON line) from in, connects, writes a ready line to out, waits for a
// "go" line, runs the load and reports it on out until it ends, then
// writes done (or an error, after removing what a failed write run
// wrote). Its rados bench text goes to log. in closing before the load
// ends stops it (the sweep went away).
func RunClient(ctx context.Context, in io.Reader, out, log io.Writer) error {
	enc := json.NewEncoder(out)
	fail := func(err error) error {
		enc.Encode(clientMsg{Error: err.Error()})
		return err
	}
	lines := bufio.NewScanner(in)
	var job ClientJob
	if !lines.Scan() {
		return fail(fmt.Errorf("sweep client: no job: %v", lines.Err()))
	}
	if err := json.Unmarshal(lines.Bytes(), &job); err != nil {
		return fail(fmt.Errorf("sweep client: job: %w", err))
	}
	conf, err := cluster.FindConf(job.Conf)
	if err != nil {
		return fail(fmt.Errorf("sweep client: %w", err))
	}
	conn, err := connect(ctx, conf, job.User)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	pool, err := conn.Pool(ctx, job.Pool)
	if err != nil {
		return fail(fmt.Errorf("sweep client: pool %s: %w", job.Pool, err))
	}
	if err := enc.Encode(clientMsg{Ready: true, PID: os.Getpid()}); err != nil {
		return err
	}
	if !lines.Scan() || lines.Text() != "go" {
		return fmt.Errorf("sweep client: no go from the sweep: %v", lines.Err())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // owned by RunClient: ends with in (the sweep's end or ours)
		for lines.Scan() {
		}
		cancel()
	}()

	rec := &Recorder{}
	done := make(chan error, 1)
	go func() {
		o := bench.Options{Mode: job.Mode, BlockSize: job.BlockSize, Concurrency: job.Concurrency, Duration: job.Duration,
			NoCleanup: true, RunName: job.RunName, Hostname: job.Hostname, PID: 1, IsNotFound: isNotFound, Out: log}
		res, err := bench.Run(ctx, recTarget{pool, rec}, o)
		if err != nil && job.Mode == bench.ModeWrite {
			removeWritten(pool, res, log) // a failed run records no metadata for the sweep to clean up by
		}
		done <- err
	}()
	tick := time.NewTicker(clientFlush)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if err := enc.Encode(clientSample(rec)); err != nil {
				cancel()
				return errors.Join(err, <-done)
			}
		case err := <-done:
			if e := enc.Encode(clientSample(rec)); e != nil {
				return e
			}
			if err != nil {
				return fail(err)
			}
			return enc.Encode(clientMsg{Done: true})
		}
	}
}

// clientSample is what rec recorded since the last one, as a line.
func clientSample(rec *Recorder) clientMsg {
	last := rec.lastAt()
	s, errs := rec.cut()
	m := clientMsg{Ops: s.ops, Bytes: s.bytes, Errors: errs, Sum: int64(s.lat.sum), Max: int64(s.lat.max)}
	if !last.IsZero() {
		m.Last = last.UnixNano()
	}
	for b, c := range s.lat.counts {
		if c > 0 {
			m.Lat = append(m.Lat, [2]uint64{uint64(b), c})
		}
	}
	return m
}

// lastBucket is the histogram bucket of the longest duration: a sample
// naming a later one is not a latency (it is dropped).
var lastBucket = uint64(bucketOf(math.MaxInt64))

// add records a client's sample in rec.
func (m clientMsg) add(rec *Recorder) {
	var h Histogram
	for _, bc := range m.Lat {
		if bc[0] <= lastBucket {
			h.AddN(lowOf(int(bc[0])), bc[1]) // the bucket's own (sum and max are the client's)
		}
	}
	h.sum, h.max = time.Duration(m.Sum), time.Duration(m.Max)
	var last time.Time
	if m.Last != 0 {
		last = time.Unix(0, m.Last)
	}
	rec.merge(m.Ops, m.Bytes, m.Errors, &h, last)
}

// clientSet is a point's client processes, connected and waiting for
// the word to go (startClients).
type clientSet struct {
	procs  []*clientProc
	cancel context.CancelFunc // interrupts them (SIGINT)
}

// startClients starts a point's n client processes, each started by
// start (the i-th) under a context of its own and given job(i) on its
// standard input, and waits until all have connected (at most
// clientReady); the first process's rados bench text goes to out. Its
// error names the process that failed and what it wrote on its standard
// error. The set must be stopped (stop) once done with.
func startClients(ctx context.Context, n int, start func(ctx context.Context, i int) *exec.Cmd, job func(i int) ClientJob, out io.Writer) (*clientSet, error) {
	ctx, cancel := context.WithCancel(ctx)
	cs := &clientSet{cancel: cancel}
	fail := func(err error) (*clientSet, error) {
		cs.stop()
		return nil, err
	}
	for i := range n {
		cmd := start(ctx, i)
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = clientCleanup + 30*time.Second // a write run removes its objects first
		p := &clientProc{cmd: cmd, stderr: &tailBuffer{max: 4 << 10}}
		cmd.Stderr = p.stderr
		if i == 0 {
			cmd.Stderr = io.MultiWriter(out, p.stderr)
		}
		var err error
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			return fail(err)
		}
		if p.stdout, err = cmd.StdoutPipe(); err != nil {
			return fail(err)
		}
		p.lines = bufio.NewScanner(p.stdout)
		p.lines.Buffer(nil, 1<<20)
		if err := cmd.Start(); err != nil {
			return fail(fmt.Errorf("client process %d: %w", i, err))
		}
		cs.procs = append(cs.procs, p)
		b, _ := json.Marshal(job(i))
		if _, err := p.stdin.Write(append(b, '\n')); err != nil {
			return fail(fmt.Errorf("client process %d: %w%s", i, err, p.ended()))
		}
	}
	// each says it is ready (connected), or why not; all at once, so a
	// failure ends the wait for the others
	type ready struct {
		i   int
		err error
	}
	readies := make(chan ready, n)
	pids := make([]int, n)
	for i, p := range cs.procs {
		go func() { // ends with the process's output (stop)
			m, err := p.next()
			switch {
			case err != nil:
				err = fmt.Errorf("client process %d: %w", i, err)
			case !m.Ready:
				err = fmt.Errorf("client process %d: %s", i, m.Error)
			default:
				pids[i] = m.PID
			}
			readies <- ready{i, err}
		}()
	}
	timeout := time.NewTimer(clientReady)
	defer timeout.Stop()
	for range n {
		select {
		case r := <-readies:
			if r.err != nil {
				cs.cancel()
				return fail(fmt.Errorf("%w%s", r.err, cs.procs[r.i].ended()))
			}
		case <-timeout.C:
			return fail(fmt.Errorf("client processes: not all connected within %v", clientReady))
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	fmt.Fprintf(out, "%d client process(es), pids %v\n", n, pids)
	return cs, nil
}

// run tells the processes to go and records their samples in rec until
// all have ended, with their errors joined; one failing, or ctx ending,
// interrupts the others.
func (cs *clientSet) run(ctx context.Context, rec *Recorder) error {
	stop := context.AfterFunc(ctx, cs.cancel)
	defer stop()
	for _, p := range cs.procs {
		io.WriteString(p.stdin, "go\n")
	}
	errs := make([]error, len(cs.procs))
	var wg sync.WaitGroup
	for i, p := range cs.procs {
		wg.Go(func() {
			for {
				m, err := p.next()
				if err != nil {
					cs.cancel() // one failed: stop the others (and it, if it lives)
					errs[i] = fmt.Errorf("client process %d: %w%s", i, err, p.ended())
					return
				}
				m.add(rec)
				if m.Error != "" {
					cs.cancel()
					errs[i] = fmt.Errorf("client process %d: %s", i, m.Error)
				}
				if m.Done || m.Error != "" {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stop interrupts the processes still running and waits for them.
func (cs *clientSet) stop() {
	cs.cancel()
	for _, p := range cs.procs {
		p.stdin.Close()
		p.ended()
	}
}

// clientProc is a running client process: its standard input, the
// lines of its standard output, and the end of its standard error.
type clientProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	lines  *bufio.Scanner
	stderr *tailBuffer
	once   sync.Once
	err    error // cmd.Wait's
}

// ended waits for the process to end (reading what is left of its
// output: it would block on a full pipe) and returns, for an error
// message, how it ended and the end of what it wrote on its standard
// error. Only the process's reader calls it, once it reads no more.
func (p *clientProc) ended() string {
	p.once.Do(func() {
		io.Copy(io.Discard, p.stdout)
		p.err = p.cmd.Wait()
	})
	s := p.stderr.suffix()
	if p.err != nil {
		return " (" + p.err.Error() + ")" + s
	}
	return s
}

// next reads the process's next line.
func (p *clientProc) next() (clientMsg, error) {
	var m clientMsg
	if !p.lines.Scan() {
		if err := p.lines.Err(); err != nil {
			return m, err
		}
		return m, errors.New("ended without a word")
	}
	err := json.Unmarshal(p.lines.Bytes(), &m)
	return m, err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// suffix is ": " and the kept text, or "".
func (t *tailBuffer) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(bytes.ToValidUTF8(t.b, nil)))
	if s == "" {
		return ""
	}
	return ": " + s
}

// connect connects to a Shoal cluster as user (client.admin if "").
func connect(ctx context.Context, conf *cluster.Conf, user string) (*client.Conn, error) {
	if user == "" {
		user = "client.admin"
	}
	user = "client." + strings.TrimPrefix(user, "client.")
	kr, err := conf.Keyring(user)
	if err != nil {
		return nil, fmt.Errorf("sweep: target: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ccfg, err := conf.ClientConfig(user, kr)
	if err != nil {
		return nil, fmt.Errorf("sweep: target: %w", err)
	}
	conn, err := client.Connect(cctx, ccfg)
	if err != nil {
		return nil, fmt.Errorf("sweep: target: connect to %s: %w", strings.Join(conf.MonAddrs(), ","), err)
	}
	return conn, nil
}
