package osdmap

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The blocklist (Ceph's OSDMap blocklist, `ceph osd blocklist`): clients
// the OSDs refuse, each until a time. An entry names a client entity —
// "client.NAME", every instance of it — or one instance,
// "client.NAME/NONCE", NONCE being the hexadecimal instance nonce its
// connection sends with every request (client.Conn.Instance), or an IP
// address, every client connecting from it (Ceph blocklists addresses). Breaking a
// dead client's lock and blocklisting it fences it: whatever it still
// sends is refused (osdop.ErrBlocklisted).

// BlocklistDefaultExpire is how long an entry lasts unless the command
// says (Ceph's mon_osd_blocklist_default_expire, one hour).
const BlocklistDefaultExpire = time.Hour

// InstanceName is the blocklist name of a client instance: its entity
// name and its nonce in hexadecimal.
func InstanceName(entity string, nonce uint64) string {
	return entity + "/" + strconv.FormatUint(nonce, 16)
}

// ParseInstance splits an InstanceName into its entity and nonce; ok is
// false if s is not one.
func ParseInstance(s string) (entity string, nonce uint64, ok bool) {
	entity, hex, found := strings.Cut(s, "/")
	if !found {
		return "", 0, false
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	return entity, n, err == nil
}

// ParseBlocklistEntry checks an entry: a client entity, one instance, or
// an IP address.
func ParseBlocklistEntry(s string) error {
	if _, err := netip.ParseAddr(s); err == nil {
		return nil
	}
	entity, nonce, inst := strings.Cut(s, "/")
	if !strings.HasPrefix(entity, "client.") || len(entity) == len("client.") {
		return fmt.Errorf("blocklist entry %q: want client.NAME, client.NAME/NONCE or an IP address (only clients can be blocklisted)", s)
	}
	if inst {
		if _, err := strconv.ParseUint(nonce, 16, 64); err != nil || nonce == "" {
			return fmt.Errorf("blocklist entry %q: instance nonce %q is not hexadecimal", s, nonce)
		}
	}
	return nil
}

// Blocklisted reports whether the map refuses client instance nonce of
// entity, connecting from address ip (empty: unknown), at time now: its
// entity, the instance or the address is listed, until a later time.
func (m *Map) Blocklisted(entity string, nonce uint64, ip string, now time.Time) bool {
	if len(m.Blocklist) == 0 {
		return false
	}
	t := now.UnixNano()
	for _, k := range []string{entity, InstanceName(entity, nonce), ip} {
		if until, ok := m.Blocklist[k]; ok && k != "" && until > t {
			return true
		}
	}
	return false
}

// InstanceBlocklisted is Blocklisted for a client instance by its
// InstanceName (its address unknown); a name that is not one is not
// refused.
func (m *Map) InstanceBlocklisted(instance string, now time.Time) bool {
	entity, nonce, ok := ParseInstance(instance)
	return ok && m.Blocklisted(entity, nonce, "", now)
}

// BlocklistEntries returns the entries in force at now, sorted.
func (m *Map) BlocklistEntries(now time.Time) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m.Blocklist)) {
		if m.Blocklist[k] > now.UnixNano() {
			out = append(out, k)
		}
	}
	return out
}
