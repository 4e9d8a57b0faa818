package osd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/shoal-project/shoal/caps"
	"github.com/shoal-project/shoal/cls"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
	"github.com/shoal-project/shoal/osdmap"
	"github.com/shoal-project/shoal/osdop"
)

// authState is what the OSD knows of entities: the MONs' key database's
// keys (beside the keyring file's, Options.FileKeys) and everyone's caps.
// Replaced whole when the database changes; never changed in place.
type authState struct {
	keys map[string][]byte
	caps *caps.Table
}

// setAuth installs the key database as `auth dump` returns it (JSON,
// entity → monc.AuthEntry). An entry from MONs older than caps has nil
// Caps and gets caps.Default, as the MONs give it.
func (d *OSD) setAuth(dump []byte) error {
	var db map[string]monc.AuthEntry
	if err := json.Unmarshal(dump, &db); err != nil {
		return fmt.Errorf("auth dump: %w", err)
	}
	st := &authState{keys: make(map[string][]byte, len(db))}
	dbCaps := make(map[string]map[string]string, len(db))
	for n, e := range db {
		k, err := base64.StdEncoding.DecodeString(e.Key)
		if err != nil {
			return fmt.Errorf("auth dump: key of %s: %w", n, err)
		}
		st.keys[n] = k
		dbCaps[n] = e.Caps
		if e.Caps == nil {
			dbCaps[n] = caps.Default(n)
		}
	}
	var err error
	if st.caps, err = caps.NewTable(dbCaps, msgr.KeyringCaps(d.o.FileKeys), d.o.FileKeys == nil); err != nil {
		return err
	}
	d.auth.Store(st)
	return nil
}

// authRefetchGap bounds how often an unknown entity's connection makes the
// OSD fetch the key database before its periodic fetch (configPoll).
const authRefetchGap = 250 * time.Millisecond

// fetchAuth fetches the key database from the MONs and installs it if it
// changed, reporting whether it did. early is a fetch for an entity this
// OSD does not know (one added since the last fetch): it reports true as
// well when another fetch began meanwhile, so the caller looks again; and
// early fetches are spaced authRefetchGap apart (a caller waits for its
// turn), so unknown entities cannot make the OSD query the MONs more often.
func (d *OSD) fetchAuth(early bool) bool {
	asked := time.Now()
	d.authMu.Lock()
	defer d.authMu.Unlock()
	if early {
		if d.authAt.After(asked) {
			return true
		}
		if wait := authRefetchGap - time.Since(d.authEarlyAt); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-d.ctx.Done():
				t.Stop()
				return false
			}
		}
		d.authEarlyAt = time.Now()
	}
	d.authAt = time.Now()
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
	defer cancel()
	a, err := d.mc.Command(ctx, "auth dump", nil)
	if err != nil || string(a.Data) == d.authDump {
		return false
	}
	if err := d.setAuth(a.Data); err != nil {
		d.log.Warn("key database not applied", "err", err)
		return false
	}
	d.authDump = string(a.Data)
	return true
}

// opNeeds is what a request needs from the caller's osd caps: Read for
// reads (asserting a version, listing snaps and watchers, notifying),
// Write for writes (watches are kept with the object, so they are writes,
// as Ceph's CEPH_OSD_OP_WATCH), ClassRead or ClassWrite for object-class
// methods by how they were registered (cls.RegisterRead).
func opNeeds(req *osdop.Request) caps.Perm {
	var need caps.Perm
	for _, op := range req.Ops {
		switch {
		case op.Code == osdop.Call && cls.ReadOnly(op.Name), op.Code == osdop.CallRead:
			need |= caps.ClassRead
		case op.Code == osdop.Call:
			need |= caps.ClassWrite
		case op.Code == osdop.AssertVersion, op.Code == osdop.Notify, op.Code == osdop.NotifyAck:
			need |= caps.Read
		case op.Code.IsWrite():
			need |= caps.Write
		default:
			need |= caps.Read
		}
	}
	return need
}

// errDenied is the refusal of what from's osd caps do not allow.
func errDenied(from, what string, e caps.Entity) error {
	return fmt.Errorf("%w: %s may not %s (its osd caps: %q)", osdop.ErrPermission, from, what, e.OSD.String())
}

// authorizeOp refuses a client request that from's osd caps do not allow
// on the object (osdop.ErrPermission).
func (d *OSD) authorizeOp(from string, pool *osdmap.Pool, req *osdop.Request) error {
	e := d.auth.Load().caps.Lookup(from)
	if need := opNeeds(req); !e.OSD.Allows(pool.Name, req.OID, need) {
		return errDenied(from, fmt.Sprintf("do what needs '%s' to %s/%s", need, pool.Name, req.OID), e)
	}
	return nil
}

// authorizeMsg refuses a message other than a client op that from may not
// send: OSD-to-OSD messages (replication, peering, recovery, scrub,
// leases) from anyone but an OSD; listings without read access to the
// whole pool; PG commands (scrub, repair) without osd 'allow *', except
// list-inconsistent, a read of the pool; OSD commands (flush, compact)
// without osd 'allow *'; OSD statistics without mon 'allow
// r' (cluster status, as the MONs' read commands).
func (d *OSD) authorizeMsg(m *msgr.Message) error {
	var e caps.Entity
	switch m.Type {
	case osdop.MsgStats, osdop.MsgList, osdop.MsgPGCommand, osdop.MsgOSDCommand:
		e = d.auth.Load().caps.Lookup(m.From)
	}
	switch m.Type {
	case osdop.MsgOp:
		return nil // authorizeOp, once the pool is known
	case osdop.MsgWatchPoll:
		return nil // the poller's own watches (m.From), set up by a Watch op
	case osdop.MsgStats:
		if !e.Mon.Allows("", caps.Read) {
			return fmt.Errorf("%w: %s may not read OSD statistics (no mon 'allow r')", osdop.ErrPermission, m.From)
		}
		return nil
	case osdop.MsgList:
		req, err := osdop.DecodeListRequest(m.Payload)
		if err != nil {
			return fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
		}
		if name := d.poolName(req.Pool); !e.OSD.AllowsPool(name, caps.Read) {
			return errDenied(m.From, "list pool "+name, e)
		}
		return nil
	case osdop.MsgPGCommand:
		var c osdop.PGCommand
		if err := json.Unmarshal(m.Payload, &c); err != nil {
			return fmt.Errorf("%w: pg command: %v", osdop.ErrInvalid, err)
		}
		id, err := osdmap.ParsePGID(c.PGID)
		if err != nil {
			return fmt.Errorf("%w: %v", osdop.ErrInvalid, err)
		}
		if c.Cmd == "list-inconsistent" && e.OSD.AllowsPool(d.poolName(id.Pool), caps.Read) || e.OSD.Allows("", "", caps.Admin) {
			return nil
		}
		return errDenied(m.From, fmt.Sprintf("run pg %s on %s", c.Cmd, id), e)
	case osdop.MsgOSDCommand:
		if e.OSD.Allows("", "", caps.Admin) {
			return nil
		}
		return errDenied(m.From, "run an osd command", e)
	}
	if typ, _, _ := strings.Cut(m.From, "."); typ != "osd" { // "osd" before an OSD has an id, as its keyring's name
		return fmt.Errorf("%w: %s sent an OSD-to-OSD message (type %d)", osdop.ErrPermission, m.From, m.Type)
	}
	return nil
}

// poolName is pool id's name in the current map ("" if there is none).
func (d *OSD) poolName(id int64) string {
	if m, _ := d.curMap(); m != nil {
		if p, err := m.Pool(id); err == nil {
			return p.Name
		}
	}
	return ""
}
