package rbd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/cls"
	clsrbd "github.com/shoal-project/shoal/cls/rbd"
	"github.com/shoal-project/shoal/osdop"
)

// The exclusive lock (feature exclusive-lock), as librbd's
// (src/librbd/ExclusiveLock.cc, ManagedLock.cc): one client at a time
// writes an image's data. The lock is the header's advisory lock
// LockName, taken exclusively under the cookie "auto <watch cookie>", so
// that anyone can tell from the header's watchers whether its holder is
// alive. A client takes it before its first write:
//
//   - free: it is taken;
//   - held by a live client (its watch is among the header's watchers):
//     that client is asked, by a notify on the header (RequestLock), to
//     release it; the holder waits for its writes in flight, releases,
//     and only then acknowledges, and the asker tries again;
//   - held by a dead client (no such watch: it was killed, and its watch
//     expired after osd_client_watch_timeout): the holder is blocklisted
//     — no OSD takes another write from it — and its lock broken;
//   - held under a cookie that is not an "auto" one (rbd lock add):
//     ErrBusy, as librbd refuses to break an administrator's lock.
//
// Reads never need the lock. The holder keeps it until asked, until it
// closes the image, or until the feature is disabled.

// LockName is the name of the header's lock: the exclusive lock and rbd
// lock add's advisory locks (librbd's RBD_LOCK_NAME).
const LockName = "rbd_lock"

// Notify payloads on an image's header.
const (
	notifyHeaderUpdate = "header_update" // reload the header
	notifyRequestLock  = "request_lock"  // the exclusive lock's holder: release it
)

// lockCookiePrefix starts the cookie of an exclusive lock (librbd's
// "auto <handle>").
const lockCookiePrefix = "auto "

// exclusiveLock is an open image's side of the lock.
type exclusiveLock struct {
	// io is held shared by every write for as long as it runs under the
	// lock, and exclusively by a release, which so waits for them.
	io    sync.RWMutex
	owned atomic.Bool
	// acquiring serializes acquisitions.
	acquiring sync.Mutex
	// yielded is when this client last released the lock because another
	// asked for it (unix nanoseconds): it waits yieldGrace before taking
	// it again, so that the asker, not this client, gets it.
	yielded atomic.Int64
}

// yieldGrace is how long a client that gave the lock up on request lets
// the asker take it before it competes again: without it two writers
// taking turns are not fair (the one that released takes it back while
// the asker is still being told).
const yieldGrace = 20 * time.Millisecond

// lockReleased is a holder's answer to a request_lock notify when it
// released the lock.
const lockReleased = "released"

func (img *Image) lockCookie() string {
	return lockCookiePrefix + strconv.FormatUint(img.watch.Cookie(), 10)
}

func (img *Image) hasFeature(f uint64) bool {
	img.mu.RLock()
	defer img.mu.RUnlock()
	return img.h.Features&f != 0
}

// startWrite returns once this client may write the image's data — it
// holds the exclusive lock, taken now if need be, or the image does not
// have the feature — and the function that ends the write.
func (img *Image) startWrite(ctx context.Context) (done func(), err error) {
	for {
		img.lk.io.RLock()
		if img.lk.owned.Load() || !img.hasFeature(clsrbd.FeatureExclusiveLock) {
			return img.lk.io.RUnlock, nil
		}
		img.lk.io.RUnlock()
		if err := img.acquireLock(ctx); err != nil {
			return nil, err
		}
	}
}

// acquireLock takes the exclusive lock, asking a live holder to release
// it and breaking a dead one's (see above).
func (img *Image) acquireLock(ctx context.Context) error {
	if img.watch == nil { // its cookie is its watch's
		return img.checkWritable()
	}
	img.lk.acquiring.Lock()
	defer img.lk.acquiring.Unlock()
	hdr, cookie := img.headerOID(), img.lockCookie()
	fail := func(err error) error {
		return fmt.Errorf("rbd: image %s/%s: exclusive lock: %w", img.pool.Name(), img.name, err)
	}
	sleep := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-t.C:
			return nil
		}
	}
	if d := time.Duration(img.lk.yielded.Load() + int64(yieldGrace) - time.Now().UnixNano()); d > 0 {
		if err := sleep(d); err != nil {
			return err
		}
	}
	for wait := time.Millisecond; !img.lk.owned.Load(); wait = min(2*wait, 500*time.Millisecond) {
		err := img.pool.LockExclusive(ctx, hdr, LockName, cookie, "rbd exclusive lock", 0, false)
		if err == nil || errors.Is(err, client.ErrExists) { // ErrExists: it is ours already
			// the header as the last holder left it (its snapshots, its
			// features) before this client writes
			if err := img.refresh(ctx); err != nil {
				img.pool.Unlock(context.WithoutCancel(ctx), hdr, LockName, cookie)
				return fail(err)
			}
			img.lk.owned.Store(true)
			return nil
		}
		if !errors.Is(err, osdop.ErrBusy) {
			return fail(err)
		}
		info, err := img.pool.LockInfo(ctx, hdr, LockName)
		if errors.Is(err, client.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return fail(err)
		}
		if len(info.Lockers) == 0 {
			continue
		}
		holder := info.Lockers[0]
		if !strings.HasPrefix(holder.Cookie, lockCookiePrefix) {
			return fail(fmt.Errorf("%w: locked by %s under %q (rbd lock add; shoal rbd lock rm to break it)", ErrBusy, holder.Name, holder.Cookie))
		}
		alive, err := img.isWatching(ctx, holder.Name, strings.TrimPrefix(holder.Cookie, lockCookiePrefix))
		if err != nil {
			return fail(err)
		}
		if !alive {
			if err := img.pool.Conn().BlocklistAdd(ctx, holder.Name, 0); err != nil {
				return fail(err)
			}
			if err := img.pool.BreakLock(ctx, hdr, LockName, holder.Name, holder.Cookie); err != nil && !errors.Is(err, client.ErrNotFound) {
				return fail(err)
			}
			continue
		}
		// the holder releases before it acknowledges: then try again at
		// once; if it did not (it no longer held it, or did not answer),
		// after a while
		res, err := img.pool.Notify(ctx, hdr, []byte(notifyRequestLock), 5*time.Second)
		if err != nil && !errors.Is(err, client.ErrTimeout) {
			return fail(err)
		}
		if res != nil && slices.ContainsFunc(res.Acks, func(a osdop.NotifyAckInfo) bool { return string(a.Reply) == lockReleased }) {
			wait = time.Millisecond / 2
			continue
		}
		if err := sleep(wait); err != nil {
			return err
		}
	}
	return nil
}

// isWatching reports whether instance watches the header under cookie.
func (img *Image) isWatching(ctx context.Context, instance, cookie string) (bool, error) {
	ws, err := img.pool.ListWatchers(ctx, img.headerOID())
	if err != nil {
		return false, err
	}
	for _, w := range ws {
		if w.Instance == instance && strconv.FormatUint(w.Cookie, 10) == cookie {
			return true, nil
		}
	}
	return false, nil
}

// releaseLock gives the exclusive lock up, once the writes running
// under it are done; it reports whether it did. If the unlock fails the
// client still holds the lock (and is asked again).
func (img *Image) releaseLock(ctx context.Context) (bool, error) {
	img.lk.io.Lock()
	defer img.lk.io.Unlock()
	if !img.lk.owned.Load() {
		return false, nil
	}
	// its own time: the wait for the writes may have used the caller's
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := img.pool.Unlock(ctx, img.headerOID(), LockName, img.lockCookie())
	if err != nil && !errors.Is(err, client.ErrNotFound) { // ENOENT: broken meanwhile
		return false, fmt.Errorf("rbd: image %s/%s: release the exclusive lock: %w", img.pool.Name(), img.name, err)
	}
	img.lk.owned.Store(false)
	img.dropMap()
	return true, nil
}

// lostWatch is told that the header's watch ended (this client was
// blocklisted, or the watch could not be registered again): it no
// longer holds the lock, nor trusts its map.
func (img *Image) lostWatch(error) {
	img.lk.owned.Store(false)
	img.dropMap()
}

// LockOwner reports whether this client holds the image's exclusive
// lock.
func (img *Image) LockOwner() bool { return img.lk.owned.Load() }

// UpdateFeatures enables or disables features among
// clsrbd.FeaturesMutable (rbd feature enable|disable): the header
// changes atomically, refusing a set whose features lack what they
// depend on (ErrInvalid), and every client with the image open reloads
// it — a lock holder whose image no longer has exclusive-lock releases
// the lock.
func (img *Image) UpdateFeatures(ctx context.Context, features uint64, enable bool) error {
	if img.snap != nil {
		return fmt.Errorf("rbd: image %s/%s@%s: %w", img.pool.Name(), img.name, img.snap.Name, ErrReadOnly)
	}
	if !enable && features&clsrbd.FeatureObjectMap != 0 {
		features |= clsrbd.FeatureFastDiff // it goes with the map
	}
	in := clsrbd.FeaturesInput{Mask: features}
	if enable {
		in.Features = features
	}
	set := func() error {
		_, err := exec(ctx, img.pool, img.headerOID(), "set_features", in)
		return err
	}
	if enable && features&clsrbd.FeatureExclusiveLock != 0 && features&clsrbd.FeatureObjectMap != 0 && !img.hasFeature(clsrbd.FeatureExclusiveLock) {
		// the lock first, so that the map is built under it
		if err := img.UpdateFeatures(ctx, clsrbd.FeatureExclusiveLock, true); err != nil {
			return err
		}
		features &^= clsrbd.FeatureExclusiveLock
		in = clsrbd.FeaturesInput{Mask: features, Features: features}
	}
	var err error
	switch had := img.hasFeature(clsrbd.FeatureObjectMap); {
	case enable && features&clsrbd.FeatureObjectMap != 0 && !had:
		// the lock holder builds the map from the objects, then the
		// feature is on: no write runs between (snapshots' maps stay
		// missing: a diff from them asks the OSDs)
		if err = clsrbd.CheckFeatures(img.Info().Features | features); err == nil {
			err = img.exclusively(ctx, func() error {
				if err := img.buildMap(ctx); err != nil {
					return err
				}
				return set()
			})
		}
	case !enable && features&clsrbd.FeatureObjectMap != 0 && had:
		err = img.exclusively(ctx, func() error {
			if err := set(); err != nil {
				return err
			}
			img.dropMap()
			for _, s := range append(img.Snapshots(), clsrbd.Snapshot{}) {
				if err := img.pool.Remove(ctx, img.mapOID(s.ID)); err != nil && !errors.Is(err, client.ErrNotFound) {
					return err
				}
			}
			return nil
		})
	default:
		err = set()
	}
	if err != nil {
		if errors.Is(err, cls.ErrInvalid) {
			err = fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return fmt.Errorf("rbd: image %s/%s: features: %w", img.pool.Name(), img.name, err)
	}
	return img.notifyChange(ctx)
}
