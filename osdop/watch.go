package osdop

import (
	"encoding/json"
	"fmt"

	"github.com/shoal-project/shoal/internal/wire"
)

// Watch/notify (Ceph's watch2/notify2): a client watches an object at its
// PG's primary; a notify on the object delivers a payload to every
// watcher and returns their replies and the watchers that did not answer
// in time. The OSDs keep the watchers with the object (so a new primary
// knows them); a watcher receives notifications by long-polling its
// primary (MsgWatchPoll) — each poll also proves it alive — and answers
// each with a NotifyAck op.

// MsgWatchPoll is a watcher's poll of its object's primary: WatchPoll →
// WatchEvents, answered when notifications are queued for the watch or
// after a while with none. ENOTCONN (ErrNotConnected): the primary has
// no such watch (it expired, or the object went): watch again.
const MsgWatchPoll uint16 = 112

// WatcherID names a watch: the client instance (osdmap.InstanceName)
// and its cookie.
type WatcherID struct {
	Instance string `json:"instance"`
	Cookie   uint64 `json:"cookie"`
}

func (w WatcherID) String() string { return fmt.Sprintf("%s cookie %d", w.Instance, w.Cookie) }

// WatcherInfo is a watch as the object keeps it (ListWatchers).
type WatcherInfo struct {
	WatcherID
	Timeout uint32 `json:"timeout_seconds"`
}

// NotifyResult is a notify's outcome: the watchers that acknowledged it,
// with their replies, and those that did not in time.
type NotifyResult struct {
	Acks     []NotifyAckInfo `json:"acks"`
	Timeouts []WatcherID     `json:"timeouts"`
}

// NotifyAckInfo is one watcher's acknowledgement.
type NotifyAckInfo struct {
	WatcherID
	Reply []byte `json:"reply,omitempty"`
}

// DecodeNotifyResult reads a Notify op's result data.
func DecodeNotifyResult(b []byte) (*NotifyResult, error) {
	var r NotifyResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("notify result: %w", err)
	}
	return &r, nil
}

// WatchPoll is a MsgWatchPoll request: watch Cookie of the sending
// client instance (nonce Client) on object OID of pool Pool, in PG Seed.
type WatchPoll struct {
	Pool   int64
	Seed   uint32
	OID    string
	Cookie uint64
	Client uint64
}

// Encode is the wire form.
func (r *WatchPoll) Encode() []byte {
	e := wire.NewEncoder(nil)
	e.I64(r.Pool)
	e.U32(r.Seed)
	e.String(r.OID)
	e.U64(r.Cookie)
	e.U64(r.Client)
	return e.Bytes()
}

// DecodeWatchPoll reads WatchPoll.Encode's output.
func DecodeWatchPoll(b []byte) (*WatchPoll, error) {
	d := wire.NewDecoder(b)
	r := &WatchPoll{Pool: d.I64(), Seed: d.U32(), OID: d.String(), Cookie: d.U64(), Client: d.U64()}
	return r, d.Err()
}

// WatchEvent is a notification delivered to a watcher.
type WatchEvent struct {
	NotifyID uint64
	Notifier string // the notifying client instance
	Payload  []byte
}

// EncodeWatchEvents is the reply to a MsgWatchPoll.
func EncodeWatchEvents(evs []WatchEvent) []byte {
	e := wire.NewEncoder(nil)
	e.U32(uint32(len(evs)))
	for _, ev := range evs {
		e.U64(ev.NotifyID)
		e.String(ev.Notifier)
		e.Blob(ev.Payload)
	}
	return e.Bytes()
}

// DecodeWatchEvents reads EncodeWatchEvents's output.
func DecodeWatchEvents(b []byte) ([]WatchEvent, error) {
	d := wire.NewDecoder(b)
	var evs []WatchEvent
	for n := d.Count(16); n > 0 && d.Err() == nil; n-- {
		evs = append(evs, WatchEvent{NotifyID: d.U64(), Notifier: d.String(), Payload: d.Blob()})
	}
	return evs, d.Err()
}
