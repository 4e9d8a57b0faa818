package objectstore

import "testing"

// TestKeyBuilders checks the one-allocation key builders against their
// definitions: objKey is onodeKey as a string, omapKey extends omapPrefix,
// and omapKeyObject gives back an omap key's collection and object.
func TestKeyBuilders(t *testing.T) {
	long := Coll(make([]byte, 300)) // a length above 255 uses both bytes
	for _, c := range []Coll{"", "1.2a_head", long} {
		for _, oid := range []string{"", "obj", "a\x00b"} {
			want := string(append(collPrefix(pOnode, c), oid...))
			if got := objKey(c, oid); got != want {
				t.Errorf("objKey(%q, %q) = %q, want %q", c, oid, got, want)
			}
			if got := string(onodeKey(c, oid)); got != want {
				t.Errorf("onodeKey(%q, %q) = %q, want %q", c, oid, got, want)
			}
			p := omapPrefix(c, oid)
			if got := omapKey(c, oid, "k"); string(got) != string(p)+"k" {
				t.Errorf("omapKey(%q, %q, k) = %q, want prefix %q + k", c, oid, got, p)
			}
			for _, k := range []string{"", "k"} {
				if gc, goid, ok := omapKeyObject(omapKey(c, oid, k)); !ok || gc != c || goid != oid {
					t.Errorf("omapKeyObject(omapKey(%q, %q, %q)) = %q, %q, %v", c, oid, k, gc, goid, ok)
				}
			}
			for n := range len(p) { // cut short: not an omap key
				if _, _, ok := omapKeyObject(p[:n]); ok {
					t.Errorf("omapKeyObject(%q) ok, want not: %d of the prefix's %d bytes", p[:n], n, len(p))
				}
			}
		}
	}
}
