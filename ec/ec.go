// Package ec is erasure coding for EC pools: profiles (Ceph's `osd
// erasure-code-profile`), the stripe layout of an object over k data and m
// coding shards, and Reed–Solomon (Vandermonde) coding through
// github.com/klauspost/reedsolomon with its SIMD paths.
//
// # Layout
//
// An object is cut into stripes of k × stripe_unit bytes (the pool's
// stripe width); stripe s's chunk j (bytes [s·w + j·u, s·w + (j+1)·u) of
// the object, w the width, u the unit) goes to data shard j at offset s·u,
// and the m coding chunks of the stripe to coding shards k…k+m−1, as Ceph's
// ECUtil stripe_info_t lays them out. The last stripe is padded with zeros;
// the object's logical size is kept apart. Because Reed–Solomon is linear
// byte by byte, coding every stripe of an object at once — data shard j
// being the concatenation of the stripes' chunks j — gives the same coding
// shards as coding each stripe alone, so a whole write is one encode call.
package ec

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/reedsolomon"
)

// Errors (errors.Is).
var (
	// ErrInvalid: a profile or shard set that cannot work.
	ErrInvalid = errors.New("invalid erasure code")
	// ErrTooFewShards: more than m shards are missing or corrupt.
	ErrTooFewShards = errors.New("too few shards to decode")
)

// Defaults, as Ceph's default profile and osd_pool_erasure_code_stripe_unit
// (docs.ceph.com, "Erasure code profiles").
const (
	DefaultK             = 2
	DefaultM             = 2
	DefaultStripeUnit    = 4096
	DefaultFailureDomain = "host"
	DefaultRoot          = "default"
	Plugin               = "reed_sol_van" // jerasure's technique name; the only one
	maxShards            = 256            // GF(2^8)
)

// Profile is an erasure code profile.
type Profile struct {
	Name          string
	K, M          int
	StripeUnit    int // bytes per data chunk per stripe, a multiple of 4 KiB
	FailureDomain string
	DeviceClass   string
	Root          string
}

// ParseProfile reads `key=value` arguments (k, m, stripe_unit,
// crush-failure-domain, crush-device-class, crush-root, plugin, technique)
// over the defaults. stripe_unit takes a size suffix (4K, 64K, 1M).
func ParseProfile(name string, args []string) (Profile, error) {
	p := Profile{Name: name, K: DefaultK, M: DefaultM, StripeUnit: DefaultStripeUnit, FailureDomain: DefaultFailureDomain, Root: DefaultRoot}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return p, fmt.Errorf("%w: profile %s: %q is not key=value", ErrInvalid, name, a)
		}
		var err error
		switch k {
		case "k":
			p.K, err = strconv.Atoi(v)
		case "m":
			p.M, err = strconv.Atoi(v)
		case "stripe_unit":
			p.StripeUnit, err = parseSize(v)
		case "crush-failure-domain":
			p.FailureDomain = v
		case "crush-device-class":
			p.DeviceClass = v
		case "crush-root":
			p.Root = v
		case "plugin":
			if v != "jerasure" && v != "isa" && v != Plugin {
				err = fmt.Errorf("plugin %q: only Reed-Solomon Vandermonde (jerasure/isa reed_sol_van) is provided", v)
			}
		case "technique":
			if v != Plugin {
				err = fmt.Errorf("technique %q: only %s", v, Plugin)
			}
		default:
			err = fmt.Errorf("unknown key %q (k, m, stripe_unit, crush-failure-domain, crush-device-class, crush-root, plugin, technique)", k)
		}
		if err != nil {
			return p, fmt.Errorf("%w: profile %s: %v", ErrInvalid, name, err)
		}
	}
	return p, p.Validate()
}

func parseSize(v string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(v, "K"), strings.HasSuffix(v, "k"):
		mult, v = 1<<10, v[:len(v)-1]
	case strings.HasSuffix(v, "M"):
		mult, v = 1<<20, v[:len(v)-1]
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", v)
	}
	return n * mult, nil
}

// Validate checks k ≥ 2, m ≥ 1, k+m ≤ 256 and a stripe unit of a whole
// number of 4 KiB blocks up to 16 MiB.
func (p Profile) Validate() error {
	switch {
	case p.K < 2:
		return fmt.Errorf("%w: profile %s: k=%d, must be at least 2", ErrInvalid, p.Name, p.K)
	case p.M < 1:
		return fmt.Errorf("%w: profile %s: m=%d, must be at least 1", ErrInvalid, p.Name, p.M)
	case p.K+p.M > maxShards:
		return fmt.Errorf("%w: profile %s: k+m=%d, at most %d", ErrInvalid, p.Name, p.K+p.M, maxShards)
	case p.StripeUnit <= 0 || p.StripeUnit%4096 != 0 || p.StripeUnit > 16<<20:
		return fmt.Errorf("%w: profile %s: stripe_unit=%d, must be a multiple of 4096 up to 16M", ErrInvalid, p.Name, p.StripeUnit)
	}
	return nil
}

// Args is the profile as `key=value` arguments, sorted (`erasure-code-profile get`).
func (p Profile) Args() []string {
	out := []string{"k=" + strconv.Itoa(p.K), "m=" + strconv.Itoa(p.M), "stripe_unit=" + strconv.Itoa(p.StripeUnit),
		"crush-failure-domain=" + p.FailureDomain, "crush-root=" + p.Root, "plugin=jerasure", "technique=" + Plugin}
	if p.DeviceClass != "" {
		out = append(out, "crush-device-class="+p.DeviceClass)
	}
	sort.Strings(out)
	return out
}

// StripeWidth is k × stripe_unit: the data bytes of one stripe.
func (p Profile) StripeWidth() int { return p.K * p.StripeUnit }

// ShardSize is the bytes each shard holds for an object of size bytes
// (whole stripes: the last one padded).
func (p Profile) ShardSize(size int64) int64 {
	w := int64(p.StripeWidth())
	return (size + w - 1) / w * int64(p.StripeUnit)
}

// Codec encodes and decodes objects of one profile; safe for concurrent
// use.
type Codec struct {
	p   Profile
	enc reedsolomon.Encoder
}

// NewCodec returns a codec for p. opts are passed to reedsolomon.New
// (e.g. reedsolomon.WithMaxGoroutines(1) to stay on one core).
func NewCodec(p Profile, opts ...reedsolomon.Option) (*Codec, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	enc, err := reedsolomon.New(p.K, p.M, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return &Codec{p: p, enc: enc}, nil
}

// Profile is the codec's profile.
func (c *Codec) Profile() Profile { return c.p }

// Split lays data out over k data shards (padding the last stripe with
// zeros) and returns k+m shards of ShardSize(len(data)) bytes each, the m
// coding shards still zero. It copies data once.
func (c *Codec) Split(data []byte) [][]byte {
	return c.split(data, make([]byte, c.EncodedLen(len(data))))
}

// EncodedLen is the bytes the k+m shards of an object of size bytes
// take together: the buffer EncodeInto needs.
func (c *Codec) EncodedLen(size int) int {
	return int(c.p.ShardSize(int64(size))) * (c.p.K + c.p.M)
}

// split is Split into buf (EncodedLen(len(data)) bytes, any contents).
func (c *Codec) split(data, buf []byte) [][]byte {
	u, k := c.p.StripeUnit, c.p.K
	n := int(c.p.ShardSize(int64(len(data))))
	shards := make([][]byte, k+c.p.M)
	for i := range shards {
		shards[i] = buf[i*n : (i+1)*n : (i+1)*n]
	}
	if n > 0 { // the last stripe's data chunks past the data read as zeros
		for j := range k {
			clear(shards[j][n-u:])
		}
	}
	for off, s := 0, 0; off < len(data); s++ {
		for j := 0; j < k && off < len(data); j++ {
			off += copy(shards[j][s*u:(s+1)*u], data[off:])
		}
	}
	return shards
}

// Encode returns the k+m shards of data: Split, then the coding shards.
func (c *Codec) Encode(data []byte) ([][]byte, error) {
	return c.EncodeInto(data, make([]byte, c.EncodedLen(len(data))))
}

// EncodeInto is Encode with the shards in buf, which must hold
// EncodedLen(len(data)) bytes; its contents do not matter (a pooled
// buffer: nothing of them survives), and the shards alias it.
func (c *Codec) EncodeInto(data, buf []byte) ([][]byte, error) {
	if len(buf) != c.EncodedLen(len(data)) {
		return nil, fmt.Errorf("ec: encode: a buffer of %d bytes for shards of %d", len(buf), c.EncodedLen(len(data)))
	}
	shards := c.split(data, buf)
	if len(data) == 0 {
		return shards, nil // an empty object has empty shards
	}
	if err := c.enc.Encode(shards); err != nil {
		return nil, fmt.Errorf("ec: encode: %w", err)
	}
	return shards, nil
}

// Join writes the object of size bytes from its data shards (which must
// all be present) to a new slice.
func (c *Codec) Join(shards [][]byte, size int64) ([]byte, error) {
	u, k := c.p.StripeUnit, c.p.K
	for j := range k {
		if int64(len(shards[j])) < c.p.ShardSize(size) {
			return nil, fmt.Errorf("%w: data shard %d holds %d bytes, the object needs %d", ErrTooFewShards, j, len(shards[j]), c.p.ShardSize(size))
		}
	}
	out := make([]byte, size)
	for off, s := 0, 0; off < len(out); s++ {
		for j := 0; j < k && off < len(out); j++ {
			off += copy(out[off:], shards[j][s*u:(s+1)*u])
		}
	}
	return out, nil
}

// Decode rebuilds the object of size bytes from any k of its shards
// (missing ones nil or empty; data shards are reconstructed in place). The
// caller knows which shards exist: an empty object's shards are all empty.
func (c *Codec) Decode(shards [][]byte, size int64) ([]byte, error) {
	if len(shards) != c.p.K+c.p.M {
		return nil, fmt.Errorf("%w: %d shards, want %d", ErrInvalid, len(shards), c.p.K+c.p.M)
	}
	if size == 0 {
		return []byte{}, nil
	}
	have := 0
	for _, s := range shards {
		if len(s) > 0 {
			have++
		}
	}
	if have < c.p.K {
		return nil, fmt.Errorf("%w: %d of %d shards present, need %d", ErrTooFewShards, have, len(shards), c.p.K)
	}
	if have < len(shards) {
		if err := c.enc.ReconstructData(shards); err != nil {
			return nil, fmt.Errorf("ec: reconstruct: %w", err)
		}
	}
	return c.Join(shards, size)
}

// Verify reports whether the coding shards match the data shards.
func (c *Codec) Verify(shards [][]byte) (bool, error) { return c.enc.Verify(shards) }

// Reconstruct rebuilds every missing shard (nil or empty) in place from
// any k present ones, which must all have the same length; it returns
// ErrTooFewShards when fewer than k are present.
func (c *Codec) Reconstruct(shards [][]byte) error {
	return c.reconstruct(shards, false)
}

// ReconstructData rebuilds the missing data shards only (what a read
// needs).
func (c *Codec) ReconstructData(shards [][]byte) error {
	return c.reconstruct(shards, true)
}

func (c *Codec) reconstruct(shards [][]byte, dataOnly bool) error {
	if len(shards) != c.p.K+c.p.M {
		return fmt.Errorf("%w: %d shards, want %d", ErrInvalid, len(shards), c.p.K+c.p.M)
	}
	have, n := 0, -1
	for i, s := range shards {
		if len(s) == 0 {
			shards[i] = nil
			continue
		}
		if n >= 0 && len(s) != n {
			return fmt.Errorf("%w: shard %d holds %d bytes, others %d", ErrInvalid, i, len(s), n)
		}
		n = len(s)
		have++
	}
	if have < c.p.K {
		return fmt.Errorf("%w: %d of %d shards present, need %d", ErrTooFewShards, have, len(shards), c.p.K)
	}
	if have == len(shards) {
		return nil
	}
	var err error
	if dataOnly {
		err = c.enc.ReconstructData(shards)
	} else {
		err = c.enc.Reconstruct(shards)
	}
	if err != nil {
		return fmt.Errorf("ec: reconstruct: %w", err)
	}
	return nil
}
