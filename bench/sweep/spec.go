// Package sweep runs benchmark sweeps in the shape of CBT (the Ceph
// Benchmarking Tool, github.com/ceph/cbt): a YAML file names a target
// and benchmarks whose list-valued parameters expand to every
// combination (a cartesian product), each combination a *point*. Each
// point runs for a ramp and a measured duration, once per iteration, and
// is archived under ARCHIVE/results/<iteration>/<point-id>/ with its
// exact parameters, per-second samples, the cluster's resource use while
// it ran and a summary. A sweep interrupted (Ctrl-C) keeps every
// finished point; running it again on the same archive resumes.
//
// A file:
//
//	target:            # what to drive
//	  kind: shoal      # shoal (a Shoal cluster by its conf), ceph (rados / rbd of ceph-common), or s3 (any endpoint)
//	  conf: ./shoal-data/shoal.conf
//	iterations: 1
//	duration: 10s      # measured time per point
//	ramp: 2s           # run before measuring, per point
//	max_points: 64     # refuse a file that expands to more
//	setup: ["$SHOAL pool create ec42 erasure ec42 || true"]   # shell, before the target is reached
//	benchmarks:
//	  rados-4m:        # a name; type defaults to the name's first word
//	    type: rados
//	    setup: []      # shell, before the benchmark's first point
//	    mode: write
//	    op_size: 4M
//	    concurrency: [1, 2, 4, 8, 16, 32]
//
// The parameters each benchmark type takes are in Params.
package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ErrSpec is wrapped by every error about a sweep file's content.
var ErrSpec = errors.New("sweep file")

// Spec is a parsed sweep file.
type Spec struct {
	Target     Target
	Iterations int           // runs of every point; default 1
	Duration   time.Duration // measured seconds per point; default 30s
	Ramp       time.Duration // unmeasured start of each point; default 0
	MaxPoints  int           // the most points the file may expand to; default 1000
	Cleanup    bool          // remove what the sweep wrote at its end; default true
	// Setup are shell commands run, in order, before the target is
	// reached (create pools, start gateways); Teardown after the last
	// point, and after an interrupted run. They run with SHOAL (this
	// binary), SHOAL_CONF and SHOAL_DATA (a shoal target's conf and its
	// directory) or CEPH_CONF (a ceph target's) in their environment. A
	// resumed sweep runs Setup again: write commands that may run twice.
	Setup, Teardown []string
	Benchmarks      []Benchmark // in the file's order
	Raw             []byte      // the file as read (archived beside the results)
}

// Target is the system a sweep drives.
type Target struct {
	// Kind is "shoal" (default), "ceph" or "s3".
	Kind string `yaml:"kind"`
	// Conf is the cluster's configuration file: shoal.conf (default: the
	// usual search, $SHOAL_CONF or ./shoal-data/shoal.conf) or ceph.conf
	// (default /etc/ceph/ceph.conf).
	Conf string `yaml:"conf"`
	// Keyring and User: ceph's --keyring and --id (default admin).
	Keyring string `yaml:"keyring"`
	User    string `yaml:"user"`
	// Endpoint is the S3 URL (s3 kind; shoal kind: default from the
	// cluster's s3.env). AccessKey and SecretKey as well.
	Endpoint  string `yaml:"endpoint"`
	AccessKey string `yaml:"access_key"`
	SecretKey string `yaml:"secret_key"`
	// OSDs, Devices and Hosts normalise the figures (per OSD, per
	// device, per host). 0: from the cluster's map where it can be read
	// (shoal kind: OSDs up and in, their CRUSH hosts, one device each).
	OSDs    int `yaml:"osds"`
	Devices int `yaml:"devices"`
	Hosts   int `yaml:"hosts"`
	// Daemons are process names whose CPU and memory are sampled (ceph
	// and s3 kinds; default ceph-osd, ceph-mon, ceph-mgr, radosgw). The
	// shoal kind samples the daemons in its run directory's pid files.
	Daemons []string `yaml:"daemons"`
}

// Benchmark is one entry of the file's benchmarks map.
type Benchmark struct {
	Name   string
	Type   string  // "rados", "s3" or "block"
	Params []Param // in the file's order, each with one or more values
	// Setup are shell commands run before the benchmark's first point
	// that runs (as the file's setup; a pool moved to another rule).
	Setup []string
}

// Param is a benchmark parameter and the values the sweep takes it
// through (one, unless the file gave a list).
type Param struct {
	Name   string
	Values []string
}

// Params are the parameters of each benchmark type with their defaults.
// Those marked placement name where the load goes (a pool, bucket or
// image), not what it is: points of two archives are matched by the
// others (compare).
var Params = map[string][]ParamDef{
	"rados": {
		{"pool", "data", true, "pool to write to and read from"},
		{"mode", "write", false, "write, seq or rand (rados bench's modes; reads prefill first)"},
		{"op_size", "4M", false, "object and op size"},
		{"concurrency", "16", false, "ops in flight per client (rados bench -t)"},
		{"procs", "1", false, "client processes (each its own OS process and connection, started together), each with concurrency ops"},
		{"prefill", "", false, "reads: write for this long first (default the point's ramp + duration)"},
	},
	"block": {
		{"image", "data/sweep", true, "POOL/IMAGE, created if missing"},
		{"image_size", "1G", false, "size of an image the sweep creates"},
		{"io_type", "read", false, "read, write or readwrite (rbd bench --io-type)"},
		{"io_size", "4K", false, "bytes per I/O"},
		{"iodepth", "16", false, "I/Os in flight (rbd bench --io-threads)"},
		{"pattern", "rand", false, "seq or rand"},
		{"rw_mix_read", "70", false, "readwrite: percentage of reads"},
		{"prefill", "true", false, "write an image the sweep creates whole before reading it"},
		{"engine", "bench", false, "bench (rbd bench; Shoal's image library in process) or fio (its rbd engine on Ceph, its nbd engine on a Shoal image the sweep exports): fio gives latency percentiles"},
	},
	"s3": {
		{"bucket", "shoal-sweep", true, "bucket, created if missing"},
		{"endpoint", "", true, "gateway URL(s), comma-separated (default the target's)"},
		{"location", "", true, "LocationConstraint of the bucket (\"default:indexless\")"},
		{"op", "put", false, "put, get or mixed"},
		{"mix", "get:70,put:30", false, "mixed: shares of get, put, stat and delete (percent)"},
		{"size", "64K", false, "object size, or MIN-MAX"},
		{"concurrency", "16", false, "requests in flight"},
		{"objects", "1000", false, "key space (put: 0 = a new key every PUT)"},
	},
}

// ParamDef describes a benchmark parameter.
type ParamDef struct {
	Name      string
	Default   string
	Placement bool
	Help      string
}

// Load reads and checks a sweep file.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// file is the YAML document; benchmarks stays a node to keep its order.
type file struct {
	Target     Target    `yaml:"target"`
	Iterations int       `yaml:"iterations"`
	Duration   string    `yaml:"duration"`
	Ramp       string    `yaml:"ramp"`
	MaxPoints  int       `yaml:"max_points"`
	Cleanup    *bool     `yaml:"cleanup"`
	Setup      []string  `yaml:"setup"`
	Teardown   []string  `yaml:"teardown"`
	Benchmarks yaml.Node `yaml:"benchmarks"`
}

// Parse reads a sweep file's content: unknown keys, benchmark types and
// parameters, bad durations and a file that expands to more than
// max_points points are errors (wrapping ErrSpec).
func Parse(b []byte) (*Spec, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	s := &Spec{Target: f.Target, Iterations: f.Iterations, MaxPoints: f.MaxPoints, Cleanup: true, Setup: f.Setup, Teardown: f.Teardown, Raw: b}
	if f.Cleanup != nil {
		s.Cleanup = *f.Cleanup
	}
	switch s.Target.Kind {
	case "":
		s.Target.Kind = "shoal"
	case "shoal", "ceph", "s3":
	default:
		return nil, fmt.Errorf("%w: target kind %q: shoal, ceph or s3", ErrSpec, s.Target.Kind)
	}
	if s.Iterations == 0 {
		s.Iterations = 1
	}
	if s.MaxPoints == 0 {
		s.MaxPoints = 1000
	}
	if s.Iterations < 0 || s.MaxPoints < 0 {
		return nil, fmt.Errorf("%w: iterations and max_points must be positive", ErrSpec)
	}
	var err error
	if s.Duration, err = duration("duration", f.Duration, 30*time.Second); err != nil {
		return nil, err
	}
	if s.Duration <= 0 {
		return nil, fmt.Errorf("%w: duration must be positive", ErrSpec)
	}
	if s.Ramp, err = duration("ramp", f.Ramp, 0); err != nil {
		return nil, err
	}
	if f.Benchmarks.Kind != yaml.MappingNode || len(f.Benchmarks.Content) == 0 {
		return nil, fmt.Errorf("%w: benchmarks: want a map of named benchmarks", ErrSpec)
	}
	nodes := f.Benchmarks.Content
	for i := 0; i+1 < len(nodes); i += 2 {
		bm, err := benchmark(nodes[i].Value, nodes[i+1])
		if err != nil {
			return nil, err
		}
		if s.Target.Kind == "s3" && bm.Type != "s3" {
			return nil, fmt.Errorf("%w: benchmark %s: an s3 target runs only s3 benchmarks", ErrSpec, bm.Name)
		}
		s.Benchmarks = append(s.Benchmarks, bm)
	}
	if n := s.Count(); n > s.MaxPoints {
		return nil, fmt.Errorf("%w: the benchmarks expand to %d points, more than max_points %d", ErrSpec, n, s.MaxPoints)
	}
	return s, nil
}

func duration(key, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil { // bare seconds, as CBT's time
		if n < 0 || math.IsInf(n, 0) || math.IsNaN(n) || n > 1e9 {
			return 0, fmt.Errorf("%w: %s %q: want a duration such as 30s", ErrSpec, key, v)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: %s %q: want a duration such as 30s", ErrSpec, key, v)
	}
	return d, nil
}

// benchmark reads one named benchmark: a map of parameters, each a
// scalar or a list of scalars.
func benchmark(name string, n *yaml.Node) (Benchmark, error) {
	bm := Benchmark{Name: name}
	if name == "" || strings.ContainsAny(name, "/\\. ") {
		return bm, fmt.Errorf("%w: benchmark name %q: no spaces, dots or slashes", ErrSpec, name)
	}
	if n.Kind != yaml.MappingNode {
		return bm, fmt.Errorf("%w: benchmark %s (line %d): want a map of parameters", ErrSpec, name, n.Line)
	}
	var params []Param
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, deref(n.Content[i+1])
		var vals []string
		switch v.Kind {
		case yaml.ScalarNode:
			vals = []string{v.Value}
		case yaml.SequenceNode:
			for _, e := range v.Content {
				if e = deref(e); e.Kind != yaml.ScalarNode {
					return bm, fmt.Errorf("%w: benchmark %s, %s (line %d): a list of plain values", ErrSpec, name, k, e.Line)
				}
				vals = append(vals, e.Value)
			}
			if len(vals) == 0 && k != "setup" {
				return bm, fmt.Errorf("%w: benchmark %s, %s (line %d): an empty list", ErrSpec, name, k, v.Line)
			}
		default:
			return bm, fmt.Errorf("%w: benchmark %s, %s (line %d): a value or a list of values", ErrSpec, name, k, v.Line)
		}
		if k == "type" {
			if len(vals) != 1 {
				return bm, fmt.Errorf("%w: benchmark %s: one type", ErrSpec, name)
			}
			bm.Type = vals[0]
			continue
		}
		if k == "setup" {
			bm.Setup = vals
			continue
		}
		if slices.ContainsFunc(params, func(p Param) bool { return p.Name == k }) {
			return bm, fmt.Errorf("%w: benchmark %s: %s given twice", ErrSpec, name, k)
		}
		params = append(params, Param{k, vals})
	}
	if bm.Type == "" {
		bm.Type, _, _ = strings.Cut(name, "-")
	}
	defs, ok := Params[bm.Type]
	if !ok {
		return bm, fmt.Errorf("%w: benchmark %s: unknown type %q (rados, s3 or block; set type: when the name is not one)", ErrSpec, name, bm.Type)
	}
	for _, p := range params {
		if !slices.ContainsFunc(defs, func(d ParamDef) bool { return d.Name == p.Name }) {
			return bm, fmt.Errorf("%w: benchmark %s: unknown %s parameter %q (known: %s)", ErrSpec, name, bm.Type, p.Name, paramNames(defs))
		}
	}
	// Every parameter in the type's order of definition, defaults filled
	// in, so a point's parameters are complete and comparable.
	for _, d := range defs {
		i := slices.IndexFunc(params, func(p Param) bool { return p.Name == d.Name })
		if i >= 0 {
			bm.Params = append(bm.Params, params[i])
		} else {
			bm.Params = append(bm.Params, Param{d.Name, []string{d.Default}})
		}
	}
	return bm, nil
}

// deref follows a YAML alias (*name) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// ParamHelp is the parameters of every benchmark type, with their
// defaults and meanings, for the command's help.
func ParamHelp() string {
	var b strings.Builder
	for _, typ := range []string{"rados", "block", "s3"} {
		fmt.Fprintf(&b, "%s:\n", typ)
		for _, d := range Params[typ] {
			def := d.Default
			if def == "" {
				def = "-"
			}
			fmt.Fprintf(&b, "  %-12s %-14s %s\n", d.Name, def, d.Help)
		}
	}
	return b.String()
}

func paramNames(defs []ParamDef) string {
	var s []string
	for _, d := range defs {
		s = append(s, d.Name)
	}
	return strings.Join(s, ", ")
}

// Count is the number of points the file expands to, per iteration.
func (s *Spec) Count() int {
	n := 0
	for _, b := range s.Benchmarks {
		m := 1
		for _, p := range b.Params {
			m *= len(p.Values)
		}
		n += m
	}
	return n
}

// Overrides change a sweep file from the command line, so one file runs
// against several targets: the target's kind and conf, and parameters
// set in every benchmark that has them (pool=rbench).
type Overrides struct {
	Kind, Conf string
	Set        []string // NAME=VALUE
}

// overridePrefix starts the line that records overrides at the end of
// an archive's sweep.yaml (a YAML comment, so the file still parses).
const overridePrefix = "# shoal bench sweep overrides: "

// Apply changes s by o and records o in s.Raw. A parameter no benchmark
// takes, or a value that fails the file's own checks, is an error.
func (s *Spec) Apply(o Overrides) error {
	if o.Kind == "" && o.Conf == "" && len(o.Set) == 0 {
		return nil
	}
	switch o.Kind {
	case "", "shoal", "ceph", "s3":
	default:
		return fmt.Errorf("%w: target kind %q: shoal, ceph or s3", ErrSpec, o.Kind)
	}
	if o.Kind != "" {
		s.Target.Kind = o.Kind
	}
	if o.Conf != "" {
		s.Target.Conf = o.Conf
	}
	for _, kv := range o.Set {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return fmt.Errorf("%w: --set %q: want NAME=VALUE", ErrSpec, kv)
		}
		used := false
		for i := range s.Benchmarks {
			for j := range s.Benchmarks[i].Params {
				if p := &s.Benchmarks[i].Params[j]; p.Name == name {
					p.Values, used = []string{v}, true
				}
			}
		}
		if !used {
			return fmt.Errorf("%w: --set %s: no benchmark of the file takes %s", ErrSpec, kv, name)
		}
	}
	line, err := json.Marshal(o)
	if err != nil {
		return err
	}
	raw := bytes.TrimRight(s.Raw, "\n")
	s.Raw = append(append(raw, "\n"+overridePrefix...), append(line, '\n')...)
	return nil
}

// parseOverrides finds the overrides an archive's sweep.yaml records.
func parseOverrides(raw []byte) (Overrides, bool) {
	var o Overrides
	i := bytes.LastIndex(raw, []byte(overridePrefix))
	if i < 0 {
		return o, false
	}
	line, _, _ := bytes.Cut(raw[i+len(overridePrefix):], []byte("\n"))
	return o, json.Unmarshal(line, &o) == nil
}
