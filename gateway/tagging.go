package gateway

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shoal-project/shoal/gateway/rgw"
	"github.com/shoal-project/shoal/gateway/s3err"
)

// Object and bucket tags (the S3 API reference, "PutObjectTagging",
// "PutBucketTagging"; limits from "Categorizing your storage using
// tags"): up to 10 tags on an object (50 on a bucket), keys of 1–128 and
// values of up to 256 Unicode characters, keys unique. An object's tags
// are kept in its head, a bucket's in its entry point.

// Tag limits.
const (
	maxObjectTags = 10
	maxBucketTags = 50
	maxTagKey     = 128
	maxTagValue   = 256
)

type tagging struct {
	XMLName xml.Name  `xml:"Tagging"`
	Xmlns   string    `xml:"xmlns,attr,omitempty"`
	TagSet  []rgw.Tag `xml:"TagSet>Tag"`
}

// checkTags enforces the limits (InvalidTag) and sorts the tags by key,
// the order RGW keeps and returns them in.
func checkTags(tags []rgw.Tag, max int) error {
	slices.SortStableFunc(tags, func(a, b rgw.Tag) int { return strings.Compare(a.Key, b.Key) })
	if len(tags) > max {
		return s3err.InvalidTag.With("at most %d tags are allowed, got %d", max, len(tags))
	}
	seen := map[string]bool{}
	for _, t := range tags {
		if n := utf8.RuneCountInString(t.Key); n < 1 || n > maxTagKey {
			return s3err.InvalidTag.With("a tag key must have 1 to %d characters, %q has %d", maxTagKey, t.Key, n)
		}
		if n := utf8.RuneCountInString(t.Value); n > maxTagValue {
			return s3err.InvalidTag.With("a tag value may have at most %d characters; the value of %q has %d", maxTagValue, t.Key, n)
		}
		if seen[t.Key] {
			return s3err.InvalidTag.With("tag key %q appears twice", t.Key)
		}
		seen[t.Key] = true
	}
	return nil
}

// headerTags reads x-amz-tagging (URL query form: k1=v1&k2=v2).
func headerTags(h http.Header) ([]rgw.Tag, error) {
	v := h.Get("x-amz-tagging")
	if v == "" {
		return nil, nil
	}
	return parseTagQuery(v)
}

func parseTagQuery(v string) ([]rgw.Tag, error) {
	var tags []rgw.Tag
	for v != "" {
		var kv string
		kv, v, _ = strings.Cut(v, "&")
		k, val, _ := strings.Cut(kv, "=")
		k, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(val)
		if err1 != nil || err2 != nil {
			return nil, s3err.InvalidArgument.With("x-amz-tagging must be URL-encoded key=value pairs joined by &")
		}
		tags = append(tags, rgw.Tag{Key: k, Value: val})
	}
	return tags, checkTags(tags, maxObjectTags)
}

// bodyTags reads a Tagging document.
func bodyTags(r *http.Request, max int) ([]rgw.Tag, error) {
	var t tagging
	if err := readXMLBody(r, &t); err != nil {
		return nil, err
	}
	return t.TagSet, checkTags(t.TagSet, max)
}

// writeTagging answers a GET ?tagging.
func writeTagging(rq *request, tags []rgw.Tag) error {
	return writeXML(rq, http.StatusOK, tagging{Xmlns: s3NS, TagSet: append([]rgw.Tag{}, tags...)})
}

// setTagCount adds x-amz-tagging-count to a GET or HEAD of an object
// with tags.
func setTagCount(h http.Header, tags []rgw.Tag) {
	if len(tags) > 0 {
		h.Set("x-amz-tagging-count", strconv.Itoa(len(tags)))
	}
}
