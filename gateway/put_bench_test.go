package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// BenchmarkPutObject64K stores 64 KiB objects through the gateway's Store
// (no HTTP) at concurrency 16 into a 3-OSD in-process cluster, replicated
// pools of size 3: the RADOS work of a small PUT (index prepare, head,
// index complete). Compare against RADOS writes with the osd package's
// benchmarks.
//
//	go test -run XXX -bench BenchmarkPutObject64K -benchtime 3000x ./gateway/
func BenchmarkPutObject64K(b *testing.B) {
	for _, tc := range []struct {
		name     string
		location string
	}{{"indexed", ""}, {"indexless", "indexless"}} {
		b.Run(tc.name, func(b *testing.B) {
			f := startGateway(b, rgw.Options{PoolSize: 3})
			ctx := context.Background()
			bk, err := f.store.CreateBucket(ctx, "put64k", "tester", tc.location, "", nil, "")
			if err != nil {
				b.Fatal(err)
			}
			body := bytes.Repeat([]byte("shoal"), 64<<10/5+1)[:64<<10]
			var n atomic.Int64
			b.SetBytes(int64(len(body)))
			b.SetParallelism(8) // 16 writers on 2 cores
			calls0, updates0, _ := f.store.IndexBatches()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := fmt.Sprintf("thumbs/%08d.jpg", n.Add(1))
					if _, err := f.store.PutObject(ctx, bk, key, rgw.PutInput{Body: bytes.NewReader(body), Size: int64(len(body)), Owner: "tester"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if err := f.store.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			calls, updates, _ := f.store.IndexBatches()
			b.ReportMetric(float64(calls-calls0)/float64(b.N), "index-calls/op")
			b.ReportMetric(float64(updates-updates0)/float64(b.N), "index-updates/op")
		})
	}
}
