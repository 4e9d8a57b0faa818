// Package config reads ceph.conf-style configuration files: INI sections
// [global], [mon], [osd], [osd.N], [client], [client.NAME], options named as
// in Ceph where the meaning is the same (spaces, dashes and underscores are
// interchangeable), every option checked against one table (Options) that
// also generates the documentation. Unknown options and malformed values
// are errors that name the file, line and option — never silently ignored.
package config

//go:generate go run ./gen -o ../docs/configuration.md

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ErrUnknown marks an option name that is not in the table.
var ErrUnknown = errors.New("unknown option")

// Normalize turns "osd pool default size" and "osd-pool-default-size" into
// "osd_pool_default_size".
func Normalize(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return r
	}, name)
}

var byName = func() map[string]*Option {
	m := map[string]*Option{}
	for i := range Options {
		m[Options[i].Name] = &Options[i]
	}
	return m
}()

// Lookup returns the option with the given (normalised) name.
func Lookup(name string) (*Option, bool) {
	o, ok := byName[Normalize(name)]
	return o, ok
}

// File is a parsed configuration file: section → option → raw value.
type File struct {
	sections map[string]map[string]string
}

// NewFile wraps settings already validated (option names normalised, values
// checked), such as the MON's configuration database: section → option →
// value. The map is used, not copied.
func NewFile(sections map[string]map[string]string) *File { return &File{sections: sections} }

// Load reads a configuration file.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads configuration text; name appears in errors.
func Parse(r io.Reader, name string) (*File, error) {
	f := &File{sections: map[string]map[string]string{}}
	sc := bufio.NewScanner(r)
	section := ""
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if i := strings.IndexAny(text, "#;"); i >= 0 {
			text = strings.TrimSpace(text[:i])
		}
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, "[") {
			if !strings.HasSuffix(text, "]") || len(text) < 3 {
				return nil, fmt.Errorf("%s:%d: malformed section header %q", name, line, text)
			}
			section = strings.TrimSpace(text[1 : len(text)-1])
			if err := CheckSection(section); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if f.sections[section] == nil {
				f.sections[section] = map[string]string{}
			}
			continue
		}
		if section == "" {
			return nil, fmt.Errorf("%s:%d: option outside a section (start with [global])", name, line)
		}
		k, v, ok := strings.Cut(text, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: expected 'name = value', found %q", name, line, text)
		}
		key := Normalize(k)
		o, known := byName[key]
		if !known {
			return nil, fmt.Errorf("%s:%d: %w %q%s", name, line, ErrUnknown, strings.TrimSpace(k), suggest(key))
		}
		v = strings.TrimSpace(v)
		if err := o.Check(v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		f.sections[section][key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// CheckSection validates a section or WHO name: global, mon, osd, client,
// mgr, or TYPE.ID such as osd.3.
func CheckSection(s string) error {
	typ, id, _ := strings.Cut(s, ".")
	switch typ {
	case "global", "mon", "osd", "client", "mgr":
	default:
		return fmt.Errorf("unknown section [%s] (global, mon, osd, client, or TYPE.ID)", s)
	}
	if typ == "global" && id != "" {
		return fmt.Errorf("unknown section [%s]", s)
	}
	return nil
}

// suggest names the closest known option, for typos.
func suggest(name string) string {
	best, bestD := "", 4
	for _, o := range Options {
		if d := distance(name, o.Name); d < bestD {
			best, bestD = o.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// distance is the Levenshtein edit distance.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// Check validates a value for the option.
func (o *Option) Check(v string) error {
	var f float64
	var err error
	switch o.Type {
	case Bool:
		_, err = parseBool(v)
		return wrapValue(o, v, err)
	case String:
		return nil
	case Int:
		var n int64
		n, err = strconv.ParseInt(v, 10, 64)
		f = float64(n)
	case Size:
		var n uint64
		n, err = ParseSize(v)
		f = float64(n)
	case Seconds, Float:
		f, err = strconv.ParseFloat(v, 64)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			err = errors.New("not a finite number")
		}
	}
	if err != nil {
		return wrapValue(o, v, err)
	}
	if o.Max > o.Min && (f < o.Min || f > o.Max) {
		return fmt.Errorf("%s = %s: outside [%g, %g]", o.Name, v, o.Min, o.Max)
	}
	return nil
}

func wrapValue(o *Option, v string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s = %q: not a valid %s: %v", o.Name, v, o.Type, err)
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return false, errors.New("want true or false")
}

// ParseSize parses a byte count with an optional IEC suffix: 4096, 64K,
// 4M, 10G, 1T (K = 1024; a trailing "i" or "B" is accepted: 4MiB, 4MB).
func ParseSize(v string) (uint64, error) {
	s := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(v)), "B"), "I")
	mult := uint64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		case 'P':
			mult = 1 << 50
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: want a number with an optional K, M, G, T or P suffix", v)
	}
	if n > math.MaxUint64/mult {
		return 0, fmt.Errorf("size %q overflows", v)
	}
	return n * mult, nil
}

// Config is the configuration of one entity (osd.3, mon.a, client.admin):
// [global], then its type's section, then its own, each overriding the
// last, over the table's defaults.
type Config struct {
	entity string
	data   string
	vals   map[string]string
}

// SetDataDir sets what $data expands to (the cluster's data directory).
func (c *Config) SetDataDir(dir string) { c.data = dir }

// For resolves the configuration of an entity.
func (f *File) For(entity string) *Config {
	c := &Config{entity: entity, vals: map[string]string{}}
	typ, _, _ := strings.Cut(entity, ".")
	for _, sec := range []string{"global", typ, entity} {
		for k, v := range f.sections[sec] {
			c.vals[k] = v
		}
	}
	return c
}

// Sections are the file's section names ("global", "mon.a", …), sorted.
func (f *File) Sections() []string {
	return slices.Sorted(maps.Keys(f.sections))
}

// Defaults is a configuration with every option at its default.
func Defaults(entity string) *Config { return (&File{}).For(entity) }

// Set overrides an option (command-line flags, the MON's config database);
// the value is checked like a file's.
func (c *Config) Set(name, value string) error {
	o, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("%w %q%s", ErrUnknown, name, suggest(Normalize(name)))
	}
	if err := o.Check(value); err != nil {
		return err
	}
	c.vals[o.Name] = value
	return nil
}

// IsSet reports whether the option was given a value (a file, the MON's
// configuration database, a flag) rather than left at its default.
func (c *Config) IsSet(name string) bool {
	if _, ok := byName[name]; !ok {
		panic(fmt.Sprintf("config: option %q is not in the table", name)) // a programming error
	}
	_, ok := c.vals[name]
	return ok
}

func (c *Config) raw(name string) (*Option, string) {
	o, ok := byName[name]
	if !ok {
		panic(fmt.Sprintf("config: option %q is not in the table", name)) // a programming error
	}
	if v, ok := c.vals[name]; ok {
		return o, v
	}
	return o, o.Default
}

// String returns a string option, with $name (the entity) and $data (see
// SetDataDir) expanded.
func (c *Config) String(name string) string {
	_, v := c.raw(name)
	return strings.NewReplacer("$name", c.entity, "$data", c.data).Replace(v)
}

// Int returns an integer option.
func (c *Config) Int(name string) int64 {
	_, v := c.raw(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// Size returns a size option in bytes.
func (c *Config) Size(name string) uint64 {
	_, v := c.raw(name)
	n, _ := ParseSize(v)
	return n
}

// Seconds returns a duration option in seconds.
func (c *Config) Seconds(name string) float64 {
	_, v := c.raw(name)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// Float returns a floating-point option.
func (c *Config) Float(name string) float64 {
	_, v := c.raw(name)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// Bool returns a boolean option.
func (c *Config) Bool(name string) bool {
	_, v := c.raw(name)
	b, _ := parseBool(v)
	return b
}

// Dump lists every option and its effective value, sorted by name (what
// `shoal config show` prints).
func (c *Config) Dump() []string {
	names := make([]string, 0, len(Options))
	for _, o := range Options {
		names = append(names, o.Name)
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		_, v := c.raw(n)
		out[i] = n + " = " + v
	}
	return out
}

// Markdown renders the option table as the operator documentation.
func Markdown() string {
	var sb strings.Builder
	sb.WriteString("# Configuration reference\n\n")
	sb.WriteString("Generated from `config/options.go` by `go generate ./config`; do not edit.\n")
	sb.WriteString("Options go in a ceph.conf-style file (`shoal.conf`) under `[global]`, `[mon]`,\n")
	sb.WriteString("`[osd]`, `[osd.N]`, `[client]` or `[client.NAME]`; later sections override earlier\n")
	sb.WriteString("ones for the entity they name. Spaces, dashes and underscores in names are\n")
	sb.WriteString("interchangeable. Sizes take IEC suffixes (4M = 4 MiB); durations are seconds.\n\n")
	sb.WriteString("| option | type | default | description |\n| --- | --- | --- | --- |\n")
	for _, o := range Options {
		def := o.Default
		if def == "" {
			def = "(none)"
		}
		fmt.Fprintf(&sb, "| `%s` | %s | `%s` | %s |\n", o.Name, o.Type, def, o.Desc)
	}
	return sb.String()
}

// Over returns the settings of f with g's on top (g wins): a daemon's
// configuration file over the MON's configuration database, as Ceph ranks
// them.
func (f *File) Over(g *File) *File {
	out := map[string]map[string]string{}
	for _, src := range []*File{f, g} {
		if src == nil {
			continue
		}
		for sec, kv := range src.sections {
			if out[sec] == nil {
				out[sec] = map[string]string{}
			}
			for k, v := range kv {
				out[sec][k] = v
			}
		}
	}
	return &File{sections: out}
}

// Get returns any option's value as text (ErrUnknown for names not in the
// table).
func (c *Config) Get(name string) (string, error) {
	o, ok := Lookup(name)
	if !ok {
		return "", fmt.Errorf("%w %q%s", ErrUnknown, name, suggest(Normalize(name)))
	}
	_, v := c.raw(o.Name)
	return v, nil
}
