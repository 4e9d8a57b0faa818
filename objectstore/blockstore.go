package objectstore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open.
type Options struct {
	// Dir holds the data file ("block") and, by default, the metadata.
	Dir string
	// DBDir puts the metadata (Pebble) on another, faster device
	// (BlueStore's block.db); default Dir/db.
	DBDir string
	// WALDir puts the metadata write-ahead log on another device
	// (BlueStore's block.wal, the SSD journal of the Ceph guides); default
	// DBDir.
	WALDir string
	// Device replaces the data file (tests inject faults with it).
	Device Device
	// FS is the filesystem of the metadata store; default the OS's. Tests
	// use Pebble's crash-simulating in-memory one.
	FS vfs.FS
	// Size is the data device's size in bytes, fixed when the store is
	// created; default 10 GiB (a sparse file).
	Size int64
	// InlineMax is the size up to which objects live in the metadata store
	// instead of on the data device; fixed at creation; default 32 KiB.
	InlineMax int
	// CacheSize is the metadata block cache in bytes (the share of
	// osd_memory_target BlueStore gives its RocksDB cache); default 256 MiB.
	CacheSize int64
	// OnodeCacheSize bounds the decoded-onode cache in bytes (inline data
	// included); default 64 MiB, negative disables it.
	OnodeCacheSize int
	// DataCacheSize bounds the cache of data blocks reads fetched from the
	// device (BlueStore's buffer cache, bluestore_default_buffered_read);
	// default DefaultDataCache, negative disables it.
	DataCacheSize int64
	// MaxOpenFiles bounds the metadata store's open sstables and blob
	// files (Pebble's file cache, MaxOpenFiles). 0 derives it from the
	// process's open-file limit (maxOpenFilesFor). A store of 10 M 4 KiB
	// objects has about 16,000 such files; with Pebble's default of 1,000,
	// random reads of objects not in the onode cache reopen a file for
	// most lookups.
	MaxOpenFiles int
	// CommitWindow is how long, under load, a commit group waits for more
	// transactions before it syncs: syncs are the dominant per-commit
	// cost, and when every core is busy the wait costs nothing. Applied
	// only when the previous group held more than one transaction, so a
	// lone writer never waits. Default DefaultCommitWindow; negative: never.
	CommitWindow time.Duration
	// DeferredMax is the most new data, in bytes, a commit group puts
	// into its metadata commit instead of syncing the data device before
	// it (deferred writes, deferred.go; BlueStore's
	// bluestore_prefer_deferred_size). Default DefaultDeferredMax;
	// negative: never.
	DeferredMax int
	// Logger receives the store's and Pebble's warnings; default slog's.
	Logger *slog.Logger
	// legacyMeta opens a new metadata store in the format Shoal used
	// before value separation (tests of the upgrade).
	legacyMeta bool
}

// Defaults.
const (
	DefaultSize       = 10 << 30
	DefaultInlineMax  = 32 << 10
	DefaultCacheSize  = 256 << 20
	DefaultOnodeCache = 64 << 20
	DefaultDataCache  = 1 << 30
	// DefaultCommitWindow: see Options.CommitWindow and docs/PERFORMANCE.md.
	DefaultCommitWindow = 300 * time.Microsecond
	maxGroup            = 512 // transactions per commit group

	// memTableSize is the size of one of Pebble's memtables, and
	// memTablesQueued the most that are full at once (Pebble stops writes
	// beyond: its MemTableStopWritesThreshold, set to Pebble's default).
	memTableSize    = 64 << 20
	memTablesQueued = 2
	// MemtableMemory is the most memory the metadata store's memtables
	// hold, part of an OSD's osd_memory_target budget.
	MemtableMemory = memTableSize * memTablesQueued
)

// BlockStore is the default Store: metadata, attributes, omap and small
// objects in Pebble, larger objects copy-on-write in 4 KiB blocks on a data
// device, each block with a crc32c. See the package documentation.
type BlockStore struct {
	db    *pebble.DB
	dev   Device
	sb    superblock
	log   *slog.Logger
	alloc *allocator // owned by the committer goroutine
	used  atomic.Uint64
	mu    sync.RWMutex // readers hold it shared; the committer takes it to retire freed blocks
	// metaMu is held shared by FlushMeta, CompactMeta and MetaStats,
	// which may take long, and by Close to close the metadata store.
	metaMu sync.RWMutex
	// commitMu is held while a commit group runs; Fsck takes it to see a
	// quiescent allocator.
	commitMu                sync.Mutex
	reqs                    chan *request // queued transactions, in submission order
	submitMu                sync.RWMutex  // Submit holds it shared; Close exclusively to set closing
	closing                 bool
	window                  time.Duration // group commit wait under load
	busy                    atomic.Bool   // the last group held more than one transaction
	groups                  atomic.Uint64 // commit groups persisted
	txns                    atomic.Uint64 // transactions in them
	sumsGiven, sumsComputed atomic.Uint64 // data blocks placed with their checksum given (WriteSums) or computed
	quit                    chan struct{}
	exited                  chan struct{}
	once                    sync.Once
	failed                  atomic.Pointer[error]
	onodes                  *onodeCache   // decoded onodes, refreshed by the committer
	dcache                  *dataCache    // device blocks reads fetched (nil: none)
	colls                   map[Coll]bool // committed collections; owned by the committer
	// fences holds, by collection, the splits committed since it was
	// made (SplitCollection); owned by the committer.
	fences map[Coll][]*Split
	// meta is the metadata store's disk use as measured at metaAt
	// (Unix ns; metaBytes).
	meta   atomic.Uint64
	metaAt atomic.Int64
	// refs holds the extra reference counts of shared blocks by region
	// (refs.go); owned by the committer.
	refs map[uint64]refRegion
	// deferMax is Options.DeferredMax; deferPending the bytes of deferred
	// records outstanding and deferSeq the next record's number (owned by
	// the committer; deferred.go).
	deferMax       int
	deferPending   int
	deferSeq       uint64
	deferredGroups atomic.Uint64 // groups committed with a deferred record
	// pending maps the onode keys of a deferred group being committed to
	// a channel closed once its data is on the device (deferData);
	// npending counts such groups, so that readers skip pendMu when none.
	pendMu    sync.Mutex
	pending   map[string]chan struct{}
	npending  atomic.Int32
	unwritten map[string]bool // keys of a committed group whose device write failed
	lost      atomic.Bool     // unwritten is not empty
	// deferWaits counts the reads that waited for one (tests).
	deferWaits atomic.Uint64
}

type request struct {
	t   *Transaction
	err error
	ok  bool
	out chan error
}

// pebbleLogger routes Pebble's errors to the store's logger and drops its
// chatter. Fatalf ends the process: Pebble cannot continue after, e.g., a
// failed log write, and an OSD that stops is recovered by its peers.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(string, ...any)           {}
func (p pebbleLogger) Errorf(format string, a ...any) { p.l.Error(fmt.Sprintf(format, a...)) }
func (p pebbleLogger) Fatalf(format string, a ...any) {
	p.l.Error(fmt.Sprintf(format, a...))
	os.Exit(1)
}

// Open opens the store in opts.Dir, creating it if it does not exist.
func Open(opts Options) (*BlockStore, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("objectstore: %w: no directory", ErrInvalid)
	}
	explicitDB, explicitWAL := opts.DBDir != "", opts.WALDir != ""
	if opts.DBDir == "" {
		opts.DBDir = filepath.Join(opts.Dir, "db")
	}
	if opts.Size == 0 {
		opts.Size = DefaultSize
	}
	if opts.InlineMax == 0 {
		opts.InlineMax = DefaultInlineMax
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.OnodeCacheSize == 0 {
		opts.OnodeCacheSize = DefaultOnodeCache
	}
	if opts.DataCacheSize == 0 {
		opts.DataCacheSize = DefaultDataCache
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Device == nil {
		if err := mkdirDurable(vfs.Default, opts.Dir); err != nil {
			return nil, fmt.Errorf("objectstore: %w", err)
		}
	}
	if err := pinMetadata(&opts, explicitDB, explicitWAL); err != nil {
		return nil, err
	}
	cache := pebble.NewCache(opts.CacheSize)
	defer cache.Unref() // the DB holds its own reference
	popts := &pebble.Options{FS: walFS{opts.FS}, WALDir: opts.WALDir, Cache: cache, Logger: pebbleLogger{opts.Logger}}
	// Bloom filters on every level: most lookups while checking a
	// transaction are for objects that do not exist yet.
	popts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	// Large memtables (BlueStore gives RocksDB 256 MiB write buffers): onodes
	// and PG log entries are rewritten and deleted soon after they are
	// written, so most die in the memtable instead of being compacted.
	popts.MemTableSize = memTableSize
	popts.MemTableStopWritesThreshold = memTablesQueued
	if !opts.legacyMeta {
		separateValues(popts)
	}
	popts.MaxOpenFiles = opts.MaxOpenFiles
	if popts.MaxOpenFiles <= 0 {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
			popts.MaxOpenFiles = maxOpenFilesFor(lim.Cur)
		}
	}
	db, err := pebble.Open(opts.DBDir, popts)
	if err != nil {
		return nil, fmt.Errorf("objectstore: open metadata in %s: %w", opts.DBDir, err)
	}
	if opts.CommitWindow == 0 {
		opts.CommitWindow = DefaultCommitWindow
	}
	if opts.DeferredMax == 0 {
		opts.DeferredMax = DefaultDeferredMax
	}
	s := &BlockStore{window: opts.CommitWindow, db: db, log: opts.Logger, reqs: make(chan *request, maxGroup), quit: make(chan struct{}), exited: make(chan struct{}),
		onodes: newOnodeCache(opts.OnodeCacheSize), dcache: newDataCache(opts.DataCacheSize), deferMax: opts.DeferredMax}
	if err := s.load(opts); err != nil {
		db.Close()
		return nil, err
	}
	go s.committer()
	return s, nil
}

func (s *BlockStore) load(opts Options) error {
	v, closer, err := s.db.Get([]byte{pSuper})
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if opts.Size < BlockSize || opts.InlineMax < 0 {
			return fmt.Errorf("objectstore: %w: size %d, inline max %d", ErrInvalid, opts.Size, opts.InlineMax)
		}
		s.sb = superblock{Blocks: uint64(opts.Size) / BlockSize, InlineMax: uint32(opts.InlineMax)}
		if err := s.db.Set([]byte{pSuper}, s.sb.encode(), pebble.Sync); err != nil {
			return fmt.Errorf("objectstore: write superblock: %w", err)
		}
	case err != nil:
		return fmt.Errorf("objectstore: read superblock: %w", err)
	default:
		s.sb, err = decodeSuperblock(v)
		closer.Close()
		if err != nil {
			return err
		}
	}
	s.dev = opts.Device
	if s.dev == nil {
		if s.dev, err = openFileDevice(filepath.Join(opts.Dir, "block"), int64(s.sb.Blocks*BlockSize)); err != nil {
			return fmt.Errorf("objectstore: open data device: %w", err)
		}
	}
	if err := s.replayDeferred(); err != nil {
		return err
	}
	s.alloc = newAllocator(s.sb.Blocks)
	err = scanNumbered(s.db, pBitmap, "bitmap", func(region uint64, v []byte) error {
		s.alloc.loadRegion(region, v)
		return nil
	})
	if err != nil {
		return err
	}
	s.alloc.settle()
	s.used.Store(s.alloc.used)
	if s.refs, err = loadRefs(s.db); err != nil {
		return err
	}
	s.colls = map[Coll]bool{}
	cs, err := s.Collections()
	if err != nil {
		return err
	}
	for _, c := range cs {
		s.colls[c] = true
	}
	return nil
}

// mkdirDurable creates dir and its missing parents and syncs each parent
// whose entries changed: a directory whose entry was never synced can
// vanish with everything in it at power loss.
func mkdirDurable(fs vfs.FS, dir string) error {
	dir = filepath.Clean(dir)
	var created []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, d := range created {
		if err := syncDir(fs, filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// Files in a store's directory that record where its metadata and
// write-ahead log were put when it was created (BlueStore keeps block.db
// and block.wal links in the OSD's directory for the same reason), and
// the file in a metadata directory that names the store it belongs to.
const (
	dbPathFile  = "db_path"
	walPathFile = "wal_path"
	ownerFile   = "SHOAL_STORE"
)

// pinMetadata makes the metadata and WAL directories stay where the
// store was created. The first Open records them in opts.Dir; a later
// one without them uses the recorded ones, and one that names others is
// refused (ErrInvalid) — opening an empty metadata store elsewhere would
// lose every object. A metadata directory is claimed for one store (its
// SHOAL_STORE file names it), so two stores configured onto one
// directory are refused too.
func pinMetadata(opts *Options, explicitDB, explicitWAL bool) error {
	fs := opts.FS
	if err := mkdirDurable(fs, opts.Dir); err != nil {
		return fmt.Errorf("objectstore: %w", err)
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil && p != "" {
			return a
		}
		return p
	}
	opts.DBDir = abs(opts.DBDir)
	opts.WALDir = abs(opts.WALDir)
	type place struct {
		file, what string
		val        *string
		explicit   bool
		record     bool // not recorded yet: record it once all is checked
	}
	places := []*place{{file: dbPathFile, what: "metadata", val: &opts.DBDir, explicit: explicitDB}, {file: walPathFile, what: "write-ahead log", val: &opts.WALDir, explicit: explicitWAL}}
	for _, x := range places {
		rec := fs.PathJoin(opts.Dir, x.file)
		b, err := readSmall(fs, rec)
		switch {
		case err == nil:
			r := strings.TrimSpace(string(b))
			if x.explicit && r != *x.val {
				return fmt.Errorf("objectstore: %w: the store in %s has kept its %s in %q since it was created (%s); the configuration names %q: move it there and fix the configuration, or remove the setting",
					ErrInvalid, opts.Dir, x.what, r, rec, *x.val)
			}
			*x.val = r
		case errors.Is(err, os.ErrNotExist):
			x.record = true
		default:
			return fmt.Errorf("objectstore: %w", err)
		}
	}
	me := abs(opts.Dir)
	for _, d := range []string{opts.DBDir, opts.WALDir} {
		if d == "" {
			continue
		}
		if err := mkdirDurable(fs, d); err != nil {
			return fmt.Errorf("objectstore: %w", err)
		}
		owner := fs.PathJoin(d, ownerFile)
		b, err := readSmall(fs, owner)
		switch {
		case err == nil && strings.TrimSpace(string(b)) != me:
			return fmt.Errorf("objectstore: %w: %s holds the metadata of the store in %s, not of %s: give each OSD its own directory", ErrInvalid, d, strings.TrimSpace(string(b)), me)
		case err == nil:
		case errors.Is(err, os.ErrNotExist):
			if err := writeDurable(fs, owner, []byte(me+"\n")); err != nil {
				return fmt.Errorf("objectstore: claim %s: %w", d, err)
			}
		default:
			return fmt.Errorf("objectstore: %w", err)
		}
	}
	for _, x := range places {
		if x.record {
			if err := writeDurable(fs, fs.PathJoin(opts.Dir, x.file), []byte(*x.val+"\n")); err != nil {
				return fmt.Errorf("objectstore: record the %s's place: %w", x.what, err)
			}
		}
	}
	return nil
}

func readSmall(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// writeDurable writes a small file on the store's file system (opts.FS)
// so that after a crash it is either whole or absent: through a temporary
// file, synced and renamed, then its directory synced (internal/durable
// does the same on the OS's file system).
func writeDurable(fs vfs.FS, path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(fs, filepath.Dir(path))
}

func syncDir(fs vfs.FS, dir string) error {
	f, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}

// Apply commits t atomically and durably (see Store).
func (s *BlockStore) Apply(t *Transaction) error { return <-s.Submit(t) }

// Submit implements Store.
func (s *BlockStore) Submit(t *Transaction) <-chan error {
	out := make(chan error, 1)
	if p := s.failed.Load(); p != nil {
		out <- fmt.Errorf("objectstore: %w: %v", ErrClosed, *p)
		return out
	}
	for i := range t.ops {
		if err := t.ops[i].validate(); err != nil {
			out <- fmt.Errorf("objectstore: op %d: %w", i, err)
			return out
		}
	}
	// The queue is buffered: a caller (an OSD holding its PG's lock to keep
	// log order) does not wait for the commit in progress, only for room.
	s.submitMu.RLock()
	defer s.submitMu.RUnlock()
	if s.closing {
		out <- fmt.Errorf("objectstore: %w", ErrClosed)
		return out
	}
	s.reqs <- &request{t: t, out: out}
	return out
}

// Close stops accepting transactions, waits for the committer and closes
// the device and the metadata store.
func (s *BlockStore) Close() error {
	var err error
	s.once.Do(func() {
		s.submitMu.Lock() // no Submit is between its check and its send
		s.closing = true
		s.submitMu.Unlock()
		close(s.quit)
		<-s.exited
		if s.failed.Load() == nil { // a failed store's records may be all some committed data has
			s.retireDeferred()
		}
		s.metaMu.Lock() // a CompactMeta stops at its next step (s.quit)
		defer s.metaMu.Unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		err = errors.Join(s.dev.Close(), s.db.Close())
	})
	return err
}

func (s *BlockStore) committer() {
	defer close(s.exited)
	for {
		var first *request
		select {
		case first = <-s.reqs:
		case <-s.quit:
			for { // queued, never applied
				select {
				case r := <-s.reqs:
					r.out <- fmt.Errorf("objectstore: %w", ErrClosed)
				default:
					return
				}
			}
		}
		group := []*request{first}
	drain:
		for len(group) < maxGroup {
			select {
			case r := <-s.reqs:
				group = append(group, r)
			default:
				break drain
			}
		}
		if s.window > 0 && s.busy.Load() {
			// Under load, let more transactions join before paying for the
			// syncs (adaptive group commit: only when the last group had
			// company, so a lone writer never waits).
			t := time.NewTimer(s.window)
		wait:
			for len(group) < maxGroup {
				select {
				case r := <-s.reqs:
					group = append(group, r)
				case <-t.C:
					break wait
				}
			}
			t.Stop()
		}
		s.busy.Store(len(group) > 1)
		s.commitGroup(group)
		s.groups.Add(1)
		s.txns.Add(uint64(len(group)))
	}
}

// CommitStats reports how many commit groups (each one metadata sync,
// and one data sync before it if it wrote more data than it could defer)
// the store has made and how many transactions they held.
func (s *BlockStore) CommitStats() (groups, txns uint64) { return s.groups.Load(), s.txns.Load() }

// ChecksumStats counts the data blocks the store has written since it
// opened: those whose crc32c came with the data (Transaction.WriteSums,
// no pass over them here) and those it computed.
func (s *BlockStore) ChecksumStats() (given, computed uint64) {
	return s.sumsGiven.Load(), s.sumsComputed.Load()
}

// group is the state of one commit group: its batch, the blocks it
// allocated and freed, and the data it will write.
type group struct {
	s       *BlockStore
	b       *pebble.Batch
	alloced []run
	freed   []run
	writes  []pendingWrite       // in allocation order; freed runs may cover parts again
	refs    map[uint64]refRegion // regions of the reference table the group changed (copies)
	onodes  map[string]*onode    // this transaction's loaded onodes; nil = removed
	order   []string
	// committed holds each onode the group changed, as last written (nil:
	// removed); it refreshes the onode cache after the commit.
	committed map[string]*onode
	// colls holds collections the group created (true) or removed (false).
	colls map[Coll]bool
	// fences holds the splits the group applied, by collection, and nil
	// for a collection it removed (SplitCollection).
	fences map[Coll][]*Split
	// deferred is the bytes of data the group put into its commit as a
	// deferred record; retired, whether the commit retires the records
	// outstanding (deferred.go).
	deferred int
	retired  bool
}

// pendingWrite is one allocated run: data (whole blocks) for the device
// blocks from phys on.
type pendingWrite struct {
	phys uint64
	data []byte
}

func (s *BlockStore) commitGroup(reqs []*request) {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if p := s.failed.Load(); p != nil { // queued before the store stopped: nothing more commits
		for _, r := range reqs {
			r.out <- fmt.Errorf("objectstore: %w: %v", ErrClosed, *p)
		}
		return
	}
	g := &group{s: s, b: s.db.NewIndexedBatch(), committed: map[string]*onode{}, colls: map[Coll]bool{}, fences: map[Coll][]*Split{}}
	defer g.b.Close()
	var fatal error
	for _, r := range reqs {
		if r.err = g.check(r.t); r.err != nil {
			continue
		}
		if err := g.apply(r.t); err != nil {
			fatal = err
			break
		}
		r.ok = true
	}
	if fatal == nil {
		fatal = g.persist()
	}
	var unwritten *unwrittenError
	switch {
	case errors.As(fatal, &unwritten):
		// Committed, but its data did not reach the device: the group
		// stands (its deferred record is written again at the next open)
		// and the store stops, answering the group with an error as a
		// crash would leave it unanswered.
		s.install(g, false)
		fatal = s.stop(fatal, "data device write failed after its commit")
	case fatal != nil:
		for _, a := range g.alloced {
			s.alloc.set(a.start, a.n, false)
		}
		var errno syscall.Errno
		if errors.Is(fatal, ErrNoSpace) || (errors.As(fatal, &errno) && errno == syscall.ENOSPC) {
			fatal = fmt.Errorf("objectstore: %w: %v", ErrNoSpace, fatal)
		} else {
			fatal = s.stop(fatal, "commit failed")
		}
	default:
		s.install(g, true)
	}
	if fatal != nil {
		for _, r := range reqs {
			if r.ok {
				r.err = fatal
			}
		}
	}
	s.used.Store(s.alloc.used)
	for _, r := range reqs {
		r.out <- r.err
	}
}

// stop makes the store read-only after err (what failed: why) and
// returns the error its transactions get: ErrClosed, with err's text.
func (s *BlockStore) stop(err error, why string) error {
	s.failed.CompareAndSwap(nil, &err)
	s.log.Error("objectstore: "+why+"; store is now read-only", "err", err)
	return fmt.Errorf("objectstore: %w: %v", ErrClosed, err)
}

// install makes a committed group's state the store's: freed blocks back
// to the allocator (once readers that looked up metadata before the
// commit have finished with them), the onode cache, shared-block counts,
// collections, splits and deferred records. With cache false the
// group's onodes leave the cache instead of entering it (their data is
// not on the device: readers must find them unwritten, cachedOnode).
func (s *BlockStore) install(g *group, cache bool) {
	s.mu.Lock()
	for _, f := range g.freed {
		s.alloc.set(f.start, f.n, false)
		s.dcache.drop(f.start, f.n)
	}
	for k, o := range g.committed {
		if !cache {
			o = nil
		}
		s.onodes.put(k, o)
	}
	s.mu.Unlock()
	g.installRefs()
	for c, live := range g.colls {
		if live {
			s.colls[c] = true
		} else {
			delete(s.colls, c)
		}
	}
	installFences(&s.fences, g.fences)
	s.deferCommitted(g)
}

// persist writes the group's data and makes it durable — by syncing the
// device before it commits the metadata batch (with the new bitmap
// regions) synchronously, or, if the data is small, as a deferred record
// in that commit (deferData) — so that metadata never refers to blocks
// that are not durable once it is.
func (g *group) persist() error {
	if len(g.alloced)+len(g.freed) > 0 {
		regions := map[uint64]bool{}
		for _, rs := range [][]run{g.alloced, g.freed} {
			for _, r := range rs {
				for b := r.start / regionBlocks; b <= (r.start+r.n-1)/regionBlocks; b++ {
					regions[b] = true
				}
			}
		}
		for reg := range regions {
			v := g.s.alloc.region(reg)
			for _, f := range g.freed { // freed in the persisted map, still held in memory
				for b := max(f.start, reg*regionBlocks); b < min(f.start+f.n, (reg+1)*regionBlocks); b++ {
					off := b - reg*regionBlocks
					v[off/8] &^= 1 << (off % 8)
				}
			}
			if err := g.b.Set(bitmapKey(reg), v, nil); err != nil {
				return err
			}
		}
	}
	if err := g.persistRefs(); err != nil {
		return err
	}
	// Write the allocated runs from the buffers they were placed from,
	// skipping blocks freed again within the group; runs that end where
	// another starts go in one vectored write (writeRuns). Few of them
	// are deferred: written beside the commit that holds them as well.
	pieces := unfreed(g.writes, g.freed)
	if deferred, err := g.deferData(pieces); err != nil || deferred {
		return err
	}
	if err := writeRuns(g.s.dev, pieces); err != nil {
		return err
	}
	if err := g.syncData(len(pieces) > 0); err != nil {
		return err
	}
	return g.commit()
}

// commit commits the group's metadata batch synchronously.
func (g *group) commit() error {
	if err := g.b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("commit metadata: %w", err)
	}
	return nil
}

// unfreed returns the parts of writes that no run of freed covers, in
// writes' order (a write freed in the middle comes back as two pieces).
// freed runs do not overlap one another; it is left as it is (a sorted
// copy is searched). O((len(writes) + len(freed)) · log len(freed)).
func unfreed(writes []pendingWrite, freed []run) []pendingWrite {
	if len(freed) == 0 {
		return writes
	}
	fs := slices.Clone(freed)
	slices.SortFunc(fs, func(a, b run) int { return cmp.Compare(a.start, b.start) })
	var out []pendingWrite
	for _, w := range writes {
		start, end := w.phys, w.phys+uint64(len(w.data))/BlockSize
		// the first freed run that ends after start
		i, _ := slices.BinarySearchFunc(fs, start, func(f run, b uint64) int { return cmp.Compare(f.start+f.n, b+1) })
		at := start
		for ; i < len(fs) && fs[i].start < end; i++ {
			if fs[i].start > at {
				out = append(out, pendingWrite{at, w.data[(at-start)*BlockSize : (fs[i].start-start)*BlockSize]})
			}
			at = max(at, min(end, fs[i].start+fs[i].n))
		}
		if at < end {
			out = append(out, pendingWrite{at, w.data[(at-start)*BlockSize:]})
		}
	}
	return out
}

// writeRuns writes pieces to the device, sorting them by block; pieces
// that follow one another on the device go in one WriteVecAt where the
// device has it.
func writeRuns(dev Device, pieces []pendingWrite) error {
	slices.SortFunc(pieces, func(a, b pendingWrite) int { return cmp.Compare(a.phys, b.phys) })
	vw, vec := dev.(vecWriter)
	var bufs [][]byte
	for i := 0; i < len(pieces); {
		j, next := i+1, pieces[i].phys+uint64(len(pieces[i].data))/BlockSize
		for vec && j < len(pieces) && pieces[j].phys == next {
			next += uint64(len(pieces[j].data)) / BlockSize
			j++
		}
		var err error
		if j == i+1 {
			_, err = dev.WriteAt(pieces[i].data, int64(pieces[i].phys*BlockSize))
		} else {
			bufs = bufs[:0]
			for _, p := range pieces[i:j] {
				bufs = append(bufs, p.data)
			}
			err = vw.WriteVecAt(bufs, int64(pieces[i].phys*BlockSize))
		}
		if err != nil {
			return fmt.Errorf("write data blocks %d+%d: %w", pieces[i].phys, next-pieces[i].phys, err)
		}
		i = j
	}
	return nil
}

func objKey(c Coll, oid string) string {
	var b strings.Builder // one allocation: this runs several times per op
	b.Grow(3 + len(c) + len(oid))
	b.WriteByte(pOnode)
	b.WriteByte(byte(len(c) >> 8))
	b.WriteByte(byte(len(c)))
	b.WriteString(string(c))
	b.WriteString(oid)
	return b.String()
}

// exists reports whether key is set, as this group sees it.
func (g *group) exists(key []byte) (bool, error) {
	_, closer, err := g.b.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

// check validates t against the state the group has built so far,
// simulating t's own creations and removals, and reserves nothing: a
// transaction that fails here leaves no trace.
func (g *group) check(t *Transaction) error {
	colls := map[Coll]bool{}
	objs := map[string]bool{}
	splits := map[Coll][]*Split{} // splits earlier in t: they fence its later ops
	collExists := func(c Coll) (bool, error) {
		if v, ok := colls[c]; ok {
			return v, nil
		}
		if v, ok := g.colls[c]; ok {
			return v, nil
		}
		return g.s.colls[c], nil
	}
	objExists := func(c Coll, oid string) (bool, error) {
		if v, ok := objs[objKey(c, oid)]; ok {
			return v, nil
		}
		return g.exists(onodeKey(c, oid))
	}
	var blocks uint64
	for i := range t.ops {
		o := &t.ops[i]
		fail := func(err error, what string) error {
			return fmt.Errorf("objectstore: op %d (%s %s/%s): %w", i, what, o.coll, o.oid, err)
		}
		ce, err := collExists(o.coll)
		if err != nil {
			return err
		}
		switch o.code {
		case opCreateColl:
			if ce {
				return fail(ErrExists, "create collection")
			}
			colls[o.coll] = true
			continue
		case opSplit:
			if !ce {
				return fail(ErrNotFound, "split collection")
			}
			for _, k := range o.split.Children {
				if ok, err := collExists(k); err != nil || !ok {
					return fail(fmt.Errorf("child collection %s: %w", k, ErrNotFound), "split collection")
				}
			}
			if err := splitPreceded(t.ops[:i], o); err != nil {
				return fail(err, "split collection")
			}
			splits[o.coll] = append(splits[o.coll], o.split)
			continue
		case opRemoveColl:
			if !ce {
				return fail(ErrNotFound, "remove collection")
			}
			empty, err := g.collEmpty(o.coll, objs)
			if err != nil {
				return err
			}
			if !empty {
				return fail(ErrNotEmpty, "remove collection")
			}
			colls[o.coll] = false
			continue
		}
		if !ce {
			return fail(fmt.Errorf("collection: %w", ErrNotFound), "object op")
		}
		if err := o.fenced(append(slices.Clip(g.fenceList(o.coll)), splits[o.coll]...)); err != nil {
			return fail(err, "object op")
		}
		// Only operations on existing objects look the object up;
		// writes create it, so a write transaction costs no lookup.
		mustExist := func(what string) error {
			oe, err := objExists(o.coll, o.oid)
			if err != nil {
				return err
			}
			if !oe {
				return fail(ErrNotFound, what)
			}
			return nil
		}
		switch o.code {
		case opTouch, opWrite, opZero, opTruncate, opSetAttr, opOmapSet:
			objs[objKey(o.coll, o.oid)] = true
		case opRemove:
			if err := mustExist("remove"); err != nil {
				return err
			}
			objs[objKey(o.coll, o.oid)] = false
		case opRmAttr, opOmapRm, opOmapClear:
			if err := mustExist("update"); err != nil {
				return err
			}
		case opClone, opStash:
			if err := mustExist("clone source"); err != nil {
				return err
			}
			objs[objKey(o.coll, o.oid2)] = true
		}
		n, err := g.blocksNeeded(o)
		if err != nil {
			return err
		}
		blocks += n
	}
	if blocks > g.s.alloc.free() {
		return fmt.Errorf("objectstore: transaction may need %d blocks, %d free: %w", blocks, g.s.alloc.free(), ErrNoSpace)
	}
	return nil
}

// collEmpty reports whether a collection holds no objects, given this
// transaction's own creations and removals.
func (g *group) collEmpty(c Coll, objs map[string]bool) (bool, error) {
	prefix := collPrefix(pOnode, c)
	for k, live := range objs {
		if live && bytes.HasPrefix([]byte(k), prefix) {
			return false, nil
		}
	}
	it, err := g.b.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return false, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if live, ok := objs[string(it.Key())]; !ok || live {
			return false, nil
		}
	}
	return true, nil
}

func blocksSpanned(off, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return (off+n+BlockSize-1)/BlockSize - off/BlockSize
}

// blocksNeeded bounds the new blocks an operation may allocate, from the
// operation alone where it can (no lookup): a write that ends within the
// inline limit spans at most its own blocks (an inline object stays
// inline); past it, an inline object may also move to the device whole.
func (g *group) blocksNeeded(o *op) (uint64, error) {
	inlineMax := uint64(g.s.sb.InlineMax)
	ceilBlocks := func(n uint64) uint64 { return (n + BlockSize - 1) / BlockSize }
	switch o.code {
	case opWrite:
		end := o.off + o.n
		if end <= inlineMax {
			return blocksSpanned(o.off, o.n), nil
		}
		return blocksSpanned(o.off, o.n) + ceilBlocks(end), nil
	case opZero:
		return 2 + ceilBlocks(max(inlineMax, o.off+o.n)), nil
	case opTruncate:
		return 1 + ceilBlocks(inlineMax), nil
	case opClone, opStash:
		// a clone shares the source's blocks (refs.go); an inline source's
		// bytes stay inline
		return 0, nil
	}
	return 0, nil
}

// readOnode loads an onode through r (the DB or a batch).
func (s *BlockStore) readOnode(r pebble.Reader, c Coll, oid string) (*onode, error) {
	v, closer, err := r.Get(onodeKey(c, oid))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("%s/%s: %w", c, oid, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return decodeOnode(v)
}

// SetCacheSizes resizes the data cache to data bytes and the onode cache
// to onodes bytes while the store runs (an OSD's osd_memory_target
// changed), evicting the least recently used entries beyond them. A store
// opened without a data cache (DataCacheSize < 0, or too small for one)
// stays without; the metadata store's block cache keeps the size it was
// opened with.
func (s *BlockStore) SetCacheSizes(data int64, onodes int) {
	s.dcache.resize(data)
	s.onodes.resize(onodes)
}

// CacheBytes is what the data cache and (by estimate) the onode cache
// hold now, in bytes.
func (s *BlockStore) CacheBytes() (data int64, onodes int) {
	return s.dcache.bytes(), s.onodes.held()
}

// maxOpenFilesFor is the metadata store's file cache for a process
// allowed limit open files: half of them (the rest are the OSD's sockets
// and devices), at least Pebble's default of 1,000 and at most 131,072.
// Go raises the soft limit to the hard one at start; Shoal's systemd unit
// for OSDs sets LimitNOFILE=1048576, as Ceph's does.
func maxOpenFilesFor(limit uint64) int {
	return int(min(max(limit/2, 1000), 1<<17))
}

// metaFormat is the metadata store's on-disk format: Pebble's first with
// value separation. Pebble moves a store made by an older Shoal to it
// when opened (Options.FormatMajorVersion); Shoal has always used a Pebble
// that reads it.
const metaFormat = pebble.FormatValueSeparation

// separateValues keeps large values — onodes with inline data, the
// bulk of an OSD of small objects — out of the LSM's sstables, in
// Pebble's blob files (WiscKey's key–value separation: Lu et al., FAST
// '16): a flush writes them there, and compactions carry short handles
// instead of the values, rewriting values only when an sstable would
// refer to more than 100 blob files, or to reclaim space once a fifth of
// all the blob files' values are dead (overwritten or removed objects;
// files at least 5 min old). An onode is read by a point lookup, which
// reads one blob file whatever the depth (the depth bounds the blob
// files a scan of values touches), so the depth is ten times Pebble's
// tool's: with 10, filling one store with a million new 4 KiB
// objects took 1.34 times as long and left 1.1 GB of its 5.2 GB of blob
// files dead (values copied by compactions; with 100: 4.1 GB, none dead;
// docs/perf-log/scale-2026-11-30.md). BlueStore gets the same by keeping only
// metadata in RocksDB. Values below valueSeparationMin (onodes without
// inline data, PG log entries, omap values, allocation bitmaps) stay in
// the sstables; values already in an upgraded store's sstables stay there
// until a compaction of tables that refer to no blob file moves them.
func separateValues(o *pebble.Options) {
	o.FormatMajorVersion = metaFormat
	o.Experimental.EnableColumnarBlocks = func() bool { return true }
	o.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           valueSeparationMin,
			MaxBlobReferenceDepth: 100,
			RewriteMinimumAge:     5 * time.Minute,
			TargetGarbageRatio:    0.2,
		}
	}
}

// valueSeparationMin is the smallest value, in bytes, kept in a blob
// file: above the allocation bitmap's 512-byte regions, which are
// rewritten on every allocation (Pebble's command-line tool uses 512,
// CockroachDB 256).
const valueSeparationMin = 1024
