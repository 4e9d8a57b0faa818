package gateway

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Fuzzers for what reaches the gateway from anyone, before or without a
// valid signature: request authentication (SigV4 and SigV2 headers and
// query strings, aws-chunked bodies with trailers), bucket policies and
// their conditions, the XML bodies, POST forms. Each must answer an error
// or a value, never panic; CI runs each for a fixed number of executions.

// fuzzRequest builds a request from the fuzzer's strings: headers are
// "Name: value" lines.
func fuzzRequest(method, target, headers string, body []byte) *http.Request {
	if method == "" || strings.ContainsAny(method, " \t\r\n") {
		method = "PUT"
	}
	if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \t\r\n#") {
		target = "/b/k"
	}
	r, err := http.NewRequest(method, "http://gateway"+target, bytes.NewReader(body))
	if err != nil {
		r = httptest.NewRequest("PUT", "http://gateway/b/k", bytes.NewReader(body))
	}
	for _, line := range strings.Split(headers, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k != "" {
			r.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return r
}

func FuzzAuthenticate(f *testing.F) {
	cred := testAccessKey + "/20240601/us-east-1/s3/aws4_request"
	f.Add("GET", "/b/k", "Authorization: AWS4-HMAC-SHA256 Credential="+cred+", SignedHeaders=host;x-amz-date, Signature=00\nX-Amz-Date: 20240601T120000Z\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD", []byte{})
	f.Add("GET", "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="+cred+"&X-Amz-Date=20240601T120000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00", "", []byte{})
	f.Add("GET", "/b/k?AWSAccessKeyId="+testAccessKey+"&Expires=1717243300&Signature=abc%3D", "", []byte{})
	f.Add("PUT", "/b/k", "Authorization: AWS "+testAccessKey+":c2ln\nDate: Sat, 01 Jun 2024 12:00:00 GMT", []byte("data"))
	f.Add("PUT", "/b/k", "X-Amz-Content-Sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\nContent-Encoding: aws-chunked\nX-Amz-Decoded-Content-Length: 5\nX-Amz-Trailer: x-amz-checksum-crc32",
		[]byte("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"))
	f.Add("PUT", "/b/k", "Authorization: AWS4-HMAC-SHA256 Credential="+cred+", SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length, Signature=00\nX-Amz-Date: 20240601T120000Z\nX-Amz-Content-Sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\nContent-Encoding: aws-chunked\nX-Amz-Decoded-Content-Length: 3",
		[]byte("3;chunk-signature=00\r\nabc\r\n0;chunk-signature=00\r\n\r\n"))
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte) {
		r := fuzzRequest(method, target, headers, body)
		if _, err := Authenticate(context.Background(), r, testLookup, testT0); err != nil {
			return
		}
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)) // the payload checks and the aws-chunked decoder
	})
}

func FuzzPolicy(f *testing.F) {
	f.Add([]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*",
		"Condition":{"StringLike":{"s3:prefix":["a*"]},"IpAddress":{"aws:SourceIp":"10.0.0.0/8"},"NumericLessThan":{"s3:max-keys":"10"},
		"DateGreaterThan":{"aws:CurrentTime":"2020-01-01T00:00:00Z"},"Bool":{"aws:SecureTransport":"true"}}}]}`), "s3:GetObject", "b/k")
	f.Add([]byte(`{"Statement":[{"Effect":"Deny","NotPrincipal":{"AWS":["arn:aws:iam:::user/u"]},"NotAction":["s3:*"],"NotResource":"arn:aws:s3:::b"}]}`), "s3:PutObject", "b")
	f.Fuzz(func(t *testing.T, doc []byte, action, resource string) {
		p, err := ParsePolicy(doc, "b")
		if err != nil {
			return
		}
		vals := map[string][]string{"s3:prefix": {"abc"}, "aws:SourceIp": {"10.1.2.3"}, "s3:max-keys": {"5"},
			"aws:CurrentTime": {"2024-06-01T12:00:00Z"}, "aws:SecureTransport": {"false"}, "s3:ExistingObjectTag/class": {"x"}}
		for _, uid := range []string{"", "u"} {
			p.eval(&policyRequest{uid: uid, action: action, resource: "arn:aws:s3:::" + resource, value: func(k string) ([]string, bool) {
				v, ok := vals[k]
				return v, ok
			}})
		}
		p.isPublic()
	})
}

func FuzzXMLBodies(f *testing.F) {
	for _, s := range []string{
		`<LifecycleConfiguration><Rule><ID>r</ID><Filter><And><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule></LifecycleConfiguration>`,
		`<CORSConfiguration><CORSRule><AllowedOrigin>http://*.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader><MaxAgeSeconds>10</MaxAgeSeconds></CORSRule></CORSConfiguration>`,
		`<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>`,
		`<Delete><Quiet>true</Quiet><Object><Key>a</Key></Object></Delete>`,
		`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part></CompleteMultipartUpload>`,
		`<AccessControlPolicy><Owner><ID>o</ID></Owner><AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>u</ID></Grantee><Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := func() *http.Request { return httptest.NewRequest("PUT", "http://gateway/b?x", bytes.NewReader(body)) }
		parseLifecycle(req())
		parseCORS(req())
		bodyTags(req(), maxObjectTags)
		var d deleteRequest
		xml.Unmarshal(body, &d)
		var c completeMultipartUpload
		if xml.Unmarshal(body, &c) == nil {
			for _, p := range c.Parts {
				p.checksumXML.values()
			}
		}
		var acp accessControlPolicy
		xml.Unmarshal(body, &acp)
	})
}

func FuzzPostForm(f *testing.F) {
	f.Add("multipart/form-data; boundary=XX", []byte("--XX\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nup/${filename}\r\n--XX\r\nContent-Disposition: form-data; name=\"policy\"\r\n\r\neyJleHBpcmF0aW9uIjoiMjA5OS0wMS0wMVQwMDowMDowMFoiLCJjb25kaXRpb25zIjpbWyJzdGFydHMtd2l0aCIsIiRrZXkiLCJ1cC8iXSxbImNvbnRlbnQtbGVuZ3RoLXJhbmdlIiwxLDEwXV19\r\n--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello\r\n--XX--\r\n"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		r := httptest.NewRequest("POST", "http://gateway/b", bytes.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		form, err := readPostForm(r)
		if err != nil {
			return
		}
		if p := form.fields["policy"]; p != "" {
			if pol, err := parsePostPolicy(p); err == nil {
				checkPostPolicy(pol, form, "b")
			}
		}
		io.Copy(io.Discard, io.LimitReader(form.file, 1<<20))
	})
}
