package gateway

import (
	"encoding/xml"
	"net/http"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Bucket lifecycle (the S3 API reference, "PutBucketLifecycleConfiguration"
// and "Lifecycle configuration elements"; execution as RGW's rgw_lc.cc).
// A bucket's configuration is kept in its entry point, and the bucket is
// registered in the log pool's "lc" object; a lifecycle pass (LCProcess:
// the gateways' worker within rgw_lifecycle_work_time once a day, or
// `shoal lc process`) applies each bucket's enabled rules once a day:
//
//   - Expiration Days / Date deletes the current objects under the rule's
//     filter (prefix, tags, object size) that are due — a day is
//     rgw_lc_debug_interval seconds when that is positive, as in RGW's test
//     setups. The deletion is conditional on the object being the version
//     the pass looked at: an object rewritten meanwhile stays.
//   - AbortIncompleteMultipartUpload aborts uploads under the prefix
//     started DaysAfterInitiation days ago.
//
// In a versioned bucket, expiration makes a delete marker current, and
// NoncurrentVersionExpiration and ExpiredObjectDeleteMarker remove old
// versions and lone delete markers (package rgw's lcVersions).
// Transitions need a storage class other than STANDARD, which this
// gateway does not have: they are refused.

type lifecycleConfiguration struct {
	XMLName xml.Name            `xml:"LifecycleConfiguration"`
	Xmlns   string              `xml:"xmlns,attr,omitempty"`
	Rules   []rgw.LifecycleRule `xml:"Rule"`
}

// S3's limits on a lifecycle configuration.
const (
	maxLifecycleRules = 1000
	maxLifecycleID    = 255
)

// parseLifecycle reads and checks a PUT ?lifecycle body: MalformedXML for
// XML that does not parse, no rules, a Status other than Enabled or
// Disabled, or both Prefix and Filter; InvalidArgument for IDs too long or
// repeated, days that are not positive, dates not at midnight UTC, and
// transitions; InvalidRequest for a rule without an action. Rules without
// an ID get one.
func parseLifecycle(r *http.Request) ([]rgw.LifecycleRule, error) {
	var c lifecycleConfiguration
	if err := readXMLBody(r, &c); err != nil {
		return nil, err
	}
	if len(c.Rules) == 0 {
		return nil, s3err.MalformedXML.With("a lifecycle configuration needs a rule")
	}
	if len(c.Rules) > maxLifecycleRules {
		return nil, s3err.MalformedXML.With("a lifecycle configuration holds at most %d rules", maxLifecycleRules)
	}
	ids := map[string]bool{}
	for i := range c.Rules {
		rule := &c.Rules[i]
		if rule.ID == "" {
			rule.ID = rgw.NewTag()
		}
		if len(rule.ID) > maxLifecycleID {
			return nil, s3err.InvalidArgument.With("a rule's ID is at most %d characters", maxLifecycleID)
		}
		if ids[rule.ID] {
			return nil, s3err.InvalidArgument.With("rule ID %q is used twice", rule.ID)
		}
		ids[rule.ID] = true
		if rule.Status != "Enabled" && rule.Status != "Disabled" {
			return nil, s3err.MalformedXML.With("rule %q: Status is Enabled or Disabled, not %q", rule.ID, rule.Status)
		}
		if rule.Prefix != nil && rule.Filter != nil {
			return nil, s3err.MalformedXML.With("rule %q: Prefix and Filter are exclusive", rule.ID)
		}
		if err := checkLifecycleActions(rule); err != nil {
			return nil, err
		}
	}
	return c.Rules, nil
}

func checkLifecycleActions(rule *rgw.LifecycleRule) error {
	positive := func(what string, n *int) error {
		if n != nil && *n <= 0 {
			return s3err.InvalidArgument.With("rule %q: %s must be a positive integer", rule.ID, what)
		}
		return nil
	}
	if e := rule.Expiration; e != nil {
		set := 0
		for _, ok := range []bool{e.Days != nil, e.Date != nil, e.ExpiredObjectDeleteMarker != nil} {
			if ok {
				set++
			}
		}
		if set != 1 {
			return s3err.MalformedXML.With("rule %q: Expiration holds one of Days, Date, ExpiredObjectDeleteMarker", rule.ID)
		}
		if err := positive("Expiration Days", e.Days); err != nil {
			return err
		}
		if e.Date != nil {
			if _, err := rgw.LifecycleDate(*e.Date); err != nil {
				return s3err.InvalidArgument.With("rule %q: %v", rule.ID, err)
			}
		}
	}
	transitions := append(append([]rgw.LifecycleTransition{}, rule.Transitions...), rule.NoncurrentVersionTransitions...)
	for _, t := range transitions {
		if t.Date != nil {
			if _, err := rgw.LifecycleDate(*t.Date); err != nil {
				return s3err.InvalidArgument.With("rule %q: transition: %v", rule.ID, err)
			}
		}
		if err := positive("transition Days", t.Days); err != nil {
			return err
		}
	}
	if len(transitions) > 0 {
		return s3err.InvalidArgument.With("rule %q: storage class %q does not exist (this gateway has only STANDARD)", rule.ID, transitions[0].StorageClass)
	}
	if ne := rule.NoncurrentVersionExpiration; ne != nil {
		if ne.NoncurrentDays == nil {
			return s3err.MalformedXML.With("rule %q: NoncurrentVersionExpiration needs NoncurrentDays", rule.ID)
		}
		if err := positive("NoncurrentDays", ne.NoncurrentDays); err != nil {
			return err
		}
	}
	if a := rule.AbortIncompleteMultipartUpload; a != nil {
		if a.DaysAfterInitiation == nil {
			return s3err.MalformedXML.With("rule %q: AbortIncompleteMultipartUpload needs DaysAfterInitiation", rule.ID)
		}
		if err := positive("DaysAfterInitiation", a.DaysAfterInitiation); err != nil {
			return err
		}
	}
	if rule.Expiration == nil && rule.NoncurrentVersionExpiration == nil && rule.AbortIncompleteMultipartUpload == nil {
		return s3err.InvalidRequest.With("rule %q: at least one action needs to be specified", rule.ID)
	}
	return nil
}

// bucketLifecycle answers GET, PUT and DELETE ?lifecycle (the bucket's
// owner).
func (srv *Server) bucketLifecycle(rq *request) error {
	ctx := rq.r.Context()
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	switch rq.r.Method {
	case http.MethodGet:
		if len(b.Lifecycle) == 0 {
			return s3err.NoSuchLifecycleConfiguration.With("bucket %q has no lifecycle configuration", b.Name)
		}
		return writeXML(rq, http.StatusOK, lifecycleConfiguration{Xmlns: s3NS, Rules: b.Lifecycle})
	case http.MethodPut:
		rules, err := parseLifecycle(rq.r)
		if err != nil {
			return err
		}
		if err := srv.s.LCRegister(ctx, b); err != nil {
			return err
		}
		return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *rgw.Bucket) { nb.Lifecycle = rules })
	case http.MethodDelete:
		// the registration stays until the next pass finds no rules
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *rgw.Bucket) { nb.Lifecycle = nil })
	}
	return s3err.MethodNotAllowed
}
