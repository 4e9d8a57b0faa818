package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shoal-project/shoal/balancer"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/osdmap"
)

// balancerCmd is `shoal balancer`, Ceph's `ceph balancer` in upmap mode.
func balancerCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "balancer", Short: "Even out PGs per OSD with pg_upmap_items (status, eval, optimize, show, execute, on, off, mode), as `ceph balancer`"}
	cmd.AddCommand(&cobra.Command{Use: "status", Short: "Show whether the MONs balance automatically, with what settings, why they would wait now, and their last round", Args: cobra.NoArgs,
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			r, err := s.conn.MonCommand(ctx, "balancer status", nil)
			if err != nil {
				return err
			}
			var st monc.BalancerStatus
			if err := json.Unmarshal(r.Data, &st); err != nil {
				return fmt.Errorf("balancer status: bad reply: %w", err)
			}
			b, _ := json.MarshalIndent(st, "", "  ")
			_, err = fmt.Fprintln(out, string(b))
			return err
		})})
	setting := func(option, value string) func(*cobra.Command, []string) error {
		return monCommand("config set", func(a []string) (map[string]string, error) {
			v := value
			if v == "" {
				v = a[0]
			}
			return map[string]string{"who": "mon", "option": option, "value": v}, nil
		})
	}
	cmd.AddCommand(&cobra.Command{Use: "on", Short: "Let the MONs balance automatically (config mon balancer_active true)", Args: cobra.NoArgs, RunE: setting("balancer_active", "true")})
	cmd.AddCommand(&cobra.Command{Use: "off", Short: "Stop automatic balancing; entries already made stay", Args: cobra.NoArgs, RunE: setting("balancer_active", "false")})
	cmd.AddCommand(&cobra.Command{Use: "mode upmap|none", Short: "Choose how the balancer moves PGs", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			if a[0] != "upmap" && a[0] != "none" {
				return fmt.Errorf("balancer mode %q: upmap or none (Ceph's crush-compat mode is not built)", a[0])
			}
			return setting("balancer_mode", "")(c, a)
		}})
	var planFile string
	eval := &cobra.Command{Use: "eval [POOL...]", Short: "Score how evenly each pool's PG copies sit on its OSDs (with --plan: after the plan)",
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			m := s.conn.Map()
			pools, err := poolIDs(m, s.args)
			if err != nil {
				return err
			}
			if planFile != "" {
				plan, err := readPlan(planFile)
				if err != nil {
					return err
				}
				inc := &osdmap.Incremental{Epoch: m.Epoch + 1}
				plan.Apply(inc)
				if m, err = m.Apply(inc); err != nil {
					return fmt.Errorf("plan %s: %w", planFile, err)
				}
			}
			scores, err := balancer.Eval(m, pools)
			if err != nil {
				return err
			}
			return balancer.EvalText(out, scores)
		})}
	eval.Flags().StringVar(&planFile, "plan", "", "a plan file from `shoal balancer optimize`")
	cmd.AddCommand(eval)
	var maxDev float64
	var maxMoves int
	optimize := &cobra.Command{Use: "optimize PLANFILE [POOL...]", Short: "Compute the PG moves that bring every OSD within --max-deviation of its share, into PLANFILE; the cluster must be clean", Args: cobra.MinimumNArgs(1),
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			x, err := gather(ctx, s)
			if err != nil {
				return err
			}
			if err := x.NotClean(); err != nil {
				return fmt.Errorf("balancer optimize: %w; no plan written", err)
			}
			m := s.conn.Map()
			pools, err := poolIDs(m, s.args[1:])
			if err != nil {
				return err
			}
			plan, err := balancer.Optimize(m, balancer.Options{Pools: pools, MaxDeviation: maxDev, MaxMoves: maxMoves})
			if err != nil {
				return err
			}
			b, _ := plan.MarshalJSON()
			if err := os.WriteFile(s.args[0], append(b, '\n'), 0o644); err != nil {
				return err
			}
			for _, sk := range plan.Skipped {
				fmt.Fprintln(out, "skipped:", sk)
			}
			_, err = fmt.Fprintf(out, "plan %s: %d PG(s) to change at epoch %d; see it with `shoal balancer show %s`, score it with `shoal balancer eval --plan %s`\n",
				s.args[0], len(plan.Changes), plan.Epoch, s.args[0], s.args[0])
			return err
		})}
	optimize.Flags().Float64Var(&maxDev, "max-deviation", 1, "PG copies an OSD may stay above or below its share (Ceph's upmap_max_deviation)")
	optimize.Flags().IntVar(&maxMoves, "max", 0, "change at most this many PGs (0: as many as needed)")
	cmd.AddCommand(optimize)
	cmd.AddCommand(&cobra.Command{Use: "show PLANFILE", Short: "Print a plan as the commands that make it", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			plan, err := readPlan(a[0])
			if err != nil {
				return err
			}
			return plan.Commands(c.OutOrStdout())
		}})
	cmd.AddCommand(&cobra.Command{Use: "execute PLANFILE", Short: "Apply a plan in one map epoch; refused if the map changed since it was computed", Args: cobra.ExactArgs(1),
		RunE: withSession(func(ctx context.Context, s *session, out io.Writer) error {
			plan, err := readPlan(s.args[0])
			if err != nil {
				return err
			}
			if e := s.conn.Map().Epoch; e != plan.Epoch {
				return fmt.Errorf("plan %s was computed at epoch %d, the map is at %d now: run `shoal balancer optimize` again", s.args[0], plan.Epoch, e)
			}
			if len(plan.Changes) == 0 {
				_, err := fmt.Fprintln(out, "nothing to do")
				return err
			}
			r, err := s.conn.MonCommand(ctx, "osd pg-upmap-items", map[string]string{"items": monc.FormatUpmapItems(plan.Changes)})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(out, r.Message)
			return err
		})})
	return cmd
}

// upmapCmds are `shoal osd pg-upmap-items` and `rm-pg-upmap-items`.
func upmapCmds() []*cobra.Command {
	set := &cobra.Command{Use: "pg-upmap-items PGID FROM TO [FROM TO...]", Short: "Move a PG's copies: each OSD FROM of its placement is replaced by TO (Ceph's pg-upmap-items)", Args: cobra.MinimumNArgs(3),
		RunE: monCommand("osd pg-upmap-items", func(a []string) (map[string]string, error) {
			if len(a)%2 != 1 {
				return nil, fmt.Errorf("pg-upmap-items %s: OSD ids come in FROM TO pairs", a[0])
			}
			ids := make([]string, len(a)-1)
			for i, x := range a[1:] {
				ids[i] = strings.TrimPrefix(x, "osd.")
			}
			return map[string]string{"items": a[0] + "=" + strings.Join(ids, ",")}, nil
		})}
	rm := &cobra.Command{Use: "rm-pg-upmap-items PGID...", Short: "Give PGs back to CRUSH's choice", Args: cobra.MinimumNArgs(1),
		RunE: monCommand("osd pg-upmap-items", func(a []string) (map[string]string, error) {
			parts := make([]string, len(a))
			for i, pg := range a {
				parts[i] = pg + "="
			}
			return map[string]string{"items": strings.Join(parts, " ")}, nil
		})}
	return []*cobra.Command{set, rm}
}

func readPlan(path string) (*balancer.Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p balancer.Plan
	if err := p.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return &p, nil
}

// poolIDs resolves pool names (none: nil, all pools).
func poolIDs(m *osdmap.Map, names []string) ([]int64, error) {
	var ids []int64
	for _, n := range names {
		p, err := m.PoolByName(n)
		if err != nil {
			return nil, fmt.Errorf("pool %q: %w", n, err)
		}
		ids = append(ids, p.ID)
	}
	return ids, nil
}
