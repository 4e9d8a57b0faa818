package gateway

import (
	"encoding/xml"
	"net/http"
	"strings"
	"time"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Object lock requests (S3's PutObjectLockConfiguration, PutObjectRetention,
// PutObjectLegalHold and their GETs; the x-amz-object-lock-* headers of
// uploads and reads). The rules are package rgw's (objectlock.go).

type objectLockConfiguration struct {
	XMLName           xml.Name        `xml:"ObjectLockConfiguration"`
	Xmlns             string          `xml:"xmlns,attr,omitempty"`
	ObjectLockEnabled string          `xml:"ObjectLockEnabled,omitempty"`
	Rule              *objectLockRule `xml:"Rule,omitempty"`
}

type objectLockRule struct {
	DefaultRetention struct {
		Mode  string `xml:"Mode"`
		Days  *int   `xml:"Days,omitempty"`
		Years *int   `xml:"Years,omitempty"`
	} `xml:"DefaultRetention"`
}

type retentionXML struct {
	XMLName         xml.Name `xml:"Retention"`
	Xmlns           string   `xml:"xmlns,attr,omitempty"`
	Mode            string   `xml:"Mode"`
	RetainUntilDate string   `xml:"RetainUntilDate"`
}

type legalHoldXML struct {
	XMLName xml.Name `xml:"LegalHold"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Status  string   `xml:"Status"`
}

// bucketObjectLock is Get/PutObjectLockConfiguration (the bucket's owner).
func (srv *Server) bucketObjectLock(rq *request) error {
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	switch rq.r.Method {
	case http.MethodGet:
		if !b.LockEnabled() {
			return s3err.ObjectLockConfigurationNotFound.With("bucket %q has no object lock", b.Name)
		}
		c := objectLockConfiguration{Xmlns: s3NS, ObjectLockEnabled: "Enabled"}
		if ol := b.ObjectLock; ol.Mode != "" {
			c.Rule = &objectLockRule{}
			c.Rule.DefaultRetention.Mode = ol.Mode
			if ol.Days > 0 {
				c.Rule.DefaultRetention.Days = &ol.Days
			} else {
				c.Rule.DefaultRetention.Years = &ol.Years
			}
		}
		return writeXML(rq, http.StatusOK, c)
	case http.MethodPut:
		var c objectLockConfiguration
		if err := readXMLBody(rq.r, &c); err != nil {
			return err
		}
		if c.ObjectLockEnabled != "Enabled" {
			return s3err.MalformedXML.With("ObjectLockEnabled must be Enabled")
		}
		var ol rgw.ObjectLock
		if r := c.Rule; r != nil {
			d := r.DefaultRetention
			switch {
			case !rgw.ValidLockMode(d.Mode):
				return s3err.MalformedXML.With("the default retention's Mode must be GOVERNANCE or COMPLIANCE")
			case (d.Days == nil) == (d.Years == nil):
				return s3err.MalformedXML.With("the default retention takes Days or Years, not both or neither")
			case d.Days != nil && (*d.Days <= 0 || *d.Days > 36500), d.Years != nil && (*d.Years <= 0 || *d.Years > 100):
				return s3err.InvalidRetentionPeriod.With("the default retention must be 1 to 36,500 days or 1 to 100 years")
			}
			ol.Mode = d.Mode
			if d.Days != nil {
				ol.Days = *d.Days
			} else {
				ol.Years = *d.Years
			}
		}
		if _, err := srv.s.SetObjectLock(rq.r.Context(), b.Name, ol); err != nil {
			return err
		}
		rq.w.WriteHeader(http.StatusOK)
		return nil
	}
	return s3err.MethodNotAllowed
}

// lockFromHeaders reads an upload's x-amz-object-lock-mode,
// -retain-until-date and -legal-hold (InvalidArgument when malformed or
// half given; InvalidRequest in a bucket without object lock).
func lockFromHeaders(h http.Header, b *rgw.Bucket) (*rgw.Retention, bool, error) {
	mode, until, hold := h.Get("x-amz-object-lock-mode"), h.Get("x-amz-object-lock-retain-until-date"), h.Get("x-amz-object-lock-legal-hold")
	if mode == "" && until == "" && hold == "" {
		return nil, false, nil
	}
	if !b.LockEnabled() {
		return nil, false, s3err.InvalidRequest.With("Bucket is missing Object Lock Configuration")
	}
	var r *rgw.Retention
	switch {
	case (mode == "") != (until == ""):
		return nil, false, s3err.InvalidArgument.With("x-amz-object-lock-mode and x-amz-object-lock-retain-until-date go together")
	case mode != "":
		if !rgw.ValidLockMode(mode) {
			return nil, false, s3err.InvalidArgument.With("Unknown wormMode directive %q", mode)
		}
		t, err := time.Parse(time.RFC3339Nano, until)
		if err != nil {
			return nil, false, s3err.InvalidArgument.With("x-amz-object-lock-retain-until-date %q is not an ISO 8601 date", until)
		}
		if !t.After(time.Now()) {
			return nil, false, s3err.InvalidArgument.With("The retain until date must be in the future!")
		}
		r = &rgw.Retention{Mode: mode, Until: t}
	}
	if hold != "" && hold != "ON" && hold != "OFF" {
		return nil, false, s3err.InvalidArgument.With("x-amz-object-lock-legal-hold must be ON or OFF")
	}
	return r, hold == "ON", nil
}

// setLockHeaders answers a version's retention and legal hold on GET
// and HEAD.
func setLockHeaders(h http.Header, info *rgw.HeadInfo) {
	if r := info.Retention(); r != nil {
		h.Set("x-amz-object-lock-mode", r.Mode)
		h.Set("x-amz-object-lock-retain-until-date", isoTime(r.Until))
	}
	if info.LegalHold {
		h.Set("x-amz-object-lock-legal-hold", "ON")
	}
}

// bypassGovernance reports whether the request asks to bypass GOVERNANCE
// retention (the bucket's owner and writers may: no separate
// s3:BypassGovernanceRetention permission is kept).
func bypassGovernance(h http.Header) bool {
	return strings.EqualFold(h.Get("x-amz-bypass-governance-retention"), "true")
}

// objectRetention is Get/PutObjectRetention of the request's version.
func (srv *Server) objectRetention(rq *request, b *rgw.Bucket) error {
	if !b.LockEnabled() {
		return s3err.InvalidRequest.With("Bucket is missing Object Lock Configuration")
	}
	if rq.r.Method == http.MethodGet {
		o, err := srv.openForACL(rq, b, rgw.PermRead)
		if err != nil {
			return err
		}
		defer o.Close()
		r := o.Info.Retention()
		if r == nil {
			return s3err.NoSuchObjectLockConfiguration
		}
		return writeXML(rq, http.StatusOK, retentionXML{Xmlns: s3NS, Mode: r.Mode, RetainUntilDate: isoTime(r.Until)})
	}
	if err := srv.objectAllows(rq, b, rgw.PermWrite); err != nil {
		return err
	}
	var x retentionXML
	if err := readXMLBody(rq.r, &x); err != nil {
		return err
	}
	if !rgw.ValidLockMode(x.Mode) {
		return s3err.MalformedXML.With("Mode must be GOVERNANCE or COMPLIANCE")
	}
	until, err := time.Parse(time.RFC3339Nano, x.RetainUntilDate)
	if err != nil {
		return s3err.MalformedXML.With("RetainUntilDate %q is not an ISO 8601 date", x.RetainUntilDate)
	}
	now := time.Now()
	if !until.After(now) {
		return s3err.InvalidArgument.With("The retain until date must be in the future!")
	}
	bypass := bypassGovernance(rq.r.Header)
	if err := srv.s.UpdateVersion(rq.r.Context(), b, rq.key, rq.q.Get("versionId"), func(h *rgw.HeadInfo) error {
		return h.SetRetention(rgw.Retention{Mode: x.Mode, Until: until}, now, bypass)
	}); err != nil {
		return err
	}
	rq.w.WriteHeader(http.StatusOK)
	return nil
}

// objectLegalHold is Get/PutObjectLegalHold of the request's version.
func (srv *Server) objectLegalHold(rq *request, b *rgw.Bucket) error {
	if !b.LockEnabled() {
		return s3err.InvalidRequest.With("Bucket is missing Object Lock Configuration")
	}
	if rq.r.Method == http.MethodGet {
		o, err := srv.openForACL(rq, b, rgw.PermRead)
		if err != nil {
			return err
		}
		defer o.Close()
		st := "OFF"
		if o.Info.LegalHold {
			st = "ON"
		}
		return writeXML(rq, http.StatusOK, legalHoldXML{Xmlns: s3NS, Status: st})
	}
	if err := srv.objectAllows(rq, b, rgw.PermWrite); err != nil {
		return err
	}
	var x legalHoldXML
	if err := readXMLBody(rq.r, &x); err != nil {
		return err
	}
	if x.Status != "ON" && x.Status != "OFF" {
		return s3err.MalformedXML.With("Status must be ON or OFF")
	}
	if err := srv.s.UpdateVersion(rq.r.Context(), b, rq.key, rq.q.Get("versionId"), func(h *rgw.HeadInfo) error {
		h.LegalHold = x.Status == "ON"
		return nil
	}); err != nil {
		return err
	}
	rq.w.WriteHeader(http.StatusOK)
	return nil
}
