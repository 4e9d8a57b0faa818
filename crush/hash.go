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
	h := hashSeed ^ a ^ b ^ c
	x, y := uint32(231232), uint32(1232)
	a, b, h = hashMix(a, b, h)
	c, x, h = hashMix(c, x, h)
	y, _, h = hashMix(y, a, h)
	_, _, h = hashMix(b, x, h)
	_, _, h = hashMix(y, c, h)
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
