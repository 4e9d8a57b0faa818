package osd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/shoal-project/shoal/client"
	"github.com/shoal-project/shoal/internal/testcluster"
	"github.com/shoal-project/shoal/objectstore"
)

// benchCluster is a test cluster's MON (testcluster.Start) and three
// OSDs on BlockStores of 8 GiB, with the pool "data" on them.
func benchCluster(b *testing.B) (*client.Pool, []*objectstore.BlockStore) {
	p, stores, _ := benchClusterConn(b)
	return p, stores
}

// benchClusterConn is benchCluster with the client connection too.
func benchClusterConn(b *testing.B) (*client.Pool, []*objectstore.BlockStore, *client.Conn) {
	c := testcluster.Start(b, testcluster.Options{Conf: osdConf})
	var stores []*objectstore.BlockStore
	for range 3 {
		o, st := startBlockOSD(b, c.MonAddrs, b.TempDir(), "", objectstore.Options{Size: 8 << 30})
		stores = append(stores, st)
		b.Cleanup(func() { o.Close() })
	}
	ctx := context.Background()
	cl := c.Client(ctx)
	if _, err := cl.MonCommand(ctx, "pool create", map[string]string{"name": "data", "size": "3", "pg_num": "32"}); err != nil {
		b.Fatal(err)
	}
	p, err := cl.Pool(ctx, "data")
	if err != nil {
		b.Fatal(err)
	}
	return p, stores, cl
}

// BenchmarkReplicatedWrite measures 3-replica writes through the whole
// stack (client, messenger, primary, two replicas, three object stores) in
// one process, 16 in flight: go test -run XXX -bench ReplicatedWrite ./osd
func BenchmarkReplicatedWrite(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("%dK", size>>10), func(b *testing.B) {
			p, stores := benchCluster(b)
			data := make([]byte, size)
			var n atomic.Int64
			b.SetBytes(int64(size))
			b.SetParallelism(8) // 16 in flight on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := p.WriteFull(context.Background(), fmt.Sprintf("o%d", n.Add(1)%2000), data); err != nil {
						b.Error(err)
						return
					}
				}
			})
			var groups, txns uint64
			for _, st := range stores {
				g, t := st.CommitStats()
				groups, txns = groups+g, txns+t
			}
			b.ReportMetric(float64(txns)/float64(groups), "txns/commit")
		})
	}
}

// BenchmarkReplicatedRead measures 4 KiB reads from the primaries of a
// 3-replica pool through the whole stack, 16 in flight (each read checks
// the primary's read lease): go test -run XXX -bench ReplicatedRead ./osd
func BenchmarkReplicatedRead(b *testing.B) {
	p, _ := benchCluster(b)
	const objects = 500
	data := make([]byte, 4<<10)
	for i := range objects {
		if err := p.WriteFull(context.Background(), fmt.Sprintf("o%d", i), data); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	b.SetBytes(int64(len(data)))
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Read(context.Background(), fmt.Sprintf("o%d", n.Add(1)%objects), 0, 0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
