package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shoal-project/shoal/gateway/rgw"
)

// BenchmarkListPage lists pages of 1000 keys of a 20,000-key bucket whose
// index has 1 shard, 128 hash shards in one range (RGW's layout: every
// page reads every shard) and 128 shards as 16 ranges of 8 (Shoal's: a
// page reads one range's 8). shard-reads/page is the fan-out.
//
//	go test -run XXX -bench BenchmarkListPage -benchtime 20x ./gateway/
func BenchmarkListPage(b *testing.B) {
	for _, tc := range []struct {
		name             string
		shards, perRange int
	}{{"1-shard", 1, 1}, {"128-hash-shards", 128, 128}, {"128-shards-16x8-ranges", 128, 8}} {
		b.Run(tc.name, func(b *testing.B) {
			f := startGateway(b, rgw.Options{IndexShards: tc.shards, RangeShards: tc.perRange})
			ctx := context.Background()
			bk, err := f.store.CreateBucket(ctx, "listing", "tester", "", "", nil, "")
			if err != nil {
				b.Fatal(err)
			}
			const n = 20000
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= n {
							return
						}
						if err := f.store.IndexPut(ctx, bk, fmt.Sprintf("photos/%08d.jpg", i), 65536, uint64(i+1)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			reads0 := f.store.ListReads()
			pages := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				after := ""
				for {
					l, err := f.store.List(ctx, bk, "", "", after, 1000)
					if err != nil {
						b.Fatal(err)
					}
					pages++
					if !l.Truncated {
						break
					}
					after = l.NextMarker
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(f.store.ListReads()-reads0)/float64(pages), "shard-reads/page")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(pages)/1000, "ms/page")
		})
	}
}
