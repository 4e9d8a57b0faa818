package rgw

// ACLsDisabled reports whether b's object ownership is BucketOwnerEnforced.
func (b *Bucket) ACLsDisabled() bool { return b != nil && b.Ownership == OwnershipBucketOwnerEnforced }

// ObjectOwnerACL is o's owner and ACL as they count in b: with ACLs
// disabled, the bucket's owner and none.
func (b *Bucket) ObjectOwnerACL(o *Object) (string, ACL) {
	if b.ACLsDisabled() {
		return b.Owner, nil
	}
	return o.Info.Owner, o.Info.ACL
}

// The object ownership settings of a bucket (S3 user guide, "Controlling
// ownership of objects"; ownership.go in the gateway says what each does).
const (
	OwnershipObjectWriter         = "ObjectWriter"
	OwnershipBucketOwnerPreferred = "BucketOwnerPreferred"
	OwnershipBucketOwnerEnforced  = "BucketOwnerEnforced"
)

// PayerRequester is a Requester Pays bucket's Payer (S3 user guide,
// "Using Requester Pays buckets"): every request from someone other than
// the bucket's owner must say, with x-amz-request-payer: requester, that
// it accepts the charges, or is refused. Shoal bills nothing; the rule is
// enforced as S3 documents it.
const PayerRequester = "Requester"

// RequesterPays reports whether b is a Requester Pays bucket.
func (b *Bucket) RequesterPays() bool { return b != nil && b.Payer == PayerRequester }
