package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/bench"
	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/rbd"
)

// openDriver reaches the target: an unreachable one is an error before
// any point runs.
func openDriver(ctx context.Context, s *Spec, m *made) (driver, error) {
	switch s.Target.Kind {
	case "shoal":
		return openShoal(ctx, s, m)
	case "s3":
		ep, ak, sk := s3Env(s.Target)
		d, err := newS3(ep, ak, sk, m)
		if err != nil {
			return nil, err
		}
		if err := d.reach(ctx); err != nil {
			return nil, err
		}
		return &s3Only{s3Driver: d, dms: byName(daemonNames(s.Target, nil)), cnt: counts(s.Target, Counts{})}, nil
	case "ceph":
		return openCeph(ctx, s, m)
	}
	return nil, fmt.Errorf("%w: target kind %q", ErrSpec, s.Target.Kind)
}

// s3Env is an s3 or ceph target's endpoint and keys: the file's, else
// $S3_ENDPOINT, $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (as
// `shoal bench s3` and the AWS tools take them).
func s3Env(t Target) (endpoint, accessKey, secretKey string) {
	pick := func(v, env string) string {
		if v != "" {
			return v
		}
		return os.Getenv(env)
	}
	return pick(t.Endpoint, "S3_ENDPOINT"), pick(t.AccessKey, "AWS_ACCESS_KEY_ID"), pick(t.SecretKey, "AWS_SECRET_ACCESS_KEY")
}

// counts fills in the file's counts over those the target gave.
func counts(t Target, c Counts) Counts {
	if t.OSDs > 0 {
		c.OSDs = t.OSDs
	}
	if t.Devices > 0 {
		c.Devices = t.Devices
	}
	if t.Hosts > 0 {
		c.Hosts = t.Hosts
	}
	if c.Devices == 0 {
		c.Devices = c.OSDs
	}
	return c
}

func daemonNames(t Target, def []string) []string {
	if len(t.Daemons) > 0 {
		return t.Daemons
	}
	if def != nil {
		return def
	}
	return []string{"ceph-osd", "ceph-mon", "ceph-mgr", "radosgw"}
}

// shoalDriver runs rados and block points through the client library,
// and s3 points through the cluster's gateway.
type shoalDriver struct {
	spec *Spec
	conf *cluster.Conf
	conn *client.Conn
	// clients are a rados point's client processes, started by prepare
	// and run by run
	clients *clientSet
	images  map[string]*rbd.Image // open, by POOL/IMAGE
	made    *made                 // images and read sets the sweep made
	s3      *s3Driver             // nil: the cluster has no gateway
	dms     []Daemon
	cnt     Counts
}

func openShoal(ctx context.Context, s *Spec, m *made) (*shoalDriver, error) {
	c, err := cluster.FindConf(s.Target.Conf)
	if err != nil {
		return nil, fmt.Errorf("sweep: target: %w", err)
	}
	d := &shoalDriver{spec: s, conf: c, images: map[string]*rbd.Image{}, made: m}
	conn, err := connect(ctx, c, s.Target.User)
	if err != nil {
		return nil, err
	}
	d.conn = conn
	if d.dms, err = pidFiles(c.Dir); err != nil {
		d.close()
		return nil, fmt.Errorf("sweep: target: %w (is the cluster in %s running?)", err, c.Dir)
	}
	om := conn.Map()
	var cnt Counts
	hosts := map[int32]bool{}
	for id, o := range om.OSDs {
		if !o.Up || !o.In() {
			continue
		}
		cnt.OSDs++
		if om.Crush != nil {
			if b := om.Crush.Parent(int32(id)); b != nil && om.Crush.TypeName(b.Type) == "host" {
				hosts[b.ID] = true
			}
		}
	}
	cnt.Hosts = max(len(hosts), 1)
	d.cnt = counts(s.Target, cnt)
	ep, ak, sk := s.Target.Endpoint, s.Target.AccessKey, s.Target.SecretKey
	if env, err := os.ReadFile(filepath.Join(c.Dir, "s3.env")); err == nil && ep == "" {
		for _, line := range strings.Split(string(env), "\n") {
			k, v, _ := strings.Cut(line, "=")
			switch k {
			case "S3_ENDPOINT":
				ep = v
			case "AWS_ACCESS_KEY_ID":
				ak = v
			case "AWS_SECRET_ACCESS_KEY":
				sk = v
			}
		}
	}
	if ep != "" {
		if d.s3, err = newS3(ep, ak, sk, m); err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

// counters reads the up OSDs' perf counters, as "osd.N/NAME"; nil if
// one cannot be read (a figure over part of the cluster would mislead).
func (d *shoalDriver) counters(ctx context.Context) map[string]uint64 {
	m := d.conn.Map()
	out := map[string]uint64{}
	for id, o := range m.OSDs {
		if !o.Up {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := d.conn.OSDStats(cctx, int32(id))
		cancel()
		if err != nil {
			return nil
		}
		p := st.Perf
		for k, v := range map[string]uint64{"op_w": p.OpW, "op_r": p.OpR, "subop_w": p.SubopW, "shard_w": p.ShardW,
			"shard_w_bytes": p.ShardWBytes, "shard_r": p.ShardR, "shard_r_bytes": p.ShardRBytes} {
			out[fmt.Sprintf("osd.%d/%s", id, k)] = v
		}
	}
	return out
}

func (d *shoalDriver) daemons() []Daemon { return d.dms }
func (d *shoalDriver) counts() Counts    { return d.cnt }

func (d *shoalDriver) close() {
	d.stopClients()
	for _, img := range d.images {
		img.Close(context.Background())
	}
	if d.conn != nil {
		d.conn.Close()
	}
}

func (d *shoalDriver) check(ctx context.Context, p Point) error {
	switch p.Type {
	case "rados":
		if _, err := radosOptions(p); err != nil {
			return err
		}
		if _, err := d.conn.Pool(ctx, p.Params["pool"]); err != nil {
			return fmt.Errorf("pool %s: %w", p.Params["pool"], err)
		}
	case "block":
		bo, pool, _, size, err := blockOptions(p)
		if err != nil {
			return err
		}
		if _, err := d.conn.Pool(ctx, pool); err != nil {
			return fmt.Errorf("pool %s: %w", pool, err)
		}
		if uint64(bo.IOSize) > size {
			return fmt.Errorf("io_size %d above image_size %d", bo.IOSize, size)
		}
	case "s3":
		if d.s3 == nil {
			return errors.New("the cluster has no S3 gateway (no s3.env in its directory; give target endpoint and keys)")
		}
		return d.s3.check(ctx, p)
	}
	return nil
}

// radosOptions are a rados point's bench options.
func radosOptions(p Point) (bench.Options, error) {
	o := bench.Options{Mode: bench.Mode(p.Params["mode"])}
	if o.Mode != bench.ModeWrite && o.Mode != bench.ModeSeq && o.Mode != bench.ModeRand {
		return o, fmt.Errorf("mode %q: write, seq or rand", o.Mode)
	}
	var err error
	if o.BlockSize, err = bench.ParseSize(p.Params["op_size"]); err != nil || o.BlockSize <= 0 {
		return o, fmt.Errorf("op_size %q: want a size such as 4M", p.Params["op_size"])
	}
	if o.Concurrency, err = positive(p, "concurrency"); err != nil {
		return o, err
	}
	if _, err = positive(p, "procs"); err != nil {
		return o, err
	}
	if _, err := duration("prefill", p.Params["prefill"], 0); err != nil {
		return o, err
	}
	return o, nil
}

func positive(p Point, name string) (int, error) {
	n, err := strconv.Atoi(p.Params[name])
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s %q: want a whole number above 0", name, p.Params[name])
	}
	return n, nil
}

// blockOptions are a block point's bench options, its image's pool and
// name, and the size of an image the sweep creates.
func blockOptions(p Point) (bo bench.BlockOptions, pool, image string, size uint64, err error) {
	pool, image, ok := strings.Cut(p.Params["image"], "/")
	if !ok || pool == "" || image == "" {
		return bo, "", "", 0, fmt.Errorf("image %q: want POOL/IMAGE", p.Params["image"])
	}
	bo = bench.BlockOptions{IOType: p.Params["io_type"], Pattern: p.Params["pattern"]}
	switch {
	case bo.IOType != "read" && bo.IOType != "write" && bo.IOType != "readwrite":
		return bo, "", "", 0, fmt.Errorf("io_type %q: read, write or readwrite", bo.IOType)
	case bo.Pattern != "seq" && bo.Pattern != "rand":
		return bo, "", "", 0, fmt.Errorf("pattern %q: seq or rand", bo.Pattern)
	}
	if bo.IOSize, err = bench.ParseSize(p.Params["io_size"]); err != nil || bo.IOSize <= 0 {
		return bo, "", "", 0, fmt.Errorf("io_size %q: want a size such as 4K", p.Params["io_size"])
	}
	n, err := bench.ParseSize(p.Params["image_size"])
	if err != nil || n < 1<<20 || n%(1<<20) != 0 {
		return bo, "", "", 0, fmt.Errorf("image_size %q: want whole MiB, 1M or more, such as 1G", p.Params["image_size"])
	}
	if bo.IOSize > n {
		return bo, "", "", 0, fmt.Errorf("io_size %s above image_size %s", p.Params["io_size"], p.Params["image_size"])
	}
	if bo.Threads, err = positive(p, "iodepth"); err != nil {
		return bo, "", "", 0, err
	}
	if bo.RWMixRead, err = strconv.Atoi(p.Params["rw_mix_read"]); err != nil || bo.RWMixRead < 0 || bo.RWMixRead > 100 {
		return bo, "", "", 0, fmt.Errorf("rw_mix_read %q: 0 to 100", p.Params["rw_mix_read"])
	}
	if _, err := strconv.ParseBool(p.Params["prefill"]); err != nil {
		return bo, "", "", 0, fmt.Errorf("prefill %q: true or false", p.Params["prefill"])
	}
	switch p.Params["engine"] {
	case "bench":
	case "fio":
		if _, err := exec.LookPath("fio"); err != nil {
			return bo, "", "", 0, fmt.Errorf("engine fio: %w (Debian: apt install fio)", err)
		}
	default:
		return bo, "", "", 0, fmt.Errorf("engine %q: bench or fio", p.Params["engine"])
	}
	return bo, pool, image, uint64(n), nil
}

// prefillTime is how long a read set is written by default: a point's
// ramp and duration, as rados bench users write before a seq run. A
// seq read stops at the set's end, as rados bench's does (reads run
// faster than writes, so such a point is usually short: marked so). A
// longer prefill writes that much more: mind the OSDs' and the disk's
// room.
func prefillTime(s *Spec) time.Duration { return s.Ramp + s.Duration }

// prefillName is the run name of a read set: one per pool and size.
func prefillName(pool string, size int) string {
	return fmt.Sprintf("sweep_prefill_%s_%d", pool, size)
}

func (d *shoalDriver) prepare(ctx context.Context, p Point, out io.Writer) error {
	switch p.Type {
	case "rados":
		o, _ := radosOptions(p)
		name := prefillName(p.Params["pool"], o.BlockSize)
		if _, ok := d.made.Sets[name]; ok || o.Mode == bench.ModeWrite {
			return d.startRadosClients(ctx, p, out)
		}
		pool, err := d.conn.Pool(ctx, p.Params["pool"])
		if err != nil {
			return err
		}
		dur, _ := duration("prefill", p.Params["prefill"], prefillTime(d.spec))
		fmt.Fprintf(out, "prefill: writing %s objects for %s to read\n", p.Params["op_size"], dur)
		res, err := bench.Run(ctx, pool, bench.Options{Mode: bench.ModeWrite, BlockSize: o.BlockSize, Concurrency: 16, Duration: dur,
			NoCleanup: true, RunName: name, Hostname: fmt.Sprintf("fill%d", o.BlockSize), PID: 1, IsNotFound: isNotFound, Out: out})
		if err != nil {
			removeWritten(pool, res, out)
			return fmt.Errorf("prefill: %w", err)
		}
		d.made.Sets[name] = p.Params["pool"]
		if err := d.made.save(); err != nil {
			return err
		}
		return d.startRadosClients(ctx, p, out)
	case "block":
		_, err := d.image(ctx, p, out)
		return err
	case "s3":
		return d.s3.prepare(ctx, p, out)
	}
	return nil
}

// image opens a block point's image, creating it if missing. An image
// the sweep made is filled whole before the first point that reads it
// (made.json says "created" until then, so a fill that an interrupted
// run did not finish is done again); an image it did not make is used
// as it is.
func (d *shoalDriver) image(ctx context.Context, p Point, out io.Writer) (*rbd.Image, error) {
	spec := p.Params["image"]
	bo, poolName, name, size, _ := blockOptions(p)
	img, ok := d.images[spec]
	if !ok {
		pool, err := d.conn.Pool(ctx, poolName)
		if err != nil {
			return nil, err
		}
		img, err = rbd.Open(ctx, pool, name, "")
		if errors.Is(err, rbd.ErrNotFound) {
			fmt.Fprintf(out, "creating image %s of %d bytes\n", spec, size)
			d.made.Images[spec] = "created" // before, so a crash in Create leaves it listed
			if err := d.made.save(); err != nil {
				return nil, err
			}
			err = rbd.Create(ctx, pool, name, rbd.Options{Size: size})
			if errors.Is(err, rbd.ErrExists) {
				// what an interrupted create left (Open found no image)
				if err = rbd.Remove(ctx, pool, name); err == nil {
					err = rbd.Create(ctx, pool, name, rbd.Options{Size: size})
				}
			}
			if err == nil {
				img, err = rbd.Open(ctx, pool, name, "")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", spec, err)
		}
		d.images[spec] = img
	}
	if fill, _ := strconv.ParseBool(p.Params["prefill"]); fill && bo.IOType != "write" && d.made.Images[spec] == "created" {
		fmt.Fprintf(out, "prefill: writing the image whole\n")
		if _, err := bench.RunBlock(ctx, img, bench.BlockOptions{IOType: "write", Pattern: "seq", IOSize: int(min(size, 4<<20)), Threads: 8, Total: size}, out); err != nil {
			return nil, fmt.Errorf("prefill: %w", err)
		}
		d.made.Images[spec] = "filled"
		if err := d.made.save(); err != nil {
			return nil, err
		}
	}
	return img, nil
}

func (d *shoalDriver) run(ctx context.Context, p Point, dur time.Duration, rec *Recorder, out io.Writer) error {
	switch p.Type {
	case "rados":
		// each of the client processes prepare started runs for the
		// point's ramp and duration (dur)
		cs := d.clients
		if cs == nil {
			return errors.New("rados point run before its client processes started")
		}
		d.clients = nil
		defer cs.stop()
		return cs.run(ctx, rec)
	case "block":
		img, err := d.image(ctx, p, out)
		if err != nil {
			return err
		}
		if p.Params["engine"] == "fio" {
			return fioNBD(ctx, img, p, dur, rec, out)
		}
		bo, _, _, _, _ := blockOptions(p)
		bo.Duration, bo.Total = dur, 1<<62
		_, err = bench.RunBlock(ctx, recDevice{img, rec}, bo, out)
		return err
	case "s3":
		return d.s3.run(ctx, p, dur, rec, out)
	}
	return fmt.Errorf("type %q", p.Type)
}

// startRadosClients starts the rados point's procs client processes
// (startClients), connected and waiting for the point's window to begin.
func (d *shoalDriver) startRadosClients(ctx context.Context, p Point, out io.Writer) error {
	o, _ := radosOptions(p)
	procs, _ := positive(p, "procs")
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("client processes: %w", err)
	}
	start := func(ctx context.Context, _ int) *exec.Cmd {
		return exec.CommandContext(ctx, exe, "bench", "sweep-client")
	}
	job := func(i int) ClientJob {
		j := ClientJob{Conf: d.conf.Path, User: d.spec.Target.User, Pool: p.Params["pool"], Mode: o.Mode, BlockSize: o.BlockSize,
			Concurrency: o.Concurrency, Duration: d.spec.Ramp + d.spec.Duration, RunName: writeRunName(p, i), Hostname: fmt.Sprintf("sweep%d", i)}
		if o.Mode != bench.ModeWrite {
			j.RunName = prefillName(p.Params["pool"], o.BlockSize)
		}
		return j
	}
	d.stopClients()
	d.clients, err = startClients(ctx, procs, start, job, out)
	return err
}

// stopClients stops client processes started and not run.
func (d *shoalDriver) stopClients() {
	if d.clients != nil {
		d.clients.stop()
		d.clients = nil
	}
}

// eachProc runs f(0) … f(n-1) at once, one per client process of a
// point, and returns their errors joined.
func eachProc(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// removeWritten removes what a failed or interrupted write run wrote
// (not under the run's context, which may be what ended it).
func removeWritten(pool *client.Pool, res *bench.Result, out io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if n, err := bench.RemoveWritten(ctx, pool, res, bench.Options{IsNotFound: isNotFound}); err != nil {
		fmt.Fprintf(out, "removing the %d objects the failed run wrote: %v\n", res.Objects, err)
	} else if n > 0 {
		fmt.Fprintf(out, "removed the %d objects the failed run wrote\n", n)
	}
}

func writeRunName(p Point, proc int) string { return fmt.Sprintf("sweep_%s_%d", p.ID, proc) }

func (d *shoalDriver) after(ctx context.Context, p Point, out io.Writer) error {
	if p.Type != "rados" || p.Params["mode"] != string(bench.ModeWrite) {
		return nil
	}
	procs, _ := positive(p, "procs")
	pool, err := d.conn.Pool(ctx, p.Params["pool"])
	if err != nil {
		return err
	}
	for i := range procs {
		if _, err := bench.CleanupWith(ctx, pool, bench.Options{RunName: writeRunName(p, i), IsNotFound: isNotFound, Out: out}); err != nil && !errors.Is(err, bench.ErrNoMetadata) {
			return err
		}
	}
	return nil
}

func (d *shoalDriver) cleanup(ctx context.Context, out io.Writer) error {
	var errs []error
	for name, pool := range d.made.Sets {
		p, err := d.conn.Pool(ctx, pool)
		if err == nil {
			_, err = bench.CleanupWith(ctx, p, bench.Options{RunName: name, IsNotFound: isNotFound, Out: out})
		}
		if err == nil || errors.Is(err, bench.ErrNoMetadata) {
			delete(d.made.Sets, name)
		} else {
			errs = append(errs, err)
		}
	}
	for spec := range d.made.Images {
		if img := d.images[spec]; img != nil {
			img.Close(ctx)
			delete(d.images, spec)
		}
		poolName, name, _ := strings.Cut(spec, "/")
		p, err := d.conn.Pool(ctx, poolName)
		if err == nil {
			err = rbd.Remove(ctx, p, name)
		}
		if err == nil || errors.Is(err, rbd.ErrNotFound) {
			delete(d.made.Images, spec)
			fmt.Fprintf(out, "removed image %s\n", spec)
		} else {
			errs = append(errs, err)
		}
	}
	errs = append(errs, d.made.save())
	if d.s3 != nil {
		errs = append(errs, d.s3.cleanup(ctx, out))
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool { return errors.Is(err, client.ErrNotFound) }

// recTarget records a rados benchmark's reads and writes of its data
// objects (benchmark_data_*), not of the run's metadata object.
type recTarget struct {
	p   *client.Pool
	rec *Recorder
}

func (t recTarget) WriteFull(ctx context.Context, oid string, data []byte) error {
	t0 := time.Now()
	err := t.p.WriteFull(ctx, oid, data)
	t.record(ctx, oid, len(data), t0, err)
	return err
}

func (t recTarget) Read(ctx context.Context, oid string, off, length uint64) ([]byte, error) {
	t0 := time.Now()
	b, err := t.p.Read(ctx, oid, off, length)
	t.record(ctx, oid, len(b), t0, err)
	return b, err
}

func (t recTarget) ReadRef(ctx context.Context, oid string, off, length uint64) ([]byte, func(), error) {
	t0 := time.Now()
	b, release, err := t.p.ReadRef(ctx, oid, off, length)
	t.record(ctx, oid, len(b), t0, err)
	return b, release, err
}

func (t recTarget) record(ctx context.Context, oid string, n int, t0 time.Time, err error) {
	if strings.HasPrefix(oid, "benchmark_data_") {
		t.rec.record(ctx, n, t0, err)
	}
}

func (t recTarget) Remove(ctx context.Context, oid string) error { return t.p.Remove(ctx, oid) }

// recDevice records a block benchmark's I/Os.
type recDevice struct {
	img *rbd.Image
	rec *Recorder
}

func (r recDevice) Size() uint64 { return r.img.Size() }

func (r recDevice) ReadAt(ctx context.Context, p []byte, off uint64) error {
	t0 := time.Now()
	err := r.img.ReadAt(ctx, p, off)
	r.rec.record(ctx, len(p), t0, err)
	return err
}

func (r recDevice) WriteAt(ctx context.Context, p []byte, off uint64) error {
	t0 := time.Now()
	err := r.img.WriteAt(ctx, p, off)
	r.rec.record(ctx, len(p), t0, err)
	return err
}

// record is Op for an operation begun at t0, not counting one that
// failed because the load was stopped.
func (r *Recorder) record(ctx context.Context, n int, t0 time.Time, err error) {
	if err != nil && ctx.Err() != nil {
		return
	}
	r.Op(n, time.Since(t0), err)
}
