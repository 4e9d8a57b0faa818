package gateway

import (
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// IAM's user-policy API as RGW serves it on the S3 endpoint: POST / with
// a form body (Action=PutUserPolicy|GetUserPolicy|ListUserPolicies|
// DeleteUserPolicy, Version, UserName, PolicyName, PolicyDocument),
// signed for the service "iam" (the IAM API reference, "Actions").
//
// A caller may manage user U's policies if it holds the user-policy
// capability (`shoal user caps add`: read for Get/List, write for
// Put/Delete), or if one of its own policies allows the action
// (iam:PutUserPolicy, …) on arn:aws:iam::TENANT:user/U. A UserName
// without "TENANT$" names a user of the caller's own tenant.
//
// A user's policies are evaluated with every request it makes, beside the
// bucket's policy and ACLs, as RGW does: a Deny in any policy refuses; an
// Allow in either the user's or the bucket's policies permits; otherwise
// the ACLs decide. Policies apply to users, not to anonymous requests.

// iamNS is the IAM API's XML namespace.
const iamNS = "https://iam.amazonaws.com/doc/2010-05-08/"

// IAM's limits on an inline user policy (IAM user guide, "IAM and AWS
// STS quotas"): the name's length and characters.
var policyNameRE = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)

// maxUserPolicySize bounds a user policy document (bytes; RGW takes
// larger ones than AWS's 2,048 characters).
const maxUserPolicySize = 20 << 10

// iamError is an IAM error: its code, HTTP status and message, rendered
// as IAM's ErrorResponse.
type iamError struct {
	Code    string
	Status  int
	Message string
}

func (e *iamError) Error() string { return e.Code + ": " + e.Message }

func iamErr(code string, status int, msg string) *iamError {
	return &iamError{Code: code, Status: status, Message: msg}
}

type iamErrorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

type iamMetadata struct {
	RequestID string `xml:"RequestId"`
}

// iamSigned reports whether the request is signed for the IAM service
// (SigV4 scope ".../iam/aws4_request").
func iamSigned(r *http.Request) bool {
	for _, v := range []string{r.Header.Get("Authorization"), r.URL.Query().Get("X-Amz-Credential")} {
		if i := strings.Index(v, "/iam/aws4_request"); i >= 0 {
			return true
		}
	}
	return false
}

// iamRequest answers an IAM request (authenticated as rq.uid).
func (srv *Server) iamRequest(rq *request) {
	err := srv.iamAction(rq)
	if err == nil {
		return
	}
	ie := (*iamError)(nil)
	if !errors.As(err, &ie) {
		ae := apiError(err)
		ie = iamErr(ae.Code, ae.Status, ae.Message)
	}
	var body iamErrorResponse
	body.Xmlns, body.RequestID = iamNS, rq.id
	body.Error.Type, body.Error.Code, body.Error.Message = "Sender", ie.Code, ie.Message
	if ie.Status >= 500 {
		body.Error.Type = "Receiver"
	}
	writeIAM(rq, ie.Status, body)
}

func (srv *Server) iamAction(rq *request) error {
	if rq.uid == "" {
		return iamErr("AccessDenied", http.StatusForbidden, "IAM requests must be signed")
	}
	body, err := readBody(rq.r, maxUserPolicySize+64<<10)
	if err != nil {
		return err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return iamErr("InvalidInput", http.StatusBadRequest, "the request body is not a form")
	}
	action, user, name := form.Get("Action"), form.Get("UserName"), form.Get("PolicyName")
	ctx := rq.r.Context()
	perm := "read"
	switch action {
	case "PutUserPolicy", "DeleteUserPolicy":
		perm = "write"
	case "GetUserPolicy", "ListUserPolicies":
	default:
		return iamErr("InvalidAction", http.StatusBadRequest, "action "+strconv.Quote(action)+" is not supported (only the user-policy actions)")
	}
	if user == "" {
		return iamErr("ValidationError", http.StatusBadRequest, "UserName is required")
	}
	if action != "ListUserPolicies" && !policyNameRE.MatchString(name) {
		return iamErr("ValidationError", http.StatusBadRequest, "PolicyName must be 1 to 128 of letters, digits and +=,.@_-")
	}
	if !strings.Contains(user, "$") && rgw.UserTenant(rq.uid) != "" {
		user = rgw.UserTenant(rq.uid) + "$" + user // a user of the caller's own tenant
	}
	if err := srv.iamAllowed(rq, "iam:"+action, user, "arn:aws:iam::"+rgw.UserTenant(user)+":user/"+rgw.UserName(user), perm); err != nil {
		return err
	}
	notFound := func(err error) error {
		switch {
		case errors.Is(err, rgw.ErrNoSuchUser):
			return iamErr("NoSuchEntity", http.StatusNotFound, "The user with name "+user+" cannot be found.")
		case errors.Is(err, rgw.ErrNoSuchPolicy):
			return iamErr("NoSuchEntity", http.StatusNotFound, "The user policy with name "+name+" cannot be found.")
		}
		return err
	}
	switch action {
	case "PutUserPolicy":
		doc := form.Get("PolicyDocument")
		if len(doc) > maxUserPolicySize {
			return iamErr("LimitExceeded", http.StatusBadRequest, "the policy document is larger than "+strconv.Itoa(maxUserPolicySize)+" bytes")
		}
		if _, err := ParseUserPolicy([]byte(doc), rgw.UserTenant(user)); err != nil {
			return iamErr("MalformedPolicyDocument", http.StatusBadRequest, apiError(err).Message)
		}
		if err := srv.s.PutUserPolicy(ctx, user, name, doc); err != nil {
			return notFound(err)
		}
		return answerIAM(rq, action, nil)
	case "DeleteUserPolicy":
		if err := srv.s.DeleteUserPolicy(ctx, user, name); err != nil {
			return notFound(err)
		}
		return answerIAM(rq, action, nil)
	case "GetUserPolicy":
		u, err := srv.s.GetUser(ctx, user)
		if err != nil {
			return notFound(err)
		}
		doc, ok := u.Policies[name]
		if !ok {
			return notFound(rgw.ErrNoSuchPolicy)
		}
		return answerIAM(rq, action, getUserPolicyResult{UserName: user, PolicyName: name, PolicyDocument: doc})
	}
	names, err := srv.s.UserPolicyNames(ctx, user)
	if err != nil {
		return notFound(err)
	}
	return answerIAM(rq, action, listUserPoliciesResult{Names: names})
}

// iamAllowed checks that rq's user may do action on resource: by the
// user-policy capability with perm, or by its own policies.
func (srv *Server) iamAllowed(rq *request, action, target, resource, perm string) error {
	caps, _, err := srv.s.UserAccess(rq.r.Context(), rq.uid)
	if err != nil {
		return err
	}
	if rgw.HasCap(caps, rgw.CapUserPolicy, perm) {
		return nil
	}
	// a user's own policies reach users of its own tenant only
	if rgw.UserTenant(target) == rgw.UserTenant(rq.uid) && evalIdentity(srv.identityPolicies(rq), rq, action, resource, nil) == decAllow {
		return nil
	}
	return iamErr("AccessDenied", http.StatusForbidden, "user "+rq.uid+" may not "+action+" on "+resource)
}

// writeIAM answers v as IAM's XML with status.
func writeIAM(rq *request, status int, v any) error {
	b, err := xml.Marshal(v)
	if err != nil {
		return err
	}
	h := rq.w.Header()
	h.Set("Content-Type", "text/xml")
	h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(b)))
	rq.w.WriteHeader(status)
	rq.w.Write([]byte(xml.Header))
	rq.w.Write(b)
	return nil
}

// iamResponse is an IAM action's answer, <ACTIONResponse> with its
// result (nil: none) and metadata.
type iamResponse struct {
	XMLName xml.Name
	Xmlns   string      `xml:"xmlns,attr"`
	Result  any         `xml:",omitempty"`
	Meta    iamMetadata `xml:"ResponseMetadata"`
}

// answerIAM answers action with result (nil: none; its own XMLName names
// the ACTIONResult element).
func answerIAM(rq *request, action string, result any) error {
	return writeIAM(rq, http.StatusOK, iamResponse{XMLName: xml.Name{Local: action + "Response"}, Xmlns: iamNS, Result: result, Meta: iamMetadata{rq.id}})
}

type getUserPolicyResult struct {
	XMLName        xml.Name `xml:"GetUserPolicyResult"`
	UserName       string   `xml:"UserName"`
	PolicyName     string   `xml:"PolicyName"`
	PolicyDocument string   `xml:"PolicyDocument"`
}

type listUserPoliciesResult struct {
	XMLName     xml.Name `xml:"ListUserPoliciesResult"`
	Names       []string `xml:"PolicyNames>member"`
	IsTruncated bool     `xml:"IsTruncated"`
}

// parsedPolicies caches parsed user policies by their document (a
// user's policies are parsed once, not per request); it is dropped
// whole when it grows past maxParsedPolicies.
var parsedPolicies struct {
	sync.Mutex
	m map[string]*Policy
}

const maxParsedPolicies = 4096

// identityPolicies returns rq's user's parsed policies (nil for none or
// an anonymous request). A stored policy that no longer parses is
// skipped (it was checked when put).
func (srv *Server) identityPolicies(rq *request) []*Policy {
	if rq.uid == "" {
		return nil
	}
	_, docs, err := srv.s.UserAccess(rq.r.Context(), rq.uid)
	if err != nil || len(docs) == 0 {
		return nil
	}
	out := make([]*Policy, 0, len(docs))
	parsedPolicies.Lock()
	defer parsedPolicies.Unlock()
	if parsedPolicies.m == nil || len(parsedPolicies.m) > maxParsedPolicies {
		parsedPolicies.m = map[string]*Policy{}
	}
	for _, d := range docs {
		tenant := rgw.UserTenant(rq.uid)
		p, ok := parsedPolicies.m[tenant+"\x00"+d]
		if !ok {
			p, _ = ParseUserPolicy([]byte(d), tenant)
			parsedPolicies.m[tenant+"\x00"+d] = p
		}
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// evalIdentity decides action on resource under the user's policies ps:
// a Deny in any refuses, else an Allow in any permits, else decPass.
func evalIdentity(ps []*Policy, rq *request, action, resource string, tags func() ([]rgw.Tag, bool)) decision {
	if len(ps) == 0 {
		return decPass
	}
	r := &policyRequest{uid: rq.uid, action: action, resource: resource, value: requestValues(rq.r, rq.uid, tags)}
	d := decPass
	for _, p := range ps {
		switch p.eval(r) {
		case decDeny:
			return decDeny
		case decAllow:
			d = decAllow
		}
	}
	return d
}
