// Package golden helps tests compare output with recorded reference output.
package golden

import (
	"fmt"
	"strings"
)

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
