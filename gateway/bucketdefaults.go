package gateway

import (
	"encoding/xml"
	"net/http"
	"strings"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Two bucket settings that change how other requests are served: default
// encryption (S3's PutBucketEncryption) and Requester Pays
// (PutBucketRequestPayment). Both are the bucket owner's to set.

type sseConfiguration struct {
	XMLName xml.Name  `xml:"ServerSideEncryptionConfiguration"`
	Xmlns   string    `xml:"xmlns,attr,omitempty"`
	Rules   []sseRule `xml:"Rule"`
}

type sseRule struct {
	Default   *sseDefault `xml:"ApplyServerSideEncryptionByDefault"`
	BucketKey *bool       `xml:"BucketKeyEnabled"`
}

type sseDefault struct {
	Algorithm string `xml:"SSEAlgorithm"`
	KMSKeyID  string `xml:"KMSMasterKeyID,omitempty"`
}

// bucketEncryption serves GET, PUT and DELETE ?encryption. A PUT takes
// one rule whose SSEAlgorithm is AES256 (SSE-S3); aws:kms answers
// NotImplemented, as SSE-KMS requests do, since no KMS is configured; a
// GET of a bucket without one is ServerSideEncryptionConfigurationNotFoundError.
func (srv *Server) bucketEncryption(rq *request) error {
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	switch rq.r.Method {
	case http.MethodGet:
		if b.Encryption == nil {
			return s3err.SSEConfigurationNotFound.With("bucket %q has no default encryption", b.S3Name())
		}
		key := b.Encryption.BucketKey
		return writeXML(rq, http.StatusOK, sseConfiguration{Xmlns: s3NS, Rules: []sseRule{{Default: &sseDefault{Algorithm: "AES256"}, BucketKey: &key}}})
	case http.MethodPut:
		var c sseConfiguration
		if err := readXMLBody(rq.r, &c); err != nil {
			return err
		}
		if len(c.Rules) != 1 || c.Rules[0].Default == nil {
			return s3err.MalformedXML.With("ServerSideEncryptionConfiguration needs exactly one Rule with ApplyServerSideEncryptionByDefault")
		}
		d := c.Rules[0].Default
		switch {
		case d.Algorithm == "AES256":
			if d.KMSKeyID != "" {
				return s3err.InvalidArgument.With("KMSMasterKeyID is only allowed with SSEAlgorithm aws:kms")
			}
		case strings.HasPrefix(d.Algorithm, "aws:kms"):
			return s3err.NotImplemented.With("default encryption %s needs a KMS; none is configured", d.Algorithm)
		default:
			return s3err.MalformedXML.With("SSEAlgorithm %q: AES256 is the one algorithm", d.Algorithm)
		}
		enc := &rgw.BucketEncryption{BucketKey: c.Rules[0].BucketKey != nil && *c.Rules[0].BucketKey}
		return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *rgw.Bucket) { nb.Encryption = enc })
	case http.MethodDelete:
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *rgw.Bucket) { nb.Encryption = nil })
	}
	return s3err.MethodNotAllowed
}

// sseForWrite is the encryption of an object a request creates (PUT,
// copy, multipart upload, POST): what its headers ask for, else bucket
// b's default.
func (srv *Server) sseForWrite(rq *request, b *rgw.Bucket) (*rgw.SSERequest, error) {
	sse, err := srv.sseFromHeaders(rq, "")
	if sse == nil && err == nil {
		sse = b.DefaultSSE()
	}
	return sse, err
}

type requestPaymentConfiguration struct {
	XMLName xml.Name `xml:"RequestPaymentConfiguration"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Payer   string   `xml:"Payer"`
}

// payerBucketOwner is the Payer of a bucket that is not Requester Pays.
const payerBucketOwner = "BucketOwner"

// bucketRequestPayment serves GET and PUT ?requestPayment (Payer
// BucketOwner or Requester).
func (srv *Server) bucketRequestPayment(rq *request) error {
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	switch rq.r.Method {
	case http.MethodGet:
		payer := payerBucketOwner
		if b.RequesterPays() {
			payer = rgw.PayerRequester
		}
		return writeXML(rq, http.StatusOK, requestPaymentConfiguration{Xmlns: s3NS, Payer: payer})
	case http.MethodPut:
		var c requestPaymentConfiguration
		if err := readXMLBody(rq.r, &c); err != nil {
			return err
		}
		var payer string
		switch c.Payer {
		case payerBucketOwner:
		case rgw.PayerRequester:
			payer = rgw.PayerRequester
		default:
			return s3err.MalformedXML.With("Payer %q: BucketOwner or Requester", c.Payer)
		}
		return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *rgw.Bucket) { nb.Payer = payer })
	}
	return s3err.MethodNotAllowed
}

// checkRequestPayer refuses a request about Requester Pays bucket b from
// anyone but its owner unless it sends x-amz-request-payer: requester
// (as a header, or as a presigned URL's query parameter; anonymous
// requests are refused outright, as S3 refuses them), and answers
// x-amz-request-charged to one that does. It runs on the request's own
// goroutine where the request loads its bucket (payingBucket, and a
// copy's source), so that every path — a missing key's 404 among them —
// is covered and the header is set once.
func checkRequestPayer(rq *request, b *rgw.Bucket) error {
	if !b.RequesterPays() || rq.uid == b.Owner {
		return nil
	}
	if rq.uid == "" {
		return s3err.AccessDenied.With("bucket %q is a Requester Pays bucket: anonymous requests are refused", b.S3Name())
	}
	v := rq.r.Header.Get("x-amz-request-payer")
	if v == "" {
		v = rq.q.Get("x-amz-request-payer")
	}
	if !strings.EqualFold(v, "requester") {
		return s3err.AccessDenied.With("bucket %q is a Requester Pays bucket: send x-amz-request-payer: requester", b.S3Name())
	}
	rq.w.Header().Set("x-amz-request-charged", "requester")
	return nil
}

// asksSSE reports whether a request's headers ask for server-side
// encryption of what it writes (SSE-S3 or SSE-C).
func asksSSE(h http.Header) bool {
	return h.Get("x-amz-server-side-encryption") != "" || h.Get(sseCustomer+"algorithm") != ""
}
