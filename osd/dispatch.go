package osd

// The op path's entry: a message from the messenger is dispatched by
// type; a client op finds its PG and the PG's backend (backend.go), and
// is written (pg.go write) or read (ops.go, ec_read.go) there.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osd/mclock"
	"github.com/shoal-project/shoal/osd/opexec"
	"github.com/shoal-project/shoal/osd/peering"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

func (d *OSD) handle(ctx context.Context, m *msgr.Message) ([]byte, error) {
	if err := d.authorizeMsg(m); err != nil {
		return nil, &msgr.RemoteError{Code: int32(osdop.Errno(err)), Msg: err.Error()}
	}
	switch m.Type { // before the map: these never wait for it
	case msgPing:
		return d.handlePing(m.Payload), nil
	case msgGetMap:
		b, err := d.handleGetMap()
		if err != nil {
			return nil, &msgr.RemoteError{Code: int32(osdop.Errno(err)), Msg: err.Error()}
		}
		return b, nil
	}
	if cur, _ := d.curMap(); cur == nil { // still booting
		return nil, &msgr.RemoteError{Code: int32(osdop.Errno(osdop.ErrRetry)), Msg: "osd is booting"}
	}
	d.waitEpoch(ctx, m.Epoch) // from the MONs, or else a peer
	out, err := d.dispatch(ctx, m)
	if err != nil {
		return nil, &msgr.RemoteError{Code: int32(osdop.Errno(err)), Msg: err.Error()}
	}
	return out, nil
}

func (d *OSD) dispatch(ctx context.Context, m *msgr.Message) ([]byte, error) {
	switch m.Type {
	case osdop.MsgOp:
		req, err := osdop.DecodeRequest(m.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
		}
		return d.handleOp(ctx, m, req)
	case osdop.MsgWatchPoll:
		poll, err := osdop.DecodeWatchPoll(m.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
		}
		return d.handleWatchPoll(ctx, m.From, m.FromIP, poll)
	case osdop.MsgStats:
		return json.Marshal(d.stats())
	case osdop.MsgPGCommand:
		return d.pgCommand(m.Payload)
	case osdop.MsgOSDCommand:
		return d.osdCommand(ctx, m.Payload)
	case osdop.MsgList:
		req, err := osdop.DecodeListRequest(m.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
		}
		pg := d.getPG(osdmap.PGID{Pool: req.Pool, Seed: req.Seed})
		if pg == nil {
			return nil, fmt.Errorf("%w: osd.%d does not serve pg %d.%x", osdop.ErrRetry, d.id, req.Pool, req.Seed)
		}
		iv, err := pg.waitReadable(ctx)
		if err != nil {
			return nil, err
		}
		if err := pg.recoverSelf(ctx); err != nil { // a listing reads our store: it must be complete
			return nil, err
		}
		if err := pg.checkComplete(); err != nil {
			return nil, err
		}
		rep, err := pg.listPage(req)
		if err != nil {
			return nil, err
		}
		if err := pg.stillReadable(iv); err != nil {
			return nil, err
		}
		return rep.Encode(), nil
	}
	pm, err := decodePeerMsg(m.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
	}
	if m.Type == msgPurge {
		d.purgeStray(pm.PG)
		return nil, nil
	}
	if m.Type == msgNotify {
		if pg := d.getPG(pm.PG); pg != nil {
			pg.handleNotify(pm.From)
		}
		return nil, nil
	}
	if m.Type == msgPGQuery {
		// the reply's lease promises must cover every promise made to an
		// OSD the asker's map has down: only once this OSD has that map
		if e := d.epoch(); e < m.Epoch {
			return nil, fmt.Errorf("%w: osd.%d has map %d, the query %d", osdop.ErrRetry, d.id, e, m.Epoch)
		}
	}
	pg := d.getPG(pm.PG)
	if pg == nil && (m.Type == msgPGQuery || m.Type == msgPGList) { // never held it, or deleted its copy: nothing to offer
		return (&peerMsg{PG: pm.PG, Info: peering.Info{Shard: peering.NoCopy}, Leases: d.promises()}).encode(), nil
	}
	if pg == nil {
		return nil, fmt.Errorf("%w: pg %s is not here", osdop.ErrRetry, pm.PG)
	}
	switch m.Type {
	case msgRepOp:
		if pm.Txn != nil {
			pm.Txn.SetDataSums(m.BlockSums)
		}
		if err := pg.handleRepOp(ctx, pm); err != nil {
			return nil, err
		}
		d.perf.subopW.Add(1)
		d.perf.subopWBytes.Add(uint64(len(m.Payload)))
		d.charge(mclock.Client, 1, uint64(len(m.Payload)))
		return nil, nil
	case msgPGQuery:
		return pg.handleQuery(ctx, pm)
	case msgPull:
		return pg.handlePull(pm)
	case msgPush:
		return nil, pg.handlePush(pm)
	case msgPGLog:
		return nil, pg.handleLog(pm)
	case msgPGList:
		return pg.handleList(pm)
	case msgECRead:
		return nil, pg.handleECRead(pm, m)
	case msgECRepair:
		return nil, pg.handleECRepair(pm)
	case msgECRollback:
		return nil, pg.handleECRollback(pm)
	case msgScrubReserve:
		return nil, pg.handleScrubReserve(pm)
	case msgScrubRelease:
		d.scrubSlots.release(pg.id)
		return nil, nil
	case msgRecoveryReserve:
		return nil, pg.handleRecoveryReserve(pm)
	case msgRecoveryRenew:
		return nil, pg.handleRecoveryRenew(pm)
	case msgRecoveryRelease:
		d.remoteSlots.release(pg.id, pm.Interval)
		return nil, nil
	case msgScrubMap:
		return pg.handleScrubMap(pm)
	case msgActivated:
		return nil, pg.handleActivated(pm)
	}
	return nil, fmt.Errorf("%w: message type %d", osdop.ErrInvalid, m.Type)
}

// handleOp serves a client request on the PG's primary.
func (d *OSD) handleOp(ctx context.Context, msg *msgr.Message, req *osdop.Request) ([]byte, error) {
	m, _ := d.curMap()
	pool, err := m.Pool(req.Pool)
	if err != nil {
		return nil, fmt.Errorf("%w: pool %d does not exist", osdop.ErrNotFound, req.Pool)
	}
	if err := opexec.CheckName(req.OID, int(d.conf().Int("osd_max_object_name_len"))); err != nil {
		return nil, err
	}
	req.From = msg.From
	if m.Blocklisted(msg.From, req.Client, msg.FromIP, time.Now()) {
		return nil, fmt.Errorf("%w: %s", osdop.ErrBlocklisted, osdmap.InstanceName(msg.From, req.Client))
	}
	if err := d.authorizeOp(msg.From, pool, req); err != nil {
		return nil, err
	}
	if err := snapContext(pool, req); err != nil {
		return nil, err
	}
	pgid, _ := m.ObjectToPG(pool.ID, req.OID, "")
	if pgid.Seed != req.Seed {
		return nil, fmt.Errorf("%w: object is in pg %s, not %d.%x", osdop.ErrRetry, pgid, req.Pool, req.Seed)
	}
	pg := d.getPG(pgid)
	if pg == nil {
		return nil, fmt.Errorf("%w: osd.%d does not serve pg %s", osdop.ErrRetry, d.id, pgid)
	}
	be, err := pg.backend(ctx, pool)
	if err != nil {
		return nil, err
	}
	var rep *osdop.Reply
	release := func() {} // gives back pooled read buffers once the reply is out
	start := time.Now()
	defer d.ops.end(d.ops.begin(start))
	switch code := onlyOp(req); {
	case code == osdop.Notify:
		rep, err = pg.watchNotify(ctx, req)
	case code == osdop.NotifyAck:
		rep, err = pg.notifyAck(req)
	case req.IsWrite():
		for i := range req.Ops {
			if op := &req.Ops[i]; op.Code == osdop.Write || op.Code == osdop.WriteFull || op.Code == osdop.Append {
				op.DataSums = msg.BlockSums(op.Data)
			}
		}
		rep, err = pg.write(ctx, req, be)
		if err == nil {
			pg.watchWritten(req)
			d.perf.opW.Add(1)
			for i := range req.Ops {
				d.perf.opWBytes.Add(uint64(len(req.Ops[i].Data)))
			}
			d.perf.opWLat.Observe(time.Since(start).Seconds())
		}
	default:
		var rel func()
		if rep, rel, err = be.read(ctx, req); rel != nil {
			release = rel
		}
		if err == nil {
			d.perf.opR.Add(1)
			for i := range rep.Results {
				d.perf.opRBytes.Add(uint64(rep.Results[i].DataLen()))
			}
			d.perf.opRLat.Observe(time.Since(start).Seconds())
		}
	}
	if err != nil || !req.IsWrite() {
		// routed before a split the PG waited across: the client's next
		// map sends it to the child (a committed write stays answered)
		if merr := d.misdirected(m, pgid, req.OID); merr != nil {
			release()
			return nil, merr
		}
	}
	if err != nil {
		return nil, err
	}
	size := 16
	for _, r := range rep.Results {
		size += r.DataLen() + 64
	}
	d.charge(mclock.Client, 1, uint64(len(msg.Payload)+size))
	if size >= vecReplyMin {
		parts, sums := rep.EncodeVec(vecPartMin)
		msg.ReplyVecThen(parts, sums, release)
		return nil, nil
	}
	e := wireEncoder(size)
	rep.Encode(e)
	release()
	return e.Bytes(), nil
}

// misdirected is the retry error for an op that map m routed to pgid,
// on an object a split since moved to a child (Ceph answers such a
// misdirected op with a retry too), and nil otherwise: a pointer compare
// while the map is m, one placement once the pool's pg_num changed. A
// split runs while handleMap holds the map lock, so a map read after it
// shows it.
func (d *OSD) misdirected(m *osdmap.Map, pgid osdmap.PGID, oid string) error {
	cur, _ := d.curMap()
	if cur == m {
		return nil
	}
	p, err := cur.Pool(pgid.Pool)
	if err != nil {
		return nil // the pool is gone: the op's own error says so
	}
	if was, err := m.Pool(pgid.Pool); err == nil && was.PGNum == p.PGNum {
		return nil
	}
	if to, _ := cur.ObjectToPG(pgid.Pool, oid, ""); to != pgid {
		return errSplitAway(oid, pgid)
	}
	return nil
}

// onlyOp is the code of a request's one op (0 for none or several):
// notify and its acknowledgement travel alone.
func onlyOp(req *osdop.Request) osdop.Code {
	if len(req.Ops) != 1 {
		return 0
	}
	return req.Ops[0].Code
}

// vecReplyMin is the reply size from which read data goes to the
// connection without being copied into the encoded reply (below it, one
// small copy is cheaper than the extra slices of a vectored write).
const vecReplyMin = 64 << 10

// vecPartMin is the size from which a vectored reply's data part (a
// cache unit's blocks, a pooled read buffer, an erasure-coded read's
// stripe unit in a shard's buffer) is written from where it lies rather
// than copied into the reply's encoded bytes. Replying to a 4 MiB EC read
// from its 4 KiB stripe units in place (1,024 iovecs), with the local
// shard in the store's read buffer, cost the OSDs 0.84× (2+1) and 0.86×
// (4+2) the CPU per GB of reassembling the object into a new buffer
// (perf-log/datapath-2026-11-28.md, "An EC read copies no object bytes").
const vecPartMin = 4 << 10
