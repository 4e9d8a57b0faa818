// Package jenkins holds Robert Jenkins' 96-bit mix
// (http://burtleburtle.net/bob/hash/evahash.html, public domain), the core
// of both hashes Ceph places data with: CRUSH's rjenkins1 integer hash
// (package crush) and the rjenkins object-name hash (package osdmap).
package jenkins

// Mix is Jenkins' reversible mix of three 32-bit words; it returns the
// mixed a, b and c.
func Mix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= b
	a -= c
	a ^= c >> 13
	b -= c
	b -= a
	b ^= a << 8
	c -= a
	c -= b
	c ^= b >> 13
	a -= b
	a -= c
	a ^= c >> 12
	b -= c
	b -= a
	b ^= a << 16
	c -= a
	c -= b
	c ^= b >> 5
	a -= b
	a -= c
	a ^= c >> 3
	b -= c
	b -= a
	b ^= a << 10
	c -= a
	c -= b
	c ^= b >> 15
	return a, b, c
}
