package crush_test

import (
	"testing"

	"github.com/shoal-project/shoal/crush"
)

// benchMap is 3 racks × 10 hosts × 12 OSDs, all weight 1.0, with Ceph's
// default replicated rule (0) and erasure rule (1), both over hosts.
func benchMap(b *testing.B) (*crush.Map, []uint32) {
	m, err := crush.Simple(crush.SimpleSpec{Racks: 3, HostsPerRack: 10, OSDsPerHost: 12})
	if err != nil {
		b.Fatal(err)
	}
	w := make([]uint32, m.MaxDevices())
	for i := range w {
		w[i] = crush.WeightOne
	}
	return m, w
}

func benchRule(b *testing.B, rule, n int) {
	m, w := benchMap(b)
	out := make([]int32, 0, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out = m.DoRule(rule, uint32(i), n, w, out)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "mappings/s")
}

// BenchmarkDoRuleReplicated3 maps one input with 3 replicas,
// chooseleaf firstn over hosts.
func BenchmarkDoRuleReplicated3(b *testing.B) { benchRule(b, 0, 3) }

// BenchmarkDoRuleIndep8p3 maps one input to 8+3 shards, chooseleaf indep
// over hosts.
func BenchmarkDoRuleIndep8p3(b *testing.B) { benchRule(b, 1, 11) }

func BenchmarkCompile3x10x12(b *testing.B) {
	text, err := crush.SimpleText(crush.SimpleSpec{Racks: 3, HostsPerRack: 10, OSDsPerHost: 12})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := crush.Compile([]byte(text)); err != nil {
			b.Fatal(err)
		}
	}
}
