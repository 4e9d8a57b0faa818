package objectstore

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Deferred writes (BlueStore's, bluestore_prefer_deferred_size): a commit
// group whose new data blocks are few puts them into its metadata commit
// as a record under 'W' u64be(seq), and writes them to the device while
// that commits, instead of writing them, syncing the device, and only
// then committing. One flush — the metadata log's — makes the group
// durable instead of two in turn, and the device write no longer comes
// before the commit: on this project's virtual disks a 4 KiB overwrite's
// store commit took 0.4–1.1 ms of a replicated write's 1.4 ms, a direct
// write 0.15–0.4 ms of it (docs/perf-log/deferred-2026-12-01.md). OSDs
// leave it off unless bluestore_prefer_deferred_size is set: with it on,
// e2e.TestKillsDuringRecovery finds an OSD's count of used blocks gone
// below zero after a restart, a cause not found yet (same log).
//
// The records are retired (deleted, in one range deletion) by the next
// group that syncs the device: a group with more data than DeferredMax,
// or one that finds more than deferredLimit bytes of records outstanding,
// or Close. A group that syncs the device and retires the records in its
// own commit makes them unnecessary at the same instant it commits: before
// it, the records may be needed; after it, the device holds their data.
//
// Opening the store replays the records left, oldest first, onto the
// device, syncs it and retires them. Replay is safe although the blocks
// may have been freed and reallocated since a record was made: every
// record is of a committed group, a later committed group that wrote the
// same blocks either left a record after it (replayed after it) or synced
// the device and retired it, and a block free in the committed metadata
// may hold anything.

// DefaultDeferredMax is Options.DeferredMax's default: a commit group
// with at most this many bytes of new data blocks defers them.
const DefaultDeferredMax = 64 << 10

// deferredLimit bounds the bytes of deferred records outstanding: the
// group that would exceed it syncs the device and retires them instead.
// Records live in the memtable until retired (the range deletion drops
// them at its flush), so this is also about what they cost there.
const deferredLimit = 8 << 20

// pDeferred is the key prefix of deferred-write records (layout.go).
const pDeferred = 'W'

func deferredKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{pDeferred}, seq)
}

// deferredBytes is the data in pieces.
func deferredBytes(pieces []pendingWrite) int {
	n := 0
	for _, p := range pieces {
		n += len(p.data)
	}
	return n
}

// encodeDeferred writes the record of pieces into b, which holds
// exactly deferredLen(pieces) bytes: for each piece, u64be first block,
// u32be blocks, then its data.
func encodeDeferred(b []byte, pieces []pendingWrite) {
	for _, p := range pieces {
		binary.BigEndian.PutUint64(b, p.phys)
		binary.BigEndian.PutUint32(b[8:], uint32(len(p.data)/BlockSize))
		b = b[12+copy(b[12:], p.data):]
	}
}

// deferredLen is the length of the record of pieces holding n bytes of
// data.
func deferredLen(pieces []pendingWrite, n int) int { return n + 12*len(pieces) }

// decodeDeferred reads a record made by encodeDeferred; ErrCorrupt if it
// is cut short or names blocks past the device's blocks.
func decodeDeferred(v []byte, blocks uint64) ([]pendingWrite, error) {
	var out []pendingWrite
	for len(v) > 0 {
		if len(v) < 12 {
			return nil, fmt.Errorf("%w: deferred write record cut short", ErrCorrupt)
		}
		phys, n := binary.BigEndian.Uint64(v), uint64(binary.BigEndian.Uint32(v[8:]))
		v = v[12:]
		if n == 0 || uint64(len(v)) < n*BlockSize || phys >= blocks || n > blocks-phys {
			return nil, fmt.Errorf("%w: deferred write of blocks %d+%d (device of %d, %d bytes left)", ErrCorrupt, phys, n, blocks, len(v))
		}
		out = append(out, pendingWrite{phys: phys, data: v[:n*BlockSize]})
		v = v[n*BlockSize:]
	}
	return out, nil
}

// deferData, if the group's new data blocks (pieces, n bytes) are few —
// at most deferMax, and the records outstanding leave room — puts them
// into the batch as a deferred record and commits it while they are
// written to the device, and returns true once both are done: the
// commit's one flush makes the data durable, and the device write's
// latency hides behind the commit's. Metadata naming the blocks is
// published (and readers find it) only after both. It returns false,
// having done nothing, for a group it does not defer.
func (g *group) deferData(pieces []pendingWrite) (bool, error) {
	s := g.s
	n := deferredBytes(pieces)
	if n == 0 || n > s.deferMax || s.deferPending+n > deferredLimit {
		return false, nil
	}
	// The record is encoded where the batch holds it: the data is
	// copied once, into the batch.
	key := deferredKey(s.deferSeq)
	op := g.b.SetDeferred(len(key), deferredLen(pieces, n))
	copy(op.Key, key)
	encodeDeferred(op.Value, pieces)
	if err := op.Finish(); err != nil {
		return false, fmt.Errorf("defer data write: %w", err)
	}
	g.deferred = n
	// A reader that misses the onode cache finds the new onodes once the
	// batch commits, possibly before their blocks are written: it waits
	// for them (cachedOnode). A reader that hits the cache finds the old
	// onodes, whose blocks stay until the group has ended.
	done := make(chan struct{})
	s.pendMu.Lock()
	if s.pending == nil {
		s.pending = map[string]chan struct{}{}
	}
	for k := range g.committed {
		s.pending[k] = done
	}
	s.npending.Add(1)
	s.pendMu.Unlock()
	written := make(chan error, 1)
	go func() { written <- writeRuns(s.dev, pieces) }()
	err := g.commit()
	if werr := <-written; werr != nil && err == nil {
		err = &unwrittenError{werr}
	}
	s.pendMu.Lock()
	for k := range g.committed {
		delete(s.pending, k)
		if _, ok := err.(*unwrittenError); ok {
			if s.unwritten == nil {
				s.unwritten = map[string]bool{}
			}
			s.unwritten[k] = true
			s.lost.Store(true)
		}
	}
	s.npending.Add(-1)
	s.pendMu.Unlock()
	close(done)
	return true, err
}

// unwrittenError is a deferred group whose metadata committed but whose
// device write failed: the group stands, its record is replayed at the
// next open, and the store stops (commitGroup).
type unwrittenError struct{ err error }

func (e *unwrittenError) Error() string {
	return "data device write failed after the metadata commit: " + e.err.Error()
}
func (e *unwrittenError) Unwrap() error { return e.err }

// deferring is the channel closed when the deferred group committing a
// change of the onode under key has written its data, or nil if none is;
// lost is true if that group's device write failed (the data is in its
// record only, until the store is opened again).
func (s *BlockStore) deferring(key string) (ch chan struct{}, lost bool) {
	if s.npending.Load() == 0 && !s.lost.Load() {
		return nil, false
	}
	s.pendMu.Lock()
	defer s.pendMu.Unlock()
	return s.pending[key], s.unwritten[key]
}

// syncData makes the data blocks a group wrote durable, if it wrote any,
// by syncing the device; its commit then retires every deferred record
// outstanding, whose data that sync has made durable too.
func (g *group) syncData(wrote bool) error {
	s := g.s
	if !wrote {
		return nil
	}
	if err := s.dev.Sync(); err != nil {
		return fmt.Errorf("sync data device: %w", err)
	}
	if s.deferPending > 0 {
		if err := g.b.DeleteRange([]byte{pDeferred}, []byte{pDeferred + 1}, nil); err != nil {
			return fmt.Errorf("retire deferred writes: %w", err)
		}
		g.retired = true
	}
	return nil
}

// deferCommitted accounts for a committed group's record or retirement.
func (s *BlockStore) deferCommitted(g *group) {
	if g.retired {
		s.deferPending = 0
	}
	if g.deferred > 0 {
		s.deferPending += g.deferred
		s.deferSeq++
		s.deferredGroups.Add(1)
	}
}

// DeferredWrites is how many commit groups deferred their data writes
// (one metadata flush instead of two) since the store opened.
func (s *BlockStore) DeferredWrites() uint64 { return s.deferredGroups.Load() }

// replayDeferred writes every deferred record left in the metadata store
// to the device, oldest first, syncs the device and retires them (Open,
// before anything reads or allocates).
func (s *BlockStore) replayDeferred() error {
	n := 0
	err := scanNumbered(s.db, pDeferred, "deferred write", func(seq uint64, v []byte) error {
		pieces, err := decodeDeferred(v, s.sb.Blocks)
		if err == nil {
			err = writeRuns(s.dev, pieces)
		}
		if err != nil {
			return fmt.Errorf("objectstore: replay deferred write %d: %w", seq, err)
		}
		s.deferSeq, n = seq+1, n+1
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := s.dev.Sync(); err != nil {
		return fmt.Errorf("objectstore: sync data device after replaying deferred writes: %w", err)
	}
	if err := s.db.DeleteRange([]byte{pDeferred}, []byte{pDeferred + 1}, pebble.Sync); err != nil {
		return fmt.Errorf("objectstore: retire replayed deferred writes: %w", err)
	}
	s.log.Info("objectstore: replayed deferred writes", "records", n)
	return nil
}

// retireDeferred syncs the device and retires the records outstanding
// (Close, once the committer has stopped), so that the next Open has none
// to replay. A failure leaves them for that Open.
func (s *BlockStore) retireDeferred() {
	if s.deferPending == 0 {
		return
	}
	if s.dev.Sync() != nil {
		return
	}
	if s.db.DeleteRange([]byte{pDeferred}, []byte{pDeferred + 1}, pebble.Sync) == nil {
		s.deferPending = 0
	}
}
