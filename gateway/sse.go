package gateway

import (
	"crypto/md5"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Server-side encryption headers (S3's "Using server-side encryption"):
// x-amz-server-side-encryption: AES256 (SSE-S3); the three
// x-amz-server-side-encryption-customer-* headers (SSE-C), and with the
// x-amz-copy-source- prefix for a copy's source. Package rgw encrypts
// and decrypts (sse.go).

const sseCustomer = "x-amz-server-side-encryption-customer-"

// sseFromHeaders reads the encryption a request asks for with prefix ""
// (the object written or read) or "x-amz-copy-source-" (a copy's
// source): nil for none. SSE-KMS answers NotImplemented (no KMS is
// configured); a malformed or mismatched key, InvalidArgument; SSE-C over
// plain HTTP while rgw_crypt_require_ssl holds, InvalidRequest.
func (srv *Server) sseFromHeaders(rq *request, prefix string) (*rgw.SSERequest, error) {
	h := rq.r.Header
	cust := sseCustomer // x-amz-server-side-encryption-customer-
	if prefix != "" {
		cust = prefix + strings.TrimPrefix(sseCustomer, "x-amz-") // x-amz-copy-source-server-side-encryption-customer-
	}
	alg := h.Get(cust + "algorithm")
	key, keyMD5 := h.Get(cust+"key"), h.Get(cust+"key-MD5")
	var sse *rgw.SSERequest
	if prefix == "" {
		var err error
		if sse, err = sseS3(h.Get("x-amz-server-side-encryption")); err != nil {
			return nil, err
		}
		if h.Get("x-amz-server-side-encryption-aws-kms-key-id") != "" || h.Get("x-amz-server-side-encryption-context") != "" {
			return nil, s3err.NotImplemented.With("SSE-KMS needs a KMS; none is configured")
		}
	}
	if alg == "" && key == "" && keyMD5 == "" {
		return sse, nil
	}
	if sse != nil {
		return nil, s3err.InvalidArgument.With("a request asks for SSE-S3 or SSE-C, not both")
	}
	if srv.opt.CryptRequireSSL && rq.r.TLS == nil {
		return nil, s3err.InvalidRequest.With("Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.")
	}
	if alg != "AES256" {
		return nil, s3err.InvalidArgument.With("%salgorithm must be AES256", cust)
	}
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(k) != 32 {
		return nil, s3err.InvalidArgument.With("The secret key was invalid for the specified algorithm (want 32 bytes, base64).")
	}
	sum := md5.Sum(k)
	if want := base64.StdEncoding.EncodeToString(sum[:]); keyMD5 != want {
		return nil, s3err.InvalidArgument.With("The calculated MD5 hash of the key did not match the hash that was provided.")
	}
	return &rgw.SSERequest{Mode: rgw.SSEC, Key: k, KeyMD5: keyMD5}, nil
}

// sseS3 reads an x-amz-server-side-encryption value (a header, or a POST
// form's field): nil for none, SSE-S3 for AES256; aws:kms is
// NotImplemented (no KMS is configured), anything else InvalidArgument.
func sseS3(v string) (*rgw.SSERequest, error) {
	switch {
	case v == "":
		return nil, nil
	case v == "AES256":
		return &rgw.SSERequest{Mode: rgw.SSES3}, nil
	case strings.HasPrefix(v, "aws:kms"):
		return nil, s3err.NotImplemented.With("server-side encryption %s needs a KMS; none is configured", v)
	}
	return nil, s3err.InvalidArgument.With("x-amz-server-side-encryption %q: AES256 is the one algorithm", v)
}

// decrypt readies encrypted object o for reading with the key the
// request's headers give (prefix as sseFromHeaders'). A read of the
// object itself (prefix "": GET, HEAD, GetObjectAttributes) that sends
// x-amz-server-side-encryption is InvalidArgument, as in S3: SSE-S3
// needs nothing from the reader.
func (srv *Server) decrypt(rq *request, o *rgw.Object, prefix string) error {
	if prefix == "" && rq.r.Header.Get("x-amz-server-side-encryption") != "" {
		return s3err.InvalidArgument.With("x-amz-server-side-encryption is not allowed on a read: an SSE-S3 object needs no key")
	}
	if o.Encryption() == nil {
		return nil
	}
	sse, err := srv.sseFromHeaders(rq, prefix)
	if err != nil {
		return err
	}
	return o.Decrypt(rq.r.Context(), sse)
}

// setSSEHeaders answers how a version is encrypted (nothing for none).
func setSSEHeaders(h http.Header, e *rgw.SSE) {
	switch {
	case e == nil:
	case e.Mode == rgw.SSES3:
		h.Set("x-amz-server-side-encryption", "AES256")
	case e.Mode == rgw.SSEC:
		h.Set(sseCustomer+"algorithm", "AES256")
		h.Set(sseCustomer+"key-MD5", e.KeyMD5)
	}
}
