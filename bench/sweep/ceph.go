package sweep

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/bench"
)

// cephDriver runs rados points with `rados bench` and block points with
// `rbd bench` (both from ceph-common), s3 points against the target's
// endpoint (radosgw). The tools print per-second totals, not each
// operation's latency: a Ceph point's samples have throughput, and its
// summary the mean and max latency rados bench prints (rbd bench prints
// none).
type cephDriver struct {
	spec *Spec
	args []string // -c CONF --id USER --keyring KEYRING
	made *made
	s3   *s3Driver
	dms  []Daemon
	cnt  Counts
}

func openCeph(ctx context.Context, s *Spec, m *made) (*cephDriver, error) {
	t := s.Target
	d := &cephDriver{spec: s, made: m}
	if t.Conf != "" {
		d.args = append(d.args, "-c", t.Conf)
	}
	if t.User != "" {
		d.args = append(d.args, "--id", strings.TrimPrefix(t.User, "client."))
	}
	if t.Keyring != "" {
		d.args = append(d.args, "--keyring", t.Keyring)
	}
	// Reaching the cluster: `rados lspools` fails fast on a wrong conf
	// or an unreachable MON.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, "rados", append(append([]string{}, d.args...), "--client_mount_timeout", "20", "lspools")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sweep: target: rados lspools: %v: %s", err, strings.TrimSpace(string(b)))
	}
	d.dms = byName(daemonNames(t, nil))
	// the OSDs found are this host's; a remote cluster's counts come
	// from the file (osds, devices, hosts)
	c := Counts{OSDs: countOSDs(d.dms)}
	if c.OSDs > 0 {
		c.Hosts = 1
	}
	d.cnt = counts(t, c)
	if ep, ak, sk := s3Env(t); ep != "" {
		var err error
		if d.s3, err = newS3(ep, ak, sk, m); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func countOSDs(dms []Daemon) int {
	n := 0
	for _, d := range dms {
		if strings.HasPrefix(d.Name, "osd.") || strings.HasPrefix(d.Name, "ceph-osd.") {
			n++
		}
	}
	return n
}

func (d *cephDriver) daemons() []Daemon { return d.dms }
func (d *cephDriver) counts() Counts    { return d.cnt }
func (d *cephDriver) close()            {}

// counters: rados and rbd bench do not read the OSDs' perf counters.
func (d *cephDriver) counters(context.Context) map[string]uint64 { return nil }

func (d *cephDriver) check(ctx context.Context, p Point) error {
	switch p.Type {
	case "rados":
		_, err := radosOptions(p)
		return err
	case "block":
		_, _, _, _, err := blockOptions(p)
		if err == nil && p.Params["engine"] == "fio" && d.spec.Target.Keyring != "" {
			// fio's rbd engine reads only the conf (CEPH_CONF)
			return errors.New("engine fio: fio's rbd engine takes its keyring from the conf, not from target keyring")
		}
		return err
	case "s3":
		if d.s3 == nil {
			return errors.New("s3 points against a ceph target need target endpoint and keys (radosgw)")
		}
		return d.s3.check(ctx, p)
	}
	return nil
}

// tool runs rados or rbd with the target's arguments, its output to out.
func (d *cephDriver) tool(ctx context.Context, out io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, append(append([]string{}, d.args...), args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func (d *cephDriver) prepare(ctx context.Context, p Point, out io.Writer) error {
	switch p.Type {
	case "rados":
		o, _ := radosOptions(p)
		if o.Mode == "write" {
			return nil
		}
		name := prefillName(p.Params["pool"], o.BlockSize)
		if _, ok := d.made.Sets[name]; ok {
			return nil
		}
		dur, _ := duration("prefill", p.Params["prefill"], prefillTime(d.spec))
		err := d.tool(ctx, out, "rados", "-p", p.Params["pool"], "bench", secs(dur), "write", "-b", strconv.Itoa(o.BlockSize),
			"-t", "16", "--no-cleanup", "--run-name", name)
		if err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
		d.made.Sets[name] = p.Params["pool"]
		return d.made.save()
	case "block":
		bo, _, _, size, _ := blockOptions(p)
		spec := p.Params["image"]
		exists := exec.CommandContext(ctx, "rbd", append(append([]string{}, d.args...), "info", spec)...).Run() == nil
		if _, ours := d.made.Images[spec]; !ours && exists {
			return nil // not the sweep's: used as it is
		}
		if !exists {
			d.made.Images[spec] = "created"
			if err := d.made.save(); err != nil {
				return err
			}
			if err := d.tool(ctx, out, "rbd", "create", "--size", strconv.FormatUint(size>>20, 10), spec); err != nil {
				return err
			}
		}
		if fill, _ := strconv.ParseBool(p.Params["prefill"]); fill && bo.IOType != "write" && d.made.Images[spec] == "created" {
			if err := d.tool(ctx, out, "rbd", "bench", "--io-type", "write", "--io-size", strconv.FormatUint(min(size, 4<<20), 10), "--io-threads", "8",
				"--io-total", strconv.FormatUint(size, 10), "--io-pattern", "seq", spec); err != nil {
				return err
			}
			d.made.Images[spec] = "filled"
			return d.made.save()
		}
	case "s3":
		return d.s3.prepare(ctx, p, out)
	}
	return nil
}

func secs(d time.Duration) string { return strconv.Itoa(max(int(d.Round(time.Second)/time.Second), 1)) }

func (d *cephDriver) run(ctx context.Context, p Point, dur time.Duration, rec *Recorder, out io.Writer) error {
	switch p.Type {
	case "rados":
		o, _ := radosOptions(p)
		procs, _ := positive(p, "procs")
		return eachProc(procs, func(i int) error {
			args := []string{"-p", p.Params["pool"], "bench", secs(dur), string(o.Mode), "-t", strconv.Itoa(o.Concurrency)}
			if o.Mode == "write" {
				args = append(args, "-b", strconv.Itoa(o.BlockSize), "--no-cleanup", "--run-name", writeRunName(p, i))
			} else {
				args = append(args, "--run-name", prefillName(p.Params["pool"], o.BlockSize))
			}
			pid, err := d.stream(ctx, out, "rados", args, parseRadosBench(o.BlockSize), rec)
			if err != nil && o.Mode == "write" && pid > 0 {
				// a failed or killed rados bench records no metadata:
				// remove its objects by their prefix
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				d.tool(cctx, out, "rados", "-p", p.Params["pool"], "cleanup", "--prefix", radosBenchPrefix(pid))
				cancel()
			}
			return err
		})
	case "block":
		bo, pool, image, _, _ := blockOptions(p)
		if p.Params["engine"] == "fio" {
			var env []string
			if t := d.spec.Target; t.Conf != "" {
				env = append(env, "CEPH_CONF="+t.Conf)
			}
			user := strings.TrimPrefix(d.spec.Target.User, "client.")
			if user == "" {
				user = "admin"
			}
			args := append(fioArgs(p, dur), "--ioengine=rbd", "--clientname="+user, "--pool="+pool, "--rbdname="+image)
			return runFio(ctx, args, env, rec, out)
		}
		// rbd bench stops by bytes only: give it more than it can move
		// and stop it at the point's end.
		bctx, cancel := context.WithTimeout(ctx, dur)
		defer cancel()
		args := []string{"bench", "--io-type", bo.IOType, "--io-size", strconv.Itoa(bo.IOSize), "--io-threads", strconv.Itoa(bo.Threads),
			"--io-total", "1P", "--io-pattern", bo.Pattern, "--rw-mix-read", strconv.Itoa(bo.RWMixRead), p.Params["image"]}
		_, err := d.stream(bctx, out, "rbd", args, parseRBDBench(bo.IOSize), rec)
		if err != nil && bctx.Err() != nil && ctx.Err() == nil {
			return nil // stopped at the end of the point, as meant
		}
		return err
	case "s3":
		return d.s3.run(ctx, p, dur, rec, out)
	}
	return fmt.Errorf("type %q", p.Type)
}

// lineParser turns a tool's output line into operations completed since
// the previous line; mean and max latency when the line gives them.
type lineParser func(line string) (ops, bytes uint64, mean, maxLat time.Duration)

// stream runs a tool, copying its output to out and feeding the
// operations its lines report to rec; it returns the tool's pid.
func (d *cephDriver) stream(ctx context.Context, out io.Writer, name string, args []string, parse lineParser, rec *Recorder) (int, error) {
	cmd := exec.CommandContext(ctx, name, append(append([]string{}, d.args...), args...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(out, line)
			ops, b, mean, mx := parse(line)
			rec.bulk(ops, b, nil, mean, mx)
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Wait()
	pw.Close()
	<-done
	if err != nil {
		return pid, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return pid, nil
}

// radosBenchPrefix is the object prefix of a rados bench process on
// this host (obj_bencher.cc: the host name cut to 29 bytes, the pid).
func radosBenchPrefix(pid int) string {
	h, _ := os.Hostname()
	if len(h) > 29 {
		h = h[:29]
	}
	return bench.ObjectPrefix(h, pid)
}

// parseRadosBench reads rados bench's per-second table (sec, Cur ops,
// started, finished, avg MB/s, cur MB/s, last lat, avg lat) and its
// summary's "Total writes made" / "Total reads made" (the operations
// after the last line), "Average Latency(s)" and "Max latency(s)".
func parseRadosBench(opSize int) lineParser {
	var finished uint64
	return func(line string) (uint64, uint64, time.Duration, time.Duration) {
		f := strings.Fields(line)
		if len(f) == 8 {
			if _, err := strconv.Atoi(f[0]); err == nil {
				if n, err := strconv.ParseUint(f[3], 10, 64); err == nil && n >= finished {
					ops := n - finished
					finished = n
					return ops, ops * uint64(opSize), 0, 0
				}
			}
		}
		for _, total := range []string{"Total writes made:", "Total reads made:"} {
			if v, ok := strings.CutPrefix(line, total); ok {
				// the operations finished after the last per-second line
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil && n > finished {
					ops := n - finished
					finished = n
					return ops, ops * uint64(opSize), 0, 0
				}
			}
		}
		if v, ok := strings.CutPrefix(line, "Average Latency(s):"); ok {
			return 0, 0, seconds(v), 0
		}
		if v, ok := strings.CutPrefix(line, "Max latency(s):"); ok {
			return 0, 0, 0, seconds(v)
		}
		return 0, 0, 0, 0
	}
}

// parseRBDBench reads rbd bench's per-second lines (SEC, OPS, OPS/SEC,
// BYTES/SEC): OPS is the total so far.
func parseRBDBench(ioSize int) lineParser {
	var total uint64
	return func(line string) (uint64, uint64, time.Duration, time.Duration) {
		f := strings.Fields(line)
		if len(f) < 4 {
			return 0, 0, 0, 0
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			return 0, 0, 0, 0
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || n < total {
			return 0, 0, 0, 0
		}
		ops := n - total
		total = n
		return ops, ops * uint64(ioSize), 0, 0
	}
}

func seconds(v string) time.Duration {
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0
	}
	return time.Duration(x * float64(time.Second))
}

func (d *cephDriver) after(ctx context.Context, p Point, out io.Writer) error {
	if p.Type != "rados" || p.Params["mode"] != "write" {
		return nil
	}
	procs, _ := positive(p, "procs")
	for i := range procs {
		if err := d.tool(ctx, out, "rados", "-p", p.Params["pool"], "cleanup", "--run-name", writeRunName(p, i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *cephDriver) cleanup(ctx context.Context, out io.Writer) error {
	var errs []error
	for name, pool := range d.made.Sets {
		if err := d.tool(ctx, out, "rados", "-p", pool, "cleanup", "--run-name", name); err == nil {
			delete(d.made.Sets, name)
		} else {
			errs = append(errs, err)
		}
	}
	for spec := range d.made.Images {
		if err := d.tool(ctx, out, "rbd", "rm", "--no-progress", spec); err == nil {
			delete(d.made.Images, spec)
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
