package osdmap

import (
	"math"
	"sort"

	"github.com/shoal-project/shoal/crush"
)

// Distribution summarises how evenly a pool's PGs land on OSDs: the
// figures Ceph operators read from `osdmaptool --test-map-pgs` and
// `ceph osd df` (PGS column).
type Distribution struct {
	PGs     int           // PGs in the pool
	Count   map[int32]int // acting-set memberships per OSD
	Primary map[int32]int // PGs each OSD is acting primary of
	// Over the OSDs that are in and have CRUSH weight: Expected[o] is the
	// count o would hold if PGs followed CRUSH weights exactly.
	Expected map[int32]float64
	Mean     float64 // mean count over those OSDs
	StdDev   float64 // standard deviation of count − expected
	MaxRatio float64 // largest count / expected (1.0 is perfect)
	MaxOSD   int32   // the OSD with MaxRatio
	Short    int     // PGs whose acting set is smaller than the pool size
}

// PGDistribution maps every PG of a pool and summarises the result.
func (m *Map) PGDistribution(pool int64) (Distribution, error) {
	p, err := m.Pool(pool)
	if err != nil {
		return Distribution{}, err
	}
	mps, err := m.PGMappings(pool)
	if err != nil {
		return Distribution{}, err
	}
	d := Distribution{PGs: len(mps), Count: map[int32]int{}, Primary: map[int32]int{}, Expected: map[int32]float64{}, MaxOSD: -1}
	total := 0
	for _, mp := range mps {
		n := 0
		for _, o := range mp.Acting {
			if o != NoOSD {
				d.Count[o]++
				n++
			}
		}
		total += n
		if n < p.Size {
			d.Short++
		}
		if mp.ActingPrimary >= 0 {
			d.Primary[mp.ActingPrimary]++
		}
	}
	// weight each in OSD by CRUSH weight × reweight
	weights := map[int32]float64{}
	sum := 0.0
	for _, b := range m.Crush.Buckets() {
		if crush.IsShadowName(b.Name) {
			continue
		}
		for i, it := range b.Items {
			if it >= 0 && m.exists(it) && m.OSDs[it].In() {
				w := float64(b.ItemWeights[i]) * float64(m.OSDs[it].Weight) / WeightIn
				if w > 0 {
					weights[it] += w
					sum += w
				}
			}
		}
	}
	if sum == 0 || len(weights) == 0 {
		return d, nil
	}
	ids := make([]int32, 0, len(weights))
	for o := range weights {
		ids = append(ids, o)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var sq float64
	for _, o := range ids {
		exp := float64(total) * weights[o] / sum
		d.Expected[o] = exp
		c := float64(d.Count[o])
		d.Mean += c
		sq += (c - exp) * (c - exp)
		if r := c / exp; r > d.MaxRatio {
			d.MaxRatio, d.MaxOSD = r, o
		}
	}
	d.Mean /= float64(len(ids))
	d.StdDev = math.Sqrt(sq / float64(len(ids)))
	return d, nil
}
