package osdmap

import (
	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/internal/jenkins"
)

func crushHash2(a, b uint32) uint32 { return crush.Hash32_2(a, b) }

// StrHashRjenkins is Bob Jenkins' lookup2 hash of a string (public domain,
// http://burtleburtle.net/bob/hash/evahash.html) with Ceph's initial values
// (ceph_str_hash_rjenkins in src/common/ceph_hash.cc): the default object
// name hash of every pool.
func StrHashRjenkins(s string) uint32 {
	k := []byte(s)
	length := uint32(len(k))
	a, b, c := uint32(0x9e3779b9), uint32(0x9e3779b9), uint32(0)
	for len(k) >= 12 {
		a += uint32(k[0]) | uint32(k[1])<<8 | uint32(k[2])<<16 | uint32(k[3])<<24
		b += uint32(k[4]) | uint32(k[5])<<8 | uint32(k[6])<<16 | uint32(k[7])<<24
		c += uint32(k[8]) | uint32(k[9])<<8 | uint32(k[10])<<16 | uint32(k[11])<<24
		a, b, c = jenkins.Mix(a, b, c)
		k = k[12:]
	}
	c += length
	// the tail: bytes 8..10 go to c above its low byte, which holds the length
	shifts := [11]uint{0, 8, 16, 24, 0, 8, 16, 24, 8, 16, 24}
	for i := len(k) - 1; i >= 0; i-- {
		v := uint32(k[i]) << shifts[i]
		switch {
		case i >= 8:
			c += v
		case i >= 4:
			b += v
		default:
			a += v
		}
	}
	_, _, c = jenkins.Mix(a, b, c)
	return c
}

// StrHashLinux is the Linux dcache name hash (ceph_str_hash_linux), the
// object hash of pools created with object_hash=linux.
func StrHashLinux(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		c := uint32(s[i])
		h = (h + (c << 4) + (c >> 4)) * 11
	}
	return h
}
