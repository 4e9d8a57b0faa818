package osd

// Watch/notify on the primary (Ceph's Watch and Notify in
// PrimaryLogPG): the watchers of an object are kept with it (a write,
// opexec's AttrWatchers), so every copy knows them; the primary holds
// each watch's live state — when it was last seen, the notifications
// queued for it — and the notifies waiting for acknowledgements. A
// watcher long-polls the primary (osdop.MsgWatchPoll): a poll returns
// queued notifications at once, or none after a while, and proves the
// watcher alive. A watch not polled for its timeout
// (osd_client_watch_timeout unless the watch set its own) expires: it is
// removed from the object through the write path, and notifies waiting
// for it count it as timed out. A blocklisted client's watches go at
// once. A new primary learns the watches from the object when a watcher
// polls it or a notify needs them; a watcher whose primary changed polls
// the new one (the old one answers ErrRetry), which is how its watch is
// re-established.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// pgWatch is a PG primary's live watch state (guarded by pg.mu).
type pgWatch struct {
	watchers map[watchKey]*liveWatch
	notifies map[uint64]*pendingNotify
}

type watchKey struct {
	oid string
	id  osdop.WatcherID
}

// liveWatch is one watch's state on the primary.
type liveWatch struct {
	timeout  time.Duration
	lastSeen time.Time
	polls    int                // polls waiting now
	queue    []osdop.WatchEvent // notifications not yet delivered
	wake     chan struct{}      // closed (and replaced) when the queue grows or the watch goes
	gone     bool               // unwatched, expired or dropped
}

// pendingNotify is a notify waiting for acknowledgements.
type pendingNotify struct {
	waiting  map[osdop.WatcherID]bool
	acks     []osdop.NotifyAckInfo
	timeouts []osdop.WatcherID
	done     chan struct{} // closed once nothing is waited for
}

// answer takes watcher id off the notify's list — with its reply if
// ack, as timed out otherwise — and ends the wait once no one is left
// (pg.mu held). A watcher not waited for is ignored.
func (n *pendingNotify) answer(id osdop.WatcherID, ack bool, reply []byte) {
	if !n.waiting[id] {
		return
	}
	delete(n.waiting, id)
	if ack {
		n.acks = append(n.acks, osdop.NotifyAckInfo{WatcherID: id, Reply: reply})
	} else {
		n.timeouts = append(n.timeouts, id)
	}
	if len(n.waiting) == 0 {
		close(n.done)
	}
}

// watchPollMax is the longest a poll waits with nothing to deliver; a
// watch's timeout is at least twice it, so that a watcher that polls
// again at once never expires.
const watchPollMax = 5 * time.Second

// init makes the maps on first use (pg.mu held).
func (pw *pgWatch) init() {
	if pw.watchers == nil {
		pw.watchers = map[watchKey]*liveWatch{}
		pw.notifies = map[uint64]*pendingNotify{}
	}
}

// maxNotifyTimeout bounds how long a notify may wait for its watchers.
const maxNotifyTimeout = time.Hour

func (w *liveWatch) signal() {
	close(w.wake)
	w.wake = make(chan struct{})
}

// watchTimeout is a watch's timeout: its own (seconds), else
// osd_client_watch_timeout.
func (d *OSD) watchTimeout(secs uint32) time.Duration {
	if secs == 0 {
		return time.Duration(d.conf().Seconds("osd_client_watch_timeout") * float64(time.Second))
	}
	return time.Duration(secs) * time.Second
}

// liveWatchLocked returns the live state of watch id on oid, creating it
// from the object's record (info) if the primary has none (pg.mu held).
func (pg *PG) liveWatchLocked(oid string, info osdop.WatcherInfo, now time.Time) *liveWatch {
	pg.watch.init()
	k := watchKey{oid, info.WatcherID}
	w := pg.watch.watchers[k]
	if w == nil {
		w = &liveWatch{timeout: pg.osd.watchTimeout(info.Timeout), lastSeen: now, wake: make(chan struct{})}
		pg.watch.watchers[k] = w
	}
	return w
}

// dropWatchLocked forgets watch k: its polls end with ErrNotConnected and
// the notifies waiting for it count it as timed out (pg.mu held).
func (pg *PG) dropWatchLocked(k watchKey) {
	w := pg.watch.watchers[k]
	if w == nil {
		return
	}
	delete(pg.watch.watchers, k)
	w.gone = true
	w.signal()
	for _, n := range pg.watch.notifies {
		n.answer(k.id, false, nil)
	}
}

// watchWritten updates the live state after a Watch or Unwatch op of the
// request was committed; a request without one (nearly every write)
// costs a pass over its ops, not the PG's lock.
func (pg *PG) watchWritten(req *osdop.Request) {
	if !slices.ContainsFunc(req.Ops, func(op osdop.Op) bool { return op.Code == osdop.Watch || op.Code == osdop.Unwatch }) {
		return
	}
	instance := osdmap.InstanceName(req.From, req.Client)
	pg.mu.Lock()
	defer pg.mu.Unlock()
	for _, op := range req.Ops {
		id := osdop.WatcherID{Instance: instance, Cookie: op.Ver}
		switch op.Code {
		case osdop.Watch:
			w := pg.liveWatchLocked(req.OID, osdop.WatcherInfo{WatcherID: id, Timeout: uint32(op.Len)}, time.Now())
			w.timeout, w.lastSeen = pg.osd.watchTimeout(uint32(op.Len)), time.Now()
		case osdop.Unwatch:
			pg.dropWatchLocked(watchKey{req.OID, id})
		}
	}
}

// handleWatchPoll serves a watcher's poll: the notifications queued for
// its watch, at once or when one arrives, or none after a while.
func (d *OSD) handleWatchPoll(ctx context.Context, from, fromIP string, poll *osdop.WatchPoll) ([]byte, error) {
	m, _ := d.curMap()
	if m.Blocklisted(from, poll.Client, fromIP, time.Now()) {
		return nil, fmt.Errorf("%w: %s", osdop.ErrBlocklisted, osdmap.InstanceName(from, poll.Client))
	}
	pgid, err := m.ObjectToPG(poll.Pool, poll.OID, "")
	if err != nil || pgid.Seed != poll.Seed {
		return nil, fmt.Errorf("%w: object %s is not in pg %d.%x", osdop.ErrRetry, poll.OID, poll.Pool, poll.Seed)
	}
	pg := d.getPG(pgid)
	if pg == nil {
		return nil, fmt.Errorf("%w: osd.%d does not serve pg %s", osdop.ErrRetry, d.id, pgid)
	}
	if err := pg.waitActive(ctx); err != nil {
		return nil, err
	}
	if err := d.misdirected(m, pgid, poll.OID); err != nil {
		return nil, err
	}
	id := osdop.WatcherID{Instance: osdmap.InstanceName(from, poll.Client), Cookie: poll.Cookie}
	now := time.Now()
	pg.mu.Lock()
	w := pg.watch.watchers[watchKey{poll.OID, id}]
	pg.mu.Unlock()
	if w == nil { // not live here: a new primary learns it from the object
		ws, err := opexec.Watchers(d.store, pg.coll, poll.OID)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(ws, func(w osdop.WatcherInfo) bool { return w.WatcherID == id })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s on %s", osdop.ErrNotConnected, id, poll.OID)
		}
		pg.mu.Lock()
		w = pg.liveWatchLocked(poll.OID, ws[i], now)
		pg.mu.Unlock()
	}
	pg.mu.Lock()
	w.polls++
	w.lastSeen = now
	timer := time.NewTimer(min(watchPollMax, w.timeout/2))
	defer timer.Stop()
	for len(w.queue) == 0 && !w.gone {
		wake, over := w.wake, false
		pg.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			over = true
		case <-ctx.Done():
			over = true
		}
		pg.mu.Lock()
		if over {
			break
		}
	}
	w.polls--
	w.lastSeen = time.Now()
	evs, gone := w.queue, w.gone
	w.queue = nil
	pg.mu.Unlock()
	if gone && len(evs) == 0 {
		return nil, fmt.Errorf("%w: %s on %s", osdop.ErrNotConnected, id, poll.OID)
	}
	return osdop.EncodeWatchEvents(evs), nil
}

// watchNotify serves a Notify op: the payload goes to every watcher of the
// object, and the reply lists who acknowledged it (with their replies)
// and who did not within the notify's timeout.
func (pg *PG) watchNotify(ctx context.Context, req *osdop.Request) (*osdop.Reply, error) {
	if _, err := pg.waitReadable(ctx); err != nil {
		return nil, err
	}
	op := req.Ops[0]
	o, err := pg.loadObject(req.OID)
	if err != nil {
		return nil, err
	}
	if !o.Exists {
		return nil, fmt.Errorf("%w: notify on %s", osdop.ErrNotFound, req.OID)
	}
	ws, err := opexec.Watchers(pg.osd.store, pg.coll, req.OID)
	if err != nil {
		return nil, err
	}
	timeout := 30 * time.Second
	if op.Len > 0 {
		timeout = time.Duration(min(op.Len, uint64(maxNotifyTimeout/time.Millisecond))) * time.Millisecond
	}
	d := pg.osd
	m, _ := d.curMap()
	now := time.Now()
	id := d.notifyID.Add(1)
	n := &pendingNotify{waiting: map[osdop.WatcherID]bool{}, done: make(chan struct{})}
	// the payload aliases the request's receive buffer, which is reused
	// once the notify is answered: a watcher that polls later needs its own
	ev := osdop.WatchEvent{NotifyID: id, Notifier: osdmap.InstanceName(req.From, req.Client), Payload: bytes.Clone(op.Data)}
	pg.mu.Lock()
	pg.watch.init()
	for _, info := range ws {
		if m.InstanceBlocklisted(info.Instance, now) {
			continue // its watch goes with the next expiry pass
		}
		w := pg.liveWatchLocked(req.OID, info, now)
		w.queue = append(w.queue, ev)
		w.signal()
		n.waiting[info.WatcherID] = true
	}
	if len(n.waiting) == 0 {
		close(n.done)
	}
	pg.watch.notifies[id] = n
	pg.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-n.done:
	case <-t.C:
	case <-ctx.Done():
	}
	pg.mu.Lock()
	delete(pg.watch.notifies, id)
	for w := range n.waiting {
		n.timeouts = append(n.timeouts, w)
	}
	res := osdop.NotifyResult{Acks: n.acks, Timeouts: n.timeouts}
	pg.mu.Unlock()
	if res.Acks == nil {
		res.Acks = []osdop.NotifyAckInfo{}
	}
	if res.Timeouts == nil {
		res.Timeouts = []osdop.WatcherID{}
	}
	b, _ := json.Marshal(res)
	return &osdop.Reply{Results: []osdop.Result{{Data: b}}}, nil
}

// notifyAck serves a NotifyAck op: watch Off of the sender answers
// notify Ver with Data.
func (pg *PG) notifyAck(req *osdop.Request) (*osdop.Reply, error) {
	op := req.Ops[0]
	id := osdop.WatcherID{Instance: osdmap.InstanceName(req.From, req.Client), Cookie: op.Off}
	pg.mu.Lock()
	defer pg.mu.Unlock()
	n := pg.watch.notifies[op.Ver]
	if n == nil {
		return nil, fmt.Errorf("%w: notify %d is over (or on another primary)", osdop.ErrNotFound, op.Ver)
	}
	n.answer(id, true, bytes.Clone(op.Data)) // the reply outlives the request's buffer
	return &osdop.Reply{Results: make([]osdop.Result, len(req.Ops))}, nil
}

// watchLoop expires watches not polled for their timeout, and those of
// blocklisted clients, until the OSD stops.
func (d *OSD) watchLoop() {
	defer d.wg.Done()
	periodic.Every(d.ctx, d.clock, time.Second, nil, func() {
		m, _ := d.curMap()
		now := time.Now()
		pgs := d.pgList()
		for _, pg := range pgs {
			var expired []watchKey
			pg.mu.Lock()
			primary := pg.ps.Interval.Primary == d.id && pg.ps.State.IsActive()
			for k, w := range pg.watch.watchers {
				switch {
				case !primary: // another primary serves the watch now
					pg.dropWatchLocked(k)
				case m.InstanceBlocklisted(k.id.Instance, now) || (w.polls == 0 && now.Sub(w.lastSeen) > w.timeout):
					pg.dropWatchLocked(k)
					expired = append(expired, k)
				}
			}
			pool := pg.pool
			pg.mu.Unlock()
			for _, k := range expired {
				d.log.Info("watch expired", "pg", pg.id, "object", k.oid, "watcher", k.id.String())
				be, err := pg.backend(d.ctx, pool)
				if err != nil {
					break
				}
				req := &osdop.Request{Pool: pool.ID, OID: k.oid, Ops: []osdop.Op{{Code: osdop.WatchExpire, Name: k.id.Instance, Ver: k.id.Cookie}}}
				if _, err := pg.write(d.ctx, req, be); err != nil {
					d.log.Debug("watch expiry not recorded", "pg", pg.id, "object", k.oid, "err", err)
				}
			}
		}
	})
}
