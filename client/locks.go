package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/shoal-project/shoal/cls/lock"
	"github.com/shoal-project/shoal/osdmap"
)

// Advisory object locks (the OSDs' cls_lock class, package cls/lock) and
// the blocklist that fences a client whose lock was broken: librados'
// lock_exclusive, lock_shared, unlock, break_lock, list_lockers and
// `ceph osd blocklist`.

// Instance is this connection's name as a client instance: its entity
// and nonce ("client.NAME/NONCE"), the name a lock holder is listed
// under and that `osd blocklist add` fences (osdmap.InstanceName).
func (c *Conn) Instance() string { return osdmap.InstanceName(c.cfg.Keyring.Name, c.nonce) }

// BlocklistAdd has every OSD refuse entry — an entity or one instance
// (Instance) — for expire (0: an hour), as `ceph osd blocklist add`; the
// connection's map holds the entry when this returns.
func (c *Conn) BlocklistAdd(ctx context.Context, entry string, expire time.Duration) error {
	args := map[string]string{"entry": entry}
	if expire > 0 {
		args["expire"] = strconv.FormatFloat(expire.Seconds(), 'f', -1, 64)
	}
	if _, err := c.MonCommand(ctx, "osd blocklist add", args); err != nil {
		return fmt.Errorf("blocklist %s: %w", entry, err)
	}
	return nil
}

// BlocklistRm removes a blocklist entry.
func (c *Conn) BlocklistRm(ctx context.Context, entry string) error {
	if _, err := c.MonCommand(ctx, "osd blocklist rm", map[string]string{"entry": entry}); err != nil {
		return fmt.Errorf("un-blocklist %s: %w", entry, err)
	}
	return nil
}

// LockExclusive takes exclusive lock name on oid under cookie, for
// duration (0: until unlocked or broken); with renew, the holder takes it
// again to move its expiration. osdop.ErrBusy if another instance holds
// it, ErrExists if this one does under cookie (without renew).
func (p *Pool) LockExclusive(ctx context.Context, oid, name, cookie, description string, duration time.Duration, renew bool) error {
	return p.lockCall(ctx, oid, "lock", lock.LockInput{Name: name, Type: lock.Exclusive, Cookie: cookie, Description: description, Duration: duration.Seconds(), Renew: renew})
}

// LockShared takes lock name shared, with tag (every shared holder's
// must match).
func (p *Pool) LockShared(ctx context.Context, oid, name, cookie, tag, description string, duration time.Duration, renew bool) error {
	return p.lockCall(ctx, oid, "lock", lock.LockInput{Name: name, Type: lock.Shared, Cookie: cookie, Tag: tag, Description: description, Duration: duration.Seconds(), Renew: renew})
}

// Unlock releases this instance's hold of lock name under cookie
// (ErrNotFound if it has none).
func (p *Pool) Unlock(ctx context.Context, oid, name, cookie string) error {
	return p.lockCall(ctx, oid, "unlock", lock.UnlockInput{Name: name, Cookie: cookie})
}

// BreakLock removes locker's hold of lock name under cookie (locker: a
// client instance, as LockInfo lists it).
func (p *Pool) BreakLock(ctx context.Context, oid, name, locker, cookie string) error {
	return p.lockCall(ctx, oid, "break_lock", lock.BreakInput{Name: name, Locker: locker, Cookie: cookie})
}

// LockInfo returns lock name's type, tag and holders (expired holds left
// out); ErrNotFound if the object has no such lock.
func (p *Pool) LockInfo(ctx context.Context, oid, name string) (*lock.Info, error) {
	in, _ := json.Marshal(lock.NameInput{Name: name})
	out, err := p.Exec(ctx, oid, "lock.get_info", in)
	if err != nil {
		return nil, err
	}
	var info lock.Info
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("lock info of %s: %w", oid, err)
	}
	return &info, nil
}

// ListLocks returns the names of the object's locks.
func (p *Pool) ListLocks(ctx context.Context, oid string) ([]string, error) {
	out, err := p.Exec(ctx, oid, "lock.list_locks", []byte("{}"))
	if err != nil {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal(out, &names); err != nil {
		return nil, fmt.Errorf("locks of %s: %w", oid, err)
	}
	return names, nil
}

func (p *Pool) lockCall(ctx context.Context, oid, method string, in any) error {
	b, _ := json.Marshal(in)
	_, err := p.Exec(ctx, oid, "lock."+method, b)
	return err
}
