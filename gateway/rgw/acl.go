package rgw

import (
	"context"
	"strings"
	"time"

	"github.com/shoal-project/shoal/gateway/s3err"
)

// Permissions.
const (
	PermRead        = "READ"
	PermWrite       = "WRITE"
	PermReadACP     = "READ_ACP"
	PermWriteACP    = "WRITE_ACP"
	PermFullControl = "FULL_CONTROL"
)

// Grantee groups.
const (
	GroupAllUsers      = "http://acs.amazonaws.com/groups/global/AllUsers"
	GroupAuthenticated = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
	GroupLogDelivery   = "http://acs.amazonaws.com/groups/s3/LogDelivery"
)

// Grant gives a grantee — a user (ID) or a group (URI) — a permission.
type Grant struct {
	ID    string `json:"id,omitempty"`
	Email string `json:"email,omitempty"` // the address the grant named (resolved to ID)
	URI   string `json:"uri,omitempty"`
	Perm  string `json:"perm"`
}

// ACL is a bucket's or object's list of grants.
type ACL []Grant

// Allows reports whether uid ("" for an anonymous request) holds perm
// under the grants of a resource owned by owner.
func (a ACL) Allows(owner, uid, perm string) bool {
	if uid != "" && uid == owner {
		return true
	}
	for _, g := range a {
		if g.Perm != perm && g.Perm != PermFullControl {
			continue
		}
		switch {
		case g.URI == GroupAllUsers,
			g.URI == GroupAuthenticated && uid != "",
			g.ID != "" && g.ID == uid:
			return true
		}
	}
	return false
}

// WithOwner is the ACL as shown: the default (nil) is the owner's
// FULL_CONTROL.
func (a ACL) WithOwner(owner string) ACL {
	if a == nil {
		return ACL{{ID: owner, Perm: PermFullControl}}
	}
	return a
}

// UserByEmail finds the user with an e-mail address (UnresolvableGrantByEmailAddress).
func (s *Store) UserByEmail(ctx context.Context, email string) (string, error) {
	uids, err := s.ListUsers(ctx)
	if err != nil {
		return "", err
	}
	for _, uid := range uids {
		if u, err := s.GetUser(ctx, uid); err == nil && strings.EqualFold(u.Email, email) {
			return uid, nil
		}
	}
	return "", s3err.UnresolvableGrantByEmail.With("no user has the address %q", email)
}

// DisplayName is a user's display name (its ID if unknown), cached.
func (s *Store) DisplayName(ctx context.Context, uid string) string {
	if uid == "" {
		return ""
	}
	s.mu.Lock()
	c, ok := s.names[uid]
	s.mu.Unlock()
	if ok && time.Since(c.when) < cacheTTL {
		return c.name
	}
	name := uid
	if u, err := s.GetUser(ctx, uid); err == nil {
		name = u.DisplayName
	}
	s.mu.Lock()
	s.names[uid] = cachedName{name: name, when: time.Now()}
	s.mu.Unlock()
	return name
}

type cachedName struct {
	name string
	when time.Time
}

// GrantsOthers reports whether a grants anyone but owner anything.
func (a ACL) GrantsOthers(owner string) bool {
	for _, g := range a {
		if g.ID != owner || g.URI != "" {
			return true
		}
	}
	return false
}
