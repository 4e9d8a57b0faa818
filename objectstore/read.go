package objectstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shoal-project/shoal/internal/bufpool"
	crc "github.com/shoal-project/shoal/internal/crc32c"
)

func (s *BlockStore) readable() error {
	select {
	case <-s.quit:
		return fmt.Errorf("objectstore: %w", ErrClosed)
	default:
		return nil
	}
}

// Read returns bytes [off, off+length) of the object, clipped to its size
// (length 0 reads to the end). Every block read from the device is
// checked against its crc32c; a mismatch returns ErrCorrupt, never the
// bad bytes. Blocks read before come from the data cache (checked when
// they were read).
func (s *BlockStore) Read(c Coll, oid string, off, length uint64) ([]byte, error) {
	return s.read(c, oid, off, length, s.dcache)
}

// ReadDevice is Read from the device alone, never from the data cache:
// deep scrub checks what the device holds.
func (s *BlockStore) ReadDevice(c Coll, oid string, off, length uint64) ([]byte, error) {
	return s.read(c, oid, off, length, nil)
}

func noRelease() {}

// readWindow is the onode of a read and its range [off, end) (clipped to the
// object), or ok false for a read past the end.
func (s *BlockStore) readWindow(c Coll, oid string, off, length uint64) (o *onode, end uint64, ok bool, err error) {
	if err := s.readable(); err != nil {
		return nil, 0, false, err
	}
	if o, err = s.cachedOnode(c, oid); err != nil {
		return nil, 0, false, fmt.Errorf("objectstore: read %w", err)
	}
	if off >= o.Size {
		return o, off, false, nil
	}
	end = o.Size
	if length != 0 && length < end-off {
		end = off + length
	}
	if o.isInline() && crc.Checksum(o.Inline) != o.InlineCRC {
		return nil, 0, false, fmt.Errorf("objectstore: read %s/%s: %w: inline data", c, oid, ErrCorrupt)
	}
	return o, end, true, nil
}

// readDevice reads logical blocks [from, to) of extent x from the device
// into dst and checks each against its stored crc32c.
func (s *BlockStore) readDevice(c Coll, oid string, x extent, from, to uint64, dst []byte) error {
	phys := x.Phys + (from - x.Logical)
	if _, err := s.dev.ReadAt(dst, int64(phys*BlockSize)); err != nil {
		return fmt.Errorf("objectstore: read %s/%s: device blocks %d+%d: %w", c, oid, phys, to-from, err)
	}
	for lb := from; lb < to; lb++ {
		blk := dst[(lb-from)*BlockSize : (lb-from+1)*BlockSize]
		if got, want := crc.Checksum(blk), x.CRCs[lb-x.Logical]; got != want {
			return fmt.Errorf("objectstore: read %s/%s: %w: logical block %d (device block %d): crc32c %08x, stored %08x",
				c, oid, ErrCorrupt, lb, x.Phys+(lb-x.Logical), got, want)
		}
	}
	return nil
}

func (s *BlockStore) read(c Coll, oid string, off, length uint64, cache *dataCache) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, end, ok, err := s.readWindow(c, oid, off, length)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []byte{}, nil
	}
	if o.isInline() {
		return append([]byte(nil), o.Inline[off:end]...), nil
	}
	// Read whole blocks straight into a block-aligned buffer and return
	// the requested window of it: one copy from the device, none after.
	b0, b1 := off/BlockSize, (end+BlockSize-1)/BlockSize
	buf := make([]byte, (b1-b0)*BlockSize) // holes read as zeros
	i, _ := o.find(b0)
	for ; i < len(o.Extents) && o.Extents[i].Logical < b1; i++ {
		x := o.Extents[i]
		from, to := max(x.Logical, b0), min(x.end(), b1)
		dst := buf[(from-b0)*BlockSize : (to-b0)*BlockSize]
		phys := x.Phys + (from - x.Logical)
		if cache.get(phys, to-from, dst) {
			continue
		}
		if err := s.readDevice(c, oid, x, from, to, dst); err != nil {
			return nil, err
		}
		cache.fill(phys, dst)
	}
	return buf[off-b0*BlockSize : end-b0*BlockSize], nil
}

// ReadVec is Read as parts whose concatenation is the data, each with
// its crc32c, for a caller that sends them on (an OSD's reply to a
// client read). Blocks in the data cache are referenced where they lie,
// not copied; blocks read from the device go into pooled buffers (and
// the cache); holes are shared zeros. The parts must not be modified,
// and release (called exactly once, when the caller is done with them)
// gives them back: until then the cache neither rewrites nor reuses
// them. Each part's checksum comes from the stored checksums of its
// whole blocks (see windowSum), not from a pass over it.
func (s *BlockStore) ReadVec(c Coll, oid string, off, length uint64) ([][]byte, []crc.Sum, func(), error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, end, ok, err := s.readWindow(c, oid, off, length)
	if err != nil || !ok {
		return nil, nil, noRelease, err
	}
	if o.isInline() {
		b := append([]byte(nil), o.Inline[off:end]...)
		return [][]byte{b}, []crc.Sum{{CRC: crc.Checksum(b), Valid: true}}, noRelease, nil
	}
	b0, b1 := off/BlockSize, (end+BlockSize-1)/BlockSize
	var v vecRead
	next := b0
	i, _ := o.find(b0)
	for ; i < len(o.Extents) && o.Extents[i].Logical < b1; i++ {
		x := o.Extents[i]
		from, to := max(x.Logical, b0), min(x.end(), b1)
		v.zeros(next, from)
		next = to
		phys := x.Phys + (from - x.Logical)
		n := len(v.parts)
		if v.parts, v.pins, ok = s.dcache.getRef(phys, to-from, v.parts, v.pins); ok {
			for lb := from; n < len(v.parts); n++ {
				v.starts = append(v.starts, lb)
				lb += uint64(len(v.parts[n])) / BlockSize
			}
			continue
		}
		buf := bufpool.Get(int((to - from) * BlockSize))
		v.bufs = append(v.bufs, buf)
		if err := s.readDevice(c, oid, x, from, to, buf); err != nil {
			v.release()
			return nil, nil, nil, err
		}
		s.dcache.fill(phys, buf)
		v.parts, v.starts = append(v.parts, buf), append(v.starts, from)
	}
	v.zeros(next, b1)
	// each part's window of the object, its checksum from the stored
	// ones, then the part cut to that window
	sums := make([]crc.Sum, len(v.parts))
	for j, p := range v.parts {
		pb := v.starts[j] * BlockSize
		lo, hi := max(off, pb), min(end, pb+uint64(len(p)))
		sums[j] = crc.Sum{CRC: windowSum(o, p, v.starts[j], lo, hi), Valid: true}
		v.parts[j] = p[lo-pb : hi-pb : hi-pb] // no capacity into shared zeros or the cache
	}
	return v.parts, sums, v.release, nil
}

// vecRead is a ReadVec in progress: its parts (whole blocks; starts holds
// each one's first logical block), the cache units it pinned and the
// pooled buffers it filled.
type vecRead struct {
	parts  [][]byte
	starts []uint64
	pins   []*cacheUnit
	bufs   [][]byte
}

// zeroUnit backs the parts of holes and the zeros written ahead of the
// metadata log (walFile); nothing writes to it.
var zeroUnit = make([]byte, unitBytes)

// zeros adds parts of zeros for logical blocks [from, to).
func (v *vecRead) zeros(from, to uint64) {
	for from < to {
		n := min(to-from, unitBlocks)
		v.parts, v.starts = append(v.parts, zeroUnit[:n*BlockSize:n*BlockSize]), append(v.starts, from)
		from += n
	}
}

func (v *vecRead) release() {
	unpin(v.pins)
	for _, b := range v.bufs {
		bufpool.Put(b)
	}
}

var (
	blockCombiner = crc.NewCombiner(BlockSize)
	zeroBlockCRC  = crc.Checksum(make([]byte, BlockSize))
)

// windowSum is the crc32c of bytes [off, end) of o, held in buf from
// block b0 on: each whole block's checksum is the one stored for it (a
// block read from the device was just checked against it; one from the
// data cache was when it was cached; a hole is zeros), combined at a few
// nanoseconds per block, and only a partial block at either end is
// read. A reader that passes this on as its reply's checksum therefore
// sends whole blocks that the receiver checks against what was stored
// (a partial end block's checksum is of the bytes in memory, as any
// checksum computed at send time is).
func windowSum(o *onode, buf []byte, b0, off, end uint64) uint32 {
	var sum uint32
	i, _ := o.find(b0)
	for lb := b0; lb*BlockSize < end; lb++ {
		lo, hi := max(off, lb*BlockSize), min(end, (lb+1)*BlockSize)
		if hi-lo < BlockSize {
			sum = crc.Update(sum, buf[lo-b0*BlockSize:hi-b0*BlockSize])
			continue
		}
		for i < len(o.Extents) && o.Extents[i].end() <= lb {
			i++
		}
		if i < len(o.Extents) && o.Extents[i].Logical <= lb {
			sum = blockCombiner.Append(sum, o.Extents[i].CRCs[lb-o.Extents[i].Logical])
		} else {
			sum = blockCombiner.Append(sum, zeroBlockCRC)
		}
	}
	return sum
}

func (s *BlockStore) lookup(c Coll, oid string) (*onode, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.readable(); err != nil {
		return nil, err
	}
	return s.cachedOnode(c, oid)
}

// cachedOnode returns the committed onode, from the cache when it can;
// the caller holds s.mu shared and must not modify the result.
func (s *BlockStore) cachedOnode(c Coll, oid string) (*onode, error) {
	key := objKey(c, oid)
	if o, ok := s.onodes.get(key); ok {
		return o, nil
	}
	for {
		o, err := s.readOnode(s.db, c, oid)
		ch, lost := s.deferring(key)
		if lost {
			return nil, fmt.Errorf("%s/%s: %w: the data device write of its last change failed (the store stopped; opening it again writes the data)", c, oid, ErrClosed)
		}
		if ch != nil {
			// What was read may name blocks still being written
			// (deferData): read again once they are.
			s.deferWaits.Add(1)
			<-ch
			continue
		}
		if err != nil {
			return nil, err
		}
		s.onodes.put(key, o)
		return o, nil
	}
}

// Stat returns the object's size.
func (s *BlockStore) Stat(c Coll, oid string) (Stat, error) {
	o, err := s.lookup(c, oid)
	if err != nil {
		return Stat{}, fmt.Errorf("objectstore: stat %w", err)
	}
	return Stat{Size: o.Size}, nil
}

// GetAttr returns one extended attribute (ErrNotFound if absent).
func (s *BlockStore) GetAttr(c Coll, oid, name string) ([]byte, error) {
	o, err := s.lookup(c, oid)
	if err != nil {
		return nil, fmt.Errorf("objectstore: getattr %w", err)
	}
	v, ok := o.Attrs[name]
	if !ok {
		return nil, fmt.Errorf("objectstore: getattr %s/%s %q: %w", c, oid, name, ErrNotFound)
	}
	return append([]byte(nil), v...), nil
}

// Attrs returns every extended attribute.
func (s *BlockStore) Attrs(c Coll, oid string) (map[string][]byte, error) {
	o, err := s.lookup(c, oid)
	if err != nil {
		return nil, fmt.Errorf("objectstore: attrs %w", err)
	}
	out := make(map[string][]byte, len(o.Attrs))
	for k, v := range o.Attrs {
		out[k] = append([]byte(nil), v...)
	}
	return out, nil
}

// OmapGet returns the values of the keys that exist.
func (s *BlockStore) OmapGet(c Coll, oid string, keys []string) (map[string][]byte, error) {
	if _, err := s.lookup(c, oid); err != nil {
		return nil, fmt.Errorf("objectstore: omap get %w", err)
	}
	out := map[string][]byte{}
	for _, k := range keys {
		v, closer, err := s.db.Get(omapKey(c, oid, k))
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[k] = append([]byte(nil), v...)
		closer.Close()
	}
	return out, nil
}

// OmapList lists omap entries (see Store).
func (s *BlockStore) OmapList(c Coll, oid, startAfter, prefix string, max int) ([]KV, bool, error) {
	if _, err := s.lookup(c, oid); err != nil {
		return nil, false, fmt.Errorf("objectstore: omap list %w", err)
	}
	base := omapPrefix(c, oid)
	lower := append(append([]byte(nil), base...), prefix...)
	if startAfter >= prefix {
		lower = append(omapKey(c, oid, startAfter), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(append(append([]byte(nil), base...), prefix...))})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	var out []KV
	for it.First(); it.Valid(); it.Next() {
		if max > 0 && len(out) == max {
			return out, true, nil
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, false, err
		}
		out = append(out, KV{Key: string(it.Key()[len(base):]), Value: append([]byte(nil), v...)})
	}
	return out, false, it.Error()
}

// List returns object names in a collection (see Store).
func (s *BlockStore) List(c Coll, startAfter string, max int) ([]string, error) {
	if ok, err := s.collExists(c); err != nil || !ok {
		if err == nil {
			err = ErrNotFound
		}
		return nil, fmt.Errorf("objectstore: list collection %s: %w", c, err)
	}
	base := collPrefix(pOnode, c)
	lower := base
	if startAfter != "" {
		lower = append(onodeKey(c, startAfter), 0)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(base)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []string
	for it.First(); it.Valid() && (max <= 0 || len(out) < max); it.Next() {
		out = append(out, string(it.Key()[len(base):]))
	}
	return out, it.Error()
}

func (s *BlockStore) collExists(c Coll) (bool, error) {
	_, closer, err := s.db.Get(collKey(c))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

// Collections lists every collection.
func (s *BlockStore) Collections() ([]Coll, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pColl}, UpperBound: []byte{pColl + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Coll
	for it.First(); it.Valid(); it.Next() {
		out = append(out, Coll(it.Key()[1:]))
	}
	return out, it.Error()
}

// StatFS reports the data device's size and the bytes in use on it (inline
// objects live in the metadata store and are not counted).
func (s *BlockStore) StatFS() (FSStat, error) {
	return FSStat{Total: s.sb.Blocks * BlockSize, Used: s.used.Load() * BlockSize, Meta: s.metaBytes()}, nil
}

// metaBytes is the metadata store's disk use, measured again when the
// last measure is over a second old (callers ask on every write).
func (s *BlockStore) metaBytes() uint64 {
	now := time.Now().UnixNano()
	if last := s.metaAt.Load(); now-last > int64(time.Second) && s.metaAt.CompareAndSwap(last, now) {
		s.meta.Store(s.db.Metrics().DiskSpaceUsage())
	}
	return s.meta.Load()
}

var _ Store = (*BlockStore)(nil)

// MetaStats describes the metadata store's LSM (Pebble) now: what an
// operator watches as Ceph's BlueStore exposes RocksDB's counters.
type MetaStats struct {
	Flushes     int64 // memtables flushed since the store opened
	Compactions int64 // compactions since the store opened
	// CompactionsRunning and FlushesRunning are in progress now;
	// CompactionDebt is the bytes Pebble estimates its compactions must
	// still rewrite to bring every level within its target size.
	CompactionsRunning, FlushesRunning int64
	CompactionDebt                     uint64
	// ReadAmp is the sstables (or L0 sublevels) a lookup may visit.
	ReadAmp int
	// SSTBytes is the sstables' size; BlobBytes the blob files' (values
	// kept out of the sstables: separateValues), both on disk;
	// BlobGarbageBytes the blob files' values (uncompressed) that no key
	// refers to any more, reclaimed by rewriting the files.
	SSTBytes, BlobBytes, BlobGarbageBytes uint64
}

// MetaStats returns the metadata store's LSM statistics.
// A closed store's are zero.
func (s *BlockStore) MetaStats() MetaStats {
	s.metaMu.RLock()
	defer s.metaMu.RUnlock()
	if s.readable() != nil {
		return MetaStats{}
	}
	m := s.db.Metrics()
	t := m.Total()
	return MetaStats{
		Flushes: m.Flush.Count, Compactions: m.Compact.Count,
		CompactionsRunning: m.Compact.NumInProgress, FlushesRunning: m.Flush.NumInProgress,
		CompactionDebt: m.Compact.EstimatedDebt, ReadAmp: m.ReadAmp(),
		SSTBytes: uint64(t.TablesSize), BlobBytes: m.BlobFiles.LiveSize,
		BlobGarbageBytes: m.BlobFiles.ValueSize - min(m.BlobFiles.ReferencedValueSize, m.BlobFiles.ValueSize),
	}
}

// FlushMeta writes the metadata store's memtable out to an sstable now
// and returns when it is durable there; compactions it triggers go on in
// the background. ErrClosed once the store is closed.
func (s *BlockStore) FlushMeta() error {
	s.metaMu.RLock()
	defer s.metaMu.RUnlock()
	if err := s.readable(); err != nil {
		return err
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("objectstore: flush metadata: %w", err)
	}
	return nil
}

// CompactMeta compacts the whole metadata store into its last level
// (Ceph's `ceph tell osd.N compact`): lookups then visit the fewest
// sstables, at the cost of rewriting every key once. It returns when
// done, or when ctx ends or the store closes: compactions not yet started
// are dropped then (an error wrapping ctx's), and Close waits for the one
// running. ErrClosed once the store is closed.
func (s *BlockStore) CompactMeta(ctx context.Context) error {
	s.metaMu.RLock()
	defer s.metaMu.RUnlock()
	if err := s.readable(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with the compaction, or ends it when the store closes
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, true); err != nil {
		return fmt.Errorf("objectstore: compact metadata: %w", err)
	}
	return nil
}
