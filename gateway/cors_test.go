package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/shoal-project/shoal/gateway/rgw"
)

// TestCORS: a bucket's CORS rules are stored, shown and removed by its
// owner; browsers' requests get the Access-Control-* headers of the first
// rule matching their Origin (errors included), and preflights are
// answered without a signature, refused (403) when no rule allows the
// origin, method and headers.
func TestCORS(t *testing.T) {
	f := startGateway(t, rgw.Options{})
	ctx := context.Background()
	c := f.s3(f.admin)
	b := "cors"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b, ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: &b}); code(err) != "NoSuchCORSConfiguration" {
		t.Fatalf("GET ?cors of a bucket without: %v", err)
	}
	cfg := &types.CORSConfiguration{CORSRules: []types.CORSRule{
		{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"*suffix"}, ExposeHeaders: []string{"x-amz-meta-a"}, MaxAgeSeconds: aws.Int32(60)},
		{AllowedMethods: []string{"GET"}, AllowedOrigins: []string{"start*end"}, AllowedHeaders: []string{"x-amz-*"}},
		{AllowedMethods: []string{"PUT", "GET"}, AllowedOrigins: []string{"*.put"}},
		{AllowedMethods: []string{"DELETE"}, AllowedOrigins: []string{"*"}},
	}}
	if _, err := f.s3(f.other).PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: &b, CORSConfiguration: cfg}); code(err) != "AccessDenied" {
		t.Fatalf("PUT ?cors by another user: %v", err)
	}
	bad := &types.CORSConfiguration{CORSRules: []types.CORSRule{{AllowedMethods: []string{"PATCH"}, AllowedOrigins: []string{"*"}}}}
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: &b, CORSConfiguration: bad}); code(err) != "InvalidRequest" {
		t.Fatalf("PUT ?cors with PATCH: %v", err)
	}
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: &b, CORSConfiguration: cfg}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: &b})
	if err != nil || len(got.CORSRules) != 4 || got.CORSRules[0].AllowedOrigins[0] != "*suffix" || *got.CORSRules[0].MaxAgeSeconds != 60 ||
		got.CORSRules[2].AllowedMethods[1] != "GET" || got.CORSRules[1].AllowedHeaders[0] != "x-amz-*" {
		t.Fatalf("GET ?cors: %+v %v", got, err)
	}

	do := func(method, path string, hdr ...string) (int, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, f.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	check := func(what string, st int, h http.Header, wantSt int, wantOrigin, wantMethods string) {
		t.Helper()
		if st != wantSt || h.Get("Access-Control-Allow-Origin") != wantOrigin || h.Get("Access-Control-Allow-Methods") != wantMethods {
			t.Errorf("%s: %d origin %q methods %q, want %d %q %q", what, st, h.Get("Access-Control-Allow-Origin"),
				h.Get("Access-Control-Allow-Methods"), wantSt, wantOrigin, wantMethods)
		}
	}
	st, h := do("GET", "/"+b)
	check("no Origin", st, h, 200, "", "")
	st, h = do("GET", "/"+b, "Origin", "foo.suffix")
	check("GET from *suffix", st, h, 200, "foo.suffix", "GET")
	if h.Get("Access-Control-Expose-Headers") != "x-amz-meta-a" || h.Get("Access-Control-Max-Age") != "60" {
		t.Errorf("expose and max age: %v", h)
	}
	st, h = do("GET", "/"+b, "Origin", "foo.suffix.get")
	check("origin matching no rule", st, h, 200, "", "")
	st, h = do("GET", "/"+b, "Origin", "0start12end")
	check("prefix before the wildcard's", st, h, 200, "", "")
	st, h = do("GET", "/"+b+"/missing", "Origin", "start12end")
	check("an error answer", st, h, 404, "start12end", "GET")
	st, h = do("PUT", "/"+b+"/o", "Origin", "foo.suffix")
	check("PUT from a GET-only origin", st, h, 403, "", "")
	st, h = do("PUT", "/"+b+"/o", "Origin", "foo.put")
	check("anonymous PUT refused, from an allowed origin", st, h, 403, "foo.put", "PUT")

	st, h = do("OPTIONS", "/"+b+"/o", "Origin", "foo.suffix")
	check("preflight without a method", st, h, 400, "", "")
	st, h = do("OPTIONS", "/"+b+"/o", "Origin", "foo.suffix", "Access-Control-Request-Method", "GET")
	check("preflight allowed", st, h, 200, "foo.suffix", "GET")
	st, h = do("OPTIONS", "/"+b+"/o", "Origin", "foo.suffix", "Access-Control-Request-Method", "PUT")
	check("preflight for a method the first matching rule lacks", st, h, 403, "", "")
	st, h = do("OPTIONS", "/"+b+"/o", "Origin", "foo.suffix", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "x-amz-date")
	check("preflight with a header no rule allows", st, h, 403, "", "")
	st, h = do("OPTIONS", "/"+b+"/o", "Origin", "start-end", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "X-Amz-Date, x-amz-meta-k")
	check("preflight with allowed headers", st, h, 200, "start-end", "GET")
	if got := h.Get("Access-Control-Allow-Headers"); !strings.EqualFold(got, "X-Amz-Date, x-amz-meta-k") {
		t.Errorf("allowed headers: %q", got)
	}
	st, h = do("OPTIONS", "/"+b+"/o", "Origin", "example.origin", "Access-Control-Request-Method", "DELETE")
	check("preflight under a rule open to all origins", st, h, 200, "*", "DELETE")
	st, _ = do("OPTIONS", "/nosuchbucket/o", "Origin", "foo.put", "Access-Control-Request-Method", "PUT")
	if st != 404 {
		t.Errorf("preflight to a missing bucket: %d", st)
	}

	if _, err := c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: &b}); code(err) != "NoSuchCORSConfiguration" {
		t.Fatalf("GET ?cors after delete: %v", err)
	}
	st, h = do("OPTIONS", "/"+b+"/o", "Origin", "foo.suffix", "Access-Control-Request-Method", "GET")
	check("preflight after delete", st, h, 403, "", "")
	st, h = do("GET", "/"+b, "Origin", "foo.suffix")
	check("GET after delete", st, h, 200, "", "")
}
