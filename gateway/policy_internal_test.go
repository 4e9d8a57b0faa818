package gateway

import (
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"s3:Get*", "s3:GetObject", true}, {"s3:Get*", "s3:PutObject", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false},
		{"arn:aws:s3:::b/*", "arn:aws:s3:::b/k/x", true}, {"arn:aws:s3:::b/*", "arn:aws:s3:::b", false},
		{"x", "x", true}, {"x", "xy", false},
	} {
		if got := globMatch(tc.p, tc.s, true); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
	// CORS patterns: '?' is itself
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"start*end", "startend", true}, {"start*end", "start12end", true}, {"start*end", "0start12end", false},
		{"*suffix", "foo.suffix", true}, {"*suffix", "foo.suffix.get", false}, {"a?c", "abc", false}, {"a?c", "a?c", true},
	} {
		if got := globMatch(tc.p, tc.s, false); got != tc.want {
			t.Errorf("globMatch(%q, %q, false) = %v", tc.p, tc.s, got)
		}
	}
	// a pattern of many stars against a long miss ends (it does not
	// backtrack exponentially)
	long := strings.Repeat("a", 4096)
	if globMatch(strings.Repeat("*a", 64)+"b", long, true) {
		t.Error("many stars matched a string without b")
	}
}

func TestConditionOperators(t *testing.T) {
	req := func(vals map[string][]string) *policyRequest {
		return &policyRequest{value: func(k string) ([]string, bool) { v, ok := vals[k]; return v, ok }}
	}
	r := req(map[string][]string{"aws:SourceIp": {"127.0.0.1"}, "s3:max-keys": {"10"}, "aws:Referer": {"http://a.example/x"}})
	for _, tc := range []struct {
		op, key string
		want    []string
		holds   bool
	}{
		{"IpAddress", "aws:SourceIp", []string{"127.0.0.0/8"}, true},
		{"NotIpAddress", "aws:SourceIp", []string{"127.0.0.0/8"}, false},
		{"IpAddress", "aws:SourceIp", []string{"10.0.0.0/8", "127.0.0.1"}, true},
		{"NumericLessThan", "s3:max-keys", []string{"11"}, true},
		{"NumericGreaterThan", "s3:max-keys", []string{"11"}, false},
		{"StringLike", "aws:Referer", []string{"http://a.example/*"}, true},
		{"StringNotLike", "aws:Referer", []string{"http://a.example/*"}, false},
		{"StringEquals", "aws:UserAgent", []string{"x"}, false},        // absent key
		{"StringNotEquals", "aws:UserAgent", []string{"x"}, true},      // absent key, negated
		{"StringEqualsIfExists", "aws:UserAgent", []string{"x"}, true}, // absent key, IfExists
		{"StringEqualsIgnoreCase", "aws:Referer", []string{"HTTP://A.EXAMPLE/X"}, true},
		{"Null", "aws:UserAgent", []string{"true"}, true},
		{"Null", "aws:Referer", []string{"true"}, false},
	} {
		if got := conditionHolds(tc.op, tc.key, tc.want, r); got != tc.holds {
			t.Errorf("%s %s %v: %v", tc.op, tc.key, tc.want, got)
		}
	}
}
