package rgw

import (
	"fmt"
	"sort"
	"strings"

	"github.com/shoal-project/shoal/internal/crc32c"
)

// IndexLayout is how a bucket's index is split into shard objects: key
// ranges (sorted, the first starting at ""), each split by a hash of the
// key into a few sub-shards. A listing page reads the sub-shards of the
// range(s) its keys fall in — its cost is set by the sub-shards per
// range, not by the bucket's total shard count — and sequential keys
// still spread over a range's sub-shards. A growing range is split in two
// online (SplitRange): writers update both the old range and the new one
// while the entries are copied, so no write waits.
//
// The layout is pure data: its methods do no I/O (the split protocol's
// steps are in reshard.go).
type IndexLayout struct {
	Gen    int          `json:"gen"`     // bumped by every change
	NextID int          `json:"next_id"` // the next range id to allocate
	Ranges []IndexRange `json:"ranges"`
	// Retired are ranges replaced by a finished split whose shard objects
	// are still to be removed (after every gateway has stopped using them).
	Retired []IndexRange `json:"retired,omitempty"`
}

// IndexRange is one key range of the index: keys in [Start, next range's
// Start), spread over Shards objects by crc32c.
type IndexRange struct {
	Start  string      `json:"start"`
	ID     int         `json:"id"` // names the shard objects
	Shards int         `json:"shards"`
	Split  *RangeSplit `json:"split,omitempty"` // a split in progress
}

// RangeSplit is a split in progress: the range's keys below At go to Lo,
// the others to Hi; until it finishes, both the range and its halves are
// written and only the range is read.
type RangeSplit struct {
	At string     `json:"at"`
	Lo IndexRange `json:"lo"`
	Hi IndexRange `json:"hi"`
}

// DefaultRangeShards is the sub-shard count of a range
// (rgw_bucket_index_range_shards): the fan-out of one listing page, and
// how many shard objects (so PGs, so primaries) share the index writes of
// keys that fall in one range, such as sequential keys. Two, because the
// gateway coalesces each shard's updates (indexBatcher): a shard's
// throughput grows with its load, as a group commit's does, while every
// further sub-shard splits the same updates into more, smaller replicated
// writes. 64 KiB PUTs from 16 clients into one range (the load
// generator's keys share a prefix) sent 1.2 index calls per PUT with
// 8 sub-shards and 0.35 with 2, and the whole cluster's CPU per PUT fell
// by 13-22% from 8 to 2 (docs/PERFORMANCE.md,
// "S3 gateway: sub-shards per index range"). Raise it for a bucket whose
// sequential-key writes alone would saturate one OSD.
const DefaultRangeShards = 2

// newIndexLayout spreads total shards as ranges of at most perRange
// sub-shards; the first ranges' bounds split the printable first byte
// evenly (a bucket's real key distribution is learnt by later splits).
func newIndexLayout(total, perRange int) *IndexLayout {
	total, perRange = max(1, total), max(1, perRange)
	per := min(total, perRange)
	n := min((total+per-1)/per, 94)
	l := &IndexLayout{Gen: 1}
	for i := range n {
		start := ""
		if i > 0 {
			start = string(rune(0x21 + i*94/n))
		}
		l.Ranges = append(l.Ranges, IndexRange{Start: start, ID: l.NextID, Shards: per})
		l.NextID++
	}
	return l
}

// TotalShards counts the shard objects the layout reads.
func (l *IndexLayout) TotalShards() int {
	n := 0
	for _, r := range l.Ranges {
		n += r.Shards
	}
	return n
}

// rangeOf is the index of the range holding key.
func (l *IndexLayout) rangeOf(key string) int {
	return sort.Search(len(l.Ranges), func(i int) bool { return l.Ranges[i].Start > key }) - 1
}

// end is range i's exclusive upper bound ("" for the last range: none).
func (l *IndexLayout) end(i int) string {
	if i+1 < len(l.Ranges) {
		return l.Ranges[i+1].Start
	}
	return ""
}

func (r *IndexRange) oid(bucketID string, n int) string {
	return fmt.Sprintf(".dir.%s.%d.%d", bucketID, r.ID, n)
}

func (r *IndexRange) shardFor(bucketID, key string) string {
	return r.oid(bucketID, int(crc32c.Checksum([]byte(key))%uint32(r.Shards)))
}

// oids lists range r's shard objects.
func (r *IndexRange) oids(bucketID string) []string {
	out := make([]string, r.Shards)
	for n := range r.Shards {
		out[n] = r.oid(bucketID, n)
	}
	return out
}

// writeShards are the shard objects an update of key goes to: its
// range's, and during a split also the half's that will hold it.
func (l *IndexLayout) writeShards(bucketID, key string) []string {
	r := &l.Ranges[l.rangeOf(key)]
	out := []string{r.shardFor(bucketID, key)}
	if s := r.Split; s != nil {
		half := &s.Lo
		if key >= s.At {
			half = &s.Hi
		}
		out = append(out, half.shardFor(bucketID, key))
	}
	return out
}

// allShards lists every shard object of the layout, split targets and
// retired ranges too.
func (l *IndexLayout) allShards(bucketID string) []string {
	var out []string
	for i := range l.Retired {
		out = append(out, l.Retired[i].oids(bucketID)...)
	}
	for i := range l.Ranges {
		r := &l.Ranges[i]
		out = append(out, r.oids(bucketID)...)
		if r.Split != nil {
			out = append(out, r.Split.Lo.oids(bucketID)...)
			out = append(out, r.Split.Hi.oids(bucketID)...)
		}
	}
	return out
}

// clone copies the layout deeply.
func (l *IndexLayout) clone() *IndexLayout {
	c := *l
	c.Retired = append([]IndexRange(nil), l.Retired...)
	c.Ranges = make([]IndexRange, len(l.Ranges))
	for i, r := range l.Ranges {
		c.Ranges[i] = r
		if r.Split != nil {
			s := *r.Split
			c.Ranges[i].Split = &s
		}
	}
	return &c
}

// beginSplit returns the layout with range i splitting at key at (which
// must lie strictly inside the range) into two ranges of the same
// sub-shard count.
func (l *IndexLayout) beginSplit(i int, at string) (*IndexLayout, error) {
	if i < 0 || i >= len(l.Ranges) {
		return nil, fmt.Errorf("index layout: no range %d", i)
	}
	r := l.Ranges[i]
	if j := l.splitting(); j >= 0 {
		return nil, fmt.Errorf("index layout: range %d is already splitting at %q", j, l.Ranges[j].Split.At)
	}
	if at <= r.Start || (l.end(i) != "" && at >= l.end(i)) {
		return nil, fmt.Errorf("index layout: split key %q is not inside range %d [%q, %q)", at, i, r.Start, l.end(i))
	}
	c := l.clone()
	c.Gen++
	c.Ranges[i].Split = &RangeSplit{At: at,
		Lo: IndexRange{Start: r.Start, ID: c.NextID, Shards: r.Shards},
		Hi: IndexRange{Start: at, ID: c.NextID + 1, Shards: r.Shards}}
	c.NextID += 2
	return c, nil
}

// splitting is the index of the range with a split in progress, or -1.
func (l *IndexLayout) splitting() int {
	for i := range l.Ranges {
		if l.Ranges[i].Split != nil {
			return i
		}
	}
	return -1
}

// finishSplit returns the layout with range i replaced by its halves and
// retired.
func (l *IndexLayout) finishSplit(i int) (*IndexLayout, error) {
	if i < 0 || i >= len(l.Ranges) || l.Ranges[i].Split == nil {
		return nil, fmt.Errorf("index layout: range %d is not splitting", i)
	}
	c := l.clone()
	c.Gen++
	old := c.Ranges[i]
	s := old.Split
	old.Split = nil
	c.Retired = append(c.Retired, old)
	c.Ranges = append(c.Ranges[:i], append([]IndexRange{s.Lo, s.Hi}, c.Ranges[i+1:]...)...)
	return c, nil
}

// listRanges returns the ranges a listing after `after` with prefix
// reads, in order: from the one holding max(after, prefix) up to the last
// that can hold a key with the prefix.
func (l *IndexLayout) listRanges(after, prefix string) []int {
	from := max(after, prefix)
	var out []int
	for i := l.rangeOf(from); i < len(l.Ranges); i++ {
		if i > 0 && prefix != "" && l.Ranges[i].Start > prefix && !strings.HasPrefix(l.Ranges[i].Start, prefix) {
			break
		}
		out = append(out, i)
	}
	return out
}
