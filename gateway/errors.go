package gateway

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"

	"github.com/shoal-project/shoal/client"
)

// APIError is an S3 error: the code and HTTP status the S3 API reference
// gives it ("Error Responses", "List of error codes") and a message for
// people. Handlers return it (wrapped or not); writeError renders it as
// the XML body clients parse.
type APIError struct {
	Code    string
	Status  int
	Message string
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is match an error by its S3 code, so that a copy made
// by with still is the error it was made from.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Code == e.Code
}

// with returns a copy of e with a more specific message.
func (e *APIError) with(format string, args ...any) *APIError {
	c := *e
	c.Message = fmt.Sprintf(format, args...)
	return &c
}

// The S3 error codes the gateway returns (AWS S3 API reference, "Error
// codes"); messages are AWS's where they are generic.
var (
	ErrAccessDenied                      = &APIError{"AccessDenied", http.StatusForbidden, "Access Denied"}
	ErrBadDigest                         = &APIError{"BadDigest", http.StatusBadRequest, "The Content-MD5 you specified did not match what we received."}
	ErrBucketAlreadyExists               = &APIError{"BucketAlreadyExists", http.StatusConflict, "The requested bucket name is not available."}
	ErrBucketAlreadyOwnedByYou           = &APIError{"BucketAlreadyOwnedByYou", http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."}
	ErrBucketNotEmpty                    = &APIError{"BucketNotEmpty", http.StatusConflict, "The bucket you tried to delete is not empty."}
	ErrEntityTooLarge                    = &APIError{"EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size."}
	ErrEntityTooSmall                    = &APIError{"EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."}
	ErrIncompleteBody                    = &APIError{"IncompleteBody", http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."}
	ErrInternal                          = &APIError{"InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."}
	ErrInvalidAccessKeyID                = &APIError{"InvalidAccessKeyId", http.StatusForbidden, "The AWS access key Id you provided does not exist in our records."}
	ErrInvalidArgument                   = &APIError{"InvalidArgument", http.StatusBadRequest, "Invalid Argument"}
	ErrInvalidBucketName                 = &APIError{"InvalidBucketName", http.StatusBadRequest, "The specified bucket is not valid."}
	ErrInvalidDigest                     = &APIError{"InvalidDigest", http.StatusBadRequest, "The Content-MD5 you specified is not valid."}
	ErrInvalidPart                       = &APIError{"InvalidPart", http.StatusBadRequest, "One or more of the specified parts could not be found."}
	ErrInvalidPartOrder                  = &APIError{"InvalidPartOrder", http.StatusBadRequest, "The list of parts was not in ascending order."}
	ErrInvalidRange                      = &APIError{"InvalidRange", http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable"}
	ErrInvalidRequest                    = &APIError{"InvalidRequest", http.StatusBadRequest, "Invalid Request"}
	ErrKeyTooLong                        = &APIError{"KeyTooLongError", http.StatusBadRequest, "Your key is too long."}
	ErrMalformedXML                      = &APIError{"MalformedXML", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	ErrInvalidTag                        = &APIError{"InvalidTag", http.StatusBadRequest, "The tag provided was not a valid tag."}
	ErrNoSuchCORSConfiguration           = &APIError{"NoSuchCORSConfiguration", http.StatusNotFound, "The CORS configuration does not exist."}
	ErrCORSForbidden                     = &APIError{"AccessForbidden", http.StatusForbidden, "CORSResponse: This CORS request is not allowed."}
	ErrNoSuchLifecycleConfiguration      = &APIError{"NoSuchLifecycleConfiguration", http.StatusNotFound, "The lifecycle configuration does not exist."}
	ErrMalformedPolicy                   = &APIError{"MalformedPolicy", http.StatusBadRequest, "Policies must be valid JSON and the first byte must be '{'"}
	ErrNoSuchBucketPolicy                = &APIError{"NoSuchBucketPolicy", http.StatusNotFound, "The bucket policy does not exist"}
	ErrNoSuchPublicAccessBlock           = &APIError{"NoSuchPublicAccessBlockConfiguration", http.StatusNotFound, "The public access block configuration was not found"}
	ErrNoSuchTagSet                      = &APIError{"NoSuchTagSet", http.StatusNotFound, "The TagSet does not exist."}
	ErrMalformedPOSTRequest              = &APIError{"MalformedPOSTRequest", http.StatusBadRequest, "The body of your POST request is not well-formed multipart/form-data."}
	ErrMaxPostPreDataLength              = &APIError{"MaxPostPreDataLengthExceeded", http.StatusBadRequest, "Your POST request fields preceding the upload file were too large."}
	ErrInvalidPolicyDocument             = &APIError{"InvalidPolicyDocument", http.StatusBadRequest, "The content of the form does not meet the conditions specified in the policy document."}
	ErrMalformedACL                      = &APIError{"MalformedACLError", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	ErrUnresolvableGrantByEmail          = &APIError{"UnresolvableGrantByEmailAddress", http.StatusBadRequest, "The email address you provided does not match any account on record."}
	ErrMethodNotAllowed                  = &APIError{"MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."}
	ErrMissingContentLength              = &APIError{"MissingContentLength", http.StatusLengthRequired, "You must provide the Content-Length HTTP header."}
	ErrNoSuchBucket                      = &APIError{"NoSuchBucket", http.StatusNotFound, "The specified bucket does not exist."}
	ErrNoSuchKey                         = &APIError{"NoSuchKey", http.StatusNotFound, "The specified key does not exist."}
	ErrNoSuchUpload                      = &APIError{"NoSuchUpload", http.StatusNotFound, "The specified multipart upload does not exist."}
	ErrNotImplemented                    = &APIError{"NotImplemented", http.StatusNotImplemented, "A header or query you provided implies functionality that is not implemented."}
	ErrNotModified                       = &APIError{"NotModified", http.StatusNotModified, "Not Modified"}
	ErrPreconditionFailed                = &APIError{"PreconditionFailed", http.StatusPreconditionFailed, "At least one of the preconditions you specified did not hold."}
	ErrRequestTimeTooSkewed              = &APIError{"RequestTimeTooSkewed", http.StatusForbidden, "The difference between the request time and the server's time is too large."}
	ErrSignatureDoesNotMatch             = &APIError{"SignatureDoesNotMatch", http.StatusForbidden, "The request signature we calculated does not match the signature you provided."}
	ErrAuthorizationHeaderMalformed      = &APIError{"AuthorizationHeaderMalformed", http.StatusBadRequest, "The authorization header is malformed."}
	ErrAuthorizationQueryParametersError = &APIError{"AuthorizationQueryParametersError", http.StatusBadRequest, "Error parsing the X-Amz-Credential parameter."}
	ErrExpiredToken                      = &APIError{"AccessDenied", http.StatusForbidden, "Request has expired"}
	ErrXAmzContentSHA256Mismatch         = &APIError{"XAmzContentSHA256Mismatch", http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."}
	ErrInvalidStorageClass               = &APIError{"InvalidStorageClass", http.StatusBadRequest, "The storage class you specified is not valid."}
	ErrServiceUnavailable                = &APIError{"ServiceUnavailable", http.StatusServiceUnavailable, "Please reduce your request rate."}
	ErrIndexless                         = &APIError{"NotImplemented", http.StatusNotImplemented, "The bucket is indexless (placement without a bucket index): it cannot be listed."}
)

type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource,omitempty"`
	RequestID string   `xml:"RequestId"`
	HostID    string   `xml:"HostId,omitempty"`
}

// apiError maps err to the S3 error a client sees: an *APIError in its
// chain as is, cluster errors by kind, anything else InternalError.
func apiError(err error) *APIError {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, client.ErrTimeout), errors.Is(err, client.ErrUnreadable):
		return ErrServiceUnavailable.with("%v", err)
	case errors.Is(err, client.ErrNoSpace):
		return &APIError{"InsufficientStorage", http.StatusInsufficientStorage, err.Error()}
	}
	return ErrInternal.with("%v", err)
}
