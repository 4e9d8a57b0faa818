package ec_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/reedsolomon"

	"github.com/shoal-project/shoal/ec"
)

func profile(t testing.TB, args ...string) ec.Profile {
	t.Helper()
	p, err := ec.ParseProfile("t", args)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfileDefaultsAndErrors(t *testing.T) {
	p := profile(t)
	if p.K != 2 || p.M != 2 || p.StripeUnit != 4096 || p.FailureDomain != "host" || p.Root != "default" {
		t.Fatalf("defaults: %+v", p)
	}
	p = profile(t, "k=4", "m=2", "stripe_unit=64K", "crush-failure-domain=osd", "crush-device-class=ssd", "plugin=jerasure")
	if p.StripeWidth() != 4*65536 || p.DeviceClass != "ssd" {
		t.Fatalf("parsed: %+v", p)
	}
	for _, bad := range [][]string{{"k=1"}, {"m=0"}, {"k=200", "m=57"}, {"stripe_unit=1000"}, {"stripe_unit=0"}, {"plugin=lrc"}, {"color=blue"}, {"k"}} {
		if _, err := ec.ParseProfile("bad", bad); !errors.Is(err, ec.ErrInvalid) {
			t.Fatalf("%v: %v, want ErrInvalid", bad, err)
		}
	}
	round, err := ec.ParseProfile("again", p.Args())
	if err != nil || round.K != p.K || round.M != p.M || round.StripeUnit != p.StripeUnit || round.DeviceClass != p.DeviceClass {
		t.Fatalf("Args round trip: %+v %v", round, err)
	}
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.IntN(256))
	}
	return b
}

// TestRoundTripsAndLosses: sizes around every boundary, every way of
// losing up to m shards decodes to the original; m+1 losses fail.
func TestRoundTripsAndLosses(t *testing.T) {
	for _, km := range [][2]int{{2, 1}, {4, 2}, {8, 3}} {
		p := profile(t, fmt.Sprintf("k=%d", km[0]), fmt.Sprintf("m=%d", km[1]))
		c, err := ec.NewCodec(p)
		if err != nil {
			t.Fatal(err)
		}
		u, w := p.StripeUnit, p.StripeWidth()
		for _, size := range []int{0, 1, u - 1, u, u + 1, w - 1, w, w + 1, 3*w + 17, 3<<20 + 5} {
			data := randBytes(size)
			shards, err := c.Encode(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range shards {
				if int64(len(s)) != p.ShardSize(int64(size)) {
					t.Fatalf("%d+%d size %d: shard of %d bytes, want %d", p.K, p.M, size, len(s), p.ShardSize(int64(size)))
				}
			}
			// lose m shards, a different set each time (all sets for small profiles)
			for trial := range 6 {
				lost := rand.Perm(p.K + p.M)[:p.M]
				if trial == 0 {
					lost = lost[:0]
					for i := range p.M {
						lost = append(lost, i) // the first m data shards
					}
				}
				cp := make([][]byte, len(shards))
				for i := range shards {
					cp[i] = append([]byte(nil), shards[i]...)
				}
				for _, i := range lost {
					cp[i] = nil
				}
				got, err := c.Decode(cp, int64(size))
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("%d+%d size %d lost %v: %v (equal %v)", p.K, p.M, size, lost, err, bytes.Equal(got, data))
				}
			}
			if size == 0 {
				continue // empty shards: nothing to lose
			}
			cp := make([][]byte, len(shards))
			copy(cp, shards)
			for _, i := range rand.Perm(p.K + p.M)[:p.M+1] {
				cp[i] = nil
			}
			if _, err := c.Decode(cp, int64(size)); !errors.Is(err, ec.ErrTooFewShards) {
				t.Fatalf("%d+%d size %d with m+1 lost: %v, want ErrTooFewShards", p.K, p.M, size, err)
			}
		}
	}
}

// TestWholeObjectEqualsPerStripe checks the layout claim: coding an object
// in one call gives each stripe the coding chunks it gets alone.
func TestWholeObjectEqualsPerStripe(t *testing.T) {
	p := profile(t, "k=4", "m=2")
	c, err := ec.NewCodec(p)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := reedsolomon.New(p.K, p.M)
	if err != nil {
		t.Fatal(err)
	}
	data := randBytes(5*p.StripeWidth() + 100)
	shards, err := c.Encode(data)
	if err != nil {
		t.Fatal(err)
	}
	u := p.StripeUnit
	for s := 0; s*p.StripeWidth() < len(data); s++ {
		stripe := make([]byte, p.StripeWidth())
		copy(stripe, data[s*p.StripeWidth():])
		alone := make([][]byte, p.K+p.M)
		for j := range p.K {
			alone[j] = stripe[j*u : (j+1)*u]
			if !bytes.Equal(alone[j], shards[j][s*u:(s+1)*u]) {
				t.Fatalf("stripe %d data chunk %d is not at shard %d offset %d", s, j, j, s*u)
			}
		}
		for j := p.K; j < p.K+p.M; j++ {
			alone[j] = make([]byte, u)
		}
		if err := rs.Encode(alone); err != nil {
			t.Fatal(err)
		}
		for j := p.K; j < p.K+p.M; j++ {
			if !bytes.Equal(alone[j], shards[j][s*u:(s+1)*u]) {
				t.Fatalf("stripe %d coding chunk %d differs from the whole-object encode", s, j)
			}
		}
	}
	if ok, err := c.Verify(shards); !ok || err != nil {
		t.Fatalf("verify: %v %v", ok, err)
	}
	shards[p.K][7] ^= 1
	if ok, _ := c.Verify(shards); ok {
		t.Fatal("verify missed a flipped coding byte")
	}
}

// BenchmarkEncode and BenchmarkDecode: GB/s of object data per core for a
// 4 MiB object (go test -run XXX -bench 'Encode|Decode' ./ec). Decode
// loses m data shards, the worst case.
func BenchmarkEncode(b *testing.B) {
	for _, km := range [][2]int{{2, 1}, {4, 2}, {8, 3}} {
		b.Run(fmt.Sprintf("%d+%d", km[0], km[1]), func(b *testing.B) {
			p := profile(b, fmt.Sprintf("k=%d", km[0]), fmt.Sprintf("m=%d", km[1]))
			c, err := ec.NewCodec(p, reedsolomon.WithMaxGoroutines(1))
			if err != nil {
				b.Fatal(err)
			}
			data := randBytes(4 << 20)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range b.N {
				if _, err := c.Encode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, km := range [][2]int{{2, 1}, {4, 2}, {8, 3}} {
		b.Run(fmt.Sprintf("%d+%d", km[0], km[1]), func(b *testing.B) {
			p := profile(b, fmt.Sprintf("k=%d", km[0]), fmt.Sprintf("m=%d", km[1]))
			c, err := ec.NewCodec(p, reedsolomon.WithMaxGoroutines(1))
			if err != nil {
				b.Fatal(err)
			}
			data := randBytes(4 << 20)
			shards, err := c.Encode(data)
			if err != nil {
				b.Fatal(err)
			}
			cp := make([][]byte, len(shards))
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range b.N {
				copy(cp, shards)
				for i := range p.M {
					cp[i] = nil
				}
				if _, err := c.Decode(cp, int64(len(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEncodeIntoDirtyBuffer: shards encoded into a buffer full of other
// bytes (a pooled one) equal those Encode makes in a fresh one — the
// padding of the last stripe included — for sizes around the stripe unit
// and width; a buffer of the wrong size is refused.
func TestEncodeIntoDirtyBuffer(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, km := range [][2]int{{2, 1}, {4, 2}} {
		c, err := ec.NewCodec(profile(t, fmt.Sprintf("k=%d", km[0]), fmt.Sprintf("m=%d", km[1]), "stripe_unit=4096"))
		if err != nil {
			t.Fatal(err)
		}
		w := 4096 * km[0]
		for _, n := range []int{0, 1, 4095, 4096, 4097, w - 1, w, w + 1, 3*w + 100} {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			want, err := c.Encode(data)
			if err != nil {
				t.Fatal(err)
			}
			buf := bytes.Repeat([]byte{0xff}, c.EncodedLen(n))
			got, err := c.EncodeInto(data, buf)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("%d+%d, %d bytes: shard %d differs in a dirty buffer", km[0], km[1], n, i)
				}
			}
			if _, err := c.EncodeInto(data, make([]byte, c.EncodedLen(n)+1)); err == nil {
				t.Fatalf("%d+%d, %d bytes: a buffer one byte too long was taken", km[0], km[1], n)
			}
		}
	}
}
