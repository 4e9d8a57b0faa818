package rgw

// Tag is one key-value tag.
type Tag struct {
	Key   string `json:"k" xml:"Key"`
	Value string `json:"v" xml:"Value"`
}
