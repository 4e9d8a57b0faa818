package msgr_test

import (
	"context"
	"testing"

	"github.com/shoal-project/shoal/msgr"
)

func benchCall(b *testing.B, size int, mode msgr.Mode) {
	kr := keyring(b, "osd.0")
	srv, err := msgr.Listen("127.0.0.1:0", kr, func(ctx context.Context, m *msgr.Message) ([]byte, error) { return nil, nil }, msgr.Config{Mode: mode})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	c := msgr.Dial(srv.Addr(), kr, msgr.Config{Mode: mode})
	defer c.Close()
	payload := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := c.Call(context.Background(), 1, payload)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
	})
}

// BenchmarkCall4K: 16 concurrent 4 KiB requests over one connection, in
// each mode (ms_mode).
func BenchmarkCall4K(b *testing.B) {
	b.Run("crc", func(b *testing.B) { benchCall(b, 4<<10, msgr.ModeCRC) })
	b.Run("secure", func(b *testing.B) { benchCall(b, 4<<10, msgr.ModeSecure) })
}

// BenchmarkCall4M: 4 MiB requests; in crc mode the payload is written
// from the caller's buffer and read into a pooled one, so allocations
// stay small; secure mode encrypts a copy.
func BenchmarkCall4M(b *testing.B) {
	b.Run("crc", func(b *testing.B) { benchCall(b, 4<<20, msgr.ModeCRC) })
	b.Run("secure", func(b *testing.B) { benchCall(b, 4<<20, msgr.ModeSecure) })
}
