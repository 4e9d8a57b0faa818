package rgw

import (
	"regexp"
	"strings"
)

// Tenants, as RGW's multi-tenancy (Ceph docs, "RGW Multi-tenancy"): every
// user and bucket lies under a tenant, the empty "legacy" tenant unless
// named. A tenanted user's id is "TENANT$UID"; its buckets live in its
// tenant's namespace, so two tenants may each own a bucket "photos".
// Tenants have no record of their own: they exist while a user names them.
//
// In the store a bucket's name (Bucket.Name, the key of its entry point
// and of every queue that names it) is its key, "TENANT/BUCKET" or the
// bare BUCKET in the legacy tenant; neither part may hold '/' or ':', so
// the key splits one way only. S3 requests name a bucket of their user's
// own tenant by its bare name and any other as "TENANT:BUCKET" (":BUCKET"
// for the legacy tenant), in path-style requests only, since ':' is not
// allowed in a host name.

// tenantRE is a tenant's name: RGW allows letters, digits and '_'.
var tenantRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// UserTenant returns the tenant of user id uid ("" for the legacy tenant).
func UserTenant(uid string) string {
	t, _, ok := strings.Cut(uid, "$")
	if !ok {
		return ""
	}
	return t
}

// UserName returns uid without its tenant.
func UserName(uid string) string {
	if _, u, ok := strings.Cut(uid, "$"); ok {
		return u
	}
	return uid
}

// BucketKey returns the store's key of bucket name in tenant.
func BucketKey(tenant, name string) string {
	if tenant == "" {
		return name
	}
	return tenant + "/" + name
}

// SplitBucketKey splits a bucket's key into its tenant and S3 name.
func SplitBucketKey(key string) (tenant, name string) {
	if t, n, ok := strings.Cut(key, "/"); ok {
		return t, n
	}
	return "", key
}

// Tenant returns the tenant the bucket lies under ("" legacy).
func (b *Bucket) Tenant() string {
	t, _ := SplitBucketKey(b.Name)
	return t
}

// S3Name returns the bucket's name as S3 requests and answers give it,
// without its tenant.
func (b *Bucket) S3Name() string {
	_, n := SplitBucketKey(b.Name)
	return n
}

// RequestBucketKey resolves the bucket an S3 request names, as RGW: a
// "TENANT:BUCKET" name is that tenant's (":BUCKET" the legacy tenant's),
// a bare name the requesting user's tenant's. ok is false for a tenant
// name that is not valid.
func RequestBucketKey(uid, requested string) (key string, ok bool) {
	if t, n, found := strings.Cut(requested, ":"); found {
		if t != "" && !tenantRE.MatchString(t) {
			return "", false
		}
		return BucketKey(t, n), true
	}
	return BucketKey(UserTenant(uid), requested), true
}
