package rgw

// CORSRule is one rule of a bucket's CORS configuration. AllowedOrigin
// and AllowedHeader entries may hold one '*' wildcard; origins match
// case-sensitively, headers case-insensitively.
type CORSRule struct {
	ID             string   `json:"id,omitempty" xml:"ID,omitempty"`
	AllowedMethods []string `json:"methods" xml:"AllowedMethod"`
	AllowedOrigins []string `json:"origins" xml:"AllowedOrigin"`
	AllowedHeaders []string `json:"headers,omitempty" xml:"AllowedHeader,omitempty"`
	ExposeHeaders  []string `json:"expose,omitempty" xml:"ExposeHeader,omitempty"`
	MaxAgeSeconds  *int     `json:"max_age,omitempty" xml:"MaxAgeSeconds,omitempty"`
}
