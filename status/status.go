// Package status gathers what `shoal status`, `shoal health`, `shoal osd
// tree` and `shoal df` show: the MONs' quorum, the OSD map, and each PG's
// state as its primary reports it, summarised into HEALTH_OK, HEALTH_WARN
// or HEALTH_ERR with one line per problem, as `ceph -s` does.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/autoscaler"
	"github.com/shoal-project/shoal/balancer"
	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// Health levels.
const (
	OK   = "HEALTH_OK"
	Warn = "HEALTH_WARN"
	Err  = "HEALTH_ERR"
)

// Check is one health problem. Code names it as Ceph's health checks do
// (OSD_DOWN, PG_DEGRADED, ...: Ceph's "Health checks" documentation),
// or with a name of Shoal's where Ceph has none.
type Check struct {
	Code     string   `json:"code"`
	Severity string   `json:"severity"`
	Summary  string   `json:"summary"`
	Detail   []string `json:"detail,omitempty"`
}

// Mon is one MON as seen from the client.
type Mon struct {
	Addr   string `json:"addr"`
	Up     bool   `json:"up"`
	Leader bool   `json:"leader"`
	// Metrics is where it serves Prometheus metrics ("" if it does not).
	Metrics string `json:"metrics_addr,omitempty"`
}

// ScrapeTarget is one daemon's Prometheus endpoint: GET
// http://ADDR/metrics.
type ScrapeTarget struct {
	Daemon string `json:"daemon"` // mon.ADDR, osd.N
	Addr   string `json:"addr"`
}

// Status is the cluster's state.
type Status struct {
	FSID     string         `json:"fsid"`
	Health   string         `json:"health"`
	Checks   []Check        `json:"checks"`
	Mons     []Mon          `json:"mons"`
	Epoch    uint32         `json:"osdmap_epoch"`
	Flags    []string       `json:"osdmap_flags,omitempty"`
	OSDs     int            `json:"num_osds"`
	UpOSDs   int            `json:"num_up_osds"`
	InOSDs   int            `json:"num_in_osds"`
	Pools    int            `json:"num_pools"`
	PGs      int            `json:"num_pgs"`
	PGStates map[string]int `json:"pgs_by_state"`
	Objects  int64          `json:"num_objects"`
	Bytes    int64          `json:"data_bytes"`
	UsedKB   uint64         `json:"kb_used"`
	TotalKB  uint64         `json:"kb_total"`
	// Degraded counts the object copies missing from undersized PGs (active
	// or not) and those the acting members still lack (ToRecover: recovery's
	// backlog) but for the Misplaced ones (still held, pool-size times, by
	// former members: moving, not at risk), out of Copies (every object
	// times its pool's size); the
	// rates are the OSDs' recovery over the last second (Ceph's
	// degraded_objects, degraded_total, recovering_objects_per_sec,
	// recovering_bytes_per_sec).
	Degraded          int64         `json:"degraded_objects"`
	Misplaced         int64         `json:"misplaced_objects"`
	Copies            int64         `json:"degraded_total"`
	ToRecover         int64         `json:"objects_to_recover"`
	RecoveryOpsRate   float64       `json:"recovering_objects_per_sec"`
	RecoveryBytesRate float64       `json:"recovering_bytes_per_sec"`
	OSDStats          []osdop.Stats `json:"osd_stats"`
	// Scrape lists the daemons' Prometheus endpoints (those with
	// metrics_addr set): MONs, then OSDs.
	Scrape []ScrapeTarget `json:"scrape_endpoints"`
	// Autoscale is the PG autoscaler's advice per pool (`shoal osd pool
	// autoscale-status`).
	Autoscale []autoscaler.Row `json:"pg_autoscale"`
	// Pools is each pool's use (`shoal df`'s POOLS section).
	PoolStats []PoolUsage `json:"pools"`
	// Progress is the recovery, backfill and scrub under way (`ceph -s`'s
	// progress section).
	Progress []Event `json:"progress_events"`
}

// PoolUsage is one pool's configuration and use: Objects and Bytes
// (logical, before replication or coding) sum its PGs' as their primaries
// report them (PGs no primary reports count nothing).
type PoolUsage struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Type    string `json:"type"` // replicated or erasure
	Size    int    `json:"size"`
	MinSize int    `json:"min_size"`
	PGNum   uint32 `json:"pg_num"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"stored"`
}

// Gather asks every MON and every up OSD.
func Gather(ctx context.Context, c *client.Conn, monAddrs []string, kr msgr.Keyring) (*Status, error) {
	if err := c.RefreshMap(ctx); err != nil {
		return nil, err
	}
	m := c.Map()
	s := &Status{FSID: m.FSID, Epoch: uint32(m.Epoch), Flags: m.Flags.Names(), PGStates: map[string]int{}}
	var wg sync.WaitGroup
	s.Mons = make([]Mon, len(monAddrs))
	for i, a := range monAddrs {
		s.Mons[i].Addr = a
		wg.Add(1)
		go func() {
			defer wg.Done()
			mc, err := monc.New([]string{a}, kr, msgr.Config{})
			if err != nil {
				return
			}
			defer mc.Close()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			r, err := mc.Command(cctx, "mon status", nil)
			var ms struct {
				State   string
				Metrics string `json:"metrics_addr"`
			}
			if err == nil && json.Unmarshal(r.Data, &ms) == nil {
				s.Mons[i].Up = true
				s.Mons[i].Leader = ms.State == "Leader"
				s.Mons[i].Metrics = ms.Metrics
			}
		}()
	}
	var mu sync.Mutex
	for i, o := range m.OSDs {
		if !o.Exists {
			continue
		}
		s.OSDs++
		if o.Up {
			s.UpOSDs++
		}
		if o.In() {
			s.InOSDs++
		}
		if !o.Up {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			st, err := c.OSDStats(cctx, int32(i))
			if err == nil {
				mu.Lock()
				s.OSDStats = append(s.OSDStats, st)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(s.OSDStats, func(a, b int) bool { return s.OSDStats[a].ID < s.OSDStats[b].ID })
	s.Scrape = []ScrapeTarget{}
	for _, mn := range s.Mons {
		if mn.Metrics != "" {
			s.Scrape = append(s.Scrape, ScrapeTarget{Daemon: "mon." + mn.Addr, Addr: mn.Metrics})
		}
	}
	for _, st := range s.OSDStats {
		if st.MetricsAddr != "" {
			s.Scrape = append(s.Scrape, ScrapeTarget{Daemon: fmt.Sprintf("osd.%d", st.ID), Addr: st.MetricsAddr})
		}
	}
	for _, st := range s.OSDStats {
		s.UsedKB += st.Used
		s.TotalKB += st.Total
		s.RecoveryOpsRate += st.RecoveryOpsRate
		s.RecoveryBytesRate += st.RecoveryBytesRate
	}
	pgs := s.ReportedPGs()
	reported := make(map[string]osdop.PGStats, len(pgs))
	for _, pg := range pgs {
		reported[pg.PGID] = pg
	}
	s.Progress = Progress(pgs, time.Now())
	poolBytes := map[int64]uint64{}
	var unknown, inactive, degraded, misplaced, inconsistent []string
	scrubErrors := 0
	for _, id := range m.PoolIDs() {
		p, _ := m.Pool(id)
		s.Pools++
		pu := PoolUsage{ID: id, Name: p.Name, Type: p.Type.String(), Size: p.Size, MinSize: p.MinSize, PGNum: p.PGNum}
		for seed := uint32(0); seed < p.PGNum; seed++ {
			s.PGs++
			pgid := fmt.Sprintf("%d.%x", id, seed)
			r, ok := reported[pgid]
			if !ok {
				s.PGStates["unknown"]++
				unknown = append(unknown, pgid)
				continue
			}
			s.PGStates[r.State]++
			pu.Objects += r.Objects
			pu.Bytes += r.Bytes
			s.Objects += r.Objects
			poolBytes[id] += uint64(max(r.Bytes, 0))
			s.Bytes += r.Bytes
			scrubErrors += r.ScrubErrors
			s.ToRecover += r.ToRecover
			s.Copies += r.Objects * int64(r.Size)
			if n := osdmap.Members(r.Acting); n < r.Size {
				s.Degraded += r.Objects * int64(r.Size-n)
			}
			s.Degraded += r.ToRecover - r.Misplaced
			s.Misplaced += r.Misplaced
			switch {
			case !strings.HasPrefix(r.State, "active"):
				inactive = append(inactive, inactiveLine(r))
			case strings.Contains(r.State, "+degraded"):
				degraded = append(degraded, pgid+" is "+r.State)
			case !strings.HasPrefix(r.State, "active+clean"):
				misplaced = append(misplaced, pgid+" is "+r.State)
			}
			if strings.Contains(r.State, "+inconsistent") {
				inconsistent = append(inconsistent, fmt.Sprintf("pg %s is %s, acting %v; see `shoal pg list-inconsistent %s`, fix with `shoal pg repair %s`", pgid, r.State, r.Acting, pgid, pgid))
			}
		}
		s.PoolStats = append(s.PoolStats, pu)
	}
	var monsDown []string
	for _, mn := range s.Mons {
		if !mn.Up {
			monsDown = append(monsDown, "mon at "+mn.Addr+" is down (out of quorum)")
		}
	}
	if len(monsDown) > 0 {
		s.Checks = append(s.Checks, Check{"MON_DOWN", Warn, fmt.Sprintf("%d/%d mons down", len(monsDown), len(s.Mons)), monsDown})
	}
	s.Checks = append(s.Checks, mapChecks(m)...)
	s.Autoscale = autoscale(ctx, c, m, poolBytes, s.OSDStats)
	s.Checks = append(s.Checks, autoscaleChecks(s.Autoscale)...)
	usedPct := map[int32]float64{}
	for _, st := range s.OSDStats {
		if st.Total > 0 {
			usedPct[st.ID] = float64(st.Used) * 100 / float64(st.Total)
		}
	}
	full := map[osdmap.Fullness][]string{}
	for i, o := range m.OSDs {
		if o.Exists && o.Fullness != osdmap.NotFull {
			full[o.Fullness] = append(full[o.Fullness], fmt.Sprintf("osd.%d is %s (%.1f%% used)", i, o.Fullness, usedPct[int32(i)]))
		}
	}
	if f := full[osdmap.Full]; len(f) > 0 {
		s.Checks = append(s.Checks, Check{"OSD_FULL", Err, fmt.Sprintf("%d full osd(s): writes to their PGs fail; delete data, add OSDs or raise mon_osd_full_ratio", len(f)), head(f)})
	}
	if f := full[osdmap.BackfillFull]; len(f) > 0 {
		s.Checks = append(s.Checks, Check{"OSD_BACKFILLFULL", Warn, fmt.Sprintf("%d backfillfull osd(s)", len(f)), head(f)})
	}
	if f := full[osdmap.NearFull]; len(f) > 0 {
		s.Checks = append(s.Checks, Check{"OSD_NEARFULL", Warn, fmt.Sprintf("%d nearfull osd(s)", len(f)), head(f)})
	}
	if c, ok := slowOps(s.OSDStats); ok {
		s.Checks = append(s.Checks, c)
	}
	if len(s.Flags) > 0 {
		s.Checks = append(s.Checks, Check{"OSDMAP_FLAGS", Warn, strings.Join(s.Flags, ",") + " flag(s) set",
			[]string{"clear with `shoal osd unset FLAG` when the maintenance is over"}})
	}
	if len(unknown) > 0 {
		s.Checks = append(s.Checks, Check{"PG_AVAILABILITY", Err, fmt.Sprintf("%d pgs unknown (no primary reports them)", len(unknown)), head(unknown)})
	}
	if len(inactive) > 0 {
		s.Checks = append(s.Checks, Check{"PG_AVAILABILITY", Err, fmt.Sprintf("Reduced data availability: %d pgs inactive", len(inactive)), head(inactive)})
	}
	if len(degraded) > 0 {
		sum := fmt.Sprintf("Degraded data redundancy: %d pgs degraded", len(degraded))
		if s.Degraded > 0 && s.Copies > 0 {
			sum = fmt.Sprintf("Degraded data redundancy: %d/%d objects degraded (%.3f%%), %d pgs degraded", s.Degraded, s.Copies, float64(s.Degraded)*100/float64(s.Copies), len(degraded))
		}
		s.Checks = append(s.Checks, Check{"PG_DEGRADED", Warn, sum, head(degraded)})
	}
	if len(misplaced) > 0 || s.Misplaced > 0 {
		sum := fmt.Sprintf("%d pgs remapped: data moving to their new OSDs", len(misplaced))
		if s.Misplaced > 0 && s.Copies > 0 {
			sum = fmt.Sprintf("%d/%d objects misplaced (%.3f%%)", s.Misplaced, s.Copies, float64(s.Misplaced)*100/float64(s.Copies))
		}
		s.Checks = append(s.Checks, Check{"OBJECT_MISPLACED", Warn, sum, head(misplaced)})
	}
	if scrubErrors > 0 {
		s.Checks = append(s.Checks, Check{"OSD_SCRUB_ERRORS", Err, fmt.Sprintf("%d scrub errors", scrubErrors), nil})
	}
	if len(inconsistent) > 0 {
		s.Checks = append(s.Checks, Check{"PG_DAMAGED", Err, fmt.Sprintf("Possible data damage: %d pgs inconsistent", len(inconsistent)), head(inconsistent)})
	}
	s.Health = OK
	for _, ch := range s.Checks {
		if ch.Severity == Err {
			s.Health = Err
		} else if s.Health == OK {
			s.Health = Warn
		}
	}
	return s, nil
}

// ReportedPGs is every PG as its primary reports it (one report per PG:
// where two OSDs both report one, as while a new primary takes over, the
// higher-numbered OSD's), in PG id order (pool, then seed).
func (s *Status) ReportedPGs() []osdop.PGStats {
	reported := map[string]osdop.PGStats{}
	for _, st := range s.OSDStats {
		for _, pg := range st.PGs {
			reported[pg.PGID] = pg
		}
	}
	out := slices.Collect(maps.Values(reported))
	sort.Slice(out, func(i, j int) bool {
		a, _ := osdmap.ParsePGID(out[i].PGID)
		b, _ := osdmap.ParsePGID(out[j].PGID)
		return a.Pool < b.Pool || (a.Pool == b.Pool && a.Seed < b.Seed)
	})
	return out
}

// mapChecks are the health checks the OSD map alone answers.
func mapChecks(m *osdmap.Map) []Check {
	var checks []Check
	// OSD_DOWN, as Ceph's: down and in. A down OSD that is out holds no
	// data any more once recovery has moved it; what recovery still
	// needs shows as degraded PGs.
	var osdsDown []string
	for i, o := range m.OSDs {
		if o.Exists && !o.Up && o.In() {
			osdsDown = append(osdsDown, fmt.Sprintf("osd.%d is down; start it again (shoal up restarts a local cluster's daemons)", i))
		}
	}
	if len(osdsDown) > 0 {
		checks = append(checks, Check{"OSD_DOWN", Warn, fmt.Sprintf("%d osds down", len(osdsDown)), osdsDown})
	}
	var noSpare []string
	for _, id := range m.PoolIDs() {
		if p, _ := m.Pool(id); p.Type == osdmap.PoolErasure && p.Size > 1 && p.MinSize >= p.Size {
			noSpare = append(noSpare, fmt.Sprintf("pool %s: min_size %d = size: any one OSD down stops its I/O (Ceph's default for k+m is k+min(1, m-1); `shoal pool set %s min_size %d`)",
				p.Name, p.MinSize, p.Name, p.Size-1))
		}
	}
	if len(noSpare) > 0 {
		checks = append(checks, Check{"POOL_EC_NO_SPARE", Warn, fmt.Sprintf("%d erasure-coded pool(s) stop at the first OSD down", len(noSpare)), noSpare})
	}
	// Shoal's own: an erasure-coded pool whose next merge cannot go on
	// (docs/rados.md, PG merging)
	var blocked []string
	for _, id := range m.PoolIDs() {
		p, _ := m.Pool(id)
		if p.Type != osdmap.PoolErasure || p.PGNumTargetOr() >= p.PGNum || p.PGPNum >= p.PGNum || p.PGNumPendingOr() != p.PGNum {
			continue
		}
		if err := mergeNoSpare(m, p); err != nil {
			blocked = append(blocked, fmt.Sprintf("pool %s: pg_num %d cannot come down toward %d: %v (add an OSD, or raise pg_num back to stop: `shoal pool set %s pg_num %d`)",
				p.Name, p.PGNum, p.PGNumTargetOr(), err, p.Name, p.PGNum))
		}
	}
	if len(blocked) > 0 {
		checks = append(checks, Check{"POOL_MERGE_BLOCKED", Warn, fmt.Sprintf("%d erasure-coded pool(s) cannot merge their next PG", len(blocked)), blocked})
	}
	return checks
}

// mergeNoSpare reports why erasure-coded pool p's next merge cannot go
// on: an OSD holds one shard of the source and another of the target
// (osdmap.MergeShardConflict), and the MONs have no step toward the
// target's order to take (balancer.NextMergeStep: no spare OSD). Nil when
// the merge can proceed or step, or waits for its PGs to be whole.
func mergeNoSpare(m *osdmap.Map, p *osdmap.Pool) error {
	conflict := m.MergeShardConflict(p, p.PGNum-1)
	if conflict == nil {
		return nil
	}
	if _, whole, err := balancer.NextMergeStep(m, p, p.PGNum-1); whole && errors.Is(err, balancer.ErrNoSpare) {
		return fmt.Errorf("%v; %w", conflict, err)
	}
	return nil
}

// slowOps is Ceph's SLOW_OPS check from the OSDs' stats: "N slow ops,
// oldest one blocked for S sec, daemons [osd.A,osd.B] have slow ops",
// with one detail line per OSD; ok is false when no OSD has any.
func slowOps(stats []osdop.Stats) (c Check, ok bool) {
	n, oldest := 0, 0.0
	var daemons []string
	for _, st := range stats {
		if st.SlowOps == 0 {
			continue
		}
		n += st.SlowOps
		oldest = max(oldest, st.SlowOpOldest)
		daemons = append(daemons, fmt.Sprintf("osd.%d", st.ID))
		c.Detail = append(c.Detail, fmt.Sprintf("osd.%d has %d slow ops, oldest blocked for %.0f sec; look for a network cut to its peers, a PG that cannot peer (shoal pg ls) or a slow device (shoal osd perf, its log)", st.ID, st.SlowOps, st.SlowOpOldest))
	}
	if n == 0 {
		return c, false
	}
	c.Code, c.Severity = "SLOW_OPS", Warn
	c.Summary = fmt.Sprintf("%d slow ops, oldest one blocked for %.0f sec, daemons [%s] have slow ops", n, oldest, strings.Join(daemons, ","))
	return c, true
}

// inactiveLine is a health detail line for an inactive PG: its state
// and, for a down one, what it waits for and what the operator can do.
func inactiveLine(r osdop.PGStats) string {
	l := r.PGID + " is " + r.State
	if r.BlockedBy != "" {
		l += ": " + r.BlockedBy + "; start those OSDs, or if one is gone for good declare it lost (shoal osd lost ID --yes-i-really-mean-it: writes only it held are lost)"
	}
	return l
}

func head(s []string) []string {
	sort.Strings(s)
	if len(s) > 20 {
		return append(s[:20:20], fmt.Sprintf("... and %d more", len(s)-20))
	}
	return s
}

// Text writes the status as `ceph -s` lays it out.
func (s *Status) Text(w io.Writer) {
	fmt.Fprintf(w, "  cluster:\n    id:     %s\n    health: %s\n", s.FSID, s.Health)
	for _, c := range s.Checks {
		fmt.Fprintf(w, "            %s\n", c.Summary)
	}
	up, leader := 0, "none"
	for _, m := range s.Mons {
		if m.Up {
			up++
		}
		if m.Leader {
			leader = m.Addr
		}
	}
	fmt.Fprintf(w, "\n  services:\n    mon: %d daemons, %d in quorum (leader %s)\n", len(s.Mons), up, leader)
	fmt.Fprintf(w, "    osd: %d osds: %d up, %d in; epoch e%d\n", s.OSDs, s.UpOSDs, s.InOSDs, s.Epoch)
	if len(s.Flags) > 0 {
		fmt.Fprintf(w, "         flags %s\n", strings.Join(s.Flags, ","))
	}
	fmt.Fprintf(w, "\n  data:\n    pools:   %d pools, %d pgs\n    objects: %d objects, %s\n", s.Pools, s.PGs, s.Objects, Bytes(uint64(max(s.Bytes, 0))))
	fmt.Fprintf(w, "    usage:   %s used, %s / %s avail\n", Bytes(s.UsedKB<<10), Bytes((s.TotalKB-min(s.UsedKB, s.TotalKB))<<10), Bytes(s.TotalKB<<10))
	var states []string
	for st := range s.PGStates {
		states = append(states, st)
	}
	sort.Strings(states)
	for i, st := range states {
		label := "    pgs:     "
		if i > 0 {
			label = "             "
		}
		fmt.Fprintf(w, "%s%d %s\n", label, s.PGStates[st], st)
	}
	if s.RecoveryOpsRate > 0 || s.ToRecover > 0 {
		fmt.Fprintf(w, "\n  io:\n    recovery: %s/s, %.0f objects/s", Bytes(uint64(s.RecoveryBytesRate)), s.RecoveryOpsRate)
		if s.ToRecover > 0 {
			fmt.Fprintf(w, "; %d objects to copy", s.ToRecover)
			if s.RecoveryOpsRate > 0 {
				fmt.Fprintf(w, ", ETA %s", time.Duration(float64(s.ToRecover)/s.RecoveryOpsRate*float64(time.Second)).Round(time.Second))
			}
		}
		fmt.Fprintln(w)
	}
	progressText(w, s.Progress)
}

// HealthText writes `shoal health [detail]`.
func (s *Status) HealthText(w io.Writer, detail bool) {
	var sums []string
	for _, c := range s.Checks {
		sums = append(sums, c.Summary)
	}
	if len(sums) == 0 {
		fmt.Fprintln(w, s.Health)
		return
	}
	fmt.Fprintf(w, "%s %s\n", s.Health, strings.Join(sums, "; "))
	if detail {
		for _, c := range s.Checks {
			sev := map[string]string{Warn: "WRN", Err: "ERR"}[c.Severity] // as `ceph health detail`
			fmt.Fprintf(w, "[%s] %s: %s\n", sev, c.Code, c.Summary)
			for _, d := range c.Detail {
				fmt.Fprintf(w, "    %s\n", d)
			}
		}
	}
}

// Bytes formats a byte count as Ceph does (KiB, MiB, …).
func Bytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// Tree writes `shoal osd tree`: the CRUSH hierarchy with each OSD's
// status and reweight.
func Tree(w io.Writer, c *client.Conn) {
	m := c.Map()
	cm := m.Crush
	fmt.Fprintf(w, "%-4s %-6s %-9s %-22s %-7s %s\n", "ID", "CLASS", "WEIGHT", "TYPE NAME", "STATUS", "REWEIGHT")
	var walk func(id int32, depth int, weight uint32)
	walk = func(id int32, depth int, weight uint32) {
		name := cm.ItemName(id)
		if id >= 0 {
			st, rw := "dne", 0.0
			if id < m.MaxOSD() && m.OSDs[id].Exists {
				st = "down"
				if m.OSDs[id].Up {
					st = "up"
				}
				rw = float64(m.OSDs[id].Weight) / 0x10000
			}
			class := ""
			if d := cm.Device(id); d != nil {
				class = d.Class
			}
			fmt.Fprintf(w, "%-4d %-6s %-9.5f %-22s %-7s %.5f\n", id, class, float64(weight)/crush.WeightOne, strings.Repeat("    ", depth)+name, st, rw)
			return
		}
		b := cm.Bucket(id)
		fmt.Fprintf(w, "%-4d %-6s %-9.5f %-22s\n", id, "", float64(b.Weight)/crush.WeightOne, strings.Repeat("    ", depth)+cm.TypeName(b.Type)+" "+name)
		for i, it := range b.Items {
			walk(it, depth+1, b.ItemWeights[i])
		}
	}
	for _, b := range cm.Buckets() {
		if b != nil && !crush.IsShadow(b) && cm.Parent(b.ID) == nil {
			walk(b.ID, 0, b.Weight)
		}
	}
}

// PGs lists the PGs their primaries reported (ReportedPGs); prefix
// ("3.") keeps one pool's.
func PGs(s *Status, prefix string) []osdop.PGStats {
	var out []osdop.PGStats
	for _, pg := range s.ReportedPGs() {
		if strings.HasPrefix(pg.PGID, prefix) {
			out = append(out, pg)
		}
	}
	return out
}

// PGsText writes PGs as `ceph pg ls` lays them out.
func PGsText(w io.Writer, pgs []osdop.PGStats) {
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02T15:04:05Z")
	}
	set := func(osds []int32) string {
		return "[" + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(osds)), ","), "[]") + "]"
	}
	fmt.Fprintf(w, "%-8s %8s %10s %-36s %-12s %-10s %-10s %-20s %-20s\n", "PG", "OBJECTS", "BYTES", "STATE", "LAST_UPDATE", "UP", "ACTING", "SCRUB_STAMP", "DEEP_SCRUB_STAMP")
	for _, pg := range pgs {
		up := pg.Up
		if up == nil {
			up = pg.Acting
		}
		fmt.Fprintf(w, "%-8s %8d %10d %-36s %-12s %-10s %-10s %-20s %-20s\n", pg.PGID, pg.Objects, pg.Bytes, pg.State, pg.LastUpdate,
			set(up), set(pg.Acting), stamp(pg.LastScrub), stamp(pg.LastDeepScrub))
	}
}

// NotClean returns why the cluster is not clean — an OSD that exists but
// is down, a PG not reported, or one not active+clean — or nil
// when every PG is active+clean on up OSDs: what the balancer waits for
// before it moves PGs (Ceph's balancer: no PG inactive or degraded).
func (s *Status) NotClean() error {
	var why []string
	if s.UpOSDs < s.OSDs {
		why = append(why, fmt.Sprintf("%d of %d OSDs up", s.UpOSDs, s.OSDs))
	}
	states := make([]string, 0, len(s.PGStates))
	for st := range s.PGStates {
		if st != "active+clean" && !strings.HasPrefix(st, "active+clean+scrubbing") {
			states = append(states, fmt.Sprintf("%d %s", s.PGStates[st], st))
		}
	}
	sort.Strings(states)
	if len(states) > 0 {
		why = append(why, "PGs "+strings.Join(states, ", "))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("cluster not clean: %s", strings.Join(why, "; "))
}

// autoscale is the PG autoscaler's advice for the map's pools from their
// logical bytes and the OSDs' device sizes; an erasure-coded pool's raw
// rate (k+m)/k comes from its profile at the MONs (if the MONs cannot
// say, the pool's size is used: its raw use is overstated).
func autoscale(ctx context.Context, c *client.Conn, m *osdmap.Map, poolBytes map[int64]uint64, osds []osdop.Stats) []autoscaler.Row {
	rates := map[int64]float64{}
	ks := map[string]int{}
	for id, p := range m.Pools {
		if p.Type != osdmap.PoolErasure {
			continue
		}
		k, ok := ks[p.ECProfile]
		if !ok {
			if r, err := c.MonCommand(ctx, "osd erasure-code-profile get", map[string]string{"name": p.ECProfile}); err == nil {
				var args []string
				if json.Unmarshal(r.Data, &args) == nil {
					for _, a := range args {
						if v, found := strings.CutPrefix(a, "k="); found {
							fmt.Sscan(v, &k)
						}
					}
				}
			}
			ks[p.ECProfile] = k
		}
		if k > 0 {
			rates[id] = float64(p.Size) / float64(k)
		}
	}
	sizes := map[int32]uint64{}
	for _, st := range osds {
		sizes[st.ID] = st.Total << 10
	}
	pools, roots := autoscaler.FromMap(m, poolBytes, rates, sizes)
	return autoscaler.Recommend(pools, roots, 0)
}

// autoscaleChecks are Ceph's POOL_TOO_FEW_PGS and POOL_TOO_MANY_PGS for
// the pools in warn mode whose pg_num is not the autoscaler's (in on
// mode the manager changes it).
func autoscaleChecks(rows []autoscaler.Row) []Check {
	var few, many []string
	for _, r := range rows {
		if r.Final == r.PGNum || r.Mode != "warn" {
			continue
		}
		line := fmt.Sprintf("Pool %s has %d placement groups, should have %d", r.Name, r.PGNum, r.Final)
		if r.Final > r.PGNum {
			few = append(few, line)
		} else {
			many = append(many, line)
		}
	}
	var out []Check
	if len(few) > 0 {
		out = append(out, Check{"POOL_TOO_FEW_PGS", Warn, fmt.Sprintf("%d pools have too few placement groups", len(few)), few})
	}
	if len(many) > 0 {
		out = append(out, Check{"POOL_TOO_MANY_PGS", Warn, fmt.Sprintf("%d pools have too many placement groups", len(many)), many})
	}
	return out
}
