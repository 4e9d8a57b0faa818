package rgw

import (
	"strings"
	"testing"
)

// TestUploadIDNotAnOption: command-line clients pass the upload id as an
// argument of its own, so it must never look like an option; it must
// also pass GetUpload's check of the ids clients send back.
func TestUploadIDNotAnOption(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := newUploadID()
		if strings.HasPrefix(id, "-") || strings.Contains(id, " ") || !validUploadID(id) {
			t.Fatalf("upload id %q", id)
		}
		if seen[id] {
			t.Fatalf("upload id %q twice", id)
		}
		seen[id] = true
	}
}
