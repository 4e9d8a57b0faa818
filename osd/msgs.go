package osd

import (
	"fmt"
	"time"

	"github.com/shoal-project/shoal/internal/wire"
	"github.com/shoal-project/shoal/objectstore"
	"github.com/shoal-project/shoal/omap"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
)

// Messages between the OSDs of a PG.
const (
	msgRepOp           uint16 = 120 + iota // primary → replica: apply a write at a version
	msgPGQuery                             // primary → member: its info and log
	msgPull                                // primary → member: send an object whole
	msgPush                                // primary → member: install an object whole
	msgPGLog                               // primary → member: adopt the authoritative log
	msgPGList                              // primary → member: list every object (when logs do not overlap)
	msgPing                                // heartbeat
	msgECRead                              // primary → shard: read [Off, Off+Len) of an object's shard
	msgECRepair                            // primary → shard: rewrite a corrupt part of a shard (Obj.Data at Off)
	msgECRollback                          // primary → shard: undo writes after Prev
	msgScrubMap                            // primary → member: its scrub map of a chunk
	msgActivated                           // primary → member: the pg went active in this interval
	msgPurge                               // primary → former member: the pg is clean without you; delete your copy
	msgNotify                              // stray → primary: I hold a copy of the pg (Ceph's pg_notify)
	msgScrubReserve                        // primary → member: grant a scrub slot (osd_max_scrubs), or ErrBusy
	msgScrubRelease                        // primary → member: the scrub is over
	msgGetMap                              // OSD → OSD: your installed map (mapshare.go)
	msgRecoveryReserve                     // primary → member: grant a remote recovery slot (osd_max_backfills), or ErrBusy
	msgRecoveryRenew                       // primary → member: renew the grant, or ErrBusy if it was revoked
	msgRecoveryRelease                     // primary → member: the recovery is over
)

// peerMsg is every message between a PG's OSDs; each uses the fields it
// needs. Interval identifies the acting set the sender serves in: a member
// refuses messages from another interval, which fences a deposed primary.
type peerMsg struct {
	PG       osdmap.PGID
	Interval uint64
	Prev     Version
	Entry    LogEntry
	Info     Info
	Entries  []LogEntry
	OID      string
	Names    []string
	Obj      *objState
	DObjects int64 // change of the PG's object count by the write
	DBytes   int64
	Txn      *objectstore.Transaction
	Off, Len uint64 // shard range (msgECRead, msgECRepair)
	// RollForward (msgRepOp of an erasure-coded PG): every shard holds
	// the writes up to this seq; their rollback stashes can go.
	RollForward uint64
	// Intervals (a query's reply): the member's earlier acting sets that
	// may have accepted writes since the PG was last active on it.
	Intervals [][]int32
	// Missing: in a query's reply, the objects the member's copy lacks;
	// in msgPGLog, those it lacks in the history it adopts.
	Missing []string
	// From (msgNotify): the sending OSD.
	From int32
	// Leases (a query's reply): the read leases the member promised that
	// still run (lease.go).
	Leases []leaseClaim
	// Prio (msgRecoveryReserve): the PG's recovery priority (prioDegraded,
	// prioBackfill); Preempt: the member may revoke a lower one's grant.
	Prio    int
	Preempt bool
}

// objState is a whole object (or its absence) for catch-up.
type objState struct {
	Exists bool
	Data   []byte
	// DataVec, if not nil, is the data as parts instead of Data, for the
	// sender only (a shard read's reply references the store's read
	// buffers; the receiver gets Data).
	DataVec [][]byte
	Attrs   []omap.KV
	Omap    []omap.KV
	// Clones are a head's snapshot clones (its SnapSet's), whole; a
	// clone has none of its own.
	Clones []cloneState
}

// cloneState is clone ID of a head, whole.
type cloneState struct {
	ID  uint64
	Obj *objState
}

func (m *peerMsg) encode() []byte {
	size := 256
	if m.Obj != nil {
		size += len(m.Obj.Data) + wire.BlockAlign
	}
	if m.Txn != nil {
		size += m.Txn.EncodedLen()
	}
	e := wire.NewEncoder(make([]byte, 0, size))
	m.encodeTo(e)
	return e.Bytes()
}

// encodeVec is encode as parts to write with one vectored write: object
// data of at least minData bytes (a replicated write's, a recovery push's)
// is referenced, not copied (for msgr.Client.CallVec).
func (m *peerMsg) encodeVec(minData int) [][]byte {
	e := wire.NewVecEncoder(minData)
	m.encodeTo(e)
	return e.Parts()
}

// encodeTo writes m to e. Object data — of a transaction's writes or of a
// whole object — goes as aligned blobs, so that the receiver writes it to
// its device with O_DIRECT from the message's buffer.
func (m *peerMsg) encodeTo(e *wire.Encoder) {
	e.I64(m.PG.Pool)
	e.U32(m.PG.Seed)
	e.U64(m.Interval)
	e.U32(m.Prev.Epoch)
	e.U64(m.Prev.Seq)
	m.Entry.Encode(e)
	m.Info.Encode(e)
	e.U32(uint32(len(m.Entries)))
	for i := range m.Entries {
		m.Entries[i].Encode(e)
	}
	e.String(m.OID)
	e.Strings(m.Names)
	e.Bool(m.Obj != nil)
	if m.Obj != nil {
		e.Bool(m.Obj.Exists)
		if m.Obj.DataVec != nil {
			e.AlignedBlobVec(m.Obj.DataVec)
		} else {
			e.AlignedBlob(m.Obj.Data)
		}
		omap.Encode(e, m.Obj.Attrs)
		omap.Encode(e, m.Obj.Omap)
	}
	e.I64(m.DObjects)
	e.I64(m.DBytes)
	e.Bool(m.Txn != nil)
	if m.Txn != nil {
		m.Txn.Encode(e)
	}
	e.U64(m.Off)
	e.U64(m.Len)
	e.U64(m.RollForward)
	e.U32(uint32(len(m.Intervals)))
	for _, iv := range m.Intervals {
		e.U32(uint32(len(iv)))
		for _, o := range iv {
			e.I32(o)
		}
	}
	e.Strings(m.Missing)
	e.I32(m.From)
	e.U32(uint32(len(m.Leases)))
	for _, c := range m.Leases {
		e.I32(c.OSD)
		e.I64(int64(c.Left))
	}
	e.I32(int32(m.Prio))
	e.Bool(m.Preempt)
	var clones []cloneState
	if m.Obj != nil {
		clones = m.Obj.Clones
	}
	e.U32(uint32(len(clones)))
	for _, c := range clones {
		e.U64(c.ID)
		e.AlignedBlob(c.Obj.Data)
		omap.Encode(e, c.Obj.Attrs)
		omap.Encode(e, c.Obj.Omap)
	}
}

// decodePeerMsg reads a peerMsg; byte slices alias b.
func decodePeerMsg(b []byte) (*peerMsg, error) {
	d := wire.NewDecoder(b)
	m := &peerMsg{PG: osdmap.PGID{Pool: d.I64(), Seed: d.U32()}, Interval: d.U64(), Prev: Version{Epoch: d.U32(), Seq: d.U64()}}
	m.Entry = peering.DecodeLogEntry(d)
	m.Info = peering.DecodeInfo(d)
	n := d.Count(25)
	for range n {
		m.Entries = append(m.Entries, peering.DecodeLogEntry(d))
	}
	m.OID = d.String()
	m.Names = d.Strings()
	if d.Bool() {
		m.Obj = &objState{Exists: d.Bool(), Data: d.AlignedBlobRef()}
		m.Obj.Attrs = omap.Decode(d)
		m.Obj.Omap = omap.Decode(d)
	}
	m.DObjects, m.DBytes = d.I64(), d.I64()
	if d.Bool() && d.Err() == nil {
		t, err := objectstore.DecodeTransaction(d)
		if err != nil {
			return nil, fmt.Errorf("osd message: %w", err)
		}
		m.Txn = t
	}
	m.Off, m.Len, m.RollForward = d.U64(), d.U64(), d.U64()
	for n := d.Count(4); n > 0 && d.Err() == nil; n-- {
		iv := make([]int32, d.Count(4))
		for i := range iv {
			iv[i] = d.I32()
		}
		m.Intervals = append(m.Intervals, iv)
	}
	m.Missing = d.Strings()
	m.From = d.I32()
	for n := d.Count(12); n > 0 && d.Err() == nil; n-- {
		m.Leases = append(m.Leases, leaseClaim{OSD: d.I32(), Left: time.Duration(d.I64())})
	}
	if d.Remaining() >= 5 { // absent from an OSD before remote recovery reservations
		m.Prio, m.Preempt = int(d.I32()), d.Bool()
	}
	if d.Remaining() >= 4 { // absent from an OSD before snapshots
		for n := d.Count(16); n > 0 && d.Err() == nil; n-- {
			c := cloneState{ID: d.U64(), Obj: &objState{Exists: true, Data: d.AlignedBlobRef()}}
			c.Obj.Attrs, c.Obj.Omap = omap.Decode(d), omap.Decode(d)
			if m.Obj == nil {
				d.Fail("clones without an object")
			} else {
				m.Obj.Clones = append(m.Obj.Clones, c)
			}
		}
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("osd message: %w", err)
	}
	return m, nil
}
