package gateway

import (
	"strings"
	"testing"
)

// TestUploadIDNotAnOption: command-line clients pass the upload id as an
// argument of its own, so it must never look like an option; it must
// also pass CreateUpload's own checks of ids it is given back.
func TestUploadIDNotAnOption(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := newUploadID()
		if strings.HasPrefix(id, "-") || strings.ContainsAny(id, "./\x00 ") {
			t.Fatalf("upload id %q", id)
		}
		if seen[id] {
			t.Fatalf("upload id %q twice", id)
		}
		seen[id] = true
	}
}
