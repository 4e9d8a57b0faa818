// Package gateway is Shoal's S3 gateway (Ceph: RGW): the S3 REST API over
// the object store, stateless so that any number of gateways serve one
// cluster.
//
// It is two layers, as RGW is a front end over its RADOS store driver:
//
//   - this package, the S3 edge: HTTP routing, authentication (SigV4,
//     SigV2, POST forms), authorization (ACLs, bucket policies, public
//     access blocks), the XML and header forms of requests and answers,
//     CORS, and the rendering of errors;
//   - package gateway/rgw, the storage layer: users and keys, buckets and
//     their index, objects as head and tail RADOS objects, multipart
//     uploads, garbage collection, lifecycle expiration and resharding,
//     over a *client.Conn (the tests run both on internal/memrados, no
//     cluster needed).
//
// The layer answers in S3's terms where the answer is S3's (no such key,
// bucket not empty, bad digest: package gateway/s3err), and knows nothing
// of HTTP; the edge holds no state, only the Store it serves.
//
// # Authentication
//
// AWS Signature V4 (header, presigned query, aws-chunked streaming
// payloads with per-chunk signatures, trailing checksums) and V2, against
// users and keys kept in the meta pool and cached for at most 5 s.
// Buckets belong to the user that created them, objects to their writer;
// S3 ACLs (acl.go) grant other users, AuthenticatedUsers and AllUsers
// (anonymous requests) access; bucket policies (policy.go) refuse or grant
// beyond them, and public access blocks restrict both.
// A bucket's CORS rules (cors.go) answer browsers' preflights, which
// carry no signature, and add Access-Control-* headers to their requests.
// Lifecycle configurations (lifecycle.go) are read and checked here;
// package rgw keeps the rules with the bucket and runs the daily pass
// that expires objects and aborts old uploads.
package gateway
