package status

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// OSDUsage is one OSD's line of `shoal osd df` (Ceph: `ceph osd df`):
// its CRUSH class and weight (TiB by convention), reweight (0..1), device
// size, use and free space in KiB as the OSD reports them, %USE, VAR (its
// %USE over the cluster's) and the PGs whose acting set holds it.
type OSDUsage struct {
	ID       int32   `json:"id"`
	Class    string  `json:"device_class"`
	Weight   float64 `json:"crush_weight"`
	Reweight float64 `json:"reweight"`
	SizeKB   uint64  `json:"kb"`
	UsedKB   uint64  `json:"kb_used"`
	AvailKB  uint64  `json:"kb_avail"`
	UsePct   float64 `json:"utilization"`
	Var      float64 `json:"var"`
	PGs      int     `json:"pgs"`
	Up       bool    `json:"up"`
}

// OSDDF builds the rows of `shoal osd df` from the map (PG placement) and
// the stats of the OSDs that answered (an OSD without stats shows no
// space). The second result is the cluster's %USE.
func OSDDF(m *osdmap.Map, stats []osdop.Stats) ([]OSDUsage, float64) {
	pgs := map[int32]int{}
	for _, id := range m.PoolIDs() {
		p, _ := m.Pool(id)
		for seed := uint32(0); seed < p.PGNum; seed++ {
			mp, err := m.MapPG(osdmap.PGID{Pool: id, Seed: seed})
			if err != nil {
				continue
			}
			for _, o := range mp.Acting {
				if o >= 0 && o != osdmap.NoOSD {
					pgs[o]++
				}
			}
		}
	}
	by := map[int32]osdop.Stats{}
	for _, s := range stats {
		by[s.ID] = s
	}
	var rows []OSDUsage
	var size, used uint64
	for id := int32(0); id < m.MaxOSD(); id++ {
		o := m.OSDs[id]
		if !o.Exists {
			continue
		}
		r := OSDUsage{ID: id, Reweight: float64(o.Weight) / 0x10000, PGs: pgs[id], Up: o.Up}
		if d := m.Crush.Device(id); d != nil {
			r.Class = d.Class
		}
		if b := m.Crush.Parent(id); b != nil {
			for i, it := range b.Items {
				if it == id {
					r.Weight = float64(b.ItemWeights[i]) / crush.WeightOne
				}
			}
		}
		if s, ok := by[id]; ok {
			r.SizeKB, r.UsedKB = s.Total, min(s.Used, s.Total)
			r.AvailKB = r.SizeKB - r.UsedKB
			if r.SizeKB > 0 {
				r.UsePct = 100 * float64(r.UsedKB) / float64(r.SizeKB)
			}
			size += r.SizeKB
			used += r.UsedKB
		}
		rows = append(rows, r)
	}
	var avg float64
	if size > 0 {
		avg = 100 * float64(used) / float64(size)
	}
	for i := range rows {
		if avg > 0 && rows[i].SizeKB > 0 {
			rows[i].Var = rows[i].UsePct / avg
		}
	}
	return rows, avg
}

// OSDDFText prints OSDDF's rows as `ceph osd df` does, with the totals
// and the spread of VAR.
func OSDDFText(w io.Writer, rows []OSDUsage, avg float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	io.WriteString(tw, "ID\tCLASS\tWEIGHT\tREWEIGHT\tSIZE\tRAW USE\tAVAIL\t%USE\tVAR\tPGS\tSTATUS\t\n")
	var size, used, avail uint64
	minVar, maxVar := 0.0, 0.0
	for i, r := range rows {
		st := "down"
		if r.Up {
			st = "up"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.5f\t%.5f\t%s\t%s\t%s\t%.2f\t%.2f\t%d\t%s\t\n", r.ID, r.Class, r.Weight, r.Reweight,
			Bytes(r.SizeKB<<10), Bytes(r.UsedKB<<10), Bytes(r.AvailKB<<10), r.UsePct, r.Var, r.PGs, st)
		size, used, avail = size+r.SizeKB, used+r.UsedKB, avail+r.AvailKB
		if i == 0 || r.Var < minVar {
			minVar = r.Var
		}
		maxVar = max(maxVar, r.Var)
	}
	fmt.Fprintf(tw, "\tTOTAL\t\t\t%s\t%s\t%s\t%.2f\t\t\t\t\n", Bytes(size<<10), Bytes(used<<10), Bytes(avail<<10), avg)
	tw.Flush()
	fmt.Fprintf(w, "MIN/MAX VAR: %.2f/%.2f\n", minVar, maxVar)
}
