package sweep

import (
	"fmt"
	"strings"
)

// Point is one combination of a benchmark's parameter values.
type Point struct {
	// ID names the point's directory: the benchmark's name, then each
	// parameter the file gave a list for as NAME=VALUE, joined by dots
	// ("rados-4m.concurrency=8").
	ID        string `json:"id"`
	Benchmark string `json:"benchmark"`
	Type      string `json:"type"`
	// Params holds every parameter of the type, defaults included.
	Params map[string]string `json:"params"`
	// Swept names the parameters that vary across the benchmark's points,
	// in the file's order.
	Swept []string `json:"swept,omitempty"`
}

// Points expands the file's benchmarks to their points, in the file's
// order, the last parameter varying fastest (as nested loops over the
// parameters in the order written).
func (s *Spec) Points() []Point {
	var out []Point
	for _, b := range s.Benchmarks {
		var swept []string
		for _, p := range b.Params {
			if len(p.Values) > 1 {
				swept = append(swept, p.Name)
			}
		}
		idx := make([]int, len(b.Params))
		for {
			pt := Point{Benchmark: b.Name, Type: b.Type, Params: map[string]string{}, Swept: swept}
			id := []string{b.Name}
			for i, p := range b.Params {
				v := p.Values[idx[i]]
				pt.Params[p.Name] = v
				if len(p.Values) > 1 {
					id = append(id, p.Name+"="+pathSafe(v))
				}
			}
			pt.ID = strings.Join(id, ".")
			out = append(out, pt)
			// advance the odometer, the last parameter fastest
			i := len(idx) - 1
			for ; i >= 0; i-- {
				idx[i]++
				if idx[i] < len(b.Params[i].Values) {
					break
				}
				idx[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
	return out
}

// pathSafe keeps a value usable in a directory name.
func pathSafe(v string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == 0 {
			return '_'
		}
		return r
	}, v)
}

// Key identifies a point across archives: its benchmark type and every
// parameter but the placement ones (pool, bucket, image), so a sweep
// against Ceph's pool "rbench" matches the same sweep against Shoal's
// "data".
func (p Point) Key() string {
	var parts []string
	for _, d := range Params[p.Type] {
		if d.Placement {
			continue
		}
		v, ok := p.Params[d.Name]
		if !ok {
			v = d.Default // a point archived before the parameter existed
		}
		parts = append(parts, d.Name+"="+v)
	}
	return p.Type + ":" + strings.Join(parts, ",")
}

// Label is the point's parameters that vary, for tables ("concurrency=8"),
// or its benchmark's name when none does.
func (p Point) Label() string {
	var parts []string
	for _, n := range p.Swept {
		parts = append(parts, n+"="+p.Params[n])
	}
	if len(parts) == 0 {
		return p.Benchmark
	}
	return strings.Join(parts, " ")
}

// checkIDs refuses two points with one directory (values that differ
// only in characters pathSafe replaces).
func checkIDs(pts []Point) error {
	seen := map[string]bool{}
	for _, p := range pts {
		if seen[p.ID] {
			return fmt.Errorf("%w: two points share the id %s", ErrSpec, p.ID)
		}
		seen[p.ID] = true
	}
	return nil
}
