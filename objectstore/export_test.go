package objectstore

import "context"

// SettleForTest flushes and fully compacts the metadata store, so that
// benchmarks measure steady state rather than a fill's compaction debt.
func (s *BlockStore) SettleForTest() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	return s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true)
}

// DeferredWaitsForTest is how many reads waited for a deferred group's
// device write (cachedOnode).
func (s *BlockStore) DeferredWaitsForTest() uint64 { return s.deferWaits.Load() }
