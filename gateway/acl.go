package gateway

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// S3 access control lists (the AWS S3 API reference, "Access control list
// (ACL) overview"; RGW keeps the same model). A bucket's ACL is kept in its
// entry point, an object's in its head's metadata; nil means the default,
// the owner's FULL_CONTROL alone.
//
// Permissions: on a bucket READ lists it, WRITE creates, overwrites and
// deletes its objects; on an object READ reads it; READ_ACP and WRITE_ACP
// read and replace the ACL; FULL_CONTROL is all of them. A bucket's owner
// holds every permission on it and the owner of an object (its writer)
// every permission on the object whatever the grants say, so no owner can
// lock itself out. Grantees are users (by ID, or by e-mail address at
// grant time) and the groups AllUsers (anonymous requests included) and
// AuthenticatedUsers.

// cannedACL is the ACL a canned name (x-amz-acl) stands for, on a
// resource owned by owner in a bucket owned by bucketOwner.
func cannedACL(name, owner, bucketOwner string) (rgw.ACL, error) {
	own := rgw.Grant{ID: owner, Perm: rgw.PermFullControl}
	switch name {
	case "private":
		return rgw.ACL{own}, nil
	case "public-read":
		return rgw.ACL{own, {URI: rgw.GroupAllUsers, Perm: rgw.PermRead}}, nil
	case "public-read-write":
		return rgw.ACL{own, {URI: rgw.GroupAllUsers, Perm: rgw.PermRead}, {URI: rgw.GroupAllUsers, Perm: rgw.PermWrite}}, nil
	case "authenticated-read":
		return rgw.ACL{own, {URI: rgw.GroupAuthenticated, Perm: rgw.PermRead}}, nil
	case "bucket-owner-read":
		if bucketOwner == owner {
			return rgw.ACL{own}, nil
		}
		return rgw.ACL{own, {ID: bucketOwner, Perm: rgw.PermRead}}, nil
	case "bucket-owner-full-control":
		if bucketOwner == owner {
			return rgw.ACL{own}, nil
		}
		return rgw.ACL{own, {ID: bucketOwner, Perm: rgw.PermFullControl}}, nil
	case "log-delivery-write":
		return rgw.ACL{own, {URI: rgw.GroupLogDelivery, Perm: rgw.PermWrite}, {URI: rgw.GroupLogDelivery, Perm: rgw.PermReadACP}}, nil
	}
	return nil, s3err.InvalidArgument.With("unknown canned ACL %q", name)
}

// grantHeaders are the x-amz-grant-* headers and the permission each gives.
var grantHeaders = []struct{ header, perm string }{
	{"x-amz-grant-read", rgw.PermRead}, {"x-amz-grant-write", rgw.PermWrite}, {"x-amz-grant-read-acp", rgw.PermReadACP},
	{"x-amz-grant-write-acp", rgw.PermWriteACP}, {"x-amz-grant-full-control", rgw.PermFullControl},
}

// requestACL is the ACL a request's x-amz-acl or x-amz-grant-* headers
// ask for (nil if none: the default), for a resource owned by owner in
// bucket b (nil: the bucket being created, owned by owner). Both kinds at
// once are refused, as S3 does, and so is a public ACL in a bucket that
// blocks them (AccessDenied).
func (srv *Server) requestACL(ctx context.Context, h http.Header, owner string, b *rgw.Bucket) (rgw.ACL, error) {
	bucketOwner := owner
	if b != nil {
		bucketOwner = b.Owner
	}
	canned := h.Get("x-amz-acl")
	var grants rgw.ACL
	for _, gh := range grantHeaders {
		for _, v := range h.Values(gh.header) {
			for _, item := range strings.Split(v, ",") {
				kind, val, ok := strings.Cut(strings.TrimSpace(item), "=")
				val = strings.Trim(strings.TrimSpace(val), `"`)
				if !ok || val == "" {
					return nil, s3err.InvalidArgument.With("%s: want id=, uri= or emailAddress= grantees", gh.header)
				}
				g := rgw.Grant{Perm: gh.perm}
				switch strings.ToLower(strings.TrimSpace(kind)) {
				case "id":
					g.ID = val
				case "uri":
					g.URI = val
				case "emailaddress":
					g.Email = val
				default:
					return nil, s3err.InvalidArgument.With("%s: unknown grantee type %q", gh.header, kind)
				}
				if err := srv.checkGrantee(ctx, &g); err != nil {
					return nil, err
				}
				grants = append(grants, g)
			}
		}
	}
	switch {
	case canned != "" && grants != nil:
		return nil, s3err.InvalidRequest.With("specify either a canned ACL or x-amz-grant headers, not both")
	case canned != "":
		a, err := cannedACL(canned, owner, bucketOwner)
		if err != nil {
			return nil, err
		}
		return a, b.CheckPublicACL(a)
	}
	return grants, b.CheckPublicACL(grants)
}

// checkGrantee makes a grant's user exist (resolving an e-mail address
// to its user) and its group a known one.
func (srv *Server) checkGrantee(ctx context.Context, g *rgw.Grant) error {
	switch {
	case g.URI != "":
		if g.URI != rgw.GroupAllUsers && g.URI != rgw.GroupAuthenticated && g.URI != rgw.GroupLogDelivery {
			return s3err.InvalidArgument.With("unknown grantee group %q", g.URI)
		}
	case g.Email != "":
		uid, err := srv.s.UserByEmail(ctx, g.Email)
		if err != nil {
			return err
		}
		g.ID = uid
	case g.ID != "":
		if _, err := srv.s.GetUser(ctx, g.ID); errors.Is(err, rgw.ErrNoSuchUser) {
			return s3err.InvalidArgument.With("grantee %q is not a user", g.ID)
		} else if err != nil {
			return err
		}
	default:
		return s3err.InvalidArgument.With("a grant names no grantee")
	}
	switch g.Perm {
	case rgw.PermRead, rgw.PermWrite, rgw.PermReadACP, rgw.PermWriteACP, rgw.PermFullControl:
		return nil
	}
	return s3err.MalformedACL.With("unknown permission %q", g.Perm)
}

// policyXML is an ACL as S3's AccessControlPolicy document.
func (srv *Server) policyXML(ctx context.Context, ownerID string, a rgw.ACL) accessControlPolicy {
	p := accessControlPolicy{Xmlns: s3NS, Owner: owner{ID: ownerID, DisplayName: srv.s.DisplayName(ctx, ownerID)}}
	// group grants first, then users (an e-mail grant as the user it
	// resolved to), each in the order given — as RGW answers
	var groups, users []grant
	for _, g := range a.WithOwner(ownerID) {
		var x grant
		x.Grantee.XMLNS = "http://www.w3.org/2001/XMLSchema-instance"
		x.Permission = g.Perm
		if g.URI != "" {
			x.Grantee.Type, x.Grantee.URI = "Group", g.URI
			groups = append(groups, x)
			continue
		}
		x.Grantee.Type, x.Grantee.ID, x.Grantee.DisplayName = "CanonicalUser", g.ID, srv.s.DisplayName(ctx, g.ID)
		users = append(users, x)
	}
	p.Grants = append(groups, users...)
	return p
}

// parsePolicy reads an AccessControlPolicy document (PUT ?acl) into
// grants, for a resource owned by ownerID.
func (srv *Server) parsePolicy(ctx context.Context, body []byte, ownerID string) (rgw.ACL, error) {
	var p accessControlPolicyIn
	if err := xml.Unmarshal(body, &p); err != nil {
		return nil, s3err.MalformedACL.With("%v", err)
	}
	if p.Owner.ID != "" && p.Owner.ID != ownerID {
		return nil, s3err.AccessDenied.With("the policy names owner %q; the owner is %q", p.Owner.ID, ownerID)
	}
	a := rgw.ACL{}
	for _, x := range p.Grants {
		g := rgw.Grant{Perm: x.Permission}
		switch x.Grantee.Type {
		case "CanonicalUser":
			g.ID = x.Grantee.ID
		case "Group":
			g.URI = x.Grantee.URI
		case "AmazonCustomerByEmail":
			g.Email = x.Grantee.Email
		default:
			return nil, s3err.MalformedACL.With("unknown grantee type %q", x.Grantee.Type)
		}
		if err := srv.checkGrantee(ctx, &g); err != nil {
			return nil, err
		}
		a = append(a, g)
	}
	return a, nil
}

// readSmallBody reads a request body of at most 1 MiB (an XML document).
func readSmallBody(r *http.Request) ([]byte, error) { return readBody(r, 1<<20) }

// readBody reads a whole request body of at most max bytes; a longer one
// is refused (EntityTooLarge) rather than cut, so every body a handler
// acts on was read to its end, where its signed payload hash (SigV4) and
// Content-MD5 are checked.
func readBody(r *http.Request, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, s3err.Body(err)
	}
	if int64(len(b)) > max {
		return nil, s3err.EntityTooLarge.With("this request's body may have at most %d bytes", max)
	}
	return b, nil
}

// readXMLBody reads a small request body (at most 1 MiB) into the XML
// document v: MalformedXML if it does not parse.
func readXMLBody(r *http.Request, v any) error {
	body, err := readSmallBody(r)
	if err != nil {
		return err
	}
	if xml.Unmarshal(body, v) != nil {
		return s3err.MalformedXML
	}
	return nil
}

// aclFromRequest is the ACL a PUT ?acl asks for: from its headers, or
// else from its AccessControlPolicy body; for a resource owned by ownerID
// in bucket b, whose public access block it obeys.
func (srv *Server) aclFromRequest(ctx context.Context, r *http.Request, ownerID string, b *rgw.Bucket) (rgw.ACL, error) {
	a, err := srv.requestACL(ctx, r.Header, ownerID, b)
	if err != nil || a != nil {
		return a, err
	}
	body, err := readSmallBody(r)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, s3err.MalformedACL.With("PUT ?acl needs x-amz-acl, x-amz-grant-* headers or an AccessControlPolicy body")
	}
	if a, err = srv.parsePolicy(ctx, body, ownerID); err != nil {
		return nil, err
	}
	return a, b.CheckPublicACL(a)
}

// errDenied is AccessDenied for a missing permission.
func errDenied(uid, perm, what string) error {
	who := "anonymous requests"
	if uid != "" {
		who = fmt.Sprintf("user %q", uid)
	}
	return s3err.AccessDenied.With("%s may not %s %s", who, permVerb[perm], what)
}

var permVerb = map[string]string{rgw.PermRead: "read", rgw.PermWrite: "write to", rgw.PermReadACP: "read the ACL of",
	rgw.PermWriteACP: "change the ACL of", rgw.PermFullControl: "control"}
