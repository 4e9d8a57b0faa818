package crush

// This file implements CRUSH's 32-bit integer hash, "rjenkins1": Robert
// Jenkins' 96-bit mix function applied to 1–5 integer inputs with the seed
// and padding constants Ceph uses (src/crush/hash.c). Every placement
// decision in CRUSH is a function of these hashes, so they must be bit-exact.

// HashRjenkins1 is the only hash type CRUSH defines (bucket "hash 0").
const HashRjenkins1 = 0

const hashSeed uint32 = 1315423911

// hashMix is Jenkins' reversible mix of three 32-bit words
// (http://burtleburtle.net/bob/hash/evahash.html).
func hashMix(a, b, c uint32) (uint32, uint32, uint32) {
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

// Hash32_2 is crush_hash32_2(CRUSH_HASH_RJENKINS1, a, b).
func Hash32_2(a, b uint32) uint32 {
	h := hashSeed ^ a ^ b
	x, y := uint32(231232), uint32(1232)
	a, b, h = hashMix(a, b, h)
	_, _, h = hashMix(x, a, h)
	_, _, h = hashMix(b, y, h)
	return h
}

// Hash32_3 is crush_hash32_3(CRUSH_HASH_RJENKINS1, a, b, c).
func Hash32_3(a, b, c uint32) uint32 {
	// hashMix expanded five times: Go does not inline it, and this hash
	// is CRUSH's innermost loop (one call per straw2 item).
	h := hashSeed ^ a ^ b ^ c
	x, y := uint32(231232), uint32(1232)
	// mix(a, b, h)
	a -= b
	a -= h
	a ^= h >> 13
	b -= h
	b -= a
	b ^= a << 8
	h -= a
	h -= b
	h ^= b >> 13
	a -= b
	a -= h
	a ^= h >> 12
	b -= h
	b -= a
	b ^= a << 16
	h -= a
	h -= b
	h ^= b >> 5
	a -= b
	a -= h
	a ^= h >> 3
	b -= h
	b -= a
	b ^= a << 10
	h -= a
	h -= b
	h ^= b >> 15
	// mix(c, x, h)
	c -= x
	c -= h
	c ^= h >> 13
	x -= h
	x -= c
	x ^= c << 8
	h -= c
	h -= x
	h ^= x >> 13
	c -= x
	c -= h
	c ^= h >> 12
	x -= h
	x -= c
	x ^= c << 16
	h -= c
	h -= x
	h ^= x >> 5
	c -= x
	c -= h
	c ^= h >> 3
	x -= h
	x -= c
	x ^= c << 10
	h -= c
	h -= x
	h ^= x >> 15
	// mix(y, a, h)
	y -= a
	y -= h
	y ^= h >> 13
	a -= h
	a -= y
	a ^= y << 8
	h -= y
	h -= a
	h ^= a >> 13
	y -= a
	y -= h
	y ^= h >> 12
	a -= h
	a -= y
	a ^= y << 16
	h -= y
	h -= a
	h ^= a >> 5
	y -= a
	y -= h
	y ^= h >> 3
	a -= h
	a -= y
	a ^= y << 10
	h -= y
	h -= a
	h ^= a >> 15
	// mix(b, x, h)
	b -= x
	b -= h
	b ^= h >> 13
	x -= h
	x -= b
	x ^= b << 8
	h -= b
	h -= x
	h ^= x >> 13
	b -= x
	b -= h
	b ^= h >> 12
	x -= h
	x -= b
	x ^= b << 16
	h -= b
	h -= x
	h ^= x >> 5
	b -= x
	b -= h
	b ^= h >> 3
	x -= h
	x -= b
	x ^= b << 10
	h -= b
	h -= x
	h ^= x >> 15
	// mix(y, c, h)
	y -= c
	y -= h
	y ^= h >> 13
	c -= h
	c -= y
	c ^= y << 8
	h -= y
	h -= c
	h ^= c >> 13
	y -= c
	y -= h
	y ^= h >> 12
	c -= h
	c -= y
	c ^= y << 16
	h -= y
	h -= c
	h ^= c >> 5
	y -= c
	y -= h
	y ^= h >> 3
	c -= h
	c -= y
	c ^= y << 10
	h -= y
	h -= c
	h ^= c >> 15
	return h
}

// Hash32_4 is crush_hash32_4(CRUSH_HASH_RJENKINS1, a, b, c, d).
func Hash32_4(a, b, c, d uint32) uint32 {
	h := hashSeed ^ a ^ b ^ c ^ d
	x, y := uint32(231232), uint32(1232)
	a, b, h = hashMix(a, b, h)
	c, d, h = hashMix(c, d, h)
	_, x, h = hashMix(a, x, h)
	y, _, h = hashMix(y, b, h)
	_, _, h = hashMix(c, x, h)
	_, _, h = hashMix(y, d, h)
	return h
}
