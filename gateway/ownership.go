package gateway

import (
	"context"
	"encoding/xml"
	"net/http"

	"github.com/shoal-project/shoal/gateway/rgw"
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
	cannedBucketOwnerFullControl = "bucket-owner-full-control"
	objectOwnershipHeader        = "x-amz-object-ownership"
)

// validOwnership checks an ObjectOwnership value.
func validOwnership(v string) error {
	switch v {
	case rgw.OwnershipObjectWriter, rgw.OwnershipBucketOwnerPreferred, rgw.OwnershipBucketOwnerEnforced:
		return nil
	}
	return s3err.InvalidArgument.With("ObjectOwnership %q: want ObjectWriter, BucketOwnerPreferred or BucketOwnerEnforced", v)
}

// objectOwnerACL is the owner and ACL of an object uid writes into b with
// the ACL headers of h, under b's object ownership.
func (srv *Server) objectOwnerACL(ctx context.Context, h http.Header, uid string, b *rgw.Bucket) (string, rgw.ACL, error) {
	canned := h.Get("x-amz-acl")
	switch b.Ownership {
	case rgw.OwnershipBucketOwnerEnforced:
		if (canned != "" && canned != cannedBucketOwnerFullControl) || hasGrantHeaders(h) {
			return "", nil, s3err.AccessControlListNotSupported.With("bucket %q has BucketOwnerEnforced object ownership: ACLs are disabled", b.Name)
		}
		return b.Owner, nil, nil
	case rgw.OwnershipBucketOwnerPreferred:
		if canned == cannedBucketOwnerFullControl {
			return b.Owner, nil, nil
		}
	}
	acl, err := srv.requestACL(ctx, h, uid, b)
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
func (srv *Server) uploadOwners(ctx context.Context, u *rgw.Upload) (own, initiator owner) {
	own = owner{ID: u.Owner, DisplayName: srv.s.DisplayName(ctx, u.Owner)}
	if id := u.InitiatedBy(); id != u.Owner {
		return own, owner{ID: id, DisplayName: srv.s.DisplayName(ctx, id)}
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
		if v == rgw.OwnershipBucketOwnerEnforced && b.ACL.GrantsOthers(b.Owner) {
			return s3err.InvalidBucketAclWithObjectOwnership.With("bucket %q's ACL grants others access: set it to private first", b.Name)
		}
		return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *rgw.Bucket) { nb.Ownership = v })
	case http.MethodDelete:
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *rgw.Bucket) { nb.Ownership = "" })
	}
	return s3err.MethodNotAllowed
}
