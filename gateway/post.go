package gateway

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// POST Object: browser-based uploads with an HTML form (the S3 API
// reference, "POST Object" and "Browser-Based Uploads Using POST"). The
// form's fields come before its file; a policy document (base64 JSON:
// expiration and conditions) signed with SigV2 (AWSAccessKeyId, signature:
// base64 HMAC-SHA1 of the policy) or SigV4 (x-amz-credential, x-amz-date,
// x-amz-signature: hex HMAC-SHA256 with the signing key) authenticates
// the upload as the key's user, and every field but the signature's own,
// the file and x-ignore-* ones must satisfy a condition. A form without a
// policy is anonymous and needs the bucket to grant AllUsers WRITE.

// postFieldMax bounds one form field other than the file (a policy is a
// few KiB), postFieldsMax all of them.
const (
	postFieldMax  = 64 << 10
	postFieldsMax = 1 << 20
)

// postForm is a POST upload's fields (names lower-cased) and its file.
type postForm struct {
	fields   map[string]string
	names    map[string]string // lower-cased → as sent (x-amz-meta-* keep their case)
	file     io.Reader
	filename string
}

// readPostForm reads the fields up to the part named "file" (field names
// are case-insensitive), which it leaves to be read.
func readPostForm(r *http.Request) (*postForm, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, s3err.InvalidRequest.With("POST on a bucket must be a multipart/form-data upload")
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	f := &postForm{fields: map[string]string{}, names: map[string]string{}}
	total := 0
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil, s3err.InvalidArgument.With("POST requires exactly one file upload per request")
		}
		if err != nil {
			return nil, s3err.MalformedPOSTRequest.With("%v", err)
		}
		name := strings.ToLower(p.FormName())
		if name == "file" {
			f.file, f.filename = p, p.FileName()
			return f, nil
		}
		v, err := io.ReadAll(io.LimitReader(p, postFieldMax+1))
		if err != nil {
			return nil, s3err.MalformedPOSTRequest.With("%v", err)
		}
		if total += len(v); len(v) > postFieldMax || total > postFieldsMax {
			return nil, s3err.MaxPostPreDataLength
		}
		if strings.HasPrefix(name, "x-amz-server-side-encryption-") && name != "x-amz-server-side-encryption-bucket-key-enabled" { // SSE-C's and SSE-KMS's; SSE-S3's is postSSE's
			return nil, s3err.NotImplemented.With("POST form field %s: a browser upload may ask for SSE-S3 only", p.FormName())
		}
		f.fields[name], f.names[name] = string(v), p.FormName()
	}
}

// postPolicy is a decoded policy document.
type postPolicy struct {
	expires    time.Time
	conds      []postCondition
	minLen     int64
	maxLen     int64 // -1: no content-length-range
	hasLenCond bool
}

// postCondition is one policy condition: field (lower-case, without $)
// equal to, or starting with, value.
type postCondition struct {
	field, value string
	prefix       bool
}

// parsePostPolicy decodes the base64 JSON policy; a malformed one is an
// InvalidPolicyDocument (400).
func parsePostPolicy(b64 string) (*postPolicy, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, s3err.InvalidPolicyDocument.With("the policy is not base64")
	}
	var doc map[string]json.RawMessage // keys are case-sensitive, as S3's
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, s3err.InvalidPolicyDocument.With("the policy is not a JSON object: %v", err)
	}
	pol := &postPolicy{maxLen: -1}
	var exp string
	if json.Unmarshal(doc["expiration"], &exp) != nil {
		return nil, s3err.InvalidPolicyDocument.With("the policy has no expiration")
	}
	if pol.expires, err = time.Parse("2006-01-02T15:04:05Z", exp); err != nil {
		if pol.expires, err = time.Parse("2006-01-02T15:04:05.000Z", exp); err != nil {
			return nil, s3err.InvalidPolicyDocument.With("expiration %q is not an ISO 8601 UTC date (YYYY-MM-DDThh:mm:ssZ)", exp)
		}
	}
	var conds []json.RawMessage
	if json.Unmarshal(doc["conditions"], &conds) != nil || doc["conditions"] == nil {
		return nil, s3err.InvalidPolicyDocument.With("the policy has no conditions list")
	}
	for _, c := range conds {
		var obj map[string]string
		if json.Unmarshal(c, &obj) == nil {
			if len(obj) != 1 {
				return nil, s3err.InvalidPolicyDocument.With("a condition object must name exactly one field: %s", c)
			}
			for k, v := range obj {
				pol.conds = append(pol.conds, postCondition{field: strings.ToLower(strings.TrimPrefix(k, "$")), value: v})
			}
			continue
		}
		var arr []any
		if json.Unmarshal(c, &arr) != nil || len(arr) == 0 {
			return nil, s3err.InvalidPolicyDocument.With("a condition must be an object or a list: %s", c)
		}
		op, _ := arr[0].(string)
		switch strings.ToLower(op) {
		case "eq", "starts-with":
			field, ok1 := arr[1%len(arr)].(string)
			value, ok2 := arr[2%len(arr)].(string)
			if len(arr) != 3 || !ok1 || !ok2 || !strings.HasPrefix(field, "$") {
				return nil, s3err.InvalidPolicyDocument.With("condition %s: want [%q, \"$field\", \"value\"]", c, op)
			}
			pol.conds = append(pol.conds, postCondition{field: strings.ToLower(field[1:]), value: value, prefix: strings.EqualFold(op, "starts-with")})
		case "content-length-range":
			lo, ok1 := arr[1%len(arr)].(float64)
			hi, ok2 := arr[2%len(arr)].(float64)
			if len(arr) != 3 || !ok1 || !ok2 || lo < 0 || hi < lo {
				return nil, s3err.InvalidPolicyDocument.With("condition %s: want [\"content-length-range\", min, max] with 0 <= min <= max", c)
			}
			pol.minLen, pol.maxLen, pol.hasLenCond = int64(lo), int64(hi), true
		default:
			return nil, s3err.InvalidPolicyDocument.With("unknown condition %s", c)
		}
	}
	return pol, nil
}

// postExempt are fields no condition needs to cover: the signature's own,
// and checksums of the file.
func postExempt(name string) bool {
	switch name {
	case "policy", "signature", "awsaccesskeyid", "x-amz-signature", "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-security-token":
		return true
	}
	return strings.HasPrefix(name, "x-ignore-") || strings.HasPrefix(name, "x-amz-checksum-")
}

// authenticatePost checks a form's policy and signature and returns the
// signing user ("" for a form without a policy: anonymous).
func (srv *Server) authenticatePost(rq *request, f *postForm) (string, *postPolicy, error) {
	policy := f.fields["policy"]
	v2, v4 := f.fields["awsaccesskeyid"] != "", f.fields["x-amz-credential"] != ""
	if policy == "" {
		if v2 || v4 || f.fields["signature"] != "" || f.fields["x-amz-signature"] != "" {
			return "", nil, s3err.InvalidArgument.With("a signed POST needs a policy")
		}
		return "", nil, nil
	}
	if (v2 && f.fields["signature"] == "") || (v4 && f.fields["x-amz-signature"] == "") || (!v2 && !v4) {
		return "", nil, s3err.InvalidArgument.With("a POST with a policy needs AWSAccessKeyId and signature (or the x-amz-* fields of SigV4)")
	}
	pol, err := parsePostPolicy(policy)
	if err != nil {
		return "", nil, err
	}
	ctx := rq.r.Context()
	var uid, secret, want, got string
	if v2 {
		uid, secret, err = srv.s.LookupKey(ctx, f.fields["awsaccesskeyid"])
		if err != nil {
			return "", nil, err
		}
		m := hmac.New(sha1.New, []byte(secret))
		m.Write([]byte(policy))
		want, got = base64.StdEncoding.EncodeToString(m.Sum(nil)), f.fields["signature"]
	} else {
		if !strings.EqualFold(f.fields["x-amz-algorithm"], sigV4Algorithm) {
			return "", nil, s3err.InvalidArgument.With("x-amz-algorithm must be %s", sigV4Algorithm)
		}
		// Credential: AK/DATE/REGION/s3/aws4_request
		parts := strings.Split(f.fields["x-amz-credential"], "/")
		if len(parts) != 5 || parts[4] != sigV4Terminator {
			return "", nil, s3err.InvalidArgument.With("x-amz-credential must be AK/yyyyMMdd/region/s3/aws4_request")
		}
		uid, secret, err = srv.s.LookupKey(ctx, parts[0])
		if err != nil {
			return "", nil, err
		}
		want = hex.EncodeToString(sigHMAC(sigV4SigningKey(secret, parts[1], parts[2], parts[3]), policy))
		got = strings.ToLower(f.fields["x-amz-signature"])
	}
	if !hmac.Equal([]byte(want), []byte(got)) {
		return "", nil, s3err.SignatureDoesNotMatch.With("the form's signature does not match its policy")
	}
	if srv.now().After(pol.expires) {
		return "", nil, s3err.AccessDenied.With("Invalid according to Policy: Policy expired.")
	}
	return uid, pol, nil
}

// checkPostPolicy checks the form's fields (with the key as substituted)
// against the policy's conditions, both ways.
func checkPostPolicy(pol *postPolicy, f *postForm, bucket string) error {
	value := func(field string) (string, bool) {
		if field == "bucket" {
			return bucket, true
		}
		v, ok := f.fields[field]
		return v, ok
	}
	covered := map[string]bool{"bucket": true}
	for _, c := range pol.conds {
		covered[c.field] = true
		v, ok := value(c.field)
		if !ok {
			return s3err.AccessDenied.With("Invalid according to Policy: Policy Condition failed: the form has no field %q", c.field)
		}
		if (c.prefix && !strings.HasPrefix(v, c.value)) || (!c.prefix && v != c.value) {
			return s3err.AccessDenied.With("Invalid according to Policy: Policy Condition failed: %q", c.field)
		}
	}
	bucketCond := false
	for _, c := range pol.conds {
		bucketCond = bucketCond || c.field == "bucket"
	}
	if !bucketCond {
		return s3err.AccessDenied.With("Invalid according to Policy: the policy names no bucket")
	}
	for name := range f.fields {
		if !covered[name] && !postExempt(name) {
			return s3err.AccessDenied.With("Invalid according to Policy: Extra input fields: %s", f.names[name])
		}
	}
	return nil
}

// postBody reads a POST upload's file, enforcing the policy's length
// range: a violation fails the read (so the upload leaves nothing
// behind) with the S3 error. (An x-amz-checksum-* field is checked as a
// PUT's header is.)
type postBody struct {
	r        io.Reader
	n        int64
	min, max int64 // max < 0: none
}

func (b *postBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.max >= 0 && b.n > b.max {
		return n, s3err.EntityTooLarge.With("Your proposed upload exceeds the maximum allowed size (content-length-range %d)", b.max)
	}
	if err == io.EOF {
		if b.n < b.min {
			return n, s3err.EntityTooSmall.With("Your proposed upload is smaller than the minimum allowed size (content-length-range %d)", b.min)
		}
	}
	return n, err
}

// postObject serves a POST upload to the request's bucket.
func (srv *Server) postObject(rq *request) error {
	ctx := rq.r.Context()
	f, err := readPostForm(rq.r)
	if err != nil {
		return err
	}
	uid, pol, err := srv.authenticatePost(rq, f)
	if err != nil {
		return err
	}
	key, ok := f.fields["key"]
	if !ok || key == "" {
		return s3err.InvalidArgument.With("Bucket POST must contain a field named 'key'.")
	}
	key = strings.ReplaceAll(key, "${filename}", f.filename)
	f.fields["key"] = key
	if pol != nil {
		_, name := rgw.SplitBucketKey(rq.bucket)
		if err := checkPostPolicy(pol, f, name); err != nil {
			return err
		}
	}
	var tags []rgw.Tag
	if v := f.fields["tagging"]; v != "" {
		var t tagging
		if err := xml.Unmarshal([]byte(v), &t); err != nil {
			return s3err.MalformedXML.With("the tagging field is not a Tagging document")
		}
		if err := checkTags(t.TagSet, maxObjectTags); err != nil {
			return err
		}
		tags = t.TagSet
	}
	rq.key, rq.uid = key, uid
	if len(key) > 1024 {
		return s3err.KeyTooLong
	}
	if err := rq.qualifyBucket(); err != nil { // now in the form's user's tenant
		return err
	}
	b, err := srv.bucketFor(rq, rgw.PermWrite)
	if err != nil {
		return err
	}
	// the fields that stand for request headers
	h := http.Header{}
	for name, v := range f.fields {
		if strings.HasPrefix(name, "x-amz-meta-") || name == "x-amz-storage-class" || slicesContainsFold(storedHeaders, name) {
			h.Set(name, v)
		}
	}
	if v, ok := f.fields["acl"]; ok {
		h.Set("x-amz-acl", v)
	}
	hr := &http.Request{Header: h}
	hdr, meta, err := objectAttrs(hr)
	if err != nil {
		return err
	}
	sc, err := storageClass(hr)
	if err != nil {
		return err
	}
	owner, acl, err := srv.objectOwnerACL(ctx, h, uid, b)
	if err != nil {
		return err
	}
	body := &postBody{r: f.file, max: -1}
	if pol != nil && pol.hasLenCond {
		body.min, body.max = pol.minLen, pol.maxLen
	}
	var ck *rgw.ChecksumReq
	for _, a := range rgw.ChecksumAlgs {
		v, ok := f.fields[a.Header()]
		if !ok {
			continue
		}
		if d, err := base64.StdEncoding.DecodeString(v); err != nil || len(d) != a.New().Size() {
			return s3err.InvalidRequest.With("Value for %s is invalid.", a.Header())
		}
		if ck != nil {
			return s3err.InvalidRequest.With("Expecting a single x-amz-checksum- field. Multiple checksum Types are not allowed.")
		}
		ck = &rgw.ChecksumReq{Alg: a, Want: v}
	}
	sse, err := postSSE(f, b)
	if err != nil {
		return err
	}
	res, err := srv.s.PutObject(ctx, b, key, rgw.PutInput{Body: body, Size: -1, Headers: hdr, Meta: meta, Class: sc, Owner: owner, ACL: acl, Tags: tags, Checksum: ck, SSE: sse})
	if err != nil {
		return err
	}
	rq.w.Header().Set("ETag", res.ETag)
	setSSEHeaders(rq.w.Header(), res.SSE)
	setWrittenVersionHeader(rq.w.Header(), res.VersionID)
	setChecksumHeaders(res.Checksum, rq.w.Header())
	location := "/" + b.S3Name() + "/" + (&url.URL{Path: key}).EscapedPath()
	rq.w.Header().Set("Location", location)
	redirect := f.fields["success_action_redirect"]
	if redirect == "" {
		redirect = f.fields["redirect"]
	}
	if redirect != "" {
		if u, err := url.Parse(redirect); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			sep := "?"
			if u.RawQuery != "" {
				sep = "&"
			}
			rq.w.Header().Set("Location", redirect+sep+"bucket="+url.QueryEscape(b.S3Name())+"&key="+url.QueryEscape(key)+
				"&etag="+url.QueryEscape(res.ETag))
			rq.w.WriteHeader(http.StatusSeeOther)
			return nil
		}
	}
	switch f.fields["success_action_status"] {
	case "200":
		rq.w.WriteHeader(http.StatusOK)
	case "201":
		return writePostResponse(rq, postResponse{Location: location, Bucket: b.S3Name(), Key: key, ETag: res.ETag})
	default: // 204, and any other value (as S3)
		rq.w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

// postResponse is the 201 answer of a POST upload (no namespace, as S3).
type postResponse struct {
	XMLName  xml.Name `xml:"PostResponse"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

func writePostResponse(rq *request, r postResponse) error {
	body, err := xml.Marshal(r)
	if err != nil {
		return err
	}
	h := rq.w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(xml.Header)+len(body)))
	rq.w.WriteHeader(http.StatusCreated)
	io.WriteString(rq.w, xml.Header)
	rq.w.Write(body)
	return nil
}

func slicesContainsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// postSSE is the encryption a POST form asks for with its
// x-amz-server-side-encryption field (sseS3), else bucket b's default.
// SSE-C's and SSE-KMS's fields were refused as the form was read rather
// than ignored: a form that asks for encryption never stores its file in
// the clear.
func postSSE(f *postForm, b *rgw.Bucket) (*rgw.SSERequest, error) {
	if v, ok := f.fields["x-amz-server-side-encryption"]; ok {
		return sseS3(v)
	}
	return b.DefaultSSE(), nil
}
