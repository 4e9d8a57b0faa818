package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"
)

// ScaleTarget is a pool that can also stat and list (the client
// library's pool handle).
type ScaleTarget interface {
	Target
	// StatSize returns the object's size in bytes (an error for a
	// missing object).
	StatSize(ctx context.Context, oid string) (uint64, error)
	// List calls fn with each object's name until fn returns false.
	List(ctx context.Context, fn func(name string) bool) error
}

// ScaleOptions configure Scale. Zero fields take the defaults in
// brackets.
type ScaleOptions struct {
	// Levels are the object counts to measure at, ascending [10,000,
	// 100,000, 1,000,000].
	Levels []int
	// ObjectSize is each object's size in bytes [4096].
	ObjectSize int
	// Concurrency is the ops kept in flight [64].
	Concurrency int
	// Writes is how many new objects are written, and timed, at each
	// level (the pool then holds Level+Writes; with Settle twice as many
	// are written: one window before settling, one after) [20,000].
	Writes int
	// HotSet is how many objects, drawn at random from all those
	// written, the read phase stats and reads [1,000]: it first touches
	// each once (timed on its own: from a store larger than memory, these
	// come from the device), then times Reads stat+read pairs of the set
	// [20,000].
	HotSet, Reads int
	// List is how many names the listing phase lists, from the start
	// [10,000]: once, timed on its own (from a store larger than memory,
	// the first pass reads from the device), then ListRounds times more,
	// timed together [100].
	List, ListRounds int
	// Start is how many objects the pool holds already, PREFIX_object0
	// to PREFIX_object(Start-1) as an earlier run of the same prefix and
	// object size wrote them, its timed writes included: filling and the
	// timed writes go on after them (too low a count makes them
	// overwrites), and a level at or below Start is measured as it is
	// (the hot set is drawn from all of them) [0].
	Start int
	// Prefix names the objects: PREFIX_objectN [scale].
	Prefix string
	// Out, if set, gets a line per phase.
	Out io.Writer
	// Settle, if set, is called before each timed phase but the first
	// write window (timed right after the fill, as without Settle) and
	// should return once the cluster's stores have caught up with the
	// writes before it (client.Conn.SettleMetaStores): each later window
	// then measures the level, not the compactions the writes before it
	// left behind.
	Settle func(ctx context.Context) error
}

// ScaleLevel is what Scale measured at one level (Objects, the count the
// pool held when the timing began): new-object writes, stat+read pairs
// of the hot set and names listed, each per second, and the written
// bytes per second.
type ScaleLevel struct {
	Objects  int     `json:"objects"`
	WriteOps float64 `json:"write_ops_per_sec"`
	// WriteOpsAfterFill is, with Settle, the new-object writes per second
	// of a window timed right after the fill, before settling (WriteOps
	// is then timed after it).
	WriteOpsAfterFill float64 `json:"write_ops_after_fill_per_sec,omitempty"`
	StatReads         float64 `json:"stat_read_pairs_per_sec"`
	// FirstStatReads is the stat+read pairs per second of the hot set's
	// first touch, one per object, before StatReads is timed.
	FirstStatReads float64 `json:"first_stat_read_pairs_per_sec"`
	ListNames      float64 `json:"list_names_per_sec"`
	// FirstListNames is the names per second of the first listing, before
	// ListNames is timed over the rounds after it.
	FirstListNames float64 `json:"first_list_names_per_sec"`
	WriteBytes     float64 `json:"write_bytes_per_sec"`
}

func (o *ScaleOptions) defaults() {
	if len(o.Levels) == 0 {
		o.Levels = []int{10_000, 100_000, 1_000_000}
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ObjectSize, 4096)
	def(&o.Concurrency, 64)
	def(&o.Writes, 20_000)
	def(&o.HotSet, 1_000)
	def(&o.Reads, 20_000)
	def(&o.List, 10_000)
	def(&o.ListRounds, 100)
	if o.Prefix == "" {
		o.Prefix = "scale"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
}

// Scale measures whether a pool slows down as it fills (the guides'
// concern: a cluster of 100M objects must not slow down; one saw Ceph's
// old FileStore read 50 % slower at 100 M objects). For each level it
// fills the pool with new objects up to it (untimed), then times Writes
// more new objects, stat+read pairs of a random hot set drawn from every
// object written so far (every read verified), and a listing of the
// first List names. Objects are PREFIX_objectN with content derived from
// N, as the write benchmark's; Scale removes none of them (run it on a
// pool of its own, and remove the pool after).
func Scale(ctx context.Context, t ScaleTarget, o ScaleOptions) ([]ScaleLevel, error) {
	o.defaults()
	for i := 1; i < len(o.Levels); i++ {
		if o.Levels[i] <= o.Levels[i-1] {
			return nil, fmt.Errorf("scale: levels %v: want ascending", o.Levels)
		}
	}
	if o.Start < 0 {
		return nil, fmt.Errorf("scale: start %d: want 0 or more", o.Start)
	}
	written := o.Start
	var out []ScaleLevel
	var err error
	for _, level := range o.Levels {
		if level > written {
			start := time.Now()
			if err := scaleWrite(ctx, t, o, written, level); err != nil {
				return out, err
			}
			fmt.Fprintf(o.Out, "filled to %d objects in %s\n", level, time.Since(start).Round(time.Second))
			written = level
		}
		r := ScaleLevel{Objects: written}
		if o.Settle != nil {
			if r.WriteOpsAfterFill, err = scaleTimedWrite(ctx, t, o, written); err != nil {
				return out, err
			}
			written += o.Writes
			if err := o.settle(ctx); err != nil {
				return out, err
			}
		}
		if r.WriteOps, err = scaleTimedWrite(ctx, t, o, written); err != nil {
			return out, err
		}
		written += o.Writes
		r.WriteBytes = r.WriteOps * float64(o.ObjectSize)
		if err := o.settle(ctx); err != nil {
			return out, err
		}
		if r.FirstStatReads, r.StatReads, err = scaleRead(ctx, t, o, written); err != nil {
			return out, err
		}
		if err := o.settle(ctx); err != nil {
			return out, err
		}
		if r.FirstListNames, r.ListNames, err = scaleList(ctx, t, o); err != nil {
			return out, err
		}
		after := ""
		if o.Settle != nil {
			after = fmt.Sprintf(" (%.0f right after the fill)", r.WriteOpsAfterFill)
		}
		fmt.Fprintf(o.Out, "at %d objects: %.0f writes/s%s, %.0f stat+reads/s (%.0f on first touch), %.0f names listed/s (%.0f on the first pass)\n",
			r.Objects, r.WriteOps, after, r.StatReads, r.FirstStatReads, r.ListNames, r.FirstListNames)
		out = append(out, r)
	}
	return out, nil
}

// scaleTimedWrite times o.Writes new objects from the written-th on:
// writes per second.
func scaleTimedWrite(ctx context.Context, t ScaleTarget, o ScaleOptions, written int) (float64, error) {
	start := time.Now()
	if err := scaleWrite(ctx, t, o, written, written+o.Writes); err != nil {
		return 0, err
	}
	return float64(o.Writes) / time.Since(start).Seconds(), nil
}

// settle calls o.Settle if set.
func (o *ScaleOptions) settle(ctx context.Context) error {
	if o.Settle == nil {
		return nil
	}
	if err := o.Settle(ctx); err != nil {
		return fmt.Errorf("scale: settle: %w", err)
	}
	return nil
}

// scaleWrite writes objects [from, to) with o.Concurrency in flight.
func scaleWrite(ctx context.Context, t ScaleTarget, o ScaleOptions, from, to int) error {
	var next atomic.Int64
	next.Store(int64(from))
	pseed := prefixSeed(o.Prefix)
	return parallel(ctx, o.Concurrency, func(ctx context.Context) error {
		buf := make([]byte, o.ObjectSize)
		for {
			i := int(next.Add(1) - 1)
			if i >= to {
				return nil
			}
			name := ObjectName(o.Prefix, i)
			newContent(pseed, i, o.ObjectSize).fill(buf)
			if err := t.WriteFull(ctx, name, buf); err != nil {
				return fmt.Errorf("scale: write %s: %w", name, err)
			}
		}
	})
}

// scaleRead draws a hot set of o.HotSet objects from the first n and
// stat+reads each once, then o.Reads pairs of the set, verifying each:
// the pairs per second of the first pass and of the second.
func scaleRead(ctx context.Context, t ScaleTarget, o ScaleOptions, n int) (first, hot float64, err error) {
	rng := rand.New(rand.NewSource(int64(n)))
	set := make([]int, min(o.HotSet, n))
	for i := range set {
		set[i] = rng.Intn(n)
	}
	pseed := prefixSeed(o.Prefix)
	timed := func(reads int, pick func(i int) int) (float64, error) {
		var next atomic.Int64
		start := time.Now()
		err := parallel(ctx, o.Concurrency, func(ctx context.Context) error {
			for {
				i := int(next.Add(1) - 1)
				if i >= reads {
					return nil
				}
				idx := pick(i)
				name := ObjectName(o.Prefix, idx)
				size, err := t.StatSize(ctx, name)
				if err != nil {
					return fmt.Errorf("scale: stat %s: %w", name, err)
				}
				data, err := t.Read(ctx, name, 0, 0)
				if err != nil {
					return fmt.Errorf("scale: read %s: %w", name, err)
				}
				if size != uint64(o.ObjectSize) || len(data) != o.ObjectSize || newContent(pseed, idx, o.ObjectSize).check(data) >= 0 {
					return fmt.Errorf("scale: %s: %d bytes (stat %d), not what was written", name, len(data), size)
				}
			}
		})
		return float64(reads) / time.Since(start).Seconds(), err
	}
	if first, err = timed(len(set), func(i int) int { return set[i] }); err != nil {
		return 0, 0, err
	}
	hot, err = timed(o.Reads, func(i int) int { return set[(i*7919)%len(set)] })
	return first, hot, err
}

// scaleList lists the first o.List names once, then o.ListRounds times
// more: the names per second of the first pass and of the rounds.
func scaleList(ctx context.Context, t ScaleTarget, o ScaleOptions) (first, rounds float64, err error) {
	pass := func() (int, error) {
		n := 0
		if err := t.List(ctx, func(string) bool { n++; return n < o.List }); err != nil {
			return n, fmt.Errorf("scale: list: %w", err)
		}
		return n, nil
	}
	start := time.Now()
	n, err := pass()
	if err != nil {
		return 0, 0, err
	}
	first = float64(n) / time.Since(start).Seconds()
	start, n = time.Now(), 0
	for range o.ListRounds {
		m, err := pass()
		if err != nil {
			return first, 0, err
		}
		n += m
	}
	return first, float64(n) / time.Since(start).Seconds(), nil
}

// parallel runs n copies of fn until all return; the first error cancels
// the others' context and is returned.
func parallel(ctx context.Context, n int, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first
}
