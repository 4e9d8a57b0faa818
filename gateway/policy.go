package gateway

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Bucket policies (the IAM user guide, "IAM JSON policy elements
// reference" and "Policy evaluation logic"; the S3 user guide, "Bucket
// policy examples" and "Actions, resources, and condition keys for Amazon
// S3"; RGW's rgw_iam_policy.cc for what RGW accepts). A bucket's policy is
// kept, as put, in its entry point.
//
// A request is decided as RGW decides it: a statement that applies (its
// principal, action, resource and conditions all match) with Effect Deny
// refuses it; otherwise one with Allow permits it; otherwise the ACLs
// decide. The bucket's owner may always read, replace and delete the
// policy, so no policy locks the owner out.
//
// Principals are "*" (anyone, anonymous requests included) or users:
// "arn:aws:iam::TENANT:user/UID" (TENANT empty for the legacy tenant),
// "arn:aws:iam::TENANT:root" (every user of a tenant), or for a user of
// the legacy tenant "arn:aws:iam::UID:root" or the bare UID. Actions and
// resources match with the '*' and '?' wildcards, actions
// case-insensitively; a resource ARN without an account is the policy's
// own tenant's (qualifyARN).
// Condition operators: the String*, Numeric*, Date*, Bool, IpAddress,
// NotIpAddress, Arn* and Null families, each with …IfExists; keys: the
// aws:* keys of a request (SourceIp, Referer, UserAgent, SecureTransport,
// CurrentTime, EpochTime, username, userid) and S3's (s3:prefix,
// s3:delimiter, s3:max-keys, s3:x-amz-acl, s3:x-amz-grant-*,
// s3:x-amz-copy-source, s3:x-amz-metadata-directive,
// s3:x-amz-storage-class, s3:x-amz-server-side-encryption,
// s3:x-amz-content-sha256, s3:ExistingObjectTag/KEY,
// s3:RequestObjectTag/KEY). A condition on a key the request lacks does not
// match, except under a negated operator, …IfExists, or Null.

// maxPolicySize is S3's limit on a bucket policy document (bytes).
const maxPolicySize = 20 << 10

// Policy is a parsed bucket policy.
type Policy struct {
	Version    string
	Statements []Statement
}

// Statement is one statement of a policy. Nil principal sets mean the
// element is absent.
type Statement struct {
	Sid                     string
	Effect                  string // "Allow" or "Deny"
	Principal, NotPrincipal []string
	Action, NotAction       []string
	Resource, NotResource   []string
	noResource              bool // neither: the statement applies to nothing
	// Condition: operator → key → values.
	Condition map[string]map[string][]string
}

// stringList is a policy value that may be one string or an array.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*l = []string{one}
		return nil
	}
	var many []any
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or an array of strings")
	}
	for _, v := range many {
		switch v := v.(type) {
		case string:
			*l = append(*l, v)
		case bool, float64:
			*l = append(*l, fmt.Sprint(v))
		default:
			return fmt.Errorf("want a string or an array of strings")
		}
	}
	return nil
}

// principalList is "*" or {"AWS": ...} (or {"CanonicalUser": ...}).
type principalList []string

func (p *principalList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		if one != "*" {
			return fmt.Errorf("a principal given as a string must be \"*\"")
		}
		*p = []string{"*"}
		return nil
	}
	var m map[string]stringList
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("want \"*\" or {\"AWS\": ...}")
	}
	*p = []string{}
	for k, v := range m {
		switch k {
		case "AWS", "CanonicalUser":
			*p = append(*p, v...)
		case "Service":
			for _, s := range v {
				*p = append(*p, servicePrincipal(s))
			}
		default:
			return fmt.Errorf("unsupported principal type %q", k)
		}
	}
	return nil
}

type jsonStatement struct {
	Sid          string                           `json:"Sid"`
	Effect       string                           `json:"Effect"`
	Principal    *principalList                   `json:"Principal"`
	NotPrincipal *principalList                   `json:"NotPrincipal"`
	Action       stringList                       `json:"Action"`
	NotAction    stringList                       `json:"NotAction"`
	Resource     stringList                       `json:"Resource"`
	NotResource  stringList                       `json:"NotResource"`
	Condition    map[string]map[string]stringList `json:"Condition"`
}

type jsonPolicy struct {
	Version   string          `json:"Version"`
	ID        string          `json:"Id"`
	Statement json.RawMessage `json:"Statement"`
}

// conditionOps are the operators a condition may use (without IfExists
// and the ForAnyValue:/ForAllValues: qualifiers).
var conditionOps = map[string]bool{
	"StringEquals": true, "StringNotEquals": true, "StringEqualsIgnoreCase": true, "StringNotEqualsIgnoreCase": true,
	"StringLike": true, "StringNotLike": true,
	"NumericEquals": true, "NumericNotEquals": true, "NumericLessThan": true, "NumericLessThanEquals": true,
	"NumericGreaterThan": true, "NumericGreaterThanEquals": true,
	"DateEquals": true, "DateNotEquals": true, "DateLessThan": true, "DateLessThanEquals": true,
	"DateGreaterThan": true, "DateGreaterThanEquals": true,
	"Bool": true, "IpAddress": true, "NotIpAddress": true,
	"ArnEquals": true, "ArnLike": true, "ArnNotEquals": true, "ArnNotLike": true, "Null": true,
}

// ParsePolicy parses and checks a bucket policy for bucket: MalformedPolicy
// for JSON that does not parse, a missing or unknown Version, Effect or
// condition operator, a statement without a principal or action, one
// with both Resource and NotResource, an action outside s3:, or a
// resource outside the bucket. A statement with neither Resource nor
// NotResource is accepted and applies to nothing, as RGW takes it.
//
// bucket is the bucket's key (rgw/tenant.go): a resource's ARN with no
// account, or '*', names a bucket of the bucket's own tenant, one with
// another tenant's is refused (as RGW's policy parser).
func ParsePolicy(doc []byte, bucket string) (*Policy, error) {
	tenant, name := rgw.SplitBucketKey(bucket)
	return parsePolicy(doc, tenant, name, false)
}

// ParseUserPolicy parses and checks a user's inline IAM policy (an
// identity policy: no Principal; actions of s3: and iam:; resources any
// ARN; Sids unique), with ParsePolicy's errors. ARNs without an account
// name tenant's buckets and users (the user's own tenant).
func ParseUserPolicy(doc []byte, tenant string) (*Policy, error) {
	return parsePolicy(doc, tenant, "", true)
}

// qualifyARN gives an S3 or IAM ARN in a policy of tenant its account:
// none or '*' is the policy's own tenant, as RGW; ok is false for another
// tenant's. Other ARNs and patterns are returned as they are.
func qualifyARN(arn, tenant string) (string, bool) {
	var service string
	switch {
	case strings.HasPrefix(arn, "arn:aws:s3:"):
		service = "arn:aws:s3:"
	case strings.HasPrefix(arn, "arn:aws:iam:"):
		service = "arn:aws:iam:"
	default:
		return arn, true
	}
	region, rest, ok1 := strings.Cut(arn[len(service):], ":")
	account, res, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return arn, true // matches no request's resource
	}
	if account == "" || account == "*" {
		account = tenant
	}
	if account != tenant {
		return "", false
	}
	return service + region + ":" + account + ":" + res, true
}

func parsePolicy(doc []byte, tenant, bucket string, identity bool) (*Policy, error) {
	bad := func(format string, args ...any) error { return s3err.MalformedPolicy.With(format, args...) }
	var jp jsonPolicy
	if err := json.Unmarshal(doc, &jp); err != nil {
		return nil, bad("the policy is not valid JSON: %v", err)
	}
	if jp.Version != "2012-10-17" && jp.Version != "2008-10-17" {
		return nil, bad("Version must be 2012-10-17 or 2008-10-17, not %q", jp.Version)
	}
	var stmts []jsonStatement
	if err := json.Unmarshal(jp.Statement, &stmts); err != nil {
		var one jsonStatement
		if err2 := json.Unmarshal(jp.Statement, &one); err2 != nil {
			return nil, bad("Statement: %v", err)
		}
		stmts = []jsonStatement{one}
	}
	if len(stmts) == 0 {
		return nil, bad("the policy has no statement")
	}
	p := &Policy{Version: jp.Version}
	sids := map[string]bool{}
	for i, js := range stmts {
		if identity {
			if js.Principal != nil || js.NotPrincipal != nil {
				return nil, bad("statement %d: a user policy has no Principal or NotPrincipal", i)
			}
			if js.Sid != "" && sids[js.Sid] {
				return nil, bad("statement %d: Sid %q is used twice", i, js.Sid)
			}
			sids[js.Sid] = true
		}
		st := Statement{Sid: js.Sid, Effect: js.Effect, Action: js.Action, NotAction: js.NotAction,
			Resource: js.Resource, NotResource: js.NotResource}
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, bad("statement %d: Effect must be Allow or Deny, not %q", i, st.Effect)
		}
		switch {
		case identity:
		case js.Principal != nil && js.NotPrincipal == nil:
			st.Principal = *js.Principal
		case js.NotPrincipal != nil && js.Principal == nil:
			if st.Effect == "Allow" {
				return nil, bad("statement %d: NotPrincipal is allowed with Deny only", i)
			}
			st.NotPrincipal = *js.NotPrincipal
		default:
			return nil, bad("statement %d: a bucket policy statement needs one of Principal, NotPrincipal", i)
		}
		if (len(st.Action) == 0) == (len(st.NotAction) == 0) {
			return nil, bad("statement %d: needs one of Action, NotAction", i)
		}
		for _, a := range append(append([]string{}, st.Action...), st.NotAction...) {
			la := strings.ToLower(a)
			if a != "*" && !strings.HasPrefix(la, "s3:") && !(identity && strings.HasPrefix(la, "iam:")) {
				return nil, bad("statement %d: action %q is not an S3 action", i, a)
			}
		}
		switch {
		case len(st.Resource) > 0 && len(st.NotResource) > 0:
			return nil, bad("statement %d: takes one of Resource, NotResource", i)
		case len(st.Resource) == 0 && len(st.NotResource) == 0 && identity:
			return nil, bad("statement %d: needs one of Resource, NotResource", i)
		}
		// a bucket policy's statement without either applies to nothing
		// (RGW accepts it so: test_bucket_logging_owner)
		st.noResource = len(st.Resource) == 0 && len(st.NotResource) == 0
		for _, list := range [][]string{st.Resource, st.NotResource} {
			for j, r := range list {
				q, ok := qualifyARN(r, tenant)
				if !ok {
					return nil, bad("statement %d: resource %q is another tenant's (the policy's tenant is %q)", i, r, tenant)
				}
				name, ok := strings.CutPrefix(q, "arn:aws:s3::"+tenant+":")
				name, _, _ = strings.Cut(name, "/")
				if !identity && r != "*" && (!ok || !globMatch(name, bucket, true)) {
					return nil, bad("statement %d: resource %q is not in bucket %q", i, r, bucket)
				}
				list[j] = q
			}
		}
		if len(js.Condition) > 0 {
			st.Condition = map[string]map[string][]string{}
			for op, kv := range js.Condition {
				base := strings.TrimSuffix(op, "IfExists")
				if q, rest, ok := strings.Cut(base, ":"); ok && (q == "ForAnyValue" || q == "ForAllValues") {
					base = rest
				}
				if !conditionOps[base] {
					return nil, bad("statement %d: unknown condition operator %q", i, op)
				}
				st.Condition[op] = map[string][]string{}
				for k, v := range kv {
					st.Condition[op][k] = v
				}
			}
		}
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

// globMatch reports whether s matches pattern, in which '*' stands for
// any run of bytes and, if anyOne, '?' for any one byte (IAM's wildcards;
// CORS patterns have '*' alone). Greedy, backtracking only to the last
// '*': at most len(pattern)·len(s) steps, whatever the pattern.
func globMatch(pattern, s string, anyOne bool) bool {
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && (pattern[p] == s[i] || anyOne && pattern[p] == '?'):
			p, i = p+1, i+1
		case star >= 0: // let the last '*' take one more byte
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// decision is a policy's verdict on a request.
type decision int

const (
	decPass  decision = iota // no statement applies: the ACLs decide
	decAllow                 // an Allow statement applies and no Deny does
	decDeny                  // a Deny statement applies
)

// policyRequest is what a policy is evaluated against.
type policyRequest struct {
	uid      string // "" anonymous
	action   string // e.g. "s3:GetObject"
	resource string // "arn:aws:s3::TENANT:bucket" or "arn:aws:s3::TENANT:bucket/key" (resourceARN)
	// value returns a condition key's value(s) and whether the request
	// has the key.
	value func(key string) ([]string, bool)
}

// eval decides r under p (nil: decPass).
func (p *Policy) eval(r *policyRequest) decision {
	if p == nil {
		return decPass
	}
	d := decPass
	for i := range p.Statements {
		st := &p.Statements[i]
		if !st.applies(r) {
			continue
		}
		if st.Effect == "Deny" {
			return decDeny
		}
		d = decAllow
	}
	return d
}

func (st *Statement) applies(r *policyRequest) bool {
	if st.Principal != nil && !principalMatches(st.Principal, r.uid) {
		return false
	}
	if st.NotPrincipal != nil && principalMatches(st.NotPrincipal, r.uid) {
		return false
	}
	if len(st.Action) > 0 && !anyMatch(st.Action, r.action, true) {
		return false
	}
	if len(st.NotAction) > 0 && anyMatch(st.NotAction, r.action, true) {
		return false
	}
	if st.noResource || len(st.Resource) > 0 && !anyMatch(st.Resource, r.resource, false) {
		return false
	}
	if len(st.NotResource) > 0 && anyMatch(st.NotResource, r.resource, false) {
		return false
	}
	for op, kv := range st.Condition {
		for key, want := range kv {
			if !conditionHolds(op, key, want, r) {
				return false
			}
		}
	}
	return true
}

func anyMatch(patterns []string, s string, fold bool) bool {
	if fold {
		s = strings.ToLower(s)
	}
	for _, p := range patterns {
		if fold {
			p = strings.ToLower(p)
		}
		if globMatch(p, s, true) {
			return true
		}
	}
	return false
}

// servicePrincipal is how a service principal ({"Service": name}) is
// kept, and how a service's own request names its caller: "service:NAME"
// (no user id holds ':').
func servicePrincipal(name string) string { return "service:" + name }

// principalMatches reports whether uid is one of the principals. A
// service (servicePrincipal) matches its own principal alone, not "*".
func principalMatches(principals []string, uid string) bool {
	if strings.HasPrefix(uid, "service:") {
		return slices.Contains(principals, uid)
	}
	for _, p := range principals {
		if p == "*" {
			return true
		}
		if uid == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(p, "arn:aws:iam::"); ok {
			account, res, _ := strings.Cut(rest, ":")
			tenant, name := rgw.UserTenant(uid), rgw.UserName(uid)
			if res == "root" && (account == uid || (tenant != "" && account == tenant)) {
				return true
			}
			if account != tenant {
				continue
			}
			if u, ok := strings.CutPrefix(res, "user/"); ok && (u == name || (strings.ContainsAny(u, "*?") && globMatch(u, name, true))) {
				return true
			}
			continue
		}
		if p == uid {
			return true
		}
	}
	return false
}

// conditionHolds evaluates one operator on one key.
func conditionHolds(op, key string, want []string, r *policyRequest) bool {
	have, ok := r.value(key)
	base, ifExists := strings.CutSuffix(op, "IfExists")
	qualifier := ""
	if q, rest, found := strings.Cut(base, ":"); found {
		qualifier, base = q, rest
	}
	if base == "Null" {
		// Null: "true" holds when the key is absent
		return len(want) > 0 && (want[0] == "true") == !ok
	}
	negated := strings.Contains(base, "Not")
	if !ok {
		return ifExists || negated || qualifier == "ForAllValues"
	}
	match := func(h string) bool {
		for _, w := range want {
			if valueMatches(base, h, w) {
				return true
			}
		}
		return false
	}
	if negated {
		// a negated operator holds when no value matches the positive form
		pos := strings.Replace(base, "Not", "", 1)
		for _, h := range have {
			for _, w := range want {
				if valueMatches(pos, h, w) {
					return false
				}
			}
		}
		return true
	}
	if qualifier == "ForAllValues" {
		for _, h := range have {
			if !match(h) {
				return false
			}
		}
		return true
	}
	for _, h := range have {
		if match(h) {
			return true
		}
	}
	return false
}

// valueMatches applies a positive operator to a request value and a
// policy value.
func valueMatches(op, have, want string) bool {
	switch op {
	case "StringEquals", "ArnEquals":
		return have == want
	case "StringEqualsIgnoreCase":
		return strings.EqualFold(have, want)
	case "StringLike", "ArnLike":
		return globMatch(want, have, true)
	case "Bool":
		return strings.EqualFold(have, want)
	case "IpAddress":
		ip := net.ParseIP(have)
		if _, n, err := net.ParseCIDR(want); err == nil {
			return ip != nil && n.Contains(ip)
		}
		return ip != nil && ip.Equal(net.ParseIP(want))
	}
	if num, ok := strings.CutPrefix(op, "Numeric"); ok {
		h, err1 := strconv.ParseFloat(have, 64)
		w, err2 := strconv.ParseFloat(want, 64)
		return err1 == nil && err2 == nil && compare(num, h, w)
	}
	if d, ok := strings.CutPrefix(op, "Date"); ok {
		h, err1 := parsePolicyTime(have)
		w, err2 := parsePolicyTime(want)
		return err1 == nil && err2 == nil && compare(d, float64(h.UnixNano()), float64(w.UnixNano()))
	}
	return false
}

func compare(how string, h, w float64) bool {
	switch how {
	case "Equals":
		return h == w
	case "LessThan":
		return h < w
	case "LessThanEquals":
		return h <= w
	case "GreaterThan":
		return h > w
	case "GreaterThanEquals":
		return h >= w
	}
	return false
}

func parsePolicyTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return time.Unix(n, 0), err
}

// pinningKeys are the condition keys (lower case) that tie a statement
// to particular callers, so that it does not make a policy public.
var pinningKeys = map[string]bool{"aws:sourceip": true, "aws:sourcearn": true, "aws:sourcevpc": true, "aws:sourcevpce": true,
	"aws:sourceaccount": true, "aws:sourceowner": true, "aws:principalaccount": true, "aws:principalarn": true,
	"aws:principalorgid": true, "aws:userid": true, "aws:username": true}

// isPublic reports whether the policy grants access to anyone: an Allow
// statement for every principal whose conditions do not pin the caller
// down (by source address, account or user) — the S3 user guide's "The
// meaning of public".
func (p *Policy) isPublic() bool {
	if p == nil {
		return false
	}
	for _, st := range p.Statements {
		if st.Effect != "Allow" || st.noResource || (st.Principal != nil && !principalMatches(st.Principal, "")) {
			continue
		}
		pinned := false
		for op, kv := range st.Condition {
			if strings.Contains(op, "Not") {
				continue
			}
			for k := range kv {
				pinned = pinned || pinningKeys[strings.ToLower(k)]
			}
		}
		if !pinned {
			return true
		}
	}
	return false
}

// requestValues returns the condition keys of an HTTP request by user
// uid; tags loads the object's current tags (nil: no object).
func requestValues(r *http.Request, uid string, tags func() ([]rgw.Tag, bool)) func(string) ([]string, bool) {
	return func(key string) ([]string, bool) {
		lk := strings.ToLower(key)
		hdr := func(name string) ([]string, bool) {
			v, ok := r.Header[http.CanonicalHeaderKey(name)]
			return v, ok && len(v) > 0
		}
		switch lk {
		case "aws:sourceip":
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil {
				host = r.RemoteAddr
			}
			return []string{host}, true
		case "aws:referer":
			return hdr("Referer")
		case "aws:useragent":
			return hdr("User-Agent")
		case "aws:securetransport":
			return []string{strconv.FormatBool(r.TLS != nil)}, true
		case "aws:currenttime":
			return []string{time.Now().UTC().Format(time.RFC3339)}, true
		case "aws:epochtime":
			return []string{strconv.FormatInt(time.Now().Unix(), 10)}, true
		case "aws:username", "aws:userid":
			return []string{uid}, uid != ""
		case "s3:prefix", "s3:delimiter", "s3:max-keys":
			q := r.URL.Query()
			v, ok := q[strings.TrimPrefix(lk, "s3:")]
			return v, ok
		}
		if h, ok := strings.CutPrefix(lk, "s3:x-amz-"); ok {
			return hdr("x-amz-" + h)
		}
		if k, ok := strings.CutPrefix(key, "s3:ExistingObjectTag/"); ok && tags != nil {
			ts, found := tags()
			if !found {
				return nil, false
			}
			for _, t := range ts {
				if t.Key == k {
					return []string{t.Value}, true
				}
			}
			return nil, false
		}
		if k, ok := strings.CutPrefix(key, "s3:RequestObjectTag/"); ok {
			ts, err := headerTags(r.Header)
			if err != nil {
				return nil, false
			}
			for _, t := range ts {
				if t.Key == k {
					return []string{t.Value}, true
				}
			}
		}
		return nil, false
	}
}

type publicAccessBlockConfiguration struct {
	XMLName xml.Name `xml:"PublicAccessBlockConfiguration"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	rgw.PublicAccessBlock
}

type policyStatus struct {
	XMLName  xml.Name `xml:"PolicyStatus"`
	Xmlns    string   `xml:"xmlns,attr,omitempty"`
	IsPublic bool     `xml:"IsPublic"`
}

// s3Action is the IAM action a request asks for (the S3 user guide,
// "Actions, resources, and condition keys for Amazon S3").
func s3Action(rq *request) string {
	q, m := rq.q, rq.r.Method
	sub := func(pairs ...string) string {
		for i := 0; i+1 < len(pairs); i += 2 {
			if has(q, pairs[i]) {
				return pairs[i+1]
			}
		}
		return ""
	}
	if rq.key == "" {
		var a string
		switch m {
		case http.MethodGet, http.MethodHead:
			a = sub("acl", "GetBucketAcl", "location", "GetBucketLocation", "versioning", "GetBucketVersioning",
				"tagging", "GetBucketTagging", "uploads", "ListBucketMultipartUploads", "versions", "ListBucketVersions",
				"cors", "GetBucketCORS", "lifecycle", "GetLifecycleConfiguration", "policy", "GetBucketPolicy",
				"policyStatus", "GetBucketPolicyStatus", "publicAccessBlock", "GetBucketPublicAccessBlock",
				"ownershipControls", "GetBucketOwnershipControls", "logging", "GetBucketLogging",
				"encryption", "GetEncryptionConfiguration", "requestPayment", "GetBucketRequestPayment")
			if a == "" {
				a = "ListBucket"
			}
		case http.MethodPut:
			a = sub("acl", "PutBucketAcl", "tagging", "PutBucketTagging", "cors", "PutBucketCORS",
				"lifecycle", "PutLifecycleConfiguration", "policy", "PutBucketPolicy",
				"publicAccessBlock", "PutBucketPublicAccessBlock", "versioning", "PutBucketVersioning",
				"ownershipControls", "PutBucketOwnershipControls", "logging", "PutBucketLogging",
				"encryption", "PutEncryptionConfiguration", "requestPayment", "PutBucketRequestPayment")
			if a == "" {
				a = "CreateBucket"
			}
		case http.MethodDelete:
			a = sub("tagging", "PutBucketTagging", "cors", "PutBucketCORS", "lifecycle", "PutLifecycleConfiguration",
				"policy", "DeleteBucketPolicy", "publicAccessBlock", "PutBucketPublicAccessBlock",
				"ownershipControls", "PutBucketOwnershipControls", "encryption", "PutEncryptionConfiguration")
			if a == "" {
				a = "DeleteBucket"
			}
		case http.MethodPost:
			a = sub("delete", "DeleteObject", "logging", "PostBucketLogging")
			if a == "" {
				a = "PutObject"
			}
		}
		return "s3:" + a
	}
	var a string
	switch m {
	case http.MethodGet, http.MethodHead:
		a = sub("acl", "GetObjectAcl", "tagging", "GetObjectTagging", "uploadId", "ListMultipartUploadParts", "attributes", "GetObjectAttributes")
		if a == "" {
			a = "GetObject"
		}
	case http.MethodPut:
		a = sub("acl", "PutObjectAcl", "tagging", "PutObjectTagging")
		if a == "" {
			a = "PutObject"
		}
	case http.MethodDelete:
		a = sub("tagging", "DeleteObjectTagging", "uploadId", "AbortMultipartUpload")
		if a == "" {
			a = "DeleteObject"
		}
	default:
		a = "PutObject"
	}
	return "s3:" + a
}

// resourceARN names bucket b ("" key) or an object of it in policies:
// "arn:aws:s3::TENANT:BUCKET[/KEY]" (qualifyARN).
func resourceARN(b *rgw.Bucket, key string) string {
	arn := "arn:aws:s3::" + b.Tenant() + ":" + b.S3Name()
	if key == "" {
		return arn
	}
	return arn + "/" + key
}

// authorize decides whether rq's user may do action ("": the request's
// own, s3Action) on key of bucket b ("" for the bucket itself): the
// bucket policy's Deny refuses (AccessDenied), its Allow permits, and
// otherwise aclCheck decides. Without a policy it costs aclCheck alone.
// tags loads the object's current tags for s3:ExistingObjectTag
// conditions (nil: the request is not about one object). (A Requester
// Pays bucket's rule is checked where the request loads its bucket:
// checkRequestPayer.)
func (srv *Server) authorize(rq *request, b *rgw.Bucket, key, action string, tags func() ([]rgw.Tag, bool), aclCheck func() error) error {
	p := bucketPolicy(b)
	ids := srv.identityPolicies(rq)
	if p == nil && ids == nil {
		return viaACL(rq, b, aclCheck)
	}
	if action == "" {
		action = s3Action(rq)
	}
	idd := evalIdentity(ids, rq, action, resourceARN(b, key), tags)
	if idd == decAllow && b.Tenant() != rgw.UserTenant(rq.uid) {
		idd = decPass // a user's own policies open its own tenant's buckets only
	}
	if idd == decDeny {
		return s3err.AccessDenied.With("a policy of user %q denies %s", rq.uid, action)
	}
	if p == nil {
		if idd == decAllow {
			return nil
		}
		return viaACL(rq, b, aclCheck)
	}
	if tags == nil && key != "" {
		tags = func() ([]rgw.Tag, bool) {
			h, _, _, _, err := srv.s.HeadAt(rq.r.Context(), rgw.HeadOID(b.ID, key), false)
			if err != nil {
				return nil, false
			}
			return h.Tags, true
		}
	}
	d := decide(b, rq.uid, action, key, requestValues(rq.r, rq.uid, tags))
	switch {
	case d == decDeny:
		return s3err.AccessDenied.With("the policy of bucket %q denies %s", b.Name, action)
	case d == decAllow, idd == decAllow:
		return nil
	}
	return viaACL(rq, b, aclCheck)
}

// viaACL runs aclCheck as the check that decides and notes, for the
// access log's ACLRequired, when an ACL let a user other than the
// bucket's owner in.
func viaACL(rq *request, b *rgw.Bucket, aclCheck func() error) error {
	err := aclCheck()
	if err == nil && rq.uid != b.Owner {
		rq.aclRequired.Store(true)
	}
	return err
}

// decide evaluates b's policy for user uid doing action on key ("": the
// bucket) with the request's condition values; under
// RestrictPublicBuckets, a public policy's Allow counts for the owner
// alone.
func decide(b *rgw.Bucket, uid, action, key string, value func(string) ([]string, bool)) decision {
	p := bucketPolicy(b)
	d := p.eval(&policyRequest{uid: uid, action: action, resource: resourceARN(b, key), value: value})
	if d == decAllow && uid != b.Owner && b.PublicAccess != nil && b.PublicAccess.RestrictPublicBuckets && p.isPublic() {
		d = decPass
	}
	return d
}

// authorizeObject is authorize for a request about open object o (key
// of bucket b): the policy, or else perm on the object's ACL.
func (srv *Server) authorizeObject(rq *request, b *rgw.Bucket, o *rgw.Object, key, action, perm string) error {
	return srv.authorize(rq, b, key, action, func() ([]rgw.Tag, bool) { return o.Tags(), true }, func() error {
		owner, acl := b.ObjectOwnerACL(o)
		if !b.EffectiveACL(acl).Allows(owner, rq.uid, perm) {
			return errDenied(rq.uid, perm, fmt.Sprintf("object %q of bucket %q", key, b.Name))
		}
		return nil
	})
}

// bucketPolicy answers GET, PUT and DELETE ?policy: the bucket's owner
// alone, whatever the policy says (no policy locks its owner out).
func (srv *Server) bucketPolicy(rq *request) error {
	b, err := srv.requestBucket(rq)
	if err != nil {
		return err
	}
	if err := bucketAllows(b, rq.uid, ""); err != nil {
		return err
	}
	switch rq.r.Method {
	case http.MethodGet:
		if b.Policy == "" {
			return s3err.NoSuchBucketPolicy.With("bucket %q has no policy", b.Name)
		}
		h := rq.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(b.Policy)))
		rq.w.WriteHeader(http.StatusOK)
		io.WriteString(rq.w, b.Policy)
		return nil
	case http.MethodPut:
		doc, err := readBody(rq.r, maxPolicySize)
		if err != nil {
			if errors.Is(err, s3err.EntityTooLarge) {
				return s3err.MalformedPolicy.With("a bucket policy is at most %d bytes", maxPolicySize)
			}
			return err
		}
		p, err := ParsePolicy(doc, b.Name)
		if err != nil {
			return err
		}
		if b.PublicAccess != nil && b.PublicAccess.BlockPublicPolicy && p.isPublic() {
			return s3err.AccessDenied.With("bucket %q blocks public policies (BlockPublicPolicy)", b.Name)
		}
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *rgw.Bucket) { nb.Policy = string(doc) })
	case http.MethodDelete:
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *rgw.Bucket) { nb.Policy = "" })
	}
	return s3err.MethodNotAllowed
}

// bucketPublicAccess answers GET, PUT and DELETE ?publicAccessBlock and
// GET ?policyStatus (the owner, or whom the policy allows).
func (srv *Server) bucketPublicAccess(rq *request) error {
	b, err := srv.bucketFor(rq, "")
	if err != nil {
		return err
	}
	if has(rq.q, "policyStatus") {
		if rq.r.Method != http.MethodGet {
			return s3err.MethodNotAllowed
		}
		public := bucketPolicy(b).isPublic() || b.EffectiveACL(b.ACL).IsPublic()
		return writeXML(rq, http.StatusOK, policyStatus{Xmlns: s3NS, IsPublic: public})
	}
	switch rq.r.Method {
	case http.MethodGet:
		if b.PublicAccess == nil {
			return s3err.NoSuchPublicAccessBlock.With("bucket %q has no public access block configuration", b.Name)
		}
		return writeXML(rq, http.StatusOK, publicAccessBlockConfiguration{Xmlns: s3NS, PublicAccessBlock: *b.PublicAccess})
	case http.MethodPut:
		var c publicAccessBlockConfiguration
		if err := readXMLBody(rq.r, &c); err != nil {
			return err
		}
		return srv.setBucketConfig(rq, b, http.StatusOK, func(nb *rgw.Bucket) { pab := c.PublicAccessBlock; nb.PublicAccess = &pab })
	case http.MethodDelete:
		return srv.setBucketConfig(rq, b, http.StatusNoContent, func(nb *rgw.Bucket) { nb.PublicAccess = nil })
	}
	return s3err.MethodNotAllowed
}

// missingKey is the answer to a read of key, which does not exist (err):
// err for whom may list the bucket — s3:ListBucket with s3:prefix the key,
// as RGW evaluates it — and AccessDenied for others, whom S3 does not tell
// what is absent.
func (srv *Server) missingKey(rq *request, b *rgw.Bucket, key string, err error) error {
	vals := requestValues(rq.r, rq.uid, nil)
	d := decide(b, rq.uid, "s3:ListBucket", "", func(k string) ([]string, bool) {
		if strings.EqualFold(k, "s3:prefix") {
			return []string{key}, true
		}
		return vals(k)
	})
	if d == decAllow || (d == decPass && bucketAllows(b, rq.uid, rgw.PermRead) == nil) {
		return err
	}
	return s3err.AccessDenied.With("no permission to list bucket %q", b.Name)
}

// bucketPolicy is b's policy, parsed once per loaded bucket (nil if it
// has none; a stored policy was checked when it was put).
func bucketPolicy(b *rgw.Bucket) *Policy {
	p, _ := b.ParsedPolicy(func(doc, bucket string) any {
		p, _ := ParsePolicy([]byte(doc), bucket)
		return p
	}).(*Policy)
	return p
}
