package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoStorageEngine checks that the client and the gateway link no
// storage engine: omap entries come from the leaf package omap, not from
// the object store (which pulls in Pebble).
func TestNoStorageEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/shoal-project/shoal/client", "github.com/shoal-project/shoal/gateway/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "cockroachdb/pebble") || strings.HasSuffix(pkg, "/shoal/objectstore") {
			t.Errorf("client or gateway depends on %s", pkg)
		}
	}
}
