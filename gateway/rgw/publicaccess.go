package rgw

import "github.com/shoal-project/shoal/gateway/s3err"

// PublicAccessBlock is a bucket's public access block configuration (the
// S3 API reference, "PutPublicAccessBlock").
type PublicAccessBlock struct {
	BlockPublicAcls       bool `json:"block_acls" xml:"BlockPublicAcls"`
	IgnorePublicAcls      bool `json:"ignore_acls" xml:"IgnorePublicAcls"`
	BlockPublicPolicy     bool `json:"block_policy" xml:"BlockPublicPolicy"`
	RestrictPublicBuckets bool `json:"restrict" xml:"RestrictPublicBuckets"`
}

// IsPublic reports whether an ACL grants anything to AllUsers or
// AuthenticatedUsers.
func (a ACL) IsPublic() bool {
	for _, g := range a {
		if g.URI == GroupAllUsers || g.URI == GroupAuthenticated {
			return true
		}
	}
	return false
}

// withoutPublic is the ACL without its grants to AllUsers and
// AuthenticatedUsers (IgnorePublicAcls).
func (a ACL) withoutPublic() ACL {
	if !a.IsPublic() {
		return a
	}
	out := ACL{}
	for _, g := range a {
		if g.URI != GroupAllUsers && g.URI != GroupAuthenticated {
			out = append(out, g)
		}
	}
	return out
}

// EffectiveACL is acl as b's public access block and object ownership
// let it count (BucketOwnerEnforced: ACLs grant nothing).
func (b *Bucket) EffectiveACL(acl ACL) ACL {
	if b.ACLsDisabled() {
		return nil
	}
	if b.PublicAccess != nil && b.PublicAccess.IgnorePublicAcls {
		return acl.withoutPublic()
	}
	return acl
}

// ParsedPolicy is parse(b.Policy, b.Name), computed once per loaded
// bucket: a bucket is cached for at most cacheTTL and loaded again after
// a change, so the S3 edge parses a bucket's policy once, not per request.
// Every call returns the first call's result; nil when b has no policy.
func (b *Bucket) ParsedPolicy(parse func(doc, bucket string) any) any {
	b.policyOnce.Do(func() {
		if b.Policy != "" {
			b.policy = parse(b.Policy, b.Name)
		}
	})
	return b.policy
}

// CheckPublicACL refuses (AccessDenied) an ACL that grants AllUsers or
// AuthenticatedUsers anything when b (nil: none yet) blocks public ACLs.
func (b *Bucket) CheckPublicACL(a ACL) error {
	if b != nil && b.PublicAccess != nil && b.PublicAccess.BlockPublicAcls && a.IsPublic() {
		return s3err.AccessDenied.With("bucket %q blocks public ACLs (BlockPublicAcls)", b.Name)
	}
	return nil
}
