package gateway

import (
	"encoding/xml"
	"errors"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/gateway/s3err"
)

type errorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource,omitempty"`
	RequestID string   `xml:"RequestId"`
	HostID    string   `xml:"HostId,omitempty"`
}

// apiError maps err to the S3 error a client sees: an *s3err.Error in its
// chain as is, cluster errors by kind, anything else InternalError.
func apiError(err error) *s3err.Error {
	var ae *s3err.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, client.ErrTimeout), errors.Is(err, client.ErrUnreadable):
		return s3err.ServiceUnavailable.With("%v", err)
	case errors.Is(err, client.ErrNoSpace):
		return s3err.InsufficientStorage.With("%v", err)
	}
	return s3err.Internal.With("%v", err)
}
