package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/shoal-project/shoal/autoscaler"
	"github.com/shoal-project/shoal/caps"
	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cluster"
	"github.com/shoal-project/shoal/config"
	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
	"github.com/shoal-project/shoal/status"
)

// Global flags: --conf, and the identity the CLI connects as (--name,
// --keyring), as Ceph's tools take them.
var confPath, clientName, keyringPath string

// session is a connection to the cluster the configuration names.
type session struct {
	conf *cluster.Conf
	conn *client.Conn
	args []string // the command's arguments
}

func connect(ctx context.Context) (*session, error) {
	c, err := cluster.FindConf(confPath)
	if err != nil {
		return nil, err
	}
	kr, err := c.Keyring(clientName)
	if keyringPath != "" {
		kr, err = msgr.LoadKeyring(keyringPath, clientName)
	}
	if err != nil {
		return nil, err
	}
	ccfg, err := c.ClientConfig(clientName, kr)
	if err != nil {
		return nil, err
	}
	conn, err := client.Connect(ctx, ccfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", strings.Join(c.MonAddrs(), ","), err)
	}
	return &session{conf: c, conn: conn}, nil
}

// cmdContext ends on Ctrl-C.
func cmdContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// withSession runs fn with a connected session.
func withSession(fn func(ctx context.Context, s *session, out io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx, cancel := cmdContext()
		defer cancel()
		s, err := connect(ctx)
		if err != nil {
			return err
		}
		s.args = args
		defer s.conn.Close()
		return fn(ctx, s, cmd.OutOrStdout())
	}
}

func mgrCmd() *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "mgr --id ID",
		Short: "Run a manager daemon: the dashboard and the cluster's metrics (ceph-mgr; its [mgr.ID] section of shoal.conf gives mgr_dashboard_addr and metrics_addr)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := cluster.FindConf(confPath)
			if err != nil {
				return err
			}
			return cluster.RunMgr(c, "mgr."+id)
		},
	}
	cmd.Flags().StringVar(&id, "id", "x", "manager id")
	return cmd
}

func monCmd() *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "mon --id ID",
		Short: "Run a MON daemon (its [mon.ID] section of shoal.conf gives its address), or change the MONs (add, rm, dump)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := cluster.FindConf(confPath)
			if err != nil {
				return err
			}
			return cluster.RunMon(c, id)
		},
	}
	cmd.Flags().StringVar(&id, "id", "a", "MON id")
	cmd.AddCommand(&cobra.Command{Use: "add ID [ADDR]", Short: "Add a MON to the cluster (ceph mon add)",
		Long: `Add MON ID at ADDR (host:port; the raft port is the next one; default: free
ports on 127.0.0.1). The MONs take it as a non-voter, which receives the log
and votes once it has caught up, so adding a MON never stalls the cluster.
shoal.conf gains its [mon.ID] section and its address in mon_host; start it
afterwards with "shoal mon --id ID" on its host, or "shoal up" for a local
cluster.`,
		Args: cobra.RangeArgs(1, 2), RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			addr := ""
			if len(s.args) == 2 {
				addr = s.args[1]
			}
			return cluster.AddMon(ctx, s.conf, s.conn, s.args[0], addr, out)
		})})
	cmd.AddCommand(&cobra.Command{Use: "rm ID|ADDR", Short: "Remove a MON from the cluster (ceph mon rm)",
		Long: `Remove MON ID (or the MON at ADDR) from the MON map; it stops by itself once
it learns it, and its data directory is left in place. Refused for the last
MON, and when the MONs left that answer now could not form a quorum.
shoal.conf loses its [mon.ID] section and its address in mon_host.`,
		Args: cobra.ExactArgs(1), RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			return cluster.RemoveMon(ctx, s.conf, s.conn, s.args[0], out)
		})})
	cmd.AddCommand(&cobra.Command{Use: "dump", Short: "Show the MON map: its epoch and each MON's address and role (ceph mon dump)",
		Args: cobra.NoArgs, RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			return cluster.MonDump(ctx, s.conf, s.conn, out)
		})})
	return cmd
}

func upCmd() *cobra.Command {
	var o cluster.UpOptions
	var fg, detach bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster (MONs and OSDs as separate processes), or restart the one in --data",
		Long: `Start a local cluster: --mons MONs (1, 3 or 5) and --osds OSD processes, each
with its own data directory under --data, a shoal.conf and keyring there, and a
replicated pool "data". Running it again on the same directory restarts the
daemons that are not running, with their data. Logs go to DATA/log, pids to
DATA/run. --foreground (the default on a terminal) stays up until Ctrl-C and
then stops the cluster; --detach returns once the cluster is healthy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Foreground = term.IsTerminal(int(os.Stdin.Fd()))
			if fg {
				o.Foreground = true
			}
			if detach {
				o.Foreground = false
			}
			o.Out = cmd.OutOrStdout()
			return cluster.Up(context.Background(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "shoal-data", "data directory")
	f.IntVar(&o.Mons, "mons", 1, "MONs (1, 3 or 5)")
	f.IntVar(&o.OSDs, "osds", 3, "OSDs")
	f.IntVar(&o.AddOSDs, "add-osd", 0, "add this many OSDs to the existing cluster in --data (its PGs move onto them)")
	f.StringVar(&o.OSDSize, "osd-size", "", "size of each new OSD's data file (bluestore_block_size; default 10G, sparse)")
	f.StringVar(&o.DBDir, "db-dir", "", "put each new OSD's metadata store (BlueStore's block.db) in DIR/osd.N, on a faster device")
	f.StringVar(&o.WALDir, "wal-dir", "", "put each new OSD's metadata write-ahead log (block.wal) in DIR/osd.N")
	f.BoolVar(&fg, "foreground", false, "stay up until Ctrl-C (default when attached to a terminal)")
	f.BoolVar(&detach, "detach", false, "return once the cluster is healthy")
	f.BoolVar(&o.NoGateway, "no-gateway", false, "do not start the S3 gateway")
	f.IntVar(&o.BasePort, "base-port", 0, "place a new cluster's ports from this one (MON i at +2i, the dashboard at +10, metrics +11, S3 +12) instead of free ports from Ceph's defaults")
	f.StringArrayVarP(&o.Set, "set", "o", nil, "NAME=VALUE: an option for [global] of a new cluster's shoal.conf (repeatable; as vstart.sh -o)")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "how long to wait for the cluster to become healthy")
	return cmd
}

func downCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every daemon of the local cluster in --data",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cluster.Down(data, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&data, "data", "shoal-data", "data directory")
	return cmd
}

// gather is the cluster's status as `shoal status` shows it.
func gather(ctx context.Context, s *session) (*status.Status, error) {
	kr, err := s.conf.Keyring("client.admin")
	if err != nil {
		return nil, err
	}
	mons := s.conn.MonAddrs() // the MON map's, as the client follows it
	if len(mons) == 0 {
		mons = s.conf.MonAddrs()
	}
	return cluster.Status(ctx, s.conf, s.conn, mons, kr)
}

func statusCmds() []*cobra.Command {
	var format string
	var detail bool
	st := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's health, daemons, pools and PG states (ceph -s)",
		Args:  cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			x, err := gather(ctx, s)
			if err != nil {
				return err
			}
			if format == "json" {
				return json.NewEncoder(out).Encode(x)
			}
			x.Text(out)
			return nil
		}),
	}
	st.Flags().StringVar(&format, "format", "plain", "plain or json")
	h := &cobra.Command{
		Use:   "health [detail]",
		Short: "Show HEALTH_OK, HEALTH_WARN or HEALTH_ERR and the problems",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			detail = len(args) == 1 && args[0] == "detail"
			if len(args) == 1 && !detail {
				return fmt.Errorf("health: unknown argument %q (detail)", args[0])
			}
			return withSession(func(ctx context.Context, s *session, out io.Writer) error {
				x, err := gather(ctx, s)
				if err != nil {
					return err
				}
				if format == "json" {
					return json.NewEncoder(out).Encode(map[string]any{"health": x.Health, "checks": x.Checks})
				}
				x.HealthText(out, detail)
				return nil
			})(cmd, args)
		},
	}
	h.Flags().StringVar(&format, "format", "plain", "plain or json")
	df := &cobra.Command{
		Use:   "df",
		Short: "Show raw capacity and use, and each pool's objects and bytes",
		Args:  cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			x, err := gather(ctx, s)
			if err != nil {
				return err
			}
			if format == "json" {
				return json.NewEncoder(out).Encode(x)
			}
			fmt.Fprintf(out, "--- RAW STORAGE ---\nSIZE        AVAIL       USED\n%-11s %-11s %s\n\n", status.Bytes(x.TotalKB<<10), status.Bytes((x.TotalKB-min(x.UsedKB, x.TotalKB))<<10), status.Bytes(x.UsedKB<<10))
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(out, "--- POOLS ---")
			fmt.Fprintln(tw, "POOL\tID\tPGS\tSTORED\tOBJECTS\tSIZE")
			for _, p := range x.PoolStats {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\n", p.Name, p.ID, p.PGNum, status.Bytes(uint64(max(p.Bytes, 0))), p.Objects, p.Size)
			}
			return tw.Flush()
		}),
	}
	df.Flags().StringVar(&format, "format", "plain", "plain or json")
	return []*cobra.Command{st, h, df}
}

// monCommand runs a MON command and prints its message.
func monCommand(prefix string, args func([]string) (map[string]string, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, a []string) error {
		m, err := args(a)
		if err != nil {
			return err
		}
		return withSession(func(ctx context.Context, s *session, out io.Writer) error {
			r, err := s.conn.MonCommand(ctx, prefix, m)
			if err != nil {
				return err
			}
			if r.Message != "" {
				fmt.Fprintln(out, r.Message)
			}
			return nil
		})(cmd, a)
	}
}

// monLines runs a MON command whose data is a JSON list of strings and
// prints one per line.
func monLines(prefix string, args func([]string) map[string]string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, a []string) error {
		return withSession(func(ctx context.Context, s *session, out io.Writer) error {
			r, err := s.conn.MonCommand(ctx, prefix, args(a))
			if err != nil {
				return err
			}
			var lines []string
			if err := json.Unmarshal(r.Data, &lines); err != nil {
				return fmt.Errorf("%s: bad reply: %w", prefix, err)
			}
			for _, l := range lines {
				fmt.Fprintln(out, l)
			}
			return nil
		})(cmd, a)
	}
}

func noArgs([]string) map[string]string { return nil }

func osdCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "osd --data DIR",
		Short: "Run an OSD daemon on DIR, or manage OSDs (tree, in, out, down, rm, crush)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if data == "" {
				return fmt.Errorf("osd: --data DIR is required to run an OSD (or use a subcommand: tree, in, out, down, rm, crush)")
			}
			c, err := cluster.FindConf(confPath)
			if err != nil {
				return err
			}
			return cluster.RunOSD(c, data)
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "the OSD's data directory")
	cmd.AddCommand(poolCmd()) // `shoal osd pool …`, as Ceph spells it; `shoal pool …` too
	cmd.AddCommand(blocklistCmd())
	cmd.AddCommand(upmapCmds()...)
	ids := func(a []string) (map[string]string, error) {
		return map[string]string{"ids": strings.Join(a, ",")}, nil
	}
	for _, verb := range []string{"in", "out", "down"} {
		cmd.AddCommand(&cobra.Command{Use: verb + " ID...", Short: "Mark OSDs " + verb, Args: cobra.MinimumNArgs(1), RunE: monCommand("osd "+verb, ids)})
	}
	flag := func(a []string) (map[string]string, error) { return map[string]string{"key": a[0]}, nil }
	const flags = "pause, noup, nodown, noout, noin, nobackfill, norecover, noscrub, nodeep-scrub, pauserd, pausewr"
	cmd.AddCommand(&cobra.Command{Use: "set FLAG", Short: "Set a cluster flag: " + flags, Args: cobra.ExactArgs(1), RunE: monCommand("osd set", flag)})
	cmd.AddCommand(&cobra.Command{Use: "unset FLAG", Short: "Clear a cluster flag", Args: cobra.ExactArgs(1), RunE: monCommand("osd unset", flag)})
	var sure bool
	lost := &cobra.Command{Use: "lost ID --yes-i-really-mean-it", Short: "Declare a down OSD's data gone, so PGs waiting for it (down) go on without it", Args: cobra.ExactArgs(1),
		RunE: monCommand("osd lost", func(a []string) (map[string]string, error) {
			m := map[string]string{"id": strings.TrimPrefix(a[0], "osd.")}
			if sure {
				m["sure"] = "--yes-i-really-mean-it"
			}
			return m, nil
		})}
	lost.Flags().BoolVar(&sure, "yes-i-really-mean-it", false, "confirm: whatever only this OSD held is lost")
	cmd.AddCommand(lost)
	cmd.AddCommand(&cobra.Command{Use: "rm ID", Short: "Remove a down OSD from the map and CRUSH", Args: cobra.ExactArgs(1),
		RunE: monCommand("osd rm", func(a []string) (map[string]string, error) {
			return map[string]string{"id": strings.TrimPrefix(a[0], "osd.")}, nil
		})})
	cmd.AddCommand(&cobra.Command{Use: "tree", Short: "Show the CRUSH hierarchy with each OSD's status", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			status.Tree(out, s.conn)
			return nil
		})})
	var mapFormat string
	omap := &cobra.Command{Use: "map POOL OBJECT", Short: "Show the PG, up and acting sets of an object (ceph osd map)", Args: cobra.ExactArgs(2),
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			m := s.conn.Map()
			p, err := m.PoolByName(s.args[0])
			if err != nil {
				return fmt.Errorf("pool %q: %w", s.args[0], err)
			}
			pg, err := m.ObjectToPG(p.ID, s.args[1], "")
			if err != nil {
				return err
			}
			mp, err := m.MapPG(pg)
			if err != nil {
				return err
			}
			if mapFormat == "json" {
				return json.NewEncoder(out).Encode(map[string]any{"epoch": m.Epoch, "pool": p.Name, "pool_id": p.ID, "objname": s.args[1],
					"pgid": pg.String(), "up": mp.Up, "up_primary": mp.UpPrimary, "acting": mp.Acting, "acting_primary": mp.ActingPrimary})
			}
			_, err = fmt.Fprintf(out, "osdmap e%d pool '%s' (%d) object '%s' -> pg %s -> up (%s, p%d) acting (%s, p%d)\n", m.Epoch, p.Name, p.ID, s.args[1],
				pg, crush.FormatMapping(mp.Up), mp.UpPrimary, crush.FormatMapping(mp.Acting), mp.ActingPrimary)
			return err
		})}
	omap.Flags().StringVar(&mapFormat, "format", "plain", "plain or json")
	cmd.AddCommand(omap)
	var dfFormat string
	df := &cobra.Command{Use: "df", Short: "Show each OSD's size, use, %USE, VAR and PG count (ceph osd df)", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			x, err := gather(ctx, s)
			if err != nil {
				return err
			}
			rows, avg := status.OSDDF(s.conn.Map(), x.OSDStats)
			if dfFormat == "json" {
				return json.NewEncoder(out).Encode(map[string]any{"nodes": rows, "summary": map[string]float64{"average_utilization": avg}})
			}
			status.OSDDFText(out, rows, avg)
			return nil
		})}
	df.Flags().StringVar(&dfFormat, "format", "plain", "plain or json")
	cmd.AddCommand(df)
	var perfFormat string
	perf := &cobra.Command{Use: "perf", Short: "Show each OSD's op counters: client ops and bytes as primary, replicated sub-ops (Ceph's perf counters)", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			var all []osdop.Stats
			for _, id := range s.conn.Map().UpOSDs() {
				st, err := s.conn.OSDStats(ctx, id)
				if err != nil {
					return err
				}
				all = append(all, st)
			}
			if perfFormat == "json" {
				return json.NewEncoder(out).Encode(all)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "OSD\tOP_W\tOP_W_IN_BYTES\tOP_R\tOP_R_OUT_BYTES\tSUBOP_W\tSUBOP_W_IN_BYTES\tSHARD_W\tSHARD_W_BYTES\tSHARD_R\tSHARD_R_BYTES\tEC_RECONSTRUCT\tEC_REBUILDS\tEC_SHARD_COPIES\tRECOVERY_OPS\tRECOVERY_BYTES\tMCLOCK_WAITS\tRECOVERY_PREEMPTED\tMCLOCK_IOPS\tMCLOCK_SCALE\t")
			for _, st := range all {
				p := st.Perf
				fmt.Fprintf(tw, "osd.%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.2f\t\n", st.ID, p.OpW, p.OpWInBytes, p.OpR, p.OpROutBytes, p.SubopW, p.SubopWBytes,
					p.ShardW, p.ShardWBytes, p.ShardR, p.ShardRBytes, p.ECReconstruct, p.ECRebuilds, p.ECShardCopies, p.RecoveryOps, p.RecoveryBytes, p.MClockWaits, p.RecoveryPreempted, p.MClockCapacityIOPS, p.MClockScale)
			}
			return tw.Flush()
		})}
	perf.Flags().StringVar(&perfFormat, "format", "plain", "plain or json")
	compact := &cobra.Command{Use: "compact [ID...]", Short: "Compact OSDs' metadata stores, every up OSD's without IDs (ceph tell osd.N compact); answers when done",
		RunE: func(c *cobra.Command, a []string) error {
			return withSession(func(ctx context.Context, s *session, out io.Writer) error {
				ids, err := osdIDsOrUp(s.conn.Map(), a)
				if err != nil {
					return err
				}
				for _, id := range ids {
					fmt.Fprintf(out, "compacting osd.%d ...\n", id)
					msg, err := s.conn.OSDCommand(ctx, id, "compact")
					if err != nil {
						return err
					}
					fmt.Fprintln(out, msg)
				}
				return nil
			})(c, a)
		}}
	cmd.AddCommand(perf, compact, ecProfileCmd())
	crush := &cobra.Command{Use: "crush", Short: "Change the CRUSH map (add, move, reweight, rule create-replicated)"}
	crush.AddCommand(&cobra.Command{Use: "add osd.N WEIGHT TYPE=NAME...", Short: "Place an OSD in CRUSH", Args: cobra.MinimumNArgs(3),
		RunE: monCommand("osd crush add", func(a []string) (map[string]string, error) {
			return map[string]string{"id": strings.TrimPrefix(a[0], "osd."), "weight": a[1], "loc": strings.Join(a[2:], " ")}, nil
		})})
	crush.AddCommand(&cobra.Command{Use: "move BUCKET TYPE=NAME...", Short: "Move a bucket (e.g. a host under a rack)", Args: cobra.MinimumNArgs(2),
		RunE: monCommand("osd crush move", func(a []string) (map[string]string, error) {
			return map[string]string{"name": a[0], "loc": strings.Join(a[1:], " ")}, nil
		})})
	crush.AddCommand(&cobra.Command{Use: "reweight NAME WEIGHT", Short: "Change an item's CRUSH weight", Args: cobra.ExactArgs(2),
		RunE: monCommand("osd crush reweight", func(a []string) (map[string]string, error) {
			return map[string]string{"name": a[0], "weight": a[1]}, nil
		})})
	rule := &cobra.Command{Use: "rule", Short: "CRUSH rules"}
	rule.AddCommand(&cobra.Command{Use: "create-replicated NAME ROOT FAILURE-DOMAIN [CLASS]", Short: "Add a replicated rule", Args: cobra.RangeArgs(3, 4),
		RunE: monCommand("osd crush rule create-replicated", func(a []string) (map[string]string, error) {
			m := map[string]string{"name": a[0], "root": a[1], "type": a[2]}
			if len(a) == 4 {
				m["class"] = a[3]
			}
			return m, nil
		})})
	crush.AddCommand(rule)
	cmd.AddCommand(crush)
	return cmd
}

func ecProfileCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "erasure-code-profile", Short: "Erasure-code profiles (set, get, ls, rm), as `ceph osd erasure-code-profile`"}
	var force bool
	set := &cobra.Command{Use: "set NAME [k=K] [m=M] [stripe_unit=BYTES] [crush-failure-domain=TYPE] [crush-device-class=CLASS] [crush-root=ROOT] [plugin=jerasure]",
		Short: "Define a profile (defaults k=2 m=2 stripe_unit=4K crush-failure-domain=host)", Args: cobra.MinimumNArgs(1),
		RunE: monCommand("osd erasure-code-profile set", func(a []string) (map[string]string, error) {
			return map[string]string{"name": a[0], "args": strings.Join(a[1:], " "), "force": strconv.FormatBool(force)}, nil
		})}
	set.Flags().BoolVar(&force, "force", false, "replace an existing profile (no pool may use it)")
	get := &cobra.Command{Use: "get NAME", Short: "Show a profile", Args: cobra.ExactArgs(1),
		RunE: monLines("osd erasure-code-profile get", func(a []string) map[string]string { return map[string]string{"name": a[0]} })}
	ls := &cobra.Command{Use: "ls", Short: "List profiles", Args: cobra.NoArgs, RunE: monLines("osd erasure-code-profile ls", noArgs)}
	rm := &cobra.Command{Use: "rm NAME", Short: "Delete a profile no pool uses", Args: cobra.ExactArgs(1),
		RunE: monCommand("osd erasure-code-profile rm", func(a []string) (map[string]string, error) {
			return map[string]string{"name": a[0]}, nil
		})}
	cmd.AddCommand(set, get, ls, rm)
	return cmd
}

func poolCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "pool", Short: "Create, list, change and remove pools"}
	var size, minSize, pgNum int
	var rule string
	create := &cobra.Command{Use: "create NAME [replicated | erasure [PROFILE]]", Short: "Create a replicated pool, or an erasure-coded one from a profile (default: k=2 m=2)", Args: cobra.RangeArgs(1, 3),
		RunE: monCommand("pool create", func(a []string) (map[string]string, error) {
			m := map[string]string{"name": a[0], "rule": rule}
			switch {
			case len(a) == 1 || (len(a) == 2 && a[1] == "replicated"):
			case a[1] == "erasure":
				m["type"] = "erasure"
				if len(a) == 3 {
					m["erasure_code_profile"] = a[2]
				}
			default:
				return nil, fmt.Errorf("pool create: %q: want replicated, or erasure [PROFILE]", strings.Join(a[1:], " "))
			}
			for k, v := range map[string]int{"size": size, "min_size": minSize, "pg_num": pgNum} {
				if v > 0 {
					m[k] = strconv.Itoa(v)
				}
			}
			return m, nil
		})}
	create.Flags().IntVar(&size, "size", 0, "replicas (default osd_pool_default_size)")
	create.Flags().IntVar(&minSize, "min-size", 0, "fewest replicas that accept writes (default size - size/2)")
	create.Flags().IntVar(&pgNum, "pg-num", 0, "PGs (default osd_pool_default_pg_num)")
	create.Flags().StringVar(&rule, "rule", "", "CRUSH rule (default replicated_rule)")
	var format string
	ls := &cobra.Command{Use: "ls", Short: "List pools", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			m := s.conn.Map()
			for _, id := range m.PoolIDs() {
				p, _ := m.Pool(id)
				if format == "detail" {
					fmt.Fprintf(out, "pool %d '%s' %s size %d min_size %d crush_rule %d pg_num %d pgp_num %d", p.ID, p.Name, p.Type, p.Size, p.MinSize, p.CrushRule, p.PGNum, p.PGPNum)
					if p.PGPMoving() {
						fmt.Fprintf(out, " pgp_num_target %d", p.PGPTarget())
					}
					if t := p.PGNumTargetOr(); t != p.PGNum {
						fmt.Fprintf(out, " pg_num_target %d", t)
					}
					if s, _, ok := p.MergePending(); ok {
						fmt.Fprintf(out, " pg_num_pending %d (merging %d.%x)", p.PGNumPending, p.ID, s)
					}
					if p.Type == osdmap.PoolErasure {
						fmt.Fprintf(out, " erasure_code_profile %s allow_ec_overwrites %t", p.ECProfile, p.Flags&osdmap.FlagECOverwrites != 0)
					}
					fmt.Fprintln(out)
				} else {
					fmt.Fprintln(out, p.Name)
				}
			}
			return nil
		})}
	ls.Flags().StringVar(&format, "format", "plain", "plain or detail")
	set := &cobra.Command{Use: "set NAME KEY VALUE", Short: "Set size, min_size, pg_num (raise it: PGs split online; lower it: pgp_num comes down, then PGs merge one at a time), pgp_num (the target pgp_num moves to in steps; pgp_num_actual: at once), crush_rule (a rule name), allow_ec_overwrites (erasure-coded pools: true) or the autoscaler's pg_autoscale_mode (off|warn|on), target_size_ratio, target_size_bytes, pg_autoscale_bias, pg_num_min, pg_num_max, bulk", Args: cobra.ExactArgs(3),
		RunE: monCommand("pool set", func(a []string) (map[string]string, error) {
			return map[string]string{"name": a[0], "key": a[1], "value": a[2]}, nil
		})}
	get := &cobra.Command{Use: "get NAME KEY", Short: "Show size, min_size, pg_num, pg_num_target, pg_num_pending, pgp_num, pgp_num_target, crush_rule, erasure_code_profile or allow_ec_overwrites", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			return withSession(func(ctx context.Context, s *session, out io.Writer) error {
				p, err := s.conn.Map().PoolByName(a[0])
				if err != nil {
					return fmt.Errorf("pool %q: %w", a[0], client.ErrPoolNotFound)
				}
				as := p.Autoscale
				mode := as.Mode
				if mode == "" {
					mode = "off"
				}
				bias := as.Bias
				if bias == 0 {
					bias = 1
				}
				keys := map[string]any{"size": p.Size, "min_size": p.MinSize, "pg_num": p.PGNum, "pgp_num": p.PGPNum, "pgp_num_target": p.PGPTarget(), "pg_num_target": p.PGNumTargetOr(), "pg_num_pending": p.PGNumPendingOr(), "crush_rule": p.CrushRule,
					"pg_autoscale_mode": mode, "target_size_ratio": as.TargetRatio, "target_size_bytes": as.TargetBytes, "pg_autoscale_bias": bias,
					"pg_num_min": as.PGNumMin, "pg_num_max": as.PGNumMax, "bulk": as.Bulk}
				if p.Type == osdmap.PoolErasure {
					keys["erasure_code_profile"], keys["allow_ec_overwrites"] = p.ECProfile, p.Flags&osdmap.FlagECOverwrites != 0
				}
				v, ok := keys[a[1]]
				if !ok {
					return fmt.Errorf("pool get: unknown key %q (size, min_size, pg_num, pg_num_target, pg_num_pending, pgp_num, pgp_num_target, crush_rule, pg_autoscale_mode, target_size_ratio, target_size_bytes, pg_autoscale_bias, pg_num_min, pg_num_max, bulk; erasure-coded pools: erasure_code_profile, allow_ec_overwrites)", a[1])
				}
				fmt.Fprintf(out, "%s: %v\n", a[1], v)
				return nil
			})(cmd, a)
		}}
	var asFormat string
	autoscale := &cobra.Command{Use: "autoscale-status", Short: "Show each pool's use and the pg_num Ceph's PG autoscaler would give it (pools in pg_autoscale_mode on are resized to it: PGs split, or merge one at a time)", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			x, err := gather(ctx, s)
			if err != nil {
				return err
			}
			if asFormat == "json" {
				return json.NewEncoder(out).Encode(x.Autoscale)
			}
			return autoscaler.Text(out, x.Autoscale)
		})}
	autoscale.Flags().StringVar(&asFormat, "format", "plain", "plain or json")
	cmd.AddCommand(autoscale)
	rm := &cobra.Command{Use: "rm NAME", Short: "Remove a pool and its data", Args: cobra.ExactArgs(1),
		RunE: monCommand("pool rm", func(a []string) (map[string]string, error) { return map[string]string{"name": a[0]}, nil })}
	poolSnap := func(a []string) (map[string]string, error) { return map[string]string{"pool": a[0], "snap": a[1]}, nil }
	mksnap := &cobra.Command{Use: "mksnap POOL SNAP", Short: "Take a pool snapshot: every object as it is now, readable with `rados -p POOL --snap SNAP`", Args: cobra.ExactArgs(2),
		RunE: monCommand("osd pool mksnap", poolSnap)}
	rmsnap := &cobra.Command{Use: "rmsnap POOL SNAP", Short: "Remove a pool snapshot", Args: cobra.ExactArgs(2),
		RunE: monCommand("osd pool rmsnap", poolSnap)}
	lssnap := &cobra.Command{Use: "lssnap POOL", Short: "List a pool's snapshots: id, name, time taken", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			return withSession(func(ctx context.Context, s *session, out io.Writer) error {
				p, err := s.conn.Pool(ctx, a[0])
				if err != nil {
					return err
				}
				return listPoolSnaps(p, out)
			})(cmd, a)
		}}
	cmd.AddCommand(create, ls, set, get, rm, mksnap, rmsnap, lssnap)
	return cmd
}

func authCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "auth", Short: "Entities' keys and caps in the MONs' key database (add, caps, get, ls, rm, get-key)",
		Long: `Entities' keys and capabilities, as Ceph's "ceph auth". Caps are given per
service, mon and osd, in cephx's grammar (docs/rados.md, "Capabilities"):

  shoal auth add client.app mon 'allow r' osd 'allow rw pool=app'
  shoal auth caps client.app mon 'allow r' osd 'allow r pool=app'
  shoal auth add client.img mon 'profile rbd' osd 'profile rbd pool=rbd'

Reading keys and caps needs mon 'allow rx'; changing them, mon 'allow wx'
(client.admin has 'allow *').`}
	var out string
	// emit prints entity's keyring, or writes it to -o's file
	emit := func(w io.Writer, entity string, e monc.AuthEntry) error {
		key, err := base64.StdEncoding.DecodeString(e.Key)
		if err != nil {
			return fmt.Errorf("key of %s: %w", entity, err)
		}
		kr := map[string]msgr.KeyringEntry{entity: {Key: key, Caps: e.Caps}}
		if out != "" {
			return msgr.WriteKeyring(out, kr)
		}
		_, err = w.Write(msgr.FormatKeyring(kr))
		return err
	}
	add := &cobra.Command{Use: "add ENTITY [mon CAPS] [osd CAPS]", Short: "Create a key for ENTITY (client.NAME, osd.N, mon.NAME, mgr.NAME) with caps, and print its keyring or write it with -o",
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			granted, err := capsPairs("auth add", a[1:])
			if err != nil {
				return err
			}
			return withSession(func(ctx context.Context, s *session, w io.Writer) error {
				r, err := s.conn.MonCommand(ctx, "auth add", monc.AuthArgs(a[0], granted))
				if err != nil {
					return err
				}
				var k struct{ Entity, Key string }
				if err := json.Unmarshal(r.Data, &k); err != nil {
					return fmt.Errorf("auth add: bad reply: %w", err)
				}
				return emit(w, k.Entity, monc.AuthEntry{Key: k.Key, Caps: granted})
			})(c, a)
		}}
	add.Flags().StringVarP(&out, "output", "o", "", "write a keyring file (mode 0600) instead of printing")
	capsCmd := &cobra.Command{Use: "caps ENTITY [mon CAPS] [osd CAPS]", Short: "Replace ENTITY's caps (a service left out loses its caps)", Args: cobra.MinimumNArgs(1),
		RunE: monCommand("auth caps", func(a []string) (map[string]string, error) {
			granted, err := capsPairs("auth caps", a[1:])
			return monc.AuthArgs(a[0], granted), err
		})}
	rm := &cobra.Command{Use: "rm ENTITY", Short: "Delete ENTITY's key: its connections are refused from then on", Args: cobra.ExactArgs(1),
		RunE: monCommand("auth rm", func(a []string) (map[string]string, error) { return map[string]string{"entity": a[0]}, nil })}
	ls := &cobra.Command{Use: "ls", Short: "List the entities in the key database with their caps", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, w io.Writer) error {
			r, err := s.conn.MonCommand(ctx, "auth ls", nil)
			if err != nil {
				return err
			}
			var entries []struct {
				Entity string
				Caps   map[string]string
			}
			if err := json.Unmarshal(r.Data, &entries); err != nil {
				return fmt.Errorf("auth ls: bad reply: %w", err)
			}
			for _, e := range entries {
				fmt.Fprintln(w, e.Entity)
				for _, svc := range slices.Sorted(maps.Keys(e.Caps)) {
					fmt.Fprintf(w, "\tcaps %s: %s\n", svc, e.Caps[svc])
				}
			}
			return nil
		})}
	get := &cobra.Command{Use: "get ENTITY", Short: "Print ENTITY's keyring: key and caps (or write it with -o)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			return withSession(func(ctx context.Context, s *session, w io.Writer) error {
				r, err := s.conn.MonCommand(ctx, "auth get", map[string]string{"entity": a[0]})
				if err != nil {
					return err
				}
				var db map[string]monc.AuthEntry
				if err := json.Unmarshal(r.Data, &db); err != nil {
					return fmt.Errorf("auth get: bad reply: %w", err)
				}
				return emit(w, a[0], db[a[0]])
			})(c, a)
		}}
	get.Flags().StringVarP(&out, "output", "o", "", "write a keyring file (mode 0600) instead of printing")
	getKey := &cobra.Command{Use: "get-key ENTITY", Short: "Print ENTITY's key", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			return withSession(func(ctx context.Context, s *session, w io.Writer) error {
				r, err := s.conn.MonCommand(ctx, "auth get-key", map[string]string{"entity": a[0]})
				if err != nil {
					return err
				}
				var db map[string]string
				if err := json.Unmarshal(r.Data, &db); err != nil {
					return err
				}
				fmt.Fprintln(w, db[a[0]])
				return nil
			})(c, a)
		}}
	cmd.AddCommand(add, capsCmd, rm, ls, get, getKey)
	return cmd
}

// capsPairs reads "SERVICE CAPS" pairs (mon 'allow r' osd 'allow rw
// pool=a') into service → caps.
func capsPairs(prefix string, pairs []string) (map[string]string, error) {
	if len(pairs)%2 != 0 {
		return nil, fmt.Errorf("%s: caps come in pairs: SERVICE CAPS (mon 'allow r' osd 'allow rw pool=NAME')", prefix)
	}
	out := map[string]string{}
	for i := 0; i < len(pairs); i += 2 {
		svc := pairs[i]
		if !slices.Contains(caps.Services, svc) {
			return nil, fmt.Errorf("%s: unknown service %q (want %s)", prefix, svc, strings.Join(caps.Services, " or "))
		}
		if _, dup := out[svc]; dup {
			return nil, fmt.Errorf("%s: %s caps given twice", prefix, svc)
		}
		out[svc] = pairs[i+1]
	}
	return out, nil
}

func configCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "The MONs' central configuration database (set, get, rm, dump)"}
	cmd.AddCommand(&cobra.Command{Use: "set WHO OPTION VALUE", Short: "Set an option for global, mon, osd, osd.N, client, …", Args: cobra.ExactArgs(3),
		RunE: monCommand("config set", func(a []string) (map[string]string, error) {
			return map[string]string{"who": a[0], "option": a[1], "value": a[2]}, nil
		})})
	cmd.AddCommand(&cobra.Command{Use: "rm WHO OPTION", Short: "Remove a setting", Args: cobra.ExactArgs(2),
		RunE: monCommand("config rm", func(a []string) (map[string]string, error) {
			return map[string]string{"who": a[0], "option": a[1]}, nil
		})})
	dump := func(ctx context.Context, s *session) (map[string]map[string]string, error) {
		r, err := s.conn.MonCommand(ctx, "config dump", nil)
		if err != nil {
			return nil, err
		}
		var db map[string]map[string]string
		return db, json.Unmarshal(r.Data, &db)
	}
	cmd.AddCommand(&cobra.Command{Use: "dump", Short: "Show every setting", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			db, err := dump(ctx, s)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WHO\tOPTION\tVALUE")
			var whos []string
			for w := range db {
				whos = append(whos, w)
			}
			sort.Strings(whos)
			for _, w := range whos {
				var opts []string
				for o := range db[w] {
					opts = append(opts, o)
				}
				sort.Strings(opts)
				for _, o := range opts {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", w, o, db[w][o])
				}
			}
			return tw.Flush()
		})})
	cmd.AddCommand(&cobra.Command{Use: "get WHO OPTION", Short: "Show the value WHO gets from the database (or the default)", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, a []string) error {
			return withSession(func(ctx context.Context, s *session, out io.Writer) error {
				db, err := dump(ctx, s)
				if err != nil {
					return err
				}
				if err := config.CheckSection(a[0]); err != nil {
					return err
				}
				v, err := config.NewFile(db).For(a[0]).Get(a[1])
				if err != nil {
					return err
				}
				fmt.Fprintln(out, v)
				return nil
			})(cmd, a)
		}})
	return cmd
}

func pgCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "pg", Short: "Placement groups: list them, scrub, deep-scrub, repair, list-inconsistent"}
	for _, verb := range []struct{ name, short string }{
		{"scrub", "Scrub a PG now: compare object lists, sizes, attributes and omaps across its acting set"},
		{"deep-scrub", "Deep-scrub a PG now: also read every byte and compare checksums"},
		{"repair", "Deep-scrub a PG and rewrite the copies that disagree with the authoritative one"},
	} {
		cmd.AddCommand(&cobra.Command{Use: verb.name + " PGID", Short: verb.short, Args: cobra.ExactArgs(1),
			RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
				b, err := s.conn.PGCommand(ctx, s.args[0], verb.name)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
				return nil
			})})
	}
	cmd.AddCommand(&cobra.Command{Use: "list-inconsistent PGID", Short: "Show the objects the PG's last scrub found inconsistent, per OSD (JSON, as rados list-inconsistent-obj)", Args: cobra.ExactArgs(1),
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			b, err := s.conn.PGCommand(ctx, s.args[0], "list-inconsistent")
			if err != nil {
				return err
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				return err
			}
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		})})
	var format string
	ls := &cobra.Command{Use: "ls [POOL]", Short: "List PGs with state, objects, acting set and scrub stamps (ceph pg ls)", Args: cobra.MaximumNArgs(1),
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			x, err := gather(ctx, s)
			if err != nil {
				return err
			}
			pool := ""
			if len(s.args) == 1 {
				p, err := s.conn.Map().PoolByName(s.args[0])
				if err != nil {
					return fmt.Errorf("pool %q: %w", s.args[0], err)
				}
				pool = fmt.Sprintf("%d.", p.ID)
			}
			pgs := status.PGs(x, pool)
			if format == "json" {
				return json.NewEncoder(out).Encode(pgs)
			}
			status.PGsText(out, pgs)
			return nil
		})}
	ls.Flags().StringVar(&format, "format", "plain", "plain or json")
	cmd.AddCommand(ls)
	return cmd
}

// blocklistCmd is `shoal osd blocklist`, as `ceph osd blocklist`.
func blocklistCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "blocklist", Short: "Fence clients: every OSD refuses a blocklisted client (an entity, one instance as `rados lock info` lists it, or an IP address)"}
	cmd.AddCommand(&cobra.Command{Use: "add ENTITY[/NONCE]|IP [SECONDS]", Short: "Blocklist a client for SECONDS (default 3600)", Args: cobra.RangeArgs(1, 2),
		RunE: monCommand("osd blocklist add", func(a []string) (map[string]string, error) {
			m := map[string]string{"entry": a[0]}
			if len(a) == 2 {
				if v, err := strconv.ParseFloat(a[1], 64); err != nil || v <= 0 {
					return nil, fmt.Errorf("blocklist add: %q is not a positive number of seconds", a[1])
				}
				m["expire"] = a[1]
			}
			return m, nil
		})})
	cmd.AddCommand(&cobra.Command{Use: "rm ENTITY[/NONCE]|IP", Short: "Let a blocklisted client in again", Args: cobra.ExactArgs(1),
		RunE: monCommand("osd blocklist rm", func(a []string) (map[string]string, error) { return map[string]string{"entry": a[0]}, nil })})
	cmd.AddCommand(&cobra.Command{Use: "ls", Short: "List the blocklist entries in force and until when", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			m := s.conn.Map()
			now := time.Now()
			entries := m.BlocklistEntries(now)
			for _, e := range entries {
				fmt.Fprintf(out, "%s %s\n", e, time.Unix(0, m.Blocklist[e]).UTC().Format("2006-01-02T15:04:05.000000Z"))
			}
			fmt.Fprintf(out, "listed %d entries\n", len(entries))
			return nil
		})})
	return cmd
}

// osdIDsOrUp parses OSD ids ("3" or "osd.3"), or with none returns every
// up OSD's.
func osdIDsOrUp(m *osdmap.Map, args []string) ([]int32, error) {
	if len(args) > 0 {
		return monc.ParseOSDIDs(strings.Join(args, ","))
	}
	return m.UpOSDs(), nil
}
