package crush

import "github.com/shoal-project/shoal/internal/jenkins"

// This file implements CRUSH's 32-bit integer hash, "rjenkins1": Robert
// Jenkins' 96-bit mix function applied to 1–5 integer inputs with the seed
// and padding constants Ceph uses (src/crush/hash.c). Every placement
// decision in CRUSH is a function of these hashes, so they must be bit-exact.

// HashRjenkins1 is the only hash type CRUSH defines (bucket "hash 0").
const HashRjenkins1 = 0

const hashSeed uint32 = 1315423911

// Hash32_2 is crush_hash32_2(CRUSH_HASH_RJENKINS1, a, b).
func Hash32_2(a, b uint32) uint32 {
	h := hashSeed ^ a ^ b
	x, y := uint32(231232), uint32(1232)
	a, b, h = jenkins.Mix(a, b, h)
	_, _, h = jenkins.Mix(x, a, h)
	_, _, h = jenkins.Mix(b, y, h)
	return h
}

// Hash32_3 is crush_hash32_3(CRUSH_HASH_RJENKINS1, a, b, c).
func Hash32_3(a, b, c uint32) uint32 {
	h := hashSeed ^ a ^ b ^ c
	x, y := uint32(231232), uint32(1232)
	a, b, h = jenkins.Mix(a, b, h)
	c, x, h = jenkins.Mix(c, x, h)
	y, _, h = jenkins.Mix(y, a, h)
	_, _, h = jenkins.Mix(b, x, h)
	_, _, h = jenkins.Mix(y, c, h)
	return h
}

// Hash32_4 is crush_hash32_4(CRUSH_HASH_RJENKINS1, a, b, c, d).
func Hash32_4(a, b, c, d uint32) uint32 {
	h := hashSeed ^ a ^ b ^ c ^ d
	x, y := uint32(231232), uint32(1232)
	a, b, h = jenkins.Mix(a, b, h)
	c, d, h = jenkins.Mix(c, d, h)
	_, x, h = jenkins.Mix(a, x, h)
	y, _, h = jenkins.Mix(y, b, h)
	_, _, h = jenkins.Mix(c, x, h)
	_, _, h = jenkins.Mix(y, d, h)
	return h
}
