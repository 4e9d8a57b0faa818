package osdmap_test

import (
	"fmt"
	"testing"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/osdmap"
)

func benchOSDMap(b *testing.B, pgNum uint32) *osdmap.Map {
	c, err := crush.Simple(crush.SimpleSpec{Racks: 3, HostsPerRack: 10, OSDsPerHost: 12})
	if err != nil {
		b.Fatal(err)
	}
	inc := &osdmap.Incremental{Epoch: 1, NewMaxOSD: 360, NewOSDs: map[int32]osdmap.OSD{},
		NewPools: []*osdmap.Pool{{ID: 1, Name: "data", Type: osdmap.PoolReplicated, Size: 3, MinSize: 2,
			PGNum: pgNum, PGPNum: pgNum, Flags: osdmap.FlagHashPSPool, ObjectHash: osdmap.HashRjenkins}}}
	for i := int32(0); i < 360; i++ {
		inc.NewOSDs[i] = osdmap.OSD{Exists: true, Up: true, Weight: osdmap.WeightIn, PrimaryAffinity: osdmap.DefaultPrimaryAffinity}
	}
	m, err := osdmap.New("", c).Apply(inc)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkObjectToActing is a client's whole placement computation for one
// object: name hash, PG, CRUSH, up and acting sets.
func BenchmarkObjectToActing(b *testing.B) {
	m := benchOSDMap(b, 4096)
	names := make([]string, 1024)
	for i := range names {
		names[i] = fmt.Sprintf("rbd_data.1f2e3d4c.%016x", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pg, err := m.ObjectToPG(1, names[i%len(names)], "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.MapPG(pg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPGDistribution4096 maps all 4096 PGs of a 3-replica pool on 360
// OSDs and reports the evenness figures in docs/PERFORMANCE.md.
func BenchmarkPGDistribution4096(b *testing.B) {
	m := benchOSDMap(b, 4096)
	var d osdmap.Distribution
	for i := 0; i < b.N; i++ {
		var err error
		if d, err = m.PGDistribution(1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(d.MaxRatio, "max/expected")
	b.ReportMetric(d.StdDev, "stddev-PGs")
	b.ReportMetric(d.Mean, "mean-PGs")
}
