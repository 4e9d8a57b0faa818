// Package bench is a load generator equivalent to Ceph's `rados bench`
// (src/common/obj_bencher.cc): it keeps a fixed number of whole-object
// writes or reads in flight against a pool for a given time, prints the
// same per-second table and summary as rados bench, and verifies every byte
// it reads back.
//
// A "write" run writes objects named benchmark_data_<hostname>_<pid>_object<N>
// (N = 0, 1, 2, ...), each with content derived from its prefix, index and
// size. With NoCleanup it then records the run in a metadata object
// (Options.RunName, default "benchmark_last_metadata") so that a later "seq"
// or "rand" run, possibly from another process or host, reads exactly those
// objects back; otherwise it removes the objects it wrote. Cleanup removes
// what a NoCleanup run left behind, like `rados -p POOL cleanup`.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Target is the pool the benchmark drives (the client library's pool handle
// satisfies it). All methods are called from several goroutines at once.
type Target interface {
	// WriteFull replaces the object's whole content with data, creating the
	// object if needed. The benchmark reuses data after WriteFull returns,
	// so an implementation must not keep a reference to it.
	WriteFull(ctx context.Context, oid string, data []byte) error
	// Read returns up to length bytes from offset off (length 0 = to the
	// end). A missing object returns an error for which Options.IsNotFound
	// reports true.
	Read(ctx context.Context, oid string, off, length uint64) ([]byte, error)
	// Remove deletes the object. A missing object returns an error for which
	// Options.IsNotFound reports true (Cleanup ignores those).
	Remove(ctx context.Context, oid string) error
}

// RefReader is a Target that can read without copying (the client
// library's pool handle: Pool.ReadRef): data stays valid until release.
// The benchmark checks read data in place, as rados bench checks the
// buffer librados read into, and then releases it.
type RefReader interface {
	ReadRef(ctx context.Context, oid string, off, length uint64) (data []byte, release func(), err error)
}

// Mode is the benchmark to run: ModeWrite, ModeSeq or ModeRand, the
// `rados bench SECONDS write|seq|rand` argument.
type Mode string

const (
	// ModeWrite writes whole objects (op size = object size).
	ModeWrite Mode = "write"
	// ModeSeq reads the objects of a previous write --no-cleanup run in
	// order, until all have been read or Duration has passed.
	ModeSeq Mode = "seq"
	// ModeRand reads random objects of a previous write --no-cleanup run
	// until Duration has passed.
	ModeRand Mode = "rand"
)

// Defaults, as rados bench.
const (
	// DefaultBlockSize is the op and object size, rados bench -b: 4 MiB.
	DefaultBlockSize = 4 << 20
	// DefaultConcurrency is the number of ops in flight, rados bench -t.
	DefaultConcurrency = 16
	// DefaultDuration is the run time, rados bench SECONDS.
	DefaultDuration = 60 * time.Second
	// DefaultRunName is the metadata object's name, rados bench --run-name
	// (BENCH_LASTRUN_METADATA in obj_bencher.cc).
	DefaultRunName = "benchmark_last_metadata"
)

// Errors returned (wrapped) by Run and Cleanup; test them with errors.Is.
var (
	// ErrNoMetadata: the metadata object of a write --no-cleanup run is
	// missing or empty, so seq, rand or Cleanup have no objects to use.
	ErrNoMetadata = errors.New("no objects from a previous write --no-cleanup run; run write with --no-cleanup first")
	// ErrVerify: a seq or rand run read an object whose content is not what
	// the write run stored (Result.VerifyFailures counts them).
	ErrVerify = errors.New("object content verification failed")
)

// Options configure Run; the zero value of each field selects the rados
// bench default.
type Options struct {
	// Mode is the benchmark: ModeWrite, ModeSeq or ModeRand (required).
	Mode Mode
	// BlockSize is the size in bytes of each object and op (rados bench -b);
	// 0 = DefaultBlockSize (4 MiB). Ignored by seq and rand, which use the
	// size recorded by the write run.
	BlockSize int
	// Concurrency is the number of ops kept in flight (-t); 0 = 16.
	Concurrency int
	// Duration is how long to keep starting ops (the SECONDS argument);
	// 0 = 60s. Ops in flight at the deadline are waited for.
	Duration time.Duration
	// MaxObjects stops a write run after that many objects
	// (rados bench --max-objects); 0 = no limit.
	MaxObjects int
	// NoCleanup (write mode, --no-cleanup) keeps the objects and writes the
	// metadata object RunName for later seq/rand runs and Cleanup.
	NoCleanup bool
	// RunName is the name of the metadata object (--run-name);
	// "" = DefaultRunName.
	RunName string
	// Hostname is used in the object prefix; "" = os.Hostname() cut to 29
	// bytes as obj_bencher.cc does.
	Hostname string
	// PID is used in the object prefix; 0 = os.Getpid().
	PID int
	// Out receives the per-second lines and the summary in rados bench's
	// text format; nil = discard.
	Out io.Writer
	// JSON, if set, writes only an indented JSON document of the Result to
	// Out at the end of the run, and no text.
	JSON bool
	// IsNotFound classifies errors from Target.Read and Target.Remove as
	// "object does not exist". nil = errors.Is(err, fs.ErrNotExist), or an
	// error in the chain with a NotFound() bool method that returns true.
	IsNotFound func(error) bool
}

// Result is the outcome of a run. Bandwidths are in MB/s where MB is
// 1048576 bytes (as rados bench computes them); latencies are in seconds.
// The per-second statistics (stddev, max, min of bandwidth and IOPS) are
// over the samples the per-second status line takes, as in obj_bencher.cc;
// a run shorter than one second has none, and then max = min = the average.
type Result struct {
	// Mode is the benchmark that ran.
	Mode Mode `json:"mode"`
	// ObjectPrefix is the prefix of the object names written or read.
	ObjectPrefix string `json:"object_prefix"`
	// Concurrency is the number of ops that were kept in flight.
	Concurrency int `json:"concurrency"`
	// TotalTime is the run time in seconds, from the first op started to
	// the last op completed (cleanup excluded).
	TotalTime float64 `json:"total_time_s"`
	// Ops is the number of ops completed ("Total writes made" /
	// "Total reads made").
	Ops int64 `json:"ops"`
	// OpSize is the bytes per op ("Write size" / "Read size").
	OpSize int `json:"op_size"`
	// ObjectSize is the size of each object in bytes.
	ObjectSize int `json:"object_size"`
	// Objects is the number of objects written (write) or in the set being
	// read (seq, rand).
	Objects int `json:"objects"`

	// BandwidthAvg is Ops*OpSize/TotalTime in MB/s.
	BandwidthAvg float64 `json:"bandwidth_mb_s"`
	// BandwidthStddev is the sample standard deviation of the per-second
	// bandwidth, MB/s.
	BandwidthStddev float64 `json:"bandwidth_stddev_mb_s"`
	// BandwidthMax is the highest per-second bandwidth, MB/s.
	BandwidthMax float64 `json:"bandwidth_max_mb_s"`
	// BandwidthMin is the lowest per-second bandwidth, MB/s.
	BandwidthMin float64 `json:"bandwidth_min_mb_s"`

	// IOPSAvg is Ops/TotalTime (the text output truncates it to an integer
	// as rados bench does).
	IOPSAvg float64 `json:"iops_avg"`
	// IOPSStddev is the sample standard deviation of the per-second IOPS.
	IOPSStddev float64 `json:"iops_stddev"`
	// IOPSMax is the highest per-second IOPS.
	IOPSMax int `json:"iops_max"`
	// IOPSMin is the lowest per-second IOPS.
	IOPSMin int `json:"iops_min"`

	// LatencyAvg is the mean op latency, seconds.
	LatencyAvg float64 `json:"latency_avg_s"`
	// LatencyStddev is the sample standard deviation of op latency, seconds.
	LatencyStddev float64 `json:"latency_stddev_s"`
	// LatencyMax is the highest op latency, seconds.
	LatencyMax float64 `json:"latency_max_s"`
	// LatencyMin is the lowest op latency, seconds.
	LatencyMin float64 `json:"latency_min_s"`
	// LatencyP50 is the median op latency (nearest rank), seconds.
	LatencyP50 float64 `json:"latency_p50_s"`
	// LatencyP99 is the 99th percentile op latency (nearest rank), seconds.
	LatencyP99 float64 `json:"latency_p99_s"`

	// Errors counts ops that failed (the run stops at the first one, as
	// rados bench does; ops cancelled through ctx are not counted).
	Errors int64 `json:"errors"`
	// VerifyFailures counts reads whose content was wrong (seq, rand).
	VerifyFailures int64 `json:"verify_failures"`
	// Removed is the number of objects the write run's cleanup removed.
	Removed int `json:"removed,omitempty"`
}

// config is Options with the defaults filled in.
type config struct {
	Options
	text   *lockedWriter // nil unless text output is wanted
	prefix string
}

func (o Options) resolve() (*config, error) {
	switch o.Mode {
	case ModeWrite, ModeSeq, ModeRand:
	case "":
		return nil, errors.New("bench: no mode (want write, seq or rand)")
	default:
		return nil, fmt.Errorf("bench: unknown mode %q (want write, seq or rand)", o.Mode)
	}
	if o.BlockSize < 0 || o.Concurrency < 0 || o.Duration < 0 || o.MaxObjects < 0 {
		return nil, errors.New("bench: negative BlockSize, Concurrency, Duration or MaxObjects")
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.RunName == "" {
		o.RunName = DefaultRunName
	}
	if o.Hostname == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		// obj_bencher.cc: gethostname into a char[30], NUL at [29].
		if len(h) > 29 {
			h = h[:29]
		}
		o.Hostname = h
	}
	if o.PID == 0 {
		o.PID = os.Getpid()
	}
	if o.IsNotFound == nil {
		o.IsNotFound = defaultIsNotFound
	}
	c := &config{Options: o, prefix: ObjectPrefix(o.Hostname, o.PID)}
	if o.Out != nil && !o.JSON {
		c.text = &lockedWriter{w: o.Out}
	}
	return c, nil
}

// defaultIsNotFound is the IsNotFound used when Options leave it nil.
func defaultIsNotFound(err error) bool {
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	var nf interface{ NotFound() bool }
	return errors.As(err, &nf) && nf.NotFound()
}

// ObjectPrefix returns the object name prefix of a write run from hostname
// and pid: "benchmark_data_<hostname>_<pid>" (generate_object_prefix in
// obj_bencher.cc).
func ObjectPrefix(hostname string, pid int) string {
	return fmt.Sprintf("benchmark_data_%s_%d", hostname, pid)
}

// ObjectName returns the name of object n of the run with the given prefix:
// "<prefix>_object<n>".
func ObjectName(prefix string, n int) string {
	return fmt.Sprintf("%s_object%d", prefix, n)
}

// Run runs the benchmark o.Mode against t and returns its Result.
//
// write keeps o.Concurrency WriteFull ops of o.BlockSize bytes in flight
// for o.Duration (or until o.MaxObjects objects), then either writes the
// metadata object (o.NoCleanup) or removes the objects it wrote. seq and
// rand first read the metadata object o.RunName (an error wrapping
// ErrNoMetadata if it is missing), then read and verify objects of that
// run; a wrong object is counted in Result.VerifyFailures and makes Run
// return an error wrapping ErrVerify that names the object.
//
// The first failed op stops the run (as rados bench does) and Run returns
// the partial Result with an error naming the op and object. If ctx is
// cancelled, every goroutine Run started stops and Run returns the partial
// Result with ctx.Err(); the objects written so far are then neither
// recorded nor removed. The summary (text or JSON) is written to o.Out
// whenever a Result is returned.
func Run(ctx context.Context, t Target, o Options) (*Result, error) {
	c, err := o.resolve()
	if err != nil {
		return nil, err
	}
	var res *Result
	switch c.Mode {
	case ModeWrite:
		res, err = runWrite(ctx, t, c)
	default:
		res, err = runRead(ctx, t, c)
	}
	if res != nil && c.JSON && c.Out != nil {
		enc := json.NewEncoder(c.Out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil && err == nil {
			err = fmt.Errorf("bench: writing JSON result: %w", jerr)
		}
	}
	return res, err
}

func runWrite(ctx context.Context, t Target, c *config) (*Result, error) {
	if c.text != nil {
		c.text.printf("hints = 1\n")
		c.text.printf("Maintaining %d concurrent writes of %d bytes to objects of size %d for up to %s seconds or %d objects\n",
			c.Concurrency, c.BlockSize, c.BlockSize, fmtSeconds(c.Duration), c.MaxObjects)
		c.text.printf("Object prefix: %s\n", c.prefix)
	}
	e := newEngine(c, ModeWrite, c.prefix, c.BlockSize, c.MaxObjects)
	res, err := runEngine(ctx, t, c, e)
	if err != nil {
		return res, err
	}
	if c.NoCleanup {
		m := metadata{
			Version:    metadataVersion,
			Prefix:     c.prefix,
			Objects:    res.Objects,
			ObjectSize: res.ObjectSize,
			OpSize:     res.OpSize,
			Hostname:   c.Hostname,
			PID:        c.PID,
		}
		if err := writeMetadata(ctx, t, c.RunName, m); err != nil {
			return res, err
		}
		return res, nil
	}
	start := time.Now()
	if c.text != nil {
		c.text.printf("Cleaning up (deleting benchmark objects)\n")
	}
	n, err := removeObjects(ctx, t, c.prefix, res.Objects, c.Concurrency, c.IsNotFound)
	res.Removed = n
	if err != nil {
		return res, err
	}
	if c.text != nil {
		c.text.printf("Removed %d object%s\n", n, plural(n))
		c.text.printf("Clean up completed and total clean up time :%s\n", g6(time.Since(start).Seconds()))
	}
	return res, nil
}

// runEngine runs e and prints its summary; the context's error wins over
// the run's.
func runEngine(ctx context.Context, t Target, c *config, e *engine) (*Result, error) {
	res, err := e.run(ctx, t)
	if c.text != nil {
		c.text.write(summary(res))
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, err
}

func runRead(ctx context.Context, t Target, c *config) (*Result, error) {
	m, err := readMetadata(ctx, t, c.RunName, c.IsNotFound)
	if err != nil {
		return nil, err
	}
	if c.Mode == ModeRand && m.Objects == 0 {
		return nil, fmt.Errorf("bench: %w (metadata object %q records no objects)", ErrNoMetadata, c.RunName)
	}
	if c.text != nil {
		c.text.printf("hints = 1\n")
	}
	e := newEngine(c, c.Mode, m.Prefix, m.OpSize, m.Objects)
	e.objectSize = m.ObjectSize
	res, err := runEngine(ctx, t, c, e)
	if err != nil {
		return res, err
	}
	if res.VerifyFailures > 0 {
		return res, fmt.Errorf("bench: %s: %w: %d object read(s) not correct; first: %s",
			c.Mode, ErrVerify, res.VerifyFailures, e.firstBad)
	}
	return res, nil
}

// Cleanup removes the objects a write --no-cleanup run left (found through
// its metadata object runName, "" = DefaultRunName) and then the metadata
// object, like `rados -p POOL cleanup [--run-name NAME]`. It returns how
// many objects it removed (objects already gone are skipped, not counted).
// A missing metadata object gives an error wrapping ErrNoMetadata. Objects
// are classified as missing with the default Options.IsNotFound; use
// CleanupWith for another classifier.
func Cleanup(ctx context.Context, t Target, runName string) (int, error) {
	return CleanupWith(ctx, t, Options{RunName: runName})
}

// CleanupWith is Cleanup with the RunName, Concurrency (removes in flight),
// IsNotFound and Out of o; with a non-nil Out and !JSON it prints
// "Removed N objects" as rados cleanup does. Other fields are ignored.
func CleanupWith(ctx context.Context, t Target, o Options) (int, error) {
	o.Mode = ModeWrite // only to pass validation
	c, err := o.resolve()
	if err != nil {
		return 0, err
	}
	m, err := readMetadata(ctx, t, c.RunName, c.IsNotFound)
	if err != nil {
		return 0, err
	}
	n, err := removeObjects(ctx, t, m.Prefix, m.Objects, c.Concurrency, c.IsNotFound)
	if err != nil {
		return n, err
	}
	if err := t.Remove(ctx, c.RunName); err != nil && !c.IsNotFound(err) {
		return n, fmt.Errorf("bench: removing metadata object %q: %w", c.RunName, err)
	}
	if c.text != nil {
		c.text.printf("Removed %d object%s\n", n, plural(n))
	}
	return n, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// RemoveWritten removes the objects a write run wrote, from its Result
// (ObjectPrefix, Objects): for a run that failed or was cancelled,
// which records no metadata object for Cleanup to find. Missing objects
// are not errors; o gives IsNotFound and the concurrency.
func RemoveWritten(ctx context.Context, t Target, res *Result, o Options) (int, error) {
	if res == nil || res.Mode != ModeWrite || res.Objects == 0 {
		return 0, nil
	}
	o.Mode = ModeWrite
	c, err := o.resolve()
	if err != nil {
		return 0, err
	}
	return removeObjects(ctx, t, res.ObjectPrefix, res.Objects, c.Concurrency, c.IsNotFound)
}
