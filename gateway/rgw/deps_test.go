package rgw_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering checks that the storage layer stays below the S3 edge: it
// imports neither net/http nor the gateway package above it.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "github.com/shoal-project/shoal/gateway/rgw").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "net/http" || pkg == "github.com/shoal-project/shoal/gateway" {
			t.Errorf("gateway/rgw imports %s", pkg)
		}
	}
}
