// Package golden helps tests compare output with recorded reference output.
package golden

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Run runs a reference tool (crushtool, osdmaptool) and returns its
// standard output, failing the test on error or after a minute (a
// reference tool that crashes can leave a crash handler hanging).
func Run(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// FirstDiff describes the first line where got and want differ, naming the
// two sides gotName and wantName; for output that differs only in bytes
// outside lines it says so.
func FirstDiff(got, want []byte, gotName, wantName string) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  %-10s %q\n  %-10s %q", i+1, gotName+":", gl, wantName+":", wl)
		}
	}
	return "(identical lines, different bytes)"
}
