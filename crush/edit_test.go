package crush_test

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shoal-project/shoal/crush"
	"github.com/shoal-project/shoal/internal/golden"
	"github.com/shoal-project/shoal/internal/mapgen"
)

// An edit as crushtool takes it, and as Shoal applies it.
type edit struct {
	name  string
	args  []string
	apply func(*crush.Map) error
}

func fixedWeight(f float64) uint32 { return uint32(float32(f) * float32(crush.WeightOne)) }

var edits = []edit{
	{"add-new-host-rack", []string{"--add-item", "100", "1.5", "osd.100", "--loc", "host", "newhost", "--loc", "rack", "newrack", "--loc", "root", "default"},
		func(m *crush.Map) error {
			return m.InsertItem(100, fixedWeight(1.5), "osd.100", "", map[string]string{"host": "newhost", "rack": "newrack", "root": "default"})
		}},
	{"add-existing-host", []string{"--add-item", "101", "2.25", "osd.101", "--loc", "host", "host0", "--loc", "root", "default"},
		func(m *crush.Map) error {
			return m.InsertItem(101, fixedWeight(2.25), "osd.101", "", map[string]string{"host": "host0", "root": "default"})
		}},
	{"reweight", []string{"--reweight-item", "osd.3", "0.5"},
		func(m *crush.Map) error { return m.AdjustItemWeight(3, fixedWeight(0.5)) }},
	{"remove", []string{"--remove-item", "osd.5"},
		func(m *crush.Map) error { return m.RemoveItem(5) }},
	{"move-host-to-new-rack", []string{"--move", "host2", "--loc", "rack", "newrack", "--loc", "root", "default"},
		func(m *crush.Map) error {
			id, _ := m.ItemID("host2")
			return m.MoveBucket(id, map[string]string{"rack": "newrack", "root": "default"})
		}},
	{"simple-rule-firstn", []string{"--create-simple-rule", "fast", "default", "host", "firstn"},
		func(m *crush.Map) error {
			_, err := m.AddSimpleRule("fast", "default", "host", "", "firstn", crush.RuleReplicated)
			return err
		}},
	{"simple-rule-indep-osd", []string{"--create-simple-rule", "wide", "default", "osd", "indep"},
		func(m *crush.Map) error {
			_, err := m.AddSimpleRule("wide", "default", "osd", "", "indep", crush.RuleReplicated)
			return err
		}},
}

var editMaps = []struct {
	name string
	seed int64
	spec mapgen.Spec
}{
	{"classes", 21, mapgen.Spec{HostsPerRack: 4, OSDsPerHost: 3, Tunables: "optimal", Alg: "straw2", Classes: true}},
	{"racks-straw", 22, mapgen.Spec{Racks: 2, HostsPerRack: 3, OSDsPerHost: 3, Tunables: "hammer", Alg: "straw"}},
}

// TestEditsMatchCrushtool applies each edit to a map with Shoal and
// compares with what crushtool produced from the same map and edit: the
// decompiled text and the mappings of every rule.
func TestEditsMatchCrushtool(t *testing.T) {
	for _, em := range editMaps {
		for _, e := range edits {
			t.Run(em.name+"/"+e.name, func(t *testing.T) {
				dir := filepath.Join("../testdata/crushtool-edit", em.name, e.name)
				rng := rand.New(rand.NewSource(em.seed))
				src, rules := mapgen.Generate(rng, em.spec)
				var invs [][]string
				for _, r := range rules {
					invs = append(invs, []string{"--rule", strconv.Itoa(r.ID), "--num-rep", strconv.Itoa(r.NumReps[len(r.NumReps)-1]),
						"--show-mappings", "--show-bad-mappings", "--min-x", "0", "--max-x", "127"})
				}
				if *update {
					tmp := t.TempDir()
					in, bin, out := filepath.Join(tmp, "src.txt"), filepath.Join(tmp, "m.bin"), filepath.Join(tmp, "e.bin")
					os.WriteFile(in, []byte(src), 0o644)
					crushtool(t, "-c", in, "-o", bin)
					crushtool(t, append(append([]string{"-i", bin}, e.args...), "-o", out)...)
					dec := crushtool(t, "-d", out)
					var tests bytes.Buffer
					for _, inv := range invs {
						tests.WriteString(blockMarker + strings.Join(inv, " ") + "\n")
						tests.Write(crushtool(t, append([]string{"-i", out, "--test"}, inv...)...))
					}
					os.MkdirAll(dir, 0o755)
					os.WriteFile(filepath.Join(dir, "source.txt"), []byte(src), 0o644)
					os.WriteFile(filepath.Join(dir, "args.txt"), []byte(strings.Join(e.args, " ")+"\n"), 0o644)
					os.WriteFile(filepath.Join(dir, "decompiled.txt"), dec, 0o644)
					os.WriteFile(filepath.Join(dir, "tests.out"), tests.Bytes(), 0o644)
				}
				wantDec, err1 := os.ReadFile(filepath.Join(dir, "decompiled.txt"))
				wantTests, err2 := os.ReadFile(filepath.Join(dir, "tests.out"))
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				base, err := crush.Compile([]byte(src))
				if err != nil {
					t.Fatal(err)
				}
				m := base.Clone()
				if err := e.apply(m); err != nil {
					t.Fatal(err)
				}
				if got := m.Decompile(); !bytes.Equal(got, wantDec) {
					t.Fatalf("after %s:\n%s", strings.Join(e.args, " "), golden.FirstDiff(got, wantDec, "shoal", "crushtool"))
				}
				if !bytes.Equal(base.Decompile(), mustDecompile(t, src)) {
					t.Fatal("editing a clone changed the original")
				}
				compareTests(t, m, wantTests)
			})
		}
	}
}

func mustDecompile(t *testing.T, src string) []byte {
	m, err := crush.Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m.Decompile()
}

func TestEditErrors(t *testing.T) {
	m, err := crush.Compile([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	m = m.Clone()
	if err := m.InsertItem(7, crush.WeightOne, "osd.0", "", map[string]string{"host": "h0"}); err == nil {
		t.Error("name of another device accepted")
	}
	if err := m.InsertItem(7, crush.WeightOne, "osd.7", "", map[string]string{"root": "h0"}); err == nil {
		t.Error("a host used as a root accepted")
	}
	if err := m.InsertItem(-3, crush.WeightOne, "x", "", map[string]string{"host": "h0"}); err == nil {
		t.Error("negative device id accepted")
	}
	if err := m.InsertItem(8, crush.WeightOne, "osd.8", "", nil); err == nil {
		t.Error("no location accepted")
	}
	if err := m.AdjustItemWeight(42, crush.WeightOne); err == nil {
		t.Error("reweight of an unknown item accepted")
	}
	if err := m.RemoveItem(42); err == nil {
		t.Error("removal of an unknown item accepted")
	}
	// a new device under an existing host maps
	if err := m.InsertItem(2, 2*crush.WeightOne, "osd.2", "ssd", map[string]string{"host": "h0", "root": "default"}); err != nil {
		t.Fatal(err)
	}
	if id, ok := m.ShadowBucket(-2, "ssd"); !ok || len(m.Bucket(id).Items) == 0 {
		t.Fatal("ssd shadow tree not rebuilt with the new device")
	}
}

func TestRemoveBucket(t *testing.T) {
	m, err := crush.Compile([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	m = m.Clone()
	h0, _ := m.ItemID("h0")
	root, _ := m.ItemID("default")
	if err := m.RemoveItem(h0); err == nil {
		t.Fatal("non-empty bucket removed")
	}
	if err := m.RemoveItem(root); err == nil {
		t.Fatal("bucket removed while not empty and used by a rule")
	}
	for _, d := range []int32{0, 1} {
		if err := m.RemoveItem(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.RemoveItem(h0); err != nil {
		t.Fatalf("empty bucket: %v", err)
	}
	if _, ok := m.ItemID("h0"); ok || m.Bucket(h0) != nil {
		t.Fatal("h0 still in the map")
	}
	if m.Bucket(root).Weight != 0 || len(m.Bucket(root).Items) != 0 {
		t.Fatalf("root after removal: %+v", m.Bucket(root))
	}
	if _, err := crush.Compile(m.Decompile()); err != nil {
		t.Fatalf("edited map does not recompile: %v", err)
	}
}
