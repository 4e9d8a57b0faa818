package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-project/shoal/bench"
	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cls/lock"
	"github.com/shoal-project/shoal/cluster"
)

// radosCmd is `shoal rados`, with the verbs of Ceph's rados tool.
func radosCmd() *cobra.Command {
	var pool, runName, snap string
	cmd := &cobra.Command{
		Use:   "rados -p POOL VERB ARGS...",
		Short: "Object operations, as Ceph's rados tool (put, get, rm, stat, ls, append, truncate, xattrs, omap, snapshots, cleanup)",
	}
	cmd.PersistentFlags().StringVarP(&pool, "pool", "p", "", "pool")
	cmd.PersistentFlags().StringVarP(&snap, "snap", "s", "", "read at this pool snapshot (a name, or a snap id)")
	verb := func(use, short string, nargs int, fn poolFunc) {
		cmd.AddCommand(&cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(nargs), RunE: withPool(&pool, &snap, fn)})
	}
	readIn := func(path string) ([]byte, error) {
		if path == "-" {
			return io.ReadAll(os.Stdin)
		}
		return os.ReadFile(path)
	}
	verb("put OBJECT FILE", "Write FILE (- for stdin) as the object's content", 2, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		data, err := readIn(a[1])
		if err != nil {
			return err
		}
		return p.WriteFull(ctx, a[0], data)
	})
	verb("get OBJECT FILE", "Read the object into FILE (- for stdout)", 2, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		data, err := p.Read(ctx, a[0], 0, 0)
		if err != nil {
			return err
		}
		if a[1] == "-" {
			_, err = out.Write(data)
			return err
		}
		return os.WriteFile(a[1], data, 0o644)
	})
	verb("append OBJECT FILE", "Append FILE (- for stdin) to the object", 2, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		data, err := readIn(a[1])
		if err != nil {
			return err
		}
		return p.Append(ctx, a[0], data)
	})
	verb("truncate OBJECT SIZE", "Set the object's size", 2, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		n, err := strconv.ParseUint(a[1], 10, 64)
		if err != nil {
			return fmt.Errorf("truncate: bad size %q", a[1])
		}
		return p.Truncate(ctx, a[0], n)
	})
	verb("create OBJECT", "Create an empty object (fails if it exists)", 1, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		return p.Create(ctx, a[0], true)
	})
	verb("rm OBJECT", "Remove the object", 1, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		return p.Remove(ctx, a[0])
	})
	verb("stat OBJECT", "Show the object's mtime and size", 1, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		st, err := p.Stat(ctx, a[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s/%s mtime %s, size %d\n", p.Name(), a[0], st.Mtime.Format("2006-01-02T15:04:05.000000-0700"), st.Size)
		return nil
	})
	verb("ls", "List the pool's objects", 0, func(ctx context.Context, p *client.Pool, _ []string, out io.Writer) error {
		return p.List(ctx, func(n string) bool { fmt.Fprintln(out, n); return true })
	})
	verb("setxattr OBJECT NAME VALUE", "Set an extended attribute", 3, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		return p.SetXattr(ctx, a[0], a[1], []byte(a[2]))
	})
	verb("getxattr OBJECT NAME", "Print an extended attribute", 2, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		v, err := p.GetXattr(ctx, a[0], a[1])
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", v)
		return err
	})
	verb("rmxattr OBJECT NAME", "Remove an extended attribute", 2, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		return p.RmXattr(ctx, a[0], a[1])
	})
	verb("listxattr OBJECT", "List extended attribute names", 1, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		kvs, err := p.ListXattrs(ctx, a[0])
		for _, kv := range kvs {
			fmt.Fprintln(out, kv.Key)
		}
		return err
	})
	verb("setomapval OBJECT KEY VALUE", "Set an omap entry", 3, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		return p.OmapSet(ctx, a[0], []client.KV{{Key: a[1], Value: []byte(a[2])}})
	})
	verb("getomapval OBJECT KEY", "Print an omap value", 2, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		kvs, err := p.OmapGet(ctx, a[0], []string{a[1]})
		if err != nil {
			return err
		}
		if len(kvs) == 0 {
			return fmt.Errorf("getomapval: no key %q in %s", a[1], a[0])
		}
		_, err = fmt.Fprintf(out, "%s\n", kvs[0].Value)
		return err
	})
	verb("rmomapkey OBJECT KEY", "Remove an omap key", 2, func(ctx context.Context, p *client.Pool, a []string, _ io.Writer) error {
		return p.OmapRm(ctx, a[0], []string{a[1]})
	})
	omapList := func(vals bool) func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		return func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
			after := ""
			for {
				kvs, more, err := p.OmapList(ctx, a[0], after, "", 1000)
				if err != nil {
					return err
				}
				for _, kv := range kvs {
					if vals {
						fmt.Fprintf(out, "%s\nvalue (%d bytes) :\n%s\n\n", kv.Key, len(kv.Value), kv.Value)
					} else {
						fmt.Fprintln(out, kv.Key)
					}
					after = kv.Key
				}
				if !more {
					return nil
				}
			}
		}
	}
	verb("listomapkeys OBJECT", "List omap keys", 1, omapList(false))
	verb("listomapvals OBJECT", "List omap keys and values", 1, omapList(true))
	verb("mksnap SNAP", "Take a pool snapshot (as `shoal pool mksnap`)", 1, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		if err := p.SnapCreate(ctx, a[0]); err != nil {
			return err
		}
		fmt.Fprintf(out, "created pool %s snap %s\n", p.Name(), a[0])
		return nil
	})
	verb("rmsnap SNAP", "Remove a pool snapshot", 1, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		if err := p.SnapRemove(ctx, a[0]); err != nil {
			return err
		}
		fmt.Fprintf(out, "removed pool %s snap %s\n", p.Name(), a[0])
		return nil
	})
	verb("lssnap", "List the pool's snapshots", 0, func(ctx context.Context, p *client.Pool, _ []string, out io.Writer) error {
		return listPoolSnaps(p, out)
	})
	verb("rollback OBJECT SNAP", "Make the object what it was at pool snapshot SNAP (absent if it did not exist then)", 2, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		id, err := snapID(p, a[1])
		if err != nil {
			return err
		}
		if err := p.Rollback(ctx, a[0], id); err != nil {
			return err
		}
		fmt.Fprintf(out, "rolled back pool %s to snapshot %s\n", p.Name(), a[1])
		return nil
	})
	verb("listsnaps OBJECT", "Show the object's clones: the snaps each serves, its size and what it shares with the next", 1, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		ss, err := p.ListSnaps(ctx, a[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s:\ncloneid\tsnaps\tsize\toverlap\n", a[0])
		for _, c := range ss.Clones {
			snaps := make([]string, len(c.Snaps))
			for i, s := range c.Snaps {
				snaps[len(snaps)-1-i] = strconv.FormatUint(s, 10)
			}
			ov := make([]string, len(c.Overlap))
			for i, x := range c.Overlap {
				ov[i] = fmt.Sprintf("%d~%d", x.Off, x.Len)
			}
			fmt.Fprintf(out, "%d\t%s\t%d\t[%s]\n", c.ID, strings.Join(snaps, ","), c.Size, strings.Join(ov, ","))
		}
		if ss.HeadExists {
			st, err := p.Stat(ctx, a[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "head\t-\t%d\n", st.Size)
		}
		return nil
	})
	cmd.AddCommand(lockCmd(&pool))
	verb("watch OBJECT", "Watch the object: print each notify it receives (acknowledged with an empty reply) until interrupted", 1, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		var mu sync.Mutex
		w, err := p.Watch(ctx, a[0], 0, func(n client.Notification) []byte {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(out, "NOTIFY notify_id %d from %s: %s\n", n.ID, n.Notifier, n.Payload)
			return nil
		}, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(os.Stderr, "watch error: %v\n", err)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "press ctrl-c to exit\n")
		<-ctx.Done()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return w.Close(cctx)
	})
	var notifyTimeout float64
	notify := &cobra.Command{Use: "notify OBJECT MESSAGE", Short: "Send MESSAGE to the object's watchers; print who answered and who did not in time", Args: cobra.ExactArgs(2),
		RunE: withPool(&pool, &snap, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
			r, err := p.Notify(ctx, a[0], []byte(a[1]), time.Duration(notifyTimeout*float64(time.Second)))
			if err != nil {
				return err
			}
			for _, ack := range r.Acks {
				fmt.Fprintf(out, "reply client=%s cookie=%d : %d bytes %q\n", ack.Instance, ack.Cookie, len(ack.Reply), ack.Reply)
			}
			for _, to := range r.Timeouts {
				fmt.Fprintf(out, "timeout client=%s cookie=%d\n", to.Instance, to.Cookie)
			}
			return nil
		})}
	notify.Flags().Float64Var(&notifyTimeout, "timeout", 30, "seconds to wait for the watchers")
	cmd.AddCommand(notify)
	verb("listwatchers OBJECT", "List the object's watchers", 1, func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
		ws, err := p.ListWatchers(ctx, a[0])
		if err != nil {
			return err
		}
		for _, w := range ws {
			fmt.Fprintf(out, "watcher=%s cookie=%d\n", w.Instance, w.Cookie)
		}
		return nil
	})
	cleanup := &cobra.Command{Use: "cleanup", Short: "Remove the objects a `bench rados write --no-cleanup` left", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, a []string) error {
			return withSession(func(ctx context.Context, s *session, out io.Writer) error {
				p, err := s.conn.Pool(ctx, pool)
				if err != nil {
					return err
				}
				n, err := bench.CleanupWith(ctx, p, bench.Options{RunName: runName, IsNotFound: isNotFound, Out: out})
				if err == nil {
					fmt.Fprintf(out, "removed %d objects\n", n)
				}
				return err
			})(c, a)
		}}
	cleanup.Flags().StringVar(&runName, "run-name", "", "metadata object of the run (default benchmark_last_metadata)")
	cmd.AddCommand(cleanup)
	return cmd
}

func isNotFound(err error) bool { return errors.Is(err, client.ErrNotFound) }

// poolFunc is a `shoal rados` verb on an open pool.
type poolFunc func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error

// withPool runs fn on pool *pool, read at snapshot *snap if it is set
// (`-p POOL [--snap SNAP]`).
func withPool(pool, snap *string, fn poolFunc) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, a []string) error {
		if *pool == "" {
			return fmt.Errorf("rados: -p POOL is required")
		}
		return withSession(func(ctx context.Context, s *session, out io.Writer) error {
			p, err := s.conn.Pool(ctx, *pool)
			if err != nil {
				return err
			}
			if *snap != "" {
				id, err := snapID(p, *snap)
				if err != nil {
					return err
				}
				p = p.AtSnap(id)
			}
			return fn(ctx, p, a, out)
		})(c, a)
	}
}

// snapID is the id of pool snapshot name, or name itself if it is a
// number (a self-managed snap id).
func snapID(p *client.Pool, name string) (uint64, error) {
	id, err := p.SnapLookup(name)
	if err == nil {
		return id, nil
	}
	if n, perr := strconv.ParseUint(name, 10, 64); perr == nil && n > 0 {
		return n, nil
	}
	return 0, err
}

// listPoolSnaps prints the pool's snapshots as `rados lssnap` does.
func listPoolSnaps(p *client.Pool, out io.Writer) error {
	snaps, err := p.Snaps()
	if err != nil {
		return err
	}
	for _, s := range snaps {
		fmt.Fprintf(out, "%d\t%s\t%s\n", s.ID, s.Name, time.Unix(0, s.Stamp).Format("2006.01.02 15:04:05"))
	}
	fmt.Fprintf(out, "%d snaps\n", len(snaps))
	return nil
}

// benchCmd is `shoal bench rados`.
func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Load generators (rados, s3), sweeps, reports and comparisons"}
	var o bench.Options
	var pool, size, format string
	var seconds float64
	r := &cobra.Command{
		Use:   "rados write|seq|rand",
		Short: "rados bench: write objects, or read back those a write --no-cleanup left",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			o.Mode = bench.Mode(a[0])
			if o.Mode != bench.ModeWrite && o.Mode != bench.ModeSeq && o.Mode != bench.ModeRand {
				return fmt.Errorf("bench rados: mode %q: write, seq or rand", a[0])
			}
			n, err := bench.ParseSize(size)
			if err != nil {
				return err
			}
			o.BlockSize = n
			o.Duration = time.Duration(seconds * float64(time.Second))
			o.JSON = format == "json"
			o.IsNotFound = isNotFound
			return withSession(func(ctx context.Context, s *session, out io.Writer) error {
				p, err := s.conn.Pool(ctx, pool)
				if err != nil {
					return err
				}
				o.Out = out
				_, err = bench.Run(ctx, p, o)
				return err
			})(c, a)
		},
	}
	f := r.Flags()
	f.StringVarP(&pool, "pool", "p", "data", "pool")
	f.StringVarP(&size, "block-size", "b", "4M", "object size")
	f.IntVarP(&o.Concurrency, "concurrent-ios", "t", 16, "ops in flight")
	f.Float64Var(&seconds, "seconds", 60, "run time")
	f.BoolVar(&o.NoCleanup, "no-cleanup", false, "keep the objects (for seq/rand)")
	f.StringVar(&o.RunName, "run-name", "", "metadata object name (default benchmark_last_metadata)")
	f.StringVar(&format, "format", "plain", "plain or json")
	cmd.AddCommand(r, benchScaleCmd(), benchS3Cmd(), benchSweepCmd(), benchSweepClientCmd(), benchReportCmd(), benchCompareCmd())
	return cmd
}

// scalePool is a pool for bench.Scale.
type scalePool struct{ *client.Pool }

func (p scalePool) StatSize(ctx context.Context, oid string) (uint64, error) {
	st, err := p.Stat(ctx, oid)
	return st.Size, err
}

func benchScaleCmd() *cobra.Command {
	var o bench.ScaleOptions
	var pool, size, format string
	var levels []int
	var settle bool
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Does a pool slow down as it fills? Fill it in steps; at each, time new-object writes, stat+read of a random hot set, and a listing",
		Long: `Fill --pool with --levels objects in turn (untimed); at each level time
--writes more new objects, --reads stat+read pairs of a hot set of --hot
objects drawn at random from all of them (every read verified; each
object is first touched once, timed apart: from a store larger than
memory those reads come from the device), and a listing of the first
--list names (once, timed apart, then --list-rounds times more). A store that does not slow down as it
fills shows the same rates at every level. With --settle, a first write
window is timed right after the fill; then every OSD flushes its metadata
store's memtable, and once their compactions have stopped the writes are
timed again, then the reads and the listing (each after settling again):
those windows do not pay for the compactions the writes before them left
behind. The objects stay: use a pool of its own and remove it after.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, a []string) error {
			n, err := bench.ParseSize(size)
			if err != nil {
				return err
			}
			o.ObjectSize, o.Levels = n, levels
			return withSession(func(ctx context.Context, s *session, out io.Writer) error {
				p, err := s.conn.Pool(ctx, pool)
				if err != nil {
					return err
				}
				if format != "json" {
					o.Out = out
				}
				if settle {
					o.Settle = s.conn.SettleMetaStores
				}
				res, err := bench.Scale(ctx, scalePool{p}, o)
				if format == "json" && res != nil {
					printJSON(out, res)
				}
				return err
			})(c, a)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&pool, "pool", "p", "data", "pool")
	f.StringVarP(&size, "block-size", "b", "4K", "object size")
	f.IntSliceVar(&levels, "levels", []int{10_000, 100_000, 1_000_000}, "object counts to measure at, ascending")
	f.IntVarP(&o.Concurrency, "concurrent-ios", "t", 64, "ops in flight")
	f.IntVar(&o.Writes, "writes", 20_000, "new objects timed at each level")
	f.IntVar(&o.HotSet, "hot", 1_000, "objects in the hot set")
	f.IntVar(&o.Start, "start", 0, "objects an earlier run with the same object size left in the pool, its timed writes included: filling and timed writes go on after them (a level at or below is measured as it is; too low a count overwrites objects)")
	f.IntVar(&o.Reads, "reads", 20_000, "stat+read pairs timed at each level")
	f.IntVar(&o.List, "list", 10_000, "names listed at each level (from the start)")
	f.IntVar(&o.ListRounds, "list-rounds", 100, "times the listing is repeated after its first pass, timed together")
	f.BoolVar(&settle, "settle", false, "also time each level's writes, reads and listing after every OSD's metadata store has flushed and its compactions stopped")
	f.StringVar(&format, "format", "plain", "plain or json")
	return cmd
}

func benchS3Cmd() *cobra.Command {
	var o bench.S3Options
	var endpoints, size, format string
	cmd := &cobra.Command{
		Use:   "s3",
		Short: "S3 load (warp/COSBench style): PUT, GET or mixed against one or more gateways, every GET verified",
		Long: `Drive S3 gateways (Shoal's or any other) with --concurrency requests in
flight for --duration: --op put writes keys 0..objects-1 over and over (every
key new if --objects is 0), get reads random keys of that set (uploading any
that are missing first), mixed does 70% GET / 30% PUT. --size is fixed (64K)
or uniform in a range (1M-4M). Endpoints (comma-separated) are used
round-robin. Credentials come from the flags, else $AWS_ACCESS_KEY_ID /
$AWS_SECRET_ACCESS_KEY, else the cluster's s3.env.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			sz, err := bench.ParseSizes(size)
			if err != nil {
				return err
			}
			o.Sizes = sz
			env := s3Env()
			if endpoints == "" {
				endpoints = env["S3_ENDPOINT"]
			}
			if o.AccessKey == "" {
				o.AccessKey = env["AWS_ACCESS_KEY_ID"]
			}
			if o.SecretKey == "" {
				o.SecretKey = env["AWS_SECRET_ACCESS_KEY"]
			}
			if endpoints == "" || o.AccessKey == "" || o.SecretKey == "" {
				return fmt.Errorf("bench s3: need --endpoint and keys (flags, environment or the cluster's s3.env)")
			}
			o.Endpoints = strings.Split(endpoints, ",")
			ctx, cancel := cmdContext()
			defer cancel()
			if format == "json" {
				o.Out = nil
			} else {
				o.Out = c.OutOrStdout()
			}
			res, err := bench.RunS3(ctx, o)
			if format == "json" && res != nil {
				printJSON(c.OutOrStdout(), res)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&endpoints, "endpoint", "", "gateway URL(s), comma-separated (default $S3_ENDPOINT or the cluster's s3.env)")
	f.StringVar(&o.AccessKey, "access-key", "", "access key id")
	f.StringVar(&o.SecretKey, "secret-key", "", "secret key")
	f.StringVar(&o.Bucket, "bucket", "shoal-bench", "bucket (created if missing)")
	f.StringVar(&o.Location, "location", "", "LocationConstraint of the bucket it creates (\"default:indexless\": an indexless bucket)")
	f.StringVar(&o.SSE, "sse", "", "server-side encryption of the PUTs: AES256 (SSE-S3; default none)")
	f.StringVar(&o.Op, "op", "put", "put, get or mixed")
	f.StringVar(&size, "size", "64K", "object size, or MIN-MAX for uniform sizes")
	f.IntVar(&o.Concurrency, "concurrency", 16, "requests in flight")
	f.DurationVar(&o.Duration, "duration", 30*time.Second, "run time")
	f.IntVar(&o.Objects, "objects", 1000, "key space (put: 0 = a new key every PUT)")
	f.StringVar(&o.Prefix, "prefix", "shoal-bench/", "key prefix")
	f.BoolVar(&o.Cleanup, "cleanup", false, "delete the keys at the end")
	f.StringVar(&format, "format", "plain", "plain or json")
	return cmd
}

// s3Env is the S3 endpoint and keys from the environment, else from the
// cluster's s3.env.
func s3Env() map[string]string {
	env := map[string]string{}
	for _, k := range []string{"S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		env[k] = os.Getenv(k)
	}
	if env["AWS_ACCESS_KEY_ID"] != "" {
		return env
	}
	c, err := cluster.FindConf(confPath)
	if err != nil {
		return env
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, "s3.env"))
	if err != nil {
		return env
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") && env[k] == "" {
			env[k] = v
		}
	}
	return env
}

// lockCmd is `shoal rados lock`, as `rados lock`: advisory object locks
// (the OSDs' lock class). A lock taken by `lock get` is held by that
// command's client instance, which ends with it: like Ceph's, the lock
// stays until it expires, is unlocked by that instance or broken.
func lockCmd(pool *string) *cobra.Command {
	cmd := &cobra.Command{Use: "lock", Short: "Advisory object locks: get, info, list, break"}
	var cookie, tag, typ, desc string
	var duration float64
	noSnap := ""
	run := func(fn poolFunc) func(*cobra.Command, []string) error { return withPool(pool, &noSnap, fn) }
	get := &cobra.Command{Use: "get OBJECT NAME", Short: "Take the lock (exclusive unless --lock-type shared)", Args: cobra.ExactArgs(2),
		RunE: run(func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
			d := time.Duration(duration * float64(time.Second))
			switch typ {
			case "exclusive":
				return p.LockExclusive(ctx, a[0], a[1], cookie, desc, d, false)
			case "shared":
				return p.LockShared(ctx, a[0], a[1], cookie, tag, desc, d, false)
			}
			return fmt.Errorf("rados lock get: --lock-type %q: exclusive or shared", typ)
		})}
	get.Flags().StringVar(&cookie, "lock-cookie", "", "the holder's cookie")
	get.Flags().StringVar(&tag, "lock-tag", "", "shared locks: every holder's tag must match")
	get.Flags().StringVar(&typ, "lock-type", "exclusive", "exclusive or shared")
	get.Flags().StringVar(&desc, "lock-description", "", "a description kept with the hold")
	get.Flags().Float64Var(&duration, "lock-duration", 0, "seconds until the hold expires (0: never)")
	info := &cobra.Command{Use: "info OBJECT NAME", Short: "Show the lock's type, tag and holders (JSON)", Args: cobra.ExactArgs(2),
		RunE: run(func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
			li, err := p.LockInfo(ctx, a[0], a[1])
			if err != nil {
				return err
			}
			b, _ := json.Marshal(struct {
				Name string `json:"name"`
				*lock.Info
			}{a[1], li})
			fmt.Fprintf(out, "%s\n", b)
			return nil
		})}
	list := &cobra.Command{Use: "list OBJECT", Short: "List the object's locks", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
			names, err := p.ListLocks(ctx, a[0])
			if err != nil {
				return err
			}
			b, _ := json.Marshal(map[string]any{"objname": a[0], "locks": names})
			fmt.Fprintf(out, "%s\n", b)
			return nil
		})}
	var breakCookie string
	brk := &cobra.Command{Use: "break OBJECT NAME LOCKER", Short: "Remove LOCKER's hold (a client instance, as info lists it; --lock-cookie its cookie)", Args: cobra.ExactArgs(3),
		RunE: run(func(ctx context.Context, p *client.Pool, a []string, out io.Writer) error {
			return p.BreakLock(ctx, a[0], a[1], a[2], breakCookie)
		})}
	brk.Flags().StringVar(&breakCookie, "lock-cookie", "", "the holder's cookie")
	cmd.AddCommand(get, info, list, brk)
	return cmd
}
