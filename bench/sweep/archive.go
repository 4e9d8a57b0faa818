package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Archive is a sweep's results as read back from its directory.
type Archive struct {
	Dir    string
	Spec   *Spec
	Target TargetInfo
	// Results holds every finished point of every iteration, in the
	// file's point order, iterations in turn.
	Results []Result
}

// ReadArchive reads an archive a sweep wrote (finished points only).
func ReadArchive(dir string) (*Archive, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "sweep.yaml"))
	if err != nil {
		return nil, fmt.Errorf("sweep: %s is not a sweep archive: %w", dir, err)
	}
	s, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("sweep: %s: %w", dir, err)
	}
	if o, ok := parseOverrides(raw); ok {
		if err := s.Apply(o); err != nil {
			return nil, fmt.Errorf("sweep: %s: %w", dir, err)
		}
	}
	a := &Archive{Dir: dir, Spec: s}
	if err := readJSON(filepath.Join(dir, "target.json"), &a.Target); err != nil {
		return nil, err
	}
	order := map[string]int{}
	for i, p := range s.Points() {
		order[p.ID] = i
	}
	files, _ := filepath.Glob(filepath.Join(dir, "results", "*", "*", "result.json"))
	for _, f := range files {
		var r Result
		if err := readJSON(f, &r); err != nil {
			return nil, err
		}
		a.Results = append(a.Results, r)
	}
	slices.SortStableFunc(a.Results, func(x, y Result) int {
		if x.Iteration != y.Iteration {
			return x.Iteration - y.Iteration
		}
		return order[x.Point.ID] - order[y.Point.ID]
	})
	if len(a.Results) == 0 {
		return nil, fmt.Errorf("sweep: %s holds no finished point", dir)
	}
	return a, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("sweep: %s: %w", path, err)
	}
	return nil
}

// made is what a sweep created on its target and must remove at its end
// (archived as made.json, so a resumed sweep knows what an interrupted
// one made): images, by POOL/IMAGE, "created" until filled and "filled"
// after; rados read sets, by run name, with their pool.
type made struct {
	path   string
	Images map[string]string `json:"images"`
	Sets   map[string]string `json:"read_sets"`
	// S3 counts, per "BUCKET PREFIX ENDPOINTS", the most keys one run
	// wrote (keys 0, 1, ...): an unlistable (indexless) bucket is
	// cleaned by key.
	S3 map[string]int `json:"s3_keys"`
}

func loadMade(archive string) *made {
	m := &made{path: filepath.Join(archive, "made.json"), Images: map[string]string{}, Sets: map[string]string{}, S3: map[string]int{}}
	if archive == "" {
		m.path = ""
		return m
	}
	if b, err := os.ReadFile(m.path); err == nil {
		json.Unmarshal(b, m)
	}
	if m.Images == nil {
		m.Images = map[string]string{}
	}
	if m.Sets == nil {
		m.Sets = map[string]string{}
	}
	if m.S3 == nil {
		m.S3 = map[string]int{}
	}
	return m
}

func (m *made) save() error {
	if m.path == "" {
		return nil
	}
	return writeJSON(m.path, m)
}
