package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
	"github.com/aws/smithy-go/middleware"
)

// S3Options configure RunS3, a COSBench/warp-style load against S3
// gateways (Shoal's or any other: the same generator drives both sides of
// a comparison).
type S3Options struct {
	Endpoints []string // gateway URLs, used round-robin by the workers
	AccessKey string
	SecretKey string
	Region    string // default "default"
	Bucket    string // created if missing
	// Location is the new bucket's LocationConstraint: a region or, for
	// radosgw and Shoal, "ZONEGROUP:PLACEMENT" ("default:indexless").
	Location    string
	Op          string // "put", "get" or "mixed" (shares as Mix)
	Sizes       Sizes  // object sizes
	Concurrency int    // requests in flight; default 16
	Duration    time.Duration
	// Objects is the key space: PUTs write keys 0..Objects-1 (again and
	// again), GETs read them; get and mixed first upload any that are
	// missing. Default 1000 (put: unbounded, every PUT a new key).
	Objects int
	Prefix  string // key prefix; default "shoal-bench/"
	Cleanup bool   // delete the keys written at the end
	Out     io.Writer
	// Mix is a mixed run's shares of each operation; zero: 70 % GET,
	// 30 % PUT.
	Mix S3Mix
	// OnOp, if set, is called after every measured request (from many
	// goroutines at once) with its operation ("PUT", "GET", "HEAD",
	// "DELETE"), the bytes it moved and its latency: a sweep's samples.
	OnOp func(op string, n int, lat time.Duration, err error)
	// NoPopulate: a get or mixed run does not upload missing keys first
	// (the caller did, with S3Populate, before measuring).
	NoPopulate bool
	// SSE asks PUTs for server-side encryption: "" none, "AES256"
	// (SSE-S3; the objects' GETs then decrypt).
	SSE string

	transport *http.Transport // of the clients of one call
}

// closeIdle closes the idle connections of the call's clients.
func (o *S3Options) closeIdle() {
	if o.transport != nil {
		o.transport.CloseIdleConnections()
	}
}

// S3Mix is a mixed load's shares of GET, PUT, HEAD (stat) and DELETE
// requests, in percent adding up to 100, as warp's mixed benchmark and
// COSBench's operation ratios. A DELETE removes a key that exists; GETs
// and HEADs only ask for keys that exist, and PUTs write them back.
type S3Mix struct{ Get, Put, Stat, Delete int }

// ParseS3Mix reads "get:60,put:30,stat:5,delete:5" (missing shares 0).
func ParseS3Mix(s string) (S3Mix, error) {
	var m S3Mix
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return m, fmt.Errorf("bench s3: mix %q: want get:N,put:N,stat:N,delete:N", s)
		}
		switch k {
		case "get":
			m.Get = n
		case "put":
			m.Put = n
		case "stat":
			m.Stat = n
		case "delete":
			m.Delete = n
		default:
			return m, fmt.Errorf("bench s3: mix %q: unknown operation %q (get, put, stat, delete)", s, k)
		}
	}
	return m, m.check()
}

// check refuses shares that do not add up to 100, and deletes that
// outpace puts: each DELETE takes a key that the PUTs must write back,
// and at delete ≥ put the keys run out (a key drawn for a GET, HEAD or
// DELETE is then never there).
func (m S3Mix) check() error {
	if m.Get+m.Put+m.Stat+m.Delete != 100 {
		return fmt.Errorf("bench s3: mix %+v: shares add up to %d, not 100", m, m.Get+m.Put+m.Stat+m.Delete)
	}
	if m.Delete > 0 && m.Delete >= m.Put {
		return fmt.Errorf("bench s3: mix %+v: delete %d%% needs put above it (each delete takes a key the puts write back)", m, m.Delete)
	}
	return nil
}

// pick draws an operation (opPut, opGet, opStat, opDelete) by the shares.
func (m S3Mix) pick(r *rand.Rand) int {
	x := r.IntN(100)
	switch {
	case x < m.Get:
		return opGet
	case x < m.Get+m.Put:
		return opPut
	case x < m.Get+m.Put+m.Stat:
		return opStat
	}
	return opDelete
}

// Request kinds, indexes of s3OpNames.
const (
	opPut = iota
	opGet
	opStat
	opDelete
)

var s3OpNames = []string{"PUT", "GET", "HEAD", "DELETE"}

// Sizes is an object size distribution: a fixed size, or uniform in
// [Min, Max] (Parse "64K" or "1M-4M").
type Sizes struct{ Min, Max int }

// ParseSizes reads "SIZE" or "MIN-MAX" (units as ParseSize).
func ParseSizes(s string) (Sizes, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err := ParseSize(a)
	if err != nil {
		return Sizes{}, err
	}
	hi := lo
	if ok {
		if hi, err = ParseSize(b); err != nil {
			return Sizes{}, err
		}
	}
	if hi < lo {
		return Sizes{}, fmt.Errorf("bench: size range %q: max below min", s)
	}
	return Sizes{lo, hi}, nil
}

// of returns key i's size: a function of the key, so a GET knows what to
// expect.
func (z Sizes) of(i int) int {
	if z.Max == z.Min {
		return z.Min
	}
	return z.Min + int(mix(uint64(i)+golden)%uint64(z.Max-z.Min+1))
}

func (z Sizes) String() string {
	if z.Min == z.Max {
		return FormatSize(z.Min)
	}
	return FormatSize(z.Min) + "-" + FormatSize(z.Max)
}

// FormatSize writes a byte count as ParseSize reads it: in the largest
// of G, M and K (powers of 1,024) that divides it ("4M", "64K"), else
// in bytes.
func FormatSize(n int) string {
	for _, u := range []struct {
		s string
		n int
	}{{"G", 30}, {"M", 20}, {"K", 10}} {
		if n >= 1<<u.n && n%(1<<u.n) == 0 {
			return strconv.Itoa(n>>u.n) + u.s
		}
	}
	return strconv.Itoa(n)
}

// S3OpStats are one operation type's figures.
type S3OpStats struct {
	Ops       int64   `json:"ops"`
	Bytes     int64   `json:"bytes"`
	Errors    int64   `json:"errors"`
	OpsPerSec float64 `json:"ops_per_s"`
	MBPerSec  float64 `json:"mb_per_s"` // MB = 1,000,000 bytes (as warp and COSBench)
	P50       float64 `json:"latency_p50_ms"`
	P90       float64 `json:"latency_p90_ms"`
	P99       float64 `json:"latency_p99_ms"`
	Max       float64 `json:"latency_max_ms"`
}

// S3Result is a run's outcome.
type S3Result struct {
	Op             string               `json:"op"`
	Sizes          string               `json:"sizes"`
	Concurrency    int                  `json:"concurrency"`
	Seconds        float64              `json:"seconds"`
	PerOp          map[string]S3OpStats `json:"per_op"`
	Total          S3OpStats            `json:"total"`
	VerifyFailures int64                `json:"verify_failures"`
	FirstError     string               `json:"first_error,omitempty"`
}

// ErrS3Verify: a GET returned bytes other than those PUT.
var ErrS3Verify = errors.New("GET returned wrong content")

type s3Sample struct {
	op    int // opPut, opGet, opStat, opDelete
	lat   time.Duration
	bytes int
	err   bool
}

// unsignedPayload signs bodies as UNSIGNED-PAYLOAD, as warp does over
// HTTP: the load generator should spend its CPU sending, not hashing.
func unsignedPayload(stack *middleware.Stack) error {
	return v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware(stack)
}

// fixedEndpoint resolves every request to the gateway's URL plus the
// bucket (path-style). The SDK's rule-based resolver compiles partition
// regexps on every request: a third of a load generator's CPU at 64 KiB.
type fixedEndpoint struct{ base url.URL }

// ResolveEndpoint implements s3.EndpointResolverV2: base URL + "/" + bucket.
func (r fixedEndpoint) ResolveEndpoint(_ context.Context, p s3.EndpointParameters) (smithyendpoints.Endpoint, error) {
	u := r.base
	if p.Bucket != nil {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/" + *p.Bucket
	}
	return smithyendpoints.Endpoint{URI: u}, nil
}

// bodyConn is a connection whose ReadFrom, through which net/http sends a
// request's body once the write buffer is empty, writes the body in
// pieces of bodyWrite bytes, one system call each. A TCP connection's own
// ReadFrom copies through a 32 KiB buffer: a 32 MiB PUT took about 1,000
// writes (docs/PERFORMANCE.md).
type bodyConn struct{ net.Conn }

// bodyWrite is the size of a request body's writes (bytes): generated
// into a buffer that stays in the CPU's cache until written.
const bodyWrite = 256 << 10

var bodyBufs = sync.Pool{New: func() any { b := make([]byte, bodyWrite); return &b }}

func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	bp := bodyBufs.Get().(*[]byte)
	defer bodyBufs.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{c.Conn}, r, *bp) // the struct hides ReaderFrom: the copy uses the buffer
}

// clients returns, for each endpoint, an SDK client (setup and cleanup)
// and the lean client of the measured operations, sharing one transport
// (o.transport, whose idle connections the caller closes when done).
func (o *S3Options) clients() ([]*s3.Client, []*s3Raw, error) {
	// A write buffer that holds a 64 KiB PUT's headers and body sends
	// them in one write: with net/http's 4 KiB one, the headers and the
	// first 4 KiB went in one write and the rest in 32 KiB pieces.
	dial := (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	tr := &http.Transport{MaxIdleConnsPerHost: o.Concurrency * 2, DisableCompression: true, WriteBufferSize: 128 << 10,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return bodyConn{c}, nil
		}}
	hc := &http.Client{Transport: tr}
	o.transport = tr
	var out []*s3.Client
	var raw []*s3Raw
	for _, ep := range o.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, nil, fmt.Errorf("bench s3: endpoint %q: want a URL like http://127.0.0.1:7480", ep)
		}
		out = append(out, s3.New(s3.Options{Region: o.Region, BaseEndpoint: aws.String(ep), UsePathStyle: true, HTTPClient: hc,
			EndpointResolverV2:         fixedEndpoint{*u},
			Credentials:                credentials.NewStaticCredentialsProvider(o.AccessKey, o.SecretKey, ""),
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
			ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
			RetryMaxAttempts:           1,
			APIOptions:                 []func(*middleware.Stack) error{unsignedPayload}}))
		u.Path = strings.TrimSuffix(u.Path, "/")
		r := newS3Raw(hc, *u, o.AccessKey, o.SecretKey, o.Region)
		r.sse = o.SSE
		raw = append(raw, r)
	}
	return out, raw, nil
}

func (o *S3Options) key(i int) string { return o.Prefix + strconv.Itoa(i) }

// verifyPiece is how many bytes of a GET's body are read and checked at a
// time (a multiple of 8, see content.checkAt).
const verifyPiece = 256 << 10

// setup checks o, fills in its defaults, makes the clients and creates
// the bucket if missing.
func (o *S3Options) setup(ctx context.Context) ([]*s3.Client, []*s3Raw, uint64, error) {
	if len(o.Endpoints) == 0 {
		return nil, nil, 0, errors.New("bench s3: no endpoint")
	}
	if o.Op != "put" && o.Op != "get" && o.Op != "mixed" {
		return nil, nil, 0, fmt.Errorf("bench s3: --op %q: put, get or mixed", o.Op)
	}
	if o.Sizes.Max <= 0 {
		return nil, nil, 0, errors.New("bench s3: no object size")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Duration <= 0 {
		o.Duration = 30 * time.Second
	}
	if o.Region == "" {
		o.Region = "default"
	}
	if o.Prefix == "" {
		o.Prefix = "shoal-bench/"
	}
	if o.Bucket == "" {
		o.Bucket = "shoal-bench"
	}
	if o.Objects <= 0 && o.Op != "put" {
		o.Objects = 1000
	}
	if o.Op == "mixed" && o.Mix == (S3Mix{}) {
		o.Mix = S3Mix{Get: 70, Put: 30}
	}
	if o.Op == "mixed" {
		if err := o.Mix.check(); err != nil {
			return nil, nil, 0, err
		}
	}
	cls, raws, err := o.clients()
	if err != nil {
		return nil, nil, 0, err
	}
	seed := prefixSeed(o.Prefix)
	cb := &s3.CreateBucketInput{Bucket: &o.Bucket}
	if o.Location != "" {
		cb.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(o.Location)}
	}
	_, err = cls[0].CreateBucket(ctx, cb)
	var ae smithy.APIError
	if err != nil && !(errors.As(err, &ae) && (ae.ErrorCode() == "BucketAlreadyOwnedByYou" || ae.ErrorCode() == "BucketAlreadyExists")) {
		return nil, nil, 0, fmt.Errorf("bench s3: create bucket %s: %w", o.Bucket, err)
	}
	return cls, raws, seed, nil
}

// RunS3 runs the load and reports per second progress and a summary to
// o.Out. Every GET's bytes are checked against what the PUT of that key
// wrote (content is a function of the key and size).
func RunS3(ctx context.Context, o S3Options) (*S3Result, error) {
	cls, raws, seed, err := o.setup(ctx)
	defer o.closeIdle()
	if err != nil {
		return nil, err
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	put := func(c *s3Raw, i int) error {
		return c.put(ctx, o.Bucket, o.key(i), newContent(seed, i, o.Sizes.of(i)))
	}
	if o.Op != "put" && !o.NoPopulate {
		if err := o.populate(ctx, cls[0], raws, put, out); err != nil {
			return nil, err
		}
	}
	var (
		next     atomic.Int64
		verify   atomic.Int64
		errMu    sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		mu       sync.Mutex
		samples  []s3Sample
	)
	// With deletes in the mix, a key's lock keeps a GET or HEAD from
	// racing the DELETE of the key it chose; present says which exist.
	var keyMu []sync.RWMutex
	var present []atomic.Bool
	if o.Op == "mixed" && o.Mix.Delete > 0 {
		keyMu, present = make([]sync.RWMutex, o.Objects), make([]atomic.Bool, o.Objects)
		for i := range present {
			present[i].Store(true) // populate uploaded them all
		}
	}
	deadline := time.Now().Add(o.Duration)
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	stopTick := make(chan struct{})
	tickDone := make(chan struct{})
	go func() { // progress: one line a second
		defer close(tickDone)
		last, lastT := 0, start
		for {
			select {
			case <-stopTick:
				return
			case now := <-tick.C:
				mu.Lock()
				n, b := len(samples), 0
				for _, s := range samples[last:] {
					b += s.bytes
				}
				mu.Unlock()
				dt := now.Sub(lastT).Seconds()
				fmt.Fprintf(out, "%5.0fs  %8.1f ops/s  %8.1f MB/s\n", now.Sub(start).Seconds(), float64(n-last)/dt, float64(b)/dt/1e6)
				last, lastT = n, now
			}
		}
	}()
	for w := range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := raws[w%len(raws)]
			r := rand.New(rand.NewPCG(uint64(w), seed))
			var rbuf []byte
			for time.Now().Before(deadline) && ctx.Err() == nil {
				op := opGet
				switch o.Op {
				case "put":
					op = opPut
				case "mixed":
					op = o.Mix.pick(r)
				}
				var i int
				if op == opPut {
					i = int(next.Add(1) - 1)
					if o.Objects > 0 {
						i %= o.Objects
					}
				} else {
					i = r.IntN(o.Objects)
				}
				unlock := func() {}
				if keyMu != nil {
					lock := func(j int) {
						if op == opPut || op == opDelete {
							keyMu[j].Lock()
							unlock = keyMu[j].Unlock
						} else {
							keyMu[j].RLock()
							unlock = keyMu[j].RUnlock
						}
					}
					lock(i)
					// a GET, HEAD or DELETE of a deleted key takes the
					// next key that is there instead (the mix holds)
					for k := 1; op != opPut && !present[i].Load() && k < o.Objects; k++ {
						if j := (i + k) % o.Objects; present[j].Load() {
							unlock()
							i = j
							lock(i)
						}
					}
					if op != opPut && !present[i].Load() {
						unlock()
						continue // none there at the moment
					}
				}
				t0 := time.Now()
				var err error
				s := s3Sample{op: op, bytes: o.Sizes.of(i)}
				switch op {
				case opPut:
					err = put(c, i)
				case opGet:
					if rbuf == nil {
						rbuf = make([]byte, verifyPiece)
					}
					var n, bad int
					n, bad, err = c.getVerify(ctx, o.Bucket, o.key(i), newContent(seed, i, o.Sizes.of(i)), rbuf)
					if err == nil && bad >= 0 {
						verify.Add(1)
						err = fmt.Errorf("%w: %s (%d bytes, first wrong byte at %d)", ErrS3Verify, o.key(i), n, bad)
					}
				case opStat:
					var n int64
					n, err = c.head(ctx, o.Bucket, o.key(i))
					if err == nil && n != int64(s.bytes) {
						verify.Add(1)
						err = fmt.Errorf("%w: HEAD %s: %d bytes, want %d", ErrS3Verify, o.key(i), n, s.bytes)
					}
					s.bytes = 0
				case opDelete:
					err = c.del(ctx, o.Bucket, o.key(i))
					s.bytes = 0
				}
				if keyMu != nil {
					switch {
					case err == nil && op == opPut:
						present[i].Store(true)
					case err == nil && op == opDelete:
						present[i].Store(false)
					}
				}
				unlock()
				s.lat = time.Since(t0)
				if o.OnOp != nil {
					o.OnOp(s3OpNames[op], s.bytes, s.lat, err)
				}
				if err != nil {
					s.err, s.bytes = true, 0
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopTick)
	<-tickDone
	res := summarizeS3(o, samples, elapsed)
	res.VerifyFailures = verify.Load()
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	printS3(out, res)
	if o.Cleanup {
		n := o.Objects
		if o.Op == "put" && o.Objects <= 0 {
			n = int(next.Load())
		}
		o.cleanup(ctx, cls[0], n, out)
	}
	if res.VerifyFailures > 0 {
		return res, fmt.Errorf("bench s3: %d GETs: %w", res.VerifyFailures, ErrS3Verify)
	}
	return res, nil
}

// populate uploads the keys a get or mixed run reads that are missing or
// of the wrong size.
func (o *S3Options) populate(ctx context.Context, lister *s3.Client, raws []*s3Raw, put func(*s3Raw, int) error, out io.Writer) error {
	have := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(lister, &s3.ListObjectsV2Input{Bucket: &o.Bucket, Prefix: &o.Prefix})
	for p.HasMorePages() {
		pg, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("bench s3: list %s: %w", o.Bucket, err)
		}
		for _, c := range pg.Contents {
			have[*c.Key] = *c.Size
		}
	}
	var todo []int
	for i := range o.Objects {
		if have[o.key(i)] != int64(o.Sizes.of(i)) {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	fmt.Fprintf(out, "uploading %d objects to read\n", len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	var errOnce sync.Once
	var perr error
	for w := range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(todo) || ctx.Err() != nil {
					return
				}
				if err := put(raws[w%len(raws)], todo[k]); err != nil {
					errOnce.Do(func() { perr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if perr != nil {
		return fmt.Errorf("bench s3: upload: %w", perr)
	}
	return nil
}

func (o *S3Options) cleanup(ctx context.Context, c *s3.Client, n int, out io.Writer) {
	removed := 0
	for start := 0; start < n; start += 1000 {
		var ids []s3types.ObjectIdentifier
		for i := start; i < min(n, start+1000); i++ {
			ids = append(ids, s3types.ObjectIdentifier{Key: aws.String(o.key(i))})
		}
		res, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &o.Bucket, Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			fmt.Fprintf(out, "cleanup: %v\n", err)
			return
		}
		removed += len(ids) - len(res.Errors)
	}
	fmt.Fprintf(out, "removed %d objects\n", removed)
}

func summarizeS3(o S3Options, samples []s3Sample, elapsed time.Duration) *S3Result {
	res := &S3Result{Op: o.Op, Sizes: o.Sizes.String(), Concurrency: o.Concurrency, Seconds: elapsed.Seconds(), PerOp: map[string]S3OpStats{}}
	secs := elapsed.Seconds()
	stat := func(keep func(s3Sample) bool) S3OpStats {
		var st S3OpStats
		var lats []float64
		for _, s := range samples {
			if !keep(s) {
				continue
			}
			if s.err {
				st.Errors++
				continue
			}
			st.Ops++
			st.Bytes += int64(s.bytes)
			lats = append(lats, float64(s.lat)/float64(time.Millisecond))
		}
		slices.Sort(lats)
		st.OpsPerSec, st.MBPerSec = float64(st.Ops)/secs, float64(st.Bytes)/secs/1e6
		if len(lats) > 0 {
			st.P50, st.P90, st.P99, st.Max = percentile(lats, 50), percentile(lats, 90), percentile(lats, 99), lats[len(lats)-1]
		}
		return st
	}
	for op, name := range s3OpNames {
		if st := stat(func(s s3Sample) bool { return s.op == op }); st.Ops+st.Errors > 0 {
			res.PerOp[name] = st
		}
	}
	res.Total = stat(func(s3Sample) bool { return true })
	return res
}

func printS3(w io.Writer, r *S3Result) {
	fmt.Fprintf(w, "\n%s, objects %s, concurrency %d, %.1f s\n", r.Op, r.Sizes, r.Concurrency, r.Seconds)
	fmt.Fprintf(w, "%-5s %9s %10s %9s %9s %9s %9s %9s %7s\n", "op", "ops", "ops/s", "MB/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors")
	for _, name := range s3OpNames {
		if st, ok := r.PerOp[name]; ok {
			fmt.Fprintf(w, "%-5s %9d %10.1f %9.1f %9.2f %9.2f %9.2f %9.2f %7d\n", name, st.Ops, st.OpsPerSec, st.MBPerSec, st.P50, st.P90, st.P99, st.Max, st.Errors)
		}
	}
	if r.VerifyFailures > 0 {
		fmt.Fprintf(w, "VERIFY FAILURES: %d\n", r.VerifyFailures)
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
}

// S3RemovePrefix deletes every key under o.Prefix in o.Bucket through
// the first endpoint, and the bucket too if it is then empty; it returns
// the number of keys removed. A bucket that cannot be listed (indexless)
// has its keys PREFIX0 to PREFIX<o.Objects-1> deleted instead, those a
// run writes.
func S3RemovePrefix(ctx context.Context, o S3Options) (int, error) {
	if o.Region == "" {
		o.Region = "default"
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	cls, _, err := o.clients()
	defer o.closeIdle()
	if err != nil {
		return 0, err
	}
	c := cls[0]
	removed := 0
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &o.Bucket, Prefix: &o.Prefix})
	for p.HasMorePages() {
		pg, err := p.NextPage(ctx)
		var ae smithy.APIError
		if err != nil && errors.As(err, &ae) && ae.ErrorCode() == "NotImplemented" && removed == 0 {
			n := o.Objects
			var out strings.Builder
			o.cleanup(ctx, c, n, &out)
			_, _ = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &o.Bucket})
			if strings.HasPrefix(out.String(), "cleanup:") {
				return 0, fmt.Errorf("bench s3: %s", strings.TrimSpace(out.String()))
			}
			return n, nil
		}
		if err != nil {
			return removed, fmt.Errorf("bench s3: list %s: %w", o.Bucket, err)
		}
		var ids []s3types.ObjectIdentifier
		for _, k := range pg.Contents {
			ids = append(ids, s3types.ObjectIdentifier{Key: k.Key})
		}
		if len(ids) == 0 {
			continue
		}
		res, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &o.Bucket, Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return removed, fmt.Errorf("bench s3: delete in %s: %w", o.Bucket, err)
		}
		removed += len(ids) - len(res.Errors)
	}
	_, _ = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &o.Bucket}) // fails, as it should, when other keys remain
	return removed, nil
}

// S3Populate uploads the keys a get or mixed run of o reads that are
// missing or of another size (RunS3 does it too, inside its run; a sweep
// does it before measuring).
func S3Populate(ctx context.Context, o S3Options) error {
	cls, raws, seed, err := o.setup(ctx)
	defer o.closeIdle()
	if err != nil {
		return err
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	return o.populate(ctx, cls[0], raws, func(c *s3Raw, i int) error {
		return c.put(ctx, o.Bucket, o.key(i), newContent(seed, i, o.Sizes.of(i)))
	}, out)
}
