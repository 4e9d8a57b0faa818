package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdop"
)

// Watch/notify, as librados' watch2 and notify2: a Watch receives every
// notify sent to its object and answers it; Notify sends a payload to
// every watcher and returns their answers and who did not answer in
// time. The watch lives at the object's primary, which this library
// long-polls for notifications (osdop.MsgWatchPoll); when the primary
// changes it polls the new one, and if the watch was lost (it expired
// while the client could not reach the cluster) it watches again.

// Notification is a notify delivered to a watch.
type Notification struct {
	ID       uint64 // the notify's id at the primary
	Notifier string // the notifying client instance (Conn.Instance)
	Payload  []byte
}

// Watch is a registered watch; Close ends it.
type Watch struct {
	p       *Pool
	oid     string
	cookie  uint64
	timeout time.Duration
	handle  func(Notification) []byte
	onError func(error)
	cancel  context.CancelFunc
	done    chan struct{}
	// Rewatched counts the times the watch was lost and registered again.
	Rewatched atomic.Int64
}

var watchCookies atomic.Uint64

// Watch watches object oid (which must exist): handle is called with
// each notification, one at a time, and what it returns is the
// acknowledgement's reply. timeout is how long the primary keeps the
// watch without hearing from this client (0: osd_client_watch_timeout);
// onError, if not nil, hears of a lost watch that could not be
// registered again (e.g. the object was removed) and of a blocklisted
// client (the watch then ends).
func (p *Pool) Watch(ctx context.Context, oid string, timeout time.Duration, handle func(Notification) []byte, onError func(error)) (*Watch, error) {
	w := &Watch{p: p.AtSnap(0), oid: oid, cookie: watchCookies.Add(1), timeout: timeout, handle: handle, onError: onError, done: make(chan struct{})}
	if err := w.register(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(p.c.ctx)
	w.cancel = cancel
	go w.run(wctx)
	return w, nil
}

// Cookie is the watch's cookie (ListWatchers shows it).
func (w *Watch) Cookie() uint64 { return w.cookie }

func (w *Watch) register(ctx context.Context) error {
	_, err := w.p.do(ctx, w.oid, osdop.Op{Code: osdop.Watch, Ver: w.cookie, Len: uint64(w.timeout / time.Second)})
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.oid, err)
	}
	return nil
}

// Close stops the watch and unregisters it.
func (w *Watch) Close(ctx context.Context) error {
	w.cancel()
	<-w.done
	_, err := w.p.do(ctx, w.oid, osdop.Op{Code: osdop.Unwatch, Ver: w.cookie})
	if err != nil && !errors.Is(err, osdop.ErrNotFound) {
		return fmt.Errorf("unwatch %s: %w", w.oid, err)
	}
	return nil
}

func (w *Watch) report(err error) {
	if w.onError != nil {
		w.onError(err)
	}
}

// run polls the object's primary for notifications until ctx ends.
func (w *Watch) run(ctx context.Context) {
	defer close(w.done)
	c := w.p.c
	for ctx.Err() == nil {
		m := c.Map()
		pgid, err := m.ObjectToPG(w.p.id, w.oid, "")
		if err != nil {
			w.report(fmt.Errorf("watch %s: %w", w.oid, err))
			return
		}
		mp, err := m.MapPG(pgid)
		if err != nil || mp.ActingPrimary < 0 {
			c.waitNewer(ctx, m.Epoch, 500*time.Millisecond)
			continue
		}
		poll := &osdop.WatchPoll{Pool: w.p.id, Seed: pgid.Seed, OID: w.oid, Cookie: w.cookie, Client: c.nonce}
		rep, err := c.osd(m.OSDs[mp.ActingPrimary].Addr).Call(ctx, osdop.MsgWatchPoll, poll.Encode())
		if err != nil {
			var re *msgr.RemoteError
			switch {
			case ctx.Err() != nil:
				return
			case errors.As(err, &re) && syscall.Errno(re.Code) == syscall.ENOTCONN:
				if err := w.register(ctx); err != nil { // lost: watch again
					w.report(err)
					c.waitNewer(ctx, m.Epoch, time.Second)
				} else {
					w.Rewatched.Add(1)
				}
			case errors.As(err, &re) && syscall.Errno(re.Code) == syscall.ESHUTDOWN:
				w.report(fmt.Errorf("watch %s: %w", w.oid, osdop.ErrBlocklisted))
				return
			default: // another primary, or none reachable: a newer map
				c.waitNewer(ctx, m.Epoch, 500*time.Millisecond)
			}
			continue
		}
		evs, err := osdop.DecodeWatchEvents(rep.Payload)
		if err != nil {
			rep.Release()
			w.report(fmt.Errorf("watch %s: %w", w.oid, err))
			continue
		}
		for i := range evs {
			evs[i].Payload = append([]byte(nil), evs[i].Payload...)
		}
		rep.Release()
		for _, ev := range evs {
			reply := w.handle(Notification{ID: ev.NotifyID, Notifier: ev.Notifier, Payload: ev.Payload})
			// a notify that is over (or moved with its primary) has no
			// use for the acknowledgement: its error is not ours
			w.p.do(ctx, w.oid, osdop.Op{Code: osdop.NotifyAck, Ver: ev.NotifyID, Off: w.cookie, Data: reply})
		}
	}
}

// Notify sends payload to every watcher of oid and waits up to timeout
// (0: 30 s) for their acknowledgements: the result lists the watchers
// that answered, with their replies, and those that did not. ErrNotFound
// if the object does not exist.
func (p *Pool) Notify(ctx context.Context, oid string, payload []byte, timeout time.Duration) (*osdop.NotifyResult, error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	r, err := p.AtSnap(0).do(ctx, oid, osdop.Op{Code: osdop.Notify, Data: payload, Len: uint64(timeout / time.Millisecond)})
	if err != nil {
		return nil, err
	}
	return osdop.DecodeNotifyResult(r.Data)
}

// ListWatchers returns the object's watchers (librados' list_watchers).
func (p *Pool) ListWatchers(ctx context.Context, oid string) ([]osdop.WatcherInfo, error) {
	r, err := p.AtSnap(0).do(ctx, oid, osdop.Op{Code: osdop.ListWatchers})
	if err != nil {
		return nil, err
	}
	var ws []osdop.WatcherInfo
	if err := json.Unmarshal(r.Data, &ws); err != nil {
		return nil, fmt.Errorf("watchers of %s: %w", oid, err)
	}
	return ws, nil
}
