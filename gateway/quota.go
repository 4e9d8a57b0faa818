package gateway

import (
	"encoding/xml"
	"net/http"
	"strconv"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// RGW's usage extensions: GET /?usage (the user's totals and quota
// limits) and the X-RGW-Quota-* headers of HEAD bucket?read-stats=true.

type usageResult struct {
	XMLName xml.Name `xml:"Usage"`
	Entries struct{} `xml:"Entries"`
	Summary struct {
		QuotaMaxBytes             int64 `xml:"QuotaMaxBytes"`
		QuotaMaxBuckets           int   `xml:"QuotaMaxBuckets"`
		QuotaMaxObjCount          int64 `xml:"QuotaMaxObjCount"`
		QuotaMaxBytesPerBucket    int64 `xml:"QuotaMaxBytesPerBucket"`
		QuotaMaxObjCountPerBucket int64 `xml:"QuotaMaxObjCountPerBucket"`
		TotalBytes                int64 `xml:"TotalBytes"`
		TotalBytesRounded         int64 `xml:"TotalBytesRounded"`
		TotalEntries              int64 `xml:"TotalEntries"`
	} `xml:"Summary"`
}

// userUsage answers GET /?usage for the caller.
func (srv *Server) userUsage(rq *request) error {
	ctx := rq.r.Context()
	u, err := srv.s.GetUser(ctx, rq.uid)
	if err != nil {
		return err
	}
	total, _, err := srv.s.UserUsage(ctx, rq.uid)
	if err != nil {
		return err
	}
	var res usageResult
	sm := &res.Summary
	sm.QuotaMaxObjCount, sm.QuotaMaxBytes = u.UserQuota.Max()
	sm.QuotaMaxObjCountPerBucket, sm.QuotaMaxBytesPerBucket = u.BucketQuota.Max()
	sm.QuotaMaxBuckets = u.BucketLimit()
	sm.TotalBytes, sm.TotalEntries = total.Bytes, total.Objects
	sm.TotalBytesRounded = (total.Bytes + 4095) / 4096 * 4096
	return writeXML(rq, http.StatusOK, res)
}

// setQuotaHeaders adds the bucket owner's limits to a HEAD bucket with
// read-stats (RGW's X-RGW-Quota-* headers; -1: none).
func (srv *Server) setQuotaHeaders(rq *request, b *rgw.Bucket) {
	u, err := srv.s.GetUser(rq.r.Context(), b.Owner)
	if err != nil {
		return
	}
	bq := u.BucketQuota
	if b.Quota != nil {
		bq = *b.Quota
	}
	h := rq.w.Header()
	uo, ub := u.UserQuota.Max()
	bo, bb := bq.Max()
	h.Set("X-RGW-Quota-User-Size", strconv.FormatInt(ub, 10))
	h.Set("X-RGW-Quota-User-Objects", strconv.FormatInt(uo, 10))
	h.Set("X-RGW-Quota-Max-Buckets", strconv.Itoa(u.BucketLimit()))
	h.Set("X-RGW-Quota-Bucket-Size", strconv.FormatInt(bb, 10))
	h.Set("X-RGW-Quota-Bucket-Objects", strconv.FormatInt(bo, 10))
}
