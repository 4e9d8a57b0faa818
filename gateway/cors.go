package gateway

import (
	"encoding/xml"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Cross-origin resource sharing (the S3 API reference, "PutBucketCors";
// the S3 user guide, "Using cross-origin resource sharing"; semantics as
// RGW's rgw_cors.cc where the two differ in detail). A bucket's
// configuration is kept in its entry point. A request that carries an
// Origin header gets the Access-Control-* headers of the first rule whose
// AllowedOrigin matches it, provided that rule allows the method (the
// request's own, or the Access-Control-Request-Method it names) — on
// errors too, so a browser can read them. A preflight (OPTIONS) needs no
// signature: it answers 200 with the headers when a rule allows the
// origin, method and every requested header, 403 otherwise, 400 without
// Origin or Access-Control-Request-Method.

type corsConfiguration struct {
	XMLName xml.Name       `xml:"CORSConfiguration"`
	Xmlns   string         `xml:"xmlns,attr,omitempty"`
	Rules   []rgw.CORSRule `xml:"CORSRule"`
}

// maxCORSRules is S3's limit on rules per configuration.
const maxCORSRules = 100

// corsMethods are the methods a rule may allow (S3's list).
var corsMethods = map[string]bool{"GET": true, "PUT": true, "HEAD": true, "POST": true, "DELETE": true}

// parseCORS reads and checks a PUT ?cors body: MalformedXML for XML that
// does not parse or a configuration without rules, InvalidRequest for
// an unknown method, a rule without origins or methods, or an entry with
// more than one wildcard.
func parseCORS(r *http.Request) ([]rgw.CORSRule, error) {
	var c corsConfiguration
	if err := readXMLBody(r, &c); err != nil {
		return nil, err
	}
	if len(c.Rules) == 0 {
		return nil, s3err.MalformedXML.With("a CORS configuration needs a rule")
	}
	if len(c.Rules) > maxCORSRules {
		return nil, s3err.MalformedXML.With("a CORS configuration holds at most %d rules", maxCORSRules)
	}
	for _, rule := range c.Rules {
		if len(rule.AllowedMethods) == 0 || len(rule.AllowedOrigins) == 0 {
			return nil, s3err.MalformedXML.With("a CORS rule needs AllowedMethod and AllowedOrigin")
		}
		for _, m := range rule.AllowedMethods {
			if !corsMethods[m] {
				return nil, s3err.InvalidRequest.With("found unsupported HTTP method in CORS config: %s", m)
			}
		}
		for _, p := range append(append([]string{}, rule.AllowedOrigins...), rule.AllowedHeaders...) {
			if strings.Count(p, "*") > 1 {
				return nil, s3err.InvalidRequest.With("%q: at most one wildcard '*' is allowed", p)
			}
		}
	}
	return c.Rules, nil
}

// corsRule is the first rule of rules whose AllowedOrigin matches origin
// (RGW's host_name_rule), or nil.
func corsRule(rules []rgw.CORSRule, origin string) *rgw.CORSRule {
	for i := range rules {
		for _, o := range rules[i].AllowedOrigins {
			if globMatch(o, origin, false) {
				return &rules[i]
			}
		}
	}
	return nil
}

// setCORSHeaders writes rule's answer to origin for method: the allowed
// origin ("*" for a rule open to every origin), the method, the requested
// headers, the exposed headers and the max age.
func setCORSHeaders(h http.Header, rule *rgw.CORSRule, origin, method, reqHeaders string) {
	allow := origin
	for _, o := range rule.AllowedOrigins {
		if o == "*" {
			allow = "*"
		}
	}
	h.Set("Access-Control-Allow-Origin", allow)
	h.Set("Access-Control-Allow-Methods", method)
	if reqHeaders != "" {
		h.Set("Access-Control-Allow-Headers", reqHeaders)
	}
	if len(rule.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(rule.ExposeHeaders, ","))
	}
	if rule.MaxAgeSeconds != nil {
		h.Set("Access-Control-Max-Age", strconv.Itoa(*rule.MaxAgeSeconds))
	}
	h.Add("Vary", "Origin")
}

// corsHeaders adds the Access-Control-* headers to the answer of an
// actual (not preflight) request from a browser, before it is handled.
func (srv *Server) corsHeaders(rq *request) {
	origin := rq.r.Header.Get("Origin")
	if origin == "" || rq.bucket == "" {
		return
	}
	b, err := srv.requestBucket(rq)
	if err != nil || len(b.CORS) == 0 {
		return
	}
	rule := corsRule(b.CORS, origin)
	if rule == nil {
		return
	}
	method := rq.r.Header.Get("Access-Control-Request-Method")
	if method == "" {
		method = rq.r.Method
	}
	if !corsAllowsMethod(rule, method) {
		return
	}
	setCORSHeaders(rq.w.Header(), rule, origin, method, rq.r.Header.Get("Access-Control-Request-Headers"))
}

// preflight answers an OPTIONS request (unsigned, as browsers send it).
func (srv *Server) preflight(rq *request) error {
	origin := rq.r.Header.Get("Origin")
	method := rq.r.Header.Get("Access-Control-Request-Method")
	if origin == "" || method == "" {
		return s3err.InvalidRequest.With("a CORS preflight needs Origin and Access-Control-Request-Method")
	}
	if rq.bucket == "" {
		return s3err.InvalidRequest.With("a CORS preflight names a bucket")
	}
	b, err := srv.requestBucket(rq)
	if err != nil {
		return err
	}
	reqHeaders := rq.r.Header.Get("Access-Control-Request-Headers")
	rule := corsRule(b.CORS, origin)
	if rule == nil || !corsAllowsMethod(rule, method) || !corsAllowsHeaders(rule, reqHeaders) {
		return s3err.CORSForbidden
	}
	setCORSHeaders(rq.w.Header(), rule, origin, method, reqHeaders)
	rq.w.Header().Set("Content-Length", "0")
	rq.w.WriteHeader(http.StatusOK)
	return nil
}

// bucketCORS answers GET, PUT and DELETE ?cors (the bucket's owner).
func (srv *Server) bucketCORS(rq *request) error {
	switch rq.r.Method {
	case http.MethodGet:
		b, err := srv.bucketFor(rq, "")
		if err != nil {
			return err
		}
		if len(b.CORS) == 0 {
			return s3err.NoSuchCORSConfiguration.With("bucket %q has no CORS configuration", b.Name)
		}
		return writeXML(rq, http.StatusOK, corsConfiguration{Xmlns: s3NS, Rules: b.CORS})
	case http.MethodPut:
		b, err := srv.bucketFor(rq, "")
		if err != nil {
			return err
		}
		rules, err := parseCORS(rq.r)
		if err != nil {
			return err
		}
		return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *rgw.Bucket) { nb.CORS = rules })
	case http.MethodDelete:
		b, err := srv.bucketFor(rq, "")
		if err != nil {
			return err
		}
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *rgw.Bucket) { nb.CORS = nil })
	}
	return s3err.MethodNotAllowed
}

func corsAllowsMethod(c *rgw.CORSRule, m string) bool { return slices.Contains(c.AllowedMethods, m) }

// corsAllowsHeaders reports whether every header of the comma-separated list
// matches one of the rule's AllowedHeader entries.
func corsAllowsHeaders(c *rgw.CORSRule, list string) bool {
	for _, h := range strings.Split(list, ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		ok := false
		for _, ah := range c.AllowedHeaders {
			if globMatch(strings.ToLower(ah), h, false) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
