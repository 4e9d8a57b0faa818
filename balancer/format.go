package balancer

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/shoal-project/shoal/osdmap"
)

// planJSON is a plan's file form: Ceph's `osd dump` shape for
// pg_upmap_items, in PG order.
type planJSON struct {
	Epoch   uint32        `json:"epoch"`
	Changes []pgItemsJSON `json:"pg_upmap_items"`
	Skipped []string      `json:"skipped,omitempty"`
}

type pgItemsJSON struct {
	PGID     string     `json:"pgid"`
	Mappings []pairJSON `json:"mappings"`
}

type pairJSON struct {
	From int32 `json:"from"`
	To   int32 `json:"to"`
}

// MarshalJSON writes the plan as {"epoch", "pg_upmap_items": [{"pgid",
// "mappings": [{"from", "to"}]}]}; an empty mappings list removes the
// PG's entry.
func (p *Plan) MarshalJSON() ([]byte, error) {
	out := planJSON{Epoch: uint32(p.Epoch), Skipped: p.Skipped, Changes: []pgItemsJSON{}}
	for _, pg := range p.PGs() {
		e := pgItemsJSON{PGID: pg.String(), Mappings: []pairJSON{}}
		for _, it := range p.Changes[pg] {
			e.Mappings = append(e.Mappings, pairJSON{it.From, it.To})
		}
		out.Changes = append(out.Changes, e)
	}
	return json.MarshalIndent(out, "", "  ")
}

// UnmarshalJSON reads MarshalJSON's form.
func (p *Plan) UnmarshalJSON(b []byte) error {
	var in planJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	p.Epoch, p.Skipped, p.Changes = osdmap.Epoch(in.Epoch), in.Skipped, map[osdmap.PGID][]osdmap.UpmapItem{}
	for _, e := range in.Changes {
		pg, err := osdmap.ParsePGID(e.PGID)
		if err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		items := []osdmap.UpmapItem{}
		for _, m := range e.Mappings {
			items = append(items, osdmap.UpmapItem{From: m.From, To: m.To})
		}
		p.Changes[pg] = items
	}
	return nil
}

// PGs returns the PGs the plan changes, in order.
func (p *Plan) PGs() []osdmap.PGID { return osdmap.SortedPGs(p.Changes) }

// Commands writes the plan as the commands that make it, one per PG, as
// Ceph's `balancer show` and `osdmaptool --upmap` do: `shoal osd
// pg-upmap-items PGID FROM TO...` or `shoal osd rm-pg-upmap-items PGID`.
func (p *Plan) Commands(w io.Writer) error {
	for _, pg := range p.PGs() {
		items := p.Changes[pg]
		if len(items) == 0 {
			if _, err := fmt.Fprintf(w, "shoal osd rm-pg-upmap-items %s\n", pg); err != nil {
				return err
			}
			continue
		}
		line := "shoal osd pg-upmap-items " + pg.String()
		for _, it := range items {
			line += fmt.Sprintf(" %d %d", it.From, it.To)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// EvalText writes scores as a table: per pool, its OSDs, PG copies,
// min/mean/max copies per OSD, the largest deviation from target, the
// highest count/target ratio and the deviation's standard deviation.
func EvalText(w io.Writer, scores []PoolScore) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "POOL\tOSDS\tPG_COPIES\tMIN\tMEAN\tMAX\tMAX_DEVIATION\tMAX/TARGET\tSTDDEV\t")
	for _, s := range scores {
		if s.Skipped != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", s.Name, s.Skipped)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%d\t%.2f\t%.3f\t%.2f\t\n", s.Name, s.OSDs, s.Copies, s.Min, s.Mean, s.Max, s.MaxDeviation, s.MaxOverMean, s.StdDev)
	}
	return tw.Flush()
}
