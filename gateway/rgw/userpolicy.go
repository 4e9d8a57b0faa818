package rgw

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Users' administrative capabilities and inline IAM policies (RGW's user
// caps and its IAM user-policy API). The S3 edge parses and evaluates the
// policies; this layer keeps them in the user's record and caches them
// per user for cacheTTL, as keys are.

// CapUserPolicy is the capability to manage other users' policies
// (RGW's "user-policy" cap).
const CapUserPolicy = "user-policy"

// ErrNoSuchPolicy: the user has no policy of that name.
var ErrNoSuchPolicy = errors.New("no such user policy")

type cachedAccess struct {
	caps, policies map[string]string
	user           *User // the whole record (quota.go)
	when           time.Time
}

// validCapPerm reports whether p is a capability's permission.
func validCapPerm(p string) bool { return p == "read" || p == "write" || p == "*" }

// ParseCaps parses radosgw-admin's capability list "TYPE=PERM[;TYPE=PERM]"
// (PERM read, write or *).
func ParseCaps(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, c := range strings.Split(s, ";") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		t, p, ok := strings.Cut(c, "=")
		t, p = strings.TrimSpace(t), strings.TrimSpace(p)
		if !ok || t == "" || !validCapPerm(p) {
			return nil, fmt.Errorf("capability %q: want TYPE=read|write|*", c)
		}
		out[t] = p
	}
	if len(out) == 0 {
		return nil, errors.New("no capability given")
	}
	return out, nil
}

// SetCaps adds (add) or removes the capabilities caps of user uid.
func (s *Store) SetCaps(ctx context.Context, uid string, caps map[string]string, add bool) (*User, error) {
	u, err := s.updateUser(ctx, uid, func(u *User) error {
		if u.Caps == nil {
			u.Caps = map[string]string{}
		}
		for t, p := range caps {
			if add {
				u.Caps[t] = p
			} else {
				delete(u.Caps, t)
			}
		}
		return nil
	})
	s.forgetAccess(uid)
	return u, err
}

// HasCap reports whether caps grant perm ("read" or "write") of type t.
func HasCap(caps map[string]string, t, perm string) bool {
	p := caps[t]
	return p == "*" || (p != "" && p == perm)
}

// PutUserPolicy sets user uid's inline policy name to doc (checked by the
// caller). ErrNoSuchUser if there is no such user.
func (s *Store) PutUserPolicy(ctx context.Context, uid, name, doc string) error {
	_, err := s.updateUser(ctx, uid, func(u *User) error {
		if u.Policies == nil {
			u.Policies = map[string]string{}
		}
		u.Policies[name] = doc
		return nil
	})
	s.forgetAccess(uid)
	return err
}

// DeleteUserPolicy removes user uid's policy name (ErrNoSuchUser,
// ErrNoSuchPolicy).
func (s *Store) DeleteUserPolicy(ctx context.Context, uid, name string) error {
	_, err := s.updateUser(ctx, uid, func(u *User) error {
		if _, ok := u.Policies[name]; !ok {
			return fmt.Errorf("user %q policy %q: %w", uid, name, ErrNoSuchPolicy)
		}
		delete(u.Policies, name)
		return nil
	})
	s.forgetAccess(uid)
	return err
}

// UserPolicyNames lists user uid's policy names, sorted (ErrNoSuchUser).
func (s *Store) UserPolicyNames(ctx context.Context, uid string) ([]string, error) {
	u, err := s.GetUser(ctx, uid)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(u.Policies)), nil
}

// UserAccess returns user uid's capabilities and policies as at most
// cacheTTL ago (empty for an unknown user: the request was authenticated,
// so the user was just removed).
func (s *Store) UserAccess(ctx context.Context, uid string) (caps, policies map[string]string, err error) {
	s.mu.Lock()
	c, ok := s.access[uid]
	s.mu.Unlock()
	if ok && time.Since(c.when) < cacheTTL {
		return c.caps, c.policies, nil
	}
	u, err := s.GetUser(ctx, uid)
	if errors.Is(err, ErrNoSuchUser) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.access[uid] = cachedAccess{caps: u.Caps, policies: u.Policies, user: u, when: time.Now()}
	s.mu.Unlock()
	return u.Caps, u.Policies, nil
}

func (s *Store) forgetAccess(uid string) {
	s.mu.Lock()
	delete(s.access, uid)
	s.mu.Unlock()
}
