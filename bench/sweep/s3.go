package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/bench"
)

// s3Driver runs s3 points against any S3 endpoint.
type s3Driver struct {
	endpoints []string
	ak, sk    string
	made      *made // made.S3: where the sweep wrote, and how many keys
}

func newS3(endpoint, ak, sk string, m *made) (*s3Driver, error) {
	if endpoint == "" || ak == "" || sk == "" {
		return nil, fmt.Errorf("%w: target: an S3 target needs endpoint, access_key and secret_key", ErrSpec)
	}
	return &s3Driver{endpoints: strings.Split(endpoint, ","), ak: ak, sk: sk, made: m}, nil
}

// usedKey is made.S3's key of where o writes.
func usedKey(o bench.S3Options) string {
	return o.Bucket + " " + o.Prefix + " " + strings.Join(o.Endpoints, ",")
}

// wrote records that keys 0 to n-1 under o's prefix may exist.
func (d *s3Driver) wrote(o bench.S3Options, n int) error {
	k := usedKey(o)
	if old, ok := d.made.S3[k]; ok && old >= n {
		return nil
	}
	d.made.S3[k] = n
	return d.made.save()
}

// reach checks that every endpoint answers HTTP.
func (d *s3Driver) reach(ctx context.Context) error {
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, ep := range d.endpoints {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep, nil)
		if err != nil {
			return fmt.Errorf("sweep: target: endpoint %q: %w", ep, err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("sweep: target: %w", err)
		}
		resp.Body.Close()
	}
	return nil
}

// options are an s3 point's load options (no endpoint yet).
func s3Options(p Point) (bench.S3Options, error) {
	o := bench.S3Options{Bucket: p.Params["bucket"], Location: p.Params["location"], Op: p.Params["op"]}
	if o.Op != "put" && o.Op != "get" && o.Op != "mixed" {
		return o, fmt.Errorf("op %q: put, get or mixed", o.Op)
	}
	var err error
	if o.Sizes, err = bench.ParseSizes(p.Params["size"]); err != nil {
		return o, err
	}
	if o.Sizes.Min <= 0 {
		return o, fmt.Errorf("size %q: above 0", p.Params["size"])
	}
	if o.Concurrency, err = positive(p, "concurrency"); err != nil {
		return o, err
	}
	if o.Objects, err = strconv.Atoi(p.Params["objects"]); err != nil || o.Objects < 0 || (o.Objects == 0 && o.Op != "put") {
		return o, fmt.Errorf("objects %q: a whole number above 0 (0 only for put)", p.Params["objects"])
	}
	if o.Op == "mixed" {
		if o.Mix, err = bench.ParseS3Mix(p.Params["mix"]); err != nil {
			return o, err
		}
	}
	// One key set per object size, shared by the points that read it.
	o.Prefix = "sweep/" + pathSafe(p.Params["size"]) + "/"
	return o, nil
}

func (d *s3Driver) options(p Point) (bench.S3Options, error) {
	o, err := s3Options(p)
	o.Endpoints, o.AccessKey, o.SecretKey = d.endpoints, d.ak, d.sk
	if ep := p.Params["endpoint"]; ep != "" {
		o.Endpoints = strings.Split(ep, ",")
	}
	return o, err
}

func (d *s3Driver) check(_ context.Context, p Point) error {
	_, err := d.options(p)
	return err
}

func (d *s3Driver) prepare(ctx context.Context, p Point, out io.Writer) error {
	o, _ := d.options(p)
	if err := d.wrote(o, o.Objects); err != nil { // before, so an interrupted run's keys are known
		return err
	}
	if o.Op == "put" {
		return nil
	}
	o.Out = out
	return bench.S3Populate(ctx, o)
}

func (d *s3Driver) run(ctx context.Context, p Point, dur time.Duration, rec *Recorder, out io.Writer) error {
	o, _ := d.options(p)
	o.Duration, o.Out, o.NoPopulate = dur, out, true // prepare populated
	var puts atomic.Int64
	o.OnOp = func(op string, n int, lat time.Duration, err error) {
		if op == "PUT" {
			puts.Add(1)
		}
		if err != nil && ctx.Err() != nil {
			return
		}
		rec.Op(n, lat, err)
	}
	res, err := bench.RunS3(ctx, o)
	if o.Objects == 0 { // every PUT a new key
		if werr := d.wrote(o, int(puts.Load())+o.Concurrency); werr != nil && err == nil {
			err = werr
		}
	}
	if err == nil && res != nil && res.FirstError != "" {
		err = errors.New(res.FirstError) // the generator goes on past errors; a sweep point does not count as done
	}
	return err
}

func (d *s3Driver) cleanup(ctx context.Context, out io.Writer) error {
	var errs []error
	for k, keys := range d.made.S3 {
		f := strings.SplitN(k, " ", 3)
		if len(f) != 3 {
			continue
		}
		n, err := bench.S3RemovePrefix(ctx, bench.S3Options{Endpoints: strings.Split(f[2], ","), AccessKey: d.ak, SecretKey: d.sk, Bucket: f[0], Prefix: f[1], Objects: keys})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		delete(d.made.S3, k)
		fmt.Fprintf(out, "removed %d keys under %s/%s\n", n, f[0], f[1])
	}
	return errors.Join(append(errs, d.made.save())...)
}

// s3Only is the driver of an s3 target.
type s3Only struct {
	*s3Driver
	dms []Daemon
	cnt Counts
}

func (d *s3Only) after(context.Context, Point, io.Writer) error { return nil }
func (d *s3Only) daemons() []Daemon                             { return d.dms }
func (d *s3Only) counts() Counts                                { return d.cnt }
func (d *s3Only) close()                                        {}
func (d *s3Only) counters(context.Context) map[string]uint64    { return nil }
