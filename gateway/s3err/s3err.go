// Package s3err holds the S3 errors Shoal's gateway answers with: the
// code and HTTP status the S3 API reference gives each ("Error
// responses", "List of error codes") and a message for people. The S3
// edge (package gateway) renders them as the XML body clients parse; the
// RGW layer (package gateway/rgw) returns them where its answer is an S3
// one (no such key, bucket not empty, bad digest).
package s3err

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Error is an S3 error: its code, HTTP status and message. Handlers
// return it, wrapped or not; the gateway's writeError renders it.
type Error struct {
	Code    string
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is match an error by its S3 code, so that a copy made
// by With still is the error it was made from.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// With returns a copy of e with a more specific message.
func (e *Error) With(format string, args ...any) *Error {
	c := *e
	c.Message = fmt.Sprintf(format, args...)
	return &c
}

// The S3 error codes the gateway returns (AWS S3 API reference, "Error
// codes"); messages are AWS's where they are generic.
var (
	AccessDenied                      = &Error{"AccessDenied", http.StatusForbidden, "Access Denied"}
	BadDigest                         = &Error{"BadDigest", http.StatusBadRequest, "The Content-MD5 you specified did not match what we received."}
	BucketAlreadyExists               = &Error{"BucketAlreadyExists", http.StatusConflict, "The requested bucket name is not available."}
	BucketAlreadyOwnedByYou           = &Error{"BucketAlreadyOwnedByYou", http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."}
	BucketNotEmpty                    = &Error{"BucketNotEmpty", http.StatusConflict, "The bucket you tried to delete is not empty."}
	EntityTooLarge                    = &Error{"EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size."}
	EntityTooSmall                    = &Error{"EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."}
	IncompleteBody                    = &Error{"IncompleteBody", http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."}
	Internal                          = &Error{"InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."}
	InvalidAccessKeyID                = &Error{"InvalidAccessKeyId", http.StatusForbidden, "The AWS access key Id you provided does not exist in our records."}
	InvalidArgument                   = &Error{"InvalidArgument", http.StatusBadRequest, "Invalid Argument"}
	InvalidBucketName                 = &Error{"InvalidBucketName", http.StatusBadRequest, "The specified bucket is not valid."}
	InvalidDigest                     = &Error{"InvalidDigest", http.StatusBadRequest, "The Content-MD5 you specified is not valid."}
	InvalidPart                       = &Error{"InvalidPart", http.StatusBadRequest, "One or more of the specified parts could not be found."}
	InvalidPartOrder                  = &Error{"InvalidPartOrder", http.StatusBadRequest, "The list of parts was not in ascending order."}
	InvalidRange                      = &Error{"InvalidRange", http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable"}
	InvalidRequest                    = &Error{"InvalidRequest", http.StatusBadRequest, "Invalid Request"}
	KeyTooLong                        = &Error{"KeyTooLongError", http.StatusBadRequest, "Your key is too long."}
	MalformedXML                      = &Error{"MalformedXML", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	InvalidTag                        = &Error{"InvalidTag", http.StatusBadRequest, "The tag provided was not a valid tag."}
	NoSuchCORSConfiguration           = &Error{"NoSuchCORSConfiguration", http.StatusNotFound, "The CORS configuration does not exist."}
	CORSForbidden                     = &Error{"AccessForbidden", http.StatusForbidden, "CORSResponse: This CORS request is not allowed."}
	NoSuchLifecycleConfiguration      = &Error{"NoSuchLifecycleConfiguration", http.StatusNotFound, "The lifecycle configuration does not exist."}
	MalformedPolicy                   = &Error{"MalformedPolicy", http.StatusBadRequest, "Policies must be valid JSON and the first byte must be '{'"}
	NoSuchBucketPolicy                = &Error{"NoSuchBucketPolicy", http.StatusNotFound, "The bucket policy does not exist"}
	NoSuchPublicAccessBlock           = &Error{"NoSuchPublicAccessBlockConfiguration", http.StatusNotFound, "The public access block configuration was not found"}
	NoSuchTagSet                      = &Error{"NoSuchTagSet", http.StatusNotFound, "The TagSet does not exist."}
	MalformedPOSTRequest              = &Error{"MalformedPOSTRequest", http.StatusBadRequest, "The body of your POST request is not well-formed multipart/form-data."}
	MaxPostPreDataLength              = &Error{"MaxPostPreDataLengthExceeded", http.StatusBadRequest, "Your POST request fields preceding the upload file were too large."}
	InvalidPolicyDocument             = &Error{"InvalidPolicyDocument", http.StatusBadRequest, "The content of the form does not meet the conditions specified in the policy document."}
	MalformedACL                      = &Error{"MalformedACLError", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	UnresolvableGrantByEmail          = &Error{"UnresolvableGrantByEmailAddress", http.StatusBadRequest, "The email address you provided does not match any account on record."}
	MethodNotAllowed                  = &Error{"MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."}
	MissingContentLength              = &Error{"MissingContentLength", http.StatusLengthRequired, "You must provide the Content-Length HTTP header."}
	NoSuchBucket                      = &Error{"NoSuchBucket", http.StatusNotFound, "The specified bucket does not exist."}
	NoSuchKey                         = &Error{"NoSuchKey", http.StatusNotFound, "The specified key does not exist."}
	NoSuchVersion                     = &Error{"NoSuchVersion", http.StatusNotFound, "The specified version does not exist."}
	InvalidBucketState                = &Error{"InvalidBucketState", http.StatusConflict, "The request is not valid with the current state of the bucket."}
	InvalidRetentionPeriod            = &Error{"InvalidRetentionPeriod", http.StatusBadRequest, "The retention period must be a positive integer."}
	ObjectLockConfigurationNotFound   = &Error{"ObjectLockConfigurationNotFoundError", http.StatusNotFound, "Object Lock configuration does not exist for this bucket"}
	QuotaExceeded                     = &Error{"QuotaExceeded", http.StatusForbidden, "The quota has been exceeded."}
	TooManyBuckets                    = &Error{"TooManyBuckets", http.StatusBadRequest, "You have attempted to create more buckets than allowed."}
	NoSuchObjectLockConfiguration     = &Error{"NoSuchObjectLockConfiguration", http.StatusNotFound, "The specified object does not have a ObjectLock configuration"}
	NoSuchUpload                      = &Error{"NoSuchUpload", http.StatusNotFound, "The specified multipart upload does not exist."}
	NotImplemented                    = &Error{"NotImplemented", http.StatusNotImplemented, "A header or query you provided implies functionality that is not implemented."}
	NotModified                       = &Error{"NotModified", http.StatusNotModified, "Not Modified"}
	PreconditionFailed                = &Error{"PreconditionFailed", http.StatusPreconditionFailed, "At least one of the preconditions you specified did not hold."}
	RequestTimeTooSkewed              = &Error{"RequestTimeTooSkewed", http.StatusForbidden, "The difference between the request time and the server's time is too large."}
	SignatureDoesNotMatch             = &Error{"SignatureDoesNotMatch", http.StatusForbidden, "The request signature we calculated does not match the signature you provided."}
	AuthorizationHeaderMalformed      = &Error{"AuthorizationHeaderMalformed", http.StatusBadRequest, "The authorization header is malformed."}
	AuthorizationQueryParametersError = &Error{"AuthorizationQueryParametersError", http.StatusBadRequest, "Error parsing the X-Amz-Credential parameter."}
	ExpiredToken                      = &Error{"AccessDenied", http.StatusForbidden, "Request has expired"}
	XAmzContentSHA256Mismatch         = &Error{"XAmzContentSHA256Mismatch", http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."}
	InvalidStorageClass               = &Error{"InvalidStorageClass", http.StatusBadRequest, "The storage class you specified is not valid."}
	ServiceUnavailable                = &Error{"ServiceUnavailable", http.StatusServiceUnavailable, "Please reduce your request rate."}
	InsufficientStorage               = &Error{"InsufficientStorage", http.StatusInsufficientStorage, "The cluster is full."}
	MetadataTooLarge                  = &Error{"MetadataTooLarge", http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size (2 KB)."}
	Indexless                         = &Error{"NotImplemented", http.StatusNotImplemented, "The bucket is indexless (placement without a bucket index): it cannot be listed."}
)

// ConditionalRequestConflict is S3's answer when a conditional write
// kept losing races with other writes of the key.
var ConditionalRequestConflict = &Error{"ConditionalRequestConflict", http.StatusConflict, "A conflicting operation occurred. If using PutObject you can retry the request. If using multipart upload you should initiate another CreateMultipartUpload request and re-upload each part."}

// Object ownership's errors (S3 user guide, "Controlling ownership of
// objects").
var (
	OwnershipControlsNotFound           = &Error{"OwnershipControlsNotFoundError", http.StatusNotFound, "The bucket ownership controls were not found."}
	SSEConfigurationNotFound            = &Error{"ServerSideEncryptionConfigurationNotFoundError", http.StatusNotFound, "The server side encryption configuration was not found."}
	AccessControlListNotSupported       = &Error{"AccessControlListNotSupported", http.StatusBadRequest, "The bucket does not allow ACLs."}
	InvalidBucketAclWithObjectOwnership = &Error{"InvalidBucketAclWithObjectOwnership", http.StatusBadRequest, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting."}
)

// Body maps a failure reading a request body to its S3 error: an Error in
// err's chain as is, a body shorter than announced IncompleteBody,
// anything else err.
func Body(err error) error {
	var ae *Error
	switch {
	case errors.As(err, &ae):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return IncompleteBody
	}
	return err
}
