package mon

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoal-project/shoal/caps"
	"github.com/shoal-project/shoal/monc"
)

// commandPerm is the permission a MON command needs from the caller's mon
// caps (Ceph's MonCommands.h perms): Read to look, Write to change, and
// Exec beside them for the key database.
func commandPerm(prefix string) caps.Perm {
	switch prefix {
	case "osd erasure-code-profile ls", "osd erasure-code-profile get", "mon status", "mon dump", "config dump", "pg history get", "balancer status":
		return caps.Read
	case "auth ls", "auth dump", "auth get-key", "auth get":
		return caps.Read | caps.Exec
	case "auth add", "auth rm", "auth caps":
		return caps.Write | caps.Exec
	}
	return caps.Write
}

// capsOf is entity's caps: its key database entry's, else the keyring
// file's (caps.Table).
func (d *Daemon) capsOf(entity string) caps.Entity {
	if e, ok := d.fsm.authEntry(entity); ok {
		c, err := caps.Parse(e.Caps) // checked when they were set
		if err != nil {
			d.log.Warn("unreadable caps in the key database", "entity", entity, "err", err)
		}
		return c
	}
	return d.fileCaps.Lookup(entity)
}

// authorize refuses command c from entity from unless from's mon caps
// allow it (monc.ErrPermission). Two commands are also allowed by other
// grants, as in Ceph's OSDMonitor: a self-managed snapshot id by write
// access to the pool in the osd caps (librbd's snapshots), and `auth add`
// by profile bootstrap-osd for an osd.N entity with the OSD profile only.
func (d *Daemon) authorize(from string, c monc.Command) error {
	need := commandPerm(c.Prefix)
	e := d.capsOf(from)
	switch {
	case c.Prefix == "auth add" && !e.Mon.Allows("", need) && e.Mon.Profile("bootstrap-osd"):
		_, exists := d.fsm.authEntry(c.Args["entity"])
		if strings.HasPrefix(c.Args["entity"], "osd.") && !exists && c.Args["key"] == "" &&
			(c.Args["caps_mon"] == "profile osd" || c.Args["caps_mon"] == "allow profile osd") &&
			c.Args["caps_osd"] == "allow *" && len(monc.ArgsCaps(c.Args)) == 2 {
			return nil
		}
		return fmt.Errorf("%w: %s (profile bootstrap-osd) may only add new osd.N entities, with a key the MONs make and caps mon 'profile osd' osd 'allow *'", monc.ErrPermission, from)
	case e.Mon.Allows(c.Prefix, need):
		return nil
	case c.Prefix == "osd pool selfmanaged-snap create" || c.Prefix == "osd pool selfmanaged-snap rm":
		if e.OSD.AllowsPool(c.Args["pool"], caps.Write) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s may not run %q (mon caps %q)", monc.ErrPermission, from, c.Prefix, e.Mon.String())
}

// current refuses (monc.ErrNotLeader, which sends clients to another MON)
// when this MON cannot vouch that its state is current: it is not the
// leader and has not heard from one within staleAfter — cut off in a
// minority, or between leaders. A leader cut off from its quorum steps
// down within raft's LeaderLeaseTimeout. What it refuses: map reads and
// every command but `mon status`.
func (d *Daemon) current() error {
	if d.raft.State() == raft.Leader {
		return nil
	}
	addr, _ := d.raft.LeaderWithID()
	since := time.Since(d.raft.LastContact())
	if addr != "" && since < staleAfter {
		return nil
	}
	return fmt.Errorf("%w: %s has not heard from a leader for %v: its state may be stale", monc.ErrNotLeader, d.o.Name, since.Round(time.Millisecond))
}

// staleAfter is how long a follower serves reads after its last contact
// with the leader: twice raft's heartbeat timeout (startRaft), so a
// follower in a healthy quorum never refuses.
const staleAfter = 2 * raftHeartbeat

// raftHeartbeat is raft's heartbeat and election timeout: a follower
// that hears nothing from the leader for this long starts an election.
const raftHeartbeat = 500 * time.Millisecond
