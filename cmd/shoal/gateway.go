package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/gateway/rgw"
)

func gatewayCmd() *cobra.Command {
	var id string
	var fe cluster.Frontend
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run an S3 gateway (stateless: run as many as you like on one cluster)",
		Long: `Run an S3 gateway daemon. Its configuration is the [client.rgw.ID] section
of shoal.conf (rgw_frontends, rgw_obj_stripe_size, rgw_max_chunk_size, ...);
--listen overrides rgw_frontends' endpoint, --tls-cert and --tls-key serve
HTTPS. Users come from ` + "`shoal user create`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cluster.FindConf(confPath)
			if err != nil {
				return err
			}
			name := "" // the gateway's own entity, client.rgw.ID
			if cmd.Flags().Changed("name") {
				name = clientName
			}
			return cluster.RunGateway(c, "client.rgw."+id, name, fe)
		},
	}
	f := cmd.Flags()
	f.StringVar(&id, "id", "gateway", "gateway name: its configuration section is [client.rgw.ID]")
	f.StringVar(&fe.Addr, "listen", "", "address to serve S3 on (default from rgw_frontends, 127.0.0.1:7480)")
	f.StringVar(&fe.CertFile, "tls-cert", "", "TLS certificate (PEM); with --tls-key, serve HTTPS")
	f.StringVar(&fe.KeyFile, "tls-key", "", "TLS private key (PEM)")
	return cmd
}

// withStore runs fn with the gateway store of the cluster.
func withStore(fn func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return withSession(func(ctx context.Context, s *session, out io.Writer) error {
			st, err := rgw.OpenStore(ctx, s.conn, rgw.OptionsFromConfig(s.conf.For(cluster.GatewayName)))
			if err != nil {
				return err
			}
			return fn(ctx, st, out, args)
		})(cmd, args)
	}
}

func printJSON(out io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}

func userCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "S3 users and their keys (radosgw-admin user ...)"}
	var display, email, access, secret, tenant string
	create := &cobra.Command{Use: "create UID", Short: "Create a user with one access key (generated unless given); UID may be TENANT$UID", Args: cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			uid := args[0]
			if tenant != "" {
				if strings.Contains(uid, "$") {
					return fmt.Errorf("user %q: give the tenant once, with --tenant or as TENANT$UID", uid)
				}
				uid = tenant + "$" + uid
			}
			u, err := st.CreateUser(ctx, uid, display, email, rgw.Key{AccessKey: access, SecretKey: secret})
			if err != nil {
				return err
			}
			return printJSON(out, u)
		})}
	create.Flags().StringVar(&display, "display-name", "", "display name (default the uid)")
	create.Flags().StringVar(&tenant, "tenant", "", "the user's tenant (its buckets live in the tenant's namespace; users of others name them TENANT:BUCKET)")
	create.Flags().StringVar(&email, "email", "", "e-mail address")
	create.Flags().StringVar(&access, "access-key", "", "access key id (default generated)")
	create.Flags().StringVar(&secret, "secret", "", "secret key (default generated)")
	info := &cobra.Command{Use: "info UID", Short: "Show a user and its keys", Args: cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			u, err := st.GetUser(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(out, u)
		})}
	ls := &cobra.Command{Use: "ls", Short: "List user ids", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			ids, err := st.ListUsers(ctx)
			if err != nil {
				return err
			}
			for _, id := range ids {
				fmt.Fprintln(out, id)
			}
			return nil
		})}
	rm := &cobra.Command{Use: "rm UID", Short: "Remove a user (it must own no buckets)", Args: cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			return st.RemoveUser(ctx, args[0])
		})}
	key := &cobra.Command{Use: "key", Short: "Add or revoke a user's access keys"}
	var kAccess, kSecret string
	kc := &cobra.Command{Use: "create UID", Short: "Give the user another access key (generated unless given)", Args: cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			k, err := st.AddKey(ctx, args[0], rgw.Key{AccessKey: kAccess, SecretKey: kSecret})
			if err != nil {
				return err
			}
			return printJSON(out, k)
		})}
	kc.Flags().StringVar(&kAccess, "access-key", "", "access key id (default generated)")
	kc.Flags().StringVar(&kSecret, "secret", "", "secret key (default generated)")
	krm := &cobra.Command{Use: "rm UID ACCESS_KEY", Short: "Revoke an access key", Args: cobra.ExactArgs(2),
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			return st.RemoveKey(ctx, args[0], args[1])
		})}
	key.AddCommand(kc, krm)
	caps := &cobra.Command{Use: "caps", Short: "Grant or revoke a user's administrative capabilities (radosgw-admin caps add|rm)"}
	for _, add := range []bool{true, false} {
		use, short := "add UID CAPS", "Grant capabilities, as TYPE=PERM[;TYPE=PERM] (PERM read, write or *; TYPE user-policy: manage other users' IAM policies)"
		if !add {
			use, short = "rm UID CAPS", "Revoke capabilities (TYPE=PERM[;TYPE=PERM]; the PERM is ignored)"
		}
		caps.AddCommand(&cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(2),
			RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
				c, err := rgw.ParseCaps(args[1])
				if err != nil {
					return err
				}
				u, err := st.SetCaps(ctx, args[0], c, add)
				if err != nil {
					return err
				}
				return printJSON(out, u)
			})})
	}
	var maxBuckets int
	modify := &cobra.Command{Use: "modify UID", Short: "Change a user's settings (--max-buckets: -1 for no limit)", Args: cobra.ExactArgs(1)}
	modify.RunE = func(c *cobra.Command, args []string) error {
		if !c.Flags().Changed("max-buckets") {
			return errors.New("nothing to change: give --max-buckets")
		}
		return withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			u, err := st.SetMaxBuckets(ctx, args[0], maxBuckets)
			if err != nil {
				return err
			}
			return printJSON(out, u)
		})(c, args)
	}
	modify.Flags().IntVar(&maxBuckets, "max-buckets", rgw.DefaultMaxBuckets, "most buckets the user may own (-1: no limit)")
	cmd.AddCommand(create, info, ls, rm, key, caps, modify)
	return cmd
}

func bucketCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bucket", Short: "S3 buckets (radosgw-admin bucket ...)"}
	var uid string
	ls := &cobra.Command{Use: "ls", Short: "List buckets (of --uid, default every user's)", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			uids := []string{uid}
			if uid == "" {
				var err error
				if uids, err = st.ListUsers(ctx); err != nil {
					return err
				}
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BUCKET\tOWNER\tPLACEMENT\tSHARDS\tCREATED")
			for _, u := range uids {
				names, err := st.UserBuckets(ctx, u)
				if err != nil {
					return err
				}
				for _, n := range names {
					b, err := st.GetBucket(ctx, n)
					if err != nil {
						continue
					}
					shards := 0
					if !b.Indexless() {
						shards = b.Index.TotalShards()
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", b.Name, b.Owner, b.Placement, shards, b.Created.Format(time.RFC3339))
				}
			}
			return tw.Flush()
		})}
	ls.Flags().StringVar(&uid, "uid", "", "only this user's buckets")
	stats := &cobra.Command{Use: "stats BUCKET", Short: "Objects, bytes and pending index operations of a bucket", Args: cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			b, err := st.GetBucket(ctx, args[0])
			if err != nil {
				return err
			}
			s, err := st.Stats(ctx, b)
			if err != nil {
				return err
			}
			return printJSON(out, struct {
				*rgw.Bucket
				Usage rgw.BucketStats `json:"usage"`
			}{b, s})
		})}
	var fix, full, orphans bool
	var orphanGrace time.Duration
	check := &cobra.Command{Use: "check BUCKET", Short: "Reconcile the bucket index with the objects (--fix to repair; --check-objects: every entry; --check-orphans: leaked tails)", Args: cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			b, err := st.GetBucket(ctx, args[0])
			if err != nil {
				return err
			}
			r, err := st.CheckBucket(ctx, b, fix, full)
			if err != nil {
				return err
			}
			if orphans {
				if r.Orphans, err = st.CheckOrphans(ctx, b, fix, orphanGrace); err != nil {
					return err
				}
			}
			return printJSON(out, r)
		})}
	check.Flags().BoolVar(&fix, "fix", false, "repair what the check finds")
	check.Flags().BoolVar(&full, "check-objects", false, "also compare every index entry with its object")
	check.Flags().BoolVar(&orphans, "check-orphans", false, "also look for tail objects nothing refers to (lists the whole data pool); --fix queues them for GC")
	check.Flags().DurationVar(&orphanGrace, "orphan-grace", 24*time.Hour, "with --check-orphans, only tails older than this (radosgw-admin's --orphan-stale-secs)")
	var at string
	reshard := &cobra.Command{Use: "reshard BUCKET", Short: "Split a bucket index range online (the fullest range at its median key, or the range holding --at)", Args: cobra.ExactArgs(1),
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			return st.SplitRange(ctx, args[0], at, out)
		})}
	reshard.Flags().StringVar(&at, "at", "", "split at this key (it starts the upper half)")
	cmd.AddCommand(ls, stats, check, reshard)
	return cmd
}

func gcCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "gc", Short: "The gateway's garbage collection queue (tails of overwritten and deleted objects)"}
	var all bool
	list := &cobra.Command{Use: "list", Short: "List queued garbage (due entries; --include-all: every entry)", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			es, err := st.GCList(ctx, all)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TAG\tDUE\tOBJECTS")
			for _, e := range es {
				fmt.Fprintf(tw, "%s\t%s\t%d\n", e.Tag, e.Due.Format(time.RFC3339), len(e.OIDs()))
			}
			return tw.Flush()
		})}
	list.Flags().BoolVar(&all, "include-all", false, "also entries not yet due (rgw_gc_obj_min_wait)")
	var pall bool
	process := &cobra.Command{Use: "process", Short: "Delete due garbage now (--include-all: everything queued)", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			n, err := st.GCProcess(ctx, pall)
			fmt.Fprintf(out, "removed %d objects\n", n)
			return err
		})}
	process.Flags().BoolVar(&pall, "include-all", false, "ignore rgw_gc_obj_min_wait")
	cmd.AddCommand(list, process)
	return cmd
}

func lcCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "lc", Short: "Bucket lifecycle: the buckets with a lifecycle configuration and their passes (radosgw-admin lc)"}
	list := &cobra.Command{Use: "list", Short: "List the buckets registered for lifecycle processing and their last pass", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			es, err := st.LCList(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "BUCKET\tLAST RUN\tSTATUS")
			for _, e := range es {
				last := "-"
				if !e.LastRun.IsZero() {
					last = e.LastRun.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Bucket, last, e.Status)
			}
			return tw.Flush()
		})}
	process := &cobra.Command{Use: "process", Short: "Run a lifecycle pass over every registered bucket now (fails if a gateway is running one)", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			res, err := st.LCProcess(ctx, true, out)
			fmt.Fprintf(out, "%d buckets: %d objects expired, %d uploads aborted\n", res.Buckets, res.Expired, res.Aborted)
			return err
		})}
	cmd.AddCommand(list, process)
	return cmd
}

// quotaCmd is radosgw-admin's quota set|enable|disable.
func quotaCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "quota", Short: "User and bucket quotas (radosgw-admin quota set|enable|disable)"}
	var uid, scope, bucket string
	var maxObjects, maxSize int64
	flags := func(c *cobra.Command) {
		c.Flags().StringVar(&uid, "uid", "", "the user (scope user, or bucket: the default of the user's buckets)")
		c.Flags().StringVar(&scope, "quota-scope", "bucket", "user (all the user's buckets together) or bucket")
		c.Flags().StringVar(&bucket, "bucket", "", "one bucket's own quota (instead of --uid)")
	}
	apply := func(fn func(q *rgw.Quota)) func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
		return func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			switch {
			case bucket != "" && uid == "":
				b, err := st.SetBucketQuota(ctx, bucket, fn)
				if err != nil {
					return err
				}
				return printJSON(out, b.Quota)
			case uid != "" && bucket == "":
				u, err := st.SetQuota(ctx, uid, scope, fn)
				if err != nil {
					return err
				}
				return printJSON(out, map[string]rgw.Quota{"user_quota": u.UserQuota, "bucket_quota": u.BucketQuota})
			}
			return errors.New("give --uid (with --quota-scope) or --bucket")
		}
	}
	set := &cobra.Command{Use: "set", Short: "Set the limits (-1: none) of a quota, leaving it enabled or not", Args: cobra.NoArgs}
	set.RunE = func(c *cobra.Command, args []string) error {
		objSet, sizeSet := c.Flags().Changed("max-objects"), c.Flags().Changed("max-size")
		if !objSet && !sizeSet {
			return errors.New("give --max-objects or --max-size")
		}
		return withStore(apply(func(q *rgw.Quota) {
			if objSet {
				q.MaxObjects = maxObjects
			}
			if sizeSet {
				q.MaxSize = maxSize
			}
		}))(c, args)
	}
	flags(set)
	set.Flags().Int64Var(&maxObjects, "max-objects", -1, "most objects (-1: no limit)")
	set.Flags().Int64Var(&maxSize, "max-size", -1, "most bytes (-1: no limit)")
	enable := &cobra.Command{Use: "enable", Short: "Enforce a quota", Args: cobra.NoArgs,
		RunE: withStore(apply(func(q *rgw.Quota) { q.Enabled = true }))}
	disable := &cobra.Command{Use: "disable", Short: "Stop enforcing a quota (its limits are kept)", Args: cobra.NoArgs,
		RunE: withStore(apply(func(q *rgw.Quota) { q.Enabled = false }))}
	flags(enable)
	flags(disable)
	cmd.AddCommand(set, enable, disable)
	return cmd
}

// usageCmd is radosgw-admin's usage show, from the bucket index's totals.
func usageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "usage", Short: "Objects and bytes per user and bucket (radosgw-admin usage show)"}
	var uid string
	show := &cobra.Command{Use: "show", Short: "Show the usage of --uid, or of every user", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			uids := []string{uid}
			if uid == "" {
				var err error
				if uids, err = st.ListUsers(ctx); err != nil {
					return err
				}
			}
			type entry struct {
				User    string               `json:"user"`
				Total   rgw.Usage            `json:"total"`
				Buckets map[string]rgw.Usage `json:"buckets"`
			}
			var res []entry
			for _, u := range uids {
				total, per, err := st.UserUsage(ctx, u)
				if err != nil {
					return err
				}
				res = append(res, entry{User: u, Total: total, Buckets: per})
			}
			return printJSON(out, res)
		})}
	show.Flags().StringVar(&uid, "uid", "", "one user (default: every user)")
	cmd.AddCommand(show)
	return cmd
}

// sseCmd manages the SSE-S3 master keys.
func sseCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sse", Short: "The gateway's SSE-S3 master keys (they seal each object's data key)"}
	ls := &cobra.Command{Use: "keys", Short: "List the master key ids and the current one", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			ids, cur, err := st.MasterKeyIDs(ctx)
			if err != nil {
				return err
			}
			return printJSON(out, map[string]any{"keys": ids, "current": cur})
		})}
	rotate := &cobra.Command{Use: "rotate-key", Short: "Add a master key that seals the data keys of new objects (older objects keep theirs; restart the gateways to use it)", Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, st *rgw.Store, out io.Writer, args []string) error {
			id, err := st.RotateMasterKey(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "current master key: %s\n", id)
			return nil
		})}
	cmd.AddCommand(ls, rotate)
	return cmd
}
