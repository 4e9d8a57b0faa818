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

// GetObjectAttributes (GET ?attributes; the AWS S3 API reference): the
// attributes named in x-amz-object-attributes — ETag (unquoted),
// ObjectParts (a multipart object's parts, paged by x-amz-max-parts, at
// most 1000, and x-amz-part-number-marker), StorageClass and ObjectSize —
// without the data, and Checksum: the object's additional checksum and
// its type (checksum.go), with each part's in ObjectParts.

type objectAttributes struct {
	XMLName      xml.Name     `xml:"GetObjectAttributesResponse"`
	Xmlns        string       `xml:"xmlns,attr,omitempty"`
	ETag         string       `xml:"ETag,omitempty"`
	Checksum     *checksumXML `xml:"Checksum,omitempty"`
	ObjectParts  *objectParts `xml:"ObjectParts,omitempty"`
	StorageClass string       `xml:"StorageClass,omitempty"`
	ObjectSize   *int64       `xml:"ObjectSize,omitempty"`
}

type objectParts struct {
	TotalPartsCount      int          `xml:"PartsCount"` // the wire name (the API reference calls it TotalPartsCount)
	PartNumberMarker     int          `xml:"PartNumberMarker"`
	NextPartNumberMarker int          `xml:"NextPartNumberMarker"`
	MaxParts             int          `xml:"MaxParts"`
	IsTruncated          bool         `xml:"IsTruncated"`
	Parts                []objectPart `xml:"Part"`
}

type objectPart struct {
	PartNumber int   `xml:"PartNumber"`
	Size       int64 `xml:"Size"`
	checksumXML
}

// objectAttributeNames are the values x-amz-object-attributes may list.
var objectAttributeNames = []string{"ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"}

func (srv *Server) getObjectAttributes(rq *request, b *rgw.Bucket) error {
	h := rq.r.Header
	want := map[string]bool{}
	for _, v := range h.Values("x-amz-object-attributes") {
		for _, a := range strings.Split(v, ",") {
			a = strings.TrimSpace(a)
			if !slices.Contains(objectAttributeNames, a) {
				return s3err.InvalidArgument.With("x-amz-object-attributes: unknown attribute %q (want ETag, Checksum, ObjectParts, StorageClass or ObjectSize)", a)
			}
			want[a] = true
		}
	}
	if len(want) == 0 {
		return s3err.InvalidArgument.With("x-amz-object-attributes names no attribute")
	}
	maxParts, marker := 1000, 0
	var err error
	if v := h.Get("x-amz-max-parts"); v != "" {
		if maxParts, err = strconv.Atoi(v); err != nil || maxParts < 1 {
			return s3err.InvalidArgument.With("x-amz-max-parts must be a positive integer")
		}
		maxParts = min(maxParts, 1000)
	}
	if v := h.Get("x-amz-part-number-marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			return s3err.InvalidArgument.With("x-amz-part-number-marker must be a non-negative integer")
		}
	}
	o, err := srv.openToRead(rq, b, false) // s3:GetObjectAttributes
	if err != nil {
		return err
	}
	defer o.Close()
	// AWS asks for s3:GetObject as well
	if err := srv.authorizeObject(rq, b, o, rq.key, "s3:GetObject", rgw.PermRead); err != nil {
		return err
	}
	setVersionHeader(rq.w.Header(), o.VersionID())
	res := objectAttributes{Xmlns: s3NS}
	if want["ETag"] {
		res.ETag = strings.Trim(o.ETag(), `"`)
	}
	if c := o.Info.Checksum; want["Checksum"] && c != nil {
		x := checksumXMLOf(c)
		res.Checksum = &x
	}
	if want["StorageClass"] {
		res.StorageClass = listedClass(o.Info.Class)
	}
	if want["ObjectSize"] {
		size := o.Size()
		res.ObjectSize = &size
	}
	if want["ObjectParts"] && o.Info.Parts > 0 && o.Info.Parts == len(o.Info.Segments) {
		res.ObjectParts = partsPage(o.Info, marker, maxParts)
	}
	rq.w.Header().Set("Last-Modified", o.Mtime().UTC().Format(http.TimeFormat))
	return writeXML(rq, http.StatusOK, res)
}

// partsPage lists up to max of a multipart object's parts after part
// number marker.
func partsPage(h *rgw.HeadInfo, marker, max int) *objectParts {
	p := &objectParts{TotalPartsCount: h.Parts, PartNumberMarker: marker, MaxParts: max}
	for num := marker + 1; num <= len(h.Segments); num++ {
		if len(p.Parts) == max {
			p.IsTruncated = true
			break
		}
		part := objectPart{PartNumber: num, Size: h.Segments[num-1].Size}
		if c, v := h.Checksum, h.Segments[num-1].Checksum; c != nil && v != "" {
			part.checksumXML = checksumXMLOf(&rgw.Checksum{Alg: c.Alg, Value: v})
		}
		p.Parts = append(p.Parts, part)
		p.NextPartNumberMarker = num
	}
	return p
}
