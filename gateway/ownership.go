package gateway

import (
	"context"
	"encoding/xml"
	"net/http"

	"github.com/shoal-project/shoal/gateway/s3err"
)

// S3 Object Ownership (the AWS S3 API reference, PutBucketOwnershipControls,
// and the user guide's "Controlling ownership of objects and disabling
// ACLs"): a bucket's setting says who owns the objects written into it.
//
//   - ObjectWriter: the writer owns what it writes (S3's behaviour before
//     the setting existed, and a bucket's without one: RGW's default).
//   - BucketOwnerPreferred: the bucket's owner owns what is written with the
//     canned ACL bucket-owner-full-control; the writer owns the rest.
//   - BucketOwnerEnforced: ACLs are disabled. The bucket's owner owns every
//     object, ACLs grant nothing (access is by bucket policy), and a
//     request that sets an ACL other than bucket-owner-full-control is
//     refused with AccessControlListNotSupported — as is turning this on
//     while the bucket's ACL grants anyone else anything
//     (InvalidBucketAclWithObjectOwnership).
const (
	OwnershipObjectWriter         = "ObjectWriter"
	OwnershipBucketOwnerPreferred = "BucketOwnerPreferred"
	OwnershipBucketOwnerEnforced  = "BucketOwnerEnforced"
	cannedBucketOwnerFullControl  = "bucket-owner-full-control"
	objectOwnershipHeader         = "x-amz-object-ownership"
)

// aclsDisabled reports whether b's object ownership is BucketOwnerEnforced.
func (b *Bucket) aclsDisabled() bool { return b != nil && b.Ownership == OwnershipBucketOwnerEnforced }

// validOwnership checks an ObjectOwnership value.
func validOwnership(v string) error {
	switch v {
	case OwnershipObjectWriter, OwnershipBucketOwnerPreferred, OwnershipBucketOwnerEnforced:
		return nil
	}
	return s3err.InvalidArgument.With("ObjectOwnership %q: want ObjectWriter, BucketOwnerPreferred or BucketOwnerEnforced", v)
}

// grantsOthers reports whether a grants anyone but owner anything.
func (a ACL) grantsOthers(owner string) bool {
	for _, g := range a {
		if g.ID != owner || g.URI != "" {
			return true
		}
	}
	return false
}

// objectOwnerACL is o's owner and ACL as they count in b: with ACLs
// disabled, the bucket's owner and none.
func (b *Bucket) objectOwnerACL(o *Object) (string, ACL) {
	if b.aclsDisabled() {
		return b.Owner, nil
	}
	return o.info.Owner, o.info.ACL
}

// objectOwnerACL is the owner and ACL of an object uid writes into b with
// the ACL headers of h, under b's object ownership.
func (s *Store) objectOwnerACL(ctx context.Context, h http.Header, uid string, b *Bucket) (string, ACL, error) {
	canned := h.Get("x-amz-acl")
	switch b.Ownership {
	case OwnershipBucketOwnerEnforced:
		if (canned != "" && canned != cannedBucketOwnerFullControl) || hasGrantHeaders(h) {
			return "", nil, s3err.AccessControlListNotSupported.With("bucket %q has BucketOwnerEnforced object ownership: ACLs are disabled", b.Name)
		}
		return b.Owner, nil, nil
	case OwnershipBucketOwnerPreferred:
		if canned == cannedBucketOwnerFullControl {
			return b.Owner, nil, nil
		}
	}
	acl, err := s.requestACL(ctx, h, uid, b)
	return uid, acl, err
}

// hasGrantHeaders reports whether h carries any x-amz-grant-* header.
func hasGrantHeaders(h http.Header) bool {
	for _, gh := range grantHeaders {
		if len(h.Values(gh.header)) > 0 {
			return true
		}
	}
	return false
}

// uploadOwners are a multipart upload's owner (the completed object's)
// and initiator as listings show them.
func (s *Store) uploadOwners(ctx context.Context, u *Upload) (own, initiator owner) {
	own = owner{ID: u.Owner, DisplayName: s.displayName(ctx, u.Owner)}
	if id := u.initiator(); id != u.Owner {
		return own, owner{ID: id, DisplayName: s.displayName(ctx, id)}
	}
	return own, own
}

type ownershipControls struct {
	XMLName xml.Name        `xml:"OwnershipControls"`
	Xmlns   string          `xml:"xmlns,attr,omitempty"`
	Rules   []ownershipRule `xml:"Rule"`
}

type ownershipRule struct {
	ObjectOwnership string `xml:"ObjectOwnership"`
}

// bucketOwnership serves GET, PUT and DELETE ?ownershipControls (the
// bucket's owner only).
func (srv *Server) bucketOwnership(rq *request) error {
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	switch rq.r.Method {
	case http.MethodGet:
		if b.Ownership == "" {
			return s3err.OwnershipControlsNotFound.With("bucket %q has no ownership controls", b.Name)
		}
		return writeXML(rq, http.StatusOK, ownershipControls{Xmlns: s3NS, Rules: []ownershipRule{{b.Ownership}}})
	case http.MethodPut:
		var c ownershipControls
		if err := readXMLBody(rq.r, &c); err != nil {
			return err
		}
		if len(c.Rules) != 1 {
			return s3err.MalformedXML.With("OwnershipControls needs exactly one Rule")
		}
		v := c.Rules[0].ObjectOwnership
		if err := validOwnership(v); err != nil {
			return s3err.MalformedXML.With("%v", err)
		}
		if v == OwnershipBucketOwnerEnforced && b.ACL.grantsOthers(b.Owner) {
			return s3err.InvalidBucketAclWithObjectOwnership.With("bucket %q's ACL grants others access: set it to private first", b.Name)
		}
		return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *Bucket) { nb.Ownership = v })
	case http.MethodDelete:
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *Bucket) { nb.Ownership = "" })
	}
	return s3err.MethodNotAllowed
}
