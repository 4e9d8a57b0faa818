package mon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/jonboulle/clockwork"

	"github.com/shoal-project/shoal/internal/periodic"
	"github.com/shoal-project/shoal/monc"
	"github.com/shoal-project/shoal/msgr"
)

// The MON map is raft's configuration (monc.MonMap). Membership changes
// as raft's authors advise (Ongaro's thesis §4.2.1, hashicorp/raft's
// AddNonvoter): `mon add` makes the new MON a non-voter, which receives
// the log and a snapshot without counting towards the quorum; the
// leader promotes it to a voter once it has caught up, so a slow or
// not-yet-started MON never stalls commits. `mon rm` removes a member in
// one configuration change, refused when the MONs left could not form a
// quorum. A MON removed from the map stops (Options.OnRemoved).

// promoteLag is how many log entries a non-voter may be behind the
// leader's commit index and still be promoted: the rest arrive with the
// next heartbeats.
const promoteLag = 64

// removedProbeAfter is how long a MON goes without hearing from a leader
// before it asks the other MONs whether it was removed (a leader stops
// replicating to a removed follower, which so never learns it from the
// log).
const removedProbeAfter = 3 * time.Second

// memberLoop, until Close, promotes caught-up non-voters (on the
// leader) and notices this MON's removal.
func (d *Daemon) memberLoop() {
	defer d.wg.Done()
	// memberSince is the epoch of the last committed MON map that held
	// this MON; a later one without it means it was removed (raft's
	// latest configuration may not be committed, and a joining MON's can
	// step back to an older one when a snapshot is installed).
	memberSince := d.joinedAt
	// real time, as raft's: a test's fake clock (Options.Clock) times the
	// leader's OSD schedules only
	periodic.Every(d.ctx, clockwork.NewRealClock(), 500*time.Millisecond, nil, func() {
		mm := d.fsm.monMap()
		switch {
		case mm.Has(d.o.Addr):
			memberSince = max(memberSince, mm.Epoch)
		case memberSince > 0 && mm.Epoch > memberSince:
			d.removed(mm)
			return
		}
		if d.raft.State() == raft.Leader {
			d.promote(mm)
			return
		}
		if time.Since(d.raft.LastContact()) > removedProbeAfter {
			d.probeRemoved(memberSince)
		}
	})
}

// lastMembership is the log index of the last configuration in the
// stores that holds addr (0 if none): the MON map epoch a restarted MON
// knows it was a member at, before a leader tells it the commit index.
func lastMembership(logs raft.LogStore, snaps raft.SnapshotStore, addr string) (uint64, error) {
	has := func(cfg raft.Configuration) bool {
		return slices.ContainsFunc(cfg.Servers, func(s raft.Server) bool { return string(s.ID) == addr })
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return 0, err
	}
	last, err := logs.LastIndex()
	if err != nil {
		return 0, err
	}
	for i := last; i >= first && i > 0; i-- {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return 0, fmt.Errorf("log entry %d: %w", i, err)
		}
		if l.Type == raft.LogConfiguration {
			if has(raft.DecodeConfiguration(l.Data)) {
				return i, nil
			}
			return 0, nil // the latest configuration does not hold it
		}
	}
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		return 0, err
	}
	if has(metas[0].Configuration) {
		return metas[0].ConfigurationIndex, nil
	}
	return 0, nil
}

// promote makes each non-voter that has caught up a voter.
func (d *Daemon) promote(mm monc.MonMap) {
	for _, mi := range mm.Mons {
		if mi.Voter {
			continue
		}
		st, err := d.peerStatus(mi.Addr, time.Second)
		if err != nil || st.Applied+promoteLag < d.raft.CommitIndex() {
			continue
		}
		raddr, _ := RaftAddr(mi.Addr)
		if err := d.raft.AddVoter(raft.ServerID(mi.Addr), raft.ServerAddress(raddr), mm.Epoch, 10*time.Second).Error(); err != nil {
			d.log.Warn("promoting a MON to voter", "mon", mi.Addr, "err", err)
			return
		}
		d.log.Info("MON caught up: now a voter", "mon", mi.Addr, "applied", st.Applied)
		return // the map changed: the next round sees the new one
	}
}

// probeRemoved asks the other MONs of raft's latest configuration (a
// restarted MON's committed map is empty until a leader tells it the
// commit index) for the current MON map; one newer than since without
// this MON means it was removed.
func (d *Daemon) probeRemoved(since uint64) {
	f := d.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	for _, s := range f.Configuration().Servers {
		addr := string(s.ID)
		if addr == d.o.Addr {
			continue
		}
		var cur monc.MonMap
		if d.peerCommand(addr, "mon dump", time.Second, &cur) != nil {
			continue
		}
		if cur.Epoch > since && len(cur.Mons) > 0 && !cur.Has(d.o.Addr) {
			d.removed(cur)
			return
		}
	}
}

// removed stops this MON: it is no longer in the MON map mm.
func (d *Daemon) removed(mm monc.MonMap) {
	if !d.removedOnce.CompareAndSwap(false, true) {
		return
	}
	d.log.Error("removed from the MON map: stopping", "epoch", mm.Epoch, "mons", mm.Voters())
	if d.o.OnRemoved != nil {
		go d.o.OnRemoved()
	}
}

// monStatus is `mon status`'s answer.
type monStatus struct {
	Addr    string   `json:"addr"`
	Leader  string   `json:"leader"`
	State   string   `json:"state"` // raft's: Leader, Follower, Candidate
	Voter   bool     `json:"voter"` // false while it catches up (or before it is added)
	Applied uint64   `json:"applied"`
	Peers   []string `json:"peers"` // the MON map's members
	// Metrics is where the MON serves Prometheus metrics ("" if it does
	// not).
	Metrics string `json:"metrics_addr,omitempty"`
}

func (d *Daemon) status() monStatus {
	addr, _ := d.raft.LeaderWithID()
	leader := ""
	if addr != "" {
		leader = msgrAddr(string(addr))
	}
	mm := d.fsm.monMap()
	st := monStatus{Addr: d.o.Addr, Leader: leader, State: d.raft.State().String(), Applied: d.raft.AppliedIndex(), Metrics: d.metricsAddr}
	for _, mi := range mm.Mons {
		st.Peers = append(st.Peers, mi.Addr)
		if mi.Addr == d.o.Addr {
			st.Voter = mi.Voter
		}
	}
	return st
}

// peerStatus asks the MON at addr for its `mon status`.
func (d *Daemon) peerStatus(addr string, timeout time.Duration) (monStatus, error) {
	if addr == d.o.Addr {
		return d.status(), nil
	}
	var st monStatus
	return st, d.peerCommand(addr, "mon status", timeout, &st)
}

// peerCommand runs the argument-less command prefix on the MON at addr
// within timeout and decodes its data into out.
func (d *Daemon) peerCommand(addr, prefix string, timeout time.Duration, out any) error {
	raw, _ := json.Marshal(monc.Command{Prefix: prefix})
	ctx, cancel := context.WithTimeout(d.ctx, timeout)
	defer cancel()
	r, err := d.peerCall(ctx, addr, raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(r.Data, out)
}

// peerCall sends the command raw (monc.Command's JSON) to the MON at addr
// and returns its result; a refusal is the MON's *msgr.RemoteError.
func (d *Daemon) peerCall(ctx context.Context, addr string, raw []byte) (monc.Result, error) {
	rep, err := d.peer(addr).Call(ctx, monc.MsgCommand, raw)
	if err != nil {
		return monc.Result{}, err
	}
	defer rep.Release()
	var r monc.Result
	if err := json.Unmarshal(rep.Payload, &r); err != nil {
		return monc.Result{}, fmt.Errorf("mon at %s: bad reply: %w", addr, err)
	}
	return r, nil
}

// peer is a messenger client to the MON at addr, kept for reuse.
func (d *Daemon) peer(addr string) *msgr.Client {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.peers[addr]
	if c == nil {
		fc := d.msgr
		fc.MaxBackoff = 500 * time.Millisecond
		fc.DialTimeout = time.Second
		c = msgr.Dial(addr, d.o.Keyring, fc)
		d.peers[addr] = c
	}
	return c
}

// monAdd adds the MON at args addr as a non-voter (the leader promotes
// it once it has caught up); adding a member again changes nothing.
func (d *Daemon) monAdd(c monc.Command) (monc.Result, error) {
	addr := c.Args["addr"]
	raddr, err := RaftAddr(addr)
	if err != nil {
		return monc.Result{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	mm := d.fsm.monMap()
	if mm.Has(addr) {
		return monc.Result{Message: fmt.Sprintf("mon at %s is already a member (epoch %d)", addr, mm.Epoch)}, nil
	}
	for _, mi := range mm.Mons {
		ra, _ := RaftAddr(mi.Addr)
		if addr == ra || raddr == mi.Addr {
			return monc.Result{}, fmt.Errorf("%w: %s or its raft port %s is in use by the MON at %s", ErrInvalid, addr, raddr, mi.Addr)
		}
	}
	if err := d.raft.AddNonvoter(raft.ServerID(addr), raft.ServerAddress(raddr), mm.Epoch, 10*time.Second).Error(); err != nil {
		return monc.Result{}, fmt.Errorf("%w: adding %s: %v", monc.ErrNotLeader, addr, err)
	}
	d.log.Info("MON added as a non-voter", "mon", addr)
	return monc.Result{Message: fmt.Sprintf("added mon at %s: it catches up as a non-voter, then votes", addr)}, nil
}

// monRm removes the MON at args addr from the map. A voter's removal is
// refused if it is the last, or if the voters left that answer now are
// not a majority of those left (the change could not commit, or the
// quorum would be lost).
func (d *Daemon) monRm(c monc.Command) (monc.Result, error) {
	addr := c.Args["addr"]
	mm := d.fsm.monMap()
	if !mm.Has(addr) {
		return monc.Result{}, fmt.Errorf("%w: %s is not in the MON map (epoch %d: %s)", ErrNotFound, addr, mm.Epoch, strings.Join(mm.Voters(), ","))
	}
	if voters := mm.Voters(); slices.Contains(voters, addr) {
		left := slices.DeleteFunc(slices.Clone(voters), func(a string) bool { return a == addr })
		if len(left) == 0 {
			return monc.Result{}, fmt.Errorf("%w: %s is the last MON", ErrInvalid, addr)
		}
		up := 0
		for _, a := range left {
			if _, err := d.peerStatus(a, 2*time.Second); err == nil {
				up++
			}
		}
		if up < len(left)/2+1 {
			return monc.Result{}, fmt.Errorf("%w: without %s, %d of the %d MONs left answer, fewer than a quorum of %d", ErrBusy, addr, up, len(left), len(left)/2+1)
		}
	}
	if err := d.raft.RemoveServer(raft.ServerID(addr), mm.Epoch, 10*time.Second).Error(); err != nil {
		return monc.Result{}, fmt.Errorf("%w: removing %s: %v", monc.ErrNotLeader, addr, err)
	}
	d.log.Info("MON removed", "mon", addr)
	return monc.Result{Message: fmt.Sprintf("removed mon at %s", addr)}, nil
}

// errRemoved answers requests once this MON has been removed.
var errRemoved = errors.New("this MON was removed from the MON map")
