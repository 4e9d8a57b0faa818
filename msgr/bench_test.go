package msgr_test

import (
	"context"
	"testing"

	"github.com/shoal-project/shoal/msgr"
)

func benchCall(b *testing.B, size int) {
	kr := keyring(b, "osd.0")
	srv := listen(b, kr, func(ctx context.Context, m *msgr.Message) ([]byte, error) { return nil, nil }, "127.0.0.1:0")
	c := msgr.Dial(srv.Addr(), kr, msgr.Config{})
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

// BenchmarkCall4K: 16 concurrent 4 KiB requests over one connection.
func BenchmarkCall4K(b *testing.B) { benchCall(b, 4<<10) }

// BenchmarkCall4M: 4 MiB requests; the payload is written from the
// caller's buffer and read into a pooled one, so allocations stay small.
func BenchmarkCall4M(b *testing.B) { benchCall(b, 4<<20) }
